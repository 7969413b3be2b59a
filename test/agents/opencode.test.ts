// OpenCode's adapter without the real binary (test/agents/opencode-e2e.test.ts runs it): the plugin agentsnap writes, run
// as OpenCode runs it (its hooks called with the arguments OpenCode 1.18.33 passes, from
// ../shared/reference/more-agents.md), and the payloads it hands to agentsnap read as hook calls; the run's
// injection through OPENCODE_CONFIG_CONTENT; init and init --remove.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { cli, cliProcess, tempRepo } from '../support/helpers.js';
import { describeCall, findAgent, INIT_AGENTS, ADAPTERS } from '../../src/agents/registry.js';
import { parseHookCall } from '../../src/runtime/hook.js';
import { OPENCODE_AGENT_FILES, pluginSource } from '../../src/agents/opencode.js';
import type { RunContext } from '../../src/agents/adapter.js';
import { forkOpenCodeExport } from '../../src/agents/opencode-session.js';
import { isAgentsnapError } from '../../src/base/errors.js';

type Hooks = Record<string, (input: unknown, output: unknown) => Promise<void>>;

/** The plugin with hook commands that keep each payload in a file of `dir` (no channel): what OpenCode would load. */
async function loadPlugin(dir: string): Promise<Hooks> {
  const commands = {
    PreToolUse: `cat > "${dir}/pre-$$.json"`,
    PostToolUse: `cat > "${dir}/post-$$.json"`,
    PostToolUseFailure: `cat > "${dir}/failure-$$.json"`,
  };
  const file = path.join(dir, 'agentsnap-plugin.mjs');
  fs.writeFileSync(file, pluginSource({ channel: null, worktree: null, args: null, commands }));
  const mod = (await import(pathToFileURL(file).href)) as Record<string, (ctx: unknown) => Promise<Hooks>>;
  assert.equal(Object.keys(mod), ['AgentsnapPlugin'], 'one export: OpenCode calls each exported function as a plugin');
  return (mod.AgentsnapPlugin as (ctx: unknown) => Promise<Hooks>)({ directory: dir, worktree: dir });
}

function payloads(dir: string, prefix: string): Record<string, unknown>[] {
  return fs
    .readdirSync(dir)
    .filter((n) => n.startsWith(prefix))
    .map((n) => JSON.parse(fs.readFileSync(path.join(dir, n), 'utf8')) as Record<string, unknown>);
}

// The arguments OpenCode 1.18.33 passes its plugin hooks (observed: more-agents.md).
const WRITE_BEFORE = [
  { tool: 'write', sessionID: 'ses_dbbdf25c0ffe', callID: 'call_2_0_x' },
  { args: { filePath: '/repo/a.txt', content: 'alpha\n' } },
];
const WRITE_AFTER = [
  { tool: 'write', sessionID: 'ses_dbbdf25c0ffe', callID: 'call_2_0_x', args: { filePath: '/repo/a.txt', content: 'alpha\n' } },
  { title: 'a.txt', output: 'Wrote file successfully.', metadata: { filepath: '/repo/a.txt', exists: false, truncated: false } },
];
const BASH_FAILED_AFTER = [
  {
    tool: 'bash',
    sessionID: 'ses_dbbdf25c0ffe',
    callID: 'call_3_0_y',
    args: { command: "printf 'x\\n' > b.txt; exit 3", description: 'fail' },
  },
  { title: "printf 'x\\n' > b.txt; exit 3", output: '(no output)', metadata: { output: '(no output)', exit: 3, truncated: false } },
];

test('opencode is recognised from its command (bare, a path, through npx) and offered to init', () => {
  assert.equal(findAgent(['opencode', 'run', 'go']), { agent: 'opencode', index: 0 });
  assert.equal(findAgent(['/opt/bin/opencode']), { agent: 'opencode', index: 0 });
  assert.equal(findAgent(['npx', 'opencode-ai@1.18.33', 'run']), { agent: 'opencode', index: 1 });
  assert.ok(INIT_AGENTS.includes('opencode'));
});

test("the plugin hands OpenCode's before/after arguments to agentsnap as hook calls: tool, args, call id, session, the failure of a bash call that exited 3", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentsnap-opencode-'));
  try {
    const hooks = await loadPlugin(dir);
    await hooks['tool.execute.before']?.(WRITE_BEFORE[0], WRITE_BEFORE[1]);
    const [pre] = payloads(dir, 'pre-');
    const preCall = parseHookCall('opencode', 'PreToolUse', pre as Record<string, unknown>);
    assert.equal(
      {
        phase: preCall.phase,
        tool: preCall.tool,
        input: preCall.input,
        id: preCall.toolUseId,
        session: preCall.agentSessionId,
        transcript: preCall.transcriptPath,
        cwd: preCall.cwd,
      },
      {
        phase: 'pre',
        tool: 'write',
        input: { filePath: '/repo/a.txt', content: 'alpha\n' },
        id: 'call_2_0_x',
        session: 'ses_dbbdf25c0ffe',
        transcript: 'opencode-session:ses_dbbdf25c0ffe', // the session is what `undo N --chat` forks
        cwd: dir,
      },
    );
    await hooks['tool.execute.after']?.(WRITE_AFTER[0], WRITE_AFTER[1]);
    const done = parseHookCall('opencode', 'PostToolUse', payloads(dir, 'post-')[0] as Record<string, unknown>);
    assert.equal([done.phase, done.status, done.tool, done.toolUseId, done.error], ['post', 'done', 'write', 'call_2_0_x', null]);
    assert.equal(done.input, { filePath: '/repo/a.txt', content: 'alpha\n' });
    assert.match(JSON.stringify(done.output), 'Wrote file successfully.');
    for (const n of fs.readdirSync(dir)) if (n.startsWith('post-')) fs.rmSync(path.join(dir, n));
    await hooks['tool.execute.after']?.(BASH_FAILED_AFTER[0], BASH_FAILED_AFTER[1]);
    const failed = parseHookCall('opencode', 'PostToolUse', payloads(dir, 'post-')[0] as Record<string, unknown>);
    assert.equal(
      [failed.phase, failed.status, failed.tool, failed.toolUseId, failed.error],
      ['post', 'failed', 'bash', 'call_3_0_y', 'exit code 3'],
    );
    // A tool that throws gets no after: its part's error state on the event bus closes it, once, and only a call
    // whose before was seen (observed: an edit whose oldString is not in the file).
    await hooks['tool.execute.before']?.(
      { tool: 'edit', sessionID: 'ses_dbbdf25c0ffe', callID: 'call_4_0_z' },
      { args: { filePath: '/repo/a.txt', oldString: 'nope', newString: 'x' } },
    );
    const errorPart = (callID: string) => ({
      event: {
        type: 'message.part.updated',
        properties: {
          part: {
            type: 'tool',
            tool: 'edit',
            callID,
            sessionID: 'ses_dbbdf25c0ffe',
            state: {
              status: 'error',
              input: { filePath: '/repo/a.txt', oldString: 'nope', newString: 'x' },
              error: 'Could not find oldString in the file.',
            },
          },
        },
      },
    });
    const event = hooks.event as unknown as (e: unknown) => Promise<void>;
    await event(errorPart('call_4_0_z'));
    await event(errorPart('call_4_0_z'));
    await event(errorPart('call_never_started'));
    await event({
      event: { type: 'message.part.updated', properties: { part: { type: 'tool', callID: 'call_2_0_x', state: { status: 'completed' } } } },
    });
    const failures = payloads(dir, 'failure-');
    assert.is(failures.length, 1);
    const thrown = parseHookCall('opencode', 'PostToolUseFailure', failures[0] as Record<string, unknown>);
    assert.equal(
      [thrown.phase, thrown.status, thrown.tool, thrown.toolUseId, thrown.error, thrown.agentSessionId],
      ['post', 'failed', 'edit', 'call_4_0_z', 'Could not find oldString in the file.', 'ses_dbbdf25c0ffe'],
    );
    assert.equal(thrown.input, { filePath: '/repo/a.txt', oldString: 'nope', newString: 'x' });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('log reads what an OpenCode call was: its command, its file', () => {
  assert.equal(describeCall('opencode', null, 'bash', { command: 'rm a && echo b > c', description: 'x' }), {
    kind: 'shell',
    command: 'rm a && echo b > c',
  });
  assert.equal(describeCall('opencode', null, 'write', { filePath: '/r/a.txt', content: 'x' }), { kind: 'paths', paths: ['/r/a.txt'] });
  assert.equal(describeCall('opencode', null, 'edit', { filePath: '/r/b.txt', oldString: 'x', newString: 'y' }), {
    kind: 'paths',
    paths: ['/r/b.txt'],
  });
});

function runContext(dir: string, env: NodeJS.ProcessEnv, mcp = false): RunContext {
  return {
    command: ['opencode', 'run', 'go'],
    at: 0,
    cwd: dir,
    env,
    hookCommand: (ev, extra) => `agentsnap hook opencode ${ev} --wrapped --session ${extra?.session} --worktree ${extra?.worktree}`,
    session: 'sess-1',
    worktree: dir,
    sessionDir: path.join(dir, 'session'),
    mcp: mcp ? { command: '/usr/bin/node', args: ['/opt/agentsnap/bin/agentsnap.js', 'mcp', '--session', 'sess-1'] } : null,
  };
}

test("wrap: the plugin reaches OpenCode through OPENCODE_CONFIG_CONTENT, added to the caller's own (its plugins and settings kept), with --mcp agentsnap's server; finish removes the run's files", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentsnap-opencode-'));
  try {
    const own = { plugin: ['my-plugin'], theme: 'dark', mcp: { other: { type: 'remote', url: 'http://x' } } };
    const hooks = ADAPTERS.opencode?.prepareRun?.(runContext(dir, { OPENCODE_CONFIG_CONTENT: JSON.stringify(own) }, true));
    assert.ok(hooks);
    const config = JSON.parse(hooks.env.OPENCODE_CONFIG_CONTENT as string) as {
      plugin: string[];
      theme: string;
      mcp: Record<string, { command: string[] }>;
    };
    assert.is(config.theme, 'dark');
    assert.is(config.plugin[0], 'my-plugin');
    const plugin = (config.plugin[1] as string).replace(/^file:\/\//, '');
    assert.ok(plugin.startsWith(path.join(dir, 'session')), plugin);
    const source = fs.readFileSync(plugin, 'utf8');
    assert.match(source, '"--session","sess-1"');
    assert.match(source, 'channel.cjs');
    assert.equal(Object.keys(config.mcp), ['other', 'agentsnap']);
    assert.equal(config.mcp.agentsnap?.command, ['/usr/bin/node', '/opt/agentsnap/bin/agentsnap.js', 'mcp', '--session', 'sess-1']);
    assert.equal(hooks.finish(), []);
    assert.equal(fs.readdirSync(path.join(dir, 'session')), [], 'the plugin and the run state are gone');
    // A caller's OPENCODE_CONFIG_CONTENT that is not a JSON object: one clear error, nothing written.
    assert.throws(
      () => ADAPTERS.opencode?.prepareRun?.(runContext(dir, { OPENCODE_CONFIG_CONTENT: '[1,' })),
      /OPENCODE_CONFIG_CONTENT is not a JSON object/,
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

/** A session as `opencode export` (1.18.33) printed it: the e2e test's wrapped run (prompt, four tool calls, an answer). */
const EXPORTED = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, '..', 'support', 'opencode-export.json'), 'utf8')) as {
  info: { id: string; title: string };
  messages: { info: { id: string; role: string }; parts: { id: string; type: string; callID?: string; messageID: string }[] }[];
};

test("undo N --chat's OpenCode fork: the messages before the one holding step N's call, every session, message and part id renewed (kind and time part kept, so OpenCode's order holds) and every reference to them too; the original export untouched", () => {
  const before = JSON.stringify(EXPORTED);
  const calls = EXPORTED.messages.flatMap((m) => m.parts.filter((p) => p.type === 'tool').map((p) => p.callID as string));
  assert.is(calls.length, 4, 'the fixture holds four tool calls');
  const at = EXPORTED.messages.findIndex((m) => m.parts.some((p) => p.callID === calls[2]));
  const fork = forkOpenCodeExport(EXPORTED, calls[2] as string, { title: 'fork' });
  assert.is(JSON.stringify(EXPORTED), before, 'the export is not modified');
  assert.is(fork.messages, at);
  assert.is(fork.session.messages.length, at);
  assert.is(fork.sharedWith, 0);
  assert.is(fork.session.info.title, 'fork');
  // The ids: all new, same kind and time part, none of the original's left anywhere.
  const oldIds = [EXPORTED.info.id, ...EXPORTED.messages.slice(0, at).flatMap((m) => [m.info.id, ...m.parts.map((p) => p.id)])];
  const newIds = [fork.sessionId, ...fork.session.messages.flatMap((m) => [m.info.id as string, ...m.parts.map((p) => p.id as string)])];
  assert.is(newIds.length, oldIds.length);
  newIds.forEach((id, i) => {
    assert.is.not(id, oldIds[i]);
    assert.is(id.length, (oldIds[i] as string).length);
    assert.is(id.slice(0, 16), (oldIds[i] as string).slice(0, 16), `${id}: the kind and time part of ${oldIds[i]}`);
  });
  const text = JSON.stringify(fork.session);
  for (const id of oldIds) assert.not.ok(text.includes(id), `${id} is left in the fork`);
  assert.is(fork.session.info.id, fork.sessionId);
  for (const m of fork.session.messages) {
    assert.is(m.info.sessionID, fork.sessionId);
    for (const p of m.parts) assert.equal([p.sessionID, p.messageID], [fork.sessionId, m.info.id]);
  }
  // Mapped back, the fork is the original's messages before the cut, byte for byte (nothing else rewritten).
  const back = new Map(newIds.map((id, i) => [id, oldIds[i] as string]));
  const restored = JSON.parse(
    text.replace(/(ses|msg|prt)_[0-9a-f]{12}[0-9A-Za-z]{14}/g, (id) => back.get(id) ?? id),
  ) as typeof fork.session;
  assert.equal(restored.messages, EXPORTED.messages.slice(0, at));
  assert.equal({ ...restored.info, title: EXPORTED.info.title }, EXPORTED.info);
  // Two forks of the same step are two sessions.
  assert.is.not(forkOpenCodeExport(EXPORTED, calls[2] as string).sessionId, fork.sessionId);
  // Before step 1: the user's prompt only.
  assert.equal(
    forkOpenCodeExport(EXPORTED, calls[0] as string).session.messages.map((m) => m.info.role),
    EXPORTED.messages
      .slice(
        0,
        EXPORTED.messages.findIndex((m) => m.parts.some((p) => p.callID === calls[0])),
      )
      .map((m) => m.info.role),
  );
  try {
    forkOpenCodeExport(EXPORTED, 'call_not_there');
    assert.unreachable('a call that is not in the session');
  } catch (e) {
    assert.ok(isAgentsnapError(e) && e.code === 'InvalidArgument', String(e));
    assert.match((e as Error).message, 'call_not_there');
  }
});

test('undo N --chat on an OpenCode step when `opencode` cannot export the session (not on PATH): the digest, with why, and exit 0; the files untouched (--chat only)', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    // A PATH with git and no opencode.
    const env = { PATH: '/usr/bin:/bin' };
    const hook = (event: string, payload: Record<string, unknown>) =>
      cliProcess(repo, ['hook', 'opencode', event], { env, input: JSON.stringify({ hook_event_name: event, ...payload }) });
    const common = { session_id: 'ses_dbbdf25c0ffexSLzVDlN6Ji0MA', tool_name: 'bash', tool_call_id: 'call_1', cwd: repo.dir };
    assert.is((await hook('PreToolUse', { ...common, tool_input: { command: 'x' } })).code, 0);
    fs.writeFileSync(path.join(repo.dir, 'a.txt'), 'two\n');
    assert.is((await hook('PostToolUse', { ...common, tool_input: { command: 'x' }, tool_response: { output: '' } })).code, 0);
    const r = await cliProcess(repo, ['undo', '1', '--chat'], { env });
    assert.is(r.code, 0, r.stderr);
    assert.is(fs.readFileSync(path.join(repo.dir, 'a.txt'), 'utf8'), 'two\n');
    assert.match(
      r.stderr + r.stdout,
      /no conversation to fork \(`opencode export` failed \(exporting session ses_dbbdf25c0ffexSLzVDlN6Ji0MA\): no `opencode` on PATH\)/,
    );
    assert.match(r.stdout, 'the tool calls before step 1');
    assert.not.match(r.stderr + r.stdout, /\n\s+at /, 'no stack trace');
  } finally {
    repo.cleanup();
  }
});

test("a killed wrapper's run plugin is removed by the next wrapper (recover); a live one's is left", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentsnap-opencode-'));
  try {
    const sessions = path.join(dir, 'sessions');
    const run = (id: string) => ({ ...runContext(dir, {}), session: id, sessionDir: path.join(sessions, id) });
    ADAPTERS.opencode?.prepareRun?.(run('dead'));
    ADAPTERS.opencode?.prepareRun?.(run('alive'));
    // The first wrapper was killed: its state names a process that is gone (a start time no process has).
    const deadDir = path.join(sessions, 'dead');
    const stateFile = path.join(deadDir, fs.readdirSync(deadDir).find((n) => n.startsWith('opencode-run-')) as string);
    const state = JSON.parse(fs.readFileSync(stateFile, 'utf8')) as { owner: { start: string | null } };
    fs.writeFileSync(stateFile, JSON.stringify({ ...state, owner: { ...state.owner, start: 'not-a-start-time' } }));
    const said = ADAPTERS.opencode?.recover?.(sessions) ?? [];
    assert.equal(said, ['agentsnap: finished the OpenCode run of session dead (its wrapper had been killed)']);
    assert.equal(fs.readdirSync(deadDir), []);
    assert.is(fs.readdirSync(path.join(sessions, 'alive')).length, 2, "a live wrapper's plugin and state stay");
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('init opencode writes the plugin into .opencode/plugins; --remove takes it out with what OpenCode installed beside it, and never a file that was there before', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const exclude = path.join(repo.dir, '.git', 'info', 'exclude');
    const excludeBefore = fs.readFileSync(exclude, 'utf8');
    // The user's own .opencode/, with a package.json of theirs (for a plugin of theirs) and a command.
    const mine = '{"dependencies":{"left-pad":"1.3.0"}}\n';
    fs.mkdirSync(path.join(repo.dir, '.opencode', 'commands'), { recursive: true });
    fs.writeFileSync(path.join(repo.dir, '.opencode', 'package.json'), mine);
    fs.writeFileSync(path.join(repo.dir, '.opencode', 'commands', 'hi.md'), 'Hi.\n');
    fs.symlinkSync('nowhere', path.join(repo.dir, '.opencode', 'bun.lock')); // a link of theirs, dangling
    const r = await cli(repo, ['init', 'opencode', '--mcp']);
    assert.is(r.code, 0, r.stderr);
    const plugin = path.join(repo.dir, '.opencode', 'plugins', 'agentsnap.js');
    assert.match(fs.readFileSync(plugin, 'utf8'), 'opencode PreToolUse');
    assert.ok(
      (JSON.parse(fs.readFileSync(path.join(repo.dir, '.opencode', 'opencode.json'), 'utf8')) as { mcp: Record<string, unknown> }).mcp
        .agentsnap,
    );
    assert.is((await cli(repo, ['init', 'opencode'])).code, 0, 'idempotent');
    // OpenCode stamps "$schema" into a config file it loads without one.
    const mcpFile = path.join(repo.dir, '.opencode', 'opencode.json');
    fs.writeFileSync(
      mcpFile,
      JSON.stringify({ $schema: 'https://opencode.ai/config.json', ...(JSON.parse(fs.readFileSync(mcpFile, 'utf8')) as object) }, null, 2),
    );
    // What OpenCode's start then writes into .opencode/ (its npm install of @opencode-ai/plugin).
    for (const f of OPENCODE_AGENT_FILES.filter((f) => !/package\.json|node_modules|bun\.lock/.test(f)))
      fs.writeFileSync(path.join(repo.dir, f), 'x\n');
    fs.mkdirSync(path.join(repo.dir, '.opencode', 'node_modules', '@opencode-ai', 'plugin'), { recursive: true });
    assert.is(
      repo.git(['status', '--porcelain', '-uall']),
      '?? .opencode/bun.lock\n?? .opencode/commands/hi.md\n?? .opencode/package.json\n',
      "init's plugin and OpenCode's install stay out of commits",
    );
    const rm = await cli(repo, ['init', 'opencode', '--remove']);
    assert.is(rm.code, 0, rm.stderr);
    assert.equal(fs.readdirSync(path.join(repo.dir, '.opencode')).sort(), ['bun.lock', 'commands', 'package.json']);
    assert.is(fs.readlinkSync(path.join(repo.dir, '.opencode', 'bun.lock')), 'nowhere');
    assert.is(fs.readFileSync(path.join(repo.dir, '.opencode', 'package.json'), 'utf8'), mine);
    assert.is(fs.readFileSync(exclude, 'utf8'), excludeBefore);
    // Without anything of the user's, .opencode/ goes altogether.
    fs.rmSync(path.join(repo.dir, '.opencode'), { recursive: true });
    assert.is((await cli(repo, ['init', 'opencode'])).code, 0);
    for (const f of OPENCODE_AGENT_FILES.filter((f) => !f.endsWith('node_modules'))) fs.writeFileSync(path.join(repo.dir, f), 'x\n');
    assert.is((await cli(repo, ['init', 'opencode', '--remove'])).code, 0);
    assert.not.ok(fs.existsSync(path.join(repo.dir, '.opencode')));
    // A plugin of that name that is not agentsnap's is refused, and left as it is.
    fs.mkdirSync(path.join(repo.dir, '.opencode', 'plugins'), { recursive: true });
    fs.writeFileSync(plugin, 'export const Mine = async () => ({});\n');
    const refused = await cli(repo, ['init', 'opencode']);
    assert.is(refused.code, 3, refused.stderr);
    assert.match(refused.stderr, "is not agentsnap's");
    assert.is(fs.readFileSync(plugin, 'utf8'), 'export const Mine = async () => ({});\n');
  } finally {
    repo.cleanup();
  }
});

test.run();
