// Copilot CLI's adapter without the real binary (test/agents/copilot-e2e.test.ts runs it): its hook payloads as
// 1.0.102 sends them (copied from a real run, paths shortened), which carry no call id, so pre and post are
// paired by tool and input — and a post two open calls could own closes neither; a failing shell call that
// says `resultType: "success"`; init's Claude-format payloads; the transcript's ids; the conversation fork.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import os from 'node:os';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { cli, tempRepo, treeFiles, type TempRepo } from '../support/helpers.js';
import { ADAPTERS, describeCall, findAgent, INIT_AGENTS } from '../../src/agents/registry.js';
import type { AgentAdapter } from '../../src/agents/adapter.js';
import { closeEndedCalls, parseHookCall, runHook } from '../../src/runtime/hook.js';
import { openContext } from '../../src/session/context.js';
import { loadSession } from '../../src/session/session.js';
import { openRepo } from '../../src/git/repo.js';
import { compactCopilotChat, forkCopilotChat } from '../../src/agents/copilot-chat.js';
import { callIdFromInput } from '../../src/agents/copilot.js';

const SID = '2778a8c0-5a43-4b8e-9b0c-0f3c1d2e4a55';

/** A pre payload as Copilot CLI 1.0.102 sends it to a `preToolUse` command hook. */
function pre(cwd: string, toolName: string, toolArgs: unknown): Record<string, unknown> {
  return { sessionId: SID, timestamp: 1796439604683, cwd, toolName, toolArgs };
}

/** Its `postToolUse` payload. */
function post(cwd: string, toolName: string, toolArgs: unknown, textResultForLlm: string, resultType = 'success'): Record<string, unknown> {
  return { ...pre(cwd, toolName, toolArgs), timestamp: 1796439604980, toolResult: { resultType, textResultForLlm } };
}

test('copilot is recognised from its command (bare, a path, through npx) and offered to init', () => {
  assert.equal(findAgent(['copilot', '-p', 'go']), { agent: 'copilot', index: 0 });
  assert.equal(findAgent(['/opt/bin/copilot', '--resume=abc']), { agent: 'copilot', index: 0 });
  assert.equal(findAgent(['npx', '@github/copilot@1.0.102', '-p', 'x']), { agent: 'copilot', index: 1 });
  assert.ok(INIT_AGENTS.includes('copilot'));
});

test('a Copilot payload read: its tool, input, session, transcript (under COPILOT_HOME, else ~/.copilot), version; a made-up call id, the same at pre and post', () => {
  const env = { HOME: '/home/u', COPILOT_CLI_BINARY_VERSION: '1.0.102' };
  const p = parseHookCall('copilot', 'preToolUse', pre('/repo', 'create', { path: '/repo/a.txt', file_text: 'alpha\n' }), env);
  assert.is(p.phase, 'pre');
  assert.is(p.tool, 'create');
  assert.equal(p.input, { path: '/repo/a.txt', file_text: 'alpha\n' });
  assert.is(p.agentSessionId, SID);
  assert.is(p.transcriptPath, `/home/u/.copilot/session-state/${SID}/events.jsonl`);
  assert.is(p.agentVersion, 'copilot-cli 1.0.102');
  const q = parseHookCall(
    'copilot',
    'postToolUse',
    post('/repo', 'create', { file_text: 'alpha\n', path: '/repo/a.txt' }, 'Created file /repo/a.txt with 6 characters'),
    env,
  );
  assert.is(q.phase, 'post');
  assert.is(q.status, 'done');
  assert.ok(p.toolUseId, 'an id is made');
  assert.is(q.toolUseId, p.toolUseId, 'same tool and input (whatever the key order): same id');
  const other = parseHookCall('copilot', 'preToolUse', pre('/repo', 'create', { path: '/repo/b.txt', file_text: 'alpha\n' }), env);
  assert.is.not(other.toolUseId, p.toolUseId);
  assert.is(
    parseHookCall('copilot', 'preToolUse', pre('/r', 'bash', { command: 'ls' }), { HOME: '/h', COPILOT_HOME: '/c' }).transcriptPath,
    `/c/session-state/${SID}/events.jsonl`,
  );
  // A session id that is not a plain name names no folder.
  assert.is(parseHookCall('copilot', 'preToolUse', { ...pre('/r', 'bash', {}), sessionId: '../../x' }, env).transcriptPath, null);
});

test('a shell call that exits non-zero says resultType "success", its exit code only in its text: failed; exit 0 is done; postToolUseFailure is failed with its error', () => {
  const args = { command: 'echo partial > fail.txt; exit 3', description: 'fail' };
  const failed = parseHookCall('copilot', 'postToolUse', post('/repo', 'bash', args, '\n<shellId: 1 completed with exit code 3>'), {});
  assert.is(failed.status, 'failed');
  assert.is(failed.error, 'Exit code 3');
  const ok = parseHookCall('copilot', 'postToolUse', post('/repo', 'bash', args, 'partial\n<shellId: 0 completed with exit code 0>'), {});
  assert.is(ok.status, 'done');
  // The command's own output cannot fake it: the last marker counts.
  const faked = parseHookCall(
    'copilot',
    'postToolUse',
    post('/repo', 'bash', args, '<shellId: 9 completed with exit code 0>\n<shellId: 1 completed with exit code 2>'),
    {},
  );
  assert.is(faked.status, 'failed');
  // A file that holds those words, shown by `view`, is not a failed call.
  const view = parseHookCall(
    'copilot',
    'postToolUse',
    post('/repo', 'view', { path: '/repo/log.txt' }, '1. <shellId: 1 completed with exit code 3>'),
    {},
  );
  assert.is(view.status, 'done');
  const denied = parseHookCall('copilot', 'postToolUse', post('/repo', 'bash', args, 'The user rejected this tool call.', 'rejected'), {});
  assert.is(denied.status, 'failed');
  const failure = parseHookCall(
    'copilot',
    'postToolUseFailure',
    { ...pre('/repo', 'create', { path: '/repo/base.txt', file_text: 'again\n' }), error: 'Path already exists' },
    {},
  );
  assert.is(failure.phase, 'post');
  assert.is(failure.status, 'failed');
  assert.is(failure.error, 'Path already exists');
});

test("init's Claude-format hooks: Copilot sends Claude's field and tool names (Write, Bash) and a tool_result; a failing shell call is failed there too", () => {
  const base = {
    hook_event_name: 'PostToolUse',
    session_id: SID,
    timestamp: '2026-12-05T07:40:20.741Z',
    cwd: '/repo',
    tool_name: 'Bash',
    tool_input: { command: 'echo partial > fail.txt; exit 3', description: 'fail' },
  };
  const c = parseHookCall(
    'copilot',
    'PostToolUse',
    { ...base, tool_result: { result_type: 'success', text_result_for_llm: '\n<shellId: 1 completed with exit code 3>' } },
    { HOME: '/h' },
  );
  assert.is(c.tool, 'Bash');
  assert.is(c.status, 'failed');
  assert.is(c.agentSessionId, SID);
  assert.is(c.transcriptPath, `/h/.copilot/session-state/${SID}/events.jsonl`);
  assert.is(c.toolUseId, callIdFromInput('Bash', base.tool_input));
  assert.equal(describeCall('copilot', null, 'Bash', base.tool_input), { kind: 'shell', command: 'echo partial > fail.txt; exit 3' });
});

test('log reads what a Copilot call was: its command, its file', () => {
  assert.equal(describeCall('copilot', null, 'bash', { command: 'rm a && echo b > c', description: 'x', mode: 'sync' }), {
    kind: 'shell',
    command: 'rm a && echo b > c',
  });
  assert.equal(describeCall('copilot', null, 'create', { path: '/r/a.txt', file_text: 'x' }), { kind: 'paths', paths: ['/r/a.txt'] });
  assert.equal(describeCall('copilot', null, 'edit', { path: '/r/a.txt', old_str: 'a', new_str: 'b' }), {
    kind: 'paths',
    paths: ['/r/a.txt'],
  });
});

/** A session as `wrap` starts it, and the environment its hooks see. */
async function wrappedSession(repo: TempRepo): Promise<Record<string, string>> {
  const res = await cli(repo, ['snap', '--json']);
  assert.is(res.code, 0, res.stderr);
  const id = (JSON.parse(res.stdout) as { session: string }).session;
  return { AGENTSNAP_SESSION: id, AGENTSNAP_WORKTREE: repo.dir };
}

async function hook(repo: TempRepo, env: Record<string, string>, event: string, payload: Record<string, unknown>) {
  return runHook({ agent: 'copilot', event, input: JSON.stringify(payload), env: { ...repo.env, ...env }, cwd: repo.dir, wrapped: true });
}

async function steps(repo: TempRepo, env: Record<string, string>) {
  return loadSession(await openRepo(repo.dir, { env: repo.env }), env.AGENTSNAP_SESSION as string).steps.filter((s) => s.kind === 'call');
}

function fileAt(repo: TempRepo, commit: string | null | undefined, name: string): string | null {
  return commit ? (treeFiles(repo, commit).get(name)?.content.toString() ?? null) : null;
}

test('concurrent calls of different inputs: each post closes its own call, in whatever order the posts come', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const env = await wrappedSession(repo);
    const one = { command: 'sleep 1; echo one > one.txt', description: 'one' };
    const two = { command: 'echo two > two.txt', description: 'two' };
    // As Copilot ran a message with two bash calls: both pres, then the posts in the order the calls ended.
    const first = (await hook(repo, env, 'preToolUse', pre(repo.dir, 'bash', one))).step;
    const second = (await hook(repo, env, 'preToolUse', pre(repo.dir, 'bash', two))).step;
    fs.writeFileSync(path.join(repo.dir, 'two.txt'), 'two\n');
    assert.is(
      (await hook(repo, env, 'postToolUse', post(repo.dir, 'bash', two, '\n<shellId: 1 completed with exit code 0>'))).step,
      second,
    );
    fs.writeFileSync(path.join(repo.dir, 'one.txt'), 'one\n');
    assert.is((await hook(repo, env, 'postToolUse', post(repo.dir, 'bash', one, '\n<shellId: 0 completed with exit code 0>'))).step, first);
    const [s1, s2] = await steps(repo, env);
    assert.is(s1?.status, 'done');
    assert.is(s2?.status, 'done');
    assert.is(fileAt(repo, s2?.post, 'one.txt'), null, 'step 2 ended before one.txt was written');
    assert.is(fileAt(repo, s2?.post, 'two.txt'), 'two\n');
    assert.is(fileAt(repo, s1?.post, 'one.txt'), 'one\n');
  } finally {
    repo.cleanup();
  }
});

test('two open calls of the same tool and input: their posts close neither (nothing tells whose end each is); the session end closes both by the transcript', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const env = await wrappedSession(repo);
    const same = { command: 'echo x >> same.txt', description: 'same' };
    await hook(repo, env, 'preToolUse', pre(repo.dir, 'bash', same));
    await hook(repo, env, 'preToolUse', pre(repo.dir, 'bash', same));
    fs.appendFileSync(path.join(repo.dir, 'same.txt'), 'x\n');
    const first = await hook(repo, env, 'postToolUse', post(repo.dir, 'bash', same, '\n<shellId: 1 completed with exit code 0>'));
    assert.is(first.action, 'ignored');
    assert.is(first.warning, null);
    fs.appendFileSync(path.join(repo.dir, 'same.txt'), 'x\n');
    assert.is(
      (await hook(repo, env, 'postToolUse', post(repo.dir, 'bash', same, '\n<shellId: 0 completed with exit code 0>'))).action,
      'ignored',
    );
    assert.equal(
      (await steps(repo, env)).map((s) => s.status),
      ['open', 'open'],
    );
    // The transcript (written behind the hooks) holds both executions, ended: the session's end closes both, done.
    const transcript = path.join(repo.home, '.copilot', 'session-state', SID, 'events.jsonl');
    fs.mkdirSync(path.dirname(transcript), { recursive: true });
    const ev = (type: string, data: unknown) =>
      JSON.stringify({ type, data, id: `${type}-${Math.random()}`, timestamp: '2026-12-05T07:43:44.000Z', parentId: null });
    fs.writeFileSync(
      transcript,
      [
        ev('tool.execution_start', { toolCallId: 'call_4_0', toolName: 'bash', arguments: same }),
        ev('tool.execution_start', { toolCallId: 'call_4_1', toolName: 'bash', arguments: same }),
        ev('tool.execution_complete', { toolCallId: 'call_4_1', success: true, shellExecution: { exitCode: 0 } }),
        ev('tool.execution_complete', { toolCallId: 'call_4_0', success: true, shellExecution: { exitCode: 0 } }),
      ].join('\n') + '\n',
    );
    // As wrap's end does, before it ends the session.
    const r = await openRepo(repo.dir, { env: repo.env });
    await closeEndedCalls(await openContext(r), env.AGENTSNAP_SESSION as string, ADAPTERS.copilot as AgentAdapter);
    const closed = await steps(repo, env);
    assert.equal(
      closed.map((s) => s.status),
      ['done', 'done'],
    );
    assert.is(fileAt(repo, closed[0]?.post, 'same.txt'), 'x\nx\n');
  } finally {
    repo.cleanup();
  }
});

test('a call whose post never came, then the same call again: the later post closes neither, never the old step; one of them failing makes both failed', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const env = await wrappedSession(repo);
    const rm = { command: 'rm -f a.txt', description: 'remove' };
    await hook(repo, env, 'preToolUse', pre(repo.dir, 'bash', rm)); // step 1: no post ever (a denied call)
    fs.writeFileSync(path.join(repo.dir, 'b.txt'), 'between\n');
    await hook(repo, env, 'preToolUse', pre(repo.dir, 'create', { path: path.join(repo.dir, 'c.txt'), file_text: 'c\n' })); // step 2
    fs.writeFileSync(path.join(repo.dir, 'c.txt'), 'c\n');
    await hook(
      repo,
      env,
      'postToolUse',
      post(repo.dir, 'create', { path: path.join(repo.dir, 'c.txt'), file_text: 'c\n' }, 'Created file'),
    );
    await hook(repo, env, 'preToolUse', pre(repo.dir, 'bash', rm)); // step 3: the same call again
    fs.rmSync(path.join(repo.dir, 'a.txt'));
    const late = await hook(repo, env, 'postToolUse', post(repo.dir, 'bash', rm, '\n<shellId: 1 completed with exit code 0>'));
    assert.is(late.action, 'ignored');
    const now = await steps(repo, env);
    assert.equal(
      now.map((s) => s.status),
      ['open', 'done', 'open'],
      "step 1 is not closed with step 3's end",
    );
    // The transcript says the first was denied (failed), the second ended well: which post was whose is unknown, so both failed.
    const transcript = path.join(repo.home, '.copilot', 'session-state', SID, 'events.jsonl');
    fs.mkdirSync(path.dirname(transcript), { recursive: true });
    const ev = (type: string, data: unknown) => JSON.stringify({ type, data });
    fs.writeFileSync(
      transcript,
      [
        ev('tool.execution_start', { toolCallId: 'call_1_0', toolName: 'bash', arguments: rm }),
        ev('tool.execution_complete', { toolCallId: 'call_1_0', success: false, error: { message: 'The user rejected this tool call.' } }),
        ev('tool.execution_start', { toolCallId: 'call_3_0', toolName: 'bash', arguments: rm }),
        ev('tool.execution_complete', { toolCallId: 'call_3_0', success: true, shellExecution: { exitCode: 0 } }),
      ].join('\n') + '\n',
    );
    // The next pre closes open calls the transcript shows failed ("closed at the next pre").
    await hook(repo, env, 'preToolUse', pre(repo.dir, 'view', { path: path.join(repo.dir, 'b.txt') }));
    const after = await steps(repo, env);
    assert.equal(
      after.map((s) => s.status),
      ['failed', 'done', 'failed', 'open'],
    );
    assert.is(after[0]?.error, 'The user rejected this tool call.');
  } finally {
    repo.cleanup();
  }
});

test('init copilot writes .github/hooks/agentsnap.json (Claude format), says what to trust; --remove leaves the project byte for byte', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n', '.github/hooks/theirs.json': '{"version":1,"hooks":{}}\n' } });
  try {
    const exclude = path.join(repo.dir, '.git', 'info', 'exclude');
    const excludeBefore = fs.existsSync(exclude) ? fs.readFileSync(exclude, 'utf8') : null;
    const res = await cli(repo, ['init', 'copilot']);
    assert.is(res.code, 0, res.stderr);
    assert.match(res.stdout + res.stderr, /trust/);
    const file = path.join(repo.dir, '.github', 'hooks', 'agentsnap.json');
    const hooks = JSON.parse(fs.readFileSync(file, 'utf8')) as {
      hooks: Record<string, { matcher?: string; hooks: { command: string }[] }[]>;
    };
    assert.equal(Object.keys(hooks.hooks).sort(), ['PostToolUse', 'PostToolUseFailure', 'PreToolUse', 'SessionEnd']);
    assert.match(hooks.hooks.PreToolUse?.[0]?.hooks[0]?.command ?? '', /copilot PreToolUse/);
    const mcp = await cli(repo, ['init', 'copilot', '--mcp']);
    assert.is(mcp.code, 0, mcp.stderr);
    const servers = JSON.parse(fs.readFileSync(path.join(repo.dir, '.github', 'mcp.json'), 'utf8')) as {
      mcpServers: Record<string, { type: string; args: string[] }>;
    };
    assert.is(servers.mcpServers.agentsnap?.type, 'local');
    assert.ok(servers.mcpServers.agentsnap?.args.includes('mcp'));
    assert.is((await cli(repo, ['init', 'copilot', '--remove'])).code, 0);
    assert.not.ok(fs.existsSync(file));
    assert.not.ok(fs.existsSync(path.join(repo.dir, '.github', 'mcp.json')));
    assert.is(fs.readFileSync(path.join(repo.dir, '.github', 'hooks', 'theirs.json'), 'utf8'), '{"version":1,"hooks":{}}\n');
    assert.is(fs.existsSync(exclude) ? fs.readFileSync(exclude, 'utf8') : null, excludeBefore);
  } finally {
    repo.cleanup();
  }
});

test('a Copilot session forked before a call keeps the events before its turn, in a new session folder; the original is untouched', () => {
  const repo = tempRepo({ noInit: true });
  try {
    const dir = path.join(repo.home, '.copilot', 'session-state', 'old-id');
    fs.mkdirSync(dir, { recursive: true });
    const ev = (type: string, data: unknown) => JSON.stringify({ type, data, id: type, timestamp: 't', parentId: null });
    const same = { command: 'echo x >> same.txt', description: 'same' };
    const lines = [
      ev('session.start', {
        sessionId: 'old-id',
        version: 1,
        producer: 'copilot-agent',
        copilotVersion: '1.0.102',
        context: { cwd: '/r' },
      }),
      ev('user.message', { content: 'go' }),
      ev('assistant.turn_start', { turnId: '0' }),
      ev('assistant.message', { content: '', toolRequests: [{ toolCallId: 'call_1_0', name: 'bash', arguments: same }] }),
      ev('tool.execution_start', { toolCallId: 'call_1_0', toolName: 'bash', arguments: same }),
      ev('tool.execution_complete', { toolCallId: 'call_1_0', success: true }),
      ev('assistant.turn_end', { turnId: '0' }),
      ev('assistant.turn_start', { turnId: '1' }),
      ev('session.usage_record', {}),
      ev('assistant.message', { content: '', toolRequests: [{ toolCallId: 'call_2_0', name: 'bash', arguments: same }] }),
      ev('tool.execution_start', { toolCallId: 'call_2_0', toolName: 'bash', arguments: same }),
    ];
    const original = path.join(dir, 'events.jsonl');
    fs.writeFileSync(original, lines.join('\n') + '\n');
    fs.writeFileSync(path.join(dir, 'workspace.yaml'), 'id: old-id\ncwd: /r\nname: go\n');
    // The second call of the same input (step 2, occurrence 1): cut before turn 1.
    const fork = forkCopilotChat(
      { step: 2, transcript: { path: original }, toolUseId: callIdFromInput('bash', same), occurrence: 1 },
      { cwd: '/elsewhere', newId: 'new-id' },
    );
    assert.is(fork.file, path.join(repo.home, '.copilot', 'session-state', 'new-id', 'events.jsonl'));
    assert.is(fork.resumeCommand, 'copilot --resume=new-id');
    assert.is(fork.cwd, '/r');
    assert.is(fork.lines, 7);
    const kept = fs
      .readFileSync(fork.file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; data: { sessionId?: string } });
    assert.is(kept[kept.length - 1]?.type, 'assistant.turn_end');
    assert.is(kept[0]?.data.sessionId, 'new-id');
    assert.is(fs.readFileSync(path.join(path.dirname(fork.file), 'workspace.yaml'), 'utf8'), 'id: new-id\ncwd: /r\nname: go\n');
    assert.is(fs.readFileSync(original, 'utf8'), lines.join('\n') + '\n');
    // The first occurrence: cut before turn 0.
    const first = forkCopilotChat(
      { step: 1, transcript: { path: original }, toolUseId: callIdFromInput('bash', same), occurrence: 0 },
      { cwd: '/r', newId: 'first' },
    );
    assert.is(first.lines, 2);
    // --compact: the start, one user message (the digest of what came before), then turn 1 on, chained to it.
    const compact = compactCopilotChat(
      { step: 2, transcript: { path: original }, toolUseId: callIdFromInput('bash', same), occurrence: 1 },
      (prior, rest) => `digest of ${prior.length} before, ${rest.length} kept`,
      { cwd: '/r', newId: 'compact' },
    );
    assert.is(compact.digest, 'digest of 2 before, 1 kept');
    const events = fs
      .readFileSync(compact.file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; id: string; parentId: string | null; data: { content?: string; sessionId?: string } });
    assert.equal(
      events.map((e) => e.type),
      ['session.start', 'user.message', 'assistant.turn_start', 'session.usage_record', 'assistant.message', 'tool.execution_start'],
    );
    assert.is(events[0]?.data.sessionId, 'compact');
    assert.is(events[1]?.data.content, 'digest of 2 before, 1 kept');
    assert.is(events[2]?.parentId, events[1]?.id);
    assert.equal(compact.before.messages, 3);
    assert.equal(compact.after.messages, 2);
  } finally {
    repo.cleanup();
  }
});

test("two open calls of the same input whose posts were refused are closed at the next pre once the transcript shows both ended (Copilot writes a call's end after its post hook ran)", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const env = await wrappedSession(repo);
    const same = { path: path.join(repo.dir, 'a.txt') };
    await hook(repo, env, 'preToolUse', pre(repo.dir, 'view', same));
    await hook(repo, env, 'preToolUse', pre(repo.dir, 'view', same));
    await hook(repo, env, 'postToolUse', post(repo.dir, 'view', same, '1. one'));
    await hook(repo, env, 'postToolUse', post(repo.dir, 'view', same, '1. one'));
    const transcript = path.join(repo.home, '.copilot', 'session-state', SID, 'events.jsonl');
    fs.mkdirSync(path.dirname(transcript), { recursive: true });
    const ev = (type: string, data: unknown) => JSON.stringify({ type, data });
    fs.writeFileSync(
      transcript,
      [
        ev('tool.execution_start', { toolCallId: 'call_1_0', toolName: 'view', arguments: same }),
        ev('tool.execution_start', { toolCallId: 'call_1_1', toolName: 'view', arguments: same }),
        ev('tool.execution_complete', { toolCallId: 'call_1_0', success: true }),
        ev('tool.execution_complete', { toolCallId: 'call_1_1', success: true }),
      ].join('\n') + '\n',
    );
    await hook(repo, env, 'preToolUse', pre(repo.dir, 'bash', { command: 'ls' }));
    assert.equal(
      (await steps(repo, env)).map((s) => s.status),
      ['done', 'done', 'open'],
    );
  } finally {
    repo.cleanup();
  }
});

test("a killed wrapper's Copilot run is finished by the next wrapper: its plugin folder goes, and the empty plugin-data folders Copilot made for it; a live wrapper's run is left alone", () => {
  const repo = tempRepo({ noInit: true });
  try {
    const sessions = path.join(repo.base, 'sessions');
    const dir = path.join(sessions, 'killed-run');
    const plugin = path.join(dir, 'copilot-plugin-1');
    fs.mkdirSync(path.join(plugin, 'hooks'), { recursive: true });
    fs.writeFileSync(path.join(plugin, 'hooks', 'hooks.json'), '{}\n');
    const data = path.join(repo.home, '.copilot', 'plugin-data', '_direct', 'abc');
    fs.mkdirSync(data, { recursive: true });
    fs.writeFileSync(path.join(repo.home, '.copilot', 'config.json'), '{}\n');
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    const owner = { pid: dead, start: null, host: os.hostname(), since: new Date().toISOString(), purpose: 'copilot run' };
    const dataDirs = [data, path.dirname(data), path.dirname(path.dirname(data))];
    fs.writeFileSync(path.join(dir, 'copilot-run-1.json'), JSON.stringify({ owner, pluginDir: plugin, dataDirs }));
    const live = path.join(sessions, 'live-run');
    fs.mkdirSync(path.join(live, 'copilot-plugin-2'), { recursive: true });
    fs.writeFileSync(
      path.join(live, 'copilot-run-2.json'),
      JSON.stringify({ owner: { ...owner, pid: process.pid, start: null }, pluginDir: path.join(live, 'copilot-plugin-2'), dataDirs: [] }),
    );
    const lines = ADAPTERS.copilot?.recover?.(sessions) ?? [];
    assert.equal(lines, ['agentsnap: finished the Copilot CLI run of session killed-run (its wrapper had been killed)']);
    assert.equal(fs.readdirSync(dir), []);
    assert.equal(fs.readdirSync(path.join(repo.home, '.copilot')), ['config.json'], "only the user's own files are left");
    assert.equal(fs.readdirSync(live).sort(), ['copilot-plugin-2', 'copilot-run-2.json']);
  } finally {
    repo.cleanup();
  }
});

test("wrap adds the plugin (and with --mcp the MCP server) right after the program word, before the user's own arguments", () => {
  const argv = ADAPTERS.copilot?.wrapArgv?.({
    command: ['npx', '@github/copilot@1.0.102', '--resume=abc', '-p', 'go'],
    at: 1,
    cwd: '/r',
    env: {},
    hookCommand: (ev) => `hook ${ev}`,
    session: 's',
    worktree: '/r',
    sessionDir: '/state/sessions/s',
    mcp: { command: '/node', args: ['/agentsnap.js', 'mcp'] },
  });
  assert.equal(argv?.slice(0, 4), ['npx', '@github/copilot@1.0.102', '--plugin-dir', `/state/sessions/s/copilot-plugin-${process.pid}`]);
  assert.is(argv?.[4], '--additional-mcp-config');
  assert.equal(JSON.parse(argv?.[5] ?? '{}'), {
    mcpServers: { agentsnap: { type: 'local', command: '/node', args: ['/agentsnap.js', 'mcp'], tools: ['*'] } },
  });
  assert.equal(argv?.slice(6), ['--resume=abc', '-p', 'go']);
});

test.run();
