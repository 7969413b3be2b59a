// GitHub Copilot CLI (`copilot`, @github/copilot): everything agentsnap knows about it.
// - Project hooks (.github/hooks/*.json) run only in a folder the user trusts. wrap leaves trust alone: it
//   loads this run's hooks as a plugin, `--plugin-dir <dir in the session directory>` (a plugin named on the
//   command line runs for that run only, trusted or not, and nothing is saved), and `--additional-mcp-config`
//   for `wrap --mcp`. Copilot makes an empty data folder for such a plugin under ~/.copilot/plugin-data/_direct/
//   (named by a hash of its path): it goes again at the end, so ~/.copilot is as it was.
// - init writes .github/hooks/agentsnap.json in Claude Code's hook format, which Copilot also reads (its
//   payloads then use Claude's field and tool names: `Write`, `Bash`); it runs once the user trusts the folder.
// - Hook payloads (`toolName`, `toolArgs`, `toolResult`, `sessionId`) carry no call id: refineCall makes one of
//   the tool and its input (callIdsFromInput), so two open calls of the same tool and input are told apart by
//   nothing, and their posts close neither (hook.ts); the transcript (~/.copilot/session-state/<id>/events.jsonl,
//   written behind the hooks) says later how they ended (callEnded, by their input), at the next pre or the end.
// - A shell call that exits non-zero reports `resultType: "success"`, its exit code only in its text
//   (`<shellId: 0 completed with exit code 3>`): closed as failed.
// - `replay` reads the prompts and messages of events.jsonl, `show N` the model it names (copilot-chat.ts).
// - `undo N --chat` and `--compact` fork events.jsonl into a new session folder (copilot-chat.ts): `copilot --resume=<id>`.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { currentOwner, type LockOwner } from '../base/lock.js';
import { ensureStateDir, replaceStateFile } from '../base/state-dir.js';
import type { AgentAdapter, HookCall } from './adapter.js';
import { MCP_SERVER_NAME, jsonMcpLayout } from './settings-file.js';
import { field, paths, shell, text, type CallDescription } from './describe.js';
import {
  callIdFromInput,
  compactCopilotChat,
  copilotTranscriptReader,
  forkCopilotChat,
  inputHash,
  inputHashOf,
  readEvents,
  toolArgs,
} from './copilot-chat.js';
import { leftoverRunRecords } from './leftover-runs.js';
import { type Obj, isObj } from './plan.js';

export { callIdFromInput } from './copilot-chat.js';

function str(v: unknown): string | null {
  return typeof v === 'string' && v !== '' ? v : null;
}

/** Copilot's home (config, session-state): $COPILOT_HOME, else ~/.copilot. */
export function copilotHome(env: NodeJS.ProcessEnv): string {
  return env.COPILOT_HOME || path.join(env.HOME || os.homedir(), '.copilot');
}

/** A session's transcript; null for an id that is not a plain name (it names a folder). */
export function copilotTranscript(env: NodeJS.ProcessEnv, sessionId: string): string | null {
  return /^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(sessionId) ? path.join(copilotHome(env), 'session-state', sessionId, 'events.jsonl') : null;
}

/** The exit code a shell call's result text ends with (`<shellId: 0 completed with exit code 3>`), if any. */
export function shellExitCode(resultText: string): number | null {
  const all = [...resultText.matchAll(/<shellId: [^>]*?completed with exit code (\d+)>/g)];
  const last = all[all.length - 1];
  return last?.[1] !== undefined ? Number(last[1]) : null;
}

/** Copilot's shell tools (init's Claude-format hooks name bash `Bash`). */
const SHELL_TOOLS = new Set(['bash', 'Bash', 'powershell', 'PowerShell']);

/** Reads Copilot's own payload names (and, from init's Claude-format hooks, its `tool_result`) into the common shape. */
export function refineCopilotCall(call: HookCall, payload: Obj, env: NodeJS.ProcessEnv): void {
  call.tool = call.tool ?? str(payload.toolName);
  if (call.input === undefined && payload.toolArgs !== undefined) call.input = toolArgs(payload.toolArgs);
  const result = payload.toolResult ?? payload.tool_result;
  if (call.output === undefined && result !== undefined) call.output = result;
  call.agentSessionId = call.agentSessionId ?? str(payload.sessionId);
  if (!call.transcriptPath && call.agentSessionId) call.transcriptPath = copilotTranscript(env, call.agentSessionId);
  const version = str(env.COPILOT_CLI_BINARY_VERSION);
  if (!call.agentVersion && version) call.agentVersion = `copilot-cli ${version}`;
  if (call.phase === 'post' && call.status === 'done' && isObj(result)) {
    const kind = str(result.resultType) ?? str(result.result_type);
    const said = str(result.textResultForLlm) ?? str(result.text_result_for_llm) ?? '';
    // Only a shell call's own text says how its command exited (a file `view` shows may hold the same words).
    const exit = call.tool && SHELL_TOOLS.has(call.tool) ? shellExitCode(said) : null;
    if (kind && kind !== 'success') {
      // failure, denied, rejected…: the call did not do what it was asked.
      call.status = 'failed';
      call.error = call.error ?? (said.trim() || kind);
    } else if (exit !== null && exit !== 0) {
      call.status = 'failed';
      call.error = call.error ?? `Exit code ${exit}`;
    }
  }
  if (!call.toolUseId && call.tool && (call.phase === 'pre' || call.phase === 'post'))
    call.toolUseId = callIdFromInput(call.tool, call.input);
}

/**
 * How the open call `toolUseId` ended, from the transcript: every execution there with that input (its
 * tool.execution_start) has its tool.execution_complete — failed when one of them failed (two calls of the same
 * input cannot be told apart) — else null (still running, or not written yet: Copilot writes it behind the hooks).
 */
export function copilotCallEnded(transcriptPath: string, toolUseId: string): { status: 'done' | 'failed'; error: string | null } | null {
  const hash = inputHashOf(toolUseId);
  if (!hash) return null;
  const events = readEvents(transcriptPath);
  if (!events) return null;
  const started = new Set<string>();
  const complete = new Map<string, Obj>();
  for (const e of events) {
    const data = isObj(e.data) ? e.data : null;
    const id = data ? str(data.toolCallId) : null;
    if (!data || !id) continue;
    if (e.type === 'tool.execution_start' && inputHash(data.arguments) === hash) started.add(id);
    else if (e.type === 'tool.execution_complete') complete.set(id, data);
  }
  if (started.size === 0) return null;
  let error: string | null = null;
  for (const id of started) {
    const done = complete.get(id);
    if (!done) return null;
    const exit = isObj(done.shellExecution) && typeof done.shellExecution.exitCode === 'number' ? done.shellExecution.exitCode : 0;
    const err = isObj(done.error) ? str(done.error.message) : str(done.error);
    if (done.success === false || exit !== 0) error = error ?? err ?? (exit !== 0 ? `Exit code ${exit}` : 'failed');
  }
  return error ? { status: 'failed', error } : { status: 'done', error: null };
}

/** Copilot CLI's built-in tools by their input (bash `command`, create/edit/view `path`…); init's hooks name them as Claude Code does. */
function describeCopilotCall(tool: string | null, input: unknown): CallDescription | null {
  switch (tool) {
    case 'bash':
    case 'Bash':
      return shell(field(input, 'command'));
    case 'create':
    case 'edit':
    case 'view':
    case 'Write':
    case 'Edit':
    case 'Read':
      return paths(field(input, 'path', 'file_path'));
    case 'grep':
    case 'glob':
    case 'Grep':
    case 'Glob':
      return text(field(input, 'pattern'));
    default:
      return null;
  }
}

/** What a run's injection left to undo, kept beside it so the next wrapper finishes it when this one was killed. */
interface RunState {
  owner: LockOwner;
  pluginDir: string;
  /** The data folder Copilot makes for the plugin, and the folders above it that were not there before the run. */
  dataDirs: string[];
}

/** The plugin folder of this wrapper's run (wrapArgv names it, prepareRun writes it: one process, one pid). */
function pluginDirOf(sessionDir: string): string {
  return path.join(sessionDir, `copilot-plugin-${process.pid}`);
}

/** The folder Copilot makes for a plugin loaded from `pluginDir` (~/.copilot/plugin-data/_direct/<sha256 of its source>). */
function pluginDataDir(env: NodeJS.ProcessEnv, pluginDir: string): string {
  const source = JSON.stringify({ source: 'local', path: pluginDir });
  return path.join(copilotHome(env), 'plugin-data', '_direct', createHash('sha256').update(source).digest('hex'));
}

function finishRun(stateFile: string, state: RunState): string[] {
  // Only folders Copilot left empty go: anything in them is the plugin's data, which agentsnap's hooks never write.
  for (const dir of state.dataDirs) {
    try {
      fs.rmdirSync(dir);
    } catch {
      break; // not empty (the plugin's data) or gone: this folder and those above it stay
    }
  }
  fs.rmSync(state.pluginDir, { recursive: true, force: true });
  fs.rmSync(stateFile, { force: true });
  return [];
}

function recoverRuns(sessionsRoot: string): string[] {
  const lines: string[] = [];
  for (const { session, entry, state } of leftoverRunRecords<RunState>(sessionsRoot, 'copilot-run-')) {
    finishRun(entry, state);
    lines.push(`agentsnap: finished the Copilot CLI run of session ${session} (its wrapper had been killed)`);
  }
  return lines;
}

const HOOK_EVENTS = ['preToolUse', 'postToolUse', 'postToolUseFailure'] as const;

export const copilot: AgentAdapter = {
  name: 'copilot',
  product: 'copilot-cli',
  displayName: 'Copilot CLI',
  isCommand: (arg, base) => base === 'copilot' || arg.includes('@github/copilot'),
  hookSettingsFiles: { project: ['.github/hooks/agentsnap.json'], user: [] },
  describeCall: describeCopilotCall,
  refineCall: refineCopilotCall,
  callIdsFromInput: true,
  callEnded: (transcriptPath, toolUseId) => copilotCallEnded(transcriptPath, toolUseId),
  // replay's prompts and messages, show N's model and version (copilot-chat.ts).
  transcript: copilotTranscriptReader,
  ownsTranscript: (file, sessionAgent) =>
    (sessionAgent !== null && /copilot/i.test(sessionAgent)) || /\/session-state\/[^/]+\/events\.jsonl$/.test(file),
  forkConversation: (at, opts) => forkCopilotChat(at, opts),
  compactConversation: (at, digest, opts) => compactCopilotChat(at, digest, opts),
  /** This run's hooks as a plugin named on the command line (`--plugin-dir`), and with --mcp agentsnap's server (`--additional-mcp-config`). */
  wrapArgv(run) {
    const words = ['--plugin-dir', pluginDirOf(run.sessionDir)];
    if (run.mcp)
      words.push(
        '--additional-mcp-config',
        JSON.stringify({
          mcpServers: { [MCP_SERVER_NAME]: { type: 'local', command: run.mcp.command, args: run.mcp.args, tools: ['*'] } },
        }),
      );
    return [...run.command.slice(0, run.at + 1), ...words, ...run.command.slice(run.at + 1)];
  },
  prepareRun(run) {
    const dir = pluginDirOf(run.sessionDir);
    ensureStateDir(run.sessionDir);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(path.join(dir, 'hooks'), { recursive: true, mode: 0o700 });
    fs.writeFileSync(
      path.join(dir, 'plugin.json'),
      `${JSON.stringify({ name: 'agentsnap', description: "agentsnap's hooks for this run (agentsnap wrap)", version: '1.0.0' }, null, 2)}\n`,
    );
    // Copilot's hook timeout is in seconds: a first snapshot of a big tree may need more than its default 30.
    const hooks = Object.fromEntries(
      HOOK_EVENTS.map((ev) => [
        ev,
        [{ type: 'command', bash: run.hookCommand(ev, { session: run.session, worktree: run.worktree }), timeoutSec: 600 }],
      ]),
    );
    fs.writeFileSync(path.join(dir, 'hooks', 'hooks.json'), `${JSON.stringify({ version: 1, hooks }, null, 2)}\n`);
    // The data folder Copilot will make for the plugin, and those above it it will make too: taken out at the end when empty.
    const dataDirs: string[] = [];
    for (let d = pluginDataDir(run.env, dir); d !== copilotHome(run.env) && !fs.existsSync(d); d = path.dirname(d)) dataDirs.push(d);
    const state: RunState = { owner: currentOwner('copilot run'), pluginDir: dir, dataDirs };
    const stateFile = path.join(run.sessionDir, `copilot-run-${process.pid}.json`);
    replaceStateFile(stateFile, `${JSON.stringify(state)}\n`);
    return { env: {}, finish: () => finishRun(stateFile, state) };
  },
  recover: (sessionsRoot) => recoverRuns(sessionsRoot),
  init: {
    // Claude Code's hook format, which Copilot reads from .github/hooks/*.json too (a file of agentsnap's own).
    file: '.github/hooks/agentsnap.json',
    events: [
      ['PreToolUse', true],
      ['PostToolUse', true],
      ['PostToolUseFailure', true],
      ['SessionEnd', false],
    ],
    matcher: '*',
    personal: false,
    trackedHint: 'Take .github/hooks/agentsnap.json out of the repository, or run the agent as `agentsnap wrap -- copilot` instead.',
    note: 'Copilot CLI runs project hooks only in a folder you trust: trust this folder when Copilot asks (or run `copilot --trust-folder -p …` for one prompt), or the hooks record nothing.',
    mcp: jsonMcpLayout('.github/mcp.json', {
      personal: false,
      trackedHint: 'Copilot CLI also reads .mcp.json; or run the agent as `agentsnap wrap --mcp -- copilot` instead.',
      note: 'Copilot CLI starts project MCP servers only in a folder you trust.',
      entry: (server) => ({ type: 'local', command: server.command, args: server.args, tools: ['*'] }),
    }),
  },
};
