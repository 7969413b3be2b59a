// End to end with the real GitHub Copilot CLI (@github/copilot, pinned in support/agent-clis.ts) under
// `agentsnap wrap` and with `init` hooks, driven offline (COPILOT_OFFLINE, a custom OpenAI-type provider) by a
// scripted stand-in of the OpenAI Chat Completions API (support/openai-stub.ts): its real tools run in the
// repository and fire its real hooks. Three agent runs: wrap --mcp, a resume of the forked conversation, init.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { agentsnapOnPath, cliProcess, tempRepo, treeFiles, type TempRepo } from '../support/helpers.js';
import type { ScriptedTurn } from '../support/model-stubs.js';
import { startChatCompletionsStub } from '../support/openai-stub.js';
import { copilotBinary, copilotPackageCache } from '../support/agent-clis.js';
import { loadSession } from '../../src/session/session.js';
import { openRepo } from '../../src/git/repo.js';

let copilot: string | null = null;
try {
  copilot = copilotBinary();
  if (!copilot) console.log('copilot-e2e: skipped (AGENTSNAP_E2E_COPILOT=skip)');
} catch (e) {
  console.log(`copilot-e2e: skipped: ${(e as Error).message}`);
}

const MODEL = 'gpt-4.1';

/** Copilot CLI offline against the stub; its unpacked program shared by every test home. */
function copilotEnv(url: string): Record<string, string> {
  return {
    COPILOT_OFFLINE: 'true',
    COPILOT_PROVIDER_BASE_URL: url,
    COPILOT_PROVIDER_TYPE: 'openai',
    COPILOT_PROVIDER_API_KEY: 'sk-e2e-test-key-not-real',
    COPILOT_MODEL: MODEL,
    COPILOT_PKG_CACHE_HOME: copilotPackageCache(),
  };
}
const PROMPT_ARGS = ['-p', 'Make the changes.', '--allow-all-tools', '--no-auto-update'];

/** Runs a program without blocking this process (the stub answers from it), bounded in time. */
function run(
  program: string,
  args: string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'], timeout: 240_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The names of the agentsnap MCP tools the model was offered. */
function agentsnapTools(toolsOffered: string[][]): string {
  return (
    [...new Set(toolsOffered.flat().filter((n) => /agentsnap/.test(n)))].sort().join(' ') || `none in: ${JSON.stringify(toolsOffered[0])}`
  );
}

function filesOf(repo: TempRepo, commit: string): Record<string, string> {
  return Object.fromEntries([...treeFiles(repo, commit)].map(([p, v]) => [p, v.content.toString()]));
}

function worktreeFiles(repo: TempRepo): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of fs.readdirSync(repo.dir)) {
    if (name === '.git' || name === '.github') continue;
    out[name] = fs.readFileSync(path.join(repo.dir, name), 'utf8');
  }
  return out;
}

/** Every file under `dir`, by its path there, with its bytes. */
function filesUnder(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out[path.relative(dir, p)] = fs.readFileSync(p, 'latin1');
    }
  };
  walk(dir);
  return out;
}

test('copilot under wrap --mcp: hooks as a run-only plugin (no trust asked, ~/.copilot byte for byte), one step per call (write, shell, failing shell closed as failed), agentsnap mcp offered, undo of the shell call and of the write, undo --chat and copilot --resume', async () => {
  if (!copilot) return;
  const repo = tempRepo({ files: { 'a.txt': 'one\n', 'gone.txt': 'bye\n' } });
  // The user's own Copilot files: its config (which trusts no folder), settings, a user hook of theirs.
  const home = path.join(repo.home, '.copilot');
  fs.mkdirSync(path.join(home, 'hooks'), { recursive: true });
  fs.writeFileSync(
    path.join(home, 'config.json'),
    '// User settings belong in settings.json.\n// This file is managed automatically.\n{\n  "firstLaunchAt": "2026-12-01T10:00:00.000Z",\n  "trustedFolders": []\n}\n',
  );
  fs.writeFileSync(path.join(home, 'settings.json'), '{\n  "theme": "dark"\n}\n');
  fs.writeFileSync(path.join(home, 'hooks', 'mine.json'), '{"version": 1, "hooks": {}}\n');
  const userFiles = filesUnder(home);
  const script: ScriptedTurn[] = [
    { text: 'Creating hello.txt.', tools: [{ name: 'create', input: { path: path.join(repo.dir, 'hello.txt'), file_text: 'hello\n' } }] },
    { tools: [{ name: 'bash', input: { command: 'rm gone.txt && echo two > a.txt', description: 'change files' } }] },
    { tools: [{ name: 'bash', input: { command: 'echo partial > fail.txt; exit 3', description: 'fail' } }] },
    { text: 'All done.' },
  ];
  const start = { 'a.txt': 'one\n', 'gone.txt': 'bye\n' };
  const after1 = { ...start, 'hello.txt': 'hello\n' };
  const after2 = { 'a.txt': 'two\n', 'hello.txt': 'hello\n' };
  const after3 = { ...after2, 'fail.txt': 'partial\n' };
  const stub = await startChatCompletionsStub(script, MODEL);
  try {
    const res = await cliProcess(repo, ['wrap', '--mcp', '--', copilot, ...PROMPT_ARGS], { env: copilotEnv(stub.url), timeoutMs: 240_000 });
    assert.is(res.code, 0, res.stderr + res.stdout);
    assert.match(res.stdout, 'All done.');
    assert.not.match(res.stderr, 'agentsnap: warning');
    const id = /started session (\S+)/.exec(res.stderr)?.[1] as string;
    assert.ok(id, res.stderr);
    const s = loadSession(await openRepo(repo.dir, { env: repo.env }), id);
    assert.is(s.agent, 'copilot');
    assert.equal(
      s.steps.map((st) => [st.tool, st.status]),
      [
        ['create', 'done'],
        ['bash', 'done'],
        ['bash', 'failed'],
      ],
    );
    assert.equal(
      s.steps.map((st) => st.input),
      stub.calls.map((c) => c.input),
    );
    assert.is(s.steps[2]?.error, 'Exit code 3');
    [after1, after2, after3].forEach((files, i) =>
      assert.equal(filesOf(repo, s.steps[i]?.post as string), files, `files after step ${i + 1}`),
    );
    assert.equal(filesOf(repo, s.steps[0]?.pre as string), start);
    assert.match(String(s.steps[0]?.agentVersion), 'copilot-cli 1.0.102');
    // agentsnap's MCP server was offered to the model for this run.
    assert.match(
      agentsnapTools(stub.toolsOffered),
      'agentsnap-list_steps agentsnap-redo agentsnap-restore_file agentsnap-search_history agentsnap-show_step agentsnap-undo',
    );
    // `log`: the agent's tool names and what each call was (its file, its command).
    const log = await cliProcess(repo, ['log']);
    assert.is(log.code, 0, log.stderr);
    assert.match(log.stdout, 'hello.txt');
    assert.match(log.stdout, 'rm gone.txt && echo two > a.txt');
    assert.match(log.stdout, 'echo partial > fail.txt; exit 3');
    // The injection was for the run only: the user's Copilot files byte for byte, no plugin data folder left,
    // nothing in the project, the run's plugin and state gone.
    const now = filesUnder(home);
    for (const [file, bytes] of Object.entries(userFiles)) assert.is(now[file], bytes, `~/.copilot/${file}`);
    assert.not.ok(fs.existsSync(path.join(home, 'plugin-data')), 'the plugin data folder Copilot made for the run is gone');
    assert.not.ok(fs.existsSync(path.join(repo.dir, '.github')));
    assert.equal(
      fs.readdirSync(path.join(repo.dir, '.git', 'agentsnap', 'sessions', id)).filter((n) => n.startsWith('copilot-')),
      [],
    );
    // Undo the shell call (step 2): a.txt and gone.txt back, hello.txt kept; then undo the write: hello.txt gone.
    let u = await cliProcess(repo, ['undo', '2']);
    assert.is(u.code, 0, u.stderr);
    assert.equal(worktreeFiles(repo), after1);
    u = await cliProcess(repo, ['undo', '1']);
    assert.is(u.code, 0, u.stderr);
    assert.equal(worktreeFiles(repo), start);
    // undo 3 --chat: the session forked before call 3 (the original untouched); `copilot --resume=<id>` sends the
    // model calls 1 and 2 and their results, not call 3.
    const chatFile = s.steps[0]?.transcript?.path as string;
    assert.is(chatFile, path.join(home, 'session-state', path.basename(path.dirname(chatFile)), 'events.jsonl'));
    const chatBytes = fs.readFileSync(chatFile);
    const r = await cliProcess(repo, ['undo', '3', '--chat', '--json']);
    assert.is(r.code, 0, r.stderr);
    const chat = (JSON.parse(r.stdout) as { chat: { kind: string; file: string; sessionId: string; cwd: string; resumeCommand: string } })
      .chat;
    assert.is(chat.kind, 'transcript', r.stdout);
    assert.is(chat.resumeCommand, `copilot --resume=${chat.sessionId}`);
    assert.is(chat.cwd, repo.dir);
    assert.is(path.dirname(path.dirname(chat.file)), path.dirname(path.dirname(chatFile)));
    assert.equal(fs.readFileSync(chatFile), chatBytes, 'the original conversation is unchanged');
    const resumed = await startChatCompletionsStub(
      [{ text: 'Resumed.' }, { text: 'Resumed.' }, { text: 'Resumed.' }, { text: 'Resumed.' }],
      MODEL,
    );
    try {
      const c = await run(copilot, [`--resume=${chat.sessionId}`, '-p', 'Where are we?', '--allow-all-tools', '--no-auto-update'], {
        cwd: repo.dir,
        env: { ...repo.env, ...copilotEnv(resumed.url) },
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
    // undo 3 --compact: before call 3 one digest message, call 3 and the rest kept (its resume was checked on the binary).
    const k = await cliProcess(repo, ['undo', '3', '--compact', '--json']);
    assert.is(k.code, 0, k.stderr);
    const compact = (JSON.parse(k.stdout) as { chat: { file: string; resumeCommand: string } }).chat;
    const kept = fs
      .readFileSync(compact.file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; data: { content?: string; toolRequests?: { toolCallId: string }[] } });
    assert.equal(
      kept.slice(0, 2).map((e) => e.type),
      ['session.start', 'user.message'],
    );
    assert.match(String(kept[1]?.data.content), 'digest');
    assert.equal(
      kept.flatMap((e) => (e.type === 'assistant.message' ? (e.data.toolRequests ?? []) : []).map((t) => t.toolCallId)),
      [stub.calls[2]?.id],
    );
    assert.equal(fs.readFileSync(chatFile), chatBytes, 'the original conversation is still unchanged');
  } finally {
    await stub.close();
    repo.cleanup();
  }
});

test('copilot with init hooks (and --mcp) in a folder trusted for one run, no wrapper: its calls become a session (a failing shell call failed), agentsnap mcp is offered; init --remove leaves the project as it was', async () => {
  if (!copilot) return;
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  const exclude = path.join(repo.dir, '.git', 'info', 'exclude');
  const excludeBefore = fs.existsSync(exclude) ? fs.readFileSync(exclude, 'utf8') : null;
  const stub = await startChatCompletionsStub(
    [
      { tools: [{ name: 'create', input: { path: path.join(repo.dir, 'hello.txt'), file_text: 'hello\n' } }] },
      { tools: [{ name: 'bash', input: { command: 'echo x > b.txt; exit 4', description: 'fail' } }] },
      { text: 'All done.' },
    ],
    MODEL,
  );
  try {
    const pathWithAgentsnap = agentsnapOnPath(repo.base);
    const init = await cliProcess(repo, ['init', 'copilot', '--mcp'], { env: { PATH: pathWithAgentsnap } });
    assert.is(init.code, 0, init.stderr);
    assert.match(init.stdout + init.stderr, /trust/, 'init says what the user has to trust');
    const written = JSON.parse(fs.readFileSync(path.join(repo.dir, '.github', 'hooks', 'agentsnap.json'), 'utf8')) as {
      hooks: Record<string, unknown>;
    };
    assert.equal(Object.keys(written.hooks).sort(), ['PostToolUse', 'PostToolUseFailure', 'PreToolUse', 'SessionEnd']);
    assert.ok(
      (JSON.parse(fs.readFileSync(path.join(repo.dir, '.github', 'mcp.json'), 'utf8')) as { mcpServers: Record<string, unknown> })
        .mcpServers.agentsnap,
    );
    // Project hooks and MCP servers run only in a trusted folder: trusted for this one prompt (nothing saved).
    const r = await run(copilot, ['--trust-folder', ...PROMPT_ARGS], {
      cwd: repo.dir,
      env: { ...repo.env, ...copilotEnv(stub.url), PATH: pathWithAgentsnap },
    });
    assert.is(r.code, 0, r.stderr + r.stdout);
    assert.match(
      agentsnapTools(stub.toolsOffered),
      'agentsnap-list_steps agentsnap-redo agentsnap-restore_file agentsnap-search_history agentsnap-show_step agentsnap-undo',
    );
    const list = JSON.parse((await cliProcess(repo, ['sessions', '--json'])).stdout) as { id: string; agent: string; steps: number }[];
    assert.equal(
      list.map((x) => [x.agent, x.steps]),
      [['copilot', 2]],
    );
    const s = loadSession(await openRepo(repo.dir, { env: repo.env }), list[0]?.id as string);
    // Claude's tool names: what Copilot sends hooks in Claude's format.
    assert.equal(
      s.steps.map((st) => [st.tool, st.status]),
      [
        ['Write', 'done'],
        ['Bash', 'failed'],
      ],
    );
    assert.is(s.steps[1]?.error, 'Exit code 4');
    assert.is(
      repo.git(['status', '--porcelain']),
      '?? b.txt\n?? hello.txt\n',
      '.github/hooks/agentsnap.json and .github/mcp.json are kept out of commits',
    );
    const remove = await cliProcess(repo, ['init', 'copilot', '--remove'], { env: { PATH: pathWithAgentsnap } });
    assert.is(remove.code, 0, remove.stderr);
    assert.not.ok(fs.existsSync(path.join(repo.dir, '.github')), 'the hook and MCP files were only ours');
    assert.is(fs.existsSync(exclude) ? fs.readFileSync(exclude, 'utf8') : null, excludeBefore);
  } finally {
    await stub.close();
    repo.cleanup();
  }
});

test.run();
