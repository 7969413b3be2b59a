// Reading an agent's conversation transcript (Claude Code's JSONL format):
// where a tool call sits in it, and the conversation as a list of entries for
// replay. Transcripts belong to the agent: agentsnap only reads them.
import fs from 'node:fs';
import type { TranscriptPosition } from './journal.js';

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

/**
 * Where the tool call `toolUseId` is in the transcript: its byte length now
 * and the uuid of the assistant line holding the call, searched from the end.
 * Never throws: an unreadable transcript just gives less.
 */
export function locateToolCall(file: string, toolUseId: string | null): ToolCallLocation {
  const pos: ToolCallLocation = { path: file };
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return pos;
  }
  try {
    const size = fs.fstatSync(fd).size;
    pos.offset = size;
    if (!toolUseId) return pos;
    const from = Math.max(0, size - SCAN_LIMIT);
    const buf = Buffer.alloc(size - from);
    fs.readSync(fd, buf, 0, buf.length, from);
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
  } finally {
    fs.closeSync(fd);
  }
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
