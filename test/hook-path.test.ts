// Issue 30, item 3: a hook call goes down into session/ and back up into server/ at run time while the imports
// say it never does. This pins every call from a lower layer into a higher one that a Write's pre and post hooks
// make in the warm server (scripts/hook-path.ts, through test/support/hook-path.ts and runtime-calls.ts, records
// them with V8's inspector; run alone it prints them with their whole chain), so a new one fails here, and the
// list shrinks as RepoAccel is replaced.
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runProcess, ROOT } from './helpers.js';
import type { RuntimeCall } from './support/runtime-calls.js';

/** Passed in as arguments by the higher layer: the lower one names only a function type. */
const PASSED_IN = [
  // ServerCalls: the hook router, composed in server-api.ts and handed to the server (DEVELOPING.md, server/)
  'server/serve.ts:handle → server-api.ts:hook',
  // what runs under a lock file
  'base/lock.ts:withLock → hook.ts:(anonymous)',
  'base/lock.ts:withLock → session/locks.ts:taken',
];

/**
 * RepoAccel (src/git/repo.ts): closures server/serve.ts stores on the Repo it hosts, which git/ and session/ call
 * as the Repo's own. These are the calls that go back up into server/ unseen by the import graph.
 */
const REPO_ACCEL = [
  'git/config.ts:loadSettings → server/serve.ts:(anonymous)', // accel.settings: cachedSettings' closure
  'git/plumbing.ts:commitTree → server/serve.ts:accel.commitTree',
  'git/plumbing.ts:updateRefs → server/serve.ts:updateRefs', // accel.updateRefs → the long-lived update-ref
  'session/locks.ts:once → server/serve.ts:accel.snapshot', // lockedSnapshot's one try (retried once after a prune) → the incremental engine
];

test('hook path: the calls into a higher layer that a hook call makes at run time are the known ones', async () => {
  // In a process of its own: the inspector's breakpoints and coverage are the whole process's.
  const res = await runProcess(process.execPath, ['--import', 'tsx', path.join(ROOT, 'scripts', 'hook-path.ts'), '--json'], { cwd: ROOT, env: process.env, input: null });
  assert.is(res.code, 0, res.stderr);
  const { calls, upward } = JSON.parse(res.stdout) as { calls: number; upward: RuntimeCall[] };
  assert.ok(calls > 100, `only ${calls} calls recorded: the inspector saw no hook call`);
  const up = [...new Set(upward.map((c) => `${c.caller.file}:${c.caller.fn} → ${c.callee.file}:${c.callee.fn}`))].sort();
  assert.equal(up, [...PASSED_IN, ...REPO_ACCEL].sort());
});

test.run();
