// Sessions and steps: allocation, snapshots, journal, refs. Every mutation
// runs under the session's lock and follows one order: write objects, append
// the journal event (the truth), move the refs, then refresh state.json (a
// cache). A crash between any two leaves something the next call repairs.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { errors } from './errors.js';
import { assertSessionId, newSessionId, sessionIdProblem } from './ids.js';
import {
  appendEvent,
  eventBase,
  readJournal,
  type ChangedPath,
  type JournalEvent,
  type SessionStatus,
  type SkippedFile,
  type StepPostEvent,
  type TranscriptPosition,
} from './journal.js';
import { acquireLock, currentOwner, ownerAlive, withLock } from './lock.js';
import { applyEvent, foldJournal, openSteps, sessionStatus, type Session, type Step } from './model.js';
import { commitTree, diffTrees, listRefs, readHead, updateRefs, type RefUpdate } from './git/plumbing.js';
import { loadSettings, type Settings } from './config.js';
import { snapshotTree } from './snapshot.js';
import { serverEnabled } from './server.js';
import type { Repo } from './repo.js';
import { checkGitVersion } from './repo.js';
import { maybeMaintain } from './maintenance.js';
import { locateToolCall, readTranscriptTail, unjournaledReadCalls, type TranscriptTail } from './transcript.js';
import { CLAUDE_READ_ONLY_TOOLS } from './agent-hooks.js';
import { redactValue, sanitize } from './redact.js';

export const STEP_REF_PREFIX = 'refs/agent/';
export const META_REF_PREFIX = 'refs/agentsnap/';

export function stepRef(session: string, step: number): string {
  return `${STEP_REF_PREFIX}${session}/${step}`;
}
export const SESSION_META_PREFIX = `${META_REF_PREFIX}sessions/`;
/** A ref agentsnap keeps for a session besides its steps: head, origin, ops/<k>, worktree-head. */
export function sessionMetaRef(session: string, name: string): string {
  return `${SESSION_META_PREFIX}${session}/${name}`;
}
export function headRef(session: string): string {
  return sessionMetaRef(session, 'head');
}
/** The session a ref belongs to (`refs/agent/<id>/…`, `refs/agentsnap/sessions/<id>/…`), or null. */
export function sessionOfRef(ref: string): string | null {
  const prefix = ref.startsWith(STEP_REF_PREFIX) ? STEP_REF_PREFIX : ref.startsWith(SESSION_META_PREFIX) ? SESSION_META_PREFIX : null;
  return prefix ? ref.slice(prefix.length).split('/')[0] || null : null;
}
/** Every ref agentsnap keeps for a session. */
export async function sessionRefs(repo: Repo, id: string): Promise<string[]> {
  const refs = [...(await listRefs(repo, `${STEP_REF_PREFIX}${id}/`)), ...(await listRefs(repo, `${SESSION_META_PREFIX}${id}/`))];
  return refs.map((r) => r.ref);
}

export interface SessionPaths {
  dir: string;
  index: string;
  journal: string;
  state: string;
  lock: string;
}

export function sessionsDir(repo: Repo): string {
  return path.join(repo.stateDir, 'sessions');
}

/** The ids of the sessions that have a journal in this repository, sorted. */
export function sessionIds(repo: Repo): string[] {
  let names: string[];
  try {
    names = fs.readdirSync(sessionsDir(repo));
  } catch {
    return [];
  }
  return names.filter((n) => sessionIdProblem(n) === undefined && fs.existsSync(sessionPaths(repo, n).journal)).sort();
}

export function sessionPaths(repo: Repo, id: string): SessionPaths {
  const dir = path.join(sessionsDir(repo), id);
  return {
    dir,
    index: path.join(dir, 'index'),
    journal: path.join(dir, 'journal.jsonl'),
    state: path.join(dir, 'state.json'),
    lock: path.join(dir, 'lock'),
  };
}

export function worktreeKey(repo: Pick<Repo, 'worktree'>): string {
  return createHash('sha1').update(repo.worktree).digest('hex').slice(0, 16);
}

function worktreeLockFile(repo: Repo): string {
  return path.join(repo.stateDir, 'locks', `worktree-${worktreeKey(repo)}.lock`);
}

/**
 * The worktree content lock: held around every snapshot and every restore of
 * this worktree (all sessions), so no snapshot reads a half-restored worktree.
 * Distinct from the worktree lock above, which is held while a session starts
 * (and so around its baseline snapshot). Order: session lock, then this one.
 */
export function contentLockFile(repo: Repo): string {
  return path.join(repo.stateDir, 'locks', `content-${worktreeKey(repo)}.lock`);
}

/** snapshotTree under the worktree content lock (the caller holds the session lock). */
async function lockedSnapshot(repo: Repo, settings: Settings, opts: Parameters<typeof snapshotTree>[1]): ReturnType<typeof snapshotTree> {
  const file = contentLockFile(repo);
  ensureDir(path.dirname(file));
  const take = repo.accel?.snapshot ?? ((o: Parameters<typeof snapshotTree>[1]) => snapshotTree(repo, o));
  // With a server to take the next snapshots, a new copy of the user's index is not written back for them.
  const warmCopy = !serverEnabled(repo.callerEnv, settings);
  return withLock(file, { timeoutMs: settings.lockTimeoutMs, purpose: 'snapshot' }, () => take({ ...opts, untrackedCache: true, warmCopy }));
}

function ensureDir(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
}

/** The small per-session cache the per-tool-call path reads instead of the whole journal. */
interface SessionState {
  v: 1;
  journalSize: number;
  session: Omit<Session, 'steps' | 'extraEvents'> & { stepCount: number; open: Step[] };
  /** Snapshots written since agentsnap last packed this session's objects. */
  unpacked: number;
  packedHead: string | null;
  /** The newest journaled tool_use ids (at most RECENT_CALLS): where a transcript import stops. */
  recentToolUseIds?: string[];
  /** The agent transcript of the newest step that named one (read at session end for calls no hook saw). */
  transcriptPath?: string | null;
  /** Where the last transcript import left off (ReadCallScan.floor): the next one walks back to it. */
  transcriptFloor?: { path: string; offset: number };
}

const RECENT_CALLS = 256;

/** `s` is the whole journal folded, or (`folded`) the previous state's open steps with new events applied. */
function stateFrom(s: Session, journalSize: number, prev: SessionState | null, folded = false): SessionState {
  const { steps, extraEvents, ...rest } = s;
  void extraEvents;
  return {
    v: 1,
    journalSize,
    session: { ...rest, stepCount: rest.nextStep - 1, open: openSteps(s) },
    unpacked: prev?.unpacked ?? 0,
    packedHead: prev?.packedHead ?? null,
    // Folded forward from a cache that predates the list, the steps are not all the journal's: leave it to a full read.
    ...(folded && !prev?.recentToolUseIds
      ? {}
      : { recentToolUseIds: [...new Set([...(prev?.recentToolUseIds ?? []), ...steps.flatMap((st) => (st.toolUseId ? [st.toolUseId] : []))])].slice(-RECENT_CALLS) }),
    transcriptPath: steps.reduce<string | null>((last, st) => st.transcript?.path ?? last, prev?.transcriptPath ?? null),
    ...(prev?.transcriptFloor ? { transcriptFloor: prev.transcriptFloor } : {}),
  };
}

function writeState(file: string, state: SessionState): void {
  const tmp = `${file}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, JSON.stringify(state), { mode: 0o600 });
  fs.renameSync(tmp, file);
}

function readState(file: string): SessionState | null {
  try {
    const st = JSON.parse(fs.readFileSync(file, 'utf8')) as SessionState;
    return st.v === 1 ? st : null;
  } catch {
    return null;
  }
}

function journalSize(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}

/** Loads the full session from its journal. Throws UnknownSession when there is none. */
export function loadSession(repo: Repo, id: string): Session {
  assertSessionId(id);
  const p = sessionPaths(repo, id);
  const read = readJournal(p.journal);
  const s = foldJournal(read.events);
  if (!s) {
    throw errors.unknownSession(`no session ${id} in this repository.`, {
      hint: 'List sessions with `agentsnap sessions`.',
      data: { session: id },
    });
  }
  return s;
}

/**
 * State for the hot path: the cache when it matches the journal, else
 * rebuilt. Only a caller holding the session lock may `repair` (move refs,
 * rewrite state.json): a reader without it could see a writer between its
 * journal append and its ref update, and move refs back.
 */
async function loadState(repo: Repo, id: string, repair = true): Promise<SessionState> {
  const p = sessionPaths(repo, id);
  const cached = readState(p.state);
  const size = journalSize(p.journal);
  if (cached && cached.journalSize === size && size > 0) return cached;
  const read = readJournal(p.journal);
  const s = foldJournal(read.events);
  if (!s) {
    throw errors.unknownSession(`no session ${id} in this repository.`, {
      hint: 'List sessions with `agentsnap sessions`.',
      data: { session: id },
    });
  }
  const state = stateFrom(s, size, cached);
  if (!repair) return state;
  // The journal is ahead of the cache: a previous command died after journaling. Make the refs agree.
  await updateRefs(repo, refsFor(s));
  writeState(p.state, state);
  return state;
}

/** Whether a session has ended or been discarded, from its state cache (a whole journal read only when the cache is behind). */
export async function sessionFinished(repo: Repo, id: string): Promise<boolean> {
  const st = (await loadState(repo, id, false)).session;
  return !!st.ended || !!st.discarded;
}

/** The refs a session's journal says it has: baseline, each step's latest snapshot, and the head. */
export function refsFor(s: Session): RefUpdate[] {
  const updates: RefUpdate[] = [{ ref: stepRef(s.id, 0), value: s.baseline }, { ref: headRef(s.id), value: s.head }];
  for (const st of s.steps) {
    const commit = st.post ?? st.pre;
    if (commit) updates.push({ ref: stepRef(s.id, st.step), value: commit });
  }
  return updates;
}

export interface SessionSummary {
  id: string;
  worktree: string;
  status: SessionStatus;
  steps: number;
  openSteps: number;
  createdAt: string;
  lastActivity: string;
  agent: string | null;
  command: string[] | null;
  head: string;
  baseline: string;
  baseHead: string | null;
  branch: string | null;
  /** The wrapper process the session follows, if any. */
  owner: Session['owner'];
}

/** A session's status now: one whose wrapper process is gone counts as ended. */
export function statusNow(s: Pick<Session, 'discarded' | 'ended' | 'owner'>): SessionStatus {
  return sessionStatus(s, !s.owner || ownerAlive(s.owner));
}

/** A live wrapper process runs the session now. */
export function wrapperRunning(s: Pick<Session, 'discarded' | 'ended' | 'owner'>): boolean {
  return !!s.owner && statusNow(s) === 'running';
}

/** The session is marked running, but its wrapper process is gone (doctor --fix journals its end). */
export function wrapperGone(s: Pick<Session, 'discarded' | 'ended' | 'owner'>): boolean {
  return !s.ended && !s.discarded && !!s.owner && statusNow(s) === 'ended';
}

/** Whether a session is or may still be in use: its wrapper lives, or (without a wrapper) it was active within the last hour. */
export function sessionInUse(s: Pick<SessionSummary, 'status' | 'lastActivity' | 'owner'>, now = Date.now()): boolean {
  if (s.status !== 'running') return false;
  return !!s.owner || now - Date.parse(s.lastActivity) < 60 * 60 * 1000;
}

function summaryOf(state: SessionState): SessionSummary {
  const s = state.session;
  return {
    id: s.id,
    worktree: s.worktree,
    status: statusNow(s),
    owner: s.owner,
    steps: s.stepCount,
    openSteps: s.open.length,
    createdAt: s.createdAt,
    lastActivity: s.lastActivity,
    agent: s.agent,
    command: s.command,
    head: s.head,
    baseline: s.baseline,
    baseHead: s.baseHead,
    branch: s.branch,
  };
}

/** Every session of the repository (all worktrees), most recently active first. */
export async function listSessions(repo: Repo): Promise<SessionSummary[]> {
  const out: SessionSummary[] = [];
  for (const name of sessionIds(repo)) {
    try {
      out.push(summaryOf(await loadState(repo, name, false)));
    } catch {
      /* an unreadable session is reported by doctor, not here */
    }
  }
  return out.sort((a, b) => (a.lastActivity < b.lastActivity ? 1 : a.lastActivity > b.lastActivity ? -1 : 0));
}

export interface SelectOptions {
  session?: string | undefined;
}

/** Session selection: --session, else AGENTSNAP_SESSION, else the most recently active, non-discarded session of this worktree. */
export async function selectSession(repo: Repo, opts: SelectOptions = {}): Promise<{ id: string; source: 'flag' | 'env' | 'recent' }> {
  if (opts.session) {
    loadSessionExists(repo, opts.session);
    return { id: opts.session, source: 'flag' };
  }
  const fromEnv = repo.callerEnv.AGENTSNAP_SESSION;
  if (fromEnv) {
    loadSessionExists(repo, fromEnv);
    return { id: fromEnv, source: 'env' };
  }
  const mine = (await listSessions(repo)).filter((s) => s.worktree === repo.worktree && s.status !== 'discarded');
  // An ended session that recorded nothing (`wrap -- false`, an agent that exited at once) is not the default:
  // `undo` would say "nothing to undo" while the work is in the session before it.
  const recent = mine.find((s) => !(s.status === 'ended' && s.steps === 0 && recordedNothing(repo, s.id))) ?? mine[0];
  if (!recent) {
    throw errors.noSession(`no agentsnap session in this worktree (${repo.worktree}).`, {
      hint: 'Start one with `agentsnap wrap -- <agent>` or `agentsnap snap`.',
      data: { worktree: repo.worktree },
    });
  }
  return { id: recent.id, source: 'recent' };
}

/** The session's head is its baseline's tree: nothing happened in it. */
function recordedNothing(repo: Repo, id: string): boolean {
  try {
    const s = loadSession(repo, id);
    return s.headTree === s.baselineTree;
  } catch {
    return false;
  }
}

function loadSessionExists(repo: Repo, id: string): void {
  assertSessionId(id);
  if (!fs.existsSync(sessionPaths(repo, id).journal)) {
    throw errors.unknownSession(`no session ${id} in this repository.`, {
      hint: 'List sessions with `agentsnap sessions`.',
      data: { session: id },
    });
  }
}

export interface SnapshotContext {
  settings?: Settings;
  onProgress?: (phase: string) => void;
}

export interface StartOptions extends SnapshotContext {
  id?: string;
  agent?: string | null;
  command?: string[] | null;
  /** Process whose life the session follows (a wrapper); null for sessions driven by `snap`. */
  owner?: { pid: number; start: string | null; host: string } | null;
}

export interface SnapshotResult {
  session: string;
  step: number;
  commit: string;
  tree: string;
  changed: ChangedPath[];
  skipped: SkippedFile[];
}

/**
 * Redaction for what an event or a commit message carries as free text (tool
 * names, messages, inputs, outputs, errors, reasons, commands, versions): the
 * same as a hook's input gets, whoever called. Redacting twice is harmless.
 * Paths, ids and object names are left as they are (they must stay exact).
 */
function journaled(settings: Settings): <T>(v: T) => T {
  return (v) => redactValue(v, settings.redactPatterns);
}

export function commitMessage(fields: {
  summary: string;
  session: string;
  step: number | null;
  phase: string;
  tool: string | null;
  head: string | null;
  kind?: string;
}): string {
  const oneLine = (s: string) => s.replace(/[\r\n]+/g, ' ').slice(0, 200);
  const lines = [
    `agentsnap: ${oneLine(fields.summary)}`,
    '',
    `Agentsnap-Session: ${fields.session}`,
    `Agentsnap-Kind: ${fields.kind ?? 'step'}`,
  ];
  if (fields.step !== null) lines.push(`Agentsnap-Step: ${fields.step}`);
  lines.push(`Agentsnap-Phase: ${fields.phase}`);
  if (fields.tool) lines.push(`Agentsnap-Tool: ${oneLine(fields.tool)}`);
  lines.push(`Agentsnap-Head: ${fields.head ?? 'unborn'}`);
  return lines.join('\n') + '\n';
}

/** Starts a session: validates the id, takes the baseline (step 0) and journals the start. */
export async function startSession(repo: Repo, opts: StartOptions = {}): Promise<SnapshotResult> {
  const id = opts.id ? assertSessionId(opts.id) : newSessionId();
  await checkGitVersion(repo.env);
  const settings = opts.settings ?? (await loadSettings(repo));
  const p = sessionPaths(repo, id);
  ensureDir(p.dir);
  return withLock(p.lock, { timeoutMs: settings.lockTimeoutMs, purpose: 'start session' }, async () => {
    // Checked under the lock: two starts of the same id must not both write a start event.
    if (fs.existsSync(p.journal)) {
      throw errors.invalidArgument(`session ${id} already exists.`, {
        hint: 'Pick another id, or leave --session out to get a generated one.',
        data: { session: id },
      });
    }
    const head = await readHead(repo);
    const clean = journaled(settings);
    const snap = await lockedSnapshot(repo, settings, { indexFile: p.index, settings, parentTree: null, ...(opts.onProgress ? { onProgress: opts.onProgress } : {}) });
    const commit = await commitTree(repo, {
      tree: snap.tree,
      parents: [],
      message: commitMessage({ summary: `session ${id} baseline`, session: id, step: 0, phase: 'baseline', tool: null, head: head.commit }),
    });
    const ev: JournalEvent = {
      ...eventBase(id),
      type: 'session.start',
      cwd: process.cwd(),
      worktree: repo.worktree,
      gitDir: repo.gitDir,
      baseHead: head.commit,
      branch: head.branch,
      agent: clean(opts.agent ?? null),
      command: clean(opts.command ?? null),
      owner: opts.owner ?? null,
      baseline: commit,
      tree: snap.tree,
      skipped: snap.skipped,
    };
    const size = appendEvent(p.journal, ev);
    await updateRefs(repo, [
      { ref: stepRef(id, 0), value: commit },
      { ref: headRef(id), value: commit },
    ]);
    const s = foldJournal([ev]);
    if (s) writeState(p.state, stateFrom(s, size, null));
    return { session: id, step: 0, commit, tree: snap.tree, changed: [], skipped: snap.skipped };
  });
}

/** Runs fn under the session lock with fresh state; refuses sessions that are not running. */
async function mutate<T>(
  repo: Repo,
  id: string,
  settings: Settings,
  purpose: string,
  fn: (state: SessionState, p: SessionPaths) => Promise<T>,
  requireRunning = true,
): Promise<T> {
  loadSessionExists(repo, id);
  const p = sessionPaths(repo, id);
  const lock = await acquireLock(p.lock, { timeoutMs: settings.lockTimeoutMs, purpose });
  try {
    const state = await loadState(repo, id);
    if (requireRunning && (state.session.ended || state.session.discarded)) {
      throw errors.sessionNotRunning(`session ${id} has ${state.session.discarded ? 'been discarded' : 'ended'}.`, {
        hint: 'Start a new session (leave --session out).',
        data: { session: id },
      });
    }
    return await fn(state, p);
  } finally {
    lock.release();
  }
}

/** What an operation (src/undo.ts) gets while it holds a session's lock. */
export interface LockedSession {
  paths: SessionPaths;
  /** The session head (chain tip) and its tree, current as of the last append. */
  head(): { commit: string; tree: string | null };
  /** Appends an event and applies it: journal, refs, state (the same order as every step). */
  append(ev: JournalEvent, refs: RefUpdate[]): Promise<void>;
  /** Journals the unhooked reads the session's transcript holds now, before an operation moves the head (see importBeforeHeadMoves). */
  importReads(): Promise<void>;
}

/** Runs fn under the session lock, ended sessions included (undo works after the agent has exited). */
export async function withSessionLock<T>(repo: Repo, id: string, settings: Settings, purpose: string, fn: (s: LockedSession) => Promise<T>): Promise<T> {
  return mutate(
    repo,
    id,
    settings,
    purpose,
    (state, p) =>
      fn({
        paths: p,
        head: () => ({ commit: state.session.head, tree: state.session.headTree }),
        append: (ev, refs) => commitEvent(repo, p, state, ev, refs),
        importReads: () => importBeforeHeadMoves(repo, p, state, settings),
      }),
    false,
  );
}

/** Journal, refs, state: in that order (see the module comment). */
async function commitEvent(repo: Repo, p: SessionPaths, state: SessionState, ev: JournalEvent, refs: RefUpdate[]): Promise<void> {
  const size = appendEvent(p.journal, ev);
  await updateRefs(repo, refs);
  // Fold the cached state forward: re-reading the whole journal would make each step cost O(steps).
  const s: Session = { ...state.session, steps: [...state.session.open], extraEvents: [] };
  applyEvent(s, ev);
  const next = stateFrom(s, size, state, true);
  next.unpacked = state.unpacked + 1;
  writeState(p.state, next);
  Object.assign(state, next);
}

export interface PreOptions extends SnapshotContext {
  tool?: string | null;
  input?: unknown;
  toolUseId?: string | null;
  message?: string | null;
  transcript?: TranscriptPosition | null;
  agentVersion?: string | null;
  model?: string | null;
  /** See reusedSnapshot. */
  sameInstantAs?: SnapshotResult | null;
  /** Claude Code's transcript as the hook read it: its unhooked calls are journaled first (see importTranscriptCalls). */
  transcriptTail?: { path: string; tail: TranscriptTail; /** Where this call's line starts (reads started before it are journaled before it). */ callOffset?: number } | null;
}

/** Phase pre of a tool call: allocates the next step and snapshots the worktree before the call. */
export async function recordPre(repo: Repo, id: string, opts: PreOptions = {}): Promise<SnapshotResult> {
  const settings = opts.settings ?? (await loadSettings(repo));
  return mutate(repo, id, settings, 'snapshot (pre)', async (state, p) => {
    // Reads still running beside this call get their start now (their end at a later import): call order holds.
    if (opts.transcriptTail) await importQuietly(repo, p, state, settings, opts.transcriptTail.path, opts.transcriptTail.tail, opts.transcriptTail.callOffset);
    const s = state.session;
    const step = s.nextStep;
    const head = await readHead(repo);
    const clean = journaled(settings);
    const tool = clean(opts.tool ?? null);
    const snap =
      reusedSnapshot(s, opts.sameInstantAs) ??
      (await lockedSnapshot(repo, settings, { indexFile: p.index, settings, parentTree: s.headTree, ...(opts.onProgress ? { onProgress: opts.onProgress } : {}) }));
    const commit = await commitTree(repo, {
      tree: snap.tree,
      parents: [s.head],
      message: commitMessage({ summary: `step ${step} pre ${tool ?? ''}`.trim(), session: id, step, phase: 'pre', tool, head: head.commit }),
    });
    const ev: JournalEvent = {
      ...eventBase(id),
      type: 'step.pre',
      step,
      tool,
      input: clean(opts.input),
      toolUseId: opts.toolUseId ?? null,
      message: clean(opts.message ?? null),
      commit,
      tree: snap.tree,
      parent: s.head,
      // A read journaled from the transcript is open only until its result is flushed there: Claude Code starts a call
      // that is not concurrency-safe only when no other call runs (canExecuteTool), and a read changes no file anyway.
      overlaps: s.open.filter((o) => o.source !== 'transcript').map((o) => o.step),
      changed: snap.changed,
      skipped: snap.skipped,
      transcript: opts.transcript ?? null,
      agentVersion: clean(opts.agentVersion ?? null),
      ...(opts.model ? { model: clean(opts.model) } : {}),
    };
    await commitEvent(repo, p, state, ev, [
      { ref: stepRef(id, step), value: commit },
      { ref: headRef(id), value: commit },
    ]);
    await maybeMaintain(repo, p, state);
    return { session: id, step, commit, tree: snap.tree, changed: snap.changed, skipped: snap.skipped };
  });
}

export interface PostOptions extends SnapshotContext {
  step?: number;
  toolUseId?: string | null;
  status?: StepPostEvent['status'];
  output?: unknown;
  error?: string | null;
  durationMs?: number | null;
  /** With toolUseId: close only the step of that call, never fall back to the only open one (hooks of concurrent calls). */
  exactToolUseId?: boolean;
  /** Where the call is in the transcript (and the agent's version and model there), asked only when the pre did not find it. */
  transcript?: () => { position: TranscriptPosition; agentVersion: string | null; model: string | null } | null;
}

/** Picks the open step a post belongs to: by number, by tool_use_id, or the only one open. */
function findOpenStep(state: SessionState, opts: PostOptions): Step {
  const open = state.session.open;
  const id = state.session.id;
  if (opts.step !== undefined) {
    const st = open.find((o) => o.step === opts.step);
    if (st) return st;
    if (opts.step < 1 || opts.step >= state.session.nextStep) {
      throw errors.stepOutOfRange(`session ${id} has no step ${opts.step} (steps are 1 to ${state.session.nextStep - 1}).`, {
        hint: 'See `agentsnap log` for the steps of the session.',
        data: { session: id, step: opts.step },
      });
    }
    throw errors.noOpenStep(`step ${opts.step} of session ${id} is not open.`, {
      hint: 'Only a step started with `snap --phase pre` and not yet closed can be closed.',
      data: { session: id, step: opts.step },
    });
  }
  if (opts.toolUseId) {
    const st = open.find((o) => o.toolUseId === opts.toolUseId);
    if (st) return st;
    if (opts.exactToolUseId) {
      throw errors.noOpenStep(`session ${id} has no open step for tool call ${opts.toolUseId}.`, {
        data: { session: id, toolUseId: opts.toolUseId },
      });
    }
  }
  if (open.length === 1 && open[0]) return open[0];
  if (open.length === 0) {
    throw errors.noOpenStep(`session ${id} has no open step to close.`, {
      hint: 'Start one with `agentsnap snap --phase pre`, or take a checkpoint with `agentsnap snap`.',
      data: { session: id },
    });
  }
  throw errors.ambiguousOpenStep(`session ${id} has ${open.length} open steps (${open.map((o) => o.step).join(', ')}).`, {
    hint: 'Say which one with --step N.',
    data: { session: id, open: open.map((o) => o.step) },
  });
}

/** Phase post: snapshots the worktree after the call and closes its step. */
export async function recordPost(repo: Repo, id: string, opts: PostOptions = {}): Promise<SnapshotResult> {
  const settings = opts.settings ?? (await loadSettings(repo));
  return mutate(repo, id, settings, 'snapshot (post)', async (state, p) => {
    const s = state.session;
    const st = findOpenStep(state, opts);
    const head = await readHead(repo);
    const clean = journaled(settings);
    const snap = await lockedSnapshot(repo, settings, { indexFile: p.index, settings, parentTree: s.headTree, ...(opts.onProgress ? { onProgress: opts.onProgress } : {}) });
    const pre = st.pre ?? s.head;
    // First parent: the pre-snapshot; second: the chain tip when other snapshots came between (overlapping calls).
    const parents = s.head !== pre ? [pre, s.head] : [pre];
    const commit = await commitTree(repo, {
      tree: snap.tree,
      parents,
      message: commitMessage({ summary: `step ${st.step} post ${st.tool ?? ''}`.trim(), session: id, step: st.step, phase: 'post', tool: st.tool, head: head.commit }),
    });
    // snap.changed is already the diff from the chain tip; it is the step's own diff unless other snapshots came between.
    const changed = st.preTree && st.preTree !== s.headTree ? await diffTrees(repo, st.preTree, snap.tree) : snap.changed;
    const startedMs = Date.parse(st.startedAt);
    const ev: JournalEvent = {
      ...eventBase(id),
      type: 'step.post',
      step: st.step,
      status: opts.status ?? 'done',
      commit,
      tree: snap.tree,
      output: clean(opts.output),
      error: clean(opts.error ?? null),
      durationMs: opts.durationMs ?? (Number.isFinite(startedMs) ? Date.now() - startedMs : null),
      changed,
      skipped: snap.skipped,
    };
    const found = (!st.transcript?.uuid || !st.agentVersion) && opts.transcript ? opts.transcript() : null;
    if (found) {
      const post = ev as StepPostEvent;
      if (!st.transcript?.uuid) post.transcript = found.position;
      if (!st.agentVersion && found.agentVersion) post.agentVersion = clean(found.agentVersion);
      if (!st.model && found.model) post.model = clean(found.model);
    }
    await commitEvent(repo, p, state, ev, [
      { ref: stepRef(id, st.step), value: commit },
      { ref: headRef(id), value: commit },
    ]);
    await maybeMaintain(repo, p, state);
    return { session: id, step: st.step, commit, tree: snap.tree, changed, skipped: snap.skipped };
  });
}

export interface CheckpointOptions extends SnapshotContext {
  tool?: string | null;
  message?: string | null;
  /** Whose change it records (StepCheckpointEvent.madeBy): 'agent' only for `wrap --auto`'s checkpoints. */
  madeBy?: 'agent' | 'user';
  /** See reusedSnapshot. */
  sameInstantAs?: SnapshotResult | null;
}

/**
 * A snapshot this same call took a moment ago (the baseline of the session
 * it just started), reused while it is still the session's head instead of
 * scanning the worktree a second time: for the user both are one instant,
 * and anything written in between shows in the next snapshot.
 */
function reusedSnapshot(s: SessionState['session'], taken: SnapshotResult | null | undefined): Pick<SnapshotResult, 'tree' | 'changed' | 'skipped'> | null {
  if (!taken || taken.commit !== s.head || taken.tree !== s.headTree) return null;
  return { tree: taken.tree, changed: [], skipped: taken.skipped };
}

/** A checkpoint step: one snapshot, pre and post the same. */
export async function recordCheckpoint(repo: Repo, id: string, opts: CheckpointOptions = {}): Promise<SnapshotResult> {
  return (await checkpoint(repo, id, opts, false)) as SnapshotResult;
}

/** A checkpoint step only when the worktree differs from the session's latest snapshot; null (nothing written) otherwise. */
export async function recordCheckpointIfChanged(repo: Repo, id: string, opts: CheckpointOptions = {}): Promise<SnapshotResult | null> {
  return checkpoint(repo, id, opts, true);
}

async function checkpoint(repo: Repo, id: string, opts: CheckpointOptions, onlyIfChanged: boolean, importReads = true): Promise<SnapshotResult | null> {
  const settings = opts.settings ?? (await loadSettings(repo));
  return mutate(repo, id, settings, 'snapshot (checkpoint)', async (state, p) => {
    // The reads the transcript holds now saw the head before this checkpoint (wrap --auto's: only when it records something).
    if (importReads && !onlyIfChanged) await importBeforeHeadMoves(repo, p, state, settings);
    let s = state.session;
    const head = await readHead(repo);
    const clean = journaled(settings);
    const tool = clean(opts.tool ?? null);
    const message = clean(opts.message ?? null);
    const snap =
      reusedSnapshot(s, opts.sameInstantAs) ??
      (await lockedSnapshot(repo, settings, { indexFile: p.index, settings, parentTree: s.headTree, ...(opts.onProgress ? { onProgress: opts.onProgress } : {}) }));
    if (onlyIfChanged && snap.tree === s.headTree) return null;
    if (importReads && onlyIfChanged) {
      await importBeforeHeadMoves(repo, p, state, settings);
      s = state.session;
    }
    const step = s.nextStep;
    const commit = await commitTree(repo, {
      tree: snap.tree,
      parents: [s.head],
      message: commitMessage({ summary: `step ${step} checkpoint${message ? `: ${message}` : ''}`, session: id, step, phase: 'checkpoint', tool, head: head.commit }),
    });
    const ev: JournalEvent = {
      ...eventBase(id),
      type: 'step.checkpoint',
      step,
      tool,
      message,
      madeBy: opts.madeBy ?? 'user',
      commit,
      tree: snap.tree,
      parent: s.head,
      changed: snap.changed,
      skipped: snap.skipped,
    };
    await commitEvent(repo, p, state, ev, [
      { ref: stepRef(id, step), value: commit },
      { ref: headRef(id), value: commit },
    ]);
    await maybeMaintain(repo, p, state);
    return { session: id, step, commit, tree: snap.tree, changed: snap.changed, skipped: snap.skipped };
  });
}

export interface UnprotectedOptions {
  /** The step whose snapshot failed; a new step is allocated when it is not given (a failed pre). */
  step?: number;
  phase: 'pre' | 'post' | 'checkpoint';
  tool?: string | null;
  reason: string;
  toolUseId?: string | null;
  input?: unknown;
  settings?: Settings;
}

/** Journals that a snapshot could not be taken: the step exists but is not protected (undo across it needs --force). */
export async function recordUnprotected(repo: Repo, id: string, opts: UnprotectedOptions): Promise<{ session: string; step: number }> {
  const settings = opts.settings ?? (await loadSettings(repo));
  return mutate(repo, id, settings, 'record unprotected step', async (state, p) => {
    const step = opts.step ?? state.session.nextStep;
    const clean = journaled(settings);
    const ev: JournalEvent = {
      ...eventBase(id),
      type: 'step.unprotected',
      step,
      phase: opts.phase,
      tool: clean(opts.tool ?? null),
      reason: clean(opts.reason),
      ...(opts.toolUseId ? { toolUseId: opts.toolUseId } : {}),
      ...(opts.input !== undefined ? { input: clean(opts.input) } : {}),
    };
    await commitEvent(repo, p, state, ev, []);
    return { session: id, step };
  });
}

export interface ResumeOptions extends SnapshotContext {
  agent?: string | null;
  command?: string[] | null;
  owner?: { pid: number; start: string | null; host: string } | null;
}

/**
 * Continues a session under a new wrapper: refuses discarded sessions and
 * sessions another live wrapper still runs, journals `session.resume`, then
 * checkpoints the worktree as the new run's starting point.
 */
export async function resumeSession(repo: Repo, id: string, opts: ResumeOptions = {}): Promise<SnapshotResult> {
  loadSessionExists(repo, id);
  const settings = opts.settings ?? (await loadSettings(repo));
  const p = sessionPaths(repo, id);
  await withLock(p.lock, { timeoutMs: settings.lockTimeoutMs, purpose: 'resume session' }, async () => {
    const state = await loadState(repo, id);
    const s = state.session;
    if (s.discarded) {
      throw errors.sessionNotRunning(`session ${id} has been discarded.`, { hint: 'Start a new session (leave --session out).', data: { session: id } });
    }
    if (s.worktree !== repo.worktree) {
      throw errors.invalidArgument(`session ${id} belongs to the worktree ${s.worktree}, not ${repo.worktree}.`, {
        hint: 'Run the command in that worktree, or start a new session here.',
        data: { session: id, worktree: s.worktree },
      });
    }
    if (wrapperRunning(s)) {
      throw errors.busy(`session ${id} is still running under process ${s.owner?.pid}.`, {
        hint: 'Wait for that wrapper to end, or start a new session (leave --session out).',
        data: { session: id, pid: s.owner?.pid },
      });
    }
    const clean = journaled(settings);
    const ev: JournalEvent = { ...eventBase(id), type: 'session.resume', agent: clean(opts.agent ?? null), command: clean(opts.command ?? null), owner: opts.owner ?? null };
    await commitEvent(repo, p, state, ev, []);
  });
  // No import: what the old transcript holds since the session ended belongs to no run of this session.
  return (await checkpoint(repo, id, { settings, message: 'session resumed', ...(opts.onProgress ? { onProgress: opts.onProgress } : {}) }, false, false)) as SnapshotResult;
}

export interface EndOptions extends SnapshotContext {
  exitCode?: number | null;
  signal?: string | null;
  /** The agent's transcript, for calls no hook saw (else the one the session's steps named, for Claude Code). */
  transcriptPath?: string | null;
}

/** Ends a session: closes open steps as interrupted, takes a final snapshot if anything changed, journals the end. */
export async function endSession(repo: Repo, id: string, opts: EndOptions = {}): Promise<{ commit: string | null; changed: ChangedPath[] }> {
  const settings = opts.settings ?? (await loadSettings(repo));
  // The last calls of a session may be reads no hook saw (and reads seen started may have ended since).
  await mutate(repo, id, settings, 'import transcript calls', async (state, p) => {
    const transcript = opts.transcriptPath ?? state.session.agentTranscript ?? (state.session.agent === 'claude' ? state.transcriptPath : null);
    const tail = transcript ? readTranscriptTail(transcript) : null;
    if (transcript && tail) await importQuietly(repo, p, state, settings, transcript, tail, undefined, true);
  });
  for (const st of [...(await loadState(repo, id, false)).session.open]) {
    await recordPost(repo, id, { settings, step: st.step, status: 'interrupted' });
  }
  return mutate(repo, id, settings, 'end session', async (state, p) => {
    const s = state.session;
    const head = await readHead(repo);
    const snap = await lockedSnapshot(repo, settings, { indexFile: p.index, settings, parentTree: s.headTree });
    let commit: string | null = null;
    if (snap.tree !== s.headTree) {
      commit = await commitTree(repo, {
        tree: snap.tree,
        parents: [s.head],
        message: commitMessage({ summary: `session ${id} final`, session: id, step: null, phase: 'final', tool: null, head: head.commit }),
      });
    }
    const ev: JournalEvent = {
      ...eventBase(id),
      type: 'session.end',
      exitCode: opts.exitCode ?? null,
      signal: opts.signal ?? null,
      commit,
      tree: commit ? snap.tree : null,
      changed: commit ? snap.changed : [],
    };
    await commitEvent(repo, p, state, ev, commit ? [{ ref: headRef(id), value: commit }] : []);
    await maybeMaintain(repo, p, state, true);
    return { commit, changed: commit ? snap.changed : [] };
  });
}

/**
 * Journals the calls of Claude Code's read-only tools (not hooked) that the
 * transcript tail holds since the last import (its floor): one step each
 * (step.pre + step.post with `source: 'transcript'`), in call order, with no
 * snapshot of its own (a read changes no file: pre = post = the state it
 * saw), output through the same redaction and size limit as a hooked call's.
 * `final` (the session ends): a read that never got its result is closed
 * `interrupted`, still pre = post. Caller holds the session lock. Never
 * throws for a transcript it cannot read: it imports nothing then.
 */
async function importTranscriptCalls(repo: Repo, p: SessionPaths, state: SessionState, settings: Settings, transcriptPath: string, tail: TranscriptTail, pendingBefore: number | undefined, final = false): Promise<number> {
  // A state cache written before this existed has no recent ids: take them from the journal once.
  const recent = state.recentToolUseIds ?? loadSession(repo, state.session.id).steps.flatMap((st) => (st.toolUseId ? [st.toolUseId] : []));
  const known = new Set(recent);
  const openReads = new Map<string, Step>();
  for (const o of state.session.open) {
    if (o.source === 'transcript' && o.toolUseId) openReads.set(o.toolUseId, o);
    else if (o.toolUseId) known.add(o.toolUseId);
  }
  for (const tid of openReads.keys()) known.delete(tid);
  // A wrapper's session began before the agent: older lines are another session's. A session that hooks
  // written by init start on the agent's first hooked call, after the reads that came before it.
  const since = state.session.owner ? state.session.createdAt : null;
  // Where the last import of this transcript left off; a file that shrank since was replaced: walk it as new.
  const last = state.transcriptFloor;
  const floor = last && last.path === transcriptPath && last.offset <= tail.size ? last.offset : undefined;
  const scan = unjournaledReadCalls(tail, {
    journaled: (tid) => known.has(tid),
    open: (tid) => openReads.has(tid),
    // At the end, a read with no result will get none: it is journaled (interrupted) with the rest.
    ...(final ? { pendingBefore: Infinity } : pendingBefore !== undefined ? { pendingBefore } : {}),
    since,
    tools: CLAUDE_READ_ONLY_TOOLS,
    ...(floor !== undefined ? { floor } : {}),
  });
  const calls = scan.calls;
  // Kept with the next state written (this import's, or the hooked call's own event right after it).
  if (scan.floor !== null) state.transcriptFloor = { path: transcriptPath, offset: scan.floor };
  const head = state.session.head;
  const tree = state.session.headTree;
  const unended = final ? [...openReads.values()].filter((o) => !calls.some((c) => c.toolUseId === o.toolUseId)) : [];
  if ((calls.length === 0 && unended.length === 0) || !tree) return 0;
  const clean = <T>(v: T): T => sanitize(v, { limit: settings.outputLimit, patterns: settings.redactPatterns });
  const refs: RefUpdate[] = [];
  let size = 0;
  const s: Session = { ...state.session, steps: [...state.session.open], extraEvents: [] };
  const events: JournalEvent[] = [];
  let nextStep = s.nextStep;
  // The steps of hooked calls that ran after a read (see TranscriptCall.before), read from the journal once if needed.
  let journaled: Step[] | null = null;
  const stateBefore = (toolUseId: string): { pre: string; tree: string } | null => {
    const st = state.session.open.find((o) => o.toolUseId === toolUseId) ?? (journaled ??= loadSession(repo, state.session.id).steps).find((o) => o.toolUseId === toolUseId);
    return st?.pre && st.preTree ? { pre: st.pre, tree: st.preTree } : null;
  };
  for (const c of calls) {
    const opened = openReads.get(c.toolUseId);
    const seen = (!opened && c.before ? stateBefore(c.before) : null) ?? { pre: opened?.pre ?? head, tree: opened?.preTree ?? tree };
    const step = opened?.step ?? nextStep++;
    const now = new Date().toISOString();
    const started = opened?.startedAt ?? c.startedAt ?? now;
    const ended = c.endedAt ?? started;
    const ms = Date.parse(ended) - Date.parse(started);
    const pre: JournalEvent = {
      ...eventBase(state.session.id),
      time: started,
      type: 'step.pre',
      step,
      tool: clean(c.tool),
      input: clean(c.input),
      toolUseId: c.toolUseId,
      message: null,
      commit: seen.pre,
      tree: seen.tree,
      parent: seen.pre,
      overlaps: [],
      changed: [],
      skipped: [],
      transcript: { path: transcriptPath, offset: c.lineOffset, ...(c.uuid ? { uuid: c.uuid } : {}) },
      agentVersion: c.agentVersion ? `claude-code ${c.agentVersion}` : null,
      ...(c.model ? { model: c.model } : {}),
      source: 'transcript',
    };
    // A read that ran beside other calls (ended at a later import) keeps the state it started in: pre = post.
    const post: JournalEvent = {
      ...eventBase(state.session.id),
      time: ended,
      type: 'step.post',
      step,
      status: c.pending ? 'interrupted' : c.isError ? 'failed' : 'done',
      commit: seen.pre,
      tree: seen.tree,
      output: clean(c.output),
      error: c.isError ? clean(typeof c.output === 'string' ? c.output.split('\n')[0] ?? 'failed' : 'failed') : null,
      durationMs: !c.pending && Number.isFinite(ms) && ms >= 0 ? ms : null,
      changed: [],
      skipped: [],
      source: 'transcript',
    };
    if (!c.closes) events.push(pre);
    if (!c.pending || final) events.push(post);
    refs.push({ ref: stepRef(state.session.id, step), value: seen.pre });
  }
  // Reads journaled as started whose result never came: closed as they started (a read changes nothing).
  for (const o of unended) {
    if (!o.pre || !o.preTree) continue;
    events.push({ ...eventBase(state.session.id), type: 'step.post', step: o.step, status: 'interrupted', commit: o.pre, tree: o.preTree, output: undefined, error: null, durationMs: null, changed: [], skipped: [], source: 'transcript' });
    refs.push({ ref: stepRef(state.session.id, o.step), value: o.pre });
  }
  for (const ev of events) {
    size = appendEvent(p.journal, ev);
    applyEvent(s, ev);
  }
  await updateRefs(repo, refs);
  const next = stateFrom(s, size, { ...state, recentToolUseIds: recent }, true);
  writeState(p.state, next);
  Object.assign(state, next);
  return calls.length + unended.length;
}

/**
 * Before something other than a hooked call moves the session head (an
 * operation, a checkpoint), the reads the session's Claude Code transcript
 * holds are journaled, so each keeps the head it ran in and its step number
 * comes before the move: every line in the file now was written before it (a
 * transcript position, unlike a timestamp, has no clock skew). A read with no
 * result yet gets its start now and its end at a later import. Reads after an
 * open hooked call's line (the agent's own `agentsnap undo` through Bash, with
 * a Read in the same message) run after that call: they are left to a later
 * import. The transcript is the one the last import read (else the newest
 * step's, for a Claude Code session): none, and this costs nothing.
 */
async function importBeforeHeadMoves(repo: Repo, p: SessionPaths, state: SessionState, settings: Settings): Promise<void> {
  if (state.session.ended || state.session.discarded) return;
  const transcript = readsTranscript(state);
  if (!transcript) return;
  const tail = readTranscriptTail(transcript);
  if (!tail) return;
  let pendingBefore = tail.size;
  for (const o of state.session.open) {
    if (o.source === 'transcript' || !o.toolUseId) continue;
    const at = locateToolCall(transcript, o.toolUseId, tail).lineOffset;
    if (at !== undefined) pendingBefore = Math.min(pendingBefore, at);
  }
  await importQuietly(repo, p, state, settings, transcript, tail, pendingBefore);
}

/**
 * The Claude Code transcript a session's unhooked reads come from: the one the
 * agent named at its start (it changes with /clear), else the one the last
 * import read, else the newest step's (a `claude` session); null: none known.
 */
function readsTranscript(state: SessionState): string | null {
  return state.session.agentTranscript ?? state.transcriptFloor?.path ?? (state.session.agent === 'claude' ? state.transcriptPath ?? null : null);
}

export interface TranscriptOptions extends SnapshotContext {
  /** The transcript file, as the agent names it. */
  path: string;
}

/**
 * Journals the transcript Claude Code names when it starts (its SessionStart
 * hook, which wrap injects), so an operation or checkpoint before the first
 * hooked call journals the reads before it (importBeforeHeadMoves): without
 * it the session learnt its transcript only at that call, and such a read
 * came after the operation, with the operation's result as its state. Nothing
 * is journaled when the session already has that transcript; one that
 * replaces another (/clear) is journaled after the reads the old one holds.
 * Returns whether it journaled.
 */
export async function recordTranscript(repo: Repo, id: string, opts: TranscriptOptions): Promise<boolean> {
  const settings = opts.settings ?? (await loadSettings(repo));
  return mutate(repo, id, settings, 'journal the transcript', async (state, p) => {
    const before = state.session.agentTranscript;
    if (before === opts.path) return false;
    // Only the transcript this run named: what an older run's holds since it ended is no run of this session.
    if (before) await importBeforeHeadMoves(repo, p, state, settings);
    await commitEvent(repo, p, state, { ...eventBase(id), type: 'session.transcript', path: opts.path }, []);
    return true;
  });
}

/** importTranscriptCalls for a hook's path: a failure costs only the imports; the state is re-read from the journal. */
async function importQuietly(repo: Repo, p: SessionPaths, state: SessionState, settings: Settings, transcriptPath: string, tail: TranscriptTail, pendingBefore: number | undefined, final = false): Promise<void> {
  try {
    await importTranscriptCalls(repo, p, state, settings, transcriptPath, tail, pendingBefore, final);
  } catch {
    Object.assign(state, await loadState(repo, state.session.id));
  }
}

/** The owner record for a wrapper process. */
export function wrapperOwner(): { pid: number; start: string | null; host: string } {
  const o = currentOwner('wrap');
  return { pid: o.pid, start: o.start, host: os.hostname() };
}

/**
 * The session a `snap` should use: the selected one when given or set in the
 * environment, else the running session of this worktree, else a new one
 * (created under the worktree lock, so concurrent calls share one session).
 */
export async function sessionForSnap(repo: Repo, opts: SelectOptions & SnapshotContext & { /** false: never start one (`--phase post` closes a step of a running session). */ start?: boolean }): Promise<{ id: string; created: SnapshotResult | null }> {
  if (opts.session || repo.callerEnv.AGENTSNAP_SESSION) {
    return { id: (await selectSession(repo, opts)).id, created: null };
  }
  const settings = opts.settings ?? (await loadSettings(repo));
  const lockFile = worktreeLockFile(repo);
  ensureDir(path.dirname(lockFile));
  return withLock(lockFile, { timeoutMs: settings.lockTimeoutMs, purpose: 'select session' }, async () => {
    const running = (await listSessions(repo)).find((s) => s.worktree === repo.worktree && s.status === 'running');
    if (running) return { id: running.id, created: null };
    if (opts.start === false) {
      throw errors.noSession('no session running in this worktree: there is no step to close.', {
        hint: '`agentsnap snap --phase pre` starts a session and opens the step that `--phase post` closes.',
        data: { worktree: repo.worktree },
      });
    }
    const created = await startSession(repo, { settings, ...(opts.onProgress ? { onProgress: opts.onProgress } : {}) });
    return { id: created.session, created };
  });
}
