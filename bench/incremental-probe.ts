// Times the incremental snapshot engine on one repository (a copy: it writes
// files and objects): startup (watching every directory), a snapshot with
// nothing changed, one file edited, 100 files created; and a raw full scan
// for comparison. Prints one JSON line; peak RSS from process.resourceUsage.
// Usage: node --import tsx bench/incremental-probe.ts <worktree copy> [runs]
// (run it compiled to measure its memory without tsx's own)
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { openRepo } from '../src/git/repo.js';
import { loadSettings } from '../src/settings/settings.js';
import { IncrementalSnapshotter } from '../src/snapshot/incremental.js';
import { onGitSpawn } from '../src/git/run.js';
import { MappedFiles } from '../src/snapshot/mapped-files.js';

const dir = path.resolve(process.argv[2] ?? '.');
const runs = Number(process.argv[3] ?? 7);
const repo = await openRepo(dir);
const settings = await loadSettings(repo);
const runDir = path.join(repo.stateDir, 'probe-run');
fs.rmSync(runDir, { recursive: true, force: true });

const rssAt: Record<string, number> = { imports: Math.round(process.memoryUsage().rss / 2 ** 20) };
const heapAt: Record<string, number> = {};
const mark = (k: string) => {
  rssAt[k] = Math.round(process.resourceUsage().maxRSS / 1024);
  // With --expose-gc: the heap retained at that point.
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) {
    gc();
    heapAt[k] = Math.round(process.memoryUsage().heapUsed / 2 ** 20);
  }
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
let spawns = 0;
onGitSpawn(() => spawns++);

let t0 = performance.now();
const engine = await IncrementalSnapshotter.open(repo, { runDir, settings });
const startup = performance.now() - t0;
mark('startup');

t0 = performance.now();
let snap = await engine.snapshot({ settings, parentTree: null });
const firstFull = performance.now() - t0;
mark('firstFull');
let parent = snap.tree;

// Stat sweeps (writes no inotify event reports): the first after a full scan lists the tree and takes the
// records; the next ones compare. And the /proc maps check each snapshot makes on its own.
t0 = performance.now();
await engine.sweep();
const baselineSweep = performance.now() - t0;
mark('baselineSweep');
const sweeps: number[] = [];
for (let i = 0; i < Math.min(runs, 3); i++) {
  t0 = performance.now();
  await engine.sweep();
  sweeps.push(performance.now() - t0);
}
const mapsScan: number[] = [];
{
  const maps = new MappedFiles(fs.realpathSync(dir));
  for (let i = 0; i < runs; i++) {
    t0 = performance.now();
    maps.scan();
    mapsScan.push(performance.now() - t0);
  }
}
mark('sweeps');

const nothing: number[] = [];
const nothingSpawns: number[] = [];
for (let i = 0; i < runs; i++) {
  const s0 = spawns;
  t0 = performance.now();
  snap = await engine.snapshot({ settings, parentTree: parent });
  nothing.push(performance.now() - t0);
  nothingSpawns.push(spawns - s0);
  if (snap.mode !== 'incremental') throw new Error(`nothing changed took a full scan: ${engine.stats.lastFullReason}`);
}

// bench/repos.ts writes `<repo>.json` next to each generated repository; any tracked file will do otherwise.
let meta: { editFile?: string } = {};
try {
  meta = JSON.parse(fs.readFileSync(`${dir}.json`, 'utf8')) as { editFile?: string };
} catch {
  /* not a generated repository */
}
const editFile = path.join(dir, meta.editFile ?? 'README.md');
const edit: number[] = [];
for (let i = 0; i < runs; i++) {
  fs.appendFileSync(editFile, `// edit ${Date.now()} ${i}\n`);
  t0 = performance.now();
  snap = await engine.snapshot({ settings, parentTree: parent });
  edit.push(performance.now() - t0);
  if (snap.mode !== 'incremental' || snap.changed.length !== 1)
    throw new Error(`edit: ${snap.mode} ${engine.stats.lastFullReason} ${snap.changed.length}`);
  parent = snap.tree;
}

const create: number[] = [];
for (let i = 0; i < runs; i++) {
  const d = path.join(dir, `probe-new-${Date.now()}-${i}`);
  fs.mkdirSync(d);
  for (let k = 0; k < 100; k++) fs.writeFileSync(path.join(d, `f${k}.ts`), `export const x${k} = ${k};\n`);
  t0 = performance.now();
  snap = await engine.snapshot({ settings, parentTree: parent });
  create.push(performance.now() - t0);
  if (snap.mode !== 'incremental' || snap.changed.length !== 100)
    throw new Error(`create: ${snap.mode} ${engine.stats.lastFullReason} ${snap.changed.length}`);
  parent = snap.tree;
}

// 100 files created in existing directories (one event each, no directory walk).
const scattered: number[] = [];
{
  const dirs = fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && e.name !== '.git' && !e.name.startsWith('probe-') && e.name !== 'node_modules' && e.name !== 'dist')
    .map((e) => e.name);
  for (let i = 0; i < runs; i++) {
    for (let k = 0; k < 100; k++)
      fs.writeFileSync(path.join(dir, dirs[k % dirs.length] as string, `probe-${Date.now()}-${i}-${k}.ts`), `${k}\n`);
    t0 = performance.now();
    snap = await engine.snapshot({ settings, parentTree: parent });
    scattered.push(performance.now() - t0);
    if (snap.mode !== 'incremental') throw new Error(`scattered: ${snap.mode} ${engine.stats.lastFullReason}`);
    parent = snap.tree;
  }
}

mark('incrementals');
const full: number[] = [];
for (let i = 0; i < 3; i++) {
  fs.appendFileSync(path.join(dir, '.gitignore'), `# probe ${i}\n`);
  t0 = performance.now();
  snap = await engine.snapshot({ settings, parentTree: parent });
  full.push(performance.now() - t0);
  if (snap.mode !== 'full') throw new Error('expected a full scan');
  parent = snap.tree;
}

await engine.close();
console.log(
  JSON.stringify({
    dir,
    startupMs: Math.round(startup),
    firstFullMs: Math.round(firstFull),
    baselineSweepMs: Math.round(baselineSweep),
    sweepMs: Math.round(median(sweeps)),
    mapsScanMs: +median(mapsScan).toFixed(2),
    processes: fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n)).length,
    nothingChangedMs: +median(nothing).toFixed(2),
    nothingChangedGitProcesses: Math.max(...nothingSpawns),
    oneEditMs: +median(edit).toFixed(1),
    create100InNewDirMs: +median(create).toFixed(1),
    create100ScatteredMs: +median(scattered).toFixed(1),
    fullScanAfterIgnoreChangeMs: Math.round(median(full)),
    rssAt,
    heapAt,
    peakRssMB: Math.round(process.resourceUsage().maxRSS / 1024),
  }),
);
