// End to end with the real Codex CLI and Gemini CLI under `agentsnap wrap`,
// driven offline by scripted stand-ins for their model APIs: their real
// tools run in the repository and fire their real hooks.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { agentsnapOnPath, cliProcess, tempRepo, treeFiles, type TempRepo } from '../support/helpers.js';
import { startGeminiStub, startResponsesStub, type ScriptedTurn } from '../support/model-stubs.js';
import { codexBinary, geminiBinary } from '../support/agent-clis.js';
import { loadSession } from '../../src/session/session.js';
import { openRepo } from '../../src/git/repo.js';
import { checkPlanAndProcesses, leftServer } from '../support/states-e2e.js';

const codex = codexBinary();
const gemini = geminiBinary();

/** The files after each call, given as changes applied in order. */
function expectedTrees(start: Record<string, string>, changes: ((f: Record<string, string>) => void)[]): Record<string, string>[] {
  const out: Record<string, string>[] = [];
  let files = start;
  for (const change of changes) {
    files = { ...files };
    change(files);
    out.push(files);
  }
  return out;
}

/** Runs a program without blocking this process (the stubs answer from it), bounded in time. */
function run(
  program: string,
  args: string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { ...opts, stdio: ['ignore', 'ignore', 'pipe'], timeout: 120_000 });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

function filesOf(repo: TempRepo, commit: string): Record<string, string> {
  return Object.fromEntries([...treeFiles(repo, commit)].map(([p, v]) => [p, v.content.toString()]));
}

async function sessionOf(repo: TempRepo, stderr: string) {
  const id = /started session (\S+)/.exec(stderr)?.[1] as string;
  assert.ok(id, stderr);
  return { id, s: loadSession(await openRepo(repo.dir, { env: repo.env }), id) };
}

test('codex under wrap: hooks injected for the run only, one step per tool call, failures recorded, trees equal the files after each call', async () => {
  if (!codex) return;
  const repo = tempRepo({ files: { 'a.txt': 'one\n', 'gone.txt': 'bye\n' } });
  const script: ScriptedTurn[] = [
    { text: 'Creating hello.txt.', tools: [{ name: 'exec_command', input: { cmd: "printf 'hello\\n' > hello.txt" } }] },
    { tools: [{ name: 'exec_command', input: { cmd: 'rm gone.txt && echo two > a.txt' } }] },
    { tools: [{ name: 'exec_command', input: { cmd: 'echo partial > fail.txt; exit 3' } }] },
    { text: 'All done.' },
  ];
  const expected = expectedTrees({ 'a.txt': 'one\n', 'gone.txt': 'bye\n' }, [
    (f) => (f['hello.txt'] = 'hello\n'),
    (f) => {
      delete f['gone.txt'];
      f['a.txt'] = 'two\n';
    },
    (f) => (f['fail.txt'] = 'partial\n'),
  ]);
  const stub = await startResponsesStub(script);
  try {
    const provider = `model_providers.stub={name="stub",base_url="${stub.url}/v1",wire_api="responses",env_key="OPENAI_API_KEY"}`;
    const res = await cliProcess(
      repo,
      [
        'wrap',
        '--',
        codex,
        'exec',
        '-c',
        provider,
        '-c',
        'model_provider=stub',
        '-m',
        'gpt-5',
        '--dangerously-bypass-approvals-and-sandbox',
        'Make the changes.',
      ],
      { env: { OPENAI_API_KEY: 'sk-e2e-test-key-not-real' }, timeoutMs: 120_000 },
    );
    assert.is(res.code, 0, res.stderr);
    assert.match(res.stdout, 'All done.');
    assert.match(res.stderr, 'codex hooks injected');
    assert.not.match(res.stderr, 'agentsnap: warning');
    const { id, s } = await sessionOf(repo, res.stderr);
    assert.is(s.agent, 'codex');
    assert.ok(s.ended);
    assert.is(s.steps.length, stub.calls.length, 'one step per tool call');
    s.steps.forEach((st, i) => {
      assert.is(st.tool, 'Bash', `step ${st.step}`);
      assert.is(st.toolUseId, stub.calls[i]?.id);
      assert.equal(st.input, { command: stub.calls[i]?.input.cmd });
      assert.is(st.status, i === 2 ? 'failed' : 'done', `status of step ${st.step}`);
      assert.equal(filesOf(repo, st.post as string), expected[i], `files after step ${st.step}`);
      assert.ok(st.transcript?.path && fs.existsSync(st.transcript.path), 'the rollout file is the transcript');
    });
    assert.is(s.steps[2]?.error, 'Exit code 3');
    // Nothing of the user's Codex configuration holds agentsnap's hooks.
    for (const name of ['config.toml', 'hooks.json']) {
      const file = path.join(repo.home, '.codex', name);
      if (fs.existsSync(file)) assert.not.match(fs.readFileSync(file, 'utf8'), 'agentsnap', file);
    }
    assert.ok(id);
  } finally {
    await stub.close();
    repo.cleanup();
  }
});

/** The call ids of the function calls and outputs a Responses API request sends back to the model. */
function responsesCallsSent(body: Record<string, unknown> | undefined): { calls: string[]; outputs: string[]; texts: string[] } {
  const input = Array.isArray(body?.input) ? (body.input as Record<string, unknown>[]) : [];
  const texts = input.filter((i) => i.type === 'message').map((i) => JSON.stringify(i.content));
  return {
    calls: input.filter((i) => i.type === 'function_call').map((i) => String(i.call_id)),
    outputs: input.filter((i) => i.type === 'function_call_output').map((i) => String(i.call_id)),
    texts,
  };
}

test('codex: undo N --chat forks the rollout before call N; `codex exec resume <id>` sends the model exactly the kept calls', async () => {
  if (!codex) return;
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  const script: ScriptedTurn[] = [
    { text: 'Creating hello.txt.', tools: [{ name: 'exec_command', input: { cmd: "printf 'hello\\n' > hello.txt" } }] },
    { tools: [{ name: 'exec_command', input: { cmd: 'echo two > a.txt' } }] },
    { tools: [{ name: 'exec_command', input: { cmd: 'echo three > b.txt' } }] },
    { text: 'All done.' },
  ];
  const stub = await startResponsesStub(script);
  const provider = (url: string) => `model_providers.stub={name="stub",base_url="${url}/v1",wire_api="responses",env_key="OPENAI_API_KEY"}`;
  try {
    const res = await cliProcess(
      repo,
      [
        'wrap',
        '--',
        codex,
        'exec',
        '-c',
        provider(stub.url),
        '-c',
        'model_provider=stub',
        '-m',
        'gpt-5',
        '--dangerously-bypass-approvals-and-sandbox',
        'Make the changes.',
      ],
      { env: { OPENAI_API_KEY: 'sk-e2e-test-key-not-real' }, timeoutMs: 120_000 },
    );
    assert.is(res.code, 0, res.stderr);
    const { s } = await sessionOf(repo, res.stderr);
    const ids = stub.calls.map((c) => c.id);
    assert.equal(
      s.steps.map((st) => st.toolUseId),
      ids,
    );
    const rollout = s.steps[0]?.transcript?.path as string;
    const rolloutBytes = fs.readFileSync(rollout);
    const r = await cliProcess(repo, ['undo', '3', '--chat', '--json']);
    assert.is(r.code, 0, r.stderr);
    const chat = (JSON.parse(r.stdout) as { chat: { kind: string; file: string; sessionId: string; cwd: string; resumeCommand: string } })
      .chat;
    assert.is(chat.kind, 'transcript');
    assert.is(chat.resumeCommand, `codex resume ${chat.sessionId}`);
    assert.is(chat.cwd, repo.dir);
    assert.equal(fs.readFileSync(rollout), rolloutBytes, 'the original rollout is unchanged');
    // Marked as `codex fork` marks its forks (its TUI then says "Thread forked from <id>" on resume).
    const meta = (JSON.parse(fs.readFileSync(chat.file, 'utf8').split('\n')[0] as string) as { payload: Record<string, unknown> }).payload;
    assert.is(meta.forked_from_id, JSON.parse(rolloutBytes.toString('utf8').split('\n')[0] as string).payload.id);
    assert.is(typeof meta.forked_from_ordinal_exclusive, 'number');
    assert.is(fs.readFileSync(path.join(repo.dir, 'b.txt'), 'utf8'), 'three\n', '--chat leaves the files alone');
    // Resume the fork non-interactively, as `codex resume <id>` would interactively.
    const resumed = await startResponsesStub([{ text: 'Resumed.' }]);
    try {
      const c = await run(
        codex,
        [
          'exec',
          'resume',
          '-c',
          provider(resumed.url),
          '-c',
          'model_provider=stub',
          '-m',
          'gpt-5',
          '--dangerously-bypass-approvals-and-sandbox',
          chat.sessionId,
          'Where are we?',
        ],
        { cwd: repo.dir, env: { ...repo.env, OPENAI_API_KEY: 'sk-e2e-test-key-not-real' } },
      );
      assert.is(c.code, 0, c.stderr);
      assert.is(resumed.requests.length, 1, 'one model request');
      const sent = responsesCallsSent(resumed.requests[0]);
      assert.equal(sent.calls, ids.slice(0, 2), 'the model sees calls 1 and 2 only');
      assert.equal(sent.outputs, ids.slice(0, 2));
      assert.ok(
        sent.texts.some((t) => t.includes('Make the changes.')),
        'the first prompt is kept',
      );
      assert.match(sent.texts[sent.texts.length - 1] as string, 'Where are we?');
    } finally {
      await resumed.close();
    }
    assert.equal(fs.readFileSync(rollout), rolloutBytes, 'the original rollout is still unchanged');

    // undo 2 --compact: calls before 2 become the digest; codex resumes with the digest and calls 2 and 3.
    const k = await cliProcess(repo, ['undo', '2', '--compact', '--json']);
    assert.is(k.code, 0, k.stderr);
    const compact = (JSON.parse(k.stdout) as { chat: { kind: string; sessionId: string; digest: string } }).chat;
    assert.is(compact.kind, 'transcript', k.stdout);
    const again = await startResponsesStub([{ text: 'Resumed.' }]);
    try {
      const c = await run(
        codex,
        [
          'exec',
          'resume',
          '-c',
          provider(again.url),
          '-c',
          'model_provider=stub',
          '-m',
          'gpt-5',
          '--dangerously-bypass-approvals-and-sandbox',
          compact.sessionId,
          'And now?',
        ],
        { cwd: repo.dir, env: { ...repo.env, OPENAI_API_KEY: 'sk-e2e-test-key-not-real' } },
      );
      assert.is(c.code, 0, c.stderr);
      const sent = responsesCallsSent(again.requests[0]);
      assert.equal(sent.calls, ids.slice(1), 'the model sees calls 2 and 3 only');
      assert.equal(sent.outputs, ids.slice(1));
      assert.ok(
        sent.texts.some((t) => t.includes('[agentsnap] A digest')),
        'the digest is sent',
      );
      assert.not.ok(JSON.stringify(again.requests[0]).includes(ids[0] as string), 'call 1 is not sent');
    } finally {
      await again.close();
    }
    assert.equal(fs.readFileSync(rollout), rolloutBytes, 'the original rollout is never changed');
  } finally {
    await stub.close();
    repo.cleanup();
  }
});

test('gemini under wrap: hooks through an overlay home, one step per tool call, ~/.gemini left as it was plus what Gemini wrote', async () => {
  if (!gemini) return;
  const repo = tempRepo({ files: { 'a.txt': 'one\n', 'gone.txt': 'bye\n' } });
  const settingsText =
    '{\n  // the user\'s own settings, with a comment\n  "security": { "auth": { "selectedType": "gemini-api-key" } },\n  "ui": { "hideTips": true },\n}\n';
  fs.mkdirSync(path.join(repo.home, '.gemini'), { recursive: true });
  fs.writeFileSync(path.join(repo.home, '.gemini', 'settings.json'), settingsText);
  fs.writeFileSync(path.join(repo.home, '.gemini', 'GEMINI.md'), 'my memory\n');
  const script: ScriptedTurn[] = [
    { text: 'Creating hello.txt.', tools: [{ name: 'write_file', input: { file_path: 'hello.txt', content: 'hello\n' } }] },
    { tools: [{ name: 'run_shell_command', input: { command: 'rm gone.txt && echo two > a.txt' } }] },
    { tools: [{ name: 'run_shell_command', input: { command: 'echo partial > fail.txt; exit 3' } }] },
    { text: 'All done.' },
  ];
  const expected = expectedTrees({ 'a.txt': 'one\n', 'gone.txt': 'bye\n' }, [
    (f) => (f['hello.txt'] = 'hello\n'),
    (f) => {
      delete f['gone.txt'];
      f['a.txt'] = 'two\n';
    },
    (f) => (f['fail.txt'] = 'partial\n'),
  ]);
  const stub = await startGeminiStub(script);
  try {
    const env = { GEMINI_API_KEY: 'e2e-test-key-not-real', GOOGLE_GEMINI_BASE_URL: stub.url, GEMINI_CLI_TRUST_WORKSPACE: 'true' };
    const res = await cliProcess(repo, ['wrap', '--', gemini, '-p', 'Make the changes.', '--yolo', '-m', 'gemini-2.5-flash'], {
      env,
      timeoutMs: 120_000,
    });
    assert.is(res.code, 0, res.stderr);
    assert.match(res.stdout, 'All done.');
    assert.match(res.stderr, 'gemini hooks injected');
    assert.not.match(res.stderr, 'agentsnap: warning');
    const { id, s } = await sessionOf(repo, res.stderr);
    assert.is(s.agent, 'gemini');
    assert.is(s.steps.length, stub.calls.length, 'one step per tool call');
    s.steps.forEach((st, i) => {
      assert.is(st.tool, stub.calls[i]?.name, `step ${st.step}`);
      assert.equal(st.input, stub.calls[i]?.input);
      assert.match(String(st.toolUseId), /^agentsnap:/);
      assert.is(st.status, i === 2 ? 'failed' : 'done', `status of step ${st.step}`);
      assert.equal(filesOf(repo, st.post as string), expected[i], `files after step ${st.step}`);
    });
    assert.is(s.steps[2]?.error, 'Exit code 3');
    // The user's settings are byte for byte what they were; what Gemini created is in the real ~/.gemini,
    // the journaled transcript path points there, and the overlay is gone.
    assert.is(fs.readFileSync(path.join(repo.home, '.gemini', 'settings.json'), 'utf8'), settingsText);
    assert.is(fs.readFileSync(path.join(repo.home, '.gemini', 'GEMINI.md'), 'utf8'), 'my memory\n');
    const transcript = s.steps[0]?.transcript?.path as string;
    assert.ok(transcript.startsWith(path.join(repo.home, '.gemini') + path.sep), transcript);
    assert.ok(fs.existsSync(transcript), 'the chat file was moved back');
    const sessionDir = path.join(repo.dir, '.git', 'agentsnap', 'sessions', id);
    assert.equal(
      fs.readdirSync(sessionDir).filter((n) => n.startsWith('gemini-home')),
      [],
    );
  } finally {
    await stub.close();
    repo.cleanup();
  }
});

/** The function calls (name and args) and responses a Gemini API request sends back to the model. */
function geminiCallsSent(body: Record<string, unknown> | undefined): { calls: string[]; responses: number; texts: string[] } {
  const contents = Array.isArray(body?.contents) ? (body.contents as { role?: string; parts?: Record<string, unknown>[] }[]) : [];
  const parts = contents.flatMap((c) => c.parts ?? []);
  return {
    calls: parts
      .filter((p) => p.functionCall)
      .map((p) => JSON.stringify([(p.functionCall as { name: string }).name, (p.functionCall as { args: unknown }).args])),
    responses: parts.filter((p) => p.functionResponse).length,
    texts: parts.filter((p) => typeof p.text === 'string').map((p) => p.text as string),
  };
}

test('gemini: undo N --chat forks the saved chat before call N; `gemini --resume <id>` sends the model exactly the kept calls', async () => {
  if (!gemini) return;
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  fs.mkdirSync(path.join(repo.home, '.gemini'), { recursive: true });
  fs.writeFileSync(path.join(repo.home, '.gemini', 'settings.json'), '{"security":{"auth":{"selectedType":"gemini-api-key"}}}\n');
  const script: ScriptedTurn[] = [
    { text: 'Creating hello.txt.', tools: [{ name: 'write_file', input: { file_path: 'hello.txt', content: 'hello\n' } }] },
    { tools: [{ name: 'run_shell_command', input: { command: 'echo two > a.txt' } }] },
    { tools: [{ name: 'run_shell_command', input: { command: 'echo three > b.txt' } }] },
    { text: 'All done.' },
  ];
  const stub = await startGeminiStub(script);
  const env = (url: string) => ({
    GEMINI_API_KEY: 'e2e-test-key-not-real',
    GOOGLE_GEMINI_BASE_URL: url,
    GEMINI_CLI_TRUST_WORKSPACE: 'true',
  });
  try {
    const res = await cliProcess(repo, ['wrap', '--', gemini, '-p', 'Make the changes.', '--yolo', '-m', 'gemini-2.5-flash'], {
      env: env(stub.url),
      timeoutMs: 120_000,
    });
    assert.is(res.code, 0, res.stderr);
    const { s } = await sessionOf(repo, res.stderr);
    assert.is(s.steps.length, 3);
    const chatFile = s.steps[0]?.transcript?.path as string;
    const chatBytes = fs.readFileSync(chatFile);
    const r = await cliProcess(repo, ['undo', '3', '--chat', '--json']);
    assert.is(r.code, 0, r.stderr);
    const chat = (JSON.parse(r.stdout) as { chat: { kind: string; file: string; sessionId: string; cwd: string; resumeCommand: string } })
      .chat;
    assert.is(chat.kind, 'transcript', r.stdout);
    assert.is(chat.resumeCommand, `gemini --resume ${chat.sessionId}`);
    assert.is(chat.cwd, repo.dir);
    assert.is(path.dirname(chat.file), path.dirname(chatFile));
    assert.equal(fs.readFileSync(chatFile), chatBytes, 'the original chat is unchanged');
    const sent = (c: ScriptedTurn['tools']) => (c ?? []).map((t) => JSON.stringify([t.name, t.input]));
    const resumed = await startGeminiStub([
      { text: 'Resumed.' },
      { text: 'Resumed.' },
      { text: 'Resumed.' },
      { text: 'Resumed.' },
      { text: 'Resumed.' },
    ]);
    try {
      const c = await run(gemini, ['--resume', chat.sessionId, '-p', 'Where are we?', '--yolo', '-m', 'gemini-2.5-flash'], {
        cwd: repo.dir,
        env: { ...repo.env, ...env(resumed.url) },
      });
      assert.is(c.code, 0, c.stderr);
      assert.ok(resumed.requests.length >= 1, 'a model request');
      const got = geminiCallsSent(resumed.requests[0]);
      assert.equal(got.calls, [...sent(script[0]?.tools), ...sent(script[1]?.tools)], 'the model sees calls 1 and 2 only');
      assert.ok(got.responses >= 2, `their results are sent (${got.responses})`);
      assert.ok(
        got.texts.some((t) => t.includes('Make the changes.')),
        'the first prompt is kept',
      );
      assert.ok(got.texts.some((t) => t.includes('Where are we?')));
    } finally {
      await resumed.close();
    }
    assert.equal(fs.readFileSync(chatFile), chatBytes, 'the original chat is still unchanged');

    // undo 2 --compact: call 1 becomes the digest; gemini resumes with the digest and calls 2 and 3.
    const k = await cliProcess(repo, ['undo', '2', '--compact', '--json']);
    assert.is(k.code, 0, k.stderr);
    const compact = (JSON.parse(k.stdout) as { chat: { kind: string; sessionId: string } }).chat;
    assert.is(compact.kind, 'transcript', k.stdout);
    const again = await startGeminiStub([
      { text: 'Resumed.' },
      { text: 'Resumed.' },
      { text: 'Resumed.' },
      { text: 'Resumed.' },
      { text: 'Resumed.' },
    ]);
    try {
      const c = await run(gemini, ['--resume', compact.sessionId, '-p', 'And now?', '--yolo', '-m', 'gemini-2.5-flash'], {
        cwd: repo.dir,
        env: { ...repo.env, ...env(again.url) },
      });
      assert.is(c.code, 0, c.stderr);
      const got = geminiCallsSent(again.requests[0]);
      assert.equal(got.calls, [...sent(script[1]?.tools), ...sent(script[2]?.tools)], 'the model sees calls 2 and 3 only');
      assert.ok(
        got.texts.some((t) => t.includes('[agentsnap] A digest')),
        'the digest is sent',
      );
    } finally {
      await again.close();
    }
    assert.equal(fs.readFileSync(chatFile), chatBytes, 'the original chat is never changed');
  } finally {
    await stub.close();
    repo.cleanup();
  }
});

test('gemini with init hooks and no wrapper: its hooks map the Gemini session to an agentsnap session', async () => {
  if (!gemini) return;
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  fs.mkdirSync(path.join(repo.home, '.gemini'), { recursive: true });
  fs.writeFileSync(path.join(repo.home, '.gemini', 'settings.json'), '{"security":{"auth":{"selectedType":"gemini-api-key"}}}\n');
  const stub = await startGeminiStub([
    { tools: [{ name: 'write_file', input: { file_path: 'hello.txt', content: 'hello\n' } }] },
    { text: 'All done.' },
  ]);
  try {
    // The init hooks call `agentsnap-hook` (and `agentsnap`) from PATH, where init finds it (a global install).
    const pathWithAgentsnap = agentsnapOnPath(repo.base);
    const init = await cliProcess(repo, ['init', 'gemini'], { env: { PATH: pathWithAgentsnap } });
    assert.is(init.code, 0, init.stderr);
    const env = {
      GEMINI_API_KEY: 'e2e-test-key-not-real',
      GOOGLE_GEMINI_BASE_URL: stub.url,
      GEMINI_CLI_TRUST_WORKSPACE: 'true',
      PATH: pathWithAgentsnap,
    };
    const r = await run(gemini, ['-p', 'Make the changes.', '--yolo', '-m', 'gemini-2.5-flash'], {
      cwd: repo.dir,
      env: { ...repo.env, ...env },
    });
    assert.is(r.code, 0, r.stderr);
    const list = JSON.parse((await cliProcess(repo, ['sessions', '--json'])).stdout) as {
      id: string;
      agent: string;
      steps: number;
      status: string;
    }[];
    assert.is(list.length, 1, JSON.stringify(list));
    assert.is(list[0]?.agent, 'gemini');
    assert.is(list[0]?.steps, 1);
    assert.is(list[0]?.status, 'ended', 'ended by the SessionEnd hook');
    assert.is(repo.git(['status', '--porcelain']), '?? hello.txt\n', '.gemini/settings.json is kept out of commits');
  } finally {
    await stub.close();
    repo.cleanup();
  }
});

test('codex with init hooks and no wrapper (trusted project, reviewed hooks): its hooks map the Codex session to an agentsnap session', async () => {
  if (!codex) return;
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  const stub = await startResponsesStub([
    { tools: [{ name: 'exec_command', input: { cmd: 'echo hi > made.txt' } }] },
    { text: 'All done.' },
  ]);
  try {
    const pathWithAgentsnap = agentsnapOnPath(repo.base);
    const init = await cliProcess(repo, ['init', 'codex'], { env: { PATH: pathWithAgentsnap } });
    assert.is(init.code, 0, init.stderr);
    assert.match(init.stderr, '/hooks');
    // The user's own steps: trusting the project, and reviewing the new hooks (--dangerously-bypass-hook-trust stands in for that).
    fs.mkdirSync(path.join(repo.home, '.codex'), { recursive: true });
    fs.writeFileSync(path.join(repo.home, '.codex', 'config.toml'), `[projects.${JSON.stringify(repo.dir)}]\ntrust_level = "trusted"\n`);
    const provider = `model_providers.stub={name="stub",base_url="${stub.url}/v1",wire_api="responses",env_key="OPENAI_API_KEY"}`;
    const env = { ...repo.env, OPENAI_API_KEY: 'sk-e2e-test-key-not-real', PATH: pathWithAgentsnap };
    const r = await run(
      codex,
      [
        'exec',
        '-c',
        provider,
        '-c',
        'model_provider=stub',
        '-m',
        'gpt-5',
        '--dangerously-bypass-approvals-and-sandbox',
        '--dangerously-bypass-hook-trust',
        'Make the changes.',
      ],
      { cwd: repo.dir, env },
    );
    assert.is(r.code, 0, r.stderr);
    // Codex does not wait for its SessionEnd hook before it exits: the hook may still be recording the end. Polled
    // with a generous bound (a loaded machine only makes this slower).
    let list: { agent: string; steps: number; status: string }[] = [];
    for (let i = 0; i < 600; i++) {
      list = JSON.parse((await cliProcess(repo, ['sessions', '--json'])).stdout) as typeof list;
      if (list[0]?.status !== 'running') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(
      list.map((x) => [x.agent, x.steps, x.status]),
      [['codex', 1, 'ended']],
    );
    assert.is(repo.git(['status', '--porcelain']), '?? made.txt\n', '.codex/hooks.json is kept out of commits');
  } finally {
    await stub.close();
    repo.cleanup();
  }
});

test('codex under wrap: its plan (update_plan) per step, the server an exec_command left running (status, undo, undo --stop-processes)', async () => {
  if (!codex) return;
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  const server = leftServer(repo);
  const plan = (a: string, b: string) => ({
    plan: [
      { step: 'Start the server', status: a },
      { step: 'Write the notes', status: b },
    ],
  });
  const stub = await startResponsesStub([
    { tools: [{ name: 'update_plan', input: plan('in_progress', 'pending') }] },
    { tools: [{ name: 'exec_command', input: { cmd: server.command } }] },
    { tools: [{ name: 'exec_command', input: { cmd: 'echo notes > notes.txt' } }] },
    { tools: [{ name: 'update_plan', input: plan('completed', 'completed') }] },
    { text: 'All done.' },
  ]);
  try {
    const provider = `model_providers.stub={name="stub",base_url="${stub.url}/v1",wire_api="responses",env_key="OPENAI_API_KEY"}`;
    // 0.171.0 offers update_plan in exec mode only with tools.update_plan.enabled.
    const res = await cliProcess(
      repo,
      [
        'wrap',
        '--',
        codex,
        'exec',
        '-c',
        provider,
        '-c',
        'model_provider=stub',
        '-c',
        'tools.update_plan.enabled=true',
        '-m',
        'gpt-5',
        '--dangerously-bypass-approvals-and-sandbox',
        'Start the server and write the notes.',
      ],
      { env: { OPENAI_API_KEY: 'sk-e2e-test-key-not-real' }, timeoutMs: 120_000 },
    );
    assert.is(res.code, 0, res.stderr);
    assert.match(res.stdout, 'All done.');
    assert.ok(
      (stub.requests[0]?.tools as { name?: string }[]).some((t) => t.name === 'update_plan'),
      'update_plan offered',
    );
    const { id, s } = await sessionOf(repo, res.stderr);
    assert.equal(
      s.steps.map((st) => st.tool),
      ['update_plan', 'Bash', 'Bash', 'update_plan'],
    );
    const { environments } = await checkPlanAndProcesses(repo, id, server, {
      planStep: 1,
      serverStep: 2,
      doneStep: 4,
      items: ['Start the server', 'Write the notes'],
      firstItemMark: '~',
    });
    for (const e of environments) assert.is(e.tools, null, 'Codex names no tools in its rollout');
  } finally {
    server.kill();
    await stub.close();
    repo.cleanup();
  }
});

test('gemini under wrap: its plan (write_todos) per step, the server a run_shell_command left running (status, undo, undo --stop-processes)', async () => {
  if (!gemini) return;
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  fs.mkdirSync(path.join(repo.home, '.gemini'), { recursive: true });
  fs.writeFileSync(path.join(repo.home, '.gemini', 'settings.json'), '{"security":{"auth":{"selectedType":"gemini-api-key"}}}\n');
  const server = leftServer(repo);
  const todos = (a: string, b: string) => ({
    todos: [
      { description: 'Start the server', status: a },
      { description: 'Write the notes', status: b },
    ],
  });
  const stub = await startGeminiStub([
    { tools: [{ name: 'write_todos', input: todos('in_progress', 'pending') }] },
    { tools: [{ name: 'run_shell_command', input: { command: server.command } }] },
    { tools: [{ name: 'write_file', input: { file_path: 'notes.txt', content: 'notes\n' } }] },
    { tools: [{ name: 'write_todos', input: todos('completed', 'completed') }] },
    { text: 'All done.' },
  ]);
  try {
    const env = { GEMINI_API_KEY: 'e2e-test-key-not-real', GOOGLE_GEMINI_BASE_URL: stub.url, GEMINI_CLI_TRUST_WORKSPACE: 'true' };
    const res = await cliProcess(
      repo,
      ['wrap', '--', gemini, '-p', 'Start the server and write the notes.', '--yolo', '-m', 'gemini-2.5-flash'],
      { env, timeoutMs: 120_000 },
    );
    assert.is(res.code, 0, res.stderr);
    assert.match(res.stdout, 'All done.');
    const { id, s } = await sessionOf(repo, res.stderr);
    assert.equal(
      s.steps.map((st) => st.tool),
      ['write_todos', 'run_shell_command', 'write_file', 'write_todos'],
    );
    const { environments } = await checkPlanAndProcesses(repo, id, server, {
      planStep: 1,
      serverStep: 2,
      doneStep: 4,
      items: ['Start the server', 'Write the notes'],
      firstItemMark: '~',
    });
    for (const e of environments) assert.is(e.tools, null, 'Gemini CLI names no tools in its chat or hook payloads');
  } finally {
    server.kill();
    await stub.close();
    repo.cleanup();
  }
});

test.run();
