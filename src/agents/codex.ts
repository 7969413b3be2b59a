// Codex CLI: everything agentsnap knows about it.
// - wrap: Codex reads hooks from every config layer, including `-c key=value`
//   overrides (its "session flags" layer). Hooks it has not seen before run
//   only once trusted: a `hooks.state.<key>.trusted_hash` in a user-controlled
//   layer, which `-c` is too. So agentsnap passes its hooks and their trust
//   as `-c` flags (codex-rs/hooks/src/engine/discovery.rs, config_rules.rs).
//   If a Codex release changes that identity, its hooks silently stop running
//   under wrap: test/agents/agents-e2e.test.ts (pinned version) catches it.
// - init: .codex/hooks.json (read for trusted projects; Codex asks the user to
//   review new hooks once before it runs them).
// - MCP (`agentsnap mcp`): `init --mcp` declares it in .codex/config.toml
//   (`[mcp_servers.agentsnap]`), `wrap --mcp` as `-c mcp_servers.agentsnap.*`.
// - Hook payloads use Claude Code's field names; PostToolUse has no exit code:
//   the rollout file (transcript_path) says how the call ended.
import { createHash } from 'node:crypto';
import { readFileTail } from '../base/fsutil.js';
import { errors } from '../base/errors.js';
import type { AgentAdapter, McpInitLayout, McpServerCommand } from './adapter.js';
import { MCP_SERVER_NAME } from './settings-file.js';
import { commandText, field, paths, patchPaths, shell, type CallDescription } from './describe.js';
import { obj, planFromList } from './plan.js';
import { compactCodexRollout, forkCodexRollout } from './codex-rollout.js';

/**
 * Codex's calls as its hooks report them: its shell tools as `Bash` with `command`; `apply_patch` with the
 * whole patch text in `command` (openai/codex#18391), whose `*** Update File:` lines name the files.
 */
function describeCodexCall(tool: string | null, input: unknown): CallDescription | null {
  if (tool === 'apply_patch') {
    const patch = field(input, 'command', 'input', 'patch');
    return patch === null ? null : paths(...patchPaths(patch));
  }
  if (tool === 'Bash' || tool === 'shell' || tool === 'exec_command' || tool === 'local_shell') {
    const o = input && typeof input === 'object' ? (input as Record<string, unknown>) : {};
    return shell(commandText(o.command) ?? commandText(o.cmd));
  }
  return null;
}

/** Where Codex says `-c` overrides come from; hook state keys name it. */
const CODEX_SESSION_FLAGS_SOURCE = '/<session-flags>/config.toml';
const CODEX_EVENT_LABELS: Record<string, string> = { PreToolUse: 'pre_tool_use', PostToolUse: 'post_tool_use', SessionEnd: 'session_end' };
/** Codex's default hook timeout (seconds), part of the normalized hook it hashes. */
const CODEX_DEFAULT_TIMEOUT = 600;

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

/**
 * The hash Codex trusts a command hook by: sha256 of the canonical JSON of
 * {event_name, matcher, hooks: [normalized handler]} (codex-rs/config/src/fingerprint.rs
 * `version_for_toml`, discovery.rs `command_hook_hash`).
 */
export function codexTrustHash(event: string, matcher: string | null, command: string): string {
  const label = CODEX_EVENT_LABELS[event] ?? event;
  const handler = { type: 'command', command, timeout: CODEX_DEFAULT_TIMEOUT, async: false };
  const identity: Record<string, unknown> = { event_name: label, hooks: [handler] };
  if (matcher !== null) identity.matcher = matcher;
  return `sha256:${createHash('sha256')
    .update(JSON.stringify(canonical(identity)))
    .digest('hex')}`;
}

/** A TOML basic string (JSON's escapes are TOML's, plus DEL, which TOML wants escaped). */
function tomlString(s: string): string {
  return JSON.stringify(s).replace(/\x7f/g, '\\u007f');
}

/**
 * `-c` overrides that make Codex run `commandFor(event)` before and after
 * every tool call in this run only, trusted.
 */
export function codexConfigOverrides(commandFor: (event: string) => string, events: string[] = ['PreToolUse', 'PostToolUse']): string[] {
  const out: string[] = [];
  const state: string[] = [];
  for (const ev of events) {
    const matcher = ev === 'SessionEnd' ? null : '*';
    const command = commandFor(ev);
    const group = `{${matcher === null ? '' : `matcher=${tomlString(matcher)},`}hooks=[{type="command",command=${tomlString(command)}}]}`;
    out.push('-c', `hooks.${ev}=[${group}]`);
    const key = `${CODEX_SESSION_FLAGS_SOURCE}:${CODEX_EVENT_LABELS[ev] ?? ev}:0:0`;
    state.push(`${tomlString(key)}={trusted_hash=${tomlString(codexTrustHash(ev, matcher, command))}}`);
  }
  out.push('-c', `hooks.state={${state.join(',')}}`);
  return out;
}

/** `-c` overrides declaring agentsnap's MCP server for one run (`wrap --mcp`). */
export function codexMcpOverrides(mcp: McpServerCommand | null): string[] {
  if (!mcp) return [];
  return [
    '-c',
    `mcp_servers.${MCP_SERVER_NAME}.command=${tomlString(mcp.command)}`,
    '-c',
    `mcp_servers.${MCP_SERVER_NAME}.args=[${mcp.args.map(tomlString).join(',')}]`,
  ];
}

const MCP_MARKER = '# agentsnap: added by `agentsnap init codex --mcp`, removed by `agentsnap init --remove codex`';

/** `text` without the table `init --mcp` appended (its marker line to the next table header) and the blank line it put before it. */
function withoutCodexMcpTable(text: string): string {
  const lines = text.split('\n');
  const at = lines.indexOf(MCP_MARKER);
  if (at < 0) return text;
  let end = at + 2;
  while (end < lines.length && !/^\s*\[/.test(lines[end]!)) end++;
  // Blank lines at its end belong to the table after it, if any.
  if (end < lines.length) while (end > at + 2 && lines[end - 1]!.trim() === '') end--;
  const start = at > 0 && lines[at - 1]!.trim() === '' ? at - 1 : at;
  const after = end < lines.length ? lines.slice(end) : start > 0 ? [''] : [];
  return [...lines.slice(0, start), ...after].join('\n');
}

/** `.codex/config.toml` as `init codex --mcp` edits it: one table appended, marked, and taken out again; the rest is left byte for byte. */
const codexMcpLayout: McpInitLayout = {
  file: '.codex/config.toml',
  personal: false,
  trackedHint:
    'A committed .codex/config.toml reaches everyone who clones the repository: run `agentsnap wrap --mcp -- codex` instead, or add the server to your own ~/.codex/config.toml.',
  note: 'Codex CLI reads .codex/config.toml only in projects you trust.',
  add(current, server) {
    const rest = withoutCodexMcpTable(current ?? '');
    // A table of that name that init did not write (or a dotted key of it) is the user's.
    if (
      new RegExp(
        `^\\s*(\\[\\s*mcp_servers\\s*\\.\\s*"?${MCP_SERVER_NAME}"?\\s*[\\].]|mcp_servers\\s*\\.\\s*"?${MCP_SERVER_NAME}"?\\s*[.=]|mcp_servers\\s*=.*\\b${MCP_SERVER_NAME}\\b)`,
        'm',
      ).test(rest)
    ) {
      throw errors.refused(
        `.codex/config.toml already declares an MCP server named ${MCP_SERVER_NAME} that init did not write; it is left as it is.`,
        {
          hint: 'Rename or remove that entry, then run init again.',
          data: { file: '.codex/config.toml' },
        },
      );
    }
    const table = `${MCP_MARKER}\n[mcp_servers.${MCP_SERVER_NAME}]\ncommand = ${tomlString(server.command)}\nargs = [${server.args.map(tomlString).join(', ')}]\n`;
    if (rest.trim() === '') return table;
    return `${rest}${rest.endsWith('\n') ? '' : '\n'}\n${table}`;
  },
  remove(current) {
    const rest = withoutCodexMcpTable(current);
    if (rest === current) return current;
    return rest.trim() === '' ? null : rest;
  },
};

/** How a Codex tool call ended, as its rollout tells it. */
export interface CodexCallResult {
  failed: boolean;
  exitCode: number | null;
  /** The failure in Codex's words (first line), when it gave one. */
  error: string | null;
}

function firstLine(v: unknown): string | null {
  if (typeof v !== 'string') return null;
  const line = v.trim().split('\n')[0]?.trim();
  return line ? line.slice(0, 500) : null;
}

/** A tool output as Codex writes it: a string, `{content}`, or content items. */
function outputText(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object') {
    const o = v as { content?: unknown; text?: unknown };
    if (typeof o.content === 'string') return o.content;
    if (Array.isArray(o.content))
      return o.content
        .map((c) => (c && typeof c === 'object' && typeof (c as { text?: unknown }).text === 'string' ? (c as { text: string }).text : ''))
        .join('\n');
    if (typeof o.text === 'string') return o.text;
  }
  return null;
}

function fromExit(exitCode: number | null, failed: boolean, error: string | null): CodexCallResult {
  return {
    failed: failed || (exitCode !== null && exitCode !== 0),
    exitCode,
    error: exitCode !== null && exitCode !== 0 ? `Exit code ${exitCode}` : error,
  };
}

/** One rollout record about the call, read tolerantly (fields of several Codex releases); null when it says nothing. */
function recordResult(line: string, callId: string): CodexCallResult | null {
  let rec: { payload?: Record<string, unknown> };
  try {
    rec = JSON.parse(line) as { payload?: Record<string, unknown> };
  } catch {
    return null; // a partial line at the start of the window
  }
  const p = rec.payload;
  if (!p || typeof p !== 'object') return null;
  const exitOf = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) ? v : null);
  switch (p.type) {
    case 'item_completed': {
      const item = p.item as { id?: unknown; status?: unknown; exit_code?: unknown } | undefined;
      if (item?.id !== callId) return null;
      return fromExit(exitOf(item.exit_code), item.status === 'failed', item.status === 'failed' ? 'failed' : null);
    }
    case 'patch_apply_end':
    case 'exec_command_end': {
      if (p.call_id !== callId) return null;
      const failed = p.success === false || p.status === 'failed';
      return fromExit(exitOf(p.exit_code), failed, failed ? (firstLine(p.stderr) ?? 'failed') : null);
    }
    case 'function_call_output':
    case 'custom_tool_call_output': {
      if (p.call_id !== callId) return null;
      const raw = p.output;
      let text = outputText(raw);
      let exitCode: number | null = null;
      let failed = !!raw && typeof raw === 'object' && (raw as { success?: unknown }).success === false;
      // The function form wraps its text as JSON: {output, metadata: {exit_code}}.
      if (text && text.trimStart().startsWith('{')) {
        try {
          const o = JSON.parse(text) as { output?: unknown; metadata?: { exit_code?: unknown } };
          exitCode = exitOf(o.metadata?.exit_code);
          text = typeof o.output === 'string' ? o.output : text;
        } catch {
          /* plain text that starts with a brace */
        }
      }
      // Freeform: "Exit code: N"; exec_command (0.171): "Process exited with code N".
      const shown = text ? /^(?:Exit code:|Process exited with code) (\d+)/m.exec(text) : null;
      if (exitCode === null && shown) exitCode = Number(shown[1]);
      // apply_patch that never ran (bad patch, file missing) says so instead of an exit code.
      if (text && /^apply_patch verification failed/m.test(text)) failed = true;
      return fromExit(exitCode, failed, failed ? (firstLine(text) ?? 'failed') : null);
    }
    default:
      return null;
  }
}

/**
 * How a Codex tool call ended, from its rollout file (transcript_path): Codex
 * gives PostToolUse no exit code, and fires no PostToolUse at all for an
 * apply_patch that fails, but has written the call's end by then: an
 * `item_completed` or `patch_apply_end`/`exec_command_end` event, or the
 * `function_call_output`/`custom_tool_call_output` the model is given. The
 * last record about the call decides. Null when nothing tells (still running,
 * or a format this does not know).
 */
export function codexCallResult(file: string, callId: string): CodexCallResult | null {
  const tail = readFileTail(file, 4 * 1024 * 1024);
  if (!tail) return null;
  const lines = tail.buf.toString('utf8').split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i] as string;
    if (!line.includes(callId)) continue;
    const result = recordResult(line, callId);
    if (result) return result;
  }
  return null;
}

export const codex: AgentAdapter = {
  // update_plan sends the whole plan: `plan: [{ step, status }]`.
  nextPlan: (_plan, tool, input) => (tool === 'update_plan' ? planFromList(obj(input)?.plan, ['step', 'text']) : null),
  name: 'codex',
  product: 'codex-cli',
  displayName: 'Codex CLI',
  turnWord: 'model response',
  isCommand: (arg, base) => base === 'codex' || arg.includes('@openai/codex'),
  hookSettingsFiles: { project: ['.codex/hooks.json'], user: ['.codex/hooks.json'] },
  // Its rollout (~/.codex/sessions/…/rollout-*.jsonl), forked by codex-rollout.ts.
  ownsTranscript: (file, sessionAgent) =>
    (sessionAgent !== null && /codex/i.test(sessionAgent)) || /\/\.codex\/sessions\//.test(file) || /\/rollout-[^/]*\.jsonl$/.test(file),
  forkConversation: (at, opts) => forkCodexRollout(at, opts),
  compactConversation: (at, digest, opts) => compactCodexRollout(at, digest, opts),
  callFailed(call) {
    if (call.status !== 'done' || !call.transcriptPath || !call.toolUseId) return null;
    const result = codexCallResult(call.transcriptPath, call.toolUseId);
    if (!result?.failed) return null;
    return result.error ?? 'failed';
  },
  // A call whose PostToolUse never comes (a failed apply_patch): its end is in the rollout.
  callEnded(transcriptPath, toolUseId) {
    const result = codexCallResult(transcriptPath, toolUseId);
    return result ? { status: result.failed ? 'failed' : 'done', error: result.failed ? (result.error ?? 'failed') : null } : null;
  },
  /** The codex command with agentsnap's hooks, trusted for this run only, as `-c` overrides (no file is edited). */
  wrapArgv: (run) => [
    ...run.command.slice(0, run.at + 1),
    ...codexConfigOverrides((ev) => run.hookCommand(ev)),
    ...codexMcpOverrides(run.mcp),
    ...run.command.slice(run.at + 1),
  ],
  init: {
    file: '.codex/hooks.json',
    events: [
      ['PreToolUse', true],
      ['PostToolUse', true],
      ['SessionEnd', false],
    ],
    matcher: '*',
    personal: false,
    trackedHint: 'Codex CLI has no other project settings file; run the agent as `agentsnap wrap -- codex` instead.',
    note: 'Codex CLI reads .codex/ only in projects you trust, and runs new hooks only after you review them once: type /hooks in Codex and trust the agentsnap hooks.',
    mcp: codexMcpLayout,
  },
  // What each of its calls was, for `log`.
  describeCall: describeCodexCall,
};
