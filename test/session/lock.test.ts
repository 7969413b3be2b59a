// Locks record their owner: a dead owner's lock is taken over, a live owner
// makes others wait up to agentsnap.lockTimeout and then fail with Busy (5).
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cli, tempRepo, type TempRepo } from '../support/helpers.js';
import { gitCommonDir, jsonError, snapJson } from '../support/snap-helpers.js';
import { acquireLock, clearStaleGitLock, processStartTime } from '../../src/base/lock.js';
import { openRepo } from '../../src/git/repo.js';
import { updateRefs } from '../../src/git/plumbing.js';

function sessionLock(repo: TempRepo, session: string): string {
  return path.join(gitCommonDir(repo), 'agentsnap', 'sessions', session, 'lock');
}

function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(r.stdout);
}

function owner(pid: number, start: string | null = processStartTime(pid)) {
  return JSON.stringify({ pid, start, host: os.hostname(), since: new Date().toISOString(), purpose: 'test' });
}

test('a git lock that is gone by the time it is checked is no obstacle: the caller retries (crash test, kill=group)', async () => {
  // A git killed with its agentsnap can leave a ref lock that an orphaned git child removes a moment later:
  // the failed update must then be retried, not reported.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentsnap-lock-'));
  try {
    assert.is(await clearStaleGitLock(path.join(dir, 'refs', 'agent', 's', '3.lock')), true);
    const held = path.join(dir, 'stale.lock');
    fs.writeFileSync(held, '');
    assert.is(await clearStaleGitLock(held), true, 'a lock no process holds is removed');
    assert.not.ok(fs.existsSync(held));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a lock left by a dead process is taken over', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const s1 = await snapJson(repo);
    const pid = deadPid();
    fs.writeFileSync(sessionLock(repo, s1.session), owner(pid, '12345'));
    repo.git(['config', 'agentsnap.lockTimeout', '100']);
    const s2 = await snapJson(repo);
    assert.is(s2.step, 2);
    assert.not.ok(fs.existsSync(sessionLock(repo, s1.session)));
    // A live pid whose start time differs (the pid was reused) is dead too.
    fs.writeFileSync(sessionLock(repo, s1.session), owner(process.pid, 'not-the-start-time'));
    const s3 = await snapJson(repo);
    assert.is(s3.step, 3);
  } finally {
    repo.cleanup();
  }
});

test('a live owner makes snap fail with Busy (exit 5) after agentsnap.lockTimeout', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  const sleeper = spawn('sleep', ['60'], { stdio: 'ignore' });
  try {
    const s1 = await snapJson(repo);
    const pid = sleeper.pid ?? 0;
    fs.writeFileSync(sessionLock(repo, s1.session), owner(pid));
    repo.git(['config', 'agentsnap.lockTimeout', '200']);
    const r = await cli(repo, ['snap']);
    assert.is(r.code, 5, r.stderr);
    assert.match(r.stderr, new RegExp(`is locked by pid ${pid}`));
    assert.is(r.stderr.trim().split('\n').length, 2, 'one message line and one hint line');
    const j = await cli(repo, ['snap', '--json']);
    assert.is(j.code, 5);
    assert.is(jsonError(j).code, 'Busy');
    // Nothing was written: still one step.
    assert.is(
      repo
        .git(['for-each-ref', `refs/agent/${s1.session}/`])
        .trim()
        .split('\n').length,
      2,
    );
    // The lock is left to its owner.
    assert.ok(fs.existsSync(sessionLock(repo, s1.session)));
    sleeper.kill();
    await new Promise((r) => sleeper.once('exit', r));
    const s2 = await snapJson(repo);
    assert.is(s2.step, 2);
  } finally {
    sleeper.kill();
    repo.cleanup();
  }
});

test("ref locks a killed git left on several of agentsnap's refs are all cleared: the update goes through (crash: snap killed with its group)", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const r = await openRepo(repo.dir, { env: repo.env });
    const head = repo.git(['rev-parse', 'HEAD']).trim();
    // git stops at the first lock in its way, so the second is only reported by the retry.
    for (const n of [1, 2, 3]) {
      const lock = path.join(r.commonDir, 'refs', 'agent', 's', `${n}.lock`);
      fs.mkdirSync(path.dirname(lock), { recursive: true });
      fs.writeFileSync(lock, '');
    }
    await updateRefs(
      r,
      [1, 2, 3].map((n) => ({ ref: `refs/agent/s/${n}`, value: head })),
    );
    for (const n of [1, 2, 3]) assert.is(repo.git(['rev-parse', `refs/agent/s/${n}`]).trim(), head);
    assert.equal(
      fs.readdirSync(path.join(r.commonDir, 'refs', 'agent', 's')).filter((f) => f.endsWith('.lock')),
      [],
    );
  } finally {
    repo.cleanup();
  }
});

test('a torn lock file older than 2 s is taken over; a fresh one is waited on', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const s1 = await snapJson(repo);
    const lock = sessionLock(repo, s1.session);
    repo.git(['config', 'agentsnap.lockTimeout', '100']);
    fs.writeFileSync(lock, '{"pid":');
    const r = await cli(repo, ['snap']);
    assert.is(r.code, 5, 'a fresh torn lock may still be being written');
    const old = new Date(Date.now() - 5000);
    fs.utimesSync(lock, old, old);
    const s2 = await snapJson(repo);
    assert.is(s2.step, 2);
    fs.writeFileSync(lock, '');
    fs.utimesSync(lock, old, old);
    const s3 = await snapJson(repo);
    assert.is(s3.step, 3);
  } finally {
    repo.cleanup();
  }
});

test('the worktree lock (session selection) recovers from a dead owner too', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const locks = path.join(gitCommonDir(repo), 'agentsnap', 'locks');
    const first = await snapJson(repo);
    assert.equal(fs.readdirSync(locks), [], 'released');
    const name = `worktree-${createHash('sha1').update(repo.dir).digest('hex').slice(0, 16)}.lock`;
    fs.writeFileSync(path.join(locks, name), owner(deadPid(), '1'));
    repo.git(['config', 'agentsnap.lockTimeout', '100']);
    const s = await snapJson(repo);
    assert.is(s.session, first.session);
  } finally {
    repo.cleanup();
  }
});

test('acquireLock: release removes the file; concurrent acquirers are serialised', async () => {
  const repo = tempRepo({ noInit: true });
  try {
    const file = path.join(repo.base, 'x.lock');
    const order: string[] = [];
    const worker = async (name: string) => {
      const l = await acquireLock(file, { timeoutMs: 5000 });
      order.push(`${name}+`);
      await new Promise((r) => setTimeout(r, 10));
      order.push(`${name}-`);
      l.release();
    };
    await Promise.all([worker('a'), worker('b'), worker('c')]);
    for (let i = 0; i < order.length; i += 2) assert.is(order[i]?.slice(0, 1), order[i + 1]?.slice(0, 1), order.join(' '));
    assert.not.ok(fs.existsSync(file));
    assert.equal(
      fs.readdirSync(repo.base).filter((n) => n.startsWith('x.lock')),
      [],
    );
  } finally {
    repo.cleanup();
  }
});

test.run();
