// Issue 30, item 3: the run-time path of a hook call goes only downward, as the imports say. A Write's pre and
// post hooks run in the warm server (scripts/hook-path.ts, through test/support/hook-path.ts and runtime-calls.ts,
// which record every call of src/ with V8's inspector; run alone it prints them with their whole chain), and no
// call may go from a file of a lower layer into one of a higher layer: the session layer gets its snapshotter,
// object writer, ref store and settings in the call's context (session/context.ts), built by the server from
// implementations in snapshot/ and git/, never closures of the server's own stored on the Repo (RepoAccel, gone).
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runProcess, ROOT } from '../support/helpers.js';
import type { RuntimeCall } from '../support/runtime-calls.js';

/**
 * The one call into a higher layer, and why it is not a way back up: the server is where the process receives the
 * call, and hands it to the router its starter passed in (ServerCalls, composed in runtime/server-api.ts). Everything the
 * call does runs below that router.
 */
const ENTRY = ['server/serve.ts:serveCall → runtime/server-api.ts:hook'];

test('hook path: a hook call in the warm server goes only downward at run time (no call back up into a higher layer)', async () => {
  // In a process of its own: the inspector's breakpoints and coverage are the whole process's.
  const res = await runProcess(process.execPath, ['--import', 'tsx', path.join(ROOT, 'scripts', 'hook-path.ts'), '--json'], {
    cwd: ROOT,
    env: process.env,
    input: null,
  });
  assert.is(res.code, 0, res.stderr);
  const { calls, upward } = JSON.parse(res.stdout) as { calls: number; upward: RuntimeCall[] };
  assert.ok(calls > 100, `only ${calls} calls recorded: the inspector saw no hook call`);
  const up = [...new Set(upward.map((c) => `${c.caller.file}:${c.caller.fn} → ${c.callee.file}:${c.callee.fn}`))].sort();
  assert.equal(up, ENTRY);
  // The calls RepoAccel made went into server/ from git/ and session/: none of them, nor any other, is left.
  assert.not.ok(
    upward.some((c) => /^(git|session|snapshot|base)\//.test(c.caller.file ?? '')),
    JSON.stringify(upward.map((c) => c.chain.slice(0, 3))),
  );
});

test.run();
