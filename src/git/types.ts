// Data shapes shared by every layer above git/: what a snapshot takes and
// gives, the settings it reads, a commit and a ref update. They live here, at
// the bottom, so that Repo (its accelerators take and give these) needs no
// import from a layer above it; the modules that own each concern re-export
// them (journal: SkippedFile, ChangedPath; config: Settings, GitConfig;
// plumbing: CommitSpec, RefUpdate; snapshot: the snapshot options and results).

/** A file left out of a snapshot, and why. */
export interface SkippedFile {
  path: string;
  /**
   * unreadable: a directory git could not list or a tracked path it could not lstat (permissions, I/O);
   * path-too-long: a directory below which paths exceed PATH_MAX (git names the last one it could reach).
   * Neither is ever deleted or overwritten by a restore.
   */
  reason: 'secret' | 'too-large' | 'excluded' | 'nested-repo-without-commit' | 'unreadable' | 'path-too-long' | 'gitmodules-symlink';
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

export interface Settings {
  /** Extra picomatch globs for untracked files to leave out. */
  exclude: string[];
  /** Untracked files larger than this (bytes) are left out; 0 means no cap. */
  maxFileSize: number;
  excludeSecrets: boolean;
  lockTimeoutMs: number;
  /** git's own settings that change how content enters git (see snapshot: exact bytes). */
  autocrlf: string | null;
  /** The `filter.<driver>.*` drivers configured, names as written (git matches them by case); snapshots switch them off. */
  filterDrivers: string[];
  attributesFile: string | null;
  /** Tool inputs and outputs are journaled up to this many characters (agentsnap.outputLimit). */
  outputLimit: number;
  /** Extra regular expressions whose matches are redacted before journaling (agentsnap.redactPattern, multi-valued). */
  redactPatterns: RegExp[];
  /** `wrap --auto`: milliseconds the worktree must stay quiet after a change before a checkpoint (agentsnap.autoQuiet). */
  autoQuietMs: number;
  /** `wrap --auto`: milliseconds between checks for changes the file watcher missed; 0 = none (agentsnap.autoPoll). */
  autoPollMs: number;
  /** Whether a warm server may answer hooks and `snap` (agentsnap.server; env AGENTSNAP_SERVER wins). */
  server: boolean;
  /** A background server exits after this many milliseconds without a call (agentsnap.serverIdle). */
  serverIdleMs: number;
  /** Whether a `wrap` whose worktree had no background server leaves one running for the next session (agentsnap.serverAfterWrap; env AGENTSNAP_SERVER_AFTER_WRAP wins). */
  serverAfterWrap: boolean;
  /** The effective git config these settings were read from (snapshotTree's in-process path checks it). */
  gitConfig?: GitConfig;
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

export interface TreeSnapshot {
  tree: string;
  skipped: SkippedFile[];
}

export interface SnapshotOptions {
  /** The private index file; created from the worktree's own index when missing. */
  indexFile: string;
  settings: Settings;
  /** Called with a short description of slow phases (for a progress indicator). */
  onProgress?: (phase: string) => void;
}

export interface SnapshotTreeOptions extends SnapshotOptions {
  /** Tree of the session's previous snapshot, to report what changed since (null for a baseline). */
  parentTree: string | null;
  /**
   * A long-lived index (a session's private one): list untracked files
   * through git's untracked cache where that is exact, and keep what the
   * next snapshot can reuse next to the index (userIndexVsTree,
   * noAttributesMarker). Throwaway indexes leave this off.
   */
  untrackedCache?: boolean;
  /**
   * Whether a new copy of the user's index (the in-process path) is written
   * back with git's untracked cache and refreshed stat data (~0.1 s at 100k
   * files), which only a later Node-path snapshot of this index uses. Off
   * where a server will take the next snapshots (default on).
   */
  warmCopy?: boolean;
  /**
   * Private indexes of this worktree's earlier sessions, newest first: a new
   * index starts as a copy of the first that is still an unwritten copy of
   * the user's index as it is now (with git's untracked cache), instead of a
   * fresh copy of the user's index (see adoptDonor in snapshot.ts). A function: listed only when a new index is
   * seeded (the session's baseline; a snapshotter that keeps no private index never lists them).
   */
  donors?: readonly string[] | (() => readonly string[]);
  /** Dirty paths above which the in-process path leaves the snapshot to git (tests; default MAX_IN_PROCESS_PATHS). */
  maxInProcessPaths?: number;
}

export interface TreeSnapshotResult extends TreeSnapshot {
  /** Whether the private index was created by this call. */
  seeded: boolean;
  /** The earlier session's index this new one was copied from (see SnapshotTreeOptions.donors). */
  adopted?: string;
  /** Why the in-process path (inProcessSnapshot) was tried and not taken (tests, debugging). */
  declined?: string;
  /** Changes against parentTree. */
  changed: ChangedPath[];
}
