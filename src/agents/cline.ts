// Cline CLI (`cline`): everything agentsnap knows about it.
// - Hooks are executable files named after the event (PreToolUse,
//   PostToolUse) in hook folders: <project>/.clinerules/hooks/,
//   <project>/.cline/hooks/, ~/Documents/Cline/Hooks/ and <cline dir>/hooks/
//   (the cline dir: --config, else CLINE_DIR, else ~/.cline). Its --hooks-dir
//   is read by nothing in 3.0.65.
// - By default tools and hooks run in a detached hub daemon that the first
//   run starts and later runs of the same HOME reuse, with that first run's
//   environment and directory. So:
//   - wrap runs the agent with its local backend (CLINE_SESSION_BACKEND_MODE=
//     local: no daemon, hooks see the run's environment) and a cline dir of
//     its own for the run (CLINE_DIR: links to every entry of the user's, and
//     a hooks folder holding agentsnap's two hooks, chained to the user's own
//     of that name if any); the user's files are never edited, and the folder
//     goes after the run. CLINE_DATA_DIR keeps Cline's data where it was.
//   - init's hooks (.clinerules/hooks/) may run in a daemon started anywhere:
//     they take the project from their own place and the call's workspace and
//     session from the payload (workspaceInfo.rootPath,
//     sessionContext.rootSessionId), and drop agentsnap variables of the
//     daemon's environment (a stale wrapper's) unless the run is local.
// - A failed run_commands call ends with PostToolUse and success:true; the
//   failure is in tool_result.output[].success/error.
// - In preToolUse.parameters arrays are JSON strings; tool_call.input has them.
// - Cline writes refs/cline/checkpoints/<session>/<n> into the repository
//   (repoRefs).
// - Its session files (<data dir>/sessions/<id>/<id>.messages.json and <id>.json), which no payload names, are
//   the transcript recorded for each call: `replay` shows their prompts and messages, `show N` the model and
//   version they name (cline-chat.ts).
// - `cline --id <session>` resumes interactively only (a terminal): no
//   conversation fork; `undo N --chat` offers the digest.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { errors } from '../base/errors.js';
import { currentOwner, type LockOwner } from '../base/lock.js';
import { ensureStateDir, replaceStateFile } from '../base/state-dir.js';
import { shellQuote } from '../base/shell.js';
import type { AgentAdapter, HookCall, RunContext } from './adapter.js';
import { parseJsonc } from './settings-file.js';
import { field, paths, shell, text, type CallDescription } from './describe.js';
import { leftoverRunRecords } from './leftover-runs.js';
import { clineTranscript, clineTranscriptReader, isClineTranscript } from './cline-chat.js';
import { type Obj, obj } from './plan.js';

/** The hook events agentsnap uses. */
const EVENTS = ['PreToolUse', 'PostToolUse'] as const;

/** A line every hook file agentsnap writes holds. */
const MARKER = '# agentsnap: records Cline tool calls';

function str(v: unknown): string | null {
  return typeof v === 'string' && v !== '' ? v : null;
}

/** An array argument, whether given as an array or as the JSON string preToolUse.parameters carries. */
function arrayArg(v: unknown): unknown[] | null {
  if (Array.isArray(v)) return v;
  if (typeof v === 'string' && v.trim().startsWith('[')) {
    try {
      const parsed: unknown = JSON.parse(v);
      return Array.isArray(parsed) ? parsed : null;
    } catch {
      return null; // not JSON after all: the argument is the string itself
    }
  }
  return null;
}

/** Cline's built-in tools by their input (run_commands `commands`, editor `path`, read_files `files`…). */
function describeClineCall(tool: string | null, input: unknown): CallDescription | null {
  switch (tool) {
    case 'run_commands': {
      const commands = (arrayArg(obj(input)?.commands) ?? []).filter((c): c is string => typeof c === 'string' && c.trim() !== '');
      return commands.length > 0 ? shell(commands.join('\n')) : shell(field(input, 'command', 'commands'));
    }
    case 'editor':
      return paths(field(input, 'path', 'file_path'));
    case 'read_files': {
      const files = (arrayArg(obj(input)?.files ?? obj(input)?.paths) ?? []).map((f) => (typeof f === 'string' ? f : str(obj(f)?.path)));
      return paths(...files, ...(files.length === 0 ? [field(input, 'path')] : []));
    }
    case 'search_codebase':
      return text(field(input, 'query', 'pattern', 'regex'));
    case 'fetch_web_content':
      return text(field(input, 'url'));
    default:
      return null;
  }
}

/** The failure a post payload's tool_result reports, if any (a run_commands result is one entry per command). */
function failureOf(output: unknown, postSuccess: unknown): string | null {
  const entries = Array.isArray(output) ? output : [output];
  const failed = entries.map(obj).filter((e): e is Obj => e !== null && e.success === false);
  if (failed.length > 0) return failed.map((e) => str(e.error) ?? str(e.result) ?? 'failed').join('\n');
  return postSuccess === false ? 'failed' : null;
}

/** Cline's payload read into the common call shape: it has none of the Claude-style fields hook.ts reads. `env`: where its data is. */
function refineClineCall(call: HookCall, payload: Obj, env: NodeJS.ProcessEnv): void {
  const pre = obj(payload.preToolUse);
  const post = obj(payload.postToolUse);
  const tc = obj(payload.tool_call) ?? obj(payload.tool_result);
  call.tool = str(tc?.name) ?? str(pre?.toolName) ?? str(post?.toolName) ?? call.tool;
  // tool_call.input has the arrays as arrays (preToolUse.parameters as JSON strings).
  call.input = tc && tc.input !== undefined ? tc.input : (pre?.parameters ?? post?.parameters ?? call.input);
  call.toolUseId = str(tc?.id) ?? call.toolUseId;
  call.agentSessionId = str(obj(payload.sessionContext)?.rootSessionId) ?? str(payload.taskId) ?? call.agentSessionId;
  // The session id names its folder under the data dir (the hook's environment is the run's, or a daemon's of the same HOME).
  const rootSession = str(obj(payload.sessionContext)?.rootSessionId);
  if (!call.transcriptPath && rootSession) call.transcriptPath = clineTranscript(env, rootSession);
  // The workspace the call is for: a hub daemon runs every hook in the directory of the run that started it.
  const roots = Array.isArray(payload.workspaceRoots) ? payload.workspaceRoots : [];
  call.cwd = str(obj(payload.workspaceInfo)?.rootPath) ?? str(roots[0]) ?? call.cwd;
  call.agentVersion = str(payload.clineVersion) ? `cline ${payload.clineVersion as string}` : call.agentVersion;
  if (call.phase !== 'post') return;
  const result = obj(payload.tool_result);
  call.output = result && result.output !== undefined ? result.output : (post?.result ?? call.output);
  const failure = failureOf(result?.output, post?.success);
  if (failure && call.status === 'done') {
    call.status = 'failed';
    call.error = failure;
  }
  const ms = typeof result?.durationMs === 'number' ? result.durationMs : post?.executionTimeMs;
  if (typeof ms === 'number' && Number.isFinite(ms)) call.durationMs = ms;
}

/** init's hook file for one event: found from its own place (a daemon's hooks run elsewhere), the daemon's stale agentsnap variables dropped. */
function initScript(hookCommand: string): string {
  return [
    '#!/bin/sh',
    `${MARKER} (\`agentsnap init cline\`; \`agentsnap init cline --remove\` takes it out)`,
    "# Cline's hub daemon runs hooks with the environment of the run that started it: only a local run's",
    "# (agentsnap wrap's) agentsnap variables are this call's.",
    '[ "$CLINE_SESSION_BACKEND_MODE" = local ] || unset AGENTSNAP_SESSION AGENTSNAP_WORKTREE AGENTSNAP_HOOKS',
    'cd "$(dirname "$0")/../.." || exit 0',
    `{ ${hookCommand}; } >&2`,
    'exit 0',
    '',
  ].join('\n');
}

/** wrap's hook file for one event: this run's session on the command line; the user's own hook of that name runs after it. */
function runScript(hookCommand: string, userHook: string | null): string {
  const lines = ['#!/bin/sh', `${MARKER} for one \`agentsnap wrap\` run (removed after it)`];
  if (userHook === null) lines.push(`{ ${hookCommand}; } >&2`, 'exit 0');
  else {
    lines.push(
      'payload=$(cat; echo x) && payload=${payload%x}',
      `printf '%s' "$payload" | { ${hookCommand}; } >&2`,
      `printf '%s' "$payload" | exec ${shellQuote(userHook)}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** The value of `--name X` / `--name=X` among the agent's own arguments, or undefined. */
function optionValue(args: string[], name: string): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === name) return args[i + 1] ?? '';
    if (a.startsWith(`${name}=`)) return a.slice(name.length + 1);
  }
  return undefined;
}

/** What a run's injection left to undo, kept beside it so the next wrapper finishes it when this one was killed. */
interface RunState {
  owner: LockOwner;
  /** This run's cline dir. */
  overlay: string;
  /** The user's cline dir. */
  clineDir: string;
}

/** Removes the run's cline dir; anything Cline created at its top (not a link of ours) moves to the user's first. */
function finishRun(stateFile: string, state: RunState): string[] {
  const warnings: string[] = [];
  let names: string[] = [];
  try {
    names = fs.readdirSync(state.overlay);
  } catch {
    /* gone already */
  }
  for (const name of names) {
    if (name === 'hooks' || name === 'agentsnap-mcp-settings.json') continue;
    const from = path.join(state.overlay, name);
    const to = path.join(state.clineDir, name);
    try {
      if (fs.lstatSync(from).isSymbolicLink() || fs.existsSync(to)) continue;
      fs.mkdirSync(state.clineDir, { recursive: true });
      fs.renameSync(from, to);
    } catch (e) {
      warnings.push(
        `agentsnap: warning: Cline wrote ${name} into agentsnap's cline dir for the run and agentsnap could not move it to ${to}: ${(e as Error).message}`,
      );
      return warnings; // the run's dir stays, so nothing is lost
    }
  }
  fs.rmSync(state.overlay, { recursive: true, force: true });
  fs.rmSync(stateFile, { force: true });
  return warnings;
}

/** Finishes the runs whose wrapper was killed; lines to say. */
function recoverRuns(sessionsRoot: string): string[] {
  const lines: string[] = [];
  for (const { session, entry, state } of leftoverRunRecords<RunState>(sessionsRoot, 'cline-run-')) {
    const warnings = finishRun(entry, state);
    lines.push(
      ...(warnings.length > 0 ? warnings : [`agentsnap: finished the Cline run of session ${session} (its wrapper had been killed)`]),
    );
  }
  return lines;
}

function readIfThere(file: string): string | null {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    return null;
  }
}

/** This run's cline dir: the user's entries linked, agentsnap's hooks (and --mcp server) added; the agent runs locally. */
function prepareClineRun(run: RunContext): { env: Record<string, string>; finish(): string[] } {
  const own = run.command.slice(run.at + 1);
  if (optionValue(own, '--config') !== undefined) {
    throw errors.invalidArgument("Cline's --config names its configuration directory, where agentsnap adds its hooks for the run.", {
      hint: 'Set CLINE_DIR=<that directory> instead of --config; agentsnap then adds its hooks beside it for this run only.',
    });
  }
  const home = run.env.HOME || os.homedir();
  const clineDir = path.resolve(run.cwd, run.env.CLINE_DIR?.trim() || path.join(home, '.cline'));
  const dataDir = run.env.CLINE_DATA_DIR?.trim() || path.join(clineDir, 'data');
  ensureStateDir(run.sessionDir);
  const tag = `${process.pid}-${Date.now().toString(36)}`;
  const overlay = path.join(run.sessionDir, `cline-dir-${tag}`);
  const state: RunState = { owner: currentOwner('cline run'), overlay, clineDir };
  const stateFile = path.join(run.sessionDir, `cline-run-${tag}.json`);
  replaceStateFile(stateFile, `${JSON.stringify(state)}\n`);
  try {
    fs.mkdirSync(path.join(overlay, 'hooks'), { recursive: true, mode: 0o700 });
    let entries: string[] = [];
    try {
      entries = fs.readdirSync(clineDir);
    } catch {
      /* no cline dir yet */
    }
    for (const name of entries) if (name !== 'hooks') fs.symlinkSync(path.join(clineDir, name), path.join(overlay, name));
    const userHooks = path.join(clineDir, 'hooks');
    let hooks: string[] = [];
    try {
      hooks = fs.readdirSync(userHooks);
    } catch {
      /* none */
    }
    for (const name of hooks)
      if (!(EVENTS as readonly string[]).includes(name)) fs.symlinkSync(path.join(userHooks, name), path.join(overlay, 'hooks', name));
    for (const ev of EVENTS) {
      const mine = path.join(userHooks, ev);
      const script = runScript(run.hookCommand(ev, { session: run.session, worktree: run.worktree }), hooks.includes(ev) ? mine : null);
      fs.writeFileSync(path.join(overlay, 'hooks', ev), script, { mode: 0o700 });
    }
    const env: Record<string, string> = { CLINE_DIR: overlay, CLINE_DATA_DIR: dataDir, CLINE_SESSION_BACKEND_MODE: 'local' };
    if (run.mcp) {
      const given = run.env.CLINE_MCP_SETTINGS_PATH?.trim() || path.join(dataDir, 'settings', 'cline_mcp_settings.json');
      const current = readIfThere(given);
      let base: Obj = {};
      if (current !== null && current.trim()) {
        let parsed: unknown = null;
        try {
          parsed = parseJsonc(current);
        } catch {
          /* reported below */
        }
        if (!obj(parsed)) {
          throw errors.invalidConfig(
            `${given} (Cline's MCP settings) is not a JSON object; agentsnap cannot add its MCP server to it for this run.`,
            {
              hint: 'Fix the file (Cline would not read it either), or run without --mcp.',
              data: { file: given },
            },
          );
        }
        base = parsed as Obj;
      }
      const file = path.join(overlay, 'agentsnap-mcp-settings.json');
      // Cline's entry shape (what `cline mcp add` writes): the command under `transport`. Cline waits 3 s by default
      // for a server's initialize and then runs without its tools: a Node start on a loaded machine can take longer.
      const servers = obj(base.mcpServers) ?? {};
      const entry = { transport: { type: 'stdio', command: run.mcp.command, args: run.mcp.args }, timeout: 60 };
      fs.writeFileSync(file, `${JSON.stringify({ ...base, mcpServers: { ...servers, agentsnap: entry } }, null, 2)}\n`, { mode: 0o600 });
      env.CLINE_MCP_SETTINGS_PATH = file;
    }
    return { env, finish: () => finishRun(stateFile, state) };
  } catch (e) {
    finishRun(stateFile, state);
    throw e;
  }
}

export const cline: AgentAdapter = {
  name: 'cline',
  product: 'cline',
  displayName: 'Cline',
  isCommand: (arg, base) => base === 'cline' || arg.includes('node_modules/cline/'),
  describeCall: describeClineCall,
  refineCall: refineClineCall,
  transcript: clineTranscriptReader,
  ownsTranscript: (file, sessionAgent) => (sessionAgent !== null && /cline/i.test(sessionAgent)) || isClineTranscript(file),
  repoRefs: ['refs/cline/'],
  // Its hook files (doctor reports agentsnap's there): init's, and the user-level folders.
  hookSettingsFiles: {
    project: EVENTS.flatMap((ev) => [`.clinerules/hooks/${ev}`, `.cline/hooks/${ev}`]),
    user: EVENTS.flatMap((ev) => [`.cline/hooks/${ev}`, `Documents/Cline/Hooks/${ev}`]),
  },
  prepareRun: prepareClineRun,
  recover: (sessionsRoot) => recoverRuns(sessionsRoot),
  init: {
    file: '.clinerules/hooks',
    events: EVENTS.map((ev): [string, boolean] => [ev, false]),
    matcher: '*',
    // Each hook file is kept out of commits (.git/info/exclude); a committed one of the same name is the user's and stays.
    personal: true,
    scripts: {
      file: (ev) => `.clinerules/hooks/${ev}`,
      text: (command) => initScript(command),
      marker: MARKER,
    },
  },
};
