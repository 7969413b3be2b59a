// Writes inotify never reports (a shared mmap, a hard link from outside the
// worktree), against the incremental engine driven directly: which ones its
// stat sweep, the /proc maps check and the re-stat of hard-linked files close,
// and the window that stays open (README "Guarantees"): a write of that kind
// that lands after the last sweep lstat'ed the file, through a mapping that is
// gone by the snapshot and was not there at the last snapshot or sweep, or a
// link the last sweep did not see, is in the first snapshot after the next sweep.
import fs from 'node:fs';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { tempRepo, untilClockPast, type TempRepo } from '../support/helpers.js';
import { seededRandom } from '../support/crash-harness.js';
import { openRepo, type Repo } from '../../src/git/repo.js';
import { loadSettings, type Settings } from '../../src/settings/settings.js';
import { snapshotTree } from '../../src/snapshot/snapshot.js';
import { removeTempIndex, tempIndex } from '../../src/snapshot/snapshot-now.js';
import { IncrementalSnapshotter, type IncrementalOptions, type IncrementalResult } from '../../src/snapshot/incremental.js';

const HAS_PYTHON = spawnSync('python3', ['-c', 'import mmap'], { stdio: 'ignore' }).status === 0;
const MMAP_WRITE =
  'import mmap,sys\nf=open(sys.argv[1],"r+b")\nm=mmap.mmap(f.fileno(),0)\nb=sys.argv[2].encode()\nm[:len(b)]=b\nm.flush()\n';

function skipWithoutPython(): boolean {
  if (!HAS_PYTHON) console.log('  skipped: python3 with its mmap module is not installed');
  return !HAS_PYTHON;
}

/** Overwrites the start of a file through a shared mapping only (the process exits: the mapping is gone). */
function mmapWrite(file: string, text: string): void {
  const r = spawnSync('python3', ['-c', MMAP_WRITE, file, text], { encoding: 'utf8' });
  assert.is(r.status, 0, r.stderr);
}

interface Ctx {
  t: TempRepo;
  repo: Repo;
  settings: Settings;
  engine: IncrementalSnapshotter;
}

// racyMs 0: the files of a test are seconds old at most, and the window is only shown for files
// whose timestamps are older than the racy margin (younger ones are read again anyway, see below).
async function setup(files: Record<string, string>, opts: Partial<IncrementalOptions> = { racyMs: 0 }): Promise<Ctx> {
  const t = tempRepo({ files });
  const repo = await openRepo(t.dir, { env: t.env });
  const settings = await loadSettings(repo);
  const engine = await IncrementalSnapshotter.open(repo, { runDir: path.join(t.base, 'run'), settings, ...opts });
  return { t, repo, settings, engine };
}

async function teardown(c: Ctx): Promise<void> {
  await c.engine.close();
  c.t.cleanup();
}

async function reference(c: Ctx, parentTree: string | null) {
  const idx = tempIndex(c.repo, 'reference');
  try {
    return await snapshotTree(c.repo, { indexFile: idx, settings: c.settings, parentTree });
  } finally {
    removeTempIndex(idx);
  }
}

/** The engine's snapshot, asserted equal to a full scan on a fresh index now. */
async function check(c: Ctx, parentTree: string | null, label: string): Promise<IncrementalResult> {
  const got = await c.engine.snapshot({ settings: c.settings, parentTree });
  const want = await reference(c, parentTree);
  if (got.tree !== want.tree) {
    const diff = c.t.gitRaw(['diff-tree', '-r', '--name-status', want.tree, got.tree]).stdout;
    assert.unreachable(`${label}: tree differs from the full scan (${got.mode}; last full: ${c.engine.stats.lastFullReason}):\n${diff}`);
  }
  assert.equal(got.changed, want.changed, `${label}: changed differs`);
  return got;
}

const show = (c: Ctx, tree: string, rel: string) => c.t.git(['show', `${tree}:${rel}`]);

/**
 * Resolves once Date.now() is past the file's mtime and ctime: a snapshot that begins after that takes the
 * file's stat as not racy (a stat within the ms the snapshot began is racy even with racyMs 0: read again by
 * the next snapshot). A condition on the clock, not a sleep: it waits for the clock to pass a known instant.
 */
async function clockPast(file: string): Promise<void> {
  const st = fs.lstatSync(file);
  await untilClockPast(Math.max(st.mtimeMs, st.ctimeMs));
}

test('window: a write through a hard link made from outside after the last sweep is missed by the next snapshot, and in the first one after the next sweep', async () => {
  const c = await setup({ 'a.txt': 'one\n', 'd/b.txt': 'b\n' });
  try {
    const first = await check(c, null, 'first');
    await c.engine.sweep();
    const outside = path.join(c.t.base, 'outside.txt');
    fs.linkSync(path.join(c.t.dir, 'a.txt'), outside);
    fs.writeFileSync(outside, 'written outside\n');
    // No event in the worktree (link() raises IN_ATTRIB only on a watch of the inode itself), no sweep since: stale.
    const missed = await c.engine.snapshot({ settings: c.settings, parentTree: first.tree });
    assert.is(missed.mode, 'incremental');
    assert.is(missed.tree, first.tree, 'the window: the snapshot still holds the old bytes');
    assert.is(show(c, missed.tree, 'a.txt'), 'one\n');
    const res = await c.engine.sweep();
    assert.ok(res.dirty >= 1, 'the sweep found the changed stat');
    const caught = await check(c, first.tree, 'after the sweep');
    assert.is(show(c, caught.tree, 'a.txt'), 'written outside\n');
  } finally {
    await teardown(c);
  }
});

test('window: an mmap write through a mapping made after the last sweep and gone before the snapshot is missed, and in the first snapshot after the next sweep', async () => {
  if (skipWithoutPython()) return;
  const c = await setup({ 'a.txt': 'one\n' });
  try {
    const first = await check(c, null, 'first');
    await c.engine.sweep();
    mmapWrite(path.join(c.t.dir, 'a.txt'), 'MAP\n');
    const missed = await c.engine.snapshot({ settings: c.settings, parentTree: first.tree });
    assert.is(missed.tree, first.tree, 'the window: the snapshot still holds the old bytes');
    await c.engine.sweep();
    const caught = await check(c, first.tree, 'after the sweep');
    assert.is(show(c, caught.tree, 'a.txt'), 'MAP\n');
  } finally {
    await teardown(c);
  }
});

test('closed: a file changed within the racy margin of its last stat is read again by the next snapshot without any event', async () => {
  // Default racyMs: a.txt was written a moment before the first scan, so the sweep cannot vouch for it.
  const c = await setup({ 'a.txt': 'one\n' }, {});
  try {
    const first = await check(c, null, 'first');
    await c.engine.sweep();
    const outside = path.join(c.t.base, 'outside.txt');
    fs.linkSync(path.join(c.t.dir, 'a.txt'), outside);
    fs.writeFileSync(outside, 'written outside\n');
    const next = await check(c, first.tree, 'racy');
    assert.is(show(c, next.tree, 'a.txt'), 'written outside\n');
  } finally {
    await teardown(c);
  }
});

test('closed: a file mapped shared-writable at the snapshot is read then, and again at the next one (written meanwhile, unmapped before it)', async () => {
  if (skipWithoutPython()) return;
  const c = await setup({ 'a.txt': 'one\n', 'b.txt': 'bee\n' });
  try {
    const first = await check(c, null, 'first');
    await c.engine.sweep();
    // One mapping: writes, waits for a line, writes again, waits for stdin to close.
    const script = `${MMAP_WRITE}print("1",flush=True)\nsys.stdin.readline()\nm[:4]=b"TWO\\n"\nm.flush()\nprint("2",flush=True)\nsys.stdin.read()\n`;
    const holder = spawn('python3', ['-c', script, path.join(c.t.dir, 'a.txt'), 'MAP\n'], { stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    const waitFor = (s: string) =>
      new Promise<void>((res, rej) => {
        const on = (d: Buffer) => {
          out += d.toString();
          if (out.includes(s)) {
            holder.stdout.off('data', on);
            res();
          }
        };
        holder.stdout.on('data', on);
        on(Buffer.alloc(0));
        holder.once('exit', () => rej(new Error(`the mapping process exited before "${s}"`)));
      });
    const exited = new Promise<number | null>((res) => holder.on('exit', (code) => res(code)));
    let mapped: IncrementalResult;
    try {
      await waitFor('1');
      mapped = await check(c, first.tree, 'while mapped');
      assert.is(show(c, mapped.tree, 'a.txt'), 'MAP\n');
      holder.stdin.write('\n');
      await waitFor('2');
    } finally {
      holder.stdin.end();
    }
    assert.is(await exited, 0);
    // The same mapping wrote again after that snapshot and is gone now: no sweep in between.
    const after = await check(c, mapped.tree, 'mapped at the last snapshot');
    assert.is(show(c, after.tree, 'a.txt'), 'TWO\n');
  } finally {
    await teardown(c);
  }
});

test('closed: a file seen mapped shared-writable by a maps check between snapshots is read by the next one (unmapped by then, no sweep)', async () => {
  if (skipWithoutPython()) return;
  const c = await setup({ 'a.txt': 'one\n' });
  try {
    const first = await check(c, null, 'first');
    await c.engine.sweep();
    const holder = spawn(
      'python3',
      ['-c', `${MMAP_WRITE}print("ready",flush=True)\nsys.stdin.read()\n`, path.join(c.t.dir, 'a.txt'), 'MAP\n'],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    const exited = new Promise<number | null>((res) => holder.on('exit', (code) => res(code)));
    try {
      await new Promise<void>((res, rej) => {
        let out = '';
        holder.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('ready')) res();
        });
        holder.once('exit', () => rej(new Error('the mapping process exited early')));
      });
      c.engine.checkMappings(); // what the server does every second
    } finally {
      holder.stdin.end();
    }
    assert.is(await exited, 0);
    const next = await check(c, first.tree, 'seen mapped in between');
    assert.is(show(c, next.tree, 'a.txt'), 'MAP\n');
  } finally {
    await teardown(c);
  }
});

test('closed: a file the last sweep saw hard-linked is checked at every snapshot (written through the outside name, no sweep)', async () => {
  const c = await setup({ 'a.txt': 'one\n', 'b.txt': 'bee\n' });
  try {
    const outside = path.join(c.t.base, 'outside.txt');
    fs.linkSync(path.join(c.t.dir, 'a.txt'), outside);
    let parent = (await check(c, null, 'first')).tree;
    await c.engine.sweep();
    for (let i = 0; i < 3; i++) {
      fs.writeFileSync(outside, `outside ${i}\n`);
      // The snapshot that reads this write must begin after its timestamps (the engine's clock is in whole ms):
      // one within that ms is racy, read again by the next snapshot, which makes "unchanged" below a full scan.
      await clockPast(outside);
      const res = await check(c, parent, `write ${i} through the outside link`);
      assert.is(show(c, res.tree, 'a.txt'), `outside ${i}\n`);
      parent = res.tree;
    }
    // Unchanged: nothing to read again.
    const same = await check(c, parent, 'unchanged');
    assert.is(same.tree, parent);
    assert.is(same.mode, 'incremental', `unchanged: ${c.engine.stats.lastFullReason}`);
  } finally {
    await teardown(c);
  }
});

test('random rounds with writes no event reports: after a sweep, every snapshot equals the full scan', async () => {
  const seed = Number(process.env.AGENTSNAP_INC_SEED ?? 20261201);
  const rounds = Number(process.env.AGENTSNAP_INC_ROUNDS ?? 25);
  const rand = seededRandom(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  const c = await setup({ 'a.txt': 'aaaa\n', 'b.txt': 'bbbb\n', 'd/c.txt': 'cccc\n', 'd/e/f.txt': 'ffff\n' });
  const outsideDir = path.join(c.t.base, 'outside');
  fs.mkdirSync(outsideDir);
  const links: string[] = [];
  const log: string[] = [];
  try {
    let parent = (await check(c, null, 'first')).tree;
    for (let r = 0; r < rounds; r++) {
      const files = c.t
        .git(['ls-files', '--cached', '--others', '--exclude-standard'])
        .split('\n')
        .filter(Boolean)
        .filter((f) => c.t.exists(f));
      const f = files.length > 0 ? pick(files) : null;
      const op = Math.floor(rand() * 7);
      if (f) {
        const abs = path.join(c.t.dir, f);
        switch (op) {
          case 0: {
            const out = path.join(outsideDir, `l${r}`);
            fs.linkSync(abs, out);
            links.push(out);
            log.push(`link ${f}`);
            break;
          }
          case 1:
            if (links.length > 0) {
              const l = pick(links);
              fs.writeFileSync(l, `through ${path.basename(l)} ${r}\n`);
              log.push(`write ${path.basename(l)}`);
            }
            break;
          case 2:
            if (HAS_PYTHON && fs.statSync(abs).size >= 4) {
              mmapWrite(abs, `m${String(r % 100).padStart(2, '0')}\n`);
              log.push(`mmap ${f}`);
            }
            break;
          case 3:
            c.t.write(f, `edit ${r}\n`);
            log.push(`edit ${f}`);
            break;
          case 4:
            c.t.write(`new/n${r}.txt`, `new ${r}\n`);
            log.push(`create new/n${r}.txt`);
            break;
          case 5:
            c.t.rm(f);
            log.push(`rm ${f}`);
            break;
          default:
            log.push('nothing');
        }
      }
      await c.engine.sweep();
      parent = (await check(c, parent, `seed ${seed} round ${r} after [${log.slice(-3).join('; ')}]`)).tree;
    }
  } finally {
    await teardown(c);
  }
});

test('a snapshot taken while a sweep runs stops it at its next turn (no wait for the rest); the next sweep resumes where it stopped and finds the rest', async () => {
  // 4500 files: the sweep lstats 2000 a turn, so it is still running when the snapshot asks.
  if (skipWithoutPython()) return;
  const files: Record<string, string> = {};
  for (let i = 0; i < 4500; i++) files[`f/${String(i).padStart(4, '0')}.txt`] = `file ${i}\n`;
  const c = await setup(files);
  try {
    const first = await check(c, null, 'first');
    const baseline = await c.engine.sweep(); // takes the records after the full scan
    assert.is(baseline.interrupted, false);
    assert.is(baseline.files, 4500);
    // Written through mappings that are gone at once: no event, only a sweep finds them. One early in the sweep's order, one late.
    mmapWrite(path.join(c.t.dir, 'f/0001.txt'), 'EARLY');
    mmapWrite(path.join(c.t.dir, 'f/4400.txt'), 'LATE!');
    const sweeps = c.engine.stats.sweeps;
    const sweeping = c.engine.sweep();
    // The sweep's first turn runs before this (the queue starts it in a microtask, and it yields after 2000 files).
    await new Promise((r) => setImmediate(r));
    const during = await c.engine.snapshot({ settings: c.settings, parentTree: first.tree });
    const part = await sweeping;
    assert.is(part.interrupted, true, 'the sweep stopped for the snapshot');
    assert.is(part.files, 2000, 'it stopped after its first turn');
    assert.is(c.engine.stats.sweeps, sweeps, 'an interrupted sweep is not counted as done');
    assert.is(during.mode, 'incremental');
    assert.is(show(c, during.tree, 'f/0001.txt'), 'EARLY1\n', 'what the sweep found before it stopped is read');
    assert.is(show(c, during.tree, 'f/4400.txt'), 'file 4400\n', 'the window: not swept yet');
    const rest = await c.engine.sweep();
    assert.is(rest.interrupted, false);
    assert.is(rest.files, 4500, "resumed: every file lstat'ed once over the two turns");
    assert.is(c.engine.stats.sweeps, sweeps + 1);
    const caught = await check(c, during.tree, 'after the resumed sweep');
    assert.is(show(c, caught.tree, 'f/4400.txt'), 'LATE!4400\n');
  } finally {
    await teardown(c);
  }
});

test("the first sweep after a full scan (git's listing, streamed) stopped by a snapshot resumes in the same listing: every file once, a write meanwhile found", async () => {
  if (skipWithoutPython()) return;
  const files: Record<string, string> = {};
  for (let i = 0; i < 4500; i++) files[`f/${String(i).padStart(4, '0')}.txt`] = `file ${i}\n`;
  files['g/other.txt'] = 'other\n';
  const c = await setup(files);
  try {
    const first = await check(c, null, 'first');
    const sweeping = c.engine.sweep(); // the baseline: git's listing of the tree, then the records taken
    await new Promise((r) => setImmediate(r));
    const during = await c.engine.snapshot({ settings: c.settings, parentTree: first.tree });
    const part = await sweeping;
    assert.is(part.interrupted, true, 'the baseline stopped for the snapshot');
    assert.ok(part.files < 4501, `stopped early (${part.files} files)`);
    assert.is(during.mode, 'incremental');
    // No event: only a stat finds it (after the full scan: racy, read again).
    mmapWrite(path.join(c.t.dir, 'f/4400.txt'), 'LATE!');
    const rest = await c.engine.sweep();
    assert.is(rest.interrupted, false);
    assert.is(rest.files, 4501, "resumed in the same listing: every file lstat'ed once");
    const caught = await check(c, during.tree, 'after the resumed baseline');
    assert.is(show(c, caught.tree, 'f/4400.txt'), 'LATE!4400\n');
    // The records are all taken: the next sweep goes over the table, every file once.
    const next = await c.engine.sweep();
    assert.is(next.files, 4501);
  } finally {
    await teardown(c);
  }
});

test("a sweep stopped by every snapshot still gets through a large directory that each snapshot's index read merges (the user staging a new file there every call)", async () => {
  // Each call stages a new file in big/: the index read merges big/'s recent additions into its sorted names,
  // moving its slots. A cursor that went through big/ again from its start after each such move lstat'ed its
  // first 2000 files every time and never reached z/: the sweep never ended, and a write no event reports
  // past big/ stayed missing however many snapshots and sweeps came.
  if (skipWithoutPython()) return;
  const files: Record<string, string> = {};
  for (let i = 0; i < 7000; i++) files[`big/${String(i).padStart(4, '0')}.txt`] = `file ${i}\n`;
  files['z/target.txt'] = 'target\n';
  const c = await setup(files);
  try {
    let parent = (await check(c, null, 'first')).tree;
    assert.is((await c.engine.sweep()).interrupted, false); // the records after the full scan
    mmapWrite(path.join(c.t.dir, 'z/target.txt'), 'MAPPED');
    const sweeps = c.engine.stats.sweeps;
    let swept = 0;
    for (let round = 0; round < 10 && c.engine.stats.sweeps === sweeps; round++) {
      const sweeping = c.engine.sweep();
      await new Promise((r) => setImmediate(r)); // its first turn (2000 files), then the call
      c.t.write(`big/new-${round}.txt`, `${round}\n`);
      c.t.git(['add', `big/new-${round}.txt`]);
      // Not compared with the full scan: the mapped write is in the window until a sweep finds it.
      parent = (await c.engine.snapshot({ settings: c.settings, parentTree: parent })).tree;
      swept += (await sweeping).files;
    }
    assert.is(c.engine.stats.sweeps, sweeps + 1, `the sweep never ended (${swept} files lstat'ed over 10 stops, 7001 recorded)`);
    const caught = await check(c, parent, 'after the sweep');
    assert.is(show(c, caught.tree, 'z/target.txt'), 'MAPPED\n');
  } finally {
    await teardown(c);
  }
});

test.run();
