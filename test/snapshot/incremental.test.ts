// The incremental snapshot engine (src/snapshot/incremental.ts) against the full scan:
// after random rounds of what agents and users do to a worktree, it returns
// the same tree, skipped set and changed list as snapshotTree on a fresh
// throwaway index, and a good share of the rounds took the fast path.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { tempRepo } from '../support/helpers.js';
import { checkEngine, type EngineCtx } from '../support/engine-check.js';
import { seededRandom } from '../support/crash-harness.js';
import { openRepo } from '../../src/git/repo.js';
import { loadSettings } from '../../src/settings/settings.js';
import { IncrementalSnapshotter, type IncrementalResult } from '../../src/snapshot/incremental.js';
import { onGitSpawn } from '../../src/git/run.js';

type Ctx = EngineCtx;

async function setup(
  files: Record<string, string>,
  engineOpts: Partial<Parameters<typeof IncrementalSnapshotter.open>[1]> = {},
): Promise<Ctx> {
  const t = tempRepo({ files });
  t.git(['config', 'agentsnap.maxFileSize', '2k']);
  const repo = await openRepo(t.dir, { env: t.env });
  const settings = await loadSettings(repo);
  const engine = await IncrementalSnapshotter.open(repo, { runDir: path.join(t.base, 'run'), settings, ...engineOpts });
  return { t, repo, settings, engine };
}

async function teardown(c: Ctx): Promise<void> {
  await c.engine.close();
  c.t.cleanup();
}

const check = checkEngine;

const BASE_FILES: Record<string, string> = {
  '.gitignore': '*.log\n!keep.log\nbuild/\n/tmp\n',
  'src/.gitignore': 'gen/\n*.tmp\n!src-keep.tmp\n',
  'src/a.ts': 'a\n',
  'src/b.ts': 'b\n',
  'src/lib/c.ts': 'c\n',
  'src/lib/deep/d.ts': 'd\n',
  'docs/ünï cödé.md': 'u\n',
  'docs/with space.txt': 's\n',
  'bin/run.sh': '#!/bin/sh\n',
  'tracked.log': 'tracked although ignored\n',
  'build/tracked-in-ignored.txt': 'tracked in an ignored dir\n',
};

const NAMES = [
  'n1.txt',
  'n2.ts',
  'x.log',
  'keep.log',
  '.env',
  'id_rsa',
  'cert.pem',
  'ü ñ.txt',
  'sp ace',
  'big.bin',
  'a.tmp',
  'src-keep.tmp',
  'x',
];

function walkDisk(dir: string, rel = ''): { files: string[]; dirs: string[] } {
  const files: string[] = [];
  const dirs: string[] = [];
  for (const ent of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    const child = rel ? `${rel}/${ent.name}` : ent.name;
    if (child === '.git') continue;
    if (ent.isDirectory()) {
      dirs.push(child);
      const sub = walkDisk(dir, child);
      files.push(...sub.files);
      dirs.push(...sub.dirs);
    } else files.push(child);
  }
  return { files, dirs };
}

test('random rounds: the incremental engine returns exactly what the full scan does', async () => {
  const seed = Number(process.env.AGENTSNAP_INC_SEED ?? 20261129);
  const rounds = Number(process.env.AGENTSNAP_INC_ROUNDS ?? 60);
  const rand = seededRandom(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  const c = await setup(BASE_FILES);
  c.t.write('bin/run.sh', '#!/bin/sh\n', 0o755);
  c.t.write('src/gen/out.js', 'generated\n');
  c.t.write('build/untracked.o', 'o');
  fs.symlinkSync('src/a.ts', path.join(c.t.dir, 'link-to-a'));
  let parent: string | null = null;
  const log: string[] = [];
  try {
    parent = (await check(c, null, 'first')).tree;
    for (let r = 0; r < rounds; r++) {
      const nOps = 1 + Math.floor(rand() * 3);
      for (let k = 0; k < nOps; k++) {
        const { files, dirs } = walkDisk(c.t.dir);
        const dirsOrRoot = ['', ...dirs];
        const op = Math.floor(rand() * 16);
        const anyFile = files.length > 0 ? pick(files) : null;
        const inDir = (d: string, n: string) => (d ? `${d}/${n}` : n);
        try {
          switch (op) {
            case 0:
            case 1: // edit
              if (anyFile) {
                fs.rmSync(path.join(c.t.dir, anyFile), { force: true });
                c.t.write(anyFile, `edit ${r} ${rand()}\n`);
                log.push(`edit ${anyFile}`);
              }
              break;
            case 2:
            case 3: {
              // create
              const name = pick(NAMES);
              const rel = inDir(pick(dirsOrRoot), name);
              if (c.t.exists(rel) && fs.lstatSync(path.join(c.t.dir, rel)).isDirectory()) break;
              fs.rmSync(path.join(c.t.dir, rel), { force: true });
              c.t.write(rel, name === 'big.bin' ? Buffer.alloc(3000, 7) : `new ${r}\n`);
              log.push(`create ${rel}`);
              break;
            }
            case 4: // delete
              if (anyFile) {
                c.t.rm(anyFile);
                log.push(`rm ${anyFile}`);
              }
              break;
            case 5: // chmod
              if (anyFile && !fs.lstatSync(path.join(c.t.dir, anyFile)).isSymbolicLink()) {
                const m = fs.statSync(path.join(c.t.dir, anyFile)).mode & 0o100 ? 0o644 : 0o755;
                fs.chmodSync(path.join(c.t.dir, anyFile), m);
                log.push(`chmod ${m.toString(8)} ${anyFile}`);
              }
              break;
            case 6: // rename a file
              if (anyFile) {
                const to = inDir(pick(dirsOrRoot), `mv-${r}-${k}.txt`);
                fs.renameSync(path.join(c.t.dir, anyFile), path.join(c.t.dir, to));
                log.push(`mv ${anyFile} ${to}`);
              }
              break;
            case 7: {
              // mkdir -p with files
              const d = inDir(pick(dirsOrRoot), `new${r}/sub/deeper`);
              c.t.write(`${d}/f1.txt`, 'f1\n');
              c.t.write(`${d}/../f2.txt`, 'f2\n');
              c.t.write(`${d}/.env`, 'SECRET=1\n');
              c.t.write(`${d}/y.log`, 'log\n');
              log.push(`mkdir -p ${d}`);
              break;
            }
            case 8: // rm -rf a dir
              if (dirs.length > 0) {
                const d = pick(dirs);
                c.t.rm(d);
                log.push(`rm -rf ${d}`);
              }
              break;
            case 9: // mv a dir
              if (dirs.length > 0) {
                const d = pick(dirs);
                const to = inDir(pick(dirsOrRoot.filter((x) => x !== d && !x.startsWith(`${d}/`))), `moved${r}`);
                if (!c.t.exists(to)) {
                  fs.renameSync(path.join(c.t.dir, d), path.join(c.t.dir, to));
                  log.push(`mv ${d} ${to}`);
                }
              }
              break;
            case 10: // replace a file by a symlink or a directory
              if (anyFile) {
                c.t.rm(anyFile);
                if (rand() < 0.5) {
                  fs.symlinkSync(pick(['../x', 'src', 'nowhere', 'a b']), path.join(c.t.dir, anyFile));
                  log.push(`symlink ${anyFile}`);
                } else {
                  c.t.write(`${anyFile}/inside.txt`, 'i\n');
                  log.push(`file->dir ${anyFile}`);
                }
              }
              break;
            case 11: // a directory replaced by a symlink
              if (dirs.length > 0 && rand() < 0.5) {
                const d = pick(dirs);
                c.t.rm(d);
                // Not a link to itself: git's diff-files reports nothing for tracked paths below a
                // symlink loop (ELOOP), which makes the full scan itself fail (a snapshot.ts edge case).
                fs.symlinkSync(d === 'docs' ? 'nowhere' : pick(['docs', 'nowhere']), path.join(c.t.dir, d));
                log.push(`dir->symlink ${d}`);
              }
              break;
            case 12: // the user stages or unstages
              if (anyFile) {
                if (rand() < 0.5) {
                  c.t.gitRaw(['add', '-f', '--', anyFile]);
                  log.push(`git add ${anyFile}`);
                } else {
                  c.t.gitRaw(['rm', '-q', '--cached', '--', anyFile]);
                  log.push(`git rm --cached ${anyFile}`);
                }
              }
              break;
            case 13: // an ignore file changes (rarely: it forces a full scan)
              if (rand() < 0.3) {
                const g = pick(['.gitignore', 'src/.gitignore', 'docs/.gitignore']);
                if (c.t.exists(path.dirname(g)) || path.dirname(g) === '.') {
                  fs.appendFileSync(path.join(c.t.dir, g), pick(['*.txt\n', '!n1.txt\n', 'sub/\n', '*.md\n']));
                  log.push(`ignore ${g}`);
                }
              }
              break;
            case 14: // a directory's mode changes (git keeps none)
              if (dirs.length > 0 && rand() < 0.5) {
                const d = pick(dirs);
                if (!fs.lstatSync(path.join(c.t.dir, d)).isSymbolicLink()) {
                  fs.chmodSync(path.join(c.t.dir, d), rand() < 0.5 ? 0o700 : 0o755);
                  log.push(`chmod dir ${d}`);
                }
                break;
              }
              log.push('read-only');
              break;
            default: // nothing: a read-only call
              log.push('read-only');
          }
        } catch (e) {
          log.push(`op failed: ${(e as Error).message}`);
        }
      }
      parent = (await check(c, parent, `seed ${seed} round ${r} after [${log.slice(-4).join('; ')}]`)).tree;
    }
    const { incremental, full } = c.engine.stats;
    if (process.env.AGENTSNAP_INC_STATS) console.log(`seed ${seed}: ${incremental} incremental, ${full} full`);
    assert.ok(
      incremental >= rounds * 0.5,
      `only ${incremental} of ${incremental + full} snapshots were incremental (last full: ${c.engine.stats.lastFullReason})`,
    );
  } finally {
    await teardown(c);
  }
});

test("tracked directories replaced by symlinks (to themselves, to another directory) and a file by a directory: the full scan's tree", async () => {
  const c = await setup({ 'src/a.ts': 'a\n', 'src/deep/b.ts': 'b\n', 'lib/l.ts': 'l\n', 'other/o.txt': 'o\n', 'file.txt': 'f\n' });
  try {
    let parent = (await check(c, null, 'first')).tree;
    c.t.rm('src');
    fs.symlinkSync('src', path.join(c.t.dir, 'src'));
    c.t.rm('lib');
    fs.symlinkSync('other', path.join(c.t.dir, 'lib'));
    c.t.rm('file.txt');
    c.t.write('file.txt/inside.txt', 'i\n');
    parent = (await check(c, parent, 'replaced')).tree;
    assert.is(c.t.git(['ls-tree', parent, 'src']).split(' ')[0], '120000');
    assert.is(c.t.git(['ls-tree', parent, 'lib']).split(' ')[0], '120000');
    // And back to directories.
    c.t.rm('src');
    c.t.write('src/a.ts', 'a2\n');
    c.t.rm('lib');
    c.t.write('lib/l.ts', 'l\n');
    c.t.rm('file.txt');
    c.t.write('file.txt', 'f\n');
    await check(c, parent, 'restored');
  } finally {
    await teardown(c);
  }
});

test('nothing changed: no git process, no object written, the same tree', async () => {
  const c = await setup({ 'a.txt': 'a\n', 'd/b.txt': 'b\n' });
  try {
    const first = await check(c, null, 'first');
    assert.is(first.mode, 'full');
    const objects = path.join(c.repo.commonDir, 'objects');
    const before = fs.readdirSync(objects).length;
    const spawned: string[][] = [];
    const off = onGitSpawn((args) => spawned.push(args));
    let again: IncrementalResult;
    try {
      again = await c.engine.snapshot({ settings: c.settings, parentTree: first.tree });
    } finally {
      off();
    }
    assert.is(again.mode, 'incremental');
    assert.is(again.tree, first.tree);
    assert.equal(again.changed, []);
    assert.equal(spawned, [], 'no git process when nothing changed');
    assert.is(fs.readdirSync(objects).length, before);
  } finally {
    await teardown(c);
  }
});

test('an edit is incremental; a new .gitignore falls back to a full scan', async () => {
  const c = await setup({ 'a.txt': 'a\n', 'd/b.txt': 'b\n' });
  try {
    let parent = (await check(c, null, 'first')).tree;
    c.t.write('d/b.txt', 'changed\n');
    c.t.write('d/new.txt', 'new\n');
    const edit = await check(c, parent, 'edit');
    assert.is(edit.mode, 'incremental');
    assert.equal(
      edit.changed.map((x) => `${x.change} ${x.path} +${x.added} -${x.deleted}`),
      ['M d/b.txt +1 -1', 'A d/new.txt +1 -0'],
    );
    parent = edit.tree;
    c.t.write('d/.gitignore', 'new.txt\n');
    const ignored = await check(c, parent, 'gitignore');
    assert.is(ignored.mode, 'full');
    assert.match(c.engine.stats.lastFullReason ?? '', /ignore/);
    parent = ignored.tree;
    c.t.write('d/another.txt', 'x\n');
    assert.is((await check(c, parent, 'after')).mode, 'incremental', 'back on the fast path after the full scan');
  } finally {
    await teardown(c);
  }
});

test('a burst of events that may have overflowed the kernel queue falls back to a full scan', async () => {
  const c = await setup({ 'a.txt': 'a\n', 'burst/keep.txt': 'k\n' }, { watcher: { burstThreshold: 50 } });
  try {
    const parent = (await check(c, null, 'first')).tree;
    // In one event-loop turn: the events arrive together, as after a stall in which the kernel queue filled.
    for (let i = 0; i < 200; i++) c.t.write(`burst/f${i}.txt`, `${i}\n`);
    const res = await check(c, parent, 'burst');
    assert.is(res.mode, 'full');
    assert.match(c.engine.stats.lastFullReason ?? '', /burst/);
    c.t.write('burst/f1.txt', 'again\n');
    assert.is((await check(c, res.tree, 'after burst')).mode, 'incremental', 'the watcher is whole again after its restart');
  } finally {
    await teardown(c);
  }
});

test('a directory that cannot be watched makes the engine take full scans', async () => {
  const c = await setup(
    { 'a.txt': 'a\n' },
    {
      watcher: {
        beforeWatch: (rel) => {
          if (rel.startsWith('unwatchable')) throw Object.assign(new Error('no watches left'), { code: 'ENOSPC' });
        },
      },
    },
  );
  try {
    const parent = (await check(c, null, 'first')).tree;
    c.t.write('unwatchable/x.txt', 'x\n');
    const res = await check(c, parent, 'unwatchable');
    assert.is(res.mode, 'full');
    c.t.write('unwatchable/x.txt', 'changed: only a full scan sees this\n');
    const again = await check(c, res.tree, 'unwatchable again');
    assert.is(again.mode, 'full');
    assert.match(c.engine.stats.lastFullReason ?? '', /ENOSPC/);
    // No inotify watch left: the watches are given back for good, with no restart (it would fail the same way).
    assert.match(c.engine.stats.lastFullReason ?? '', /no watcher/);
    const state = c.engine.watchState();
    assert.is(state.watches, 0);
    assert.is(state.degraded?.code, 'ENOSPC');
    c.t.write('a.txt', 'still seen\n');
    assert.is((await check(c, again.tree, 'after giving up')).mode, 'full');
  } finally {
    await teardown(c);
  }
});

test('a directory that cannot be watched for another reason (EACCES): one restart, then full scans with the watches given back', async () => {
  let attempts = 0;
  const c = await setup(
    { 'a.txt': 'a\n', 'locked/y.txt': 'y\n' },
    {
      watcher: {
        beforeWatch: (rel) => {
          if (rel === 'locked' && ++attempts > 0) throw Object.assign(new Error('permission denied'), { code: 'EACCES' });
        },
      },
    },
  );
  try {
    assert.is(c.engine.watchState().degraded, null, 'not given up before a restart was tried');
    const first = await check(c, null, 'first');
    assert.is(attempts, 2, 'watched again once, at the first full scan');
    const state = c.engine.watchState();
    assert.is(state.watches, 0);
    assert.is(state.degraded?.code, null);
    assert.match(state.degraded?.reason ?? '', /EACCES/);
    c.t.write('locked/y.txt', 'changed\n');
    assert.is((await check(c, first.tree, 'after giving up')).mode, 'full');
  } finally {
    await teardown(c);
  }
});

test('a parent tree the engine did not make: changed comes from diff-tree', async () => {
  const c = await setup({ 'a.txt': 'a\n', 'b.txt': 'b\n' });
  try {
    const first = await check(c, null, 'first');
    c.t.write('c.txt', 'c\n');
    const head = c.t.git(['rev-parse', 'HEAD^{tree}']).trim();
    const res = await check(c, head, 'foreign parent');
    assert.is(res.mode, 'incremental');
    assert.equal(
      res.changed.map((x) => x.path),
      ['c.txt'],
    );
    assert.is.not(res.tree, first.tree);
  } finally {
    await teardown(c);
  }
});

test('a nested repository falls back to a full scan', async () => {
  const c = await setup({ 'a.txt': 'a\n' });
  try {
    const parent = (await check(c, null, 'first')).tree;
    c.t.git(['init', '-q', 'sub']);
    c.t.write('sub/f.txt', 'f\n');
    const res = await check(c, parent, 'nested');
    assert.is(res.mode, 'full');
    c.t.git(['add', 'f.txt'], { cwd: path.join(c.t.dir, 'sub') });
    c.t.git(['commit', '-q', '-m', 'sub'], { cwd: path.join(c.t.dir, 'sub') });
    const again = await check(c, res.tree, 'nested with a commit');
    assert.is(again.mode, 'full', 'a nested repository can move its HEAD without an event in the worktree');
  } finally {
    await teardown(c);
  }
});

test('a hard-linked file is never trusted to the watcher', async () => {
  const c = await setup({ 'a.txt': 'a\n', 'd/b.txt': 'b\n' });
  try {
    let parent = (await check(c, null, 'first')).tree;
    fs.linkSync(path.join(c.t.dir, 'a.txt'), path.join(c.t.dir, 'd/link.txt'));
    const linked = await check(c, parent, 'hard link');
    assert.is(linked.mode, 'full');
    assert.match(c.engine.stats.lastFullReason ?? '', /hard link/);
    parent = linked.tree;
    // Written through one name: the other changes too.
    fs.writeFileSync(path.join(c.t.dir, 'd/link.txt'), 'through the link\n');
    const written = await check(c, parent, 'write through the link');
    assert.is(written.mode, 'full');
    assert.equal(written.changed.map((x) => x.path).sort(), ['a.txt', 'd/link.txt']);
  } finally {
    await teardown(c);
  }
});

test('a sync cookie that cannot be written: full scan, then the watcher starts over', async () => {
  const c = await setup({ 'a.txt': 'a\n' });
  try {
    const parent = (await check(c, null, 'first')).tree;
    fs.rmSync(path.join(c.t.base, 'run', 'cookies'), { recursive: true });
    c.t.write('a.txt', 'changed\n');
    const res = await check(c, parent, 'no cookie');
    assert.is(res.mode, 'full');
    assert.match(c.engine.stats.lastFullReason ?? '', /cookie/);
    c.t.write('a.txt', 'changed again\n');
    assert.is((await check(c, res.tree, 'after restart')).mode, 'incremental');
  } finally {
    await teardown(c);
  }
});

test('a file name that is not UTF-8 falls back to the full scan', async () => {
  const c = await setup({ 'a.txt': 'a\n' });
  try {
    const parent = (await check(c, null, 'first')).tree;
    fs.writeFileSync(Buffer.concat([Buffer.from(`${c.t.dir}/bad-`), Buffer.from([0xff, 0xfe]), Buffer.from('.txt')]), 'x');
    const res = await check(c, parent, 'latin-1 name');
    assert.is(res.mode, 'full');
  } finally {
    await teardown(c);
  }
});

// The full scan records a name that is not UTF-8 by its bytes (splitNul): the engine keeps it in later
// snapshots, a sweep does not take it for gone, and a change to it means a full scan again.
test('a file name that is not UTF-8 stays in the tree across incremental snapshots and sweeps', async () => {
  const c = await setup({ 'a.txt': 'a\n' });
  const raw = Buffer.concat([Buffer.from(`${c.t.dir}/bad-`), Buffer.from([0xff, 0xfe]), Buffer.from('.txt')]);
  try {
    fs.writeFileSync(raw, 'x');
    let parent = (await check(c, null, 'first')).tree;
    const names = spawnSync('git', ['ls-tree', '-z', '--name-only', parent], { cwd: c.t.dir, env: c.t.env }).stdout;
    assert.ok(names.includes(Buffer.from([0x62, 0x61, 0x64, 0x2d, 0xff, 0xfe])), 'in the tree by its bytes');
    c.t.write('a.txt', 'edited\n');
    // (full or incremental: a file written this recently is read again, and reading it means a full scan)
    let res = await check(c, parent, 'an edit elsewhere');
    parent = res.tree;
    await c.engine.sweep();
    res = await check(c, parent, 'after a sweep');
    parent = res.tree;
    fs.writeFileSync(raw, 'changed');
    res = await check(c, parent, 'the raw name changed');
    parent = res.tree;
    fs.rmSync(raw);
    res = await check(c, parent, 'the raw name deleted');
    assert.is(res.changed.length, 1);
  } finally {
    await teardown(c);
  }
});

test('the user staging and unstaging files is followed incrementally', async () => {
  const c = await setup({ '.gitignore': '*.log\n', 'a.txt': 'a\n' });
  try {
    let parent = (await check(c, null, 'first')).tree;
    c.t.write('x.log', 'ignored until added\n');
    c.t.write('.env', 'SECRET=1\n');
    let res = await check(c, parent, 'ignored and secret');
    assert.is(res.mode, 'incremental');
    assert.equal(
      res.skipped.map((s) => s.path),
      ['.env'],
    );
    parent = res.tree;
    c.t.git(['add', '-f', 'x.log', '.env']);
    res = await check(c, parent, 'git add -f');
    assert.is(res.mode, 'incremental');
    assert.equal(res.changed.map((x) => x.path).sort(), ['.env', 'x.log'], 'tracked files are recorded, never classified');
    parent = res.tree;
    c.t.git(['rm', '-q', '--cached', 'x.log', '.env']);
    res = await check(c, parent, 'git rm --cached');
    assert.is(res.mode, 'incremental');
    assert.equal(
      res.skipped.map((s) => s.path),
      ['.env'],
    );
  } finally {
    await teardown(c);
  }
});

test('settings, config and core.fileMode=false: full scans', async () => {
  const c = await setup({ 'a.txt': 'a\n' });
  try {
    let parent = (await check(c, null, 'first')).tree;
    c.t.write('b.txt', 'b\n');
    c.settings = { ...c.settings, exclude: ['b.txt'] };
    let res = await check(c, parent, 'settings');
    assert.is(res.mode, 'full');
    assert.match(c.engine.stats.lastFullReason ?? '', /settings/);
    parent = res.tree;
    c.t.git(['config', 'core.fileMode', 'false']);
    c.t.write('c.txt', 'c\n');
    res = await check(c, parent, 'config');
    assert.is(res.mode, 'full');
    c.t.write('d.txt', 'd\n');
    res = await check(c, res.tree, 'fileMode=false');
    assert.is(res.mode, 'full');
    assert.match(c.engine.stats.lastFullReason ?? '', /fileMode/);
  } finally {
    await teardown(c);
  }
});

test('files above the in-memory size are hashed by git and give the same tree', async () => {
  const c = await setup({ 'a.txt': 'a\n' }, { largeFileBytes: 16 });
  try {
    const parent = (await check(c, null, 'first')).tree;
    c.t.write('a.txt', 'more than sixteen bytes of content\n');
    c.t.write('small', 's');
    const res = await check(c, parent, 'large');
    assert.is(res.mode, 'incremental');
  } finally {
    await teardown(c);
  }
});

test('restore temp files are never recorded; one whose writer is dead is removed like the full scan does', async () => {
  const c = await setup({ 'a.txt': 'a\n' });
  try {
    const parent = (await check(c, null, 'first')).tree;
    c.t.write(`d/.a.txt.agentsnap-${process.pid}-0123abcd`, 'half-written restore');
    const res = await check(c, parent, 'live writer');
    assert.is(res.mode, 'incremental');
    assert.equal(res.changed, []);
    assert.ok(c.t.exists(`d/.a.txt.agentsnap-${process.pid}-0123abcd`), 'a live writer keeps its file');
    c.t.write('d/.b.agentsnap-999999999-0123abcd', 'left by a killed restore');
    const gone = await c.engine.snapshot({ settings: c.settings, parentTree: res.tree });
    assert.is(gone.mode, 'incremental');
    assert.is(gone.tree, res.tree);
    assert.not.ok(c.t.exists('d/.b.agentsnap-999999999-0123abcd'), "a dead writer's temp file is removed");
  } finally {
    await teardown(c);
  }
});

test('an ignored directory un-ignored before the first snapshot is watched from then on', async () => {
  const t = tempRepo({ files: { '.gitignore': 'build/\n', 'a.txt': 'a\n' } });
  t.write('build/out.txt', 'ignored at first\n');
  const repo = await openRepo(t.dir, { env: t.env });
  const settings = await loadSettings(repo);
  const c: Ctx = { t, repo, settings, engine: await IncrementalSnapshotter.open(repo, { runDir: path.join(t.base, 'run'), settings }) };
  try {
    t.write('.gitignore', '');
    const first = await check(c, null, 'first');
    t.write('build/out.txt', 'now part of the snapshot\n');
    const res = await check(c, first.tree, 'edit in the formerly ignored directory');
    assert.equal(
      res.changed.map((x) => x.path),
      ['build/out.txt'],
    );
  } finally {
    await teardown(c);
  }
});

test('a file tracked in an ignored directory while another change forces a full scan is watched from then on', async () => {
  const c = await setup({ '.gitignore': 'build/\n', 'a.txt': 'a\n' });
  c.t.write('build/out.txt', 'ignored\n');
  try {
    const first = await check(c, null, 'first');
    c.t.git(['add', '-f', 'build/out.txt']);
    c.settings = { ...c.settings, maxFileSize: c.settings.maxFileSize + 1 }; // a full scan for another reason
    const res = await check(c, first.tree, 'tracked in an ignored directory');
    assert.is(res.mode, 'full');
    c.t.write('build/out.txt', 'edited\n');
    const edit = await check(c, res.tree, 'edit of the tracked file');
    assert.equal(
      edit.changed.map((x) => x.path),
      ['build/out.txt'],
    );
  } finally {
    await teardown(c);
  }
});

test('a split index (update-index --split-index): the user staging an ignored file is followed incrementally (its replaced entries, which have no name, are no path)', async () => {
  const files: Record<string, string> = { '.gitignore': '*.log\n', 'a.txt': 'a\n' };
  for (let i = 0; i < 50; i++) files[`d/f${i}.txt`] = `${i}\n`;
  const c = await setup(files);
  try {
    c.t.git(['update-index', '--split-index']);
    c.t.write('d/f3.txt', 'changed\n');
    c.t.git(['add', 'd/f3.txt']); // a replaced entry in the split index
    let parent = (await check(c, null, 'first')).tree;
    c.t.write('x.log', 'ignored until added\n');
    c.t.git(['add', '-f', 'x.log']);
    let res = await check(c, parent, 'git add -f');
    assert.is(res.mode, 'incremental', `full scan: ${c.engine.stats.lastFullReason}`);
    assert.equal(
      res.changed.map((x) => x.path),
      ['x.log'],
    );
    parent = res.tree;
    c.t.git(['rm', '-q', '--cached', 'x.log']);
    res = await check(c, parent, 'git rm --cached');
    assert.is(res.mode, 'incremental', `full scan: ${c.engine.stats.lastFullReason}`);
    assert.equal(
      res.changed.map((x) => x.path),
      ['x.log'],
    );
  } finally {
    await teardown(c);
  }
});

test('intent-to-add entries (git add -N) of an ignored file, a new file and one deleted since: each snapshot equals the full scan', async () => {
  const c = await setup({ '.gitignore': '*.log\n', 'a.txt': 'a\n' });
  try {
    let parent = (await check(c, null, 'first')).tree;
    c.t.write('x.log', 'ignored, then intended\n');
    c.t.write('new/n.txt', 'new\n');
    c.t.git(['add', '-N', '-f', 'x.log']);
    c.t.git(['add', '-N', 'new/n.txt']);
    parent = (await check(c, parent, 'add -N')).tree;
    c.t.write('x.log', 'edited after add -N\n');
    parent = (await check(c, parent, 'edit of an intent-to-add file')).tree;
    c.t.rm('new/n.txt');
    parent = (await check(c, parent, 'intent-to-add file deleted')).tree;
    c.t.git(['rm', '-q', '--cached', 'x.log']);
    await check(c, parent, 'intent-to-add entry removed: ignored again');
  } finally {
    await teardown(c);
  }
});

test('a user index that was corrupt for one snapshot (truncated, then written back): the next snapshot equals the full scan again', async () => {
  const c = await setup({ '.gitignore': '*.log\n', 'a.txt': 'a\n', 'k.log': 'tracked log\n', 'd/b.txt': 'b\n' });
  try {
    c.t.git(['add', '-f', 'k.log']);
    let parent = (await check(c, null, 'first')).tree;
    const file = path.join(c.t.dir, '.git', 'index');
    const good = fs.readFileSync(file);
    fs.writeFileSync(file, good.subarray(0, Math.floor(good.length / 2)));
    // git itself cannot read it: the full scan fails, and so may the engine.
    await c.engine.snapshot({ settings: c.settings, parentTree: parent }).catch(() => undefined);
    fs.writeFileSync(file, good);
    parent = (await check(c, parent, 'index written back')).tree;
    c.t.write('a.txt', 'a2\n');
    await check(c, parent, 'an edit after');
  } finally {
    await teardown(c);
  }
});

test.run();
