// Codex CLI's rollout (part of the Codex adapter, codex.ts): forking it. A
// rollout is `<CODEX_HOME>/sessions/YYYY/MM/DD/rollout-<local time>-<id>.jsonl`,
// one JSON record a line (`{timestamp, ordinal, type, payload}`): a
// `session_meta` line first (payload.id = payload.session_id = the thread id),
// then `response_item`s (what the model is sent back on resume: messages,
// function_call / custom_tool_call with `call_id`, their outputs), `event_msg`s
// and bookkeeping. The fork (checked on 0.171.0: `codex exec resume <id>` sends
// exactly the kept items) is a copy of the lines before the model response that
// holds step N's call, every string value equal to the old id replaced by the
// new one, written under the new id in today's directory, as Codex names a
// new session; the original is never changed. The session_meta carries the
// marks Codex's own `codex fork` writes (`forked_from_id`,
// `forked_from_ordinal_exclusive`), not its `history_base`, which points into
// the parent for the lines a Codex fork does not copy: a copy stays whole when
// the original goes, and older releases read it too.
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { errors } from '../base/errors.js';
import { shellQuote } from '../base/shell.js';
import type { ChatCompact, ChatFork, ConversationEntry, ConversationSize, DigestBuilder, ForkPoint } from './adapter.js';

interface Rec {
  raw: string;
  obj: { type?: unknown; payload?: Record<string, unknown> } | null;
}

/** The response items the model produced (one model response is a run of these). */
const MODEL_ITEMS = new Set([
  'message:assistant',
  'reasoning',
  'function_call',
  'custom_tool_call',
  'local_shell_call',
  'web_search_call',
  'tool_search_call',
  'image_generation_call',
]);
/** Events that report a model item (their item goes with it). */
const MODEL_EVENTS = new Set(['agent_message', 'agent_reasoning', 'agent_reasoning_raw_content', 'agent_reasoning_section_break']);
const CALL_ITEMS = new Set(['function_call', 'custom_tool_call', 'local_shell_call']);

function parse(text: string): Rec[] {
  const out: Rec[] = [];
  for (const raw of text.split('\n')) {
    if (raw.trim() === '') continue;
    let obj: Rec['obj'] = null;
    try {
      const v = JSON.parse(raw) as unknown;
      if (v && typeof v === 'object' && !Array.isArray(v)) obj = v as Rec['obj'];
    } catch {
      /* kept as is */
    }
    out.push({ raw, obj });
  }
  return out;
}

function itemKind(r: Rec): string | null {
  if (r.obj?.type !== 'response_item' || !r.obj.payload) return null;
  const p = r.obj.payload;
  return p.type === 'message' ? `message:${String(p.role)}` : String(p.type);
}

function isModelLine(r: Rec): boolean {
  const kind = itemKind(r);
  if (kind !== null) return MODEL_ITEMS.has(kind);
  if (r.obj?.type !== 'event_msg' || !r.obj.payload) return false;
  const p = r.obj.payload;
  if (MODEL_EVENTS.has(String(p.type))) return true;
  // 0.171 reports each item done: the agent's own items go with the response.
  const item = p.item as { type?: unknown } | undefined;
  return (p.type === 'item_completed' || p.type === 'item_started') && (item?.type === 'AgentMessage' || item?.type === 'Reasoning');
}

/** The call ids of a record holding a tool call. */
function callId(r: Rec): string | null {
  const kind = itemKind(r);
  if (kind === null || !CALL_ITEMS.has(kind)) return null;
  const p = r.obj?.payload as Record<string, unknown>;
  return typeof p.call_id === 'string' ? p.call_id : typeof p.id === 'string' ? p.id : null;
}

/** Where to cut for the call `toolUseId`: the first line of the model response holding it, and the other calls of that response. */
export function findRolloutCut(recs: Rec[], toolUseId: string): { index: number; sharedWith: number } | null {
  const at = recs.findIndex((r) => callId(r) === toolUseId);
  if (at === -1) return null;
  let first = at;
  while (first > 0 && isModelLine(recs[first - 1] as Rec)) first--;
  let last = at;
  while (last + 1 < recs.length && isModelLine(recs[last + 1] as Rec)) last++;
  const calls = recs.slice(first, last + 1).filter((r) => callId(r) !== null).length;
  return { index: first, sharedWith: Math.max(0, calls - 1) };
}

/** A UUID v7 (time-ordered), the kind of id Codex gives its threads. */
export function uuidv7(now = Date.now()): string {
  const b = randomBytes(16);
  b.writeUIntBE(now, 0, 6);
  b[6] = 0x70 | ((b[6] as number) & 0x0f);
  b[8] = 0x80 | ((b[8] as number) & 0x3f);
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const pad = (n: number) => String(n).padStart(2, '0');

/** The rollout path Codex gives a session started at `d` (local time) under `root` (`<CODEX_HOME>/sessions`). */
function rolloutPath(root: string, d: Date, id: string): string {
  const day = path.join(root, String(d.getFullYear()), pad(d.getMonth() + 1), pad(d.getDate()));
  return path.join(
    day,
    `rollout-${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}-${pad(d.getMinutes())}-${pad(d.getSeconds())}-${id}.jsonl`,
  );
}

/** `<CODEX_HOME>/sessions` of a rollout in its YYYY/MM/DD directory; else the rollout's own directory. */
function sessionsRoot(file: string): string {
  const dir = path.dirname(file);
  const parts = dir.split(path.sep);
  const tail = parts.slice(-3);
  return tail.length === 3 && /^\d{4}$/.test(tail[0] as string) && /^\d{2}$/.test(tail[1] as string) && /^\d{2}$/.test(tail[2] as string)
    ? parts.slice(0, -3).join(path.sep)
    : dir;
}

/** Reads a rollout (or throws the error undo --chat reports, then printing a digest). */
export function readRollout(file: string): { recs: Rec[]; id: string; cwd: string | null } {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw errors.invalidArgument(`cannot read the Codex rollout ${file} (${(e as NodeJS.ErrnoException).code ?? 'error'}).`, {
      hint: 'It may have been moved or deleted; undo --chat prints a digest of the session instead.',
      data: { path: file },
    });
  }
  const recs = parse(text);
  const meta = recs.find((r) => r.obj?.type === 'session_meta')?.obj?.payload;
  const id = typeof meta?.id === 'string' ? meta.id : typeof meta?.session_id === 'string' ? meta.session_id : null;
  if (!id)
    throw errors.invalidArgument(`the Codex rollout ${file} has no session_meta line with the session id.`, { data: { path: file } });
  return { recs, id, cwd: typeof meta?.cwd === 'string' ? meta.cwd : null };
}

/** The line as the fork writes it: every JSON string equal to the old id (thread_id, session_id…) is the new id. */
export function withThreadId(r: Rec, oldId: string, newId: string): string {
  // Textual, on the quoted value only: re-serialising would round big integers; an id inside a text stays.
  return r.raw.split(JSON.stringify(oldId)).join(JSON.stringify(newId));
}

/**
 * The session_meta line marked as Codex's own `codex fork` marks a fork (0.171.0: `forked_from_id`, the parent's
 * thread id, and `forked_from_ordinal_exclusive`, where the copied part of the parent ends, right after `id`; its
 * TUI then says "Thread forked from <id>"), textually: any marks the parent carried (a fork of a fork) are replaced.
 * No `history_base`: the copy holds every line itself.
 */
export function markForked(metaLine: string, newId: string, parentId: string, ordinalExclusive: number | null): string {
  const cleared = metaLine.replace(/,"forked_from_id":"[^"]*"/, '').replace(/,"forked_from_ordinal_exclusive":\d+/, '');
  const marks = `,"forked_from_id":${JSON.stringify(parentId)}${ordinalExclusive !== null ? `,"forked_from_ordinal_exclusive":${ordinalExclusive}` : ''}`;
  const idField = `"id":${JSON.stringify(newId)}`;
  const at = cleared.search(new RegExp(`[{,]${idField.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
  if (at === -1) return cleared;
  const end = at + 1 + idField.length;
  return cleared.slice(0, end) + marks + cleared.slice(end);
}

/** The session_meta line (the first) of `lines` marked as forked from `parentId`. */
function withForkMarks(lines: string[], newId: string, parentId: string, ordinalExclusive: number | null): string[] {
  const i = lines.findIndex((l) => /"type":"session_meta"/.test(l));
  if (i === -1) return lines;
  const out = [...lines];
  out[i] = markForked(lines[i] as string, newId, parentId, ordinalExclusive);
  return out;
}

/** Writes a new rollout from `lines` under a new id; returns the fork as undo prints it. */
export function writeRolloutFork(original: string, lines: string[], fork: { cwd: string; newId?: string; sharedWith: number }): ChatFork {
  const now = new Date();
  const id = fork.newId ?? uuidv7(now.getTime());
  const file = rolloutPath(sessionsRoot(original), now, id);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, lines.length > 0 ? lines.join('\n') + '\n' : '', { mode: 0o600, flag: 'wx' });
  fs.renameSync(tmp, file);
  return {
    kind: 'transcript',
    agent: 'codex',
    file,
    original,
    sessionId: id,
    cwd: fork.cwd,
    resumeCommand: `codex resume ${id}`,
    shellCommand: `cd ${shellQuote(fork.cwd)} && codex resume ${id}`,
    lines: lines.length,
    sharedWith: fork.sharedWith,
    subagentCall: null,
    subagentStep: null,
  };
}

/** A new rollout cut before step N's call, next to Codex's others (the original is never modified). */
export function forkCodexRollout(step: ForkPoint, opts: { cwd: string; newId?: string }): ChatFork {
  const file = step.transcript?.path;
  if (!file) throw errors.invalidArgument(`step ${step.step} has no transcript position.`);
  if (!step.toolUseId)
    throw errors.invalidArgument(`step ${step.step} has no call id to find in the Codex rollout ${file}.`, { data: { path: file } });
  const { recs, id: oldId, cwd } = readRollout(file);
  const cut = findRolloutCut(recs, step.toolUseId);
  if (!cut) {
    throw errors.invalidArgument(`the tool call of step ${step.step} is not in the Codex rollout ${file}.`, {
      data: { path: file, toolUseId: step.toolUseId },
    });
  }
  const newId = opts.newId ?? uuidv7();
  const ordinal = (recs[cut.index]?.obj as { ordinal?: unknown } | null)?.ordinal;
  const lines = withForkMarks(
    recs.slice(0, cut.index).map((r) => withThreadId(r, oldId, newId)),
    newId,
    oldId,
    typeof ordinal === 'number' && Number.isSafeInteger(ordinal) ? ordinal : null,
  );
  return writeRolloutFork(file, lines, { cwd: cwd ?? opts.cwd, newId, sharedWith: cut.sharedWith });
}

/** Text of a Responses API message's content items. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((c) => (c && typeof c === 'object' && typeof (c as { text?: unknown }).text === 'string' ? (c as { text: string }).text : ''))
    .join('\n');
}

/** A user message Codex adds itself (environment, instructions, AGENTS.md), not one the user typed. */
function isContextMessage(p: Record<string, unknown>): boolean {
  if (p.role === 'developer' || p.role === 'system') return true;
  return (
    p.role === 'user' &&
    /^\s*(<environment_context>|<user_instructions>|<skills_instructions>|<permissions|# AGENTS\.md)/.test(contentText(p.content))
  );
}

/** What the model is sent of a rollout: its conversation items (context messages left out) and their characters. */
function rolloutSize(recs: Rec[]): ConversationSize {
  let messages = 0;
  let chars = 0;
  for (const r of recs) {
    const p = itemKind(r) !== null ? (r.obj?.payload as Record<string, unknown>) : null;
    if (!p || (p.type === 'message' && isContextMessage(p))) continue;
    messages++;
    chars +=
      p.type === 'message' ? contentText(p.content).length : JSON.stringify(p.arguments ?? p.output ?? p.input ?? p.content ?? '').length;
  }
  return { messages, chars };
}

/** The conversation entries of rollout records (user prompts, the agent's text, its calls). */
function rolloutEntries(recs: Rec[]): ConversationEntry[] {
  const out: ConversationEntry[] = [];
  for (const r of recs) {
    const p = itemKind(r) !== null ? (r.obj?.payload as Record<string, unknown>) : null;
    if (!p) continue;
    const time = typeof (r.obj as { timestamp?: unknown }).timestamp === 'string' ? (r.obj as { timestamp: string }).timestamp : null;
    if (p.type === 'message' && !isContextMessage(p)) {
      const text = contentText(p.content);
      if (text.trim()) out.push({ kind: p.role === 'assistant' ? 'assistant' : 'user', text, uuid: null, time });
    } else if (CALL_ITEMS.has(String(p.type))) {
      out.push({
        kind: 'tool',
        toolUseId: String(p.call_id ?? ''),
        name: typeof p.name === 'string' ? p.name : null,
        input: p.arguments ?? p.input,
        uuid: null,
        time,
      });
    }
  }
  return out;
}

/** Lines before the cut a compacted rollout keeps: the session's own records and the context Codex gave the model. */
function isPreamble(r: Rec): boolean {
  const t = r.obj?.type;
  if (t === 'session_meta' || t === 'turn_context' || t === 'world_state') return true;
  if (t === 'event_msg') return ['task_started', 'thread_settings_applied'].includes(String(r.obj?.payload?.type));
  const p = itemKind(r) !== null ? (r.obj?.payload as Record<string, unknown>) : null;
  return !!p && p.type === 'message' && isContextMessage(p);
}

/** Numbers the records' `ordinal` fields 0, 1, 2… again (textually: the rest of each line is kept byte for byte). */
function renumber(lines: string[]): string[] {
  return lines.map((l, i) => l.replace(/"ordinal":\d+/, `"ordinal":${i}`));
}

/**
 * A new rollout in which everything before step N's model response is one user message, the digest, after
 * the context Codex gave the model (session_meta, developer and environment messages, turn context), and
 * everything from that response on is kept.
 */
export function compactCodexRollout(step: ForkPoint, digest: DigestBuilder, opts: { cwd: string; newId?: string }): ChatCompact {
  const file = step.transcript?.path;
  if (!file) throw errors.invalidArgument(`step ${step.step} has no transcript position.`);
  if (!step.toolUseId)
    throw errors.invalidArgument(`step ${step.step} has no call id to find in the Codex rollout ${file}.`, { data: { path: file } });
  const { recs, id: oldId, cwd } = readRollout(file);
  const cut = findRolloutCut(recs, step.toolUseId);
  if (!cut)
    throw errors.invalidArgument(`the tool call of step ${step.step} is not in the Codex rollout ${file}.`, {
      data: { path: file, toolUseId: step.toolUseId },
    });
  const prior = recs.slice(0, cut.index);
  const text = digest(rolloutEntries(prior), rolloutEntries(recs.slice(cut.index)));
  const newId = opts.newId ?? uuidv7();
  const at = (recs[cut.index]?.obj as { timestamp?: unknown } | null)?.timestamp;
  const summary: Rec = {
    raw: JSON.stringify({
      timestamp: typeof at === 'string' ? at : new Date().toISOString(),
      ordinal: 0,
      type: 'response_item',
      payload: { type: 'message', role: 'user', content: [{ type: 'input_text', text }] },
    }),
    obj: null,
  };
  const kept = [...prior.filter(isPreamble), summary, ...recs.slice(cut.index)];
  // Forked from the original, but not a copy of it up to an ordinal: no forked_from_ordinal_exclusive.
  const lines = withForkMarks(renumber(kept.map((r) => withThreadId(r, oldId, newId))), newId, oldId, null);
  const fork = writeRolloutFork(file, lines, { cwd: cwd ?? opts.cwd, newId, sharedWith: cut.sharedWith });
  return { ...fork, before: rolloutSize(recs), after: rolloutSize(parse(lines.join('\n'))), digest: text };
}
