// session/ (above agents/, snapshot/, git/): the journal and its fold, sessions
// and steps, refs, selection and liveness, the transcript import, maintenance,
// redaction, effects, read-only views. Snapshots the worktree but never writes
// into it (that is restore/); knows no agent beyond the adapters in agents/.
//
// Sessions and steps (this file): start, pre, post, checkpoint, unprotected,
// resume, end, and an operation's hold on a session (withSessionLock). Every
// mutation runs under the session's lock and follows one order: write
// objects, append the journal event (the truth), move the refs, then refresh
// state.json (a cache). A crash between any two leaves something the next
// call repairs. Beside it: refs.ts (refs and paths), state.ts (the cached
// fold), locks.ts (locks and that order), selection.ts (summaries, liveness,
// which session), transcript-import.ts (calls no hook reported); this file
// re-exports what it exported before the split.
// Over 500 lines: each kind of step follows the same mutation order, and they
// are kept side by side so that they stay alike.
import fs from 'node:fs';
import path from 'node:path';
import { errors, type AgentsnapError } from '../base/errors.js';
import { shellQuote } from '../base/shell.js';
import { assertSessionId, newSessionId } from '../base/ids.js';
import {
  appendEvent,
  eventBase,
  readJournal,
  type ChangedPath,
  type JournalEvent,
  type SkippedFile,
  type StepPostEvent,
  type TranscriptPosition,
} from './journal.js';
import { withLock } from '../base/lock.js';
import { foldJournal, sessionSettings, type Session, type Step } from './model.js';
import { diffTrees, readHead, type RefUpdate } from '../git/plumbing.js';
import type { Repo } from '../git/repo.js';
import { checkGitVersion } from '../git/repo.js';
import { maintainEndedSession, maintainInBackground, maybeMaintain } from './maintenance.js';
import type { TranscriptTail } from '../agents/adapter.js';
import { importsReadCalls, transcriptReader } from '../agents/registry.js';
import { stepRef, headRef, type SessionPaths, sessionPaths, sessionIds, ensureDir } from './refs.js';
import { worktreeLockFile, lockedSnapshot, mutate, commitEvent, keepObjects, putBackKeepRefs } from './locks.js';
import { type SessionState, stateFrom, writeState, loadState, loadSession, loadSessionExists, journaled, forgetPruned } from './state.js';
import { wrapperRunning, listSessions, markRunning, unmarkRunning, type SelectOptions, selectSession } from './selection.js';
import { importBeforeHeadMoves, importQuietly } from './transcript-import.js';
import type { Context } from './context.js';
import { envChangeAt } from './environment.js';
export {
  STEP_REF_PREFIX,
  META_REF_PREFIX,
  stepRef,
  SESSION_META_PREFIX,
  sessionMetaRef,
  headRef,
  sessionOfRef,
  sessionRefs,
  sessionsDir,
  sessionIds,
  sessionPaths,
  worktreeKey,
  refsFor,
} from './refs.js';
export type { SessionPaths } from './refs.js';
export { loadSession, sessionFinished } from './state.js';
export { contentLockFile } from './locks.js';
export {
  sessionName,
  statusNow,
  wrapperRunning,
  wrapperGone,
  sessionInUse,
  listSessions,
  listWrappedSessions,
  selectSession,
  wrapperOwner,
} from './selection.js';
export type { SessionSummary, SelectOptions } from './selection.js';

export interface SnapshotContext {
  onProgress?: (phase: string) => void;
}

export interface StartOptions extends SnapshotContext {
  id?: string;
  agent?: string | null;
  command?: string[] | null;
  /** A name the user gave the session (`wrap --name`). */
  name?: string | null;
  /** Process whose life the session follows (a wrapper); null for sessions driven by `snap`. */
  owner?: { pid: number; start: string | null; host: string } | null;
  /** Write the baseline's refreshed copy of the user's index back for the next Node-path snapshot even with a server (see SnapshotTreeOptions.warmCopy). */
  warmCopy?: boolean;
  /** checkGitVersion already started by the caller (wrap runs it beside openRepo): awaited here, before anything is written. */
  gitVersion?: Promise<string>;
  /** Environment directories snapshotted for this session beside agentsnap.environment (`wrap --environment`). */
  environment?: string[];
}

export interface SnapshotResult {
  session: string;
  step: number;
  commit: string;
  tree: string;
  changed: ChangedPath[];
  skipped: SkippedFile[];
}

export function commitMessage(fields: {
  summary: string;
  session: string;
  step: number | null;
  phase: string;
  tool: string | null;
  head: string | null;
  kind?: string;
  /** The environment directories the snapshot holds whole (agentsnap.environment): one trailer each. */
  environment?: readonly string[];
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
  for (const dir of fields.environment ?? []) lines.push(`Agentsnap-Environment: ${oneLine(dir)}`);
  return lines.join('\n') + '\n';
}

/** Starts a session: validates the id, takes the baseline (step 0) and journals the start. */
export async function startSession(ctx: Context, opts: StartOptions = {}): Promise<SnapshotResult> {
  const { repo } = ctx;
  const environment = opts.environment ?? [];
  const settings = sessionSettings(ctx.settings, { environment });
  const id = opts.id ? assertSessionId(opts.id) : newSessionId();
  await (opts.gitVersion ?? checkGitVersion(repo.env));
  const p = sessionPaths(repo, id);
  ensureDir(p.dir, repo.stateDir);
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
    const snap = await lockedSnapshot(ctx, {
      indexFile: p.index,
      settings,
      parentTree: null,
      donors: () => donorIndexes(repo, id),
      ...(opts.warmCopy !== undefined ? { warmCopy: opts.warmCopy } : {}),
      ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
    });
    const commit = await ctx.objects.commitTree({
      tree: snap.tree,
      parents: [],
      message: commitMessage({
        summary: `session ${id} baseline`,
        session: id,
        step: 0,
        phase: 'baseline',
        tool: null,
        head: head.commit,
        environment: settings.environment,
      }),
    });
    const ev: JournalEvent = {
      ...eventBase(id),
      type: 'session.start',
      // The caller's directory (the repository was opened from it), not this process's: a library caller passes its own.
      cwd: path.join(repo.worktree, repo.prefix),
      worktree: repo.worktree,
      gitDir: repo.gitDir,
      baseHead: head.commit,
      branch: head.branch,
      agent: clean(opts.agent ?? null),
      command: clean(opts.command ?? null),
      ...(opts.name ? { name: clean(opts.name) } : {}),
      owner: opts.owner ?? null,
      baseline: commit,
      tree: snap.tree,
      skipped: snap.skipped,
      ...(environment.length > 0 ? { environment } : {}),
    };
    const refs = [
      { ref: stepRef(id, 0), value: commit },
      { ref: headRef(id), value: commit },
    ];
    const kept = await keepObjects(ctx, id, refs);
    let size: number;
    try {
      if (opts.owner) markRunning(repo, id);
      size = appendEvent(p.journal, ev).end;
      await ctx.refs.update(refs);
    } catch (e) {
      // No session: no journal, no refs (a full disk leaves nothing behind).
      fs.rmSync(p.journal, { force: true });
      if (opts.owner) unmarkRunning(repo, id);
      await putBackKeepRefs(ctx, kept);
      throw e;
    }
    const s = foldJournal([ev]);
    if (s) writeState(p.state, stateFrom(s, size, null));
    return { session: id, step: 0, commit, tree: snap.tree, changed: [], skipped: snap.skipped };
  });
}

/**
 * The private indexes of earlier sessions that may still be copies of the
 * user's index (an `index.user-copy` record beside them), newest record
 * first: a new session's baseline may continue one (SnapshotTreeOptions.donors;
 * the snapshot checks each). A few only (other worktrees of the repository, session worktrees among them, have records too): the newest of this worktree is the one that fits.
 */
function donorIndexes(repo: Repo, except: string): string[] {
  const found: { index: string; at: number }[] = [];
  for (const other of sessionIds(repo)) {
    if (other === except) continue;
    const index = sessionPaths(repo, other).index;
    const st = fs.statSync(`${index}.user-copy`, { throwIfNoEntry: false });
    if (st) found.push({ index, at: st.mtimeMs });
  }
  return found
    .sort((a, b) => b.at - a.at)
    .slice(0, 16)
    .map((f) => f.index);
}

/** What an operation (src/restore/undo.ts) gets while it holds a session's lock. */
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
export async function withSessionLock<T>(ctx: Context, id: string, purpose: string, fn: (s: LockedSession) => Promise<T>): Promise<T> {
  return mutate(
    ctx,
    id,
    purpose,
    async (state, p) => {
      // An operation writes the worktree before it journals: it is not run twice (mutate's retry), so what git's prune
      // deleted of the head is found first (one cat-file).
      await forgetPruned(ctx.repo, state);
      return fn({
        paths: p,
        head: () => ({ commit: state.session.head, tree: state.session.headTree }),
        append: (ev, refs) => commitEvent(ctx, p, state, ev, refs),
        importReads: () => importBeforeHeadMoves(ctx, p, state),
      });
    },
    false,
  );
}

export interface PreOptions extends SnapshotContext {
  tool?: string | null;
  input?: unknown;
  toolUseId?: string | null;
  message?: string | null;
  transcript?: TranscriptPosition | null;
  agentVersion?: string | null;
  model?: string | null;
  /** The directory the agent named for the call (journaled when it is not the session's). */
  cwd?: string | null;
  /** The environment the call ran with (a hook's own: the agent's): the names that differ from the first call's are journaled, never a value. */
  env?: NodeJS.ProcessEnv | null;
  /** The tools the agent offers its model, from its transcript past byte `since` (the adapter's toolsOffered over the tail the hook read). */
  toolsOffered?: ((since: number | undefined) => string[] | null) | null;
  /** The conversation's first prompt, read only while the session has none (its first few steps). */
  firstPrompt?: (() => string | null) | null;
  /** See reusedSnapshot. */
  sameInstantAs?: SnapshotResult | null;
  /** Claude Code's transcript as the hook read it: its unhooked calls are journaled first (see importTranscriptCalls). */
  transcriptTail?: {
    path: string;
    tail: TranscriptTail /** Where this call's line starts (reads started before it are journaled before it). */;
    callOffset?: number;
  } | null;
}

// A prompt is a name for the session list: its first line, enough of it to tell sessions apart.
const PROMPT_NAME_LENGTH = 200;

/**
 * The first prompt to journal with this call: read while the session has no name, no prompt and few steps (a
 * conversation whose transcript holds no prompt is not read at every call).
 */
function promptToName(
  s: Pick<Session, 'name' | 'prompt' | 'nextStep'>,
  read: PreOptions['firstPrompt'],
  clean: <T>(v: T) => T,
): string | null {
  if (!read || s.name || s.prompt || s.nextStep > 5) return null;
  const text = read()?.replace(/\s+/g, ' ').trim();
  return text ? clean(text.slice(0, PROMPT_NAME_LENGTH)) : null;
}

/** Phase pre of a tool call: allocates the next step and snapshots the worktree before the call. */
export async function recordPre(ctx: Context, id: string, opts: PreOptions = {}): Promise<SnapshotResult> {
  const { repo } = ctx;
  return mutate(ctx, id, 'snapshot (pre)', async (state, p) => {
    const settings = sessionSettings(ctx.settings, state.session);
    // Reads still running beside this call get their start now (their end at a later import): call order holds.
    if (opts.transcriptTail)
      await importQuietly(ctx, p, state, opts.transcriptTail.path, opts.transcriptTail.tail, opts.transcriptTail.callOffset);
    const s = state.session;
    const step = s.nextStep;
    const head = await readHead(repo);
    const clean = journaled(settings);
    const tool = clean(opts.tool ?? null);
    const snap =
      reusedSnapshot(s, opts.sameInstantAs) ??
      (await lockedSnapshot(ctx, {
        indexFile: p.index,
        settings,
        parentTree: s.headTree,
        ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
      }));
    const commit = await ctx.objects.commitTree({
      tree: snap.tree,
      parents: s.head ? [s.head] : [],
      message: commitMessage({
        summary: `step ${step} pre ${tool ?? ''}`.trim(),
        session: id,
        step,
        phase: 'pre',
        tool,
        head: head.commit,
        environment: settings.environment,
      }),
    });
    const envChanged = opts.env ? envChangeAt(p.dir, state, opts.env, s.envChanged) : undefined;
    const offered = opts.transcriptTail && opts.toolsOffered ? toolsSince(state, opts.transcriptTail, opts.toolsOffered) : null;
    const tools = offered && clean(offered).join('\0') !== (s.tools ?? []).join('\0') ? clean(offered) : undefined;
    const prompt = promptToName(s, opts.firstPrompt, clean);
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
      ...(opts.cwd && opts.cwd !== s.cwd ? { cwd: clean(opts.cwd) } : {}),
      ...(envChanged ? { envChanged: clean(envChanged) } : {}),
      ...(tools ? { tools } : {}),
      ...(prompt ? { prompt } : {}),
    };
    await commitEvent(ctx, p, state, ev, [
      { ref: stepRef(id, step), value: commit },
      { ref: headRef(id), value: commit },
    ]);
    await maybeMaintain(repo, p, state);
    return { session: id, step, commit, tree: snap.tree, changed: snap.changed, skipped: snap.skipped };
  });
}

/**
 * The tools offered since the previous pre looked (state.toolsScan: the end of the last whole line it searched, so
 * each byte of the transcript is searched once); moves that mark to this tail's last whole line.
 */
function toolsSince(
  state: SessionState,
  t: NonNullable<PreOptions['transcriptTail']>,
  offered: NonNullable<PreOptions['toolsOffered']>,
): string[] | null {
  const seen = state.toolsScan;
  const found = offered(seen && seen.path === t.path && seen.offset <= t.tail.size ? seen.offset : undefined);
  state.toolsScan = { path: t.path, offset: t.tail.from + t.tail.buf.lastIndexOf(0x0a) + 1 };
  return found;
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
  /** With toolUseId: the id may be shared (made from the call's tool and input); when more than one open step has it, close none (AmbiguousOpenStep). */
  uniqueToolUseId?: boolean;
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
    const same = open.filter((o) => o.toolUseId === opts.toolUseId);
    if (opts.uniqueToolUseId && same.length > 1) {
      throw errors.ambiguousOpenStep(
        `session ${id} has ${same.length} open steps (${same.map((o) => o.step).join(', ')}) for tool call ${opts.toolUseId}; none is closed.`,
        {
          hint: 'Say which one with --step N.',
          data: { session: id, toolUseId: opts.toolUseId, open: same.map((o) => o.step) },
        },
      );
    }
    const st = same[0];
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
export async function recordPost(ctx: Context, id: string, opts: PostOptions = {}): Promise<SnapshotResult> {
  const { repo } = ctx;
  return mutate(ctx, id, 'snapshot (post)', async (state, p) => {
    const settings = sessionSettings(ctx.settings, state.session);
    const s = state.session;
    const st = findOpenStep(state, opts);
    const head = await readHead(repo);
    const clean = journaled(settings);
    const snap = await lockedSnapshot(ctx, {
      indexFile: p.index,
      settings,
      parentTree: s.headTree,
      ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
    });
    const pre = st.pre ?? s.head;
    // First parent: the pre-snapshot; second: the chain tip when other snapshots came between (overlapping calls).
    const parents = (s.head !== pre ? [pre, s.head] : [pre]).filter(Boolean);
    const commit = await ctx.objects.commitTree({
      tree: snap.tree,
      parents,
      message: commitMessage({
        summary: `step ${st.step} post ${st.tool ?? ''}`.trim(),
        session: id,
        step: st.step,
        phase: 'post',
        tool: st.tool,
        head: head.commit,
        environment: settings.environment,
      }),
    });
    // snap.changed is already the diff from the chain tip; it is the step's own diff unless other snapshots came between.
    // A call that ran an operation (the agent's undo through `agentsnap mcp`): what it changed besides that operation,
    // from the operation's result; the restore itself is the operation's (journaled as such), not an edit to undo again.
    const from = st.operation?.tree ?? st.preTree;
    const changed = from && from !== s.headTree ? await diffTrees(repo, from, snap.tree) : snap.changed;
    const startedMs = Date.parse(st.startedAt);
    const ev: StepPostEvent = {
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
      if (!st.transcript?.uuid) ev.transcript = found.position;
      if (!st.agentVersion && found.agentVersion) ev.agentVersion = clean(found.agentVersion);
      if (!st.model && found.model) ev.model = clean(found.model);
    }
    await commitEvent(ctx, p, state, ev, [
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
function reusedSnapshot(
  s: SessionState['session'],
  taken: SnapshotResult | null | undefined,
): Pick<SnapshotResult, 'tree' | 'changed' | 'skipped'> | null {
  if (!taken || taken.commit !== s.head || taken.tree !== s.headTree) return null;
  return { tree: taken.tree, changed: [], skipped: taken.skipped };
}

/** A checkpoint step: one snapshot, pre and post the same. */
export async function recordCheckpoint(ctx: Context, id: string, opts: CheckpointOptions = {}): Promise<SnapshotResult> {
  return (await checkpoint(ctx, id, opts, false)) as SnapshotResult;
}

/** A checkpoint step only when the worktree differs from the session's latest snapshot; null (nothing written) otherwise. */
export async function recordCheckpointIfChanged(ctx: Context, id: string, opts: CheckpointOptions = {}): Promise<SnapshotResult | null> {
  return checkpoint(ctx, id, opts, true);
}

async function checkpoint(
  ctx: Context,
  id: string,
  opts: CheckpointOptions,
  onlyIfChanged: boolean,
  importReads = true,
): Promise<SnapshotResult | null> {
  const { repo } = ctx;
  return mutate(ctx, id, 'snapshot (checkpoint)', async (state, p) => {
    const settings = sessionSettings(ctx.settings, state.session);
    // The reads the transcript holds now saw the head before this checkpoint (wrap --auto's: only when it records something).
    if (importReads && !onlyIfChanged) await importBeforeHeadMoves(ctx, p, state);
    let s = state.session;
    const head = await readHead(repo);
    const clean = journaled(settings);
    const tool = clean(opts.tool ?? null);
    const message = clean(opts.message ?? null);
    const snap =
      reusedSnapshot(s, opts.sameInstantAs) ??
      (await lockedSnapshot(ctx, {
        indexFile: p.index,
        settings,
        parentTree: s.headTree,
        ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
      }));
    if (onlyIfChanged && snap.tree === s.headTree) return null;
    if (importReads && onlyIfChanged) {
      await importBeforeHeadMoves(ctx, p, state);
      s = state.session;
    }
    const step = s.nextStep;
    const commit = await ctx.objects.commitTree({
      tree: snap.tree,
      parents: s.head ? [s.head] : [],
      message: commitMessage({
        summary: `step ${step} checkpoint${message ? `: ${message}` : ''}`,
        session: id,
        step,
        phase: 'checkpoint',
        tool,
        head: head.commit,
        environment: settings.environment,
      }),
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
    await commitEvent(ctx, p, state, ev, [
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
}

/** Journals that a snapshot could not be taken: the step exists but is not protected (undo across it needs --force). */
export async function recordUnprotected(ctx: Context, id: string, opts: UnprotectedOptions): Promise<{ session: string; step: number }> {
  const { settings } = ctx;
  return mutate(ctx, id, 'record unprotected step', async (state, p) => {
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
    await commitEvent(ctx, p, state, ev, []);
    return { session: id, step };
  });
}

export interface ResumeOptions extends SnapshotContext {
  agent?: string | null;
  command?: string[] | null;
  owner?: { pid: number; start: string | null; host: string } | null;
  /** Environment directories this run adds to the session's (`wrap --environment`). */
  environment?: string[];
}

/**
 * Continues a session under a new wrapper: refuses discarded sessions and
 * sessions another live wrapper still runs, journals `session.resume`, then
 * checkpoints the worktree as the new run's starting point.
 */
export async function resumeSession(ctx: Context, id: string, opts: ResumeOptions = {}): Promise<SnapshotResult> {
  const { repo, settings } = ctx;
  loadSessionExists(repo, id);
  const p = sessionPaths(repo, id);
  await withLock(p.lock, { timeoutMs: settings.lockTimeoutMs, purpose: 'resume session' }, async () => {
    const state = await loadState(repo, id);
    const s = state.session;
    if (s.discarded) {
      throw errors.sessionNotRunning(`session ${id} has been discarded.`, {
        hint: 'Start a new session (leave --session out).',
        data: { session: id },
      });
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
    const ev: JournalEvent = {
      ...eventBase(id),
      type: 'session.resume',
      agent: clean(opts.agent ?? null),
      command: clean(opts.command ?? null),
      owner: opts.owner ?? null,
      ...(opts.environment?.length ? { environment: opts.environment } : {}),
    };
    if (opts.owner) markRunning(repo, id);
    await commitEvent(ctx, p, state, ev, []);
  });
  // No import: what the old transcript holds since the session ended belongs to no run of this session.
  return (await checkpoint(
    ctx,
    id,
    { message: 'session resumed', ...(opts.onProgress ? { onProgress: opts.onProgress } : {}) },
    false,
    false,
  )) as SnapshotResult;
}

export interface RunStepOptions {
  /** The tool name the step is recorded under (`wrap`). */
  tool: string;
  /** What the step says it was (a known agent's changes outside any tool call); none for a plain command. */
  message?: string | null;
}

/**
 * The end of a wrapped run that recorded no step at all (a plain command, or an agent none of whose calls reached
 * its hooks) but changed files: the whole run becomes one step instead of a final snapshot, pre = the snapshot the
 * run began at (its baseline, or its resume's checkpoint), post = the worktree now, its input the session's
 * command line, so that `log`, `show` and `undo` see it. Its number.
 */
async function recordWholeRun(
  ctx: Context,
  p: SessionPaths,
  state: SessionState,
  snap: { tree: string; changed: ChangedPath[]; skipped: SkippedFile[] },
  opts: RunStepOptions & { began: { time: string }; exitCode: number | null; signal: string | null; head: string | null },
): Promise<number> {
  const s = state.session;
  const id = s.id;
  const headTree = s.headTree ?? snap.tree;
  const clean = journaled(ctx.settings);
  const { environment } = sessionSettings(ctx.settings, s);
  const step = s.nextStep;
  const tool = clean(opts.tool);
  const command = s.command && s.command.length > 0 ? { command: s.command.map(shellQuote).join(' ') } : null;
  const pre = await ctx.objects.commitTree({
    tree: headTree,
    parents: [s.head],
    message: commitMessage({ summary: `step ${step} pre ${tool}`, session: id, step, phase: 'pre', tool, head: opts.head, environment }),
  });
  const preEv: JournalEvent = {
    ...eventBase(id),
    type: 'step.pre',
    step,
    tool,
    input: command,
    toolUseId: null,
    message: clean(opts.message ?? null),
    commit: pre,
    tree: headTree,
    parent: s.head,
    overlaps: [],
    changed: [],
    skipped: snap.skipped,
  };
  await commitEvent(ctx, p, state, preEv, [
    { ref: stepRef(id, step), value: pre },
    { ref: headRef(id), value: pre },
  ]);
  const post = await ctx.objects.commitTree({
    tree: snap.tree,
    parents: [pre],
    message: commitMessage({ summary: `step ${step} post ${tool}`, session: id, step, phase: 'post', tool, head: opts.head, environment }),
  });
  const startedMs = Date.parse(opts.began.time);
  const postEv: StepPostEvent = {
    ...eventBase(id),
    type: 'step.post',
    step,
    status: opts.signal || (opts.exitCode ?? 0) !== 0 ? 'failed' : 'done',
    commit: post,
    tree: snap.tree,
    durationMs: Number.isFinite(startedMs) ? Date.now() - startedMs : null,
    changed: snap.changed,
    skipped: snap.skipped,
  };
  await commitEvent(ctx, p, state, postEv, [
    { ref: stepRef(id, step), value: post },
    { ref: headRef(id), value: post },
  ]);
  return step;
}

/**
 * The snapshot the session's latest run began at and when: the baseline of its start, or the checkpoint its
 * resume took. Null when anything but that (a step, an operation, an apply) was journaled since the run began.
 */
function runBeganAt(events: readonly JournalEvent[]): { commit: string; time: string } | null {
  let at = -1;
  for (let i = events.length - 1; i >= 0 && at < 0; i--) {
    const t = events[i]?.type;
    if (t === 'session.start' || t === 'session.resume') at = i;
  }
  const begin = events[at];
  if (!begin) return null;
  let commit = begin.type === 'session.start' ? begin.baseline : null;
  for (const ev of events.slice(at + 1)) {
    if (ev.type === 'session.transcript') continue;
    // The checkpoint a resume takes right after its event is where that run begins.
    if (commit === null && ev.type === 'step.checkpoint') {
      commit = ev.commit;
      continue;
    }
    return null;
  }
  return commit ? { commit, time: begin.time } : null;
}

export interface EndOptions extends SnapshotContext {
  exitCode?: number | null;
  signal?: string | null;
  /** The agent's transcript, for calls no hook saw (else the one the session's steps named, for Claude Code). */
  transcriptPath?: string | null;
  /**
   * Pack the session's objects in a detached process instead of before returning (wrap: the user's shell waits
   * for it); 'deferred': started on a later turn of the event loop (a server answering a thin wrap client starts
   * it after its reply).
   */
  packInBackground?: boolean | 'deferred';
  /** A wrapped run's end: a run that recorded no step but changed files becomes this one step (see recordWholeRun). */
  runStep?: RunStepOptions;
  /** `agentsnap end`: refuse (nothing written) a session a live wrapper runs; its wrapper ends it. */
  refuseWrapped?: boolean;
}

export interface EndResult {
  /** The final snapshot, when the worktree changed after the session's last step. */
  commit: string | null;
  changed: ChangedPath[];
  /**
   * With EndOptions.runStep: the step the whole run became (and how many paths it changed), or 'unchanged' when
   * the run recorded nothing and changed nothing; null when the run recorded steps of its own (or without runStep).
   */
  wholeRun: { step: number; changed: number } | 'unchanged' | null;
}

/** Ends a session: closes open steps as interrupted, takes a final snapshot if anything changed, journals the end. */
export async function endSession(ctx: Context, id: string, opts: EndOptions = {}): Promise<EndResult> {
  const { repo } = ctx;
  // The last calls of a session may be reads no hook saw (and reads seen started may have ended since).
  await mutate(ctx, id, 'import transcript calls', async (state, p) => {
    // Under the lock before anything is written: a wrapper that resumed the session meanwhile keeps it.
    if (opts.refuseWrapped && wrapperRunning(state.session)) throw stillWrapped(state.session);
    const transcript =
      opts.transcriptPath ?? state.session.agentTranscript ?? (importsReadCalls(state.session.agent) ? state.transcriptPath : null);
    const tail = transcript ? (transcriptReader(state.session.agent, transcript)?.readTail(transcript) ?? null) : null;
    if (transcript && tail) await importQuietly(ctx, p, state, transcript, tail, undefined, true);
  });
  for (const st of [...(await loadState(repo, id, false)).session.open]) {
    await recordPost(ctx, id, { step: st.step, status: 'interrupted' });
  }
  return mutate(ctx, id, 'end session', async (state, p) => {
    const head = await readHead(repo);
    const settings = sessionSettings(ctx.settings, state.session);
    const snap = await lockedSnapshot(ctx, { indexFile: p.index, settings, parentTree: state.session.headTree });
    // A run that recorded nothing (no step, no operation since it began): what it changed is its one step.
    const began = opts.runStep && state.session.open.length === 0 ? runBeganAt(readJournal(p.journal).events) : null;
    const unrecorded = !!began && began.commit === state.session.head;
    const runStep =
      unrecorded && began && opts.runStep && snap.tree !== state.session.headTree
        ? await recordWholeRun(ctx, p, state, snap, {
            ...opts.runStep,
            began,
            exitCode: opts.exitCode ?? null,
            signal: opts.signal ?? null,
            head: head.commit,
          })
        : null;
    const s = state.session;
    let commit: string | null = null;
    if (snap.tree !== s.headTree) {
      commit = await ctx.objects.commitTree({
        tree: snap.tree,
        parents: [s.head],
        message: commitMessage({
          summary: `session ${id} final`,
          session: id,
          step: null,
          phase: 'final',
          tool: null,
          head: head.commit,
          environment: settings.environment,
        }),
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
    await commitEvent(ctx, p, state, ev, commit ? [{ ref: headRef(id), value: commit }] : []);
    unmarkRunning(repo, id);
    if (!opts.packInBackground) await maybeMaintain(repo, p, state, true);
    // A server runs it itself, after its reply (no Node process of its own to start: ~0.1 s of CPU a session).
    else if (state.unpacked > 0 && opts.packInBackground === 'deferred')
      setTimeout(() => void maintainEndedSession(repo, id).catch(() => undefined), 0); // packing after the reply, with nobody to tell: objects left loose lose nothing
    else if (state.unpacked > 0) maintainInBackground(repo, id);
    const wholeRun = runStep !== null ? { step: runStep, changed: snap.changed.length } : unrecorded ? ('unchanged' as const) : null;
    return { commit, changed: commit ? snap.changed : [], wholeRun };
  });
}

/** The refusal of `agentsnap end` for a session a live wrapper runs. */
export function stillWrapped(s: Pick<Session, 'id' | 'owner'>): AgentsnapError {
  return errors.busy(`session ${s.id} is run by \`agentsnap wrap\` (process ${s.owner?.pid}): it ends when its command exits.`, {
    hint: 'Exit the agent (or stop it with Ctrl-C in its terminal); its wrapper then ends the session.',
    data: { session: s.id, pid: s.owner?.pid },
  });
}

/**
 * `agentsnap end`: ends a session that no wrapper ends (the one `snap` started, or one whose wrapper was killed):
 * closes its open steps as interrupted, takes the final snapshot, journals session.end. Its snapshots stay. A
 * session a live wrapper runs is refused; one that already ended is left as it is (`ended: false`).
 */
export async function endByUser(ctx: Context, id: string): Promise<{ ended: boolean; commit: string | null; changed: ChangedPath[] }> {
  const s = loadSession(ctx.repo, id);
  if (s.ended || s.discarded) return { ended: false, commit: null, changed: [] };
  if (wrapperRunning(s)) throw stillWrapped(s);
  if (s.worktree !== ctx.repo.worktree) {
    throw errors.invalidArgument(`session ${id} belongs to the worktree ${s.worktree}, not ${ctx.repo.worktree}.`, {
      hint: 'Run `agentsnap end` in that worktree: its final snapshot is taken there.',
      data: { session: id, worktree: s.worktree },
    });
  }
  const end = await endSession(ctx, id, { refuseWrapped: true });
  return { ended: true, commit: end.commit, changed: end.changed };
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
export async function recordTranscript(ctx: Context, id: string, opts: TranscriptOptions): Promise<boolean> {
  return mutate(ctx, id, 'journal the transcript', async (state, p) => {
    const before = state.session.agentTranscript;
    if (before === opts.path) return false;
    // Only the transcript this run named: what an older run's holds since it ended is no run of this session.
    if (before) await importBeforeHeadMoves(ctx, p, state);
    await commitEvent(ctx, p, state, { ...eventBase(id), type: 'session.transcript', path: opts.path }, []);
    return true;
  });
}

/**
 * The session a `snap` should use: the selected one when given or set in the
 * environment, else the running session of this worktree, else a new one
 * (created under the worktree lock, so concurrent calls share one session).
 */
export async function sessionForSnap(
  ctx: Context,
  opts: SelectOptions &
    SnapshotContext & { /** false: never start one (`--phase post` closes a step of a running session). */ start?: boolean },
): Promise<{ id: string; created: SnapshotResult | null }> {
  const { repo, settings } = ctx;
  if (opts.session || repo.callerEnv.AGENTSNAP_SESSION) {
    return { id: (await selectSession(repo, opts)).id, created: null };
  }
  const lockFile = worktreeLockFile(repo);
  return withLock(lockFile, { timeoutMs: settings.lockTimeoutMs, purpose: 'select session' }, async () => {
    const running = (await listSessions(repo)).find((s) => s.worktree === repo.worktree && s.status === 'running');
    if (running) return { id: running.id, created: null };
    if (opts.start === false) {
      throw errors.noSession('no session running in this worktree: there is no step to close.', {
        hint: '`agentsnap snap --phase pre` starts a session and opens the step that `--phase post` closes.',
        data: { worktree: repo.worktree },
      });
    }
    const created = await startSession(ctx, { ...(opts.onProgress ? { onProgress: opts.onProgress } : {}) });
    return { id: created.session, created };
  });
}
