// Issue 30, item 5: a command reads agentsnap's settings once, into its context (session/context.ts), and
// passes them down; no layer below reads them again. Counted as what each read costs the user: one
// `git config -z --list` process (onGitSpawn), for the command's whole run, in-process from src/.
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cli, tempRepo, type TempRepo } from '../support/helpers.js';
import { onGitSpawn } from '../../src/git/run.js';
import { runHook } from '../../src/runtime/hook.js';

/** The `git config -z --list` processes started in `repo` while `action` runs. */
async function settingsReads(repo: TempRepo, action: () => Promise<unknown>): Promise<number> {
  let reads = 0;
  const off = onGitSpawn((args, cwd) => {
    if (cwd.startsWith(repo.dir) && args.includes('config') && args.includes('--list')) reads++;
  });
  try {
    await action();
  } finally {
    off();
  }
  return reads;
}

test('settings once: `snap` (a new session, its baseline and the checkpoint) reads them once', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const reads = await settingsReads(repo, async () => assert.is((await cli(repo, ['snap'])).code, 0));
    assert.is(reads, 1);
  } finally {
    repo.cleanup();
  }
});

test('settings once: a hook call (its pre snapshot) reads them once', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    assert.is((await cli(repo, ['snap'])).code, 0);
    const input = JSON.stringify({
      session_id: 'agent-1',
      cwd: repo.dir,
      hook_event_name: 'PreToolUse',
      tool_name: 'Write',
      tool_input: { file_path: path.join(repo.dir, 'a.txt') },
      tool_use_id: 'toolu_1',
    });
    const reads = await settingsReads(repo, async () => {
      const res = await runHook({ agent: 'claude', event: 'PreToolUse', input, env: repo.env, cwd: repo.dir });
      assert.is(res.warning, null);
      assert.is(res.action, 'pre');
    });
    assert.is(reads, 1);
  } finally {
    repo.cleanup();
  }
});

test('settings once: `undo` (the operation and the processes of the undone steps) reads them once', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    assert.is((await cli(repo, ['snap'])).code, 0);
    repo.write('a.txt', 'two\n');
    assert.is((await cli(repo, ['snap'])).code, 0);
    const reads = await settingsReads(repo, async () => {
      const res = await cli(repo, ['undo', '--force']);
      assert.is(res.code, 0, res.stderr);
    });
    assert.is(repo.read('a.txt').toString(), 'one\n');
    assert.is(reads, 1);
  } finally {
    repo.cleanup();
  }
});

test.run();
