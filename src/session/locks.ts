// The locks sessions take and the one order every mutation follows under
// them: objects, keep refs (so git's prune cannot delete them), journal event
// (the truth), refs, then state.json. Lock order: session lock, then the
// worktree content lock (held around every snapshot).
import fs from 'node:fs';
import { errors } from '../base/errors.js';
import { testPoint } from '../base/test-point.js';
import { appendEvent, takeBackAppend, type JournalAppend, type JournalEvent } from './journal.js';
import { acquireLock } from '../base/lock.js';
import { lockFileIn } from '../base/state-dir.js';
import { applyEvent, type Session } from './model.js';
import { readRefValue, type RefUpdate } from '../git/plumbing.js';
import { serverEnabled } from '../settings/settings.js';
import { isMissingObjectError } from '../git/missing.js';
import type { SnapshotTreeOptions, TreeSnapshotResult } from '../snapshot/snapshot.js';
import type { Context } from './context.js';
import { forgetPrivateIndex } from '../snapshot/snapshotter.js';
import type { Repo } from '../git/repo.js';
import { type SessionPaths, sessionPaths, worktreeKey, keepRef } from './refs.js';
import { type SessionState, stateFrom, writeState, loadState, loadSessionExists, forgetPruned } from './state.js';

export function worktreeLockFile(repo: Repo): string {
  return lockFileIn(repo, `worktree-${worktreeKey(repo)}.lock`);
}

/**
 * The worktree content lock: held around every snapshot and every restore of
 * this worktree (all sessions), so no snapshot reads a half-restored worktree.
 * Distinct from the worktree lock above, which is held while a session starts
 * (and so around its baseline snapshot). Order: session lock, then this one.
 */
export function contentLockFile(repo: Repo): string {
  // Its directory is created here, so every taker (snapshots, restores, apply, the server's warm-up) finds it.
  return lockFileIn(repo, `content-${worktreeKey(repo)}.lock`);
}

/**
 * The session's snapshot through the context's snapshotter (the caller holds the session lock), which reads the
 * worktree under the worktree content lock (underContentLock).
 */
export async function lockedSnapshot(ctx: Context, opts: SnapshotTreeOptions): Promise<TreeSnapshotResult> {
  const { repo, settings } = ctx;
  // With a server to take the next snapshots, a new copy of the user's index is not written back for them.
  const warmCopy = opts.warmCopy ?? !serverEnabled(repo.callerEnv, settings);
  return ctx.snapshotter.snapshot(
    { ...opts, untrackedCache: true, warmCopy },
    { file: contentLockFile(repo), timeoutMs: settings.lockTimeoutMs },
  );
}

/** Runs fn under the session lock with fresh state; refuses sessions that are not running. */
export async function mutate<T>(
  ctx: Context,
  id: string,
  purpose: string,
  fn: (state: SessionState, p: SessionPaths) => Promise<T>,
  requireRunning = true,
  /** Whether fn may run again after a missing object (it writes nothing before its journal line: the snapshot steps). */
  retryPruned = requireRunning,
): Promise<T> {
  const { repo, settings } = ctx;
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
    try {
      return await fn(state, p);
    } catch (e) {
      // An object fn needed was deleted by the user's git (gc/prune) under it, or before it: a snapshot's own
      // objects between their write and their keep ref, or a head the journal names. Once more, from the disk and
      // the snapshots that are still there (fn has journaled nothing: its objects come before its journal line).
      if (!retryPruned || !isMissingObjectError(e)) throw e;
      forgetPrivateIndex(p.index);
      const again = await loadState(repo, id);
      await forgetPruned(repo, again);
      return await fn(again, p);
    }
  } finally {
    lock.release();
  }
}

/**
 * Keep refs, journal, refs, state: in that order (see the module comment). A
 * failure before the journal line leaves no step; a failure of the ref update
 * takes the line back (a full disk: no step, journal unchanged). Either way the
 * keep refs are put back: a failed step adds and moves no ref.
 */
export async function commitEvent(ctx: Context, p: SessionPaths, state: SessionState, ev: JournalEvent, refs: RefUpdate[]): Promise<void> {
  const { repo } = ctx;
  const kept = await keepObjects(ctx, state.session.id, refs);
  let appended: JournalAppend;
  try {
    testPoint('commit-event.before-journal', repo.callerEnv, repo.worktree);
    appended = appendEvent(p.journal, ev);
  } catch (e) {
    await putBackKeepRefs(ctx, kept);
    throw e;
  }
  try {
    testPoint('commit-event.before-refs', repo.callerEnv, repo.worktree);
    await ctx.refs.update(refs);
  } catch (e) {
    takeBackAppend(p.journal, appended);
    await putBackKeepRefs(ctx, kept);
    throw e;
  }
  // Fold the cached state forward: re-reading the whole journal would make each step cost O(steps).
  const s: Session = { ...state.session, steps: [...state.session.open], extraEvents: [] };
  applyEvent(s, ev);
  const next = stateFrom(s, appended.end, state, true);
  next.unpacked = state.unpacked + 1;
  try {
    writeState(p.state, next);
  } catch {
    // The step is recorded (journal and refs); state.json is a cache, rebuilt from the journal when it is gone.
    fs.rmSync(p.state, { force: true });
  }
  Object.assign(state, next);
}

/**
 * Points the session's keep refs at the objects refs are about to name, before
 * the journal line names them: from then on git's prune keeps them. Returns the
 * updates that put them back as they were, for a step that fails after this
 * (putBackKeepRefs). They stay between steps: deleting them with the step refs
 * would take git's packed-refs lock at every step (a ref deletion does), which
 * concurrent sessions and the user's own git then wait on. The point
 * `commit-event.before-keep` is where a test lets a prune land.
 */
export async function keepObjects(ctx: Context, session: string, refs: RefUpdate[]): Promise<RefUpdate[]> {
  testPoint('commit-event.before-keep', ctx.repo.callerEnv, ctx.repo.worktree);
  const values = [...new Set(refs.map((r) => r.value).filter((v): v is string => !!v))];
  const keeps = values.map((value, i) => ({ ref: keepRef(session, i), value }));
  const before = await Promise.all(keeps.map(async (k) => ({ ref: k.ref, value: await readRefValue(ctx.repo, k.ref) })));
  await ctx.refs.update(keeps);
  return before;
}

/** Puts the keep refs of a step that failed back; under the failure the caller rethrows, which is the one reported. */
export async function putBackKeepRefs(ctx: Context, kept: RefUpdate[]): Promise<void> {
  await ctx.refs.update(kept).catch(() => undefined); // best effort: a full disk can refuse the old values too
}
