// The transcript import: calls an agent ran without hooks (Claude Code's
// read-only tools, see agents/claude.ts) journaled from its transcript as
// steps whose pre and post are the state they saw.
import { appendEvents, eventBase, takeBackAppend, type JournalEvent } from './journal.js';
import { applyEvent, type Session, type Step } from './model.js';
import type { RefUpdate } from '../git/plumbing.js';
import type { Context } from './context.js';
import type { TranscriptCall, TranscriptTail } from '../agents/adapter.js';
import { importsReadCalls, transcriptReader } from '../agents/registry.js';
import { sanitize } from './redact.js';
import { stepRef, type SessionPaths } from './refs.js';
import { type SessionState, stateFrom, writeState, loadSession, loadState } from './state.js';

/** The step.pre and step.post of one read from the transcript: pre = post = the state it saw (a read changes no file). */
function transcriptStepEvents(
  session: string,
  c: TranscriptCall,
  at: {
    step: number;
    seen: { pre: string; tree: string };
    /** When a read journaled as started (at an earlier import) began. */
    started: string | undefined;
    transcriptPath: string;
    clean: <T>(v: T) => T;
  },
): { pre: JournalEvent; post: JournalEvent } {
  const now = new Date().toISOString();
  const started = at.started ?? c.startedAt ?? now;
  const ended = c.endedAt ?? started;
  const ms = Date.parse(ended) - Date.parse(started);
  const pre: JournalEvent = {
    ...eventBase(session),
    time: started,
    type: 'step.pre',
    step: at.step,
    tool: at.clean(c.tool),
    input: at.clean(c.input),
    toolUseId: c.toolUseId,
    message: null,
    commit: at.seen.pre,
    tree: at.seen.tree,
    parent: at.seen.pre,
    overlaps: [],
    changed: [],
    skipped: [],
    transcript: { path: at.transcriptPath, offset: c.lineOffset, ...(c.uuid ? { uuid: c.uuid } : {}) },
    agentVersion: c.agentVersion ? `claude-code ${c.agentVersion}` : null,
    ...(c.model ? { model: c.model } : {}),
    source: 'transcript',
  };
  // A read that ran beside other calls (ended at a later import) keeps the state it started in: pre = post.
  const post: JournalEvent = {
    ...eventBase(session),
    time: ended,
    type: 'step.post',
    step: at.step,
    status: c.pending ? 'interrupted' : c.isError ? 'failed' : 'done',
    commit: at.seen.pre,
    tree: at.seen.tree,
    output: at.clean(c.output),
    error: c.isError ? at.clean(typeof c.output === 'string' ? (c.output.split('\n')[0] ?? 'failed') : 'failed') : null,
    durationMs: !c.pending && Number.isFinite(ms) && ms >= 0 ? ms : null,
    changed: [],
    skipped: [],
    source: 'transcript',
  };
  return { pre, post };
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
export async function importTranscriptCalls(
  ctx: Context,
  p: SessionPaths,
  state: SessionState,
  transcriptPath: string,
  tail: TranscriptTail,
  pendingBefore: number | undefined,
  final = false,
): Promise<number> {
  const { repo, settings } = ctx;
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
  const reads = transcriptReader(state.session.agent, transcriptPath)?.unjournaledReads;
  if (!reads) return 0;
  const scan = reads(tail, {
    journaled: (tid) => known.has(tid),
    open: (tid) => openReads.has(tid),
    // At the end, a read with no result will get none: it is journaled (interrupted) with the rest.
    ...(final ? { pendingBefore: Infinity } : pendingBefore !== undefined ? { pendingBefore } : {}),
    since,
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
  const s: Session = { ...state.session, steps: [...state.session.open], extraEvents: [] };
  const events: JournalEvent[] = [];
  let nextStep = s.nextStep;
  // The steps of hooked calls that ran after a read (see TranscriptCall.before), read from the journal once if needed.
  let journaled: Step[] | null = null;
  const stateBefore = (toolUseId: string): { pre: string; tree: string } | null => {
    const st =
      state.session.open.find((o) => o.toolUseId === toolUseId) ??
      (journaled ??= loadSession(repo, state.session.id).steps).find((o) => o.toolUseId === toolUseId);
    return st?.pre && st.preTree ? { pre: st.pre, tree: st.preTree } : null;
  };
  for (const c of calls) {
    const opened = openReads.get(c.toolUseId);
    const seen = (!opened && c.before ? stateBefore(c.before) : null) ?? { pre: opened?.pre ?? head, tree: opened?.preTree ?? tree };
    const step = opened?.step ?? nextStep++;
    const { pre, post } = transcriptStepEvents(state.session.id, c, { step, seen, started: opened?.startedAt, transcriptPath, clean });
    if (!c.closes) events.push(pre);
    if (!c.pending || final) events.push(post);
    refs.push({ ref: stepRef(state.session.id, step), value: seen.pre });
  }
  // Reads journaled as started whose result never came: closed as they started (a read changes nothing).
  for (const o of unended) {
    if (!o.pre || !o.preTree) continue;
    events.push({
      ...eventBase(state.session.id),
      type: 'step.post',
      step: o.step,
      status: 'interrupted',
      commit: o.pre,
      tree: o.preTree,
      output: undefined,
      error: null,
      durationMs: null,
      changed: [],
      skipped: [],
      source: 'transcript',
    });
    refs.push({ ref: stepRef(state.session.id, o.step), value: o.pre });
  }
  // One write and one fsync for them all. A failed ref update takes the lines back, as commitEvent does (a full
  // disk: no step whose ref is missing).
  const appended = events.length > 0 ? appendEvents(p.journal, events) : null;
  try {
    await ctx.refs.update(refs);
  } catch (e) {
    if (appended) takeBackAppend(p.journal, appended);
    throw e;
  }
  for (const ev of events) applyEvent(s, ev);
  const next = stateFrom(s, appended?.end ?? 0, { ...state, recentToolUseIds: recent }, true);
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
export async function importBeforeHeadMoves(ctx: Context, p: SessionPaths, state: SessionState): Promise<void> {
  if (state.session.ended || state.session.discarded) return;
  const transcript = readsTranscript(state);
  if (!transcript) return;
  const reader = transcriptReader(state.session.agent, transcript);
  const tail = reader?.unjournaledReads ? reader.readTail(transcript) : null;
  if (!reader || !tail) return;
  let pendingBefore = tail.size;
  for (const o of state.session.open) {
    if (o.source === 'transcript' || !o.toolUseId) continue;
    const at = reader.locateCall(transcript, o.toolUseId, tail).lineOffset;
    if (at !== undefined) pendingBefore = Math.min(pendingBefore, at);
  }
  await importQuietly(ctx, p, state, transcript, tail, pendingBefore);
}

/**
 * The transcript a session's unhooked reads come from: the one the agent
 * named at its start (it changes with /clear), else the one the last import
 * read, else the newest step's (an agent whose reads are not hooked, Claude
 * Code); null: none known.
 */
function readsTranscript(state: SessionState): string | null {
  return (
    state.session.agentTranscript ??
    state.transcriptFloor?.path ??
    (importsReadCalls(state.session.agent) ? (state.transcriptPath ?? null) : null)
  );
}

/** importTranscriptCalls for a hook's path: a failure costs only the imports; the state is re-read from the journal. */
export async function importQuietly(
  ctx: Context,
  p: SessionPaths,
  state: SessionState,
  transcriptPath: string,
  tail: TranscriptTail,
  pendingBefore: number | undefined,
  final = false,
): Promise<void> {
  try {
    await importTranscriptCalls(ctx, p, state, transcriptPath, tail, pendingBefore, final);
  } catch {
    // An unreadable or foreign transcript costs only its imports; a journal that cannot be read fails loadState here.
    Object.assign(state, await loadState(ctx.repo, state.session.id));
  }
}
