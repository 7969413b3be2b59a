// agentsnapHooks(), the Claude Agent SDK's `options.hooks`, without the SDK (test/agents/agent-sdk-e2e.test.ts runs it): its
// callbacks called in this process with the inputs the SDK hands them (recorded from @anthropic-ai/claude-agent-sdk
// 0.3.336 running its bundled Claude Code), recording through runHook as `agentsnap hook claude …` does.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { cli, tempRepo, treeFiles, type TempRepo } from '../support/helpers.js';
import { agentsnapHooks, AGENT_SDK_HOOK_EVENTS, isAgentsnapError, type AgentSdkHooks } from '../../src/index.js';
import { CLAUDE_TOOL_MATCHER } from '../../src/agents/claude.js';
import { loadSession } from '../../src/session/session.js';
import { openRepo } from '../../src/git/repo.js';

const SIGNAL = { signal: new AbortController().signal };

/** The SDK's hook inputs, as 0.3.336 sends them (BaseHookInput fields, then the event's). */
function input(repo: TempRepo, event: string, sessionId: string, call: Record<string, unknown>): Record<string, unknown> {
  return {
    session_id: sessionId,
    transcript_path: path.join(repo.home, '.claude', 'projects', '-repo', `${sessionId}.jsonl`),
    cwd: repo.dir,
    prompt_id: '1bfd828f-f6ee-46c1-9017-2fd3c56ae17b',
    permission_mode: 'bypassPermissions',
    effort: { level: 'medium' },
    hook_event_name: event,
    ...call,
  };
}

const WRITE = (repo: TempRepo) => ({
  tool_name: 'Write',
  tool_input: { file_path: path.join(repo.dir, 'hello.txt'), content: 'hello\n' },
  tool_use_id: 'toolu_9167d08ea81650ff127358b3',
});
const WRITE_RESPONSE = (repo: TempRepo) => ({
  type: 'create',
  filePath: path.join(repo.dir, 'hello.txt'),
  content: 'hello\n',
  structuredPatch: [],
  originalFile: null,
  userModified: false,
});
const FAILING = {
  tool_name: 'Bash',
  tool_input: { command: 'echo partial > fail.txt; exit 3', description: 'fail' },
  tool_use_id: 'toolu_ae4480263fedf97b7bc2fc67',
};

async function call(hooks: AgentSdkHooks, event: keyof AgentSdkHooks, payload: Record<string, unknown>): Promise<unknown> {
  const cb = hooks[event][0]?.hooks[0];
  assert.ok(cb, `a callback for ${event}`);
  return cb(payload, typeof payload.tool_use_id === 'string' ? payload.tool_use_id : undefined, SIGNAL);
}

function files(repo: TempRepo, commit: string): Record<string, string> {
  return Object.fromEntries([...treeFiles(repo, commit)].map(([p, v]) => [p, v.content.toString()]));
}

test('the hooks object: the events init claude writes, the tool events matched as Claude Code matches them (read-only tools left to the transcript)', () => {
  const hooks = agentsnapHooks();
  assert.equal(Object.keys(hooks).sort(), [...AGENT_SDK_HOOK_EVENTS].sort());
  for (const ev of ['PreToolUse', 'PostToolUse', 'PostToolUseFailure'] as const) {
    assert.is(hooks[ev].length, 1);
    assert.is(hooks[ev][0]?.matcher, CLAUDE_TOOL_MATCHER);
    assert.is(hooks[ev][0]?.hooks.length, 1);
  }
  assert.is(hooks.SessionEnd[0]?.matcher, undefined, 'every session end');
  // Claude Code tests a matcher that is not a plain name list as an unanchored JS regex.
  const m = new RegExp(CLAUDE_TOOL_MATCHER);
  assert.equal(
    ['Write', 'Edit', 'Bash', 'mcp__x__y', 'Read', 'Grep', 'Glob'].map((t) => m.test(t)),
    [true, true, true, true, false, false, false],
  );
});

test('in process: a write and a failing shell call become steps of one claude session, the failure closed as failed; the same SDK session keeps its session, SessionEnd ends it', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const hooks = agentsnapHooks({ env: repo.env });
    const sdkSession = 'ace710ff-2186-4aac-a91a-b35da3f8b3ca';
    assert.equal(await call(hooks, 'PreToolUse', input(repo, 'PreToolUse', sdkSession, WRITE(repo))), {});
    repo.write('hello.txt', 'hello\n');
    assert.equal(
      await call(
        hooks,
        'PostToolUse',
        input(repo, 'PostToolUse', sdkSession, { ...WRITE(repo), tool_response: WRITE_RESPONSE(repo), duration_ms: 20 }),
      ),
      {},
    );
    assert.equal(await call(hooks, 'PreToolUse', input(repo, 'PreToolUse', sdkSession, FAILING)), {});
    repo.write('fail.txt', 'partial\n');
    assert.equal(
      await call(
        hooks,
        'PostToolUseFailure',
        input(repo, 'PostToolUseFailure', sdkSession, { ...FAILING, error: 'Exit code 3', is_interrupt: false, duration_ms: 137 }),
      ),
      {},
    );
    const log = JSON.parse((await cli(repo, ['log', '--json'])).stdout) as {
      step: number;
      tool: string;
      status: string;
      error: string | null;
      toolUseId: string;
    }[];
    assert.equal(
      log.map((s) => [s.tool, s.status, s.error, s.toolUseId]),
      [
        ['Write', 'done', null, WRITE(repo).tool_use_id],
        ['Bash', 'failed', 'Exit code 3', FAILING.tool_use_id],
      ],
    );
    const text = (await cli(repo, ['log'])).stdout;
    assert.match(text, 'hello.txt');
    assert.match(text, 'echo partial > fail.txt; exit 3');
    const r = await openRepo(repo.dir, { env: repo.env });
    const [summary] = JSON.parse((await cli(repo, ['sessions', '--json'])).stdout) as { id: string }[];
    const s = loadSession(r, summary?.id as string);
    assert.is(s.agent, 'claude');
    assert.equal(files(repo, s.steps[0]?.pre as string), { 'a.txt': 'one\n' });
    assert.equal(files(repo, s.steps[0]?.post as string), { 'a.txt': 'one\n', 'hello.txt': 'hello\n' });
    assert.equal(files(repo, s.steps[1]?.post as string), { 'a.txt': 'one\n', 'hello.txt': 'hello\n', 'fail.txt': 'partial\n' });
    // Another SDK session (another query()) is another agentsnap session.
    const other = { ...FAILING, tool_use_id: 'toolu_other' };
    await call(hooks, 'PreToolUse', input(repo, 'PreToolUse', 'be9b22b0-4446-42cf-91d5-90c4a8939df4', other));
    await call(
      hooks,
      'PostToolUseFailure',
      input(repo, 'PostToolUseFailure', 'be9b22b0-4446-42cf-91d5-90c4a8939df4', { ...other, error: 'Exit code 3' }),
    );
    const sessions = JSON.parse((await cli(repo, ['sessions', '--json'])).stdout) as { id: string }[];
    assert.is(sessions.length, 2);
    assert.is(loadSession(r, s.id).steps.length, 2);
    // SessionEnd (when the SDK sends one) ends the SDK session's agentsnap session.
    assert.equal(await call(hooks, 'SessionEnd', input(repo, 'SessionEnd', sdkSession, { reason: 'other' })), {});
    assert.ok(loadSession(r, s.id).ended);
    // Undo of the write: the files as before it (the failing call's file went with it: it came later).
    const u = await cli(repo, ['undo', '1', '--session', s.id]);
    assert.is(u.code, 0, u.stderr);
    assert.not.ok(repo.exists('hello.txt'));
    assert.not.ok(repo.exists('fail.txt'));
    assert.is(repo.read('a.txt').toString(), 'one\n');
  } finally {
    repo.cleanup();
  }
});

test('calls made at once are recorded one at a time, each post closing its own pre', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const hooks = agentsnapHooks({ env: repo.env });
    const calls = ['toolu_1', 'toolu_2', 'toolu_3'].map((id, i) => ({
      tool_name: 'Write',
      tool_input: { file_path: path.join(repo.dir, `f${i}.txt`), content: `${i}\n` },
      tool_use_id: id,
    }));
    await Promise.all(calls.map((c) => call(hooks, 'PreToolUse', input(repo, 'PreToolUse', 'sdk-1', c))));
    calls.forEach((_, i) => repo.write(`f${i}.txt`, `${i}\n`));
    await Promise.all(
      calls.reverse().map((c) => call(hooks, 'PostToolUse', input(repo, 'PostToolUse', 'sdk-1', { ...c, tool_response: {} }))),
    );
    const log = JSON.parse((await cli(repo, ['log', '--json'])).stdout) as { tool: string; status: string; toolUseId: string }[];
    assert.equal(
      log.map((s) => s.status),
      ['done', 'done', 'done'],
    );
    assert.equal(log.map((s) => s.toolUseId).sort(), ['toolu_1', 'toolu_2', 'toolu_3']);
  } finally {
    repo.cleanup();
  }
});

test("the session option, or a wrapper's session in the environment, records into that running agentsnap session; cwd names the worktree whatever the query ran in", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const started = await cli(repo, ['snap', '-m', 'before the agent', '--json']);
    assert.is(started.code, 0, started.stderr);
    const id = (JSON.parse(started.stdout) as { session: string }).session;
    const elsewhere = path.join(repo.base, 'elsewhere');
    fs.mkdirSync(elsewhere);
    const hooks = agentsnapHooks({ env: repo.env, session: id, cwd: repo.dir });
    await call(hooks, 'PreToolUse', { ...input(repo, 'PreToolUse', 'sdk-2', WRITE(repo)), cwd: elsewhere });
    repo.write('hello.txt', 'hello\n');
    await call(hooks, 'PostToolUse', {
      ...input(repo, 'PostToolUse', 'sdk-2', { ...WRITE(repo), tool_response: WRITE_RESPONSE(repo) }),
      cwd: elsewhere,
    });
    const s = loadSession(await openRepo(repo.dir, { env: repo.env }), id);
    assert.equal(
      s.steps.map((st) => [st.tool, st.status]),
      [
        [null, 'done'],
        ['Write', 'done'],
      ],
    );
    assert.equal(JSON.parse((await cli(repo, ['sessions', '--json'])).stdout).length, 1, 'no session of its own');
    // A program run by `agentsnap wrap` (its environment names the wrapper's session) records into that session too.
    const wrapped = agentsnapHooks({ env: { ...repo.env, AGENTSNAP_SESSION: id, AGENTSNAP_WORKTREE: repo.dir } });
    const second = { ...WRITE(repo), tool_use_id: 'toolu_wrapped' };
    await call(wrapped, 'PreToolUse', input(repo, 'PreToolUse', 'sdk-4', second));
    await call(wrapped, 'PostToolUse', input(repo, 'PostToolUse', 'sdk-4', { ...second, tool_response: {} }));
    assert.equal(
      loadSession(await openRepo(repo.dir, { env: repo.env }), id).steps.map((st) => st.toolUseId),
      [null, WRITE(repo).tool_use_id, 'toolu_wrapped'],
    );
    assert.equal(JSON.parse((await cli(repo, ['sessions', '--json'])).stdout).length, 1, 'still no session of its own');
  } finally {
    repo.cleanup();
  }
});

test("a call that cannot be recorded: one warning line as the hook's systemMessage (or to onWarning), never a throw, the call goes on", async () => {
  const repo = tempRepo({ noInit: true });
  try {
    const payload = input(repo, 'PreToolUse', 'sdk-3', WRITE(repo));
    // In no repository, with shadow repositories off (else the call is recorded in one: test/git/shadow.test.ts).
    const env = { ...repo.env, AGENTSNAP_SHADOWS: 'off' };
    const out = (await call(agentsnapHooks({ env }), 'PreToolUse', payload)) as { systemMessage?: string };
    assert.match(String(out.systemMessage), /^agentsnap: warning: no snapshot for this Write call: .*not a git repository/);
    assert.not.match(String(out.systemMessage), '\n');
    const lines: string[] = [];
    assert.equal(await call(agentsnapHooks({ env, onWarning: (l) => lines.push(l) }), 'PreToolUse', payload), {});
    assert.equal(lines, [out.systemMessage]);
    const throwing = agentsnapHooks({
      env,
      onWarning: () => {
        throw new Error('boom');
      },
    });
    assert.equal(await call(throwing, 'PreToolUse', payload), {});
  } finally {
    repo.cleanup();
  }
});

test('bad options are refused when the hooks are made, with the reason', () => {
  for (const [opts, code] of [
    [{ session: '../x' }, 'InvalidSessionId'],
    [{ cwd: '' }, 'InvalidArgument'],
  ] as const) {
    try {
      agentsnapHooks(opts);
      assert.unreachable(`${JSON.stringify(opts)} accepted`);
    } catch (e) {
      assert.ok(isAgentsnapError(e), String(e));
      assert.is(e.code, code);
    }
  }
});

test.run();
