// `agentsnap apply --undo`: the last apply into this worktree taken back. The
// paths the apply wrote or deleted go back to its safety snapshot, but only
// where the disk still holds what the apply left there: a path written since
// is refused (nothing written), or left as it is with force. The worktree as
// it was before the undo is kept under a safety ref of its own.
import path from 'node:path';
import { errors } from '../base/errors.js';
import { newSessionId } from '../base/ids.js';
import type { Repo } from '../git/repo.js';
import { loadSettings, type Settings } from '../settings/settings.js';
import { withLock } from '../base/lock.js';
import { commitTree, readHead, treeOf, updateRefs } from '../git/plumbing.js';
import { eventBase, readJournal, type SessionApplyEvent, type SessionApplyUndoEvent } from '../session/journal.js';
import { commitMessage, contentLockFile, sessionIds, sessionPaths } from '../session/session.js';
import { planChanges, prepareRestore, writeRestore, keptCommit, releaseKept, type LeftPath } from '../restore/restore.js';
import { snapshotNow } from '../snapshot/snapshot-now.js';
import { clearStaleSafetyRefLocks, recordEvent, SAFETY_REF_PREFIX } from './parallel.js';
import { diffStat, type FileStat } from './diffstat.js';

export const APPLY_UNDO_EVENT: SessionApplyUndoEvent['type'] = 'session.apply.undo';

export interface UndoApplyOptions {
  /** Only an apply of this session. */
  session?: string | undefined;
  /** Undo the other paths when some were changed since the apply (those stay as they are). */
  force?: boolean;
  settings?: Settings;
}

export interface UndoApplyResult {
  session: string;
  /** The apply taken back: its safety ref and time. */
  safetyRef: string;
  appliedAt: string;
  written: string[];
  deleted: string[];
  /** Paths changed since the apply: left as they are (only with force). */
  left: LeftPath[];
  /** This worktree just before the undo. */
  before: string;
  beforeRef: string;
  stat: FileStat[];
}

interface FoundApply {
  session: string;
  ev: SessionApplyEvent;
  undone: boolean;
}

/** The latest apply into this worktree (of one session, or of any), and whether it was undone. */
function lastApply(repo: Repo, only: string | undefined): FoundApply | null {
  let best: FoundApply | null = null;
  for (const id of only ? [only] : sessionIds(repo)) {
    const events = readJournal(sessionPaths(repo, id).journal).events;
    const undone = new Set(events.flatMap((e) => (e.type === APPLY_UNDO_EVENT ? [e.safetyRef] : [])));
    for (const ev of events) {
      if (ev.type !== 'session.apply') continue;
      if (path.resolve(ev.target) !== path.resolve(repo.worktree)) continue;
      if (!best || ev.time > best.ev.time) best = { session: id, ev, undone: undone.has(ev.safetyRef) };
    }
  }
  return best;
}

export async function undoApply(repo: Repo, opts: UndoApplyOptions = {}): Promise<UndoApplyResult> {
  const found = lastApply(repo, opts.session);
  if (!found) {
    throw errors.nothingToDo(
      `no apply into this worktree (${repo.worktree}) to undo${opts.session ? ` from session ${opts.session}` : ''}.`,
      {
        data: { worktree: repo.worktree },
      },
    );
  }
  const { session: id, ev } = found;
  if (found.undone) {
    throw errors.nothingToDo(`the last apply into this worktree (session ${id}, ${ev.time}) is already undone.`, {
      hint: `Its safety snapshot stays: ${ev.safetyRef}.`,
      data: { session: id, safetyRef: ev.safetyRef },
    });
  }
  const settings = opts.settings ?? (await loadSettings(repo));
  const safetyTree = await treeOf(repo, ev.safety);
  const paths = [...ev.written, ...ev.deleted];
  const lockFile = contentLockFile(repo);
  const done = await withLock(lockFile, { timeoutMs: settings.lockTimeoutMs, purpose: 'apply --undo' }, async () => {
    // From what the apply left (its result) back to the safety snapshot, on the paths it changed:
    // prepareRestore replaces a path only where the disk still holds the apply's version.
    const plan = paths.length > 0 ? await planChanges(repo, ev.result, safetyTree, paths) : [];
    const prepared = await prepareRestore(repo, plan, { ifNotExpected: 'leave', target: { tree: safetyTree, snapshot: ev.safety } });
    const changedSince = prepared.left.filter((l) => !prepared.nested.includes(l.path));
    if (changedSince.length > 0 && !opts.force) {
      const list = changedSince
        .slice(0, 10)
        .map((l) => l.path)
        .join(', ');
      throw errors.refused(
        `${changedSince.length} path(s) changed since the apply of session ${id}: ${list}${changedSince.length > 10 ? ', …' : ''}.`,
        {
          hint: 'Nothing was changed. Undo the rest and leave those as they are with --force.',
          data: { session: id, paths: changedSince },
        },
      );
    }
    // The worktree as it is now, kept like apply's own safety snapshot (gc keeps it while the session stays).
    const now = (await snapshotNow(repo, settings, 'safety')).tree;
    const head = await readHead(repo);
    const message = commitMessage({
      summary: `before undoing the apply of session ${id} to ${repo.worktree}`,
      session: id,
      step: null,
      phase: 'safety',
      kind: 'safety',
      tool: null,
      head: head.commit,
    });
    const before = await commitTree(repo, { tree: now, parents: [], message });
    const beforeRef = `${SAFETY_REF_PREFIX}${newSessionId()}`;
    await clearStaleSafetyRefLocks(repo);
    await updateRefs(repo, [{ ref: beforeRef, value: before }]);
    const restored = writeRestore(repo, prepared);
    const kept = await keptCommit(
      repo,
      restored.kept,
      commitMessage({
        summary: `versions kept while undoing the apply of session ${id}`,
        session: id,
        step: null,
        phase: 'safety',
        kind: 'kept',
        tool: null,
        head: head.commit,
      }),
    );
    let beforeNow = before;
    if (kept) {
      beforeNow = await commitTree(repo, { tree: now, parents: [before, kept], message });
      await updateRefs(repo, [{ ref: beforeRef, value: beforeNow }]);
    }
    releaseKept(restored);
    const written = restored.applied.filter((c) => c.to !== null).map((c) => c.path);
    const deleted = restored.applied.filter((c) => c.to === null).map((c) => c.path);
    const left = restored.left.filter((l) => !restored.nested.includes(l.path));
    const stat = await diffStat(repo, ev.result, safetyTree, [...written, ...deleted]);
    return { session: id, safetyRef: ev.safetyRef, appliedAt: ev.time, written, deleted, left, before: beforeNow, beforeRef, stat };
  });
  const undoEv: SessionApplyUndoEvent = {
    ...eventBase(id),
    type: APPLY_UNDO_EVENT,
    target: repo.worktree,
    safetyRef: ev.safetyRef,
    before: done.before,
    beforeRef: done.beforeRef,
    written: done.written,
    deleted: done.deleted,
    ...(done.left.length > 0 ? { left: done.left } : {}),
  };
  await recordEvent(repo, id, settings, undoEv);
  return done;
}
