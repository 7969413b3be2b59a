// Copilot CLI's saved session (~/.copilot/session-state/<session id>/): events.jsonl, one event a line
// ({type, data, id, timestamp, parentId}: session.start, user.message, assistant.turn_start, assistant.message
// with data.toolRequests [{toolCallId, name, arguments}], tool.execution_start/complete, hook.start/end,
// assistant.turn_end, session.shutdown), and workspace.yaml (id, cwd, name…). A fork keeps the events before the
// turn whose assistant message holds step N's call, in a new session folder beside the original (never
// modified), so `copilot --resume=<new id>` continues from before that call; `--compact` keeps that turn and
// the rest, after one user message holding the digest of what came before. Read for `replay` and `show N`
// (copilotTranscript): the user's prompts (user.message), the model's text and calls (assistant.message), and
// the model (assistant.message's `model`, session.start's `selectedModel`) and version (`copilotVersion`). It
// names no tools (session.usage_record only counts them) and has no plan tool.
import fs from 'node:fs';
import path from 'node:path';
import { createHash, randomUUID } from 'node:crypto';
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
  ToolCallLocation,
  TranscriptReader,
  TranscriptTail,
} from './adapter.js';
import { type Obj, isObj } from './plan.js';

/** The transcript's events, in order (a torn or foreign line is skipped); null when it cannot be read. */
export function readEvents(file: string): Obj[] | null {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return null; // no transcript (yet, or gone): the caller goes on without the ids it holds
  }
  return text.split('\n').flatMap((l) => {
    if (!l.trim()) return [];
    try {
      const v: unknown = JSON.parse(l);
      return isObj(v) ? [v] : [];
    } catch {
      return []; // a torn last line while Copilot writes it: read again at the next call
    }
  });
}

/** A value as JSON with its object keys sorted: the same input gives the same text whatever its key order. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (isObj(v))
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

/** Copilot's tool input: an object in 1.0.102 (a JSON string in older versions). */
export function toolArgs(v: unknown): unknown {
  if (typeof v !== 'string') return v;
  try {
    return JSON.parse(v) as unknown;
  } catch {
    return v; // arguments that are not JSON are kept as the text they are
  }
}

/** The hash of a call's input in the id made for it (copilot.ts's callIdFromInput); the transcript's calls are matched by it. */
export function inputHash(input: unknown): string {
  return createHash('sha256')
    .update(canonical(toolArgs(input) ?? null))
    .digest('hex')
    .slice(0, 20);
}

const ID_PREFIX = 'copilot-input:';

/**
 * Copilot's own names of the tools its Claude-format hook payloads (init's hooks) name as Claude Code's, with the
 * same input (seen in 1.0.102): a call's id is then the same whichever hooks saw it, and the same as its
 * transcript's (replay places it by that id).
 */
const OWN_TOOL_NAMES: Readonly<Record<string, string>> = { Write: 'create', Edit: 'edit', Read: 'view', Bash: 'bash' };

/** The call id made for a call of `tool` with `input`: the same for every call of that tool with that input. */
export function callIdFromInput(tool: string, input: unknown): string {
  return `${ID_PREFIX}${Object.hasOwn(OWN_TOOL_NAMES, tool) ? OWN_TOOL_NAMES[tool] : tool}:${inputHash(input)}`;
}

/** The input hash of an id made by callIdFromInput; null for any other id. */
export function inputHashOf(toolUseId: string): string | null {
  if (!toolUseId.startsWith(ID_PREFIX)) return null;
  const hash = toolUseId.slice(toolUseId.lastIndexOf(':') + 1);
  return /^[0-9a-f]{20}$/.test(hash) ? hash : null;
}

/** Whether a tool request is the call `toolUseId` names: its own id, or (an id made of the input) its input's hash. */
function matches(request: Obj, toolUseId: string): boolean {
  if (request.toolCallId === toolUseId) return true;
  const hash = inputHashOf(toolUseId);
  return !!hash && inputHash(request.arguments) === hash;
}

/** The transcript's events and the index of the first event of the turn holding step N's call (its assistant.turn_start). */
function eventsAtStep(step: ForkPoint): { original: string; events: (Obj | null)[]; cut: number; sharedWith: number } {
  const original = step.transcript?.path;
  if (!original) throw errors.invalidArgument(`step ${step.step} has no transcript position.`);
  if (!step.toolUseId)
    throw errors.invalidArgument(`step ${step.step} has no call to find in the Copilot CLI session ${original}.`, {
      data: { path: original },
    });
  let text: string;
  try {
    text = fs.readFileSync(original, 'utf8');
  } catch (e) {
    throw errors.unreadableFile(`cannot read the Copilot CLI session ${original}: ${(e as Error).message}`, { data: { path: original } });
  }
  const events = text
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => {
      try {
        const v: unknown = JSON.parse(l);
        return isObj(v) ? v : null;
      } catch {
        return null; // a torn line: left out of the fork as Copilot itself would skip it
      }
    });
  let skip = step.occurrence ?? 0;
  let at = -1;
  let sharedWith = 0;
  for (const [i, e] of events.entries()) {
    const requests =
      e && e.type === 'assistant.message' && isObj(e.data) && Array.isArray(e.data.toolRequests) ? e.data.toolRequests.filter(isObj) : [];
    for (const r of requests) {
      if (!matches(r, step.toolUseId)) continue;
      if (skip-- > 0) continue;
      at = i;
      sharedWith = requests.length - 1;
      break;
    }
    if (at >= 0) break;
  }
  if (at < 0)
    throw errors.invalidArgument(`the tool call of step ${step.step} is not in the Copilot CLI session ${original}.`, {
      data: { path: original, toolUseId: step.toolUseId },
    });
  // The turn starts (assistant.turn_start, its usage record) before the message: cut before that start.
  let cut = at;
  for (let i = at - 1; i >= 0; i--) {
    const type = events[i]?.type;
    if (type === 'assistant.turn_start') {
      cut = i;
      break;
    }
    if (type !== 'session.usage_record') break;
  }
  return { original, events, cut, sharedWith };
}

/** Writes `kept` as a new session beside `original`'s (its start event and workspace.yaml under the new id). */
function writeFork(
  original: string,
  events: (Obj | null)[],
  kept: Obj[],
  opts: { cwd: string; newId?: string; sharedWith: number },
): ChatFork {
  const id = opts.newId ?? randomUUID();
  const oldDir = path.dirname(original);
  const oldId = path.basename(oldDir);
  const dir = path.join(path.dirname(oldDir), id);
  // The session's own id, where Copilot reads it from: its start event.
  const lines = kept.map((e) =>
    JSON.stringify(e.type === 'session.start' && isObj(e.data) ? { ...e, data: { ...e.data, sessionId: id } } : e),
  );
  const start = events.find((e) => e?.type === 'session.start');
  const context = start && isObj(start.data) && isObj(start.data.context) ? start.data.context : null;
  let workspace: string | null = null;
  try {
    workspace = fs.readFileSync(path.join(oldDir, 'workspace.yaml'), 'utf8');
  } catch {
    /* an older session without one */
  }
  const cwdLine = workspace ? /^cwd: (.*)$/m.exec(workspace)?.[1] : undefined;
  const cwd = cwdLine ?? (typeof context?.cwd === 'string' ? context.cwd : opts.cwd);
  try {
    fs.mkdirSync(dir, { mode: 0o700 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') throw errors.invalidArgument(`${dir} exists already.`, { data: { path: dir } });
    throw e;
  }
  fs.writeFileSync(path.join(dir, 'events.jsonl'), lines.length ? `${lines.join('\n')}\n` : '', { mode: 0o600 });
  if (workspace) {
    const forked = workspace.replace(/^id: .*$/m, `id: ${id}`).replace(new RegExp(oldId.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'g'), id);
    fs.writeFileSync(path.join(dir, 'workspace.yaml'), forked, { mode: 0o600 });
  }
  const resumeCommand = `copilot --resume=${id}`;
  return {
    kind: 'transcript',
    agent: 'copilot',
    file: path.join(dir, 'events.jsonl'),
    original,
    sessionId: id,
    cwd,
    resumeCommand,
    shellCommand: `cd ${shellQuote(cwd)} && ${resumeCommand}`,
    lines: lines.length,
    sharedWith: opts.sharedWith,
    subagentCall: null,
    subagentStep: null,
  };
}

/** A new session cut before the turn holding step N's call (the occurrence-th call of that input, for ids made of it). */
export function forkCopilotChat(step: ForkPoint, opts: { cwd: string; newId?: string }): ChatFork {
  const { original, events, cut, sharedWith } = eventsAtStep(step);
  return writeFork(original, events, events.slice(0, cut).filter(isObj), { ...opts, sharedWith });
}

/** The conversation entries of events: the user's prompts, the model's text, its calls (under the ids agentsnap's steps record). */
function entriesOf(events: (Obj | null)[]): ConversationEntry[] {
  const out: ConversationEntry[] = [];
  for (const e of events) {
    if (!e || !isObj(e.data)) continue;
    const uuid = typeof e.id === 'string' ? e.id : null;
    const time = typeof e.timestamp === 'string' ? e.timestamp : null;
    const text = typeof e.data.content === 'string' ? e.data.content : '';
    if (e.type === 'user.message' && text.trim()) out.push({ kind: 'user', text, uuid, time });
    if (e.type !== 'assistant.message') continue;
    if (text.trim()) out.push({ kind: 'assistant', text, uuid, time });
    for (const r of Array.isArray(e.data.toolRequests) ? e.data.toolRequests.filter(isObj) : []) {
      const name = typeof r.name === 'string' ? r.name : null;
      out.push({ kind: 'tool', toolUseId: callIdFromInput(name ?? '', r.arguments), name, input: toolArgs(r.arguments), uuid, time });
    }
  }
  return out;
}

function sizeOf(entries: ConversationEntry[]): ConversationSize {
  return {
    messages: entries.length,
    chars: entries.reduce((n, e) => n + (e.kind === 'tool' ? JSON.stringify(e.input ?? null).length : e.text.length), 0),
  };
}

/**
 * A new session whose events before the turn holding step N's call are its start and one user message, the
 * digest; the turn and everything after it kept (the first kept event chained to the digest).
 */
export function compactCopilotChat(step: ForkPoint, digest: DigestBuilder, opts: { cwd: string; newId?: string }): ChatCompact {
  const { original, events, cut, sharedWith } = eventsAtStep(step);
  const prior = entriesOf(events.slice(0, cut));
  const rest = entriesOf(events.slice(cut));
  const text = digest(prior, rest);
  const start = events.find((e) => e?.type === 'session.start') ?? null;
  const next = events.slice(cut).filter(isObj);
  const at = typeof next[0]?.timestamp === 'string' ? next[0].timestamp : new Date().toISOString();
  const message: Obj = {
    type: 'user.message',
    data: { content: text, transformedContent: text, messageId: randomUUID() },
    id: randomUUID(),
    timestamp: at,
    parentId: typeof start?.id === 'string' ? start.id : null,
  };
  const kept = [...(start ? [start] : []), message, ...next.map((e, i) => (i === 0 ? { ...e, parentId: message.id } : e))];
  const fork = writeFork(original, events, kept, { ...opts, sharedWith });
  const after: ConversationEntry[] = [{ kind: 'user', text, uuid: null, time: null }, ...rest];
  return { ...fork, before: sizeOf([...prior, ...rest]), after: sizeOf(after), digest: text };
}

/** How much of the end of events.jsonl a hook reads: a call's message is written just before its hooks run. */
const TAIL_LIMIT = 8 * 1024 * 1024;

const REQUESTS_NEEDLE = Buffer.from('"toolRequests"');
const MODEL_NEEDLE = Buffer.from('"model"');
/** The first line, session.start, is short (its context, no prompt): this much of the file holds it. */
const START_LIMIT = 64 * 1024;

function str(v: unknown): string | null {
  return typeof v === 'string' && v !== '' ? v : null;
}

/** The session.start event, the file's first line; null when it is not there (yet) or not whole. */
function sessionStart(file: string): Obj | null {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return null; // no transcript (yet): nothing to read
  }
  try {
    const buf = Buffer.alloc(START_LIMIT);
    const got = fs.readSync(fd, buf, 0, buf.length, 0);
    const end = buf.subarray(0, got).indexOf(0x0a);
    if (end < 0) return null;
    const e: unknown = JSON.parse(buf.subarray(0, end).toString('utf8'));
    return isObj(e) && e.type === 'session.start' && isObj(e.data) ? e.data : null;
  } catch {
    return null; // unreadable, or a first line of another shape: no start event to read
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Where the call `toolUseId` is in events.jsonl: the transcript's size, the assistant.message holding it (its
 * event id and where its line starts; the newest one, as a repeated input's current call is) and the model that
 * message names (else the newest one named), and the version session.start names. Searched from the end of the
 * tail, and only lines that can hold one of these are parsed (its system.message line alone is tens of KB).
 * Never throws.
 */
export function locateCopilotCall(file: string, toolUseId: string | null, tail?: TranscriptTail | null): ToolCallLocation {
  const pos: ToolCallLocation = { path: file };
  const t = tail === undefined ? readFileTail(file, TAIL_LIMIT) : tail;
  if (!t) return pos;
  pos.offset = t.size;
  const start = sessionStart(file);
  if (start && str(start.copilotVersion)) pos.agentVersion = start.copilotVersion as string;
  const { buf, from } = t;
  let located = !toolUseId;
  // The newest model named, for a call whose message is not written yet.
  let newestModel: string | null = null;
  let end = buf.length;
  while (end > 0 && !(located && (pos.model || newestModel))) {
    const lineStart = buf.lastIndexOf(0x0a, end - 1) + 1;
    const line = buf.subarray(lineStart, end);
    end = lineStart - 1;
    // A line cut at the tail's start is not whole (the file's first line always is).
    if (lineStart === 0 && from > 0) break;
    const requests = !located && line.includes(REQUESTS_NEEDLE);
    const model = !newestModel && line.includes(MODEL_NEEDLE);
    if (!requests && !model) continue;
    let e: unknown;
    try {
      e = JSON.parse(line.toString('utf8'));
    } catch {
      continue; // a torn last line while Copilot writes it
    }
    if (!isObj(e) || !isObj(e.data)) continue;
    const data = e.data;
    if (requests && e.type === 'assistant.message' && Array.isArray(data.toolRequests)) {
      if (data.toolRequests.some((r) => isObj(r) && matches(r, toolUseId as string))) {
        located = true;
        if (str(e.id)) pos.uuid = e.id as string;
        pos.lineOffset = from + lineStart;
        if (str(data.model)) pos.model = data.model as string;
      }
    }
    if (model) newestModel = str(data.model);
  }
  const model = pos.model ?? newestModel ?? (start ? str(start.selectedModel) : null);
  if (model) pos.model = model;
  return pos;
}

/** The conversation of events.jsonl for replay: the user's prompts, the model's text and its calls (under the ids agentsnap's steps record). */
export function readCopilotConversation(file: string): ConversationEntry[] {
  return entriesOf(readEvents(file) ?? []);
}

/** Copilot CLI's events.jsonl as agent-neutral code reads it. */
export const copilotTranscriptReader: TranscriptReader = {
  readTail: (file) => readFileTail(file, TAIL_LIMIT),
  locateCall: locateCopilotCall,
  readConversation: readCopilotConversation,
};
