// Issue 31: the conversation and environment of Copilot CLI and Cline as `replay` and `show N` show them, read
// from their own session files. The fixtures are real ones (test/fixtures/: Copilot CLI 1.0.102's events.jsonl,
// Cline 3.0.65's <id>.messages.json and <id>.json), captured offline against the Chat Completions stub with
// one file-writing call and one shell call; only the system prompt is trimmed and the paths made placeholders.
// The hooks get the payloads those versions send (test/agents/copilot.test.ts, test/agents/cline.test.ts), and each
// transcript holds, at each hook, what the agent had written by then.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, cli, tempRepo, type TempRepo } from '../support/helpers.js';
import { parseHookCall, runHook } from '../../src/runtime/hook.js';
import { loadSession } from '../../src/session/session.js';
import { openRepo } from '../../src/git/repo.js';
import { callIdFromInput, locateCopilotCall } from '../../src/agents/copilot-chat.js';

const FIXTURES = path.join(ROOT, 'test', 'fixtures');

function fixture(name: string, repo: TempRepo): string {
  return fs.readFileSync(path.join(FIXTURES, name), 'utf8').replaceAll('@REPO@', repo.dir).replaceAll('@HOME@', repo.home);
}

/** Each piece in `text`, in this order. */
function inOrder(text: string, pieces: string[]): void {
  let at = -1;
  for (const piece of pieces) {
    const i = text.indexOf(piece, at + 1);
    assert.ok(i > at, `"${piece}" missing or out of order in:\n${text}`);
    at = i;
  }
}

async function callSteps(repo: TempRepo, id: string) {
  return loadSession(await openRepo(repo.dir, { env: repo.env }), id).steps;
}

const COPILOT_SID = '03b523aa-4766-4679-9f3f-8e3824deb6b1';

/**
 * A Copilot call's hook payloads: its own format (`wrap`'s plugin hooks: toolName, toolArgs, toolResult), or
 * Claude Code's, which init's .github/hooks/agentsnap.json gets (its tools under Claude's names, Write for
 * create, Bash for bash; the same input: captured from 1.0.102).
 */
function copilotPayloads(claudeFormat: boolean, repo: TempRepo, tool: string, input: unknown, result: string) {
  const claudeNames: Record<string, string> = { create: 'Write', bash: 'Bash' };
  if (!claudeFormat) {
    const common = { sessionId: COPILOT_SID, timestamp: 1796461573490, cwd: repo.dir, toolName: tool, toolArgs: input };
    return [
      ['preToolUse', common],
      ['postToolUse', { ...common, toolResult: { resultType: 'success', textResultForLlm: result } }],
    ] as const;
  }
  const common = {
    session_id: COPILOT_SID,
    timestamp: '2026-12-05T09:06:13.490Z',
    cwd: repo.dir,
    tool_name: claudeNames[tool],
    tool_input: input,
  };
  return [
    ['PreToolUse', { hook_event_name: 'PreToolUse', ...common }],
    ['PostToolUse', { hook_event_name: 'PostToolUse', ...common, tool_result: { result_type: 'success', text_result_for_llm: result } }],
  ] as const;
}

for (const claudeFormat of [false, true]) {
  const hooks = claudeFormat ? "init's Claude-format hooks (Write, Bash)" : "wrap's hooks";
  test(`copilot (${hooks}): replay shows the user's prompt and the assistant's messages of events.jsonl around the steps, each call once; show N names the model and version it records`, async () => {
    const repo = tempRepo({ files: { 'base.txt': 'base\n' } });
    try {
      const events = fixture('copilot-1.0.102-events.jsonl', repo).split('\n').filter(Boolean);
      const transcript = path.join(repo.home, '.copilot', 'session-state', COPILOT_SID, 'events.jsonl');
      fs.mkdirSync(path.dirname(transcript), { recursive: true });
      // What Copilot had written when a call's hooks ran: everything up to its tool.execution_start.
      const upToStart = (n: number) => {
        const starts = events.flatMap((l, i) => (l.startsWith('{"type":"tool.execution_start"') ? [i] : []));
        fs.writeFileSync(transcript, `${events.slice(0, (starts[n] as number) + 1).join('\n')}\n`);
      };
      // No COPILOT_CLI_BINARY_VERSION: the version comes from the transcript. No wrapper: the session is the
      // agent's, started by its first hooked call.
      const hook = (event: string, payload: Record<string, unknown>) =>
        runHook({ agent: 'copilot', event, input: JSON.stringify(payload), env: repo.env, cwd: repo.dir });
      const create = { path: path.join(repo.dir, 'a.txt'), file_text: 'alpha\n' };
      const [pre1, post1] = copilotPayloads(claudeFormat, repo, 'create', create, `Created file ${create.path} with 6 characters`);
      upToStart(0);
      const id = (await hook(...pre1)).session as string;
      fs.writeFileSync(path.join(repo.dir, 'a.txt'), 'alpha\n');
      await hook(...post1);
      const bash = { command: "mkdir -p d && printf 'beta\\n' > d/b.txt && rm base.txt", description: 'change files' };
      const [pre2, post2] = copilotPayloads(claudeFormat, repo, 'bash', bash, '\n<shellId: 0 completed with exit code 0>');
      upToStart(1);
      await hook(...pre2);
      fs.mkdirSync(path.join(repo.dir, 'd'));
      fs.writeFileSync(path.join(repo.dir, 'd', 'b.txt'), 'beta\n');
      fs.rmSync(path.join(repo.dir, 'base.txt'));
      await hook(...post2);
      fs.writeFileSync(transcript, `${events.join('\n')}\n`);
      const steps = await callSteps(repo, id);
      const [tool1, tool2] = claudeFormat ? ['Write', 'Bash'] : ['create', 'bash'];
      assert.equal(
        steps.map((s) => [s.tool, s.status, s.model, s.agentVersion]),
        [
          [tool1, 'done', 'gpt-4.1', 'copilot-cli 1.0.102'],
          [tool2, 'done', 'gpt-4.1', 'copilot-cli 1.0.102'],
        ],
      );
      const [first, second] = steps.map((s) => s.step);
      const md = await cli(repo, ['replay', '--session', id]);
      assert.is(md.code, 0, md.stderr);
      inOrder(md.stdout, [
        'Do the scripted task.',
        'Creating a.txt first.',
        `Step ${first}: ${tool1} (done`,
        'A `a.txt`',
        `Step ${second}: ${tool2} (done`,
        'D `base.txt`',
        'All done.',
      ]);
      assert.not.match(md.stdout, 'You are the GitHub Copilot CLI', 'the system prompt is not a user message');
      // The transcript's calls are the steps (same ids), not listed again as calls no step recorded.
      assert.is(md.stdout.split('"file_text"').length - 1, 1, md.stdout);
      assert.is(md.stdout.split('"description"').length - 1, 1, md.stdout);
      const show = await cli(repo, ['show', String(second), '--session', id]);
      assert.is(show.code, 0, show.stderr);
      assert.match(show.stdout, 'agent copilot-cli 1.0.102');
      assert.match(show.stdout, 'model gpt-4.1');
    } finally {
      repo.cleanup();
    }
  });
}

test("copilot: a call whose message is not in events.jsonl yet (or a torn last line): its size, session.start's model and version, no place", () => {
  const repo = tempRepo();
  try {
    const events = fixture('copilot-1.0.102-events.jsonl', repo).split('\n').filter(Boolean);
    const file = path.join(repo.home, 'events.jsonl');
    // session.start, user.message, system.message, then half of the turn's first line.
    const text = `${events.slice(0, 3).join('\n')}\n${(events[3] as string).slice(0, 40)}`;
    fs.writeFileSync(file, text);
    const id = callIdFromInput('create', { path: path.join(repo.dir, 'a.txt'), file_text: 'alpha\n' });
    assert.equal(locateCopilotCall(file, id), { path: file, offset: Buffer.byteLength(text), agentVersion: '1.0.102', model: 'gpt-4.1' });
    // Once its message is written: its event id and where its line starts.
    fs.writeFileSync(file, `${events.join('\n')}\n`);
    const at = events.findIndex((l) => l.includes('"toolRequests":[{"toolCallId":"call_1_0"'));
    const loc = locateCopilotCall(file, id);
    assert.is(loc.uuid, (JSON.parse(events[at] as string) as { id: string }).id);
    assert.is(
      loc.lineOffset,
      Buffer.byteLength(
        events
          .slice(0, at)
          .map((l) => `${l}\n`)
          .join(''),
      ),
    );
    assert.is(locateCopilotCall(path.join(repo.home, 'none.jsonl'), id).offset, undefined, 'no transcript: only its path');
  } finally {
    repo.cleanup();
  }
});

const CLINE_SID = '1796461588083_skrva';

/** A Cline hook payload as 3.0.65 sends it (test/agents/cline.test.ts), for the call `id` of `name` with `input`. */
function clinePayload(repo: TempRepo, phase: 'pre' | 'post', id: string, name: string, input: unknown, output?: unknown) {
  const common = {
    clineVersion: '',
    timestamp: '2026-12-05T09:06:29.575Z',
    taskId: 'conv_1796461588472_4eifo01',
    sessionContext: { rootSessionId: CLINE_SID },
    workspaceRoots: [repo.dir],
    workspaceInfo: { rootPath: repo.dir, latestGitBranchName: 'master' },
    agent_id: 'agent_1796461588500_2n2l2t',
    parent_agent_id: null,
  };
  return phase === 'pre'
    ? { ...common, hookName: 'tool_call', iteration: 1, tool_call: { id, name, input }, preToolUse: { toolName: name, parameters: input } }
    : {
        ...common,
        hookName: 'tool_result',
        iteration: 1,
        tool_result: { id, name, input, output, durationMs: 7 },
        postToolUse: { toolName: name, parameters: input, result: JSON.stringify(output), success: true, executionTimeMs: 7 },
      };
}

test('cline: the hooks record its session file (CLINE_DATA_DIR, else <cline dir>/data); replay shows its prompt (unwrapped) and messages around the steps; show N names the model and version', async () => {
  // Where the transcript is, from the hook's environment.
  const pre = clinePayload({ dir: '/repo' } as TempRepo, 'pre', 'call_1_0', 'editor', {});
  const file = `sessions/${CLINE_SID}/${CLINE_SID}.messages.json`;
  assert.is(parseHookCall('cline', 'PreToolUse', pre, { HOME: '/h' }).transcriptPath, `/h/.cline/data/${file}`);
  assert.is(parseHookCall('cline', 'PreToolUse', pre, { HOME: '/h', CLINE_DIR: '/c' }).transcriptPath, `/c/data/${file}`);
  assert.is(parseHookCall('cline', 'PreToolUse', pre, { HOME: '/h', CLINE_DIR: '/c', CLINE_DATA_DIR: '/d' }).transcriptPath, `/d/${file}`);
  const bad = { ...pre, sessionContext: { rootSessionId: '../../x' } };
  assert.is(
    parseHookCall('cline', 'PreToolUse', bad, { HOME: '/h' }).transcriptPath,
    null,
    'an id that is not a plain name names no folder',
  );

  const repo = tempRepo({ files: { 'base.txt': 'base\n' } });
  try {
    const dir = path.join(repo.home, '.cline', 'data', 'sessions', CLINE_SID);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, `${CLINE_SID}.json`), fixture('cline-3.0.65.json', repo));
    const doc = JSON.parse(fixture('cline-3.0.65.messages.json', repo)) as { messages: unknown[] };
    const writeMessages = (n: number) =>
      fs.writeFileSync(
        path.join(dir, `${CLINE_SID}.messages.json`),
        JSON.stringify({ ...doc, messages: doc.messages.slice(0, n) }, null, 2),
      );
    const hook = (event: string, payload: Record<string, unknown>) =>
      runHook({ agent: 'cline', event, input: JSON.stringify(payload), env: repo.env, cwd: repo.dir });
    // At the first call's hooks only the prompt is written: the model and version come from the metadata then.
    writeMessages(1);
    const edit = { path: path.join(repo.dir, 'a.txt'), new_text: 'alpha\n' };
    const id = (await hook('PreToolUse', clinePayload(repo, 'pre', 'call_1_0', 'editor', edit))).session as string;
    fs.writeFileSync(path.join(repo.dir, 'a.txt'), 'alpha\n');
    const edited = { query: `edit:${edit.path}`, result: `File created successfully at: ${edit.path}`, success: true };
    await hook('PostToolUse', clinePayload(repo, 'post', 'call_1_0', 'editor', edit, edited));
    writeMessages(4);
    const commands = { commands: ["mkdir -p d && printf 'beta\\n' > d/b.txt && rm base.txt"] };
    await hook('PreToolUse', clinePayload(repo, 'pre', 'call_2_0', 'run_commands', commands));
    fs.mkdirSync(path.join(repo.dir, 'd'));
    fs.writeFileSync(path.join(repo.dir, 'd', 'b.txt'), 'beta\n');
    fs.rmSync(path.join(repo.dir, 'base.txt'));
    await hook(
      'PostToolUse',
      clinePayload(repo, 'post', 'call_2_0', 'run_commands', commands, [{ query: commands.commands[0], result: '', success: true }]),
    );
    writeMessages(doc.messages.length);
    const steps = await callSteps(repo, id);
    assert.equal(
      steps.map((s) => [s.tool, s.status, s.model, s.agentVersion, s.transcript?.path]),
      [
        ['editor', 'done', 'test-model', 'cline 3.0.65', path.join(dir, `${CLINE_SID}.messages.json`)],
        ['run_commands', 'done', 'test-model', 'cline 3.0.65', path.join(dir, `${CLINE_SID}.messages.json`)],
      ],
    );
    const [first, second] = steps.map((s) => s.step);
    const md = await cli(repo, ['replay', '--session', id]);
    assert.is(md.code, 0, md.stderr);
    inOrder(md.stdout, [
      'Do the scripted task.',
      'Creating a.txt first.',
      `Step ${first}: editor (done`,
      'A `a.txt`',
      `Step ${second}: run_commands (done`,
      'D `base.txt`',
      'All done.',
    ]);
    assert.not.match(md.stdout, '<user_input', "the prompt without Cline's wrapper");
    const show = await cli(repo, ['show', String(second), '--session', id]);
    assert.is(show.code, 0, show.stderr);
    assert.match(show.stdout, 'agent cline 3.0.65');
    assert.match(show.stdout, 'model test-model');
    // undo --chat: the transcript is recorded, but Cline's conversations are not forked: the digest, saying why.
    const chat = await cli(repo, ['undo', String(second), '--chat', '--json', '--session', id]);
    assert.is(chat.code, 0, chat.stderr);
    const rewind = (JSON.parse(chat.stdout) as { chat: { kind: string; reason: string } }).chat;
    assert.is(rewind.kind, 'digest');
    assert.match(rewind.reason, 'Cline conversations cannot be forked');
  } finally {
    repo.cleanup();
  }
});

test.run();
