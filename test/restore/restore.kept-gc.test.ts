// Versions a restore kept (a write that raced with it, see test/restore/restore.race.test.ts)
// are objects the journal names (op.done / session.apply `left[].oid`). They must
// stay reachable from agentsnap's refs as long as the session does: git's own gc
// prunes unreachable objects (after gc.pruneExpire, here at once), agentsnap's gc
// must not drop them early, doctor must not call them strays, and push carries them
// like the snapshots they hang on.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { cli, refsUnder, sessionOf, step, tempRepo, type TempRepo } from '../support/helpers.js';
import { journalEvents } from '../support/snap-helpers.js';
import { undoOperation } from '../../src/restore/undo.js';
import { applySession, type ApplyOptions } from '../../src/worktrees/parallel.js';
import { startWorktreeSession } from '../../src/worktrees/worktree.js';
import { openRepo } from '../../src/git/repo.js';
import { gc } from '../../src/worktrees/gc.js';
import { keptCommit, type RestoreOptions } from '../../src/restore/restore.js';

type Hooks = Pick<RestoreOptions, 'beforeReplace' | 'afterCheck'>;

/** git's own gc and prune with no grace period: whatever no ref reaches is gone. */
function pruneEverything(r: TempRepo): void {
  r.git(['-c', 'gc.pruneExpire=now', '-c', 'gc.reflogExpire=now', '-c', 'gc.reflogExpireUnreachable=now', 'gc', '-q', '--prune=now']);
  r.git(['prune', '--expire=now']);
}

function readable(r: TempRepo, oid: string, gitDir?: string): boolean {
  return r.gitRaw([...(gitDir ? ['--git-dir', gitDir] : []), 'cat-file', '-e', oid]).status === 0;
}

function blob(r: TempRepo, oid: string): string {
  return r.git(['cat-file', 'blob', oid]);
}

/** No aside or kept file of the restore is left in the worktree. */
function noAsides(r: TempRepo): void {
  const found: string[] = [];
  const walk = (d: string) => {
    for (const n of fs.readdirSync(path.join(r.dir, d))) {
      if (n === '.git') continue;
      const rel = d ? `${d}/${n}` : n;
      if (fs.lstatSync(path.join(r.dir, rel)).isDirectory()) walk(rel);
      if (/agentsnap-/.test(n)) found.push(rel);
    }
  };
  walk('');
  assert.equal(found, [], 'no aside is left once the kept versions are referenced');
}

/** A session with one step that changed a.txt and b.txt, and an undo of it during which `hooks` write. */
async function racedUndo(r: TempRepo, hooks: Hooks) {
  await step(r, () => {
    r.write('a.txt', 'agent a\n');
    r.write('b.txt', 'agent b\n');
  });
  const id = sessionOf(r);
  const repo = await openRepo(r.dir, { env: r.env });
  const res = await undoOperation(repo, id, 1, { restoreHooks: hooks });
  const left = res.left.find((l) => l.path === 'b.txt');
  assert.ok(left?.oid, `b.txt was kept with an object id: ${JSON.stringify(res.left)}`);
  return { id, res, oid: left.oid };
}

// The editor saves b.txt once more while the undo has it aside: the version it displaced
// exists nowhere but in the object the undo stored.
const SUPERSEDED: (r: TempRepo) => Hooks = (r) => ({
  beforeReplace: (rel) => rel === 'b.txt' && r.write('b.txt', 'first save\n'),
  afterCheck: (rel) => rel === 'b.txt' && r.write('b.txt', 'second save\n'),
});

test('kept: a version an undo kept on disk stays readable after git gc --prune=now and git prune --expire=now', async () => {
  const r = tempRepo({ files: { 'a.txt': 'one\n', 'b.txt': 'two\n' } });
  try {
    const { oid } = await racedUndo(r, { beforeReplace: (rel) => rel === 'b.txt' && r.write('b.txt', 'saved late\n') });
    assert.is(r.read('b.txt').toString(), 'saved late\n');
    pruneEverything(r);
    assert.ok(readable(r, oid), 'the kept object survives git gc');
    assert.is(blob(r, oid), 'saved late\n');
  } finally {
    r.cleanup();
  }
});

test('kept: a version replaced while set aside (only an object) survives git gc, later steps and agentsnap gc; the kept commit is journaled', async () => {
  const r = tempRepo({ files: { 'a.txt': 'one\n', 'b.txt': 'two\n' } });
  try {
    const { id, res, oid } = await racedUndo(r, SUPERSEDED(r));
    assert.is(r.read('b.txt').toString(), 'second save\n');
    assert.is(blob(r, oid), 'first save\n');
    noAsides(r);
    // op.done names the commit that holds the kept versions at their paths; it is a parent of the result.
    const done = journalEvents(r, id)
      .filter((e) => e.type === 'op.done')
      .pop() as { commit: string; kept?: string };
    assert.ok(done.kept, `op.done names the kept commit: ${JSON.stringify(done)}`);
    assert.is(done.commit, res.commit);
    assert.is(r.git(['rev-parse', `${done.kept}:b.txt`]).trim(), oid);
    assert.match(r.git(['cat-file', 'commit', done.kept!]), 'Agentsnap-Kind: kept');
    assert.ok(
      r.git(['rev-list', '--parents', '-1', done.commit]).includes(done.kept!),
      'the result commit has the kept commit as a parent',
    );
    pruneEverything(r);
    assert.ok(readable(r, oid), 'the displaced version survives git gc');
    // The session goes on: its head moves past the operation; the kept version stays reachable.
    await step(r, () => r.write('a.txt', 'later\n'));
    assert.is((await cli(r, ['gc'])).code, 0);
    pruneEverything(r);
    assert.ok(readable(r, oid), 'still there after another step and agentsnap gc');
    // Once gc drops the session (all of it), nothing holds it any more: that is the session's lifetime.
    const repo = await openRepo(r.dir, { env: r.env });
    const dropped = await gc(repo, { now: Date.now() + 30 * 24 * 3600 * 1000 });
    assert.equal(dropped.removedSessions, [id]);
  } finally {
    r.cleanup();
  }
});

test('kept: doctor reports no stray or disagreeing ref after an undo kept a version', async () => {
  const r = tempRepo({ files: { 'a.txt': 'one\n', 'b.txt': 'two\n' } });
  try {
    await racedUndo(r, SUPERSEDED(r));
    const res = await cli(r, ['doctor', '--json']);
    const report = JSON.parse(res.stdout) as { checks: { check: string; status: string; message: string }[] };
    const refs = report.checks.filter((c) => c.check === 'refs');
    assert.equal(
      refs.map((c) => c.status),
      ['ok'],
      JSON.stringify(refs),
    );
  } finally {
    r.cleanup();
  }
});

test('kept: push carries a kept version to the backup remote with the snapshots after it', async () => {
  const r = tempRepo({ files: { 'a.txt': 'one\n', 'b.txt': 'two\n' } });
  try {
    const { oid } = await racedUndo(r, SUPERSEDED(r));
    await step(r, () => r.write('a.txt', 'later\n'));
    const backup = path.join(r.base, 'snaps.git');
    r.git(['init', '-q', '--bare', backup]);
    assert.is((await cli(r, ['remote', 'add', 'snaps', backup])).code, 0);
    const pushed = await cli(r, ['push', 'snaps']);
    assert.is(pushed.code, 0, pushed.stderr);
    assert.ok(readable(r, oid, backup), 'the backup remote has the kept version');
  } finally {
    r.cleanup();
  }
});

async function racedApply(r: TempRepo, hooks: (wtDir: string) => Hooks) {
  const repo = await openRepo(r.dir, { env: r.env });
  const started = await startWorktreeSession(repo, { session: 'ap1' });
  const wt = started.meta.path;
  fs.writeFileSync(path.join(wt, 'b.txt'), 'from the agent\n');
  fs.writeFileSync(path.join(wt, 'c.txt'), 'new from the agent\n');
  const snap = await cli(r, ['snap', '--session', 'ap1', '-m', 'work'], { cwd: wt });
  assert.is(snap.code, 0, snap.stderr);
  const opts: ApplyOptions & { restoreHooks: Hooks } = { restoreHooks: hooks(wt) };
  const res = await applySession(repo, 'ap1', opts);
  const left = res.left.find((l) => l.path === 'b.txt');
  assert.ok(left?.oid, `b.txt was kept with an object id: ${JSON.stringify(res.left)}`);
  return { repo, res, oid: left.oid };
}

test('kept: a version an apply kept is reachable from its safety ref and survives git gc; agentsnap gc keeps it while the session is there', async () => {
  const r = tempRepo({ files: { 'a.txt': 'one\n', 'b.txt': 'two\n' } });
  try {
    const { repo, res, oid } = await racedApply(r, () => SUPERSEDED(r));
    assert.is(r.read('b.txt').toString(), 'second save\n');
    assert.is(r.read('c.txt').toString(), 'new from the agent\n');
    assert.is(blob(r, oid), 'first save\n');
    noAsides(r);
    assert.is(refsUnder(r, 'refs/agentsnap/safety/').get(res.safetyRef!), res.safety!);
    const ev = journalEvents(r, 'ap1').find((e) => e.type === 'session.apply') as { safety: string; kept?: string };
    assert.ok(ev.kept, `session.apply names the kept commit: ${JSON.stringify(ev)}`);
    assert.is(ev.safety, res.safety);
    assert.is(r.git(['rev-parse', `${ev.kept}:b.txt`]).trim(), oid);
    assert.is(
      r.git(['rev-parse', `${res.safety}^{tree}`]).trim(),
      r.git(['rev-parse', `${res.safety}^1^{tree}`]).trim(),
      'the safety ref still holds the worktree before the apply',
    );
    pruneEverything(r);
    assert.ok(readable(r, oid), 'the kept version survives git gc');

    // Past the retention, the session is kept (gc keep 1): so is the safety snapshot that holds the kept version.
    const later = Date.now() + 30 * 24 * 3600 * 1000;
    const kept = await gc(repo, { now: later, keep: 1 });
    assert.equal(kept.removedSessions, []);
    assert.ok(refsUnder(r, 'refs/agentsnap/safety/').has(res.safetyRef!), 'the safety ref stays while its session does');
    pruneEverything(r);
    assert.ok(readable(r, oid));
    // Once the session goes, its safety snapshot goes with it (past the retention).
    const dropped = await gc(repo, { now: later });
    assert.equal(dropped.removedSessions, ['ap1']);
    assert.not.ok(refsUnder(r, 'refs/agentsnap/safety/').has(res.safetyRef!));
  } finally {
    r.cleanup();
  }
});

test('kept: apply without a race leaves the safety ref on the plain safety snapshot (no kept commit)', async () => {
  const r = tempRepo({ files: { 'a.txt': 'one\n', 'b.txt': 'two\n' } });
  try {
    const repo = await openRepo(r.dir, { env: r.env });
    const wt = (await startWorktreeSession(repo, { session: 'ap2' })).meta.path;
    fs.writeFileSync(path.join(wt, 'b.txt'), 'from the agent\n');
    assert.is((await cli(r, ['snap', '--session', 'ap2', '-m', 'work'], { cwd: wt })).code, 0);
    const res = await applySession(repo, 'ap2');
    assert.equal(res.left, []);
    assert.is(r.git(['rev-list', '--parents', '-1', res.safety!]).trim(), res.safety!, 'a root commit, as before');
    const ev = journalEvents(r, 'ap2').find((e) => e.type === 'session.apply') as { kept?: string };
    assert.is(ev.kept, undefined);
  } finally {
    r.cleanup();
  }
});

test('kept: keptCommit puts each version at its path with its mode; one that cannot share the tree goes under agentsnap-kept-<n>/', async () => {
  const r = tempRepo();
  try {
    const repo = await openRepo(r.dir, { env: r.env });
    const obj = (body: string) => r.git(['hash-object', '-w', '--stdin'], { input: body }).trim();
    const [x, xy, run, link] = [obj('x\n'), obj('x/y\n'), obj('#!/bin/sh\n'), obj('target')];
    const commit = await keptCommit(
      repo,
      [
        { path: 'x', mode: '100644', oid: x },
        { path: 'x/y', mode: '100644', oid: xy },
        { path: 'bin/run', mode: '100755', oid: run },
        { path: 'bin/link', mode: '120000', oid: link },
        { path: 'x', mode: '100644', oid: x },
      ],
      'agentsnap: kept (test)\n\nAgentsnap-Kind: kept\n',
    );
    assert.ok(commit);
    const entries = r.git(['ls-tree', '-r', commit!]).trim().split('\n');
    assert.equal(entries, [
      `100644 blob ${xy}\tagentsnap-kept-1/x/y`,
      `120000 blob ${link}\tbin/link`,
      `100755 blob ${run}\tbin/run`,
      `100644 blob ${x}\tx`,
    ]);
    assert.is(r.git(['rev-list', '--parents', '-1', commit!]).trim(), commit!, 'no parent');
    r.git(['fsck', '--no-dangling', '--strict']);
    assert.is(await keptCommit(repo, [], 'unused\n'), null, 'nothing kept: no commit');
  } finally {
    r.cleanup();
  }
});

test.run();
