// Issue 13 item 7: `discard` (and gc) must not delete a nested repository of
// a session worktree whose commits or files exist nowhere else: a snapshot
// records a nested repository only as a gitlink (its HEAD id), not its
// objects, its other branches or its uncommitted files.
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cli, tempRepo, type TempRepo } from '../support/helpers.js';
import { openRepo } from '../../src/git/repo.js';
import { startWorktreeSession } from '../../src/worktrees/worktree.js';

async function worktreeSession(r: TempRepo, id: string): Promise<string> {
  const repo = await openRepo(r.dir, { env: r.env });
  return (await startWorktreeSession(repo, { session: id })).meta.path;
}

function gitIn(r: TempRepo, dir: string, args: string[]): string {
  return r.git(args, { cwd: dir });
}

test('discard refuses (exit 3, naming it) to delete a nested repository whose commits exist only there; --force deletes', async () => {
  const r = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const wt = await worktreeSession(r, 'n1');
    const nested = path.join(wt, 'lib', 'vendored');
    fs.mkdirSync(nested, { recursive: true });
    gitIn(r, nested, ['init', '-q', '-b', 'main']);
    fs.writeFileSync(path.join(nested, 'work.txt'), 'committed only here\n');
    gitIn(r, nested, ['add', '-A']);
    gitIn(r, nested, ['commit', '-q', '-m', 'only here']);
    const res = await cli(r, ['discard', 'n1']);
    assert.is(res.code, 3, res.stdout + res.stderr);
    assert.match(res.stderr, 'lib/vendored');
    assert.match(res.stderr, /commit/);
    assert.ok(fs.existsSync(path.join(nested, 'work.txt')), 'nothing removed');
    assert.ok(fs.existsSync(path.join(nested, '.git')));
    const forced = await cli(r, ['discard', 'n1', '--force']);
    assert.is(forced.code, 0, forced.stderr);
    assert.not.ok(fs.existsSync(wt));
  } finally {
    r.cleanup();
  }
});

test("discard refuses to delete a nested repository's uncommitted files, even when its commits are found elsewhere", async () => {
  const r = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const wt = await worktreeSession(r, 'n2');
    // A clone of the main repository: its commits are in the main repository's objects too.
    const nested = path.join(wt, 'clone');
    r.git(['clone', '-q', r.dir, nested]);
    fs.writeFileSync(path.join(nested, 'a.txt'), 'edited, not committed\n');
    fs.writeFileSync(path.join(nested, 'new.txt'), 'untracked\n');
    const res = await cli(r, ['discard', 'n2']);
    assert.is(res.code, 3, res.stdout + res.stderr);
    assert.match(res.stderr, 'clone');
    assert.match(res.stderr, /uncommitted/);
    assert.is(fs.readFileSync(path.join(nested, 'a.txt'), 'utf8'), 'edited, not committed\n');
  } finally {
    r.cleanup();
  }
});

test('discard removes a nested repository that holds nothing found nowhere else (a clean clone)', async () => {
  const r = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const wt = await worktreeSession(r, 'n3');
    r.git(['clone', '-q', r.dir, path.join(wt, 'clone')]);
    const res = await cli(r, ['discard', 'n3']);
    assert.is(res.code, 0, res.stdout + res.stderr);
    assert.not.ok(fs.existsSync(wt));
  } finally {
    r.cleanup();
  }
});

test("a nested repository's local commit on another branch, or a stash, is found too", async () => {
  const r = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const wt = await worktreeSession(r, 'n4');
    const nested = path.join(wt, 'clone');
    r.git(['clone', '-q', r.dir, nested]);
    gitIn(r, nested, ['checkout', '-q', '-b', 'side']);
    fs.writeFileSync(path.join(nested, 'side.txt'), 'side\n');
    gitIn(r, nested, ['add', '-A']);
    gitIn(r, nested, ['commit', '-q', '-m', 'side only']);
    gitIn(r, nested, ['checkout', '-q', 'main']);
    const res = await cli(r, ['discard', 'n4']);
    assert.is(res.code, 3, res.stdout + res.stderr);
    assert.match(res.stderr, 'clone');
    gitIn(r, nested, ['branch', '-q', '-D', 'side']);
    fs.writeFileSync(path.join(nested, 'a.txt'), 'stashed\n');
    gitIn(r, nested, ['stash', '-q']);
    const stashed = await cli(r, ['discard', 'n4']);
    assert.is(stashed.code, 3, stashed.stdout + stashed.stderr);
    assert.match(stashed.stderr, 'clone');
    assert.ok(fs.existsSync(nested));
  } finally {
    r.cleanup();
  }
});

test('gc keeps an old session whose worktree holds a nested repository with work found nowhere else', async () => {
  const r = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const wt = await worktreeSession(r, 'n5');
    const nested = path.join(wt, 'inner');
    fs.mkdirSync(nested);
    gitIn(r, nested, ['init', '-q', '-b', 'main']);
    fs.writeFileSync(path.join(nested, 'x.txt'), 'x\n');
    gitIn(r, nested, ['add', '-A']);
    gitIn(r, nested, ['commit', '-q', '-m', 'only here']);
    // Its snapshot holds the gitlink: the worktree is "as snapshotted", but the commit is only in inner/.git.
    assert.is((await cli(r, ['snap', '--session', 'n5'], { cwd: wt })).code, 0);
    const repo = await openRepo(r.dir, { env: r.env });
    const { gc } = await import('../../src/worktrees/gc.js');
    const kept = await gc(repo, { now: Date.now() + 20 * 24 * 3600 * 1000 });
    assert.equal(kept.removedSessions, []);
    assert.match(kept.kept[0]?.reason ?? '', 'inner');
    assert.ok(fs.existsSync(path.join(nested, 'x.txt')));
  } finally {
    r.cleanup();
  }
});

test.run();
