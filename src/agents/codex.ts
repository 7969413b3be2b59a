// Codex CLI: everything agentsnap knows about it.
// - wrap: Codex reads hooks from every config layer, including `-c key=value`
//   overrides (its "session flags" layer). Hooks it has not seen before run
//   only once trusted: a `hooks.state.<key>.trusted_hash` in a user-controlled
//   layer, which `-c` is too. So agentsnap passes its hooks and their trust
//   as `-c` flags (codex-rs/hooks/src/engine/discovery.rs, config_rules.rs).
//   If a Codex release changes that identity, its hooks silently stop running
//   under wrap: test/agents-e2e.test.ts (pinned version) catches it.
// - init: .codex/hooks.json (read for trusted projects; Codex asks the user to
//   review new hooks once before it runs them).
// - Hook payloads use Claude Code's field names; PostToolUse has no exit code:
//   the rollout file (transcript_path) says how the call ended.
import fs from 'node:fs';
import { createHash } from 'node:crypto';
import type { AgentAdapter } from './adapter.js';

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
  return `sha256:${createHash('sha256').update(JSON.stringify(canonical(identity))).digest('hex')}`;
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

/**
 * How a Codex tool call ended, from its rollout file (transcript_path): Codex
 * gives PostToolUse no exit code, but has written the call's `item_completed`
 * event (`status`, `exit_code`) by then. Null when it cannot be told.
 */
export function codexCallResult(file: string, callId: string): { failed: boolean; exitCode: number | null } | null {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return null;
  }
  try {
    const size = fs.fstatSync(fd).size;
    const from = Math.max(0, size - 4 * 1024 * 1024);
    const buf = Buffer.alloc(size - from);
    fs.readSync(fd, buf, 0, buf.length, from);
    const lines = buf.toString('utf8').split('\n');
    for (let i = lines.length - 1; i >= 0; i--) {
      const line = lines[i] as string;
      if (!line.includes(callId) || !line.includes('item_completed')) continue;
      try {
        const item = (JSON.parse(line) as { payload?: { type?: string; item?: { id?: string; status?: string; exit_code?: unknown } } }).payload;
        if (item?.type !== 'item_completed' || item.item?.id !== callId) continue;
        const exitCode = typeof item.item.exit_code === 'number' ? item.item.exit_code : null;
        return { failed: item.item.status === 'failed' || (exitCode !== null && exitCode !== 0), exitCode };
      } catch {
        /* a partial line at the start of the window */
      }
    }
    return null;
  } catch {
    return null;
  } finally {
    fs.closeSync(fd);
  }
}

export const codex: AgentAdapter = {
  name: 'codex',
  product: 'codex-cli',
  displayName: 'Codex CLI',
  isCommand: (arg, base) => base === 'codex' || arg.includes('@openai/codex'),
  hookSettingsFiles: { project: ['.codex/hooks.json'], user: ['.codex/hooks.json'] },
  // Its rollout (~/.codex/sessions/…/rollout-*.jsonl): recorded, but no fork of it is written (undo --chat says so).
  ownsTranscript: (file, sessionAgent) => (sessionAgent !== null && /codex/i.test(sessionAgent)) || /\/\.codex\/sessions\//.test(file) || /\/rollout-[^/]*\.jsonl$/.test(file),
  callFailed(call) {
    if (call.status !== 'done' || !call.transcriptPath || !call.toolUseId) return null;
    const result = codexCallResult(call.transcriptPath, call.toolUseId);
    if (!result?.failed) return null;
    return result.exitCode !== null ? `Exit code ${result.exitCode}` : 'failed';
  },
  /** The codex command with agentsnap's hooks, trusted for this run only, as `-c` overrides (no file is edited). */
  wrapArgv: (run) => [...run.command.slice(0, run.at + 1), ...codexConfigOverrides((ev) => run.hookCommand(ev)), ...run.command.slice(run.at + 1)],
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
  },
};
