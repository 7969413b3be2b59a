// OpenCode's conversations are rows of its SQLite database, which agentsnap never writes: a fork goes through
// OpenCode's own commands. `opencode export <id>` prints a session as JSON ({info, messages: [{info, parts}]});
// the messages before the one holding step N's call are kept, and `opencode import <file>` (run in the project
// directory: it files the session under the project it runs in) adds them as a new session. Every session,
// message and part id is given a new random part first: import skips a message or part whose id exists
// (onConflictDoNothing), so with the original ids the fork would be empty, and it updates a session whose id
// exists. The time part of each id is kept, as OpenCode orders messages and parts by id.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { errors } from '../base/errors.js';
import { shellQuote } from '../base/shell.js';
import type { ChatFork, ForkPoint } from './adapter.js';
import { type Obj, isObj } from './plan.js';

/** How a step's transcript names an OpenCode session (its conversation is not a file). */
export const OPENCODE_SESSION_PREFIX = 'opencode-session:';

export function sessionRef(sessionId: string): string {
  return `${OPENCODE_SESSION_PREFIX}${sessionId}`;
}

/** An OpenCode id: its kind, 12 hex digits of time (and counter), 14 random base62 characters. */
const OPENCODE_ID = /^(ses|msg|prt)_([0-9a-f]{12})([0-9A-Za-z]{14})$/;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `id` with a new random part (same kind and time part: the same place in OpenCode's order). */
export function renewedId(id: string, random: () => Buffer = () => randomBytes(14)): string {
  const m = OPENCODE_ID.exec(id);
  if (!m) throw errors.invalidArgument(`${id} is not an OpenCode id.`);
  const bytes = random();
  let tail = '';
  for (let i = 0; i < 14; i++) tail += BASE62[(bytes[i] as number) % 62];
  return `${m[1]}_${m[2]}${tail}`;
}

/** `v` with every string that is a key of `ids` replaced by its value (ids are whole strings wherever they are). */
function withIds(v: unknown, ids: Map<string, string>): unknown {
  if (typeof v === 'string') return ids.get(v) ?? v;
  if (Array.isArray(v)) return v.map((x) => withIds(x, ids));
  if (isObj(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, withIds(x, ids)]));
  return v;
}

export interface OpenCodeExportFork {
  /** The new session, as `opencode import` takes it. */
  session: { info: Obj; messages: { info: Obj; parts: Obj[] }[] };
  sessionId: string;
  /** Messages kept. */
  messages: number;
  /** Other tool calls of the message holding the step's call (cut with it). */
  sharedWith: number;
}

/**
 * From an exported session: a new one holding the messages before the one with the tool call `toolUseId`, every
 * session, message and part id renewed (references to them too: a message's parentID, a part's messageID).
 */
export function forkOpenCodeExport(
  exported: unknown,
  toolUseId: string,
  opts: { title?: string; random?: () => Buffer } = {},
): OpenCodeExportFork {
  if (!isObj(exported) || !isObj(exported.info) || typeof exported.info.id !== 'string' || !Array.isArray(exported.messages))
    throw errors.invalidArgument('the OpenCode export is not a session (no info and messages).');
  const messages = exported.messages.filter(
    (m): m is { info: Obj; parts: Obj[] } => isObj(m) && isObj(m.info) && typeof m.info.id === 'string' && Array.isArray(m.parts),
  );
  const toolCalls = (m: { parts: Obj[] }) => m.parts.filter((p) => isObj(p) && p.type === 'tool' && typeof p.callID === 'string');
  const at = messages.findIndex((m) => toolCalls(m).some((p) => p.callID === toolUseId));
  if (at < 0) throw errors.invalidArgument(`the tool call ${toolUseId} is not in the OpenCode session ${exported.info.id}.`);
  const kept = messages.slice(0, at);
  const ids = new Map<string, string>();
  const renew = (id: unknown) => {
    if (typeof id === 'string' && !ids.has(id)) ids.set(id, renewedId(id, opts.random));
  };
  renew(exported.info.id);
  for (const m of kept) {
    renew(m.info.id);
    for (const p of m.parts) renew(p.id);
  }
  const info = withIds(exported.info, ids) as Obj;
  if (opts.title !== undefined) info.title = opts.title;
  return {
    session: { info, messages: kept.map((m) => withIds(m, ids) as { info: Obj; parts: Obj[] }) },
    sessionId: ids.get(exported.info.id) as string,
    messages: kept.length,
    sharedWith: toolCalls(messages[at] as { parts: Obj[] }).length - 1,
  };
}

/** Runs `opencode <args>` in `cwd`; its stdout, or an error in OpenCode's words. */
function opencodeCommand(args: string[], cwd: string, what: string): string {
  const res = spawnSync('opencode', args, {
    cwd,
    encoding: 'utf8',
    maxBuffer: 1 << 30,
    timeout: 300_000,
    env: { ...process.env, PWD: cwd },
  });
  if (res.error || res.status !== 0) {
    const why = res.error
      ? (res.error as NodeJS.ErrnoException).code === 'ENOENT'
        ? 'no `opencode` on PATH'
        : res.error.message
      : (res.stderr || res.stdout || `exit code ${res.status}`).trim().split('\n').slice(-3).join(' ');
    throw errors.invalidArgument(`\`opencode ${args[0]}\` failed (${what}): ${why}`, {
      hint: 'Is `opencode` on PATH, with the same home directory as the run that recorded the session?',
    });
  }
  return res.stdout;
}

/** A new OpenCode session holding the conversation before step N's call (the original is left as it is). */
export function forkOpenCodeSession(step: ForkPoint, opts: { cwd: string }): ChatFork {
  const ref = step.transcript?.path;
  if (!ref?.startsWith(OPENCODE_SESSION_PREFIX)) throw errors.invalidArgument(`step ${step.step} names no OpenCode session.`);
  if (!step.toolUseId) throw errors.invalidArgument(`step ${step.step} has no call id to find in its OpenCode session.`);
  const original = ref.slice(OPENCODE_SESSION_PREFIX.length);
  const out = opencodeCommand(['export', original], opts.cwd, `exporting session ${original}`);
  let exported: unknown;
  try {
    exported = JSON.parse(out.slice(out.indexOf('{')));
  } catch {
    throw errors.invalidArgument(`\`opencode export ${original}\` printed no JSON.`);
  }
  const title = isObj(exported) && isObj(exported.info) && typeof exported.info.title === 'string' ? exported.info.title : 'session';
  const fork = forkOpenCodeExport(exported, step.toolUseId, { title: `${title} (agentsnap: before step ${step.step})` });
  // Where the export says the session ran (import files the new one under the project it runs in).
  const info = isObj(exported) && isObj(exported.info) ? exported.info : {};
  const dir = typeof info.directory === 'string' && fs.existsSync(info.directory) ? info.directory : opts.cwd;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agentsnap-opencode-'));
  try {
    const file = path.join(tmp, `${fork.sessionId}.json`);
    fs.writeFileSync(file, JSON.stringify(fork.session), { mode: 0o600 });
    opencodeCommand(['import', file], dir, `importing the fork ${fork.sessionId}`);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  const resumeCommand = `opencode run --session ${fork.sessionId}`;
  return {
    kind: 'transcript',
    agent: 'opencode',
    file: sessionRef(fork.sessionId),
    original: ref,
    sessionId: fork.sessionId,
    cwd: dir,
    resumeCommand,
    shellCommand: `cd ${shellQuote(dir)} && ${resumeCommand}`,
    lines: fork.messages,
    sharedWith: fork.sharedWith,
    subagentCall: null,
    subagentStep: null,
  };
}
