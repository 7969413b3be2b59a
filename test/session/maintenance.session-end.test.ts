// The end of a session packs agentsnap's own objects, never the user's, and
// never on the user's time: `wrap` exits without waiting for the pack.
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cliProcess, sessionOf, tempRepo, type TempRepo } from '../support/helpers.js';
import { gitCommonDir, looseObjects } from '../support/snap-helpers.js';
import { acquireLock } from '../../src/base/lock.js';

/** A repository whose user objects are loose: files `git add`-ed, never packed. */
function looseRepo(): { repo: TempRepo; userBlobs: string[] } {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  for (let i = 0; i < 60; i++) repo.write(`src/d${i % 6}/f${i}.txt`, `user file ${i}\n`);
  repo.git(['add', '-A']);
  const userBlobs = repo
    .git(['ls-files', '-s'])
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split(/\s+/)[1]!);
  const loose = looseObjects(repo);
  for (const b of userBlobs) assert.ok(loose.has(b), `precondition: ${b} is loose`);
  return { repo, userBlobs };
}

function stateOf(repo: TempRepo, session: string): { packedHead?: string | null; unpacked?: number } {
  return JSON.parse(fs.readFileSync(path.join(gitCommonDir(repo), 'agentsnap', 'sessions', session, 'state.json'), 'utf8'));
}

/** Waits (bounded generously: it only makes a failing test slower) until the session's objects have been packed. */
async function packedHeadOf(repo: TempRepo, session: string): Promise<string | null> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const s = stateOf(repo, session);
    if (s.packedHead) return s.packedHead;
    if (Date.now() > deadline) return null;
    await new Promise((r) => setTimeout(r, 50));
  }
}

test("wrap's end packs agentsnap's objects and leaves the user's loose objects loose", async () => {
  const { repo, userBlobs } = looseRepo();
  try {
    repo.write('untracked.txt', 'made by nobody yet\n');
    const res = await cliProcess(repo, ['wrap', '--', 'sh', '-c', 'echo agent > agent.txt']);
    assert.is(res.code, 0, res.stderr);
    const session = sessionOf(repo);
    const packed = await packedHeadOf(repo, session);
    assert.ok(packed, 'the session was packed');
    const loose = looseObjects(repo);
    for (const b of userBlobs) assert.ok(loose.has(b), `the user's blob ${b} is still loose`);
    // What agentsnap wrote is packed: the final commit, and the blob of the file the agent wrote.
    assert.not.ok(loose.has(packed!), 'the final snapshot is packed');
    const agentBlob = repo.git(['rev-parse', `${packed}:agent.txt`]).trim();
    assert.not.ok(loose.has(agentBlob), "the agent's file is packed");
    assert.is(repo.git(['cat-file', '-p', agentBlob]), 'agent\n');
    for (const b of userBlobs) assert.is(repo.gitRaw(['cat-file', '-e', b]).status, 0);
  } finally {
    repo.cleanup();
  }
});

test('wrap exits without waiting for the end-of-session pack (it runs in the background once it can)', async () => {
  const { repo } = looseRepo();
  try {
    // Another process packs: while it holds the lock, no pack of this session can run.
    const locks = path.join(gitCommonDir(repo), 'agentsnap', 'locks');
    fs.mkdirSync(locks, { recursive: true });
    const lock = await acquireLock(path.join(locks, 'packs.lock'), { purpose: 'test' });
    let session: string;
    try {
      const res = await cliProcess(repo, ['wrap', '--', 'sh', '-c', 'echo agent > agent.txt']);
      assert.is(res.code, 0, res.stderr);
      session = sessionOf(repo);
      assert.not.ok(stateOf(repo, session).packedHead, 'nothing packed while the lock is held');
    } finally {
      lock.release();
    }
    // wrap has exited; the pack still happens, after it.
    assert.ok(await packedHeadOf(repo, session), 'the session was packed after wrap exited');
  } finally {
    repo.cleanup();
  }
});

test.run();
