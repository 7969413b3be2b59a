// Folding a journal into the session it describes. Pure: no I/O.
import type {
  ChangedPath,
  JournalEvent,
  SessionEndEvent,
  SessionResumeEvent,
  SessionStartEvent,
  SessionStatus,
  SessionTranscriptEvent,
  SkippedFile,
  StepCheckpointEvent,
  StepPostEvent,
  StepPreEvent,
  StepStatus,
  StepUnprotectedEvent,
  OpDoneEvent,
  OpKind,
  OpStartEvent,
  TranscriptPosition,
  EnvChange,
} from './journal.js';

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
  steps: Step[];
  nextStep: number;
  /** Every event of the journal, for event types this module does not fold. */
  extraEvents: JournalEvent[];
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

export function applyEvent(s: Session, ev: JournalEvent): void {
  if (ev.session !== s.id) return;
  // Calls journaled from a transcript carry the times they ran, which can be before the last event.
  if (!(ev.time < s.lastActivity)) s.lastActivity = ev.time;
  const tree = ((ev as { tree?: unknown }).tree as string | undefined) ?? null;
  switch (ev.type) {
    case 'session.start':
      break;
    case 'step.pre': {
      const e = ev as StepPreEvent;
      Object.assign(stepFor(s, e.step, e.time), {
        tool: e.tool,
        pre: e.commit,
        preTree: tree,
        startedAt: e.time,
        toolUseId: e.toolUseId ?? null,
        input: e.input,
        message: e.message ?? null,
        changedBefore: e.changed,
        skipped: e.skipped,
        overlaps: e.overlaps,
        transcript: e.transcript ?? null,
        ...(e.agentVersion ? { agentVersion: e.agentVersion } : {}),
        ...(e.model ? { model: e.model } : {}),
        ...(e.cwd ? { cwd: e.cwd } : {}),
        ...(e.envChanged ? { envChanged: e.envChanged } : {}),
        ...(e.tools ? { tools: e.tools } : {}),
        ...(e.source ? { source: e.source } : {}),
      });
      if (e.envChanged) s.envChanged = e.envChanged;
      if (e.tools) s.tools = e.tools;
      moveHead(s, e, tree);
      break;
    }
    case 'step.post': {
      const e = ev as StepPostEvent;
      const st = stepFor(s, e.step, e.time);
      Object.assign(st, {
        status: e.status,
        post: e.commit,
        postTree: tree,
        endedAt: e.time,
        durationMs: e.durationMs,
        output: e.output,
        error: e.error ?? null,
        changed: e.changed,
        skipped: e.skipped.length > 0 ? e.skipped : st.skipped,
      });
      if (e.transcript && !st.transcript?.uuid) st.transcript = { ...e.transcript, ...(st.transcript?.offset !== undefined ? { offset: st.transcript.offset } : {}) };
      if (e.agentVersion && !st.agentVersion) st.agentVersion = e.agentVersion;
      if (e.model && !st.model) st.model = e.model;
      moveHead(s, e, tree);
      break;
    }
    case 'step.checkpoint': {
      const e = ev as StepCheckpointEvent;
      Object.assign(stepFor(s, e.step, e.time), {
        kind: 'checkpoint',
        tool: e.tool,
        status: 'done',
        pre: e.commit,
        preTree: tree,
        post: e.commit,
        postTree: tree,
        startedAt: e.time,
        endedAt: e.time,
        durationMs: 0,
        message: e.message ?? null,
        madeBy: checkpointMadeBy(e),
        // A checkpoint's change is everything since the previous snapshot (what `show` prints).
        changed: e.changed,
        skipped: e.skipped,
      });
      s.head = e.commit;
      s.headTree = tree;
      break;
    }
    case 'step.unprotected': {
      const e = ev as StepUnprotectedEvent;
      const st = stepFor(s, e.step, e.time);
      st.status = 'unprotected';
      st.tool = st.tool ?? e.tool;
      st.unprotectedReason = e.reason;
      if (e.toolUseId) st.toolUseId = e.toolUseId;
      if (e.input !== undefined && st.input === undefined) st.input = e.input;
      if (e.phase !== 'pre') st.endedAt = st.endedAt ?? e.time;
      break;
    }
    case 'session.end': {
      const e = ev as SessionEndEvent;
      s.ended = e;
      if (e.commit) {
        s.head = e.commit;
        s.headTree = tree;
      }
      break;
    }
    case 'session.resume': {
      const e = ev as SessionResumeEvent;
      s.ended = null;
      s.owner = e.owner;
      if (e.agent) s.agent = e.agent;
      if (e.command) s.command = e.command;
      // A new run: its agent names its own transcript when it starts.
      delete s.agentTranscript;
      break;
    }
    case 'session.transcript':
      s.agentTranscript = (ev as SessionTranscriptEvent).path;
      break;
    case 'session.discard': {
      s.discarded = true;
      // A discard may carry the final snapshot of the worktree it removed.
      const commit = (ev as { commit?: unknown }).commit;
      if (typeof commit === 'string' && commit) {
        s.head = commit;
        s.headTree = tree;
      }
      break;
    }
    case 'op.done': {
      // An undo/redo/restore/revert moved the worktree: its result is the new chain tip.
      const e = ev as OpDoneEvent;
      if (e.commit) {
        s.head = e.commit;
        s.headTree = tree;
      }
      // The call that asked for it (op.start.byStep): its result is what the call's post compares with.
      const by = s.steps.find((x) => x.operation?.op === e.op && x.operation.tree === null);
      if (by?.operation) {
        if (e.status === 'done' && tree) by.operation.tree = tree;
        else delete by.operation;
      }
      s.extraEvents.push(ev);
      break;
    }
    case 'op.start': {
      const e = ev as OpStartEvent;
      const by = e.byStep === undefined ? undefined : s.steps.find((x) => x.step === e.byStep);
      if (by && by.status === 'open') by.operation = { op: e.op, kind: e.kind, tree: null };
      s.extraEvents.push(ev);
      break;
    }
    default:
      s.extraEvents.push(ev);
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
