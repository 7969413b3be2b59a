// End to end with the real Qwen Code (@qwen-code/qwen-code, pinned in
// support/agent-clis.ts) under `agentsnap wrap` and with `init` hooks, driven
// offline by a scripted stand-in of the OpenAI Chat Completions API
// (support/openai-stub.ts): its real tools run in the repository and fire its
// real hooks.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { agentsnapOnPath, cliProcess, tempRepo, treeFiles, type TempRepo } from '../support/helpers.js';
import type { ScriptedTurn } from '../support/model-stubs.js';
import { startChatCompletionsStub } from '../support/openai-stub.js';
import { qwenBinary } from '../support/agent-clis.js';
import { loadSession } from '../../src/session/session.js';
import { openRepo } from '../../src/git/repo.js';

let qwen: string | null = null;
try {
  qwen = qwenBinary();
  if (!qwen) console.log('qwen-e2e: skipped (AGENTSNAP_E2E_QWEN=skip)');
} catch (e) {
  console.log(`qwen-e2e: skipped: ${(e as Error).message}`);
}

/** Qwen Code offline against the stub: OpenAI auth, yolo, no update checks. */
function qwenEnv(url: string): Record<string, string> {
  return {
    OPENAI_BASE_URL: url,
    OPENAI_API_KEY: 'sk-e2e-test-key-not-real',
    OPENAI_MODEL: 'test-model',
    QWEN_CODE_SUPPRESS_YOLO_WARNING: '1',
  };
}
const QWEN_ARGS = ['--auth-type', 'openai', '--yolo', 'Make the changes.'];

/** Runs a program without blocking this process (the stub answers from it), bounded in time. */
function run(
  program: string,
  args: string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'], timeout: 180_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * The MCP tools the model was told of: Qwen Code defers them behind its tool_search bridge (named
 * mcp__<server>__<tool> in the request's text), or declares them as tools.
 */
function mcpToolsSeen(requests: Record<string, unknown>[]): string {
  const names = new Set<string>();
  for (const m of JSON.stringify(requests).matchAll(/mcp__[A-Za-z0-9_]+/g)) names.add(m[0]);
  return [...names].sort().join(' ') || `none in: ${JSON.stringify(requests).slice(0, 3000)}`;
}

function filesOf(repo: TempRepo, commit: string): Record<string, string> {
  return Object.fromEntries([...treeFiles(repo, commit)].map(([p, v]) => [p, v.content.toString()]));
}

function worktreeFiles(repo: TempRepo): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of fs.readdirSync(repo.dir)) {
    if (name === '.git' || name === '.qwen') continue;
    out[name] = fs.readFileSync(path.join(repo.dir, name), 'utf8');
  }
  return out;
}

test('qwen under wrap: hooks for the run only, one step per call (write, shell, failing shell closed as failed), log says what each was, undo of the shell call and of the write, undo --chat and qwen --resume; the user settings byte for byte', async () => {
  if (!qwen) return;
  const repo = tempRepo({ files: { 'a.txt': 'one\n', 'gone.txt': 'bye\n' } });
  // The user's own settings, without "$version" (which Qwen would stamp into them) and with a hook of their own.
  const userSettings = '{\n    "ui": { "hideTips": true },\n    "general": {"disableAutoUpdate": true}\n}\n';
  fs.mkdirSync(path.join(repo.home, '.qwen'), { recursive: true });
  fs.writeFileSync(path.join(repo.home, '.qwen', 'settings.json'), userSettings);
  const script: ScriptedTurn[] = [
    {
      text: 'Creating hello.txt.',
      tools: [{ name: 'write_file', input: { file_path: path.join(repo.dir, 'hello.txt'), content: 'hello\n' } }],
    },
    { tools: [{ name: 'run_shell_command', input: { command: 'rm gone.txt && echo two > a.txt', description: 'change files' } }] },
    { tools: [{ name: 'run_shell_command', input: { command: 'echo partial > fail.txt; exit 3', description: 'fail' } }] },
    { text: 'All done.' },
  ];
  const start = { 'a.txt': 'one\n', 'gone.txt': 'bye\n' };
  const after1 = { ...start, 'hello.txt': 'hello\n' };
  const after2 = { 'a.txt': 'two\n', 'hello.txt': 'hello\n' };
  const after3 = { ...after2, 'fail.txt': 'partial\n' };
  const stub = await startChatCompletionsStub(script);
  try {
    const res = await cliProcess(repo, ['wrap', '--', qwen, ...QWEN_ARGS], { env: qwenEnv(stub.url), timeoutMs: 180_000 });
    assert.is(res.code, 0, res.stderr + res.stdout);
    assert.match(res.stdout, 'All done.');
    assert.not.match(res.stderr, 'agentsnap: warning');
    const id = /started session (\S+)/.exec(res.stderr)?.[1] as string;
    assert.ok(id, res.stderr);
    const s = loadSession(await openRepo(repo.dir, { env: repo.env }), id);
    assert.is(s.agent, 'qwen');
    assert.equal(
      s.steps.map((st) => [st.tool, st.status]),
      [
        ['write_file', 'done'],
        ['run_shell_command', 'done'],
        ['run_shell_command', 'failed'],
      ],
    );
    assert.equal(
      s.steps.map((st) => st.input),
      stub.calls.map((c) => c.input),
    );
    assert.match(String(s.steps[2]?.error), 'Exit Code: 3');
    [after1, after2, after3].forEach((files, i) =>
      assert.equal(filesOf(repo, s.steps[i]?.post as string), files, `files after step ${i + 1}`),
    );
    assert.equal(filesOf(repo, s.steps[0]?.pre as string), start);
    // `log`: the agent's tool names and what each call was (its file, its command).
    const log = await cliProcess(repo, ['log']);
    assert.is(log.code, 0, log.stderr);
    assert.match(log.stdout, 'hello.txt');
    assert.match(log.stdout, 'rm gone.txt && echo two > a.txt');
    assert.match(log.stdout, 'echo partial > fail.txt; exit 3');
    // The injection was for the run only: the user's settings are byte for byte what they were, the run's file is gone,
    // no project settings were written.
    assert.is(fs.readFileSync(path.join(repo.home, '.qwen', 'settings.json'), 'utf8'), userSettings);
    assert.not.ok(fs.existsSync(path.join(repo.dir, '.qwen')));
    assert.equal(
      fs.readdirSync(path.join(repo.dir, '.git', 'agentsnap', 'sessions', id)).filter((n) => n.startsWith('qwen-')),
      [],
      'the run settings and state are gone',
    );
    // Undo the shell call (step 2): a.txt and gone.txt back, hello.txt kept; then undo the write: hello.txt gone.
    let u = await cliProcess(repo, ['undo', '2']);
    assert.is(u.code, 0, u.stderr);
    assert.equal(worktreeFiles(repo), after1);
    u = await cliProcess(repo, ['undo', '1']);
    assert.is(u.code, 0, u.stderr);
    assert.equal(worktreeFiles(repo), start);
    // undo 3 --chat: the conversation forked before call 3 (the original untouched); `qwen --resume <id>` sends the
    // model calls 1 and 2 and their results, not call 3.
    const chatFile = s.steps[0]?.transcript?.path as string;
    const chatBytes = fs.readFileSync(chatFile);
    const r = await cliProcess(repo, ['undo', '3', '--chat', '--json']);
    assert.is(r.code, 0, r.stderr);
    const chat = (JSON.parse(r.stdout) as { chat: { kind: string; file: string; sessionId: string; cwd: string; resumeCommand: string } })
      .chat;
    assert.is(chat.kind, 'transcript', r.stdout);
    assert.is(chat.resumeCommand, `qwen --resume ${chat.sessionId}`);
    assert.is(chat.cwd, repo.dir);
    assert.is(path.dirname(chat.file), path.dirname(chatFile));
    assert.equal(fs.readFileSync(chatFile), chatBytes, 'the original conversation is unchanged');
    const resumed = await startChatCompletionsStub([
      { text: 'Resumed.' },
      { text: 'Resumed.' },
      { text: 'Resumed.' },
      { text: 'Resumed.' },
    ]);
    try {
      const c = await run(qwen, ['--auth-type', 'openai', '--yolo', '--resume', chat.sessionId, 'Where are we?'], {
        cwd: repo.dir,
        env: { ...repo.env, ...qwenEnv(resumed.url) },
      });
      assert.is(c.code, 0, c.stderr + c.stdout);
      const messages = (resumed.requests[0]?.messages ?? []) as {
        role: string;
        content?: unknown;
        tool_calls?: { id: string }[];
        tool_call_id?: string;
      }[];
      assert.equal(
        messages.flatMap((m) => (m.tool_calls ?? []).map((t) => t.id)),
        stub.calls.slice(0, 2).map((x) => x.id),
        'the model sees calls 1 and 2 only',
      );
      assert.equal(
        messages.filter((m) => m.role === 'tool').map((m) => m.tool_call_id),
        stub.calls.slice(0, 2).map((x) => x.id),
        'and their results',
      );
      const said = JSON.stringify(messages.filter((m) => m.role === 'user').map((m) => m.content));
      assert.match(said, 'Make the changes.');
      assert.match(said, 'Where are we?');
    } finally {
      await resumed.close();
    }
    assert.equal(fs.readFileSync(chatFile), chatBytes, 'the original conversation is still unchanged');
  } finally {
    await stub.close();
    repo.cleanup();
  }
});

test('qwen under wrap --mcp: agentsnap mcp is offered to the model as one of its tools for the run only', async () => {
  if (!qwen) return;
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  const stub = await startChatCompletionsStub([{ text: 'Nothing to do.' }]);
  try {
    const res = await cliProcess(repo, ['wrap', '--mcp', '--', qwen, ...QWEN_ARGS], { env: qwenEnv(stub.url), timeoutMs: 180_000 });
    assert.is(res.code, 0, res.stderr + res.stdout);
    assert.match(mcpToolsSeen(stub.requests), 'mcp__agentsnap__list_steps');
    assert.match(mcpToolsSeen(stub.requests), 'mcp__agentsnap__undo');
    assert.not.ok(fs.existsSync(path.join(repo.dir, '.qwen')));
    assert.not.ok(
      fs.existsSync(path.join(repo.home, '.qwen', 'settings.json')) &&
        fs.readFileSync(path.join(repo.home, '.qwen', 'settings.json'), 'utf8').includes('agentsnap'),
    );
  } finally {
    await stub.close();
    repo.cleanup();
  }
});

test('qwen with init hooks (and --mcp) and no wrapper: its calls become a session, agentsnap mcp is offered; init --remove leaves no file behind ($version and all)', async () => {
  if (!qwen) return;
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  const stub = await startChatCompletionsStub([
    { tools: [{ name: 'write_file', input: { file_path: path.join(repo.dir, 'hello.txt'), content: 'hello\n' } }] },
    { tools: [{ name: 'run_shell_command', input: { command: 'echo x > b.txt; exit 4', description: 'fail' } }] },
    { text: 'All done.' },
  ]);
  try {
    const pathWithAgentsnap = agentsnapOnPath(repo.base);
    const init = await cliProcess(repo, ['init', 'qwen', '--mcp'], { env: { PATH: pathWithAgentsnap } });
    assert.is(init.code, 0, init.stderr);
    const written = JSON.parse(fs.readFileSync(path.join(repo.dir, '.qwen', 'settings.json'), 'utf8')) as {
      hooks: Record<string, unknown>;
      mcpServers: Record<string, unknown>;
    };
    assert.equal(Object.keys(written.hooks).sort(), ['PostToolUse', 'PostToolUseFailure', 'PreToolUse', 'SessionEnd']);
    assert.ok(written.mcpServers.agentsnap);
    const r = await run(qwen, QWEN_ARGS, { cwd: repo.dir, env: { ...repo.env, ...qwenEnv(stub.url), PATH: pathWithAgentsnap } });
    assert.is(r.code, 0, r.stderr + r.stdout);
    assert.match(mcpToolsSeen(stub.requests), 'mcp__agentsnap__list_steps');
    const list = JSON.parse((await cliProcess(repo, ['sessions', '--json'])).stdout) as { id: string; agent: string; steps: number }[];
    assert.equal(
      list.map((x) => [x.agent, x.steps]),
      [['qwen', 2]],
    );
    const s = loadSession(await openRepo(repo.dir, { env: repo.env }), list[0]?.id as string);
    assert.equal(
      s.steps.map((st) => [st.tool, st.status]),
      [
        ['write_file', 'done'],
        ['run_shell_command', 'failed'],
      ],
    );
    assert.is(repo.git(['status', '--porcelain']), '?? b.txt\n?? hello.txt\n', '.qwen/settings.json is kept out of commits');
    const remove = await cliProcess(repo, ['init', 'qwen', '--remove'], { env: { PATH: pathWithAgentsnap } });
    assert.is(remove.code, 0, remove.stderr);
    assert.not.ok(fs.existsSync(path.join(repo.dir, '.qwen')), 'the settings file was only ours (and Qwen\'s "$version")');
  } finally {
    await stub.close();
    repo.cleanup();
  }
});

test("qwen: init then --remove puts a project settings file of the user's back byte for byte", async () => {
  if (!qwen) return;
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  const mine = `${JSON.stringify({ $version: 4, ui: { hideTips: true } }, null, 2)}\n`;
  fs.mkdirSync(path.join(repo.dir, '.qwen'));
  fs.writeFileSync(path.join(repo.dir, '.qwen', 'settings.json'), mine);
  const stub = await startChatCompletionsStub([{ text: 'Nothing to do.' }]);
  try {
    const pathWithAgentsnap = agentsnapOnPath(repo.base);
    assert.is((await cliProcess(repo, ['init', 'qwen', '--mcp'], { env: { PATH: pathWithAgentsnap } })).code, 0);
    const r = await run(qwen, QWEN_ARGS, { cwd: repo.dir, env: { ...repo.env, ...qwenEnv(stub.url), PATH: pathWithAgentsnap } });
    assert.is(r.code, 0, r.stderr + r.stdout);
    assert.is((await cliProcess(repo, ['init', 'qwen', '--remove'], { env: { PATH: pathWithAgentsnap } })).code, 0);
    assert.is(fs.readFileSync(path.join(repo.dir, '.qwen', 'settings.json'), 'utf8'), mine);
  } finally {
    await stub.close();
    repo.cleanup();
  }
});

test.run();
