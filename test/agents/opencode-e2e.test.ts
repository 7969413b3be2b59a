// End to end with the real OpenCode (opencode-ai, pinned in support/agent-clis.ts) under `agentsnap wrap` and with
// `init`'s plugin, driven offline by a scripted stand-in of the OpenAI Chat Completions API (support/openai-stub.ts):
// its real tools run in the repository and its real plugin hooks fire. OpenCode is slow to start (an npm install of
// @opencode-ai/plugin into each config folder it uses), so this file makes three runs only: a wrapped one (write,
// shell, failing shell, a tool that throws, --mcp), the resume of the session `undo 3 --chat` forked from it (two
// turns), then one resuming the original conversation with init's plugin (and --mcp); the user config
// folder's install is cached between test runs (opencodeConfigCache).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { agentsnapOnPath, cliProcess, tempRepo, treeFiles, type TempRepo } from '../support/helpers.js';
import type { ScriptStep } from '../support/model-stubs.js';
import { startChatCompletionsStub } from '../support/openai-stub.js';
import { opencodeBinary, opencodeConfigCache } from '../support/agent-clis.js';
import { loadSession } from '../../src/session/session.js';
import { openRepo } from '../../src/git/repo.js';

let opencode: string | null = null;
try {
  opencode = opencodeBinary();
  if (!opencode) console.log('opencode-e2e: skipped (AGENTSNAP_E2E_OPENCODE=skip)');
} catch (e) {
  console.log(`opencode-e2e: skipped: ${(e as Error).message}`);
}

/**
 * OpenCode offline: no model list fetch, no update check; npm (its plugin install) prefers its cache, kept between
 * test runs. (OpenCode takes its project directory from $PWD: a run without wrap, which sets it, gets it here.)
 */
const OPENCODE_ENV = {
  OPENCODE_DISABLE_MODELS_FETCH: '1',
  OPENCODE_DISABLE_AUTOUPDATE: '1',
  NPM_CONFIG_PREFER_OFFLINE: 'true',
  NPM_CONFIG_CACHE: path.join(opencodeConfigCache(), 'npm'),
};

/**
 * The user's OpenCode config: the stand-in as its provider (a file the injection must leave byte for byte). With the
 * "$schema" OpenCode stamps into a config it loads without one (its own doing, wrapped or not).
 */
function userConfig(url: string): string {
  return `${JSON.stringify(
    {
      $schema: 'https://opencode.ai/config.json',
      provider: {
        standin: {
          npm: '@ai-sdk/openai-compatible',
          name: 'stand-in',
          options: { baseURL: url, apiKey: 'sk-e2e-test-key-not-real' },
          models: { 'test-model': { name: 'Test model', tool_call: true } },
        },
      },
      model: 'standin/test-model',
      small_model: 'standin/test-model',
      autoupdate: false,
      share: 'disabled',
    },
    null,
    2,
  )}\n`;
}

/** What OpenCode's own install put into a config folder (everything but the config). */
const INSTALL = ['package.json', 'package-lock.json', 'bun.lock', 'node_modules', '.gitignore'];

function copyInstall(from: string, to: string): void {
  for (const name of INSTALL)
    if (fs.existsSync(path.join(from, name)))
      fs.cpSync(path.join(from, name), path.join(to, name), { recursive: true, verbatimSymlinks: true });
}

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

function filesOf(repo: TempRepo, commit: string): Record<string, string> {
  return Object.fromEntries([...treeFiles(repo, commit)].map(([p, v]) => [p, v.content.toString()]));
}

/** Every file of the worktree (not .git), with its bytes. */
function worktreeBytes(dir: string, under = ''): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of fs.readdirSync(path.join(dir, under), { withFileTypes: true })) {
    const rel = path.join(under, e.name);
    if (rel === '.git') continue;
    if (e.isDirectory()) Object.assign(out, worktreeBytes(dir, rel));
    else out[rel] = fs.readFileSync(path.join(dir, rel), 'latin1');
  }
  return out;
}

/** The agentsnap MCP tools the model was offered (OpenCode names them <server>_<tool>). */
function mcpToolsOffered(offered: string[][]): string[] {
  return [...new Set(offered.flat().filter((n) => n.startsWith('agentsnap_')))].sort();
}

/** What the forked conversation is resumed with. */
const FORK_PROMPT = 'Go on from the fork.';

/** `opencode export <id>`: the session as OpenCode prints it. */
async function exportSession(program: string, id: string, cwd: string, env: NodeJS.ProcessEnv): Promise<unknown> {
  const r = await run(program, ['export', id], { cwd, env });
  assert.is(r.code, 0, r.stderr);
  return JSON.parse(r.stdout);
}

test('opencode: wrap (plugin for the run only; write, shell and failing shell as steps; --mcp), undo of the shell call and of the write, --chat forks the session (its printed resume command sends the model only the turns before the step; the original unchanged); then init --mcp, a resumed session recorded by the plugin, and init --remove leaving the project byte for byte', async () => {
  if (!opencode) return;
  const started = Date.now();
  const repo = tempRepo({ files: { 'base.txt': 'base\n', 'keep.txt': 'keep\n' } });
  const script: ScriptStep[] = [
    { text: 'Writing a.txt.', tools: [{ name: 'write', input: { filePath: path.join(repo.dir, 'a.txt'), content: 'alpha\n' } }] },
    {
      tools: [{ name: 'bash', input: { command: "mkdir -p d && printf 'beta\\n' > d/b.txt && rm base.txt", description: 'change files' } }],
    },
    // The third model turn: in the original run the failing shell call; in the fork made before step 3 (two turns
    // kept), the answer to its resume prompt.
    (body) =>
      JSON.stringify((body.messages as unknown[] | undefined)?.at(-1) ?? '').includes(FORK_PROMPT)
        ? { text: 'Forked and done.' }
        : { tools: [{ name: 'bash', input: { command: "printf 'gamma\\n' > c.txt; exit 3", description: 'fail' } }] },
    // A tool that throws: OpenCode calls no after hook for it.
    { tools: [{ name: 'edit', input: { filePath: path.join(repo.dir, 'a.txt'), oldString: 'not in the file', newString: 'x' } }] },
    { text: 'All done.' },
    // The resumed session (its conversation holds the five turns above).
    { tools: [{ name: 'write', input: { filePath: path.join(repo.dir, 'e.txt'), content: 'echo\n' } }] },
    { text: 'Resumed and done.' },
  ];
  const stub = await startChatCompletionsStub(script);
  const configDir = path.join(repo.home, '.config', 'opencode');
  const cache = opencodeConfigCache();
  try {
    fs.mkdirSync(configDir, { recursive: true });
    const config = userConfig(stub.url);
    fs.writeFileSync(path.join(configDir, 'opencode.json'), config);
    if (fs.existsSync(path.join(cache, 'node_modules'))) copyInstall(cache, configDir);
    const env = { ...OPENCODE_ENV, AGENTSNAP_SERVER: 'on' }; // the plugin's calls go through the wrapper's server

    // 1. wrap --mcp: one step per call, the failing one closed as failed.
    const start = { 'base.txt': 'base\n', 'keep.txt': 'keep\n' };
    const after1 = { ...start, 'a.txt': 'alpha\n' };
    const after2 = { 'a.txt': 'alpha\n', 'd/b.txt': 'beta\n', 'keep.txt': 'keep\n' };
    const after3 = { ...after2, 'c.txt': 'gamma\n' };
    const res = await cliProcess(repo, ['wrap', '--mcp', '--', opencode, 'run', '--auto', '--format', 'json', 'Make the changes.'], {
      env,
      timeoutMs: 240_000,
    });
    assert.is(res.code, 0, res.stderr + res.stdout);
    assert.match(res.stdout, 'All done.');
    assert.not.match(res.stderr, 'agentsnap: warning');
    if (!fs.existsSync(path.join(cache, 'node_modules')) && fs.existsSync(path.join(configDir, 'node_modules'))) {
      fs.mkdirSync(cache, { recursive: true });
      copyInstall(configDir, cache);
    }
    const id = /started session (\S+)/.exec(res.stderr)?.[1] as string;
    assert.ok(id, res.stderr);
    const s = loadSession(await openRepo(repo.dir, { env: repo.env }), id);
    assert.is(s.agent, 'opencode');
    assert.equal(
      s.steps.map((st) => [st.tool, st.status, st.toolUseId]),
      [
        ['write', 'done', stub.calls[0]?.id],
        ['bash', 'done', stub.calls[1]?.id],
        ['bash', 'failed', stub.calls[2]?.id],
        ['edit', 'failed', stub.calls[3]?.id],
      ],
      JSON.stringify(s.steps.map((st) => [st.error, st.output])),
    );
    assert.equal(
      s.steps.map((st) => st.input),
      stub.calls.slice(0, 4).map((c) => c.input),
    );
    assert.match(String(s.steps[2]?.error), 'exit code 3');
    assert.match(String(s.steps[3]?.error), 'Could not find oldString');
    assert.equal(filesOf(repo, s.steps[3]?.post as string), after3);
    [after1, after2, after3].forEach((files, i) =>
      assert.equal(filesOf(repo, s.steps[i]?.post as string), files, `files after step ${i + 1}`),
    );
    assert.equal(filesOf(repo, s.steps[0]?.pre as string), start);
    const log = await cliProcess(repo, ['log']);
    assert.is(log.code, 0, log.stderr);
    assert.match(log.stdout, 'a.txt');
    assert.match(log.stdout, "mkdir -p d && printf 'beta\\n' > d/b.txt && rm base.txt");
    assert.match(log.stdout, "printf 'gamma\\n' > c.txt; exit 3");
    // --mcp: agentsnap's MCP tools were offered to the model, for this run only.
    const mcpTools = mcpToolsOffered(stub.toolsOffered);
    assert.ok(
      mcpTools.includes('agentsnap_undo') && mcpTools.includes('agentsnap_list_steps'),
      `MCP tools offered: ${mcpTools.join(' ') || stub.toolsOffered[0]?.join(' ')}`,
    );
    // The injection was for the run only: the user's config byte for byte, nothing of agentsnap's in its folder, no
    // .opencode/ in the project, the run's plugin file gone.
    assert.is(fs.readFileSync(path.join(configDir, 'opencode.json'), 'utf8'), config);
    assert.not.ok(fs.readdirSync(configDir).some((n) => /agentsnap/.test(n)));
    assert.not.ok(fs.existsSync(path.join(repo.dir, '.opencode')));
    assert.equal(
      fs.readdirSync(path.join(repo.dir, '.git', 'agentsnap', 'sessions', id)).filter((n) => n.startsWith('opencode-')),
      [],
      'the run plugin and state are gone',
    );

    // Undo the shell call (step 2): base.txt back, d/ and c.txt gone, a.txt kept; then undo the write.
    let u = await cliProcess(repo, ['undo', '2']);
    assert.is(u.code, 0, u.stderr);
    assert.equal(worktreeBytes(repo.dir), after1);
    u = await cliProcess(repo, ['undo', '1']);
    assert.is(u.code, 0, u.stderr);
    assert.equal(worktreeBytes(repo.dir), start);
    // undo 3 --chat: a new OpenCode session (export, ids renewed, import) holding the turns before step 3; its
    // printed resume command, run as is, continues from there; the original session is unchanged.
    const agentSession = /"sessionID":"(ses_[^"]+)"/.exec(res.stdout)?.[1] as string;
    assert.ok(agentSession, res.stdout);
    const withOpencode = { ...OPENCODE_ENV, PATH: `${path.dirname(opencode)}:${repo.env.PATH ?? process.env.PATH}` };
    const opencodeEnv = { ...repo.env, ...withOpencode, PWD: repo.dir };
    const originalExport = await exportSession(opencode, agentSession, repo.dir, opencodeEnv);
    const chat = await cliProcess(repo, ['undo', '3', '--chat', '--json'], { env: withOpencode, timeoutMs: 240_000 });
    assert.is(chat.code, 0, chat.stderr);
    const fork = (
      JSON.parse(chat.stdout) as { chat: { kind: string; agent: string; sessionId: string; shellCommand: string; reason?: string } }
    ).chat;
    assert.is(fork.kind, 'transcript', chat.stdout);
    assert.is(fork.agent, 'opencode');
    assert.match(fork.sessionId, /^ses_/);
    assert.is.not(fork.sessionId, agentSession);
    assert.ok(fork.shellCommand.endsWith(`&& opencode run --session ${fork.sessionId}`), fork.shellCommand);
    const requestsBefore = stub.requests.length;
    const f = await run('/bin/sh', ['-c', `${fork.shellCommand} --auto '${FORK_PROMPT}'`], { cwd: repo.base, env: opencodeEnv });
    assert.is(f.code, 0, f.stderr + f.stdout);
    assert.match(f.stdout, 'Forked and done.');
    const forkRequest = stub.requests[requestsBefore] as {
      messages?: { role?: string; content?: unknown; tool_calls?: { id: string }[] }[];
    };
    assert.equal(
      (forkRequest.messages ?? []).flatMap((m) => (m.tool_calls ?? []).map((t) => t.id)),
      stub.calls.slice(0, 2).map((c) => c.id),
      'the fork holds the calls of steps 1 and 2 only',
    );
    const sent = JSON.stringify(forkRequest.messages);
    assert.ok(sent.includes('Make the changes.') && sent.includes(FORK_PROMPT) && !sent.includes('All done.'), sent);
    assert.equal(await exportSession(opencode, agentSession, repo.dir, opencodeEnv), originalExport, 'the original session is unchanged');

    // 2. init --mcp, with a file of the user's already in .opencode/; OpenCode resumes the wrapped conversation
    // (`run --session <id>`) with no wrapper: init's plugin records its call.
    fs.mkdirSync(path.join(repo.dir, '.opencode', 'commands'), { recursive: true });
    fs.writeFileSync(path.join(repo.dir, '.opencode', 'commands', 'hello.md'), 'Say hello.\n');
    const beforeInit = worktreeBytes(repo.dir);
    const exclude = path.join(repo.dir, '.git', 'info', 'exclude');
    const excludeBefore = fs.readFileSync(exclude, 'utf8');
    const pathWithAgentsnap = agentsnapOnPath(repo.base);
    const init = await cliProcess(repo, ['init', 'opencode', '--mcp'], { env: { PATH: pathWithAgentsnap } });
    assert.is(init.code, 0, init.stderr);
    assert.match(
      fs.readFileSync(path.join(repo.dir, '.opencode', 'plugins', 'agentsnap.js'), 'utf8'),
      'agentsnap-hook opencode PreToolUse',
    );
    const offeredBefore = stub.toolsOffered.length;
    const r = await run(opencode, ['run', '--auto', '--session', agentSession, 'Go on.'], {
      cwd: repo.dir,
      env: { ...repo.env, ...OPENCODE_ENV, PATH: pathWithAgentsnap, PWD: repo.dir },
    });
    assert.is(r.code, 0, r.stderr + r.stdout);
    assert.match(r.stdout, 'Resumed and done.');
    // Resumed: the model was sent the earlier calls of that conversation.
    const resumed = stub.requests[offeredBefore] as { messages?: { tool_calls?: { id: string }[] }[] };
    assert.equal(
      (resumed.messages ?? []).flatMap((m) => (m.tool_calls ?? []).map((t) => t.id)),
      stub.calls.slice(0, 4).map((c) => c.id),
    );
    assert.ok(
      mcpToolsOffered(stub.toolsOffered.slice(offeredBefore)).includes('agentsnap_undo'),
      'init --mcp: .opencode/opencode.json declares agentsnap mcp',
    );
    const list = JSON.parse((await cliProcess(repo, ['sessions', '--json'])).stdout) as { id: string; agent: string; steps: number }[];
    const own = list.filter((x) => x.id !== id);
    assert.equal(
      own.map((x) => [x.agent, x.steps]),
      [['opencode', 1]],
    );
    const s2 = loadSession(await openRepo(repo.dir, { env: repo.env }), own[0]?.id as string);
    assert.equal(
      s2.steps.map((st) => [st.tool, st.status, st.toolUseId]),
      [['write', 'done', stub.calls[4]?.id]],
    );
    // OpenCode's install into .opencode/ and init's plugin are kept out of commits; the user's file is not.
    assert.is(repo.git(['status', '--porcelain', '-uall']), '?? .opencode/commands/hello.md\n?? e.txt\n');
    // init --remove: the project as it was before init (with the agent's e.txt), info/exclude byte for byte.
    const remove = await cliProcess(repo, ['init', 'opencode', '--remove'], { env: { PATH: pathWithAgentsnap } });
    assert.is(remove.code, 0, remove.stderr);
    assert.equal(worktreeBytes(repo.dir), { ...beforeInit, 'e.txt': 'echo\n' });
    assert.is(fs.readFileSync(exclude, 'utf8'), excludeBefore);
    assert.is(fs.readFileSync(path.join(configDir, 'opencode.json'), 'utf8'), config);
    console.log(`opencode-e2e: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  } finally {
    await stub.close();
    repo.cleanup();
  }
});

test.run();
