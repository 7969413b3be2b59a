// How a session's snapshot is taken: one interface the session layer receives
// in its context (session/context.ts), built once per command or per served
// call. Every implementation gives what snapshotTree gives for the same
// worktree (tree, skipped files, changes against the parent); they differ in
// what they look at: a full scan through the session's private index, or the
// warm server's incremental engine (what its watcher saw). The wrapper's
// snapshot asked of a background server over its channel is server/'s, which
// the wrapper passes in the same way.
import fs from 'node:fs';
import path from 'node:path';
import { acquireLock } from '../base/lock.js';
import { isMissingObjectError } from '../git/missing.js';
import type { Repo } from '../git/repo.js';
import type { IncrementalSnapshotter } from './incremental.js';
import { snapshotTree, type SnapshotTreeOptions, type TreeSnapshotResult } from './snapshot.js';

/** The worktree content lock a session's snapshot is taken under: its file (session/locks.ts), and how long to wait. */
export interface ContentLock {
  file: string;
  timeoutMs: number;
}

export interface Snapshotter {
  /**
   * The worktree as a tree. What this process reads of the worktree, it reads holding `lock` (underContentLock); a
   * snapshot another process takes under that lock itself (the background server's) is only asked for.
   */
  snapshot(opts: SnapshotTreeOptions, lock: ContentLock): Promise<TreeSnapshotResult>;
}

/**
 * Runs `take` holding the worktree content lock; once more from the disk alone when the private index (or its side
 * caches) named objects git's prune deleted.
 */
export async function underContentLock<T>(lock: ContentLock, indexFile: string, take: () => Promise<T>): Promise<T> {
  // acquire and release rather than withLock: the lock holds this function's own code, no callback of a caller.
  const held = await acquireLock(lock.file, { timeoutMs: lock.timeoutMs, purpose: 'snapshot' });
  try {
    try {
      return await take();
    } catch (e) {
      if (!isMissingObjectError(e)) throw e;
      forgetPrivateIndex(indexFile);
      return await take();
    }
  } finally {
    held.release();
  }
}

/** Removes a private index and every cache beside it (`index.user-copy`, `index.no-attributes`, …; not git's lock). */
export function forgetPrivateIndex(indexFile: string | undefined): void {
  if (!indexFile) return;
  const dir = path.dirname(indexFile);
  const base = path.basename(indexFile);
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e; // no state directory yet: no private index to forget
    return;
  }
  for (const n of names)
    if (n === base || (n.startsWith(`${base}.`) && n !== `${base}.lock`)) fs.rmSync(path.join(dir, n), { force: true });
}

/** A full scan through the session's private index (snapshotTree). */
export function scanSnapshotter(repo: Repo): Snapshotter {
  return { snapshot: (o, lock) => underContentLock(lock, o.indexFile, () => snapshotTree(repo, o)) };
}

/**
 * The incremental engine's snapshot (what its watcher saw since the last one). With `fallback`, a snapshot the
 * engine fails is taken by a full scan of that repository (a wrapper's final snapshot through its hosted server).
 */
export function engineSnapshotter(engine: IncrementalSnapshotter, fallback?: Repo): Snapshotter {
  return {
    snapshot: (o, lock) =>
      underContentLock(lock, o.indexFile, () => {
        const taken = engine.snapshot({ settings: o.settings, parentTree: o.parentTree });
        return fallback ? taken.catch(() => snapshotTree(fallback, o)) : taken; // the engine failed: a full scan takes this one
      }),
  };
}

/** Where a long-running host (the warm server) keeps its engine: null until it is up, or when it is off. */
export interface EngineSlot {
  engine: IncrementalSnapshotter | null;
}

/**
 * The snapshotter of a call a long-running host serves: its engine's snapshot when the engine is up at the moment
 * of the snapshot, else a full scan of the call's repository.
 */
export function hostSnapshotter(slot: EngineSlot, repo: Repo): Snapshotter {
  return {
    snapshot: (o, lock) => {
      const engine = slot.engine;
      return underContentLock(lock, o.indexFile, () =>
        engine ? engine.snapshot({ settings: o.settings, parentTree: o.parentTree }) : snapshotTree(repo, o),
      );
    },
  };
}
