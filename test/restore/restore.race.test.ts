// A write that races with a restore (issue 13, item 3): the restore engine
// checks each path right before it replaces it, and whatever it finds there
// that the plan did not expect is kept (on disk, and as an object whose id is
// reported), never overwritten. The engine's test hooks land a write exactly
// in the old window (after the plan was checked, before the path is
// replaced) and in the new one (after the check, before the install).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { cliProcess, ROOT, runProcess, sessionOf, tempRepo, type TempRepo, step } from '../support/helpers.js';
import { skipRestoreTemp } from '../../src/base/fsutil.js';
import { describeLeft } from '../../src/cli/output.js';
import { journalEvents } from '../support/snap-helpers.js';
import { undoOperation } from '../../src/restore/undo.js';
import { openRepo } from '../../src/git/repo.js';
import { applyPlan, planChanges, type LeftPath, type RestoreOptions } from '../../src/restore/restore.js';

type Spec = Record<string, string | { link: string } | { exec: string }>;

/** A tree with exactly these entries, written through a throwaway index. */
function treeOf(r: TempRepo, spec: Spec): string {
  const index = path.join(r.base, `index-${Math.random().toString(16).slice(2)}`);
  const env = { GIT_INDEX_FILE: index };
  for (const [rel, v] of Object.entries(spec)) {
    const body = typeof v === 'string' ? v : 'link' in v ? v.link : v.exec;
    const mode = typeof v === 'string' ? '100644' : 'link' in v ? '120000' : '100755';
    const oid = r.git(['hash-object', '-w', '--stdin'], { input: body }).trim();
    r.git(['update-index', '--add', '--cacheinfo', `${mode},${oid},${rel}`], { env });
  }
  const tree = r.git(['write-tree'], { env }).trim();
  fs.rmSync(index, { force: true });
  return tree;
}

/** Puts spec on disk (the worktree holds exactly the `from` side of the plan). */
function writeSpec(r: TempRepo, spec: Spec): void {
  for (const [rel, v] of Object.entries(spec)) {
    if (typeof v === 'string') r.write(rel, v);
    else if ('link' in v) {
      fs.mkdirSync(path.dirname(path.join(r.dir, rel)), { recursive: true });
      fs.symlinkSync(v.link, path.join(r.dir, rel));
    } else r.write(rel, v.exec, 0o755);
  }
}

/** Restores `from` → `to` through the engine with the given hooks; `from` is on disk first. */
async function restore(r: TempRepo, from: Spec, to: Spec, hooks: Pick<RestoreOptions, 'beforeReplace' | 'afterCheck'>) {
  writeSpec(r, from);
  const repo = await openRepo(r.dir, { env: r.env });
  const toTree = treeOf(r, to);
  const plan = await planChanges(repo, treeOf(r, from), toTree);
  return applyPlan(repo, plan, { ...hooks, target: { tree: toTree } });
}

function blob(r: TempRepo, oid: string): string {
  return r.git(['cat-file', 'blob', oid]);
}

function leftAt(left: LeftPath[], rel: string): LeftPath & { oid?: string } {
  const l = left.find((x) => x.path === rel);
  assert.ok(l, `${rel} is reported as left: ${JSON.stringify(left)}`);
  return l as LeftPath & { oid?: string };
}

/** No restore temp or aside file is left in the worktree (`killed`: a killed process's temp files are a snapshot's to clean). */
function noTempFiles(r: TempRepo, killed = false): void {
  const found: string[] = [];
  const walk = (d: string) => {
    for (const n of fs.readdirSync(path.join(r.dir, d))) {
      if (n === '.git') continue;
      const rel = d ? `${d}/${n}` : n;
      if (fs.lstatSync(path.join(r.dir, rel)).isDirectory()) walk(rel);
      if (/agentsnap-/.test(n) && !(killed && skipRestoreTemp(r.dir, rel))) found.push(rel);
    }
  };
  walk('');
  assert.equal(found, [], 'no temp files are left');
}

const FROM: Spec = { 'a.txt': 'agent a\n', 'b.txt': 'agent b\n', 'z.txt': 'agent z\n' };
const TO: Spec = { 'a.txt': 'user a\n', 'b.txt': 'user b\n', 'z.txt': 'user z\n' };

test('race: a file modified after the check and before it is replaced is kept, stored and reported; the rest is restored', async () => {
  const r = tempRepo();
  try {
    const res = await restore(r, FROM, TO, { beforeReplace: (rel) => rel === 'b.txt' && r.write('b.txt', 'saved by the editor\n') });
    assert.is(r.read('b.txt').toString(), 'saved by the editor\n', 'the late write is still on disk');
    const l = leftAt(res.left, 'b.txt');
    assert.match(l.reason, 'changed during the restore');
    assert.ok(l.oid, 'the kept version has an object id');
    assert.is(blob(r, l.oid!), 'saved by the editor\n');
    assert.is(r.read('a.txt').toString(), 'user a\n');
    assert.is(r.read('z.txt').toString(), 'user z\n');
    assert.equal(
      res.applied.map((c) => c.path),
      ['a.txt', 'z.txt'],
    );
    noTempFiles(r);
  } finally {
    r.cleanup();
  }
});

test('race: a file written after the check of its deletion is kept, not deleted', async () => {
  const r = tempRepo();
  try {
    const res = await restore(r, { ...FROM, 'gone.txt': 'agent made it\n' }, TO, {
      beforeReplace: (rel) => rel === 'gone.txt' && r.write('gone.txt', 'the user wrote here\n'),
    });
    assert.is(r.read('gone.txt').toString(), 'the user wrote here\n');
    const l = leftAt(res.left, 'gone.txt');
    assert.is(blob(r, l.oid!), 'the user wrote here\n');
    assert.is(r.read('b.txt').toString(), 'user b\n');
    noTempFiles(r);
  } finally {
    r.cleanup();
  }
});

test('race: a file created where the restore adds one (nothing was there at the check) is kept', async () => {
  const r = tempRepo();
  try {
    const res = await restore(
      r,
      FROM,
      { ...TO, 'new.txt': 'from the snapshot\n' },
      {
        beforeReplace: (rel) => rel === 'new.txt' && r.write('new.txt', 'created meanwhile\n'),
      },
    );
    assert.is(r.read('new.txt').toString(), 'created meanwhile\n');
    const l = leftAt(res.left, 'new.txt');
    assert.is(blob(r, l.oid!), 'created meanwhile\n');
    assert.is(r.read('a.txt').toString(), 'user a\n');
    noTempFiles(r);
  } finally {
    r.cleanup();
  }
});

test('race: type changes (file to symlink, symlink to file, directory to file) keep what was written meanwhile', async () => {
  const r = tempRepo();
  try {
    const res = await restore(
      r,
      { ...FROM, f2l: 'a file\n', l2f: { link: 'a.txt' }, 'd/x.txt': 'in d\n' },
      { ...TO, f2l: { link: 'b.txt' }, l2f: 'a file again\n', d: 'd is a file\n' },
      {
        beforeReplace: (rel) => {
          if (rel === 'f2l') r.write('f2l', 'rewritten\n');
          if (rel === 'l2f') {
            fs.rmSync(path.join(r.dir, 'l2f'));
            fs.symlinkSync('z.txt', path.join(r.dir, 'l2f'));
          }
          if (rel === 'd') r.write('d/new.txt', 'new in d\n');
        },
      },
    );
    assert.is(r.read('f2l').toString(), 'rewritten\n');
    assert.is(blob(r, leftAt(res.left, 'f2l').oid!), 'rewritten\n');
    assert.is(fs.readlinkSync(path.join(r.dir, 'l2f')), 'z.txt');
    assert.is(blob(r, leftAt(res.left, 'l2f').oid!), 'z.txt');
    assert.is(r.read('d/new.txt').toString(), 'new in d\n', 'a file created in a directory that was to give way is kept');
    leftAt(res.left, 'd');
    assert.not.ok(r.exists('d/x.txt'), 'the planned deletion below it went through');
    assert.is(r.read('a.txt').toString(), 'user a\n');
    noTempFiles(r);
  } finally {
    r.cleanup();
  }
});

test('race: a file created while the old one was set aside is kept, and so is the version set aside', async () => {
  const r = tempRepo();
  try {
    const res = await restore(r, FROM, TO, {
      beforeReplace: (rel) => rel === 'b.txt' && r.write('b.txt', 'first save\n'),
      // The path is empty for a moment (its file is aside): a second save lands exactly then.
      afterCheck: (rel) => rel === 'b.txt' && r.write('b.txt', 'second save\n'),
    });
    assert.is(r.read('b.txt').toString(), 'second save\n', 'the newest write is on disk');
    const l = leftAt(res.left, 'b.txt');
    assert.is(blob(r, l.oid!), 'first save\n', 'the one it displaced is an object');
    assert.is(r.read('a.txt').toString(), 'user a\n');
  } finally {
    r.cleanup();
  }
});

test('race: an add whose path is created while the engine installs keeps the newcomer', async () => {
  const r = tempRepo();
  try {
    const res = await restore(
      r,
      FROM,
      { ...TO, 'new.txt': 'from the snapshot\n' },
      {
        afterCheck: (rel) => rel === 'new.txt' && r.write('new.txt', 'created at the last moment\n'),
      },
    );
    assert.is(r.read('new.txt').toString(), 'created at the last moment\n');
    leftAt(res.left, 'new.txt');
    noTempFiles(r);
  } finally {
    r.cleanup();
  }
});

test('race: a write through a file still open after the check is stored as an object and reported', async () => {
  const r = tempRepo();
  let fd: number | null = null;
  try {
    const res = await restore(r, FROM, TO, {
      beforeReplace: (rel) => {
        if (rel === 'b.txt') fd = fs.openSync(path.join(r.dir, 'b.txt'), 'r+');
      },
      afterCheck: (rel) => {
        if (rel === 'b.txt' && fd !== null) fs.writeSync(fd, 'LATE WRITE, longer than before\n', 0);
      },
    });
    // The path got the restored content (the writer's file has no name any more), its bytes are an object.
    assert.is(r.read('b.txt').toString(), 'user b\n');
    const l = leftAt(res.left, 'b.txt');
    assert.is(blob(r, l.oid!), 'LATE WRITE, longer than before\n');
    assert.ok(res.applied.some((c) => c.path === 'b.txt'));
  } finally {
    if (fd !== null) fs.closeSync(fd);
    r.cleanup();
  }
});

test('race: undo reports the kept path with its object id in its result and in op.done', async () => {
  const r = tempRepo({ files: { 'a.txt': 'one\n', 'b.txt': 'two\n' } });
  try {
    await step(r, () => {
      r.write('a.txt', 'agent a\n');
      r.write('b.txt', 'agent b\n');
    });
    const id = sessionOf(r);
    const repo = await openRepo(r.dir, { env: r.env });
    const res = await undoOperation(repo, id, 1, {
      restoreHooks: { beforeReplace: (rel) => rel === 'b.txt' && r.write('b.txt', 'saved late\n') },
    });
    assert.is(r.read('a.txt').toString(), 'one\n');
    assert.is(r.read('b.txt').toString(), 'saved late\n');
    const l = leftAt(res.left, 'b.txt');
    assert.is(blob(r, l.oid!), 'saved late\n');
    assert.match(l.reason, l.oid!, 'the reason names the object, so every output shows it');
    assert.match(describeLeft(l), `b.txt  changed during the restore: kept as it is (object ${l.oid})`, 'the CLI line of undo and apply');
    const done = journalEvents(r, id)
      .filter((e) => e.type === 'op.done')
      .pop() as { left: { path: string; oid?: string }[] };
    assert.equal(done.left.find((x) => x.path === 'b.txt')?.oid, l.oid);
  } finally {
    r.cleanup();
  }
});

/** Runs the plan from → to in a child process that SIGKILLs itself right after `at` was set aside and compared. */
async function killedRestore(r: TempRepo, fromTree: string, toTree: string, at: string): Promise<void> {
  const script = path.join(r.base, 'killed-restore.mts');
  const src = (m: string) => JSON.stringify(path.join(ROOT, 'src', m));
  fs.writeFileSync(
    script,
    `import { openRepo } from ${src('git/repo.ts')};
import { applyPlan, planChanges } from ${src('restore/restore.ts')};
const repo = await openRepo(${JSON.stringify(r.dir)}, { env: process.env });
const plan = await planChanges(repo, ${JSON.stringify(fromTree)}, ${JSON.stringify(toTree)});
await applyPlan(repo, plan, { target: { tree: ${JSON.stringify(toTree)} }, afterCheck: (rel) => { if (rel === ${JSON.stringify(at)}) process.kill(process.pid, 'SIGKILL'); } });
process.exit(3);
`,
  );
  const res = await runProcess(process.execPath, ['--import', 'tsx', script], { cwd: ROOT, env: r.env });
  assert.is(res.code, 128, `the child was killed: ${res.code} ${res.stderr}`);
}

for (const at of ['b.txt', 'gone.txt']) {
  test(`race: a restore killed while ${at} is aside is completed by the next run of the plan, and the aside is not lost meanwhile`, async () => {
    const r = tempRepo();
    try {
      const from = { ...FROM, 'gone.txt': 'agent made it\n' };
      writeSpec(r, from);
      const fromTree = treeOf(r, from);
      const toTree = treeOf(r, TO);
      await killedRestore(r, fromTree, toTree, at);
      assert.not.ok(r.exists(at), `${at} is aside`);
      const aside = fs.readdirSync(r.dir).filter((n) => n.includes('agentsnap-aside-'));
      assert.is(aside.length, 1, `one aside: ${aside.join(', ')}`);
      assert.not.ok(skipRestoreTemp(r.dir, aside[0]!), 'a snapshot would record it (its writer is gone), not delete it');
      assert.ok(r.exists(aside[0]!));
      // The next run of the same plan (an interrupted undo's roll-forward) puts it back and completes.
      const repo = await openRepo(r.dir, { env: r.env });
      const res = await applyPlan(repo, await planChanges(repo, fromTree, toTree), { target: { tree: toTree } });
      assert.equal(res.left, []);
      for (const [rel, body] of Object.entries(TO)) assert.is(r.read(rel).toString(), body);
      assert.not.ok(r.exists('gone.txt'));
      noTempFiles(r, true);
    } finally {
      r.cleanup();
    }
  });
}

/**
 * A writer that saves `w.txt` like an editor (temp file + rename) in a loop,
 * from the moment it sees the undo writing (d0/f0.txt, the first file it
 * writes, is back) until told to stop. Before each save it looks at the file:
 * when it is not what it saved last, something else replaced it, and that last
 * version goes to `displaced`.
 */
const WRITER = `
const fs = require('fs'); const path = require('path');
const [dir, tmpDir, ctl] = process.argv.slice(1);
const file = path.join(dir, 'w.txt');
const nap = () => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
fs.writeFileSync(path.join(ctl, 'ready'), '');
const read = (f) => { try { return fs.readFileSync(f, 'utf8'); } catch { return null; } };
while (read(path.join(dir, 'd0/f0.txt')) !== 'file 0\\n' && !fs.existsSync(path.join(ctl, 'stop'))) nap();
let last = null; let n = 0;
const displaced = [];
for (;;) {
  const stop = fs.existsSync(path.join(ctl, 'stop'));
  if (last !== null && read(file) !== last) displaced.push(last);
  if (stop) break;
  const body = 'version ' + n + ' ' + Math.random() + '\\n';
  const tmp = path.join(tmpDir, 'w.tmp');
  fs.writeFileSync(tmp, body);
  fs.renameSync(tmp, file);
  last = body; n++;
}
fs.writeFileSync(path.join(ctl, 'result.json'), JSON.stringify({ n, displaced }));
`;

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 6000 && !cond(); i++) await new Promise((res) => setTimeout(res, 10));
  assert.ok(cond(), `timed out waiting for ${what}`);
}

test('race: undo of 800 files with a concurrent writer loses no version the writer saved', async () => {
  const files: Record<string, string> = { 'w.txt': 'w before\n' };
  for (let i = 0; i < 800; i++) files[`d${i % 20}/f${i}.txt`] = `file ${i}\n`;
  const r = tempRepo({ files });
  const ctl = path.join(r.base, 'ctl');
  const tmpDir = path.join(r.base, 'writer-tmp');
  fs.mkdirSync(ctl);
  fs.mkdirSync(tmpDir);
  try {
    await step(r, () => {
      for (let i = 0; i < 800; i++) r.write(`d${i % 20}/f${i}.txt`, `changed by the agent ${i}\n`);
      r.write('w.txt', 'w by the agent\n');
    });
    const child = spawn(process.execPath, ['-e', WRITER, r.dir, tmpDir, ctl], { stdio: 'inherit' });
    const exited = new Promise<number | null>((res) => child.on('exit', (code) => res(code)));
    await until(() => fs.existsSync(path.join(ctl, 'ready')), 'the writer');
    const res = await cliProcess(r, ['undo', '1']);
    fs.writeFileSync(path.join(ctl, 'stop'), '');
    assert.is(await exited, 0);
    assert.is(res.code, 0, res.stderr);
    const out = JSON.parse(fs.readFileSync(path.join(ctl, 'result.json'), 'utf8')) as { n: number; displaced: string[] };
    for (const v of out.displaced) {
      const oid = r.git(['hash-object', '--stdin'], { input: v }).trim();
      const there = r.gitRaw(['cat-file', '-e', oid]).status === 0;
      assert.ok(there, `the writer's ${JSON.stringify(v)} was replaced and is in no object (undo said: ${res.stdout})`);
    }
    assert.is(r.read('d3/f3.txt').toString(), 'file 3\n', 'the undo completed');
    noTempFiles(r);
  } finally {
    r.cleanup();
  }
});

test.run();
