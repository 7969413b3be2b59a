// Claude Code's transcript (part of the Claude adapter, claude.ts): reading its
// JSONL — where a tool call sits in it, the read-only calls no hook reported
// (for the session's transcript import), the conversation as entries for
// replay — and forking it: a new transcript (the original is never modified)
// in the same project folder, cut just before the assistant message holding
// step N's tool call, under a new session UUID, so `claude --resume <uuid>`
// continues from there and the model no longer sees the undone calls.
// Over 500 lines on purpose: Claude Code's transcript format is read in this one
// place (locating calls, the reads no hook saw, replay, the fork), so a change
// of that format is one file's.
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { errors } from '../base/errors.js';
import { readFileTail } from '../base/fsutil.js';
import { shellQuote } from '../base/shell.js';
import type {
  ChatCompact,
  ChatFork,
  ConversationEntry,
  ConversationSize,
  DigestBuilder,
  ForkPoint,
  ReadCallScan,
  ReadCallScanOptions,
  ToolCallLocation,
  TranscriptCall,
  TranscriptTail,
} from './adapter.js';

interface TranscriptLine {
  type?: string;
  uuid?: string;
  timestamp?: string;
  version?: string;
  isSidechain?: boolean;
  isMeta?: boolean;
  message?: { role?: string; model?: string; content?: unknown };
}

interface ContentBlock {
  type?: string;
  text?: string;
  id?: string;
  name?: string;
  input?: unknown;
  tool_use_id?: string;
}

function blocks(content: unknown): ContentBlock[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return Array.isArray(content) ? (content.filter((b) => b && typeof b === 'object') as ContentBlock[]) : [];
}

function holdsToolUse(line: TranscriptLine, toolUseId: string): boolean {
  return line.type === 'assistant' && blocks(line.message?.content).some((b) => b.type === 'tool_use' && b.id === toolUseId);
}

/** How far back from the end a pre hook looks for its tool call (the line was just written). */
const SCAN_LIMIT = 16 * 1024 * 1024;

/** The last SCAN_LIMIT bytes of a transcript; null when it cannot be read. Never throws. */
export function readTranscriptTail(file: string): TranscriptTail | null {
  return readFileTail(file, SCAN_LIMIT);
}

const SHAPE_NEEDLE = Buffer.from('"api-request-shape"');

/**
 * The tools Claude Code offered its model: the names in the newest `api-request-shape` line (2.1.3xx writes one
 * before the first request of each new shape of system prompt and tools: `shape.tools[].name`) at or after byte
 * `since`. One backward search of the tail past `since` (the previous import's floor: what a call before already
 * looked at), and one line parsed only when there is one there.
 */
export function toolsOffered(tail: TranscriptTail, since?: number): string[] | null {
  const lo = since === undefined ? 0 : Math.max(0, since - tail.from);
  if (lo >= tail.buf.length) return null;
  const buf = tail.buf.subarray(lo);
  let at = buf.lastIndexOf(SHAPE_NEEDLE);
  while (at !== -1) {
    const start = buf.lastIndexOf(0x0a, at) + 1;
    let end = buf.indexOf(0x0a, at);
    if (end === -1) end = buf.length;
    try {
      const line = JSON.parse(buf.subarray(start, end).toString('utf8')) as { type?: unknown; shape?: { tools?: unknown } };
      if (line.type === 'api-request-shape' && Array.isArray(line.shape?.tools)) {
        return line.shape.tools.flatMap((t) =>
          t && typeof (t as { name?: unknown }).name === 'string' ? [(t as { name: string }).name] : [],
        );
      }
    } catch {
      /* a partial line (still being written, or cut at the window's start) */
    }
    at = start >= 2 ? buf.lastIndexOf(SHAPE_NEEDLE, start - 2) : -1;
  }
  return null;
}

/**
 * Where the tool call `toolUseId` is in the transcript: its byte length now
 * and the uuid of the assistant line holding the call, searched from the end
 * (of `tail` when the caller has read it already). Never throws: an
 * unreadable transcript just gives less.
 */
export function locateToolCall(file: string, toolUseId: string | null, tail?: TranscriptTail | null): ToolCallLocation {
  const pos: ToolCallLocation = { path: file };
  const t = tail === undefined ? readTranscriptTail(file) : tail;
  if (!t) return pos;
  pos.offset = t.size;
  if (!toolUseId) return pos;
  const { buf, from } = t;
  try {
    const needle = Buffer.from(toolUseId);
    let at = buf.lastIndexOf(needle);
    while (at !== -1) {
      const start = buf.lastIndexOf(0x0a, at) + 1;
      let end = buf.indexOf(0x0a, at);
      if (end === -1) end = buf.length;
      try {
        const line = JSON.parse(buf.subarray(start, end).toString('utf8')) as TranscriptLine;
        if (holdsToolUse(line, toolUseId)) {
          if (line.uuid) pos.uuid = line.uuid;
          pos.lineOffset = from + start;
          if (line.version) pos.agentVersion = line.version;
          if (line.message?.model) pos.model = line.message.model;
          return pos;
        }
      } catch {
        /* a partial line at the start of the window */
      }
      at = start >= 2 ? buf.lastIndexOf(needle, start - 2) : -1;
    }
    return pos;
  } catch {
    return pos; // a line of a shape this version does not know: the position as far as it was found (never throws)
  }
}

function resultContent(content: unknown): unknown {
  if (!Array.isArray(content)) return content;
  const parts = (content as ContentBlock[]).map((b) => (b && b.type === 'text' ? (b.text ?? '') : `[${b?.type ?? 'content'}]`));
  return parts.join('\n');
}

/**
 * The calls of `tools` (Claude Code's read-only tools, which agentsnap does
 * not hook) in the tail that `journaled` does not know, in transcript order:
 * those with their tool_result, those still running that start before
 * `pendingBefore`, and the end of each `open` one whose result arrived. Walks
 * back from the end to `floor` (where the last import left off) or, without
 * one, to the newest journaled call (going on through the other lines of its
 * assistant message: calls of one message can finish in any order); always
 * stops at a line older than `since` (the session's start, when given).
 * Never throws.
 *
 * The floor, not the newest journaled call, is what makes the walk safe: the
 * agent flushes its lines a little after its hooks can run, so a hooked call
 * can be journaled before the lines of the reads that came before it (in its
 * own message or an earlier one) are in the file.
 */
export function unjournaledReadCalls(tail: TranscriptTail, opts: ReadCallScanOptions & { tools: readonly string[] }): ReadCallScan {
  const found: TranscriptCall[] = [];
  const { buf, from } = tail;
  // Lines after the last newline may be torn: the next import reads them again.
  let floor = from + buf.lastIndexOf(0x0a) + 1;
  try {
    const since = opts.since ? Date.parse(opts.since) : NaN;
    const results = new Map<string, { content: unknown; isError: boolean; time: string | null }>();
    const closed = new Set<string>();
    let boundaryMessage: string | null = null;
    let nextJournaled: string | null = null;
    let end = buf.length;
    // A torn last line (being written) is skipped by JSON.parse failing; the first line may be cut by the window.
    while (end > 0) {
      const start = buf.lastIndexOf(0x0a, end - 1) + 1;
      if (opts.floor !== undefined && from + start < opts.floor) break;
      const raw = buf.subarray(start, end);
      end = start > 0 ? start - 1 : 0;
      if (raw.length === 0) continue;
      let line: TranscriptLine & { message?: { id?: string } };
      try {
        line = JSON.parse(raw.toString('utf8')) as TranscriptLine & { message?: { id?: string } };
      } catch {
        continue; // a line being written, or not JSON: not a call
      }
      if (!line || typeof line !== 'object' || line.isSidechain) continue;
      const time = typeof line.timestamp === 'string' ? line.timestamp : null;
      if (time && Date.parse(time) < since) break;
      const content = blocks(line.message?.content);
      if (opts.floor === undefined && boundaryMessage !== null && !(line.type === 'assistant' && line.message?.id === boundaryMessage)) {
        // Past the newest journaled call: only the other lines of its message, and tool results between them.
        if (!(line.type === 'user' && content.length > 0 && content.every((b) => b.type === 'tool_result'))) break;
      }
      if (line.type === 'user') {
        for (const b of content) {
          if (b.type === 'tool_result' && b.tool_use_id)
            results.set(b.tool_use_id, {
              content: resultContent((b as { content?: unknown }).content),
              isError: (b as { is_error?: unknown }).is_error === true,
              time,
            });
        }
        continue;
      }
      if (line.type !== 'assistant') continue;
      const calls = content.filter((b) => b.type === 'tool_use' && typeof b.id === 'string');
      for (let i = calls.length - 1; i >= 0; i--) {
        const b = calls[i] as ContentBlock & { id: string };
        const result = results.get(b.id);
        const closes = !!opts.open?.(b.id);
        if (opts.journaled(b.id) || closes) {
          boundaryMessage = line.message?.id ?? '';
          if (!closes) nextJournaled = b.id;
          if (!closes || !result) continue;
        }
        if (!b.name || !opts.tools.includes(b.name)) continue;
        const pending = !result && opts.pendingBefore !== undefined && from + start < opts.pendingBefore;
        if (!result && !pending) {
          // Still running, and not started before the hooked call: journaled once its result is there.
          floor = Math.min(floor, from + start);
          continue;
        }
        if (closes) closed.add(b.id);
        found.push(call(b, line, result, { pending, closes, before: nextJournaled, time, lineOffset: from + start }));
      }
    }
    // Open reads whose line is before the floor: their results come after it (they had none at the last import).
    const older: TranscriptCall[] = [];
    for (const [id, result] of results) {
      if (closed.has(id) || !opts.open?.(id) || opts.journaled(id)) continue;
      older.push(call({ id, type: 'tool_use' }, {}, result, { pending: false, closes: true, before: null, time: null, lineOffset: -1 }));
    }
    // `found` is newest first, like `older`.
    found.push(...older);
  } catch {
    return { calls: [], floor: opts.floor ?? null }; // lines of a shape this version does not know: no read calls from them, never a failed hook (the hooked calls are journaled)
  }
  return { calls: found.reverse(), floor: Math.max(floor, opts.floor ?? 0) };
}

/** Where a call stands in the transcript: the TranscriptCall fields that are not read from its lines. */
type CallPlace = Pick<TranscriptCall, 'pending' | 'closes' | 'before' | 'lineOffset'> & { time: string | null };

function call(
  b: ContentBlock & { id: string },
  line: TranscriptLine,
  result: { content: unknown; isError: boolean; time: string | null } | undefined,
  { pending, closes, before, time, lineOffset }: CallPlace,
): TranscriptCall {
  return {
    toolUseId: b.id,
    tool: b.name ?? '',
    input: b.input,
    output: result?.content,
    isError: result?.isError ?? false,
    pending,
    closes,
    before,
    startedAt: time,
    endedAt: result?.time ?? null,
    uuid: line.uuid ?? null,
    lineOffset,
    agentVersion: line.version ?? null,
    model: line.message?.model ?? null,
  };
}

/** The main conversation of a transcript: user prompts, assistant text and tool calls, in order. */
export function readConversation(file: string): ConversationEntry[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return []; // a transcript gone or unreadable: no conversation to show
  }
  return conversationOf(text.split('\n'));
}

/** The conversation entries of transcript lines (raw JSONL). */
function conversationOf(rawLines: string[]): ConversationEntry[] {
  const out: ConversationEntry[] = [];
  for (const raw of rawLines) {
    if (!raw.trim()) continue;
    let line: TranscriptLine;
    try {
      line = JSON.parse(raw) as TranscriptLine;
    } catch {
      continue; // a line being written, or not JSON: not an entry
    }
    if (line.isSidechain || line.isMeta || (line as { isCompactSummary?: unknown }).isCompactSummary) continue;
    const uuid = line.uuid ?? null;
    const time = line.timestamp ?? null;
    if (line.type === 'user') {
      for (const b of blocks(line.message?.content)) {
        // Tool results are shown with their step; command wrappers and reminders are not prompts.
        if (b.type === 'text' && b.text && !/^\s*<(command-|local-command-|system-reminder)/.test(b.text)) {
          out.push({ kind: 'user', text: b.text, uuid, time });
        }
      }
    } else if (line.type === 'assistant') {
      for (const b of blocks(line.message?.content)) {
        if (b.type === 'text' && b.text?.trim()) out.push({ kind: 'assistant', text: b.text, uuid, time });
        else if (b.type === 'tool_use' && b.id)
          out.push({ kind: 'tool', toolUseId: b.id, name: b.name ?? null, input: b.input, uuid, time });
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------- the fork

interface Line {
  raw: string;
  obj: Record<string, unknown> | null;
}

function parseLines(text: string): Line[] {
  const out: Line[] = [];
  for (const raw of text.split('\n')) {
    if (raw.trim() === '') continue;
    let obj: Record<string, unknown> | null = null;
    try {
      const v = JSON.parse(raw) as unknown;
      if (v && typeof v === 'object' && !Array.isArray(v)) obj = v as Record<string, unknown>;
    } catch {
      /* kept as is */
    }
    out.push({ raw, obj });
  }
  return out;
}

function messageOf(l: Line): Record<string, unknown> | null {
  const m = l.obj?.message;
  return m && typeof m === 'object' ? (m as Record<string, unknown>) : null;
}

function toolUseIds(l: Line): string[] {
  const content = messageOf(l)?.content;
  if (!Array.isArray(content)) return [];
  return content
    .filter((b): b is Record<string, unknown> => !!b && typeof b === 'object' && (b as Record<string, unknown>).type === 'tool_use')
    .map((b) => String(b.id ?? ''));
}

/** Where to cut a Claude Code transcript for step N: the first line of the assistant message holding its tool_use. */
export function findCut(lines: Line[], uuid: string | null, toolUseId: string | null): { index: number; sharedWith: number } | null {
  let at = uuid ? lines.findIndex((l) => l.obj?.uuid === uuid) : -1;
  if (at === -1 && toolUseId) at = lines.findIndex((l) => toolUseIds(l).includes(toolUseId));
  if (at === -1) return null;
  const msgId = messageOf(lines[at]!)?.id;
  // Claude Code writes one line per content block; they share message.id.
  const sameMessage = (l: Line) => l.obj?.type === 'assistant' && msgId !== undefined && messageOf(l)?.id === msgId;
  let first = at;
  if (msgId !== undefined) {
    const idx = lines.findIndex(sameMessage);
    if (idx !== -1 && idx < first) first = idx;
  }
  const calls = new Set<string>();
  for (const l of msgId !== undefined ? lines.filter(sameMessage) : [lines[at]!]) for (const id of toolUseIds(l)) calls.add(id);
  return { index: first, sharedWith: Math.max(0, calls.size - 1) };
}

interface Subagent {
  /** Path of its transcript under `<session>/subagents/` (Claude Code may nest them in subdirectories). */
  rel: string;
  lines: Line[];
  /** The tool_use id of the Agent call that started it (from `agent-<id>.meta.json`). */
  spawnedBy: string | null;
  calls: Set<string>;
}

/** The subagents directory of a session transcript: `<dir>/<session>/subagents`. */
function subagentsDir(transcript: string): string {
  return path.join(path.dirname(transcript), path.basename(transcript, '.jsonl'), 'subagents');
}

/**
 * The session's subagent conversations. Claude Code keeps each in
 * `<session>/subagents/agent-<id>.jsonl`, and in `agent-<id>.meta.json` the id
 * of the Agent call that started it (in the main conversation, or in the
 * subagent that started this one).
 */
function readSubagents(transcript: string): Subagent[] {
  const dir = subagentsDir(transcript);
  let names: string[];
  try {
    names = (fs.readdirSync(dir, { recursive: true }) as string[]).filter((n) => n.endsWith('.jsonl'));
  } catch {
    return []; // no subagents directory: the session started none
  }
  const out: Subagent[] = [];
  for (const rel of names.sort()) {
    let lines: Line[];
    try {
      lines = parseLines(fs.readFileSync(path.join(dir, rel), 'utf8'));
    } catch {
      continue; // gone or unreadable meanwhile: that subagent's calls stay unlinked
    }
    let spawnedBy: string | null = null;
    try {
      const v = (JSON.parse(fs.readFileSync(path.join(dir, rel.replace(/\.jsonl$/, '.meta.json')), 'utf8')) as Record<string, unknown>)
        .toolUseId;
      if (typeof v === 'string') spawnedBy = v;
    } catch {
      /* no meta: not linked to a call */
    }
    out.push({ rel, lines, spawnedBy, calls: new Set(lines.flatMap(toolUseIds)) });
  }
  return out;
}

/** The Agent call in the main conversation that (through nested subagents) started the subagent which made `toolUseId`. */
function spawningCall(subagents: Subagent[], main: Set<string>, toolUseId: string): string | null {
  let id = toolUseId;
  for (let depth = 0; depth <= subagents.length; depth++) {
    const parent = subagents.find((a) => a.calls.has(id))?.spawnedBy;
    if (!parent || parent === id) return null;
    if (main.has(parent)) return parent;
    id = parent;
  }
  return null;
}

/**
 * Copies the subagent conversations the fork keeps (started by a kept call,
 * directly or through kept subagents) into the fork's own subagents
 * directory, `sessionId` rewritten, so the fork is a whole session.
 */
function copySubagents(transcript: string, subagents: Subagent[], kept: Set<string>, id: string): void {
  const keep = new Set<Subagent>();
  for (let grew = true; grew; ) {
    grew = false;
    for (const a of subagents) {
      if (keep.has(a) || !a.spawnedBy || !kept.has(a.spawnedBy)) continue;
      keep.add(a);
      for (const c of a.calls) kept.add(c);
      grew = true;
    }
  }
  const from = subagentsDir(transcript);
  const to = subagentsDir(path.join(path.dirname(transcript), `${id}.jsonl`));
  for (const a of keep) {
    const dest = path.join(to, a.rel);
    fs.mkdirSync(path.dirname(dest), { recursive: true, mode: 0o700 });
    fs.writeFileSync(dest, a.lines.map((l) => withSession(l, id)).join('\n') + '\n', { mode: 0o600, flag: 'wx' });
    const meta = a.rel.replace(/\.jsonl$/, '.meta.json');
    try {
      fs.copyFileSync(path.join(from, meta), path.join(to, meta), fs.constants.COPYFILE_EXCL);
    } catch {
      /* no meta */
    }
  }
}

function withSession(l: Line, id: string): string {
  if (!l.obj || typeof l.obj.sessionId !== 'string') return l.raw;
  return JSON.stringify({ ...l.obj, sessionId: id });
}

/** The transcript's lines, its subagents, and where step N's conversation is cut (or throws). */
function readForCut(step: ForkPoint): {
  file: string;
  lines: Line[];
  subagents: Subagent[];
  cut: { index: number; sharedWith: number };
  subagentCall: string | null;
} {
  const t = step.transcript;
  if (!t?.path) throw errors.invalidArgument(`step ${step.step} has no transcript position.`);
  let text: string;
  try {
    text = fs.readFileSync(t.path, 'utf8');
  } catch (e) {
    throw errors.invalidArgument(`cannot read the transcript ${t.path} (${(e as NodeJS.ErrnoException).code ?? 'error'}).`, {
      hint: 'It may have been moved or deleted; use the digest instead (undo --chat prints one when no transcript is found).',
      data: { path: t.path },
    });
  }
  const lines = parseLines(text);
  const subagents = readSubagents(t.path);
  let cut = findCut(lines, t.uuid ?? null, step.toolUseId);
  let subagentCall: string | null = null;
  if (!cut && step.toolUseId) {
    // A subagent's calls are only in its own transcript: cut before the Agent call that started it.
    subagentCall = spawningCall(subagents, new Set(lines.flatMap(toolUseIds)), step.toolUseId);
    if (subagentCall) cut = findCut(lines, null, subagentCall);
  }
  if (!cut) {
    throw errors.invalidArgument(`the tool call of step ${step.step} is not in the transcript ${t.path}.`, {
      data: { path: t.path, uuid: t.uuid ?? null, toolUseId: step.toolUseId },
    });
  }
  return { file: t.path, lines, subagents, cut, subagentCall };
}

/**
 * The file history of kept lines (2.1.220+: a `file-history-snapshot` per user message, `messageId` its
 * uuid; a `file-history-delta` per file first changed in that turn, `snapshotMessageId` the snapshot it
 * adds to, `messageId` the assistant line of the call): a snapshot of a message that is not kept goes, and
 * so does a delta whose snapshot or message is not kept, so `/rewind` never meets a dangling one.
 */
function consistentFileHistory(lines: Line[]): Line[] {
  const uuids = new Set(lines.map((l) => l.obj?.uuid).filter((u): u is string => typeof u === 'string'));
  const snapshots = new Set<string>();
  return lines.filter((l) => {
    const o = l.obj;
    if (o?.type === 'file-history-snapshot') {
      if (typeof o.messageId !== 'string' || !uuids.has(o.messageId)) return false;
      snapshots.add(o.messageId);
    } else if (o?.type === 'file-history-delta') {
      if (typeof o.snapshotMessageId !== 'string' || !snapshots.has(o.snapshotMessageId)) return false;
      if (typeof o.messageId === 'string' && !uuids.has(o.messageId)) return false;
    }
    return true;
  });
}

/** The backup file names kept file-history lines refer to. */
function backupNames(lines: Line[]): string[] {
  const names = new Set<string>();
  const add = (b: unknown) => {
    const n = b && typeof b === 'object' ? (b as { backupFileName?: unknown }).backupFileName : null;
    if (typeof n === 'string' && /^[\w@.-]+$/.test(n)) names.add(n);
  };
  for (const l of lines) {
    const o = l.obj;
    if (o?.type === 'file-history-delta') add(o.backup);
    if (o?.type === 'file-history-snapshot') {
      const tracked = (o.snapshot as { trackedFileBackups?: unknown } | undefined)?.trackedFileBackups;
      if (tracked && typeof tracked === 'object') for (const b of Object.values(tracked)) add(b);
    }
  }
  return [...names];
}

/**
 * Claude Code keeps the backups `/rewind` restores from in `<config>/file-history/<session id>/` and, on
 * resume, copies them over only from the session the last line names, which in a fork is the fork itself:
 * so the fork gets its own links (a copy where a link cannot be made) of the backups its lines name.
 */
function linkBackups(transcript: string, lines: Line[], newId: string): void {
  const projects = path.dirname(path.dirname(transcript));
  if (path.basename(projects) !== 'projects') return;
  const history = path.join(path.dirname(projects), 'file-history');
  const names = backupNames(lines);
  if (names.length === 0) return;
  const from = [
    ...new Set([
      path.basename(transcript, '.jsonl'),
      ...lines.map((l) => l.obj?.sessionId).filter((x): x is string => typeof x === 'string'),
    ]),
  ];
  const to = path.join(history, newId);
  fs.mkdirSync(to, { recursive: true, mode: 0o700 });
  for (const name of names) {
    const src = from.map((id) => path.join(history, id, name)).find((f) => fs.existsSync(f));
    if (!src) continue; // gone already: Claude Code reports that rewind point as unavailable, as it would for the original
    try {
      fs.linkSync(src, path.join(to, name));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') continue;
      fs.copyFileSync(src, path.join(to, name), fs.constants.COPYFILE_EXCL);
    }
  }
}

function writeTranscript(file: string, lines: string[]): void {
  const tmp = `${file}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, lines.length > 0 ? lines.join('\n') + '\n' : '', { mode: 0o600, flag: 'wx' });
  fs.renameSync(tmp, file);
}

function forkResult(
  file: string,
  original: string,
  id: string,
  cwd: string,
  lines: number,
  sharedWith: number,
  subagentCall: string | null,
): ChatFork {
  return {
    kind: 'transcript',
    agent: 'claude',
    file,
    original,
    sessionId: id,
    cwd,
    resumeCommand: `claude --resume ${id}`,
    shellCommand: `cd ${shellQuote(cwd)} && claude --resume ${id}`,
    lines,
    sharedWith,
    subagentCall,
    subagentStep: null,
  };
}

/** Writes the forked transcript for `step` next to the original. */
export function forkClaudeTranscript(step: ForkPoint, opts: { cwd: string; newId?: string }): ChatFork {
  const { file: original, lines, subagents, cut, subagentCall } = readForCut(step);
  const id = opts.newId ?? randomUUID();
  const keptLines = consistentFileHistory(lines.slice(0, cut.index));
  const kept = keptLines.map((l) => withSession(l, id));
  // Claude Code finds sessions by project directory: resume from the directory the conversation ran in.
  const at = lines[cut.index]?.obj?.cwd;
  const cwd = typeof at === 'string' ? at : opts.cwd;
  const file = path.join(path.dirname(original), `${id}.jsonl`);
  // Subagents and backups first: the fork appears (rename) only once it is whole.
  copySubagents(original, subagents, new Set(keptLines.flatMap(toolUseIds)), id);
  linkBackups(original, keptLines, id);
  writeTranscript(file, kept);
  return forkResult(file, original, id, cwd, kept.length, cut.sharedWith, subagentCall);
}

/** What the model is sent of a transcript: its user and assistant messages (the last version of each) and their characters. */
function claudeConversationSize(lines: Line[]): ConversationSize {
  let messages = 0;
  let chars = 0;
  const seen = new Set<string>();
  for (const l of lines) {
    const o = l.obj;
    if (!o || (o.type !== 'user' && o.type !== 'assistant') || o.isSidechain === true) continue;
    const m = messageOf(l);
    if (!m) continue;
    const content = m.content;
    chars += typeof content === 'string' ? content.length : JSON.stringify(content ?? '').length;
    // Claude Code writes one line per content block of an assistant message: one message.
    const key = o.type === 'assistant' && typeof m.id === 'string' ? `a:${m.id}` : `l:${String(o.uuid ?? messages)}`;
    if (!seen.has(key)) {
      seen.add(key);
      messages++;
    }
  }
  return { messages, chars };
}

/** An ISO time `ms` milliseconds before `iso` (now when `iso` is not a time). */
function before(iso: unknown, ms: number): string {
  const t = typeof iso === 'string' ? Date.parse(iso) : NaN;
  return new Date((Number.isFinite(t) ? t : Date.now()) - ms).toISOString();
}

/**
 * The compacted fork for `step`: the lines from the assistant message holding its call on, after a
 * `compact_boundary` and a summary user line (`isCompactSummary`) holding the digest, as Claude Code's own
 * /compact and /rewind "summarize up to here" write them; lines whose parent was summarized now hang
 * below the summary. The file history of summarized messages goes with them (consistently).
 */
export function compactClaudeTranscript(step: ForkPoint, digest: DigestBuilder, opts: { cwd: string; newId?: string }): ChatCompact {
  const { file: original, lines, subagents, cut, subagentCall } = readForCut(step);
  const id = opts.newId ?? randomUUID();
  const prior = lines.slice(0, cut.index);
  const text = digest(conversationOf(prior.map((l) => l.raw)), conversationOf(lines.slice(cut.index).map((l) => l.raw)));
  const first = lines[cut.index]?.obj ?? {};
  const common: Record<string, unknown> = {};
  for (const k of ['userType', 'entrypoint', 'cwd', 'version', 'gitBranch']) if (first[k] !== undefined) common[k] = first[k];
  const boundaryUuid = randomUUID();
  const summaryUuid = randomUUID();
  const boundary = {
    parentUuid: null,
    isSidechain: false,
    ...common,
    sessionId: id,
    type: 'system',
    subtype: 'compact_boundary',
    content: 'Conversation compacted',
    isMeta: false,
    timestamp: before(first.timestamp, 2),
    uuid: boundaryUuid,
    level: 'info',
    compactMetadata: { trigger: 'manual', preTokens: 0, messagesSummarized: claudeConversationSize(prior).messages },
  };
  const summary = {
    parentUuid: boundaryUuid,
    isSidechain: false,
    ...common,
    sessionId: id,
    type: 'user',
    message: { role: 'user', content: text },
    isCompactSummary: true,
    isVisibleInTranscriptOnly: true,
    uuid: summaryUuid,
    timestamp: before(first.timestamp, 1),
  };
  const rest = consistentFileHistory(lines.slice(cut.index));
  const keptUuids = new Set(rest.map((l) => l.obj?.uuid).filter((u): u is string => typeof u === 'string'));
  const kept = rest.map((l) => {
    const o = l.obj;
    if (!o) return l.raw;
    const parent = o.parentUuid;
    const relinked = typeof parent === 'string' && !keptUuids.has(parent) ? { parentUuid: summaryUuid } : {};
    return typeof o.sessionId === 'string' || 'parentUuid' in relinked
      ? JSON.stringify({ ...o, ...relinked, ...(typeof o.sessionId === 'string' ? { sessionId: id } : {}) })
      : l.raw;
  });
  const out = [JSON.stringify(boundary), JSON.stringify(summary), ...kept];
  const at = first.cwd;
  const cwd = typeof at === 'string' ? at : opts.cwd;
  const file = path.join(path.dirname(original), `${id}.jsonl`);
  copySubagents(original, subagents, new Set(rest.flatMap(toolUseIds)), id);
  linkBackups(original, rest, id);
  writeTranscript(file, out);
  return {
    ...forkResult(file, original, id, cwd, out.length, cut.sharedWith, subagentCall),
    before: claudeConversationSize(lines),
    after: claudeConversationSize(parseLines(out.join('\n'))),
    digest: text,
  };
}
