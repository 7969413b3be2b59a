// The locks sessions take and the one order every mutation follows under
// them: objects, journal event (the truth), refs, then state.json. Lock order:
// session lock, then the worktree content lock (held around every snapshot).
import { errors } from '../base/errors.js';
import { appendEvent, type JournalEvent } from './journal.js';
import { acquireLock, withLock } from '../base/lock.js';
import { lockFileIn } from '../base/state-dir.js';
import { applyEvent, type Session } from './model.js';
import { updateRefs, type RefUpdate } from '../git/plumbing.js';
import { serverEnabled, type Settings } from '../git/config.js';
import { snapshotTree } from '../snapshot/snapshot.js';
import type { Repo } from '../git/repo.js';
import { type SessionPaths, sessionPaths, worktreeKey } from './refs.js';
import { type SessionState, stateFrom, writeState, loadState, loadSessionExists } from './state.js';

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

/** snapshotTree under the worktree content lock (the caller holds the session lock). */
export async function lockedSnapshot(repo: Repo, settings: Settings, opts: Parameters<typeof snapshotTree>[1]): ReturnType<typeof snapshotTree> {
  const file = contentLockFile(repo);
  const take = repo.accel?.snapshot ?? ((o: Parameters<typeof snapshotTree>[1]) => snapshotTree(repo, o));
  // With a server to take the next snapshots, a new copy of the user's index is not written back for them.
  const warmCopy = opts.warmCopy ?? !serverEnabled(repo.callerEnv, settings);
  if (repo.accel?.snapshot && repo.accel.snapshotTakesContentLock) return take({ ...opts, untrackedCache: true, warmCopy });
  return withLock(file, { timeoutMs: settings.lockTimeoutMs, purpose: 'snapshot' }, () => take({ ...opts, untrackedCache: true, warmCopy }));
}

/** Runs fn under the session lock with fresh state; refuses sessions that are not running. */
export async function mutate<T>(
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

/** Journal, refs, state: in that order (see the module comment). */
export async function commitEvent(repo: Repo, p: SessionPaths, state: SessionState, ev: JournalEvent, refs: RefUpdate[]): Promise<void> {
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
