// What a crash leaves behind, made by hand (the states test/safety/crash.test.ts
// reaches at random): the next command recovers without manual repair.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { cli, refsUnder, tempRepo, treeFiles, sessionOf } from '../support/helpers.js';
import { undo } from '../../src/index.js';

/** A pid no process has (above the kernel's pid_max). */
const DEAD_PID = 99_999_999;

test('a private index lock left by a killed git is removed by the next snapshot', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    assert.is((await cli(repo, ['snap', '-m', 'one'])).code, 0);
    const lock = path.join(repo.dir, '.git', 'agentsnap', 'sessions', sessionOf(repo), 'index.lock');
    fs.writeFileSync(lock, 'torn');
    repo.write('a.txt', 'changed\n');
    const res = await cli(repo, ['snap', '-m', 'two', '--json']);
    assert.is(res.code, 0, res.stderr);
    assert.not.ok(fs.existsSync(lock));
    const { commit } = JSON.parse(res.stdout) as { commit: string };
    assert.is(treeFiles(repo, commit).get('a.txt')?.content.toString(), 'changed\n');
  } finally {
    repo.cleanup();
  }
});

test("a ref lock left on one of agentsnap's refs is removed; the user's own ref locks are never touched", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const pre = await cli(repo, ['snap', '--phase', 'pre', '-q']);
    assert.is(pre.code, 0, pre.stderr);
    const id = sessionOf(repo);
    const refLock = path.join(repo.dir, '.git', 'refs', 'agent', id, '1.lock');
    fs.writeFileSync(refLock, '');
    const userLock = path.join(repo.dir, '.git', 'refs', 'heads', 'main.lock');
    fs.writeFileSync(userLock, '');
    repo.write('a.txt', 'b\n');
    const post = await cli(repo, ['snap', '--phase', 'post', '--step', '1', '--json']);
    assert.is(post.code, 0, post.stderr);
    assert.not.ok(fs.existsSync(refLock));
    assert.is(refsUnder(repo, `refs/agent/${id}/`).get(`refs/agent/${id}/1`), (JSON.parse(post.stdout) as { commit: string }).commit);
    assert.ok(fs.existsSync(userLock), "the user's ref lock is theirs to remove");
  } finally {
    repo.cleanup();
  }
});

test("a restore's temporary file left by a killed process is never snapshotted, and is removed", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    assert.is((await cli(repo, ['snap', '--phase', 'pre', '-q'])).code, 0);
    repo.write('a.txt', 'b\n');
    assert.is((await cli(repo, ['snap', '--phase', 'post', '-q'])).code, 0);
    const stray = `sub/.a.txt.agentsnap-${DEAD_PID}-0123abcd`;
    repo.write(stray, 'half written');
    // Not a change outside the tool calls: the undo goes ahead without --force.
    const undo = await cli(repo, ['undo', '1', '--json']);
    assert.is(undo.code, 0, undo.stderr);
    assert.not.ok(repo.exists(stray));
    assert.is(repo.read('a.txt').toString(), 'a\n');
    for (const ref of refsUnder(repo, 'refs/agentsnap/').values()) {
      for (const p of treeFiles(repo, ref).keys()) assert.not.match(p, /\.agentsnap-\d+-/);
    }
  } finally {
    repo.cleanup();
  }
});

test('the same undo run again (say after a crash) records nothing; redo then reverses the undo that did the work', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    assert.is((await cli(repo, ['snap', '--phase', 'pre', '-q'])).code, 0);
    repo.write('a.txt', 'b\n');
    assert.is((await cli(repo, ['snap', '--phase', 'post', '-q'])).code, 0);
    assert.is((await cli(repo, ['undo', '1'])).code, 0);
    const again = await cli(repo, ['undo', '1']);
    assert.is(again.code, 0, again.stderr);
    assert.match(again.stdout, 'already as before step 1');
    assert.is(repo.read('a.txt').toString(), 'a\n');
    const redo = await cli(repo, ['redo']);
    assert.is(redo.code, 0, redo.stderr);
    assert.is(repo.read('a.txt').toString(), 'b\n');
  } finally {
    repo.cleanup();
  }
});

test('an interrupted undo whose git left the private index locked is completed by the next command', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n', 'b.txt': 'b\n', 'c.txt': 'c\n' } });
  try {
    assert.is((await cli(repo, ['snap', '--phase', 'pre', '--tool', 'Bash', '-q'])).code, 0);
    repo.write('a.txt', 'A\n');
    repo.write('b.txt', 'B\n');
    repo.write('c.txt', 'C\n');
    assert.is((await cli(repo, ['snap', '--phase', 'post', '-q'])).code, 0);
    let interrupted = false;
    await undo({ cwd: repo.dir, env: repo.env, step: 1, interruptAfter: 1 }).catch(() => (interrupted = true));
    assert.ok(interrupted);
    // The killed operation's git held the private index's lock when it died.
    const lock = path.join(repo.dir, '.git', 'agentsnap', 'sessions', sessionOf(repo), 'index.lock');
    fs.writeFileSync(lock, '');
    const res = await cli(repo, ['undo', '1']);
    assert.is(res.code, 0, res.stderr);
    assert.not.ok(fs.existsSync(lock));
    for (const f of ['a', 'b', 'c']) assert.is(repo.read(`${f}.txt`).toString(), `${f}\n`);
  } finally {
    repo.cleanup();
  }
});

test.run();
