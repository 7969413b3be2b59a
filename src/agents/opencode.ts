// OpenCode (opencode-ai): everything agentsnap knows about it.
// - Its hooks are an in-process JS plugin (`tool.execute.before`/`after`), not
//   a command: agentsnap writes a small plugin (pluginSource) that builds the
//   hook payload from OpenCode's arguments (tool, args, callID, sessionID; after:
//   title, output, metadata) and hands it to agentsnap as every hook client
//   does: through the worktree's warm server (dist/channel.cjs, loaded in
//   OpenCode's process, with its run-dir trust check: no process started), else
//   the hook command line with the payload on stdin.
// - wrap: the plugin goes in the session directory and reaches OpenCode through
//   OPENCODE_CONFIG_CONTENT (`"plugin": ["file://…"]`, merged into the caller's
//   own OPENCODE_CONFIG_CONTENT): no file of the user's or the project's is
//   edited, and no config folder of agentsnap's is made (OpenCode runs an npm
//   install in every config folder it loads plugins from).
// - init: the plugin goes in `.opencode/plugins/agentsnap.js`. OpenCode then
//   writes package.json, package-lock.json, bun.lock, node_modules/ and a
//   .gitignore into `.opencode/` (its npm install of @opencode-ai/plugin):
//   the plugin file records which of those were there before init, and
//   `init --remove` takes out the others.
// - A failed bash call is a normal after with `metadata.exit` non-zero; a tool that throws (an edit whose
//   oldString is not in the file) gets no after at all: the plugin closes it from the error state of its part on
//   OpenCode's event bus (PostToolUseFailure).
// - Its transcript is SQLite (~/.local/share/opencode/opencode.db): a step's transcript names the session
//   (`opencode-session:<id>`), and `undo N --chat` forks it through `opencode export`/`import`
//   (opencode-session.ts).
import fs from 'node:fs';
import path from 'node:path';
import { errors } from '../base/errors.js';
import { currentOwner, type LockOwner } from '../base/lock.js';
import { packageRoot } from '../base/package-root.js';
import { ensureStateDir, replaceStateFile } from '../base/state-dir.js';
import type { AgentAdapter, McpInitLayout, McpServerCommand } from './adapter.js';
import { MCP_SERVER_NAME, parseJsonc } from './settings-file.js';
import { field, paths, shell, text, type CallDescription } from './describe.js';
import { leftoverRunRecords } from './leftover-runs.js';
import { forkOpenCodeSession, OPENCODE_SESSION_PREFIX, sessionRef } from './opencode-session.js';

/** The line that marks a plugin file as agentsnap's. */
export const OPENCODE_PLUGIN_MARKER = '// agentsnap: OpenCode plugin';
const KEPT_PREFIX = '// agentsnap: there before init: ';

/** What OpenCode writes into a `.opencode/` folder it loads plugins from (its npm install of @opencode-ai/plugin). */
export const OPENCODE_AGENT_FILES = [
  '.opencode/package.json',
  '.opencode/package-lock.json',
  '.opencode/bun.lock',
  '.opencode/node_modules',
  '.opencode/.gitignore',
];

/** The hook events the plugin reports under (the words `agentsnap hook opencode <event>` takes). */
const PRE = 'PreToolUse';
const POST = 'PostToolUse';
/** A tool that threw: OpenCode calls no `tool.execute.after` then, only its event bus says the call ended in error. */
const FAILURE = 'PostToolUseFailure';
const EVENTS = [PRE, POST, FAILURE];

/** What the plugin needs: the channel module and the hook arguments (wrap), and the hook command lines. */
export interface PluginConfig {
  /** dist/channel.cjs of this install (null: always the command). */
  channel: string | null;
  /** The worktree whose server takes the calls (with `channel`). */
  worktree: string | null;
  /** `agentsnap hook <these>` per event, for the channel. */
  args: Record<string, string[]> | null;
  /** The hook command line per event (run by /bin/sh, the payload on stdin): when the channel does not answer. */
  commands: Record<string, string>;
}

/**
 * The plugin's source: plain ES module JavaScript with nothing to install (OpenCode runs it in its own Bun
 * process). One export: OpenCode calls every exported function as a plugin.
 */
export function pluginSource(config: PluginConfig, kept: string[] = []): string {
  return `${OPENCODE_PLUGIN_MARKER} (records every tool call as an agentsnap step; written by agentsnap)
${KEPT_PREFIX}${JSON.stringify(kept)}
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';

const CONFIG = ${JSON.stringify(config)};

/** The hook payload, in the field names agentsnap reads from every agent. */
function payloadOf(event, input, output, directory) {
  const p = { hook_event_name: event, session_id: input?.sessionID ?? null, tool_name: input?.tool ?? null, tool_call_id: input?.callID ?? null, cwd: directory ?? null };
  if (event === ${JSON.stringify(PRE)}) p.tool_input = output?.args ?? null;
  else {
    p.tool_input = input?.args ?? null;
    p.tool_response = { title: output?.title ?? null, output: output?.output ?? null, metadata: output?.metadata ?? null };
  }
  return p;
}

/** Through the worktree's warm server (its run dir passes the channel's trust check): true when it answered. */
async function viaServer(event, body) {
  if (!CONFIG.channel || !CONFIG.args || /^(0|off|false|no)$/i.test(process.env.AGENTSNAP_SERVER ?? '')) return false;
  try {
    const channel = createRequire(import.meta.url)(CONFIG.channel);
    const server = channel.trustedRunDir(CONFIG.worktree);
    if (!server) return false;
    const reply = await channel.callServer(server.run, ['hook', ...CONFIG.args[event]], body);
    if (!reply) return false;
    if (reply.kind === 'warn') process.stderr.write(reply.fields.join(' ') + '\\n');
    return reply.kind === 'ok' || reply.kind === 'warn';
  } catch {
    return false;
  }
}

/** The hook command line, the payload on its stdin. */
function viaCommand(event, body, cwd) {
  return new Promise((resolve) => {
    let child;
    try {
      child = spawn('/bin/sh', ['-c', CONFIG.commands[event]], { cwd, stdio: ['pipe', 'ignore', 'inherit'] });
    } catch {
      resolve();
      return;
    }
    child.on('error', () => resolve());
    child.on('close', () => resolve());
    child.stdin.on('error', () => {});
    child.stdin.end(body);
  });
}

async function send(event, payload, directory) {
  const body = JSON.stringify(payload);
  if (!(await viaServer(event, body))) await viaCommand(event, body, directory || process.cwd());
}

export const AgentsnapPlugin = async ({ directory }) => {
  // The calls whose before was reported and whose end was not yet: a tool that throws gets no after, only an
  // error state of its part on the event bus, which closes the call here (and only a call opened here).
  const open = new Set();
  return {
    'tool.execute.before': async (input, output) => {
      if (input?.callID) open.add(input.callID);
      await send(${JSON.stringify(PRE)}, payloadOf(${JSON.stringify(PRE)}, input, output, directory), directory);
    },
    'tool.execute.after': async (input, output) => {
      open.delete(input?.callID);
      await send(${JSON.stringify(POST)}, payloadOf(${JSON.stringify(POST)}, input, output, directory), directory);
    },
    event: async ({ event }) => {
      const part = event?.type === 'message.part.updated' ? event.properties?.part : null;
      if (!part || part.type !== 'tool' || part.state?.status !== 'error' || !open.has(part.callID)) return;
      open.delete(part.callID);
      const payload = { hook_event_name: ${JSON.stringify(FAILURE)}, session_id: part.sessionID ?? null, tool_name: part.tool ?? null, tool_call_id: part.callID, tool_input: part.state.input ?? null, error: String(part.state.error ?? 'failed'), cwd: directory ?? null };
      await send(${JSON.stringify(FAILURE)}, payload, directory);
    },
  };
};
`;
}

/** The files (of OPENCODE_AGENT_FILES) a plugin file says were there before init. */
export function keptOf(source: string): string[] {
  const line = source.split('\n').find((l) => l.startsWith(KEPT_PREFIX));
  try {
    const v = line ? (JSON.parse(line.slice(KEPT_PREFIX.length)) as unknown) : [];
    return Array.isArray(v) ? v.filter((f): f is string => typeof f === 'string') : [];
  } catch {
    return [...OPENCODE_AGENT_FILES]; // unreadable: keep everything
  }
}

/** OpenCode's built-in tools by their input (bash `command`, write/edit/read `filePath`…). */
function describeOpenCodeCall(tool: string | null, input: unknown): CallDescription | null {
  switch (tool) {
    case 'bash':
      return shell(field(input, 'command'));
    case 'write':
    case 'edit':
    case 'read':
      return paths(field(input, 'filePath', 'path'));
    case 'glob':
    case 'grep':
      return text(field(input, 'pattern'));
    case 'webfetch':
      return text(field(input, 'url'));
    default:
      return null;
  }
}

function jsonObject(source: string, what: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = parseJsonc(source);
  } catch {
    v = null; // not JSON: refused below with the file's name
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) {
    throw errors.invalidConfig(`${what} is not a JSON object; agentsnap cannot add its plugin to it for this run.`, {
      hint: 'Fix it (OpenCode would not read it either), then run the same command again.',
      data: { what },
    });
  }
  return v as Record<string, unknown>;
}

/** OpenCode's declaration of agentsnap's MCP server (its `mcp` object: a local server, command and arguments in one array). */
function mcpEntry(server: McpServerCommand): Record<string, unknown> {
  return { type: 'local', command: [server.command, ...server.args], enabled: true };
}

function isOurMcpEntry(entry: unknown): boolean {
  const command = (entry as { command?: unknown } | null)?.command;
  return Array.isArray(command) && command.some((w) => typeof w === 'string' && /agentsnap/.test(w)) && command.includes('mcp');
}

/** `config` with agentsnap's server in its `mcp` object; refuses an `agentsnap` entry that is not agentsnap's. */
function withMcp(config: Record<string, unknown>, server: McpServerCommand, file: string): Record<string, unknown> {
  const servers = config.mcp;
  if (servers !== undefined && (!servers || typeof servers !== 'object' || Array.isArray(servers))) {
    throw errors.invalidConfig(`${file}: mcp is not an object; agentsnap leaves it as it is.`, {
      hint: 'Fix the file, then run the command again.',
      data: { file },
    });
  }
  const current = (servers as Record<string, unknown> | undefined)?.[MCP_SERVER_NAME];
  if (current !== undefined && !isOurMcpEntry(current)) {
    throw errors.refused(`${file} already declares an MCP server named ${MCP_SERVER_NAME} that is not agentsnap's; it is left as it is.`, {
      hint: 'Rename or remove that entry, then run the command again.',
      data: { file },
    });
  }
  return { ...config, mcp: { ...((servers as Record<string, unknown> | undefined) ?? {}), [MCP_SERVER_NAME]: mcpEntry(server) } };
}

/** The key OpenCode adds to a config file it loads that lacks it. */
const SCHEMA_KEY = '$schema';

/** `init opencode --mcp`: `.opencode/opencode.json`, OpenCode's project config in the folder init's plugin is in. */
const MCP_FILE = '.opencode/opencode.json';
const mcpLayout: McpInitLayout = {
  file: MCP_FILE,
  personal: false,
  trackedHint: 'Run OpenCode as `agentsnap wrap --mcp -- opencode` instead (nothing is written into the project).',
  add: (current, server) => {
    if (current !== null && current.trim()) {
      try {
        JSON.parse(current);
      } catch {
        throw errors.refused(`${MCP_FILE} is not plain JSON (comments would be dropped); it is left as it is.`, {
          hint: 'Add the server by hand, or remove the comments and run init again.',
          data: { file: MCP_FILE },
        });
      }
    }
    const config = current !== null && current.trim() ? jsonObject(current, MCP_FILE) : {};
    return `${JSON.stringify(withMcp(config, server, MCP_FILE), null, 2)}\n`;
  },
  remove: (current) => {
    let config: Record<string, unknown>;
    try {
      config = jsonObject(current, MCP_FILE);
    } catch {
      return current; // not a JSON object (the user's to fix): --remove leaves it as it is
    }
    const servers = config.mcp as Record<string, unknown> | undefined;
    if (!servers || typeof servers !== 'object' || !isOurMcpEntry(servers[MCP_SERVER_NAME])) return current;
    const { [MCP_SERVER_NAME]: _ours, ...rest } = servers;
    void _ours;
    const next: Record<string, unknown> = { ...config, mcp: rest };
    if (Object.keys(rest).length === 0) delete next.mcp;
    // Only the "$schema" OpenCode stamps into a config it loads is left: the file was ours.
    return Object.keys(next).every((k) => k === SCHEMA_KEY) ? null : `${JSON.stringify(next, null, 2)}\n`;
  },
};

/** What a run's injection left to undo, kept beside it so the next wrapper finishes it when this one was killed. */
interface RunState {
  owner: LockOwner;
  pluginFile: string;
}

function finishRun(stateFile: string, state: RunState): string[] {
  fs.rmSync(state.pluginFile, { force: true });
  fs.rmSync(stateFile, { force: true });
  return [];
}

/** Removes the plugin files of runs whose wrapper was killed; lines to say. */
function recoverRuns(sessionsRoot: string): string[] {
  const lines: string[] = [];
  for (const { session, entry, state } of leftoverRunRecords<RunState>(sessionsRoot, 'opencode-run-')) {
    finishRun(entry, state);
    lines.push(`agentsnap: finished the OpenCode run of session ${session} (its wrapper had been killed)`);
  }
  return lines;
}

export const opencode: AgentAdapter = {
  name: 'opencode',
  product: 'opencode',
  displayName: 'OpenCode',
  isCommand: (arg, base) => base === 'opencode' || base === 'opencode-ai' || arg.includes('opencode-ai'),
  describeCall: describeOpenCodeCall,
  // bash reports its exit code in the after's metadata; a non-zero one is a failed call.
  refineCall(call) {
    // The session is the transcript (rows of OpenCode's database, no file): what a fork exports.
    if (!call.transcriptPath && call.agentSessionId?.startsWith('ses_')) call.transcriptPath = sessionRef(call.agentSessionId);
    if (call.phase !== 'post' || call.status !== 'done') return;
    const response = call.output as { metadata?: { exit?: unknown }; output?: unknown } | null;
    const exit = response && typeof response === 'object' ? response.metadata?.exit : undefined;
    if (typeof exit === 'number' && exit !== 0) {
      call.status = 'failed';
      call.error = call.error ?? `exit code ${exit}`;
    }
  },
  /** This run's plugin in the session directory, named in OPENCODE_CONFIG_CONTENT (with --mcp, agentsnap's MCP server too). */
  prepareRun(run) {
    const given = run.env.OPENCODE_CONFIG_CONTENT;
    let config: Record<string, unknown> = given && given.trim() ? jsonObject(given, 'OPENCODE_CONFIG_CONTENT') : {};
    ensureStateDir(run.sessionDir);
    const tag = `${process.pid}-${Date.now().toString(36)}`;
    const pluginFile = path.join(run.sessionDir, `opencode-plugin-${tag}.js`);
    const args = (ev: string) => ['opencode', ev, '--wrapped', '--session', run.session, '--worktree', run.worktree];
    const hook = (ev: string) => run.hookCommand(ev, { session: run.session, worktree: run.worktree });
    replaceStateFile(
      pluginFile,
      pluginSource({
        channel: path.join(packageRoot(), 'dist', 'channel.cjs'),
        worktree: run.worktree,
        args: Object.fromEntries(EVENTS.map((ev) => [ev, args(ev)])),
        commands: Object.fromEntries(EVENTS.map((ev) => [ev, hook(ev)])),
      }),
    );
    const plugins = config.plugin;
    if (plugins !== undefined && !Array.isArray(plugins)) {
      throw errors.invalidConfig('OPENCODE_CONFIG_CONTENT: plugin is not a list; agentsnap cannot add its plugin to it for this run.', {
        hint: 'Fix it, then run the same command again.',
      });
    }
    config = { ...config, plugin: [...((plugins as unknown[] | undefined) ?? []), `file://${pluginFile}`] };
    if (run.mcp) config = withMcp(config, run.mcp, 'OPENCODE_CONFIG_CONTENT');
    const state: RunState = { owner: currentOwner('opencode run'), pluginFile };
    const stateFile = path.join(run.sessionDir, `opencode-run-${tag}.json`);
    replaceStateFile(stateFile, `${JSON.stringify(state)}\n`);
    return { env: { OPENCODE_CONFIG_CONTENT: JSON.stringify(config) }, finish: () => finishRun(stateFile, state) };
  },
  ownsTranscript: (file) => file.startsWith(OPENCODE_SESSION_PREFIX),
  forkConversation: (at, opts) => forkOpenCodeSession(at, opts),
  // A killed wrapper's run: its plugin file goes.
  recover: (sessionsRoot) => recoverRuns(sessionsRoot),
  init: {
    file: '.opencode/plugins/agentsnap.js',
    events: EVENTS.map((ev): [string, boolean] => [ev, false]),
    matcher: '*',
    personal: false,
    trackedHint: 'Run OpenCode as `agentsnap wrap -- opencode` instead (nothing is written into the project).',
    note: 'OpenCode installs @opencode-ai/plugin into .opencode/ at its next start (npm; `init opencode --remove` takes it out again).',
    hookProgram: {
      text: (commandOf, kept) =>
        pluginSource(
          { channel: null, worktree: null, args: null, commands: Object.fromEntries(EVENTS.map((ev) => [ev, commandOf(ev)])) },
          kept,
        ),
      marker: OPENCODE_PLUGIN_MARKER,
      kept: keptOf,
      agentFiles: OPENCODE_AGENT_FILES,
    },
    mcp: mcpLayout,
  },
};
