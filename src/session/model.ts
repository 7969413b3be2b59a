// Folding a journal into the session it describes. Pure: no I/O.
import type {
  ChangedPath,
  JournalEvent,
  SessionEndEvent,
  SessionStartEvent,
  SessionStatus,
  SkippedFile,
  StepCheckpointEvent,
  StepPostEvent,
  StepPreEvent,
  StepStatus,
  OpKind,
  TranscriptPosition,
  EnvChange,
} from './journal.js';
import type { Settings } from '../settings/settings.js';

/** The kinds of events a Session keeps in `extraEvents`. */
/** The tool name of `wrap --auto`'s checkpoints (runtime/wrap-auto.ts): steps named by the files they changed. */
export const AUTO_TOOL = 'auto';

export type ExtraEvent = Extract<
  JournalEvent,
  { type: 'op.start' | 'op.done' | 'session.apply' | 'session.apply.undo' | 'session.promote' | 'step.check' }
>;

export interface Step {
  step: number;
  kind: 'call' | 'checkpoint';
  tool: string | null;
  status: StepStatus;
  /** Pre-snapshot commit (state before the call); equals post for checkpoints. */
  pre: string | null;
  preTree: string | null;
  /** Post-snapshot commit (state after the call); null while open. */
  post: string | null;
  postTree: string | null;
  startedAt: string;
  endedAt: string | null;
  durationMs: number | null;
  toolUseId: string | null;
  input?: unknown;
  output?: unknown;
  error?: string | null;
  message?: string | null;
  /** What the call changed (pre to post). */
  changed: ChangedPath[];
  /** What changed between the previous snapshot and this call's start (not made by a recorded call). */
  changedBefore: ChangedPath[];
  skipped: SkippedFile[];
  /** Steps that were still open when this one started. */
  overlaps: number[];
  transcript: TranscriptPosition | null;
  unprotectedReason: string | null;
  agentVersion?: string | null;
  model?: string | null;
  /** The directory the agent named for the call, when it was not the session's. */
  cwd?: string;
  /** Set where it differs from the previous call's: the environment variables (names) that differ from the first call's. */
  envChanged?: EnvChange;
  /** Set where they changed: the tools the agent offered its model (names). */
  tools?: string[];
  /** A checkpoint's: whose change it records (see StepCheckpointEvent.madeBy); calls are always the agent's. */
  madeBy?: 'agent' | 'user';
  /** 'transcript': a call no hook saw, journaled from the agent's transcript (no snapshot of its own). */
  source?: 'transcript';
  /**
   * The operation this call ran (the agent's own undo, redo or restore through `agentsnap mcp`,
   * OpStartEvent.byStep) while it was open: `tree` is its result (null until its op.done), which the
   * call's post compares with (the restore is the operation's, not an edit of the call to undo again).
   */
  operation?: { op: number; kind: OpKind; tree: string | null };
}

export interface Session {
  id: string;
  worktree: string;
  gitDir: string;
  cwd: string;
  createdAt: string;
  lastActivity: string;
  agent: string | null;
  command: string[] | null;
  /** The name the user gave it (`wrap --name`); see sessionName for the one shown. */
  name?: string;
  owner: SessionStartEvent['owner'];
  baseHead: string | null;
  branch: string | null;
  baseline: string;
  baselineTree: string | null;
  /** The session's latest snapshot (chain tip). */
  head: string;
  headTree: string | null;
  ended: SessionEndEvent | null;
  discarded: boolean;
  /** The transcript the agent named at its (re)start (`session.transcript`); absent in journals without one. */
  agentTranscript?: string;
  /** The newest envChanged a step journaled (the hot path compares a call's with it). */
  envChanged?: EnvChange;
  /** The newest tools a step journaled. */
  tools?: string[];
  /** The conversation's first prompt, as the first step that read it journaled it (sessionName's default). */
  prompt?: string;
  /** Environment directories `wrap --environment` named for this session (its start and resumes). */
  environment?: string[];
  steps: Step[];
  nextStep: number;
  /** The events this module keeps as they are, for their own readers (operations, applies, promotes, checks). */
  extraEvents: ExtraEvent[];
}

function union(a: readonly string[], b: readonly string[]): string[] {
  return [...a, ...b.filter((x) => !a.includes(x))];
}

/**
 * The settings a session's snapshots and operations use: the repository's, with the environment directories
 * `wrap --environment` named for the session added. Every snapshot of the session (its calls, its operations'
 * safety snapshots, a diff against the worktree) takes them, or its trees would disagree about them.
 */
export function sessionSettings(settings: Settings, s: Pick<Session, 'environment'> | null | undefined): Settings {
  const extra = s?.environment ?? [];
  if (extra.every((d) => settings.environment.includes(d))) return settings;
  return { ...settings, environment: union(settings.environment, extra) };
}

/** Steps still open, lowest first. */
export function openSteps(s: Session): Step[] {
  return s.steps.filter((st) => st.status === 'open');
}

/** The status of a session, given whether its owning wrapper is still alive. */
export function sessionStatus(s: Pick<Session, 'discarded' | 'ended' | 'owner'>, ownerAlive: boolean): SessionStatus {
  if (s.discarded) return 'discarded';
  if (s.ended) return 'ended';
  if (s.owner && !ownerAlive) return 'ended';
  return 'running';
}

function blankStep(n: number, time: string): Step {
  return {
    step: n,
    kind: 'call',
    tool: null,
    status: 'open',
    pre: null,
    preTree: null,
    post: null,
    postTree: null,
    startedAt: time,
    endedAt: null,
    durationMs: null,
    toolUseId: null,
    changed: [],
    changedBefore: [],
    skipped: [],
    overlaps: [],
    transcript: null,
    unprotectedReason: null,
  };
}

/** A session with no steps yet, from its start event. */
export function sessionFromStart(start: SessionStartEvent): Session {
  return {
    id: start.session,
    worktree: start.worktree,
    gitDir: start.gitDir,
    cwd: start.cwd,
    createdAt: start.time,
    lastActivity: start.time,
    agent: start.agent,
    command: start.command,
    ...(start.name ? { name: start.name } : {}),
    ...(start.environment?.length ? { environment: [...start.environment] } : {}),
    owner: start.owner,
    baseHead: start.baseHead,
    branch: start.branch,
    baseline: start.baseline,
    baselineTree: start.tree,
    head: start.baseline,
    headTree: start.tree,
    ended: null,
    discarded: false,
    steps: [],
    nextStep: 1,
    extraEvents: [],
  };
}

function stepFor(s: Session, n: number, time: string): Step {
  let st = s.steps.find((x) => x.step === n);
  if (!st) {
    st = blankStep(n, time);
    s.steps.push(st);
  }
  if (n >= s.nextStep) s.nextStep = n + 1;
  return st;
}

/** Whose change a checkpoint records; journals from before `madeBy` marked `wrap --auto`'s by their tool. */
export function checkpointMadeBy(e: Pick<StepCheckpointEvent, 'madeBy' | 'tool'>): 'agent' | 'user' {
  return e.madeBy ?? (e.tool === 'auto' ? 'agent' : 'user');
}

/** Applies one journal event to a session (in place). Events of other sessions are ignored. */
/** A call's snapshot is the session's new tip, but for a call journaled from the transcript: it took no snapshot, its commit is the state it started in. */
function moveHead(s: Session, e: { commit: string; source?: string }, tree: string | null): void {
  if (e.source === 'transcript') return;
  s.head = e.commit;
  s.headTree = tree;
}

function applyStepPre(s: Session, ev: StepPreEvent): void {
  Object.assign(stepFor(s, ev.step, ev.time), {
    tool: ev.tool,
    pre: ev.commit,
    preTree: ev.tree,
    startedAt: ev.time,
    toolUseId: ev.toolUseId ?? null,
    input: ev.input,
    message: ev.message ?? null,
    changedBefore: ev.changed,
    skipped: ev.skipped,
    overlaps: ev.overlaps,
    transcript: ev.transcript ?? null,
    ...(ev.agentVersion ? { agentVersion: ev.agentVersion } : {}),
    ...(ev.model ? { model: ev.model } : {}),
    ...(ev.cwd ? { cwd: ev.cwd } : {}),
    ...(ev.envChanged ? { envChanged: ev.envChanged } : {}),
    ...(ev.tools ? { tools: ev.tools } : {}),
    ...(ev.source ? { source: ev.source } : {}),
  });
  if (ev.envChanged) s.envChanged = ev.envChanged;
  if (ev.tools) s.tools = ev.tools;
  if (ev.prompt && !s.prompt) s.prompt = ev.prompt;
  moveHead(s, ev, ev.tree);
}

function applyStepPost(s: Session, ev: StepPostEvent): void {
  const st = stepFor(s, ev.step, ev.time);
  Object.assign(st, {
    status: ev.status,
    post: ev.commit,
    postTree: ev.tree,
    endedAt: ev.time,
    durationMs: ev.durationMs,
    output: ev.output,
    error: ev.error ?? null,
    changed: ev.changed,
    skipped: ev.skipped.length > 0 ? ev.skipped : st.skipped,
  });
  if (ev.transcript && !st.transcript?.uuid)
    st.transcript = { ...ev.transcript, ...(st.transcript?.offset !== undefined ? { offset: st.transcript.offset } : {}) };
  if (ev.agentVersion && !st.agentVersion) st.agentVersion = ev.agentVersion;
  if (ev.model && !st.model) st.model = ev.model;
  moveHead(s, ev, ev.tree);
}

function applyCheckpoint(s: Session, ev: StepCheckpointEvent): void {
  Object.assign(stepFor(s, ev.step, ev.time), {
    kind: 'checkpoint',
    tool: ev.tool,
    status: 'done',
    pre: ev.commit,
    preTree: ev.tree,
    post: ev.commit,
    postTree: ev.tree,
    startedAt: ev.time,
    endedAt: ev.time,
    durationMs: 0,
    message: ev.message ?? null,
    madeBy: checkpointMadeBy(ev),
    // A checkpoint's change is everything since the previous snapshot (what `show` prints).
    changed: ev.changed,
    skipped: ev.skipped,
  });
  s.head = ev.commit;
  s.headTree = ev.tree;
}

export function applyEvent(s: Session, ev: JournalEvent): void {
  if (ev.session !== s.id) return;
  // Calls journaled from a transcript carry the times they ran, which can be before the last event.
  if (!(ev.time < s.lastActivity)) s.lastActivity = ev.time;
  switch (ev.type) {
    case 'session.start':
      break;
    case 'step.pre':
      applyStepPre(s, ev);
      break;
    case 'step.post':
      applyStepPost(s, ev);
      break;
    case 'step.checkpoint':
      applyCheckpoint(s, ev);
      break;
    case 'step.unprotected': {
      const st = stepFor(s, ev.step, ev.time);
      st.status = 'unprotected';
      st.tool = st.tool ?? ev.tool;
      st.unprotectedReason = ev.reason;
      if (ev.toolUseId) st.toolUseId = ev.toolUseId;
      if (ev.input !== undefined && st.input === undefined) st.input = ev.input;
      if (ev.phase !== 'pre') st.endedAt = st.endedAt ?? ev.time;
      break;
    }
    case 'session.end': {
      s.ended = ev;
      if (ev.commit) {
        s.head = ev.commit;
        s.headTree = ev.tree;
      }
      break;
    }
    case 'session.resume': {
      s.ended = null;
      s.owner = ev.owner;
      if (ev.agent) s.agent = ev.agent;
      if (ev.command) s.command = ev.command;
      if (ev.environment?.length) s.environment = union(s.environment ?? [], ev.environment);
      // A new run: its agent names its own transcript when it starts.
      delete s.agentTranscript;
      break;
    }
    case 'session.transcript':
      s.agentTranscript = ev.path;
      break;
    case 'session.discard': {
      s.discarded = true;
      // A discard may carry the final snapshot of the worktree it removed.
      if (typeof ev.commit === 'string' && ev.commit) {
        s.head = ev.commit;
        s.headTree = ev.tree;
      }
      break;
    }
    case 'op.done': {
      // An undo/redo/restore/revert moved the worktree: its result is the new chain tip.
      if (ev.commit) {
        s.head = ev.commit;
        s.headTree = ev.tree;
      }
      // The call that asked for it (op.start.byStep): its result is what the call's post compares with.
      const by = s.steps.find((x) => x.operation?.op === ev.op && x.operation.tree === null);
      if (by?.operation) {
        if (ev.status === 'done' && ev.tree) by.operation.tree = ev.tree;
        else delete by.operation;
      }
      s.extraEvents.push(ev);
      break;
    }
    case 'op.start': {
      const by = ev.byStep === undefined ? undefined : s.steps.find((x) => x.step === ev.byStep);
      if (by && by.status === 'open') by.operation = { op: ev.op, kind: ev.kind, tree: null };
      s.extraEvents.push(ev);
      break;
    }
    case 'session.apply':
    case 'session.apply.undo':
    case 'session.promote':
    case 'step.check':
      s.extraEvents.push(ev);
      break;
    default: {
      // A kind added to JournalEvent and not folded here fails to compile.
      const unfolded: never = ev;
      void unfolded;
    }
  }
}

/** Builds the session from its journal events; returns null when there is no start event. */
export function foldJournal(events: JournalEvent[]): Session | null {
  const start = events.find((e): e is SessionStartEvent => e.type === 'session.start');
  if (!start) return null;
  const s = sessionFromStart(start);
  for (const ev of events) applyEvent(s, ev);
  s.steps.sort((a, b) => a.step - b.step);
  return s;
}
