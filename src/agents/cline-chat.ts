// Cline CLI's saved session (part of the Cline adapter, cline.ts), read for `replay` and `show N`: in
// <data dir>/sessions/<session id>/ (the data dir: CLINE_DATA_DIR, else <cline dir>/data), `<id>.messages.json`,
// one JSON document rewritten as the session goes ({sessionId, origin: {version}, messages: [{id, role, content:
// Anthropic-style blocks (text, tool_use {id, name, input}, tool_result), ts, modelInfo: {id, provider}}]}), and
// `<id>.json`, its metadata (model, provider, prompt, metadata.sessionHistoryOrigin.version). A prompt is
// wrapped in `<user_input mode="act">…</user_input>`. The hooks' call id is the tool_use id. Neither file names
// the tools offered, and Cline has no plan tool; its conversations are not forked (`cline --id` resumes only on
// a terminal).
import os from 'node:os';
import path from 'node:path';
import { readFileTail } from '../base/fsutil.js';
import type { ConversationEntry, ToolCallLocation, TranscriptReader, TranscriptTail } from './adapter.js';
import { type Obj, isObj } from './plan.js';

function str(v: unknown): string | null {
  return typeof v === 'string' && v !== '' ? v : null;
}

/** The file is one JSON document: read whole, up to this size (a larger one is not read). */
const READ_LIMIT = 64 * 1024 * 1024;

const MESSAGES_SUFFIX = '.messages.json';

/** Where Cline keeps its data (sessions, settings): CLINE_DATA_DIR, else the cline dir's data (CLINE_DIR, else ~/.cline). */
export function clineDataDir(env: NodeJS.ProcessEnv): string {
  const data = env.CLINE_DATA_DIR?.trim();
  if (data) return path.resolve(data);
  const dir = env.CLINE_DIR?.trim();
  return path.join(dir ? path.resolve(dir) : path.join(env.HOME || os.homedir(), '.cline'), 'data');
}

/** A session's messages file; null for an id that is not a plain name (it names a folder). */
export function clineTranscript(env: NodeJS.ProcessEnv, sessionId: string): string | null {
  return /^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(sessionId)
    ? path.join(clineDataDir(env), 'sessions', sessionId, `${sessionId}${MESSAGES_SUFFIX}`)
    : null;
}

/** Whether `file` is a Cline messages file (`sessions/<id>/<id>.messages.json`). */
export function isClineTranscript(file: string): boolean {
  const name = path.basename(file);
  return name.endsWith(MESSAGES_SUFFIX) && name.slice(0, -MESSAGES_SUFFIX.length) === path.basename(path.dirname(file));
}

function readWhole(file: string): TranscriptTail | null {
  return readFileTail(file, READ_LIMIT);
}

/** The document of a whole file; null when it is not one (cut by the limit, or caught while Cline rewrites it). */
function parseDocument(t: TranscriptTail | null): Obj | null {
  if (!t || t.from > 0) return null;
  try {
    const v: unknown = JSON.parse(t.buf.toString('utf8'));
    return isObj(v) ? v : null;
  } catch {
    return null; // torn while Cline writes it: read again at the next call
  }
}

/** The session's metadata file (`<id>.json` beside the messages), or null. */
function readMetadata(file: string): Obj | null {
  return parseDocument(readWhole(path.join(path.dirname(file), `${path.basename(file).slice(0, -MESSAGES_SUFFIX.length)}.json`)));
}

function messagesOf(doc: Obj | null): Obj[] {
  return doc && Array.isArray(doc.messages) ? doc.messages.filter(isObj) : [];
}

function blocksOf(message: Obj): Obj[] {
  if (typeof message.content === 'string') return [{ type: 'text', text: message.content }];
  return Array.isArray(message.content) ? message.content.filter(isObj) : [];
}

function modelOf(message: Obj): string | null {
  return isObj(message.modelInfo) ? str(message.modelInfo.id) : null;
}

/**
 * Where the call `toolUseId` is: the file's size, the assistant message holding it (its id), the model that
 * message names; else the newest model the messages name, else the metadata's. The version: the messages' origin,
 * else the metadata's. Never throws.
 */
export function locateClineCall(file: string, toolUseId: string | null, tail?: TranscriptTail | null): ToolCallLocation {
  const pos: ToolCallLocation = { path: file };
  const t = tail === undefined ? readWhole(file) : tail;
  if (!t) return pos;
  pos.offset = t.size;
  const doc = parseDocument(t);
  const messages = messagesOf(doc);
  const holder = toolUseId
    ? [...messages].reverse().find((m) => m.role === 'assistant' && blocksOf(m).some((b) => b.type === 'tool_use' && b.id === toolUseId))
    : undefined;
  if (holder && str(holder.id)) pos.uuid = holder.id as string;
  const newest = [...messages].reverse().find((m) => m.role === 'assistant' && modelOf(m));
  let meta: Obj | null | undefined;
  const metadata = () => (meta === undefined ? (meta = readMetadata(file)) : meta);
  const model = (holder && modelOf(holder)) ?? (newest && modelOf(newest)) ?? str(metadata()?.model);
  if (model) pos.model = model;
  const origin = doc && isObj(doc.origin) ? str(doc.origin.version) : null;
  const inner = metadata();
  const history = inner && isObj(inner.metadata) && isObj(inner.metadata.sessionHistoryOrigin) ? inner.metadata.sessionHistoryOrigin : null;
  const version = origin ?? str(history?.version);
  if (version) pos.agentVersion = version;
  return pos;
}

const USER_INPUT = /^\s*<user_input(?:\s[^>]*)?>([\s\S]*)<\/user_input>\s*$/;

/** The main conversation: the user's prompts (unwrapped), the model's text and its calls (tool results left out). */
export function readClineConversation(file: string): ConversationEntry[] {
  const out: ConversationEntry[] = [];
  for (const m of messagesOf(parseDocument(readWhole(file)))) {
    const uuid = str(m.id);
    const time = typeof m.ts === 'number' && Number.isFinite(m.ts) ? new Date(m.ts).toISOString() : null;
    for (const b of blocksOf(m)) {
      if (b.type === 'text' && typeof b.text === 'string' && b.text.trim()) {
        if (m.role === 'user') out.push({ kind: 'user', text: USER_INPUT.exec(b.text)?.[1] ?? b.text, uuid, time });
        else if (m.role === 'assistant') out.push({ kind: 'assistant', text: b.text, uuid, time });
      } else if (b.type === 'tool_use' && m.role === 'assistant' && str(b.id)) {
        out.push({ kind: 'tool', toolUseId: b.id as string, name: str(b.name), input: b.input, uuid, time });
      }
    }
  }
  return out;
}

/** Cline's messages file as agent-neutral code reads it. */
export const clineTranscriptReader: TranscriptReader = {
  readTail: readWhole,
  locateCall: locateClineCall,
  readConversation: readClineConversation,
};
