// Data shapes git/ shares with every layer above it: a file a snapshot left
// out and a changed path (which git's diff gives), git's config as a map, a
// commit and a ref update. The modules that own each concern re-export them
// (journal: SkippedFile, ChangedPath; config: GitConfig; plumbing: CommitSpec,
// RefUpdate).

/** A file left out of a snapshot, and why. */
export interface SkippedFile {
  path: string;
  /**
   * unreadable: a directory git could not list or a tracked path it could not lstat (permissions, I/O);
   * path-too-long: a directory below which paths exceed PATH_MAX (git names the last one it could reach).
   * Neither is ever deleted or overwritten by a restore.
   */
  reason:
    | 'secret'
    | 'too-large'
    | 'excluded'
    | 'nested-repo-without-commit'
    | 'nested-repo-other-format'
    | 'unreadable'
    | 'path-too-long'
    | 'gitmodules-symlink';
  size?: number;
}

/** One changed path between two snapshots. `added`/`deleted` are line counts (null for binary). */
export interface ChangedPath {
  path: string;
  /** A added, M modified, D deleted, T type changed (file/symlink/gitlink). */
  change: 'A' | 'M' | 'D' | 'T';
  added: number | null;
  deleted: number | null;
}

export type GitConfig = Map<string, string[]>;

export interface CommitSpec {
  tree: string;
  parents: string[];
  message: string;
}

export interface RefUpdate {
  ref: string;
  /** New value; null deletes the ref. */
  value: string | null;
}
