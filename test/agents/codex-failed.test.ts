// Codex CLI fires PreToolUse for an apply_patch that then fails, and never
// PostToolUse: the call's end is in Codex's rollout file (transcript_path).
// Its step is recorded `failed` from there (not left open to end as
// `interrupted`), and the next call does not overlap it. Through the bundle.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { cliProcess, tempRepo, type TempRepo } from '../support/helpers.js';
import { loadSession } from '../../src/session/session.js';
import { openRepo } from '../../src/git/repo.js';

function hook(repo: TempRepo, event: string, payload: unknown, env: Record<string, string>) {
  return cliProcess(repo, ['hook', 'codex', event, '--wrapped'], { env, input: JSON.stringify(payload) });
}

test('a failed Codex apply_patch (PreToolUse, no PostToolUse) is recorded failed from the rollout; the next call does not overlap it', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const start = await cliProcess(repo, ['snap', '--json']);
    assert.is(start.code, 0, start.stderr);
    const id = (JSON.parse(start.stdout) as { session: string }).session;
    const env = { AGENTSNAP_SESSION: id, AGENTSNAP_WORKTREE: repo.dir };
    const rollout = path.join(repo.home, '.codex', 'sessions', '2026', '12', '01', 'rollout-2026-12-01T10-00-00-x.jsonl');
    fs.mkdirSync(path.dirname(rollout), { recursive: true });
    const append = (o: unknown) => fs.appendFileSync(rollout, `${JSON.stringify(o)}\n`);
    append({ type: 'session_meta', payload: { cli_version: '0.171.0' } });
    const common = {
      session_id: 's',
      turn_id: 't',
      transcript_path: rollout,
      cwd: repo.dir,
      model: 'gpt-5',
      permission_mode: 'bypassPermissions',
    };
    const patch = {
      tool_name: 'apply_patch',
      tool_input: { command: '*** Begin Patch\n*** Update File: nope.txt\n@@\n-x\n+y\n*** End Patch\n' },
    };
    // 1: the patch fails verification: Codex writes its output to the rollout and fires no PostToolUse.
    assert.is((await hook(repo, 'PreToolUse', { ...common, ...patch, hook_event_name: 'PreToolUse', tool_use_id: 'call_1' }, env)).code, 0);
    append({ type: 'response_item', payload: { type: 'custom_tool_call', call_id: 'call_1', name: 'apply_patch', input: '...' } });
    append({
      type: 'event_msg',
      payload: {
        type: 'patch_apply_end',
        call_id: 'call_1',
        stdout: '',
        stderr: 'Failed to find expected lines in nope.txt',
        success: false,
      },
    });
    append({
      type: 'response_item',
      payload: {
        type: 'custom_tool_call_output',
        call_id: 'call_1',
        output: 'apply_patch verification failed: Failed to read file to update nope.txt',
      },
    });
    // 2: a call whose output carries a non-zero exit code (Codex 0.171's exec_command output, as its rollout holds it), also without PostToolUse.
    assert.is((await hook(repo, 'PreToolUse', { ...common, ...patch, hook_event_name: 'PreToolUse', tool_use_id: 'call_2' }, env)).code, 0);
    append({
      type: 'response_item',
      payload: {
        type: 'function_call_output',
        call_id: 'call_2',
        output:
          'Chunk ID: 68525a\nWall time: 0.0000 seconds\nProcess exited with code 1\nOriginal token count: 0\nOutput:\nerror: patch failed\n',
      },
    });
    // 3: the next call, an ordinary one.
    const bash = { tool_name: 'Bash', tool_input: { command: 'echo x > b.txt' }, tool_use_id: 'call_3' };
    assert.is((await hook(repo, 'PreToolUse', { ...common, ...bash, hook_event_name: 'PreToolUse' }, env)).code, 0);
    repo.write('b.txt', 'x\n');
    assert.is((await hook(repo, 'PostToolUse', { ...common, ...bash, hook_event_name: 'PostToolUse', tool_response: '' }, env)).code, 0);
    const s = loadSession(await openRepo(repo.dir, { env: repo.env }), id);
    const calls = s.steps.filter((st) => st.kind === 'call');
    assert.equal(
      calls.map((st) => [st.toolUseId, st.status, st.overlaps]),
      [
        ['call_1', 'failed', []],
        ['call_2', 'failed', []],
        ['call_3', 'done', []],
      ],
    );
    assert.match(calls[0]?.error ?? '', 'verification failed');
    assert.is(calls[1]?.error, 'Exit code 1');
    const log = await cliProcess(repo, ['log', '--session', id]);
    assert.not.match(log.stdout, 'interrupted');
  } finally {
    repo.cleanup();
  }
});

test('under init (no wrapper), a last apply_patch that failed is recorded failed when Codex ends its session, not interrupted', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const rollout = path.join(repo.home, '.codex', 'sessions', 'rollout-2026-12-01T11-00-00-y.jsonl');
    fs.mkdirSync(path.dirname(rollout), { recursive: true });
    fs.writeFileSync(rollout, `${JSON.stringify({ type: 'session_meta', payload: { cli_version: '0.171.0' } })}\n`);
    const common = { session_id: 'codex-init-1', turn_id: 't', transcript_path: rollout, cwd: repo.dir, model: 'gpt-5' };
    const initHook = (event: string, payload: unknown) => cliProcess(repo, ['hook', 'codex', event], { input: JSON.stringify(payload) });
    const pre = await initHook('PreToolUse', {
      ...common,
      hook_event_name: 'PreToolUse',
      tool_name: 'apply_patch',
      tool_input: { command: 'x' },
      tool_use_id: 'call_9',
    });
    assert.is(pre.code, 0, pre.stderr);
    fs.appendFileSync(
      rollout,
      `${JSON.stringify({ type: 'response_item', payload: { type: 'custom_tool_call_output', call_id: 'call_9', output: 'apply_patch verification failed: no such file' } })}\n`,
    );
    assert.is((await initHook('SessionEnd', { ...common, hook_event_name: 'SessionEnd' })).code, 0);
    const id = repo.git(['for-each-ref', '--format=%(refname)', 'refs/agent/']).split('\n')[0]!.split('/')[2]!;
    const s = loadSession(await openRepo(repo.dir, { env: repo.env }), id);
    assert.ok(s.ended, 'the session ended');
    const calls = s.steps.filter((st) => st.kind === 'call');
    assert.equal(
      calls.map((st) => [st.toolUseId, st.status, st.error]),
      [['call_9', 'failed', 'apply_patch verification failed: no such file']],
    );
  } finally {
    repo.cleanup();
  }
});

test.run();
