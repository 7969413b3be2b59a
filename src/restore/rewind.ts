// Conversation rewind. For Claude Code: a new transcript (a fork; the original
// is never modified) in the same project folder, cut just before the
// assistant message holding step N's tool call, under a new session UUID, so
// `claude --resume <uuid>` continues from there and the model no longer sees
// the undone calls. Where no transcript is known: a digest of the session up
// to step N to paste into the agent.
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { errors } from '../base/errors.js';
import type { Session, Step } from '../session/model.js';
import { effectLabel } from '../session/effects.js';
import { shellQuote } from '../base/shell.js';

export interface ChatFork {
  kind: 'transcript';
  /** The new transcript file. */
  file: string;
  original: string;
  sessionId: string;
  /** Directory to resume from (Claude Code looks sessions up by the project directory). */
  cwd: string;
  resumeCommand: string;
  /** `cd <cwd> && <resumeCommand>`, quoted for a POSIX shell: runs as is from anywhere. */
  shellCommand: string;
  /** Lines kept from the original. */
  lines: number;
  /** Other tool calls of the same assistant message that were cut with it. */
  sharedWith: number;
  /**
   * Set when step N's call was made by a subagent, whose calls the main
   * conversation never holds: the tool_use id of the Agent call (in the main
   * conversation) that started it, before which the fork is cut.
   */
  subagentCall: string | null;
  /** The step of that Agent call, when it was recorded. */
  subagentStep: number | null;
}

export interface ChatDigest {
  kind: 'digest';
  text: string;
  reason: string;
}

export type ChatRewind = ChatFork | ChatDigest;

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
    return [];
  }
  const out: Subagent[] = [];
  for (const rel of names.sort()) {
    let lines: Line[];
    try {
      lines = parseLines(fs.readFileSync(path.join(dir, rel), 'utf8'));
    } catch {
      continue;
    }
    let spawnedBy: string | null = null;
    try {
      const v = (JSON.parse(fs.readFileSync(path.join(dir, rel.replace(/\.jsonl$/, '.meta.json')), 'utf8')) as Record<string, unknown>).toolUseId;
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

/** Writes the forked transcript for `step` next to the original. */
export function forkClaudeTranscript(step: Step, opts: { cwd: string; newId?: string }): ChatFork {
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
  const id = opts.newId ?? randomUUID();
  const keptLines = lines.slice(0, cut.index);
  const kept = keptLines.map((l) => withSession(l, id));
  // Claude Code finds sessions by project directory: resume from the directory the conversation ran in.
  const at = lines[cut.index]?.obj?.cwd;
  const cwd = typeof at === 'string' ? at : opts.cwd;
  const file = path.join(path.dirname(t.path), `${id}.jsonl`);
  const tmp = `${file}.tmp-${process.pid}`;
  // Subagents first: the fork appears (rename) only once it is whole.
  copySubagents(t.path, subagents, new Set(keptLines.flatMap(toolUseIds)), id);
  fs.writeFileSync(tmp, kept.length > 0 ? kept.join('\n') + '\n' : '', { mode: 0o600, flag: 'wx' });
  fs.renameSync(tmp, file);
  return {
    kind: 'transcript',
    file,
    original: t.path,
    sessionId: id,
    cwd,
    resumeCommand: `claude --resume ${id}`,
    shellCommand: `cd ${shellQuote(cwd)} && claude --resume ${id}`,
    lines: kept.length,
    sharedWith: cut.sharedWith,
    subagentCall,
    subagentStep: null,
  };
}

/** A plain-text digest of the session before step N, for agents whose conversation cannot be forked. */
export function sessionDigest(s: Session, before: number, worktree: string): string {
  const lines = [`agentsnap session ${s.id}: the tool calls before step ${before} (later ones were undone).`];
  for (const st of s.steps) {
    if (st.step >= before) break;
    const files = st.changed.map((c) => `${c.change} ${c.path}`).join(', ');
    const label = st.kind === 'checkpoint' ? `checkpoint${st.message ? `: ${st.message}` : ''}` : `${st.tool ?? 'tool'}: ${effectLabel(st)}`;
    lines.push(`- step ${st.step} ${label} (${st.status})${files ? ` -> ${files}` : ''}`);
  }
  const undone = s.steps.filter((st) => st.step >= before);
  if (undone.length > 0) {
    lines.push(`Steps ${before} to ${undone[undone.length - 1]?.step} were undone: the files in ${worktree} are as they were before step ${before}. Do not assume their changes exist.`);
  }
  return lines.join('\n');
}

/** Rewinds the conversation to before step N: a transcript fork when one is known and readable, else a digest. */
export function rewindChat(s: Session, step: Step, cwd: string): ChatRewind {
  if (step.transcript?.path && (s.agent === null || /claude/i.test(s.agent) || step.transcript.path.includes('/.claude/'))) {
    try {
      const fork = forkClaudeTranscript(step, { cwd });
      if (fork.subagentCall) fork.subagentStep = s.steps.find((x) => x.toolUseId === fork.subagentCall)?.step ?? null;
      return fork;
    } catch (e) {
      return { kind: 'digest', text: sessionDigest(s, step.step, s.worktree), reason: e instanceof Error ? e.message : String(e) };
    }
  }
  return { kind: 'digest', text: sessionDigest(s, step.step, s.worktree), reason: 'no transcript is recorded for this session' };
}
