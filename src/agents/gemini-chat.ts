// Gemini CLI's saved chat (part of the Gemini adapter, gemini.ts): forking it.
// 0.61 keeps each session in `~/.gemini/tmp/<project>/chats/session-<UTC
// minute>-<first 8 of its id>.jsonl`: a metadata line (`sessionId`,
// `projectHash`, `startTime`, `lastUpdated`, `kind`), then records folded in
// order (its `loadConversationRecord`): a message (`id`; a later record with
// the same id replaces it in place: a `gemini` message is written again once
// its `toolCalls` are known), `{$set: {...}}` (metadata, `messages` replaces
// them all), `{$rewindTo: id}` (drops that message and the later ones). The
// fork is that fold cut before the `gemini` message holding step N's call,
// written as a metadata line plus one line per message under a new session id
// in the same chats directory; `gemini --resume <id>` (run in the project
// directory) loads it. Gemini's hooks give no call id: a call is found by the
// synthetic id agentsnap gave it (tool name and input), the k-th such call for
// the k-th step that recorded it.
import fs from 'node:fs';
import path from 'node:path';
import { createHash, randomUUID } from 'node:crypto';
import { errors } from '../base/errors.js';
import { shellQuote } from '../base/shell.js';
import type { ChatCompact, ChatFork, ConversationEntry, ConversationSize, DigestBuilder, ForkPoint } from './adapter.js';

/** A stable id for a call whose agent gives none: `agentsnap:` and a hash of its tool name and input. */
export function syntheticToolUseId(tool: string, input: unknown): string {
  const canon = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(canon)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((k) => [k, canon((v as Record<string, unknown>)[k])]),
          )
        : v;
  return `agentsnap:${createHash('sha1')
    .update(JSON.stringify([tool, canon(input ?? null)]))
    .digest('hex')
    .slice(0, 16)}`;
}

type Obj = Record<string, unknown>;

export interface GeminiChat {
  metadata: Obj;
  messages: Obj[];
}

const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);

/** The chat as Gemini CLI 0.61 loads it (JSONL records, or the older single JSON document). */
export function foldGeminiChat(text: string): GeminiChat {
  let metadata: Obj = {};
  const messages = new Map<string, Obj>();
  const setMessages = (list: unknown) => {
    messages.clear();
    if (Array.isArray(list)) for (const m of list) if (isObj(m) && typeof m.id === 'string') messages.set(m.id, m);
  };
  const trimmed = text.trimStart();
  if (trimmed.startsWith('{') && !trimmed.includes('\n{')) {
    // The older format: one JSON document {sessionId, projectHash, messages…}, possibly pretty-printed.
    try {
      const doc = JSON.parse(text) as unknown;
      if (isObj(doc) && Array.isArray(doc.messages)) {
        const { messages: list, ...rest } = doc;
        setMessages(list);
        return { metadata: rest, messages: [...messages.values()] };
      }
    } catch {
      /* JSONL after all */
    }
  }
  for (const raw of text.split('\n')) {
    if (!raw.trim()) continue;
    let rec: unknown;
    try {
      rec = JSON.parse(raw);
    } catch {
      continue; // Gemini skips what it cannot parse too
    }
    if (!isObj(rec)) continue;
    if (typeof rec.$rewindTo === 'string') {
      const ids = [...messages.keys()];
      const at = ids.indexOf(rec.$rewindTo);
      if (at === -1) messages.clear();
      else for (const id of ids.slice(at)) messages.delete(id);
    } else if (typeof rec.id === 'string') {
      messages.set(rec.id, rec);
    } else if (isObj(rec.$set)) {
      const { messages: list, ...rest } = rec.$set;
      if (Array.isArray(list)) setMessages(list);
      metadata = { ...metadata, ...rest };
    } else if (typeof rec.sessionId === 'string' && typeof rec.projectHash === 'string') {
      const { messages: list, ...rest } = rec;
      if (Array.isArray(list)) for (const m of list) if (isObj(m) && typeof m.id === 'string') messages.set(m.id, m);
      metadata = { ...metadata, ...rest };
    }
  }
  return { metadata, messages: [...messages.values()] };
}

function toolCalls(m: Obj): Obj[] {
  return m.type === 'gemini' && Array.isArray(m.toolCalls) ? (m.toolCalls.filter(isObj) as Obj[]) : [];
}

/** The index of the message holding the `occurrence`-th call whose synthetic id is `toolUseId`, and its other calls. */
export function findGeminiCut(messages: Obj[], toolUseId: string, occurrence = 0): { index: number; sharedWith: number } | null {
  let seen = 0;
  for (const [index, m] of messages.entries()) {
    const calls = toolCalls(m);
    for (const c of calls) {
      const id = typeof c.id === 'string' && c.id === toolUseId ? c.id : syntheticToolUseId(String(c.name ?? ''), c.args);
      if (id !== toolUseId) continue;
      if (seen++ === occurrence) return { index, sharedWith: calls.length - 1 };
    }
  }
  return null;
}

/** Reads a chat file (or throws the error undo --chat reports, then printing a digest). */
export function readGeminiChat(file: string): GeminiChat {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw errors.invalidArgument(`cannot read the Gemini CLI chat ${file} (${(e as NodeJS.ErrnoException).code ?? 'error'}).`, {
      hint: 'It may have been moved or deleted; undo --chat prints a digest of the session instead.',
      data: { path: file },
    });
  }
  const chat = foldGeminiChat(text);
  if (typeof chat.metadata.sessionId !== 'string')
    throw errors.invalidArgument(`the Gemini CLI chat ${file} names no sessionId.`, { data: { path: file } });
  return chat;
}

/** The project directory a chats directory belongs to (`<project temp dir>/.project_root`), else `fallback`. */
function projectRoot(chatsDir: string, fallback: string): string {
  try {
    const root = fs.readFileSync(path.join(path.dirname(chatsDir), '.project_root'), 'utf8').trim();
    if (root && path.isAbsolute(root)) return root;
  } catch {
    /* older layouts */
  }
  return fallback;
}

/** Writes `messages` as a new session in the chats directory of `original`; returns the fork as undo prints it. */
export function writeGeminiFork(
  original: string,
  chat: GeminiChat,
  messages: Obj[],
  fork: { cwd: string; newId?: string; sharedWith: number },
): ChatFork {
  const id = fork.newId ?? randomUUID();
  const now = new Date().toISOString();
  const dir = path.dirname(original);
  // Gemini's own naming: the UTC minute and the id's first 8 characters.
  const file = path.join(dir, `session-${now.slice(0, 16).replace(/:/g, '-')}-${id.slice(0, 8)}.jsonl`);
  const { summary: _summary, ...meta } = chat.metadata;
  const lines = [JSON.stringify({ ...meta, sessionId: id, startTime: now, lastUpdated: now }), ...messages.map((m) => JSON.stringify(m))];
  const tmp = `${file}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, lines.join('\n') + '\n', { mode: 0o600, flag: 'wx' });
  if (fs.existsSync(file)) {
    fs.rmSync(tmp, { force: true });
    throw errors.invalidArgument(`${file} exists already.`, { data: { path: file } });
  }
  fs.renameSync(tmp, file);
  const cwd = projectRoot(dir, fork.cwd);
  return {
    kind: 'transcript',
    agent: 'gemini',
    file,
    original,
    sessionId: id,
    cwd,
    resumeCommand: `gemini --resume ${id}`,
    shellCommand: `cd ${shellQuote(cwd)} && gemini --resume ${id}`,
    lines: messages.length,
    sharedWith: fork.sharedWith,
    subagentCall: null,
    subagentStep: null,
  };
}

/** Step N's chat and the cut before the model turn holding its call; refuses a step that has none. */
function chatAtStep(step: ForkPoint): {
  file: string;
  chat: ReturnType<typeof readGeminiChat>;
  cut: NonNullable<ReturnType<typeof findGeminiCut>>;
} {
  const file = step.transcript?.path;
  if (!file) throw errors.invalidArgument(`step ${step.step} has no transcript position.`);
  if (!step.toolUseId)
    throw errors.invalidArgument(`step ${step.step} has no call id to find in the Gemini CLI chat ${file}.`, { data: { path: file } });
  const chat = readGeminiChat(file);
  const cut = findGeminiCut(chat.messages, step.toolUseId, step.occurrence ?? 0);
  if (!cut)
    throw errors.invalidArgument(`the tool call of step ${step.step} is not in the Gemini CLI chat ${file}.`, {
      data: { path: file, toolUseId: step.toolUseId },
    });
  return { file, chat, cut };
}

/** A new chat cut before the model turn holding step N's call, next to the original (never modified). */
export function forkGeminiChat(step: ForkPoint, opts: { cwd: string; newId?: string }): ChatFork {
  const { file, chat, cut } = chatAtStep(step);
  return writeGeminiFork(file, chat, chat.messages.slice(0, cut.index), {
    cwd: opts.cwd,
    ...(opts.newId ? { newId: opts.newId } : {}),
    sharedWith: cut.sharedWith,
  });
}

/** Text parts of a message's content (a string, or parts with `text`). */
function partsText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((p) => (isObj(p) && typeof p.text === 'string' ? p.text : '')).join('');
}

/** Messages Gemini CLI does not send back on resume (its own context, commands, display-only kinds). */
function sentOnResume(m: Obj): boolean {
  if (m.type === 'user') {
    const t = partsText(m.content).trim();
    const hasParts = Array.isArray(m.content) && m.content.some((p) => isObj(p) && !('text' in p));
    return (
      hasParts ||
      !(t === '' || t.startsWith('/') || t.startsWith('?') || t.startsWith('<session_context>') || t.startsWith('<hook_context>'))
    );
  }
  return m.type === 'gemini';
}

/** What the model is sent of a chat on resume: its messages and their characters. */
function chatSize(messages: Obj[]): ConversationSize {
  let n = 0;
  let chars = 0;
  for (const m of messages) {
    if (!sentOnResume(m)) continue;
    n++;
    chars +=
      (typeof m.content === 'string' ? m.content.length : JSON.stringify(m.content ?? '').length) +
      (m.toolCalls ? JSON.stringify(m.toolCalls).length : 0);
  }
  return { messages: n, chars };
}

/** The conversation entries of chat messages (the user's text, the model's text, its calls). */
function chatEntries(messages: Obj[]): ConversationEntry[] {
  const out: ConversationEntry[] = [];
  for (const m of messages) {
    if (!sentOnResume(m)) continue;
    const time = typeof m.timestamp === 'string' ? m.timestamp : null;
    const text = partsText(m.content);
    if (text.trim()) out.push({ kind: m.type === 'user' ? 'user' : 'assistant', text, uuid: typeof m.id === 'string' ? m.id : null, time });
    // The id agentsnap's steps record for it (Gemini's hooks give none).
    for (const c of toolCalls(m))
      out.push({
        kind: 'tool',
        toolUseId: syntheticToolUseId(String(c.name ?? ''), c.args),
        name: typeof c.name === 'string' ? c.name : null,
        input: c.args,
        uuid: null,
        time,
      });
  }
  return out;
}

/** A new chat whose messages before the model turn holding step N's call are one user message, the digest; the rest kept. */
export function compactGeminiChat(step: ForkPoint, digest: DigestBuilder, opts: { cwd: string; newId?: string }): ChatCompact {
  const { file, chat, cut } = chatAtStep(step);
  const prior = chat.messages.slice(0, cut.index);
  const text = digest(chatEntries(prior), chatEntries(chat.messages.slice(cut.index)));
  const at = chat.messages[cut.index]?.timestamp;
  const summary: Obj = {
    id: randomUUID(),
    timestamp: typeof at === 'string' ? at : new Date().toISOString(),
    type: 'user',
    content: [{ text }],
  };
  const messages = [summary, ...chat.messages.slice(cut.index)];
  const fork = writeGeminiFork(file, chat, messages, {
    cwd: opts.cwd,
    ...(opts.newId ? { newId: opts.newId } : {}),
    sharedWith: cut.sharedWith,
  });
  return { ...fork, before: chatSize(chat.messages), after: chatSize(messages), digest: text };
}
