// Issue 30 item 6: every public API function has one shape: it validates what it was given (before it opens
// the repository: a wrong argument is said as such anywhere), opens the repository, calls the layer below, and
// an AgentsnapError on the way out names the API function in `data.caller`, code, message and exit as thrown.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cli, tempRepo } from '../support/helpers.js';
import { doctor, fetch, hooks, isAgentsnapError, push, remoteAdd } from '../../src/index.js';

/** The error a call fails with: its code and data.caller. */
async function failure(call: () => Promise<unknown>): Promise<{ code: string; caller: unknown }> {
  try {
    await call();
  } catch (e) {
    if (isAgentsnapError(e)) return { code: e.code, caller: e.data.caller };
    throw e;
  }
  throw new Error('the call succeeded');
}

test('an API function validates its arguments before it opens the repository', async () => {
  const notRepo = fs.mkdtempSync(path.join(os.tmpdir(), 'agentsnap-test-'));
  try {
    const at = { cwd: notRepo, env: { ...process.env, GIT_CEILING_DIRECTORIES: path.dirname(notRepo) } };
    assert.equal(await failure(() => hooks('bogus' as 'install', at)), { code: 'InvalidArgument', caller: 'hooks' });
    assert.equal(await failure(() => push('', at)), { code: 'InvalidArgument', caller: 'push' });
    assert.equal(await failure(() => fetch('', at)), { code: 'InvalidArgument', caller: 'fetch' });
    assert.equal(await failure(() => remoteAdd('', undefined, at)), { code: 'InvalidArgument', caller: 'remoteAdd' });
  } finally {
    fs.rmSync(notRepo, { recursive: true, force: true });
  }
});

test('an error from the layer below names the API function that was called (data.caller), in --json too', async () => {
  const notRepo = fs.mkdtempSync(path.join(os.tmpdir(), 'agentsnap-test-'));
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const at = { cwd: notRepo, env: { ...process.env, GIT_CEILING_DIRECTORIES: path.dirname(notRepo) } };
    assert.equal(await failure(() => doctor(at)), { code: 'NotARepository', caller: 'doctor' });
    const r = await cli(repo, ['push', 'nowhere', '--json']);
    const err = (JSON.parse(r.stdout) as { error: { code: string; data: { caller?: string } } }).error;
    assert.is(err.data.caller, 'push', r.stdout);
  } finally {
    fs.rmSync(notRepo, { recursive: true, force: true });
    repo.cleanup();
  }
});

test.run();
