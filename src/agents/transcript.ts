// Reading an agent's conversation transcript (Claude Code's JSONL format):
// where a tool call sits in it, and the conversation as a list of entries for
// replay. Transcripts belong to the agent: agentsnap only reads them.
import fs from 'node:fs';
import type { TranscriptPosition } from './adapter.js';

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

export interface ToolCallLocation extends TranscriptPosition {
  /** Byte offset where the line holding the call starts. */
  lineOffset?: number;
  /** The agent's version and model, from the line holding the call. */
  agentVersion?: string;
  model?: string;
}

/** The end of a transcript, read once per hook call: what locateToolCall and unjournaledReadCalls look through. */
export interface TranscriptTail {
  buf: Buffer;
  /** Byte offset of buf[0] in the file. */
  from: number;
  /** The file's size when read. */
  size: number;
}

/** The last SCAN_LIMIT bytes of a transcript; null when it cannot be read. Never throws. */
export function readTranscriptTail(file: string): TranscriptTail | null {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return null;
  }
  try {
    const size = fs.fstatSync(fd).size;
    const from = Math.max(0, size - SCAN_LIMIT);
    const buf = Buffer.alloc(size - from);
    const got = fs.readSync(fd, buf, 0, buf.length, from);
    return { buf: got === buf.length ? buf : buf.subarray(0, got), from, size: from + got };
  } catch {
    return null;
  } finally {
    fs.closeSync(fd);
  }
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
    return pos;
  }
}

/** A finished tool call found in the transcript that no hook recorded. */
export interface TranscriptCall {
  toolUseId: string;
  tool: string;
  input: unknown;
  /** The tool_result's content: its text (blocks joined), or the value as it is. */
  output: unknown;
  isError: boolean;
  /** Still running (no tool_result yet): only its start is known. */
  pending: boolean;
  /** Already journaled as started (an open step): only its end is new. */
  closes: boolean;
  /**
   * The nearest journaled call after this one in the transcript, if any: a
   * read imported after a hooked call of the same message ran (its hooks ran
   * before the message reached the transcript) saw the state before that call.
   */
  before: string | null;
  startedAt: string | null;
  endedAt: string | null;
  /** uuid of the assistant line holding the call and the byte offset where that line starts. */
  uuid: string | null;
  lineOffset: number;
  agentVersion: string | null;
  model: string | null;
}

function resultContent(content: unknown): unknown {
  if (!Array.isArray(content)) return content;
  const parts = (content as ContentBlock[]).map((b) => (b && b.type === 'text' ? b.text ?? '' : `[${b?.type ?? 'content'}]`));
  return parts.join('\n');
}

/** What one import found: the calls, and where the next import may start (see `floor`). */
export interface ReadCallScan {
  calls: TranscriptCall[];
  /**
   * Byte offset before which every line of the tail is accounted for: each
   * read there is journaled (done, failed or still open), or was another
   * session's. The next import walks back to it and no further. It stops at
   * the start of a read that has no result yet and was not journaled (its
   * result comes later) and at a torn last line. Null: keep the last one.
   */
  floor: number | null;
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
export function unjournaledReadCalls(
  tail: TranscriptTail,
  opts: {
    journaled: (toolUseId: string) => boolean;
    /** Journaled as started, not yet ended (a read that was still running at the last import). */
    open?: (toolUseId: string) => boolean;
    /** Also return the calls with no result yet (pending) whose line starts before this offset: a hooked call's pre records the reads started before it. */
    pendingBefore?: number;
    since: string | null;
    tools: readonly string[];
    /** Where the previous import of this transcript left off (its `floor`). */
    floor?: number;
  },
): ReadCallScan {
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
        continue;
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
          if (b.type === 'tool_result' && b.tool_use_id) results.set(b.tool_use_id, { content: resultContent((b as { content?: unknown }).content), isError: (b as { is_error?: unknown }).is_error === true, time });
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
        found.push(call(b, line, result, pending, closes, nextJournaled, time, from + start));
      }
    }
    // Open reads whose line is before the floor: their results come after it (they had none at the last import).
    const older: TranscriptCall[] = [];
    for (const [id, result] of results) {
      if (closed.has(id) || !opts.open?.(id) || opts.journaled(id)) continue;
      older.push(call({ id, type: 'tool_use' }, {}, result, false, true, null, null, -1));
    }
    // `found` is newest first, like `older`.
    found.push(...older);
  } catch {
    return { calls: [], floor: opts.floor ?? null };
  }
  return { calls: found.reverse(), floor: Math.max(floor, opts.floor ?? 0) };
}

function call(
  b: ContentBlock & { id: string },
  line: TranscriptLine,
  result: { content: unknown; isError: boolean; time: string | null } | undefined,
  pending: boolean,
  closes: boolean,
  before: string | null,
  time: string | null,
  lineOffset: number,
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

export type ConversationEntry =
  | { kind: 'user'; text: string; uuid: string | null; time: string | null }
  | { kind: 'assistant'; text: string; uuid: string | null; time: string | null }
  | { kind: 'tool'; toolUseId: string; name: string | null; input: unknown; uuid: string | null; time: string | null };

/** The main conversation of a transcript: user prompts, assistant text and tool calls, in order. */
export function readConversation(file: string): ConversationEntry[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const out: ConversationEntry[] = [];
  for (const raw of text.split('\n')) {
    if (!raw.trim()) continue;
    let line: TranscriptLine;
    try {
      line = JSON.parse(raw) as TranscriptLine;
    } catch {
      continue;
    }
    if (line.isSidechain || line.isMeta) continue;
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
        else if (b.type === 'tool_use' && b.id) out.push({ kind: 'tool', toolUseId: b.id, name: b.name ?? null, input: b.input, uuid, time });
      }
    }
  }
  return out;
}
