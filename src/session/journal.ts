// The session journal: one append-only JSONL file per session. Each event is
// written with a single write() followed by fsync(); a torn last line (the
// writer was killed mid-write) is ignored by readers and cut off by the next
// append. The journal is the source of truth; refs and state.json are derived.
import fs from 'node:fs';
import { openStateFile, readStateFile } from '../base/state-dir.js';
import type { SkippedFile, ChangedPath } from '../git/types.js';
export type { SkippedFile, ChangedPath } from '../git/types.js';
import type { TranscriptPosition } from '../agents/adapter.js';
export type { TranscriptPosition } from '../agents/adapter.js';

export const JOURNAL_VERSION = 1;

export type StepStatus = 'open' | 'done' | 'failed' | 'interrupted' | 'unprotected';
export type SessionStatus = 'running' | 'ended' | 'discarded';
export type StepPhase = 'pre' | 'post' | 'checkpoint';

interface EventBase {
  v: number;
  time: string;
  session: string;
}

export interface SessionStartEvent extends EventBase {
  type: 'session.start';
  cwd: string;
  worktree: string;
  gitDir: string;
  /** The user's HEAD commit when the session started (null on an unborn branch). */
  baseHead: string | null;
  branch: string | null;
  agent: string | null;
  command: string[] | null;
  /** The name the user gave it (`wrap --name`), accepted wherever its id is; absent when none was given. */
  name?: string;
  /** The wrapping process, if any: the session runs while it lives. */
  owner: { pid: number; start: string | null; host: string } | null;
  /** Step 0: the baseline snapshot. */
  baseline: string;
  tree: string;
  skipped: SkippedFile[];
  /** Environment directories snapshotted for this session beside agentsnap.environment (`wrap --environment`); absent when none. */
  environment?: string[];
}

/** Environment variables named by their names only: added, removed or changed since the session's first call. */
export interface EnvChange {
  added: string[];
  removed: string[];
  changed: string[];
}

export interface StepPreEvent extends EventBase {
  type: 'step.pre';
  step: number;
  tool: string | null;
  input?: unknown;
  toolUseId?: string | null;
  message?: string | null;
  /** Commit of the pre-snapshot. */
  commit: string;
  tree: string;
  parent: string;
  /** Steps still open when this one started (overlapping calls). */
  overlaps: number[];
  /** Paths that changed since the session's previous snapshot (outside any tool call). */
  changed: ChangedPath[];
  skipped: SkippedFile[];
  transcript?: TranscriptPosition | null;
  agentVersion?: string | null;
  /** The model that asked for the call, when the agent says (added with wrap). */
  model?: string | null;
  /** The directory the agent named for the call, when it is not the session's (the agent cd'ed). */
  cwd?: string;
  /** Names (never values) of the environment variables that differ from the session's first call; only when that differs from the previous call's. */
  envChanged?: EnvChange;
  /** The names of the tools the agent offered its model, when they differ from those the session journaled last (Claude Code). */
  tools?: string[];
  /** The conversation's first prompt, on the first hooked call that could read it: the session's default name. */
  prompt?: string;
  /**
   * Set on a call no hook saw (Claude Code's read-only tools are not hooked):
   * journaled afterwards from the agent's transcript, with no snapshot of its
   * own (commit = parent = the session head then; pre and post the same).
   */
  source?: 'transcript';
}

export interface StepPostEvent extends EventBase {
  type: 'step.post';
  step: number;
  status: Exclude<StepStatus, 'open'>;
  commit: string;
  tree: string;
  output?: unknown;
  error?: string | null;
  durationMs: number | null;
  changed: ChangedPath[];
  skipped: SkippedFile[];
  /**
   * Where the call is in the agent's transcript, when its pre could not tell
   * yet (a hook answered by the warm server can run before the agent has
   * written the call's line): uuid of that line, offset of its start.
   */
  transcript?: TranscriptPosition;
  /** Likewise the agent's version and model (from that line), when the pre could not tell. */
  agentVersion?: string;
  model?: string;
  /** See StepPreEvent.source. */
  source?: 'transcript';
}

export interface StepCheckpointEvent extends EventBase {
  type: 'step.checkpoint';
  step: number;
  tool: string | null;
  message?: string | null;
  /**
   * Whose change it records. 'agent': an automatic checkpoint of `wrap --auto`
   * (an agent with no hooks: its bursts of changes are its steps). 'user' (and
   * absent, except tool 'auto' in journals written before this field): a
   * `snap`, the checkpoint of a resumed session, a post hook with no pre —
   * an undo passing over it keeps what it recorded, `undo N` of it goes back to
   * before it, revert refuses to take it back without --force (issue 32).
   */
  madeBy?: 'agent' | 'user';
  commit: string;
  tree: string;
  parent: string;
  changed: ChangedPath[];
  skipped: SkippedFile[];
}

/** A snapshot that could not be taken: the step is recorded but not protected. */
export interface StepUnprotectedEvent extends EventBase {
  type: 'step.unprotected';
  step: number;
  phase: StepPhase;
  tool: string | null;
  reason: string;
  /** Added with wrap: the agent's id of the call and its input, so a later post can find the step. */
  toolUseId?: string | null;
  input?: unknown;
}

/** A session continued by a new wrapper (`wrap --session ID`) after its previous one ended. */
export interface SessionResumeEvent extends EventBase {
  type: 'session.resume';
  agent: string | null;
  command: string[] | null;
  owner: { pid: number; start: string | null; host: string } | null;
  /** Environment directories this run added (`wrap --environment`); absent when none. */
  environment?: string[];
}

/**
 * The agent's transcript, as the agent named it when it started, before any
 * hooked call (Claude Code's SessionStart hook, which wrap injects): what an
 * operation or checkpoint reads the unhooked calls from until a hooked call
 * names one. Journals without it fall back to the transcript of the newest step.
 */
export interface SessionTranscriptEvent extends EventBase {
  type: 'session.transcript';
  path: string;
}

export interface SessionEndEvent extends EventBase {
  type: 'session.end';
  exitCode: number | null;
  signal: string | null;
  /** Final snapshot, when the worktree changed after the last step. */
  commit: string | null;
  tree: string | null;
  changed: ChangedPath[];
  /** Set when doctor --fix journaled the end of a session whose wrapping process was gone. */
  reason?: 'owner-gone';
}

/** A tree entry: git mode (100644, 100755, 120000, 160000) and object id. */
export interface TreeEntry {
  mode: string;
  oid: string;
}

/** One path an operation changes: from the safety snapshot's entry to the target's (null = absent). */
export interface PlannedChange {
  path: string;
  from: TreeEntry | null;
  to: TreeEntry | null;
}

/** op-undo: `agentsnap op undo <op>`, the worktree back to before operation `target.op` on the paths it changed. */
export type OpKind = 'undo' | 'redo' | 'restore' | 'revert' | 'op-undo';

/** What an operation aims at, as the user named it. */
export interface OpTarget {
  /** Step whose state is restored (undo, restore) or taken back (revert). */
  step?: number;
  /** State before or after that step. */
  when?: 'before' | 'after';
  /** Operation whose safety snapshot is restored (redo, undo --op) or that is taken back (op-undo). */
  op?: number;
  /** Only these paths (restore). */
  paths?: string[];
}

/**
 * An undo, redo, restore or revert is about to change the worktree. Written
 * (fsync) after the safety snapshot and before any file changes; an op.start
 * without op.done is completed (or marked abandoned) by the next operation.
 */
export interface OpStartEvent extends EventBase {
  type: 'op.start';
  /** Operation number, per session, from 1. */
  op: number;
  kind: OpKind;
  target: OpTarget;
  /** Tree the planned paths are made to match, and its commit when it has one (revert's merge result has none). */
  to: string;
  toCommit: string | null;
  /** Snapshot of the worktree taken just before (kept by refs/agentsnap/sessions/<id>/ops/<op>). */
  safety: string;
  safetyTree: string;
  safetySkipped: SkippedFile[];
  /** Exactly the paths the operation changes. */
  paths: PlannedChange[];
  /** Steps this operation marks undone (undo; redo: steps recorded after the undo it reverses). */
  undoes: number[];
  /** The undo operation a redo reverses. */
  redoes: number | null;
  force: boolean;
  /** --exact: the worktree made exactly as at the target (else the agent's changes taken back, the user's kept). */
  exact?: boolean;
  /**
   * What the safety snapshot saw differ from the session head: changes made outside
   * tool calls (or by calls still running) since the last snapshot. The result of the
   * operation is built on the safety snapshot, so later operations whose target is
   * before this one count these as outside changes (issue 13). Optional: journals
   * written before it have none; it is then the diff of `safety` against its parent.
   */
  changedBefore?: ChangedPath[];
  /**
   * The open step of the tool call that asked for this operation (the agent's own undo through
   * `agentsnap mcp`): that call's post then records what changed after the operation, not the
   * restore itself, and the step is marked as the one that ran it (Step.operation). Optional.
   */
  byStep?: number;
}

/** An operation finished: the worktree matches `tree` (minus `left`), which becomes the session head. */
export interface OpDoneEvent extends EventBase {
  type: 'op.done';
  op: number;
  /** abandoned: interrupted, and snapshots were taken after it, so it was not completed. */
  status: 'done' | 'abandoned';
  /** Commit of the restored state (first parent: the safety snapshot); null when abandoned. */
  commit: string | null;
  tree: string | null;
  /**
   * Paths left as they were, and why (changed while the operation ran, in the way, nested repository).
   * `oid` (optional): the object holding a version the restore found there at the moment it replaced the path.
   */
  left: { path: string; reason: string; oid?: string }[];
  /**
   * Optional: the commit (no parent, `Agentsnap-Kind: kept`) whose tree holds the versions of
   * `left[].oid` at their paths; the second parent of `commit`, so they stay reachable.
   */
  kept?: string;
  /** Whether the operation was completed by a later command after an interruption. */
  resumed: boolean;
}

/** `agentsnap discard`: the session is thrown away; its worktree (if agentsnap made it) is removed. */
export interface SessionDiscardEvent extends EventBase {
  type: 'session.discard';
  /** Final snapshot of the worktree, when it changed after the session's last snapshot. */
  commit: string | null;
  tree: string | null;
  changed: ChangedPath[];
  /** The worktree removed, if any. */
  worktree: string | null;
  /** The worktree's HEAD when it had moved (commits the agent made), kept under refs/agentsnap/sessions/<id>/worktree-head. */
  worktreeHead: string | null;
  forced: boolean;
}

/** `agentsnap apply`: the session's net change was merged into another worktree. */
export interface SessionApplyEvent extends EventBase {
  type: 'session.apply';
  target: string;
  /** Snapshot of the target worktree taken before writing (undo point). */
  safety: string;
  safetyRef: string;
  /** The merged tree written into the target. */
  result: string;
  /**
   * Optional: safety refs of applies of this session into this target that were killed before
   * their event; this apply completed them, and `safety`'s tree (its undo point) is the target
   * before the first of them on the paths they wrote (`written`/`deleted` include those).
   */
  completes?: string[];
  written: string[];
  deleted: string[];
  conflicts: string[];
  /** Paths that could not be written after all (I/O error, changed during the write), and why. Absent when none. */
  left?: { path: string; reason: string; oid?: string }[];
  /**
   * Optional: the commit (no parent, `Agentsnap-Kind: kept`) whose tree holds the versions of
   * `left[].oid` at their paths; `safety` then has it as its second parent (the first: the
   * snapshot taken before writing), so the safety ref keeps them reachable.
   */
  kept?: string;
}

/** `agentsnap promote`: the session's result as one ordinary commit on a branch. */
export interface SessionPromoteEvent extends EventBase {
  type: 'session.promote';
  branch: string;
  commit: string;
  parent: string | null;
}

/** `agentsnap apply --undo`: an apply of this session into `target` taken back. */
export interface SessionApplyUndoEvent extends EventBase {
  type: 'session.apply.undo';
  target: string;
  /** The safetyRef of the session.apply it takes back. */
  safetyRef: string;
  /** The target worktree just before the undo, and the safety ref that keeps it. */
  before: string;
  beforeRef: string;
  written: string[];
  deleted: string[];
  /** Paths changed since the apply, left as they were (only with --force). Absent when none. */
  left?: { path: string; reason: string; oid?: string }[];
}

/** `agentsnap check` / `bisect`: a command's result on the state after a step (0: the baseline). */
export interface StepCheckEvent extends EventBase {
  type: 'step.check';
  step: number;
  /** The command as run, redacted. */
  command: string;
  tree: string;
  exitCode: number;
  durationMs: number;
  /** The last lines of its output, redacted. */
  output: string;
  /** Taken from an earlier run of the same command on the same tree. */
  reused?: boolean;
}

/**
 * Every event this version writes: a closed union, so each `switch (ev.type)`
 * narrows to one kind and the compiler checks every fold. An event of another
 * kind (a newer agentsnap's) is never one of these: readJournal puts it in
 * `unknownEvents`, and the journal keeps its line as written.
 */
export type JournalEvent =
  | SessionStartEvent
  | StepPreEvent
  | StepPostEvent
  | StepCheckpointEvent
  | StepUnprotectedEvent
  | SessionEndEvent
  | SessionResumeEvent
  | SessionTranscriptEvent
  | OpStartEvent
  | OpDoneEvent
  | SessionDiscardEvent
  | SessionApplyEvent
  | SessionApplyUndoEvent
  | SessionPromoteEvent
  | StepCheckEvent;

export type JournalEventType = JournalEvent['type'];

/** The kinds of JournalEvent; a Record so that a kind added to the union and not here fails to compile. */
const JOURNAL_EVENT_TYPES: Record<JournalEventType, true> = {
  'session.start': true,
  'step.pre': true,
  'step.post': true,
  'step.checkpoint': true,
  'step.unprotected': true,
  'session.end': true,
  'session.resume': true,
  'session.transcript': true,
  'op.start': true,
  'op.done': true,
  'session.discard': true,
  'session.apply': true,
  'session.apply.undo': true,
  'session.promote': true,
  'step.check': true,
};

/** A journal line of a kind this version does not know (written by a newer agentsnap): read, folded into nothing. */
export interface UnknownEvent {
  type: string;
  [key: string]: unknown;
}

export interface JournalRead {
  /** The events of the kinds this version knows, in journal order. */
  events: JournalEvent[];
  /** The events of other kinds, in journal order (their lines stay in the journal as written). */
  unknownEvents: UnknownEvent[];
  /** Lines in the middle that could not be parsed (1-based line numbers). */
  corruptLines: number[];
  /** Whether the last line was torn (no newline, not valid JSON). */
  tornTail: boolean;
  /** Byte length of the valid part of the file. */
  size: number;
}

/** Reads a journal; never throws on bad content, only on I/O errors other than a missing file. */
export function readJournal(file: string): JournalRead {
  // Never through a link an agent left in its place (UnsafeStateFile: src/base/state-dir.ts).
  const buf = readStateFile(file);
  if (buf === null) return { events: [], unknownEvents: [], corruptLines: [], tornTail: false, size: 0 };
  const events: JournalEvent[] = [];
  const unknownEvents: UnknownEvent[] = [];
  const corruptLines: number[] = [];
  let tornTail = false;
  let start = 0;
  let lineNo = 0;
  let size = 0;
  while (start < buf.length) {
    const nl = buf.indexOf(0x0a, start);
    const end = nl === -1 ? buf.length : nl;
    lineNo++;
    const line = buf.subarray(start, end).toString('utf8');
    if (nl === -1) {
      // No newline: the writer died mid-line. Valid JSON or not, it is not committed.
      tornTail = line.trim().length > 0;
      break;
    }
    start = nl + 1;
    size = start;
    if (line.trim() === '') continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      corruptLines.push(lineNo); // reported: corruptLines names it (doctor lists them)
      continue;
    }
    if (isJournalEvent(parsed)) events.push(parsed);
    else if (isEventShaped(parsed)) unknownEvents.push(parsed);
    else corruptLines.push(lineNo);
  }
  return { events, unknownEvents, corruptLines, tornTail, size };
}

/** An object with a string `type`: what a journal line must be (anything else is a corrupt line). */
function isEventShaped(value: unknown): value is UnknownEvent {
  return value !== null && typeof value === 'object' && typeof (value as { type?: unknown }).type === 'string';
}

/**
 * The one place a journal's JSON becomes a JournalEvent: by its kind. The rest
 * of its shape is trusted, as agentsnap wrote it (the journal is 0600 and read
 * with no link followed); a line from elsewhere (a fetched journal) is folded
 * and its snapshots checked before it is adopted.
 */
function isJournalEvent(value: unknown): value is JournalEvent {
  return isEventShaped(value) && Object.hasOwn(JOURNAL_EVENT_TYPES, value.type);
}

/** Where an append put its lines: the journal's size before (`start`) and after (`end`). */
export interface JournalAppend {
  start: number;
  end: number;
}

/** Appends one event: cuts a torn tail, then one write and an fsync. Caller holds the session lock. */
export function appendEvent(file: string, event: JournalEvent): JournalAppend {
  return appendEvents(file, [event]);
}

/**
 * Appends events in order as appendEvent would one by one, in one write and
 * one fsync (a transcript's 25 reads: 50 events). A crash midway leaves the
 * events before a torn line, as one by one would.
 */
export function appendEvents(file: string, events: readonly JournalEvent[]): JournalAppend {
  // Created 0600; a link or special file in its place is refused, never written through (src/base/state-dir.ts).
  const fd = openStateFile(file, 'update');
  try {
    const { size } = fs.fstatSync(fd);
    if (size > 0) {
      const last = Buffer.alloc(1);
      fs.readSync(fd, last, 0, 1, size - 1);
      if (last[0] !== 0x0a) repairTornTail(fd, size);
    }
    const line = Buffer.from(events.map((e) => JSON.stringify(e) + '\n').join(''), 'utf8');
    const at = fs.fstatSync(fd).size;
    try {
      // writeSync may write part of it and report the rest's failure (ENOSPC) only on the next call.
      for (let done = 0; done < line.length; ) done += fs.writeSync(fd, line, done, line.length - done, at + done);
      fs.fsyncSync(fd);
    } catch (e) {
      // No torn line left behind: the journal is as it was (a full disk is no step).
      fs.ftruncateSync(fd, at);
      throw e;
    }
    return { start: at, end: at + line.length };
  } finally {
    fs.closeSync(fd);
  }
}

/** Takes back an append (its ref update failed): the journal ends where it did before it. */
export function takeBackAppend(file: string, append: JournalAppend): void {
  if (fs.statSync(file).size > append.start) fs.truncateSync(file, append.start);
}

function repairTornTail(fd: number, size: number): void {
  // Find the last newline and truncate after it.
  const chunk = 64 * 1024;
  let pos = size;
  while (pos > 0) {
    const from = Math.max(0, pos - chunk);
    const buf = Buffer.alloc(pos - from);
    fs.readSync(fd, buf, 0, buf.length, from);
    const idx = buf.lastIndexOf(0x0a);
    if (idx !== -1) {
      fs.ftruncateSync(fd, from + idx + 1);
      return;
    }
    pos = from;
  }
  fs.ftruncateSync(fd, 0);
}

export function eventBase(session: string): EventBase {
  return { v: JOURNAL_VERSION, time: new Date().toISOString(), session };
}
