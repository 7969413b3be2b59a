// How agentsnap writes its commit objects and moves its refs: two interfaces
// the layers above receive in their context (session/context.ts), built once
// per command or per served call. The plain implementations run one git
// process each (the plumbing); the warm server's write commits in-process and
// keep one `git update-ref --stdin` open. All of them live here, below the
// code that calls them, so a call's path at run time only goes down.
import { commitTree, updateRefs, type CommitSpec, type RefUpdate } from './plumbing.js';
import { encodeCommit, objectStore } from './objects.js';
import { RefUpdater } from './ref-updater.js';
import type { Repo } from './repo.js';
import type { GitConfig } from './types.js';

/** Writes agentsnap's commits (the same object `git commit-tree` writes). */
export interface ObjectWriter {
  commitTree(spec: CommitSpec): Promise<string>;
}

/** Moves refs in one all-or-nothing transaction. */
export interface RefStore {
  update(updates: RefUpdate[]): Promise<void>;
}

/** `git commit-tree`, one process a commit. */
export function gitObjectWriter(repo: Repo): ObjectWriter {
  return { commitTree: (spec) => commitTree(repo, spec) };
}

/** `git update-ref --stdin`, one process a transaction (stale ref locks of a killed git recovered). */
export function gitRefStore(repo: Repo): RefStore {
  return { update: (updates) => updateRefs(repo, updates) };
}

/** git's offset notation for the local time zone now: +0100, -0530. */
function tzOffset(d: Date): string {
  const m = -d.getTimezoneOffset();
  const a = Math.abs(m);
  return `${m < 0 ? '-' : '+'}${String(Math.floor(a / 60)).padStart(2, '0')}${String(a % 60).padStart(2, '0')}`;
}

/**
 * Commits written in-process, as `git commit-tree` writes them; the plain writer where objectStore says git would
 * write differently. `cfg`: the effective git config when the caller has just read it.
 */
export function inProcessObjectWriter(repo: Repo, cfg?: GitConfig): ObjectWriter {
  const store = objectStore(repo, cfg);
  if (!store) return gitObjectWriter(repo);
  return {
    commitTree: async (spec) => {
      const now = new Date();
      const sig = { time: Math.floor(now.getTime() / 1000), tz: tzOffset(now) };
      return store.write(
        'commit',
        encodeCommit({ tree: spec.tree, parents: spec.parents, author: sig, committer: sig, message: spec.message }),
      );
    },
  };
}

/**
 * One long-lived `git update-ref --stdin` (a pipe round trip a transaction instead of a process start); a transaction
 * it fails goes through the one-shot path, which reports the failure or recovers a stale lock.
 */
export class LongLivedRefStore implements RefStore {
  private readonly updater: RefUpdater;

  constructor(private readonly repo: Repo) {
    this.updater = new RefUpdater(repo.worktree, { ...repo.env, GIT_DIR: repo.gitDir, GIT_WORK_TREE: repo.worktree });
  }

  async update(updates: RefUpdate[]): Promise<void> {
    if (updates.length === 0) return;
    try {
      return await this.updater.update(updates);
    } catch {
      // The one-shot path below reports the failure, or recovers a stale lock.
    }
    return updateRefs(this.repo, updates);
  }

  close(): void {
    this.updater.close();
  }
}
