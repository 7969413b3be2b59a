// Qwen Code: everything agentsnap knows about it.
// - Hooks are Claude Code's format in its settings.json (PreToolUse,
//   PostToolUse, PostToolUseFailure); a failing call fires PostToolUseFailure
//   and never PostToolUse, so all three are hooked.
// - wrap: Qwen reads one more settings layer from the file named by
//   QWEN_CODE_SYSTEM_SETTINGS_PATH: agentsnap writes one for the run (the
//   caller's own system file, if any, plus its hooks and, with --mcp, its MCP
//   server) in the session directory, so no file of the user's is edited.
// - Qwen rewrites a settings file it reads once, to add "$version": a user or
//   project settings file that differs after the run by that key alone is put
//   back byte for byte (wrap), and a file holding nothing else after
//   `init --remove` goes (it was only ours).
// - Its transcript (~/.qwen/projects/<cwd>/chats/<id>.jsonl) names each call
//   by the model's call id (the hooks' tool_call_id, journaled as the step's
//   call id): `undo N --chat` forks it (qwen-chat.ts); no --compact yet.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { errors } from '../base/errors.js';
import { currentOwner, type LockOwner } from '../base/lock.js';
import { leftoverRunRecords } from './leftover-runs.js';
import { ensureStateDir, replaceStateFile } from '../base/state-dir.js';
import type { AgentAdapter, HookGroup } from './adapter.js';
import { jsonMcpLayout, parseJsonc, withHooks, withMcpServer } from './settings-file.js';
import { field, paths, shell, text, type CallDescription } from './describe.js';
import { forkQwenChat } from './qwen-chat.js';

/** The key Qwen adds to every settings file it reads that lacks it. */
const VERSION_KEY = '$version';

/** Qwen Code's built-in tools by their input (run_shell_command `command`, write_file/edit `file_path`…). */
function describeQwenCall(tool: string | null, input: unknown): CallDescription | null {
  switch (tool) {
    case 'run_shell_command':
      return shell(field(input, 'command'));
    case 'write_file':
    case 'edit':
    case 'read_file':
      return paths(field(input, 'file_path', 'absolute_path', 'path'));
    case 'notebook_edit':
      return paths(field(input, 'notebook_path', 'file_path'));
    case 'glob':
    case 'grep_search':
      return text(field(input, 'pattern'));
    default:
      return null;
  }
}

function readIfThere(file: string): string | null {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return null; // absent or unreadable: the caller treats it as no file (a probe)
  }
}

function jsonObject(text: string): Record<string, unknown> | null {
  try {
    const v = parseJsonc(text);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null; // not JSON: the caller treats it as no settings object
  }
}

/** Whether `now` is `before` with only Qwen's "$version" added (same keys, same values, same order). */
function onlyVersionAdded(before: string, now: string): boolean {
  const b = jsonObject(before);
  const n = jsonObject(now);
  if (!b || !n || Object.hasOwn(b, VERSION_KEY) || !Object.hasOwn(n, VERSION_KEY)) return false;
  const { [VERSION_KEY]: _added, ...rest } = n;
  void _added;
  return JSON.stringify(rest) === JSON.stringify(b);
}

/** Puts back the settings files Qwen only stamped with "$version" during the run; warnings. */
function restoreStamped(saved: Map<string, string>): string[] {
  const warnings: string[] = [];
  for (const [file, before] of saved) {
    const now = readIfThere(file);
    if (now === null || now === before || !onlyVersionAdded(before, now)) continue;
    try {
      const tmp = `${file}.agentsnap-${process.pid}.tmp`;
      fs.writeFileSync(tmp, before, { mode: fs.statSync(file).mode & 0o7777, flag: 'wx' });
      fs.renameSync(tmp, file);
    } catch (e) {
      warnings.push(
        `agentsnap: warning: Qwen Code added "$version" to ${file} and agentsnap could not put the file back: ${(e as Error).message}`,
      );
    }
  }
  return warnings;
}

/** What a run's injection left to undo, kept beside it so the next wrapper finishes it when this one was killed. */
interface RunState {
  owner: LockOwner;
  settingsFile: string;
  saved: Record<string, string>;
}

function finishRun(stateFile: string, state: RunState): string[] {
  fs.rmSync(state.settingsFile, { force: true });
  const warnings = restoreStamped(new Map(Object.entries(state.saved)));
  fs.rmSync(stateFile, { force: true });
  return warnings;
}

/** Finishes the runs whose wrapper was killed (its run settings file removed, stamped settings put back); lines to say. */
function recoverRuns(sessionsRoot: string): string[] {
  const lines: string[] = [];
  const runs = leftoverRunRecords<RunState>(sessionsRoot, 'qwen-run-');
  for (const { session, entry, state } of runs) {
    const warnings = finishRun(entry, state);
    lines.push(
      ...(warnings.length > 0 ? warnings : [`agentsnap: finished the Qwen Code run of session ${session} (its wrapper had been killed)`]),
    );
  }
  return lines;
}

export const qwen: AgentAdapter = {
  name: 'qwen',
  product: 'qwen-code',
  displayName: 'Qwen Code',
  isCommand: (arg, base) => base === 'qwen' || base === 'qwen-code' || arg.includes('@qwen-code/qwen-code'),
  hookSettingsFiles: { project: ['.qwen/settings.json'], user: ['.qwen/settings.json'] },
  describeCall: describeQwenCall,
  // The model's call id (its transcript's functionCall.id), rather than Qwen's own tool_use_id: what a fork looks for.
  refineCall(call, payload) {
    if (typeof payload.tool_call_id === 'string' && payload.tool_call_id) call.toolUseId = payload.tool_call_id;
  },
  ownsTranscript: (file, sessionAgent) => (sessionAgent !== null && /qwen/i.test(sessionAgent)) || file.includes('/.qwen/projects/'),
  forkConversation: (at, opts) => forkQwenChat(at, opts),
  /** This run's hooks (and --mcp server) in a system settings file of its own, named by QWEN_CODE_SYSTEM_SETTINGS_PATH. */
  prepareRun(run) {
    const given = run.env.QWEN_CODE_SYSTEM_SETTINGS_PATH;
    let base: Record<string, unknown> = {};
    const givenText = given ? readIfThere(given) : null;
    if (given && givenText !== null && givenText.trim()) {
      const parsed = jsonObject(givenText);
      if (!parsed) {
        throw errors.invalidConfig(
          `${given} (QWEN_CODE_SYSTEM_SETTINGS_PATH) is not a JSON object; agentsnap cannot add its hooks to it for this run.`,
          {
            hint: 'Fix the file (Qwen Code would not read it either), then run the same command again.',
            data: { file: given },
          },
        );
      }
      base = parsed;
    }
    // Qwen's default command hook timeout is 60 s (seconds, its unit for values under 1000): a first snapshot of a big tree may need more.
    const hook = (ev: string): HookGroup => ({
      matcher: '*',
      hooks: [{ type: 'command', command: run.hookCommand(ev, { session: run.session, worktree: run.worktree }), timeout: 600 }],
    });
    let settings = withHooks(base, {
      PreToolUse: [hook('PreToolUse')],
      PostToolUse: [hook('PostToolUse')],
      PostToolUseFailure: [hook('PostToolUseFailure')],
    });
    if (run.mcp) settings = withMcpServer(settings, { command: run.mcp.command, args: run.mcp.args }, given ?? 'the run settings');
    ensureStateDir(run.sessionDir);
    const tag = `${process.pid}-${Date.now().toString(36)}`;
    const file = path.join(run.sessionDir, `qwen-settings-${tag}.json`);
    replaceStateFile(file, `${JSON.stringify(settings, null, 2)}\n`);
    // The settings files Qwen may stamp with "$version" during the run, as they are now.
    const home = run.env.HOME || os.homedir();
    const saved = new Map<string, string>();
    for (const f of new Set([
      path.join(home, '.qwen', 'settings.json'),
      path.join(run.cwd, '.qwen', 'settings.json'),
      ...(run.worktree ? [path.join(run.worktree, '.qwen', 'settings.json')] : []),
    ])) {
      const t = readIfThere(f);
      if (t !== null) saved.set(f, t);
    }
    const state: RunState = { owner: currentOwner('qwen run'), settingsFile: file, saved: Object.fromEntries(saved) };
    const stateFile = path.join(run.sessionDir, `qwen-run-${tag}.json`);
    replaceStateFile(stateFile, `${JSON.stringify(state)}\n`);
    return { env: { QWEN_CODE_SYSTEM_SETTINGS_PATH: file }, finish: () => finishRun(stateFile, state) };
  },
  // A killed wrapper's run: its settings file goes, and the settings Qwen only stamped are put back.
  recover: (sessionsRoot) => recoverRuns(sessionsRoot),
  init: {
    file: '.qwen/settings.json',
    events: [
      ['PreToolUse', true],
      ['PostToolUse', true],
      ['PostToolUseFailure', true],
      ['SessionEnd', false],
    ],
    matcher: '*',
    personal: false,
    trackedHint: 'Qwen Code has no other project settings file; run the agent as `agentsnap wrap -- qwen` instead.',
    agentKeys: [VERSION_KEY],
    // Its MCP servers live in the same file, under mcpServers.
    mcp: jsonMcpLayout('.qwen/settings.json', {
      personal: false,
      trackedHint: 'Qwen Code has no other project settings file; run the agent as `agentsnap wrap --mcp -- qwen` instead.',
    }),
  },
};
