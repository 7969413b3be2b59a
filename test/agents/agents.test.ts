// Codex CLI and Gemini CLI support without their binaries: hook payloads in
// the exact shape each emits (Codex 0.171.0: codex-rs/hooks/src/schema.rs
// PreToolUseCommandInput/PostToolUseCommandInput, as observed in
// agents-e2e.test.ts; Gemini CLI 0.61.0: packages/core hookEventHandler
// createBaseInput + fireBeforeToolEvent/fireAfterToolEvent), the Gemini
// overlay home, init for both, and `wrap --auto`.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { agentsnapOnPath, cli, cliProcess, tempRepo, treeFiles, type TempRepo } from '../support/helpers.js';
import { loadSession } from '../../src/session/session.js';
import { openRepo } from '../../src/git/repo.js';
import { codexArgv } from '../../src/runtime/wrap.js';
import { createGeminiOverlay } from '../../src/agents/gemini.js';
import { parseJsonc } from '../../src/agents/settings-file.js';

async function startSession(repo: TempRepo): Promise<string> {
  const res = await cli(repo, ['snap', '--json']);
  assert.is(res.code, 0, res.stderr);
  return (JSON.parse(res.stdout) as { session: string }).session;
}

function hook(repo: TempRepo, agent: string, event: string, payload: unknown, args: string[], env: Record<string, string> = {}) {
  return cliProcess(repo, ['hook', agent, event, '--wrapped', ...args], { env, input: JSON.stringify(payload) });
}

function filesOf(repo: TempRepo, commit: string): Record<string, string> {
  return Object.fromEntries([...treeFiles(repo, commit)].map(([p, v]) => [p, v.content.toString()]));
}

async function session(repo: TempRepo, id: string) {
  return loadSession(await openRepo(repo.dir, { env: repo.env }), id);
}

test('codex hooks: PreToolUse/PostToolUse payloads become a step; a failing command is read from the rollout file', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const id = await startSession(repo);
    const env = { AGENTSNAP_SESSION: id, AGENTSNAP_WORKTREE: repo.dir };
    const rollout = path.join(repo.home, '.codex', 'sessions', 'rollout.jsonl');
    fs.mkdirSync(path.dirname(rollout), { recursive: true });
    fs.writeFileSync(rollout, `${JSON.stringify({ type: 'session_meta', payload: { cli_version: '0.171.0' } })}\n`);
    const common = {
      session_id: '01a22783-1e9a-7693-9ffc-21cbab0f7efe',
      turn_id: '01a22783-1eb1-71f0-8600-dfaa5268a722',
      transcript_path: rollout,
      cwd: repo.dir,
      model: 'gpt-5',
      permission_mode: 'bypassPermissions',
      tool_name: 'Bash',
      tool_input: { command: 'echo x > fail.txt; exit 3' },
      tool_use_id: 'call_2_0',
    };
    const pre = await hook(repo, 'codex', 'PreToolUse', { ...common, hook_event_name: 'PreToolUse' }, [], env);
    assert.is(pre.code, 0, pre.stderr);
    assert.is(pre.stdout + pre.stderr, '');
    repo.write('fail.txt', 'x\n');
    // What Codex has written to the rollout by the time PostToolUse fires.
    const completed = {
      type: 'event_msg',
      payload: { type: 'item_completed', item: { type: 'CommandExecution', id: 'call_2_0', status: 'failed', exit_code: 3 } },
    };
    fs.appendFileSync(rollout, `${JSON.stringify(completed)}\n`);
    const post = await hook(repo, 'codex', 'PostToolUse', { ...common, hook_event_name: 'PostToolUse', tool_response: '' }, [], env);
    assert.is(post.code, 0, post.stderr);
    assert.is(post.stdout + post.stderr, '');
    const steps = (await session(repo, id)).steps.filter((st) => st.kind !== 'checkpoint');
    assert.is(steps.length, 1);
    const st = steps[0];
    assert.is(st?.tool, 'Bash');
    assert.is(st?.toolUseId, 'call_2_0');
    assert.is(st?.status, 'failed');
    assert.is(st?.error, 'Exit code 3');
    assert.is(st?.model, 'gpt-5');
    assert.is(st?.transcript?.path, rollout);
    assert.equal(filesOf(repo, st?.post as string), { 'a.txt': 'one\n', 'fail.txt': 'x\n' });
  } finally {
    repo.cleanup();
  }
});

test('gemini hooks: calls without ids pair by name and input, also when they overlap; the session can come on the command line', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const id = await startSession(repo);
    // No AGENTSNAP_* in the environment (Gemini CLI can sanitize it): --session/--worktree name the session.
    const args = ['--session', id, '--worktree', repo.dir];
    const base = {
      session_id: 'f1087e6b-491c-4183-85d6-a631e995d7ed',
      transcript_path: '',
      cwd: repo.dir,
      timestamp: '2026-11-29T13:35:58.623Z',
    };
    const write = { tool_name: 'write_file', tool_input: { file_path: 'hello.txt', content: 'hi\n' } };
    const shell = { tool_name: 'run_shell_command', tool_input: { command: 'echo x > fail.txt; exit 1' } };
    for (const call of [write, shell]) {
      const r = await hook(repo, 'gemini', 'BeforeTool', { ...base, hook_event_name: 'BeforeTool', ...call }, args);
      assert.is(r.code, 0, r.stderr);
      assert.is(r.stdout + r.stderr, '');
    }
    repo.write('hello.txt', 'hi\n');
    repo.write('fail.txt', 'x\n');
    const shellOut = {
      llmContent: '<untrusted_context>\nOutput: (empty)\nExit Code: 1\nProcess Group PGID: 19616\n</untrusted_context>',
      returnDisplay: 'Command exited with code: 1',
    };
    const writeOut = {
      llmContent: 'Successfully created and wrote to new file: hello.txt.',
      returnDisplay: { fileName: 'hello.txt', isNewFile: true },
    };
    // Ends in the other order.
    assert.is(
      (await hook(repo, 'gemini', 'AfterTool', { ...base, hook_event_name: 'AfterTool', ...shell, tool_response: shellOut }, args)).code,
      0,
    );
    assert.is(
      (await hook(repo, 'gemini', 'AfterTool', { ...base, hook_event_name: 'AfterTool', ...write, tool_response: writeOut }, args)).code,
      0,
    );
    const steps = (await session(repo, id)).steps.filter((st) => st.kind !== 'checkpoint');
    assert.equal(
      steps.map((st) => [st.tool, st.status, st.error]),
      [
        ['write_file', 'done', null],
        ['run_shell_command', 'failed', 'Exit code 1'],
      ],
    );
    assert.ok(steps[0]?.toolUseId?.startsWith('agentsnap:'));
    assert.is.not(steps[0]?.toolUseId, steps[1]?.toolUseId);
    assert.equal(steps[0]?.input, write.tool_input);
  } finally {
    repo.cleanup();
  }
});

test('codexArgv puts the -c overrides right after the codex word, also through a runner', () => {
  const plain = codexArgv(['codex', 'exec', 'do it']);
  assert.is(plain[0], 'codex');
  assert.is(plain[1], '-c');
  assert.match(
    plain[2] as string,
    /^hooks\.PreToolUse=\[\{matcher="\*",hooks=\[\{type="command",command=".* hook codex PreToolUse --wrapped"\}\]\}\]$/,
  );
  assert.match(
    plain[6] as string,
    /^hooks\.state=\{"\/<session-flags>\/config\.toml:pre_tool_use:0:0"=\{trusted_hash="sha256:[0-9a-f]{64}"\},/,
  );
  assert.equal(plain.slice(-2), ['exec', 'do it']);
  const viaNpx = codexArgv(['npx', '@openai/codex', 'exec', 'x']);
  assert.equal(viaNpx.slice(0, 3), ['npx', '@openai/codex', '-c']);
});

test("gemini overlay: the user settings plus our hooks for the run; afterwards new and replaced files move back and settings changes keep the user's part", () => {
  const repo = tempRepo();
  try {
    const home = path.join(repo.base, 'realhome');
    const real = path.join(home, '.gemini');
    fs.mkdirSync(path.join(real, 'tmp', 'proj', 'chats'), { recursive: true });
    const settings = '{\n  // mine\n  "ui": { "theme": "dark" },\n}\n';
    fs.writeFileSync(path.join(real, 'settings.json'), settings);
    fs.writeFileSync(path.join(real, 'trustedFolders.json'), '{"old":true}\n');
    const sessionDir = path.join(repo.base, 'session');
    fs.mkdirSync(sessionDir);
    const hooks = {
      BeforeTool: [{ matcher: '*', hooks: [{ type: 'command', command: 'node agentsnap.js hook gemini BeforeTool --wrapped' }] }],
    };
    const overlay = createGeminiOverlay({ dir: path.join(sessionDir, 'gemini-home-1'), realHome: home, hooks, sessionDir });
    const o = path.join(overlay.home, '.gemini');
    const seen = parseJsonc(fs.readFileSync(path.join(o, 'settings.json'), 'utf8')) as Record<string, unknown>;
    assert.equal(seen, { ui: { theme: 'dark' }, hooks });
    // What Gemini CLI does during a run: writes through an existing directory, creates new entries,
    // replaces a file by rename, changes a setting.
    fs.writeFileSync(path.join(o, 'tmp', 'proj', 'chats', 'session-1.jsonl'), 'chat\n');
    fs.mkdirSync(path.join(o, 'history', 'proj'), { recursive: true });
    fs.writeFileSync(path.join(o, 'history', 'proj', '.project_root'), '/repo\n');
    fs.writeFileSync(path.join(o, 'installation_id'), 'id-1\n');
    fs.writeFileSync(path.join(o, 'trustedFolders.json.tmp'), '{"new":true}\n');
    fs.renameSync(path.join(o, 'trustedFolders.json.tmp'), path.join(o, 'trustedFolders.json'));
    fs.writeFileSync(path.join(o, 'settings.json'), JSON.stringify({ ...seen, ui: { theme: 'light' } }));
    assert.equal(overlay.finish(), []);
    assert.is(fs.readFileSync(path.join(real, 'tmp', 'proj', 'chats', 'session-1.jsonl'), 'utf8'), 'chat\n');
    assert.is(fs.readFileSync(path.join(real, 'history', 'proj', '.project_root'), 'utf8'), '/repo\n');
    assert.is(fs.readFileSync(path.join(real, 'installation_id'), 'utf8'), 'id-1\n');
    assert.is(fs.readFileSync(path.join(real, 'trustedFolders.json'), 'utf8'), '{"new":true}\n');
    assert.equal(
      JSON.parse(fs.readFileSync(path.join(real, 'settings.json'), 'utf8')),
      { ui: { theme: 'light' } },
      'the change, without our hooks',
    );
    assert.not.ok(fs.existsSync(overlay.home), 'the overlay is gone');
    // Unchanged settings stay byte for byte (comments included).
    const again = createGeminiOverlay({ dir: path.join(sessionDir, 'gemini-home-2'), realHome: home, hooks, sessionDir });
    fs.writeFileSync(path.join(real, 'settings.json'), settings);
    assert.equal(again.finish(), []);
    assert.is(fs.readFileSync(path.join(real, 'settings.json'), 'utf8'), settings);
  } finally {
    repo.cleanup();
  }
});

test("gemini overlay left by a killed wrapper: the next wrap moves back what Gemini wrote only there; a live wrapper's overlay is left alone", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const home = path.join(repo.base, 'realhome');
    const real = path.join(home, '.gemini');
    fs.mkdirSync(path.join(real, 'tmp'), { recursive: true });
    fs.writeFileSync(path.join(real, 'settings.json'), '{"ui":{"theme":"dark"}}\n');
    const sessionsRoot = path.join(repo.dir, '.git', 'agentsnap', 'sessions');
    const sessionDir = path.join(sessionsRoot, 'killed');
    fs.mkdirSync(sessionDir, { recursive: true });
    const hooks = {
      BeforeTool: [{ matcher: '*', hooks: [{ type: 'command', command: 'node agentsnap.js hook gemini BeforeTool --wrapped' }] }],
    };
    const dead = createGeminiOverlay({ dir: path.join(sessionDir, 'gemini-home-dead'), realHome: home, hooks, sessionDir });
    const live = createGeminiOverlay({ dir: path.join(sessionDir, 'gemini-home-live'), realHome: home, hooks, sessionDir });
    // The run: a chat written through the linked tmp/, a new file, a settings change. Then the wrapper dies.
    const o = path.join(dead.home, '.gemini');
    fs.writeFileSync(path.join(o, 'tmp', 'chat.jsonl'), 'chat\n');
    fs.writeFileSync(path.join(o, 'installation_id'), 'id-9\n');
    const seen = JSON.parse(fs.readFileSync(path.join(o, 'settings.json'), 'utf8')) as Record<string, unknown>;
    fs.writeFileSync(path.join(o, 'settings.json'), JSON.stringify({ ...seen, ui: { theme: 'light' } }));
    fs.writeFileSync(path.join(live.home, '.gemini', 'only-live'), 'x\n');
    const statePath = path.join(dead.home, 'agentsnap-overlay.json');
    const state = JSON.parse(fs.readFileSync(statePath, 'utf8')) as { owner: { pid: number } };
    const gone = spawnSync(process.execPath, ['-e', '0']);
    fs.writeFileSync(statePath, JSON.stringify({ ...state, owner: { ...state.owner, pid: gone.pid } }));

    // A wrapped Gemini run (a stand-in program: wrap --agent gemini) finishes the dead overlay before it starts.
    const r = await cli(repo, ['wrap', '--agent', 'gemini', '--', process.execPath, '-e', '0'], { env: { HOME: home } });
    assert.is(r.code, 0, r.stderr);
    assert.match(r.stderr, /moved back what Gemini CLI wrote in .*gemini-home-dead/);
    assert.is(fs.readFileSync(path.join(real, 'tmp', 'chat.jsonl'), 'utf8'), 'chat\n');
    assert.is(fs.readFileSync(path.join(real, 'installation_id'), 'utf8'), 'id-9\n');
    assert.equal(
      JSON.parse(fs.readFileSync(path.join(real, 'settings.json'), 'utf8')),
      { ui: { theme: 'light' } },
      'the change, without our hooks',
    );
    assert.not.ok(fs.existsSync(dead.home), 'the dead overlay is gone');
    assert.ok(fs.existsSync(path.join(live.home, '.gemini', 'only-live')), "a live wrapper's overlay is not touched");
    assert.not.ok(fs.existsSync(path.join(real, 'only-live')));
    assert.equal(live.finish(), []);
    assert.is(fs.readFileSync(path.join(real, 'only-live'), 'utf8'), 'x\n');
  } finally {
    repo.cleanup();
  }
});

test('init codex and init gemini: merged, idempotent, kept out of commits, removed exactly; a committed Gemini settings file is refused', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    // agentsnap-hook on PATH, as after a global install: init writes the PATH form.
    const installed = { env: { PATH: agentsnapOnPath(repo.base) } };
    for (const [agent, rel, events] of [
      ['codex', '.codex/hooks.json', ['PostToolUse', 'PreToolUse', 'SessionEnd']],
      ['gemini', '.gemini/settings.json', ['AfterTool', 'BeforeTool', 'SessionEnd']],
    ] as const) {
      const first = await cli(repo, ['init', agent], installed);
      assert.is(first.code, 0, first.stderr);
      assert.match(first.stderr, '.git/info/exclude');
      const once = repo.read(rel).toString();
      assert.is((await cli(repo, ['init', agent], installed)).code, 0);
      assert.is(repo.read(rel).toString(), once, 'idempotent');
      const s = JSON.parse(once) as { hooks: Record<string, { matcher?: string; hooks: { command: string }[] }[]> };
      assert.equal(Object.keys(s.hooks).sort(), [...events]);
      assert.is(s.hooks[events[1]]?.[0]?.matcher, '*');
      assert.is(
        s.hooks[events[1]]?.[0]?.hooks[0]?.command,
        `command -v agentsnap-hook >/dev/null 2>&1 && agentsnap-hook ${agent} ${events[1]} || true`,
      );
      assert.is(s.hooks.SessionEnd?.[0]?.matcher, undefined);
      assert.is(repo.git(['status', '--porcelain']), '');
      assert.is((await cli(repo, ['init', '--remove', agent])).code, 0);
      assert.not.ok(repo.exists(rel), 'a file that held only our hooks is removed');
    }
    // The user's own Gemini settings and hooks stay; a committed settings file is refused.
    const mine = {
      general: { vimMode: true },
      hooks: { AfterTool: [{ matcher: 'write_file', hooks: [{ type: 'command', command: 'lint' }] }] },
    };
    repo.write('.gemini/settings.json', `${JSON.stringify(mine, null, 2)}\n`);
    assert.is((await cli(repo, ['init', 'gemini'])).code, 0);
    assert.is((await cli(repo, ['init', '--remove', 'gemini'])).code, 0);
    assert.equal(JSON.parse(repo.read('.gemini/settings.json').toString()), mine);
    repo.write('.gemini/settings.json', `${JSON.stringify(mine, null, 2)}\n`);
    repo.git(['add', '-f', '.gemini/settings.json']);
    repo.git(['commit', '-qm', 'team settings']);
    const refused = await cli(repo, ['init', 'gemini']);
    assert.is(refused.code, 3);
    assert.match(refused.stderr, 'committed');
    assert.match(refused.stderr, 'agentsnap wrap -- gemini');
    assert.equal(JSON.parse(repo.read('.gemini/settings.json').toString()), mine);
  } finally {
    repo.cleanup();
  }
});

test('init claude installs the /agentsnap-undo command, kept out of commits; --remove takes it out; a user command of that name is left alone', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const res = await cli(repo, ['init', 'claude']);
    assert.is(res.code, 0, res.stderr);
    const text = repo.read('.claude/commands/agentsnap-undo.md').toString();
    assert.match(text, /^---\ndescription: /);
    assert.match(text, 'allowed-tools: Bash(agentsnap undo:*)');
    assert.match(text, '\nagentsnap undo $ARGUMENTS\n');
    assert.is(repo.git(['status', '--porcelain']), '');
    assert.is((await cli(repo, ['init', '--remove', 'claude'])).code, 0);
    assert.not.ok(repo.exists('.claude/commands/agentsnap-undo.md'));
    repo.write('.claude/commands/agentsnap-undo.md', 'my own\n');
    const mine = await cli(repo, ['init', 'claude']);
    assert.is(mine.code, 0);
    assert.match(mine.stderr, 'not agentsnap');
    assert.is(repo.read('.claude/commands/agentsnap-undo.md').toString(), 'my own\n');
    assert.is((await cli(repo, ['init', '--remove', 'claude'])).code, 0);
    assert.is(repo.read('.claude/commands/agentsnap-undo.md').toString(), 'my own\n');
  } finally {
    repo.cleanup();
  }
});

test('wrap --auto: a checkpoint after each burst of changes, none while nothing changes', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    repo.git(['config', 'agentsnap.autoQuiet', '200']);
    repo.git(['config', 'agentsnap.autoPoll', '150']);
    // The agent waits until the session's latest snapshot holds each burst before the next one (no timing
    // guesses), and checks that the session head does not move while nothing changes.
    const agent = path.join(repo.base, 'agent.mjs');
    fs.writeFileSync(
      agent,
      `import fs from 'node:fs';
import { execFileSync } from 'node:child_process';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const git = (...a) => { try { return execFileSync('git', a, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim(); } catch { return null; } };
const head = () => git('rev-parse', 'refs/agentsnap/sessions/' + process.env.AGENTSNAP_SESSION + '/head');
const waitFor = async (ok) => { for (let i = 0; i < 600; i++) { if (ok(head())) return; await sleep(50); } process.exit(9); };
const idle = async () => { const before = head(); await sleep(1200); if (head() !== before) process.exit(8); };
await idle();
fs.writeFileSync('a.txt', 'two\\n');
fs.mkdirSync('sub');
fs.writeFileSync('sub/b.txt', 'b\\n');
await waitFor((h) => git('show', h + ':a.txt') === 'two' && git('show', h + ':sub/b.txt') === 'b');
fs.rmSync('a.txt');
await waitFor((h) => git('cat-file', '-e', h + ':a.txt') === null);
await idle();
`,
    );
    const res = await cliProcess(repo, ['wrap', '--auto', '--', process.execPath, agent], { timeoutMs: 60_000 });
    assert.is(res.code, 0, res.stderr);
    assert.match(res.stderr, 'automatic checkpoints');
    const id = /started session (\S+)/.exec(res.stderr)?.[1] as string;
    const s = await session(repo, id);
    assert.ok(s.steps.length >= 2, 'a checkpoint for each burst');
    for (const st of s.steps) assert.equal([st.kind, st.tool], ['checkpoint', 'auto'], `step ${st.step}`);
    const trees = s.steps.map((st) => filesOf(repo, st.post as string));
    assert.equal(trees.at(-1), { 'sub/b.txt': 'b\n' });
    assert.ok(trees.some((t) => JSON.stringify(t) === JSON.stringify({ 'a.txt': 'two\n', 'sub/b.txt': 'b\n' })));
    // Each checkpoint holds a change: none repeats the state before it.
    trees.forEach((t, i) => assert.not.equal(t, i === 0 ? { 'a.txt': 'one\n' } : trees[i - 1]));
  } finally {
    repo.cleanup();
  }
});

test('wrap warns when a hooked agent changed files but no tool call reached the hooks', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    // A stand-in named codex whose "hooks" never run (say the user turned Codex's hooks feature off).
    const fake = path.join(repo.base, 'codex');
    fs.writeFileSync(fake, '#!/bin/sh\necho two > a.txt\n', { mode: 0o755 });
    const res = await cliProcess(repo, ['wrap', '--', fake, 'exec', 'x']);
    assert.is(res.code, 0, res.stderr);
    assert.match(res.stderr, "codex changed 1 file(s) but none of its tool calls reached agentsnap's hooks");
    const generic = await cliProcess(repo, ['wrap', '--', '/bin/sh', '-c', 'echo three > a.txt']);
    assert.not.match(generic.stderr, 'warning');
  } finally {
    repo.cleanup();
  }
});

test.run();
