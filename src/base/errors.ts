// base/ (the bottom layer): errors with stable codes, session ids, lock files
// with owners, node:fs with byte names, small fs helpers, shell quoting, the
// package root. Imports nothing of agentsnap above it: no git, no sessions.
//
// Errors are classes with a stable `code` (one of ErrorCode, a closed union)
// and structured `data`, so the CLI can map them to exit codes and `--json`
// output without parsing messages.

import fs from 'node:fs';
import path from 'node:path';

/** Documented process exit codes (docs/reference.md, "Exit codes"). */
export const ExitCode = {
  ok: 0,
  user: 1,
  usage: 2,
  refused: 3,
  conflict: 4,
  busy: 5,
  /** The operation is done, but a dependency command `--sync-deps` ran failed or could not start (issue 33). */
  depsSync: 6,
  internal: 70,
} as const;
export type ExitCodeName = keyof typeof ExitCode;

export interface ErrorDetails {
  /** What to do about it: one short sentence. */
  hint?: string;
  data?: Record<string, unknown>;
  cause?: unknown;
}

/**
 * Every stable error code and its exit-code class: the one list. `ErrorCode`
 * is its keys, so a `catch` that compares `e.code` with a code no error has
 * does not compile.
 */
const ERROR_EXITS = {
  NotARepository: 'user',
  BareRepository: 'user',
  /** A command that needs a real git repository (git hooks, apply/promote, session worktrees) in a shadow repository's directory. */
  NeedsGitRepository: 'user',
  UnsupportedPath: 'user',
  GitMissing: 'user',
  GitTooOld: 'user',
  InvalidSessionId: 'user',
  UnknownSession: 'user',
  AmbiguousSession: 'user',
  NoSession: 'user',
  SessionNotRunning: 'user',
  StepOutOfRange: 'user',
  UnknownOperation: 'user',
  UnknownPath: 'user',
  NoOpenStep: 'user',
  NothingToDo: 'user',
  AmbiguousOpenStep: 'user',
  InvalidArgument: 'usage',
  /** The CLI's own: a command line yargs (or the CLI) cannot parse. */
  Usage: 'usage',
  InvalidConfig: 'user',
  UnreadableFile: 'user',
  SnapshotFailed: 'internal',
  Busy: 'busy',
  Refused: 'refused',
  UnsafeStateFile: 'refused',
  Conflict: 'conflict',
  WorktreeSetupFailed: 'user',
  NoIdentity: 'user',
  GitFailed: 'internal',
  DiskFull: 'user',
  Internal: 'internal',
} as const satisfies Record<string, ExitCodeName>;

export type ErrorCode = keyof typeof ERROR_EXITS;

/** Whether `code` is one of the stable error codes (an error from another bundle or process is checked with it). */
export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(ERROR_EXITS, code);
}

export class AgentsnapError extends Error {
  readonly code: ErrorCode;
  readonly exit: ExitCodeName;
  readonly hint: string | undefined;
  readonly data: Record<string, unknown>;

  constructor(code: ErrorCode, exit: ExitCodeName, message: string, details: ErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'AgentsnapError';
    this.code = code;
    this.exit = exit;
    this.hint = details.hint;
    this.data = details.data ?? {};
  }

  get exitCode(): number {
    return ExitCode[this.exit];
  }

  toJSON(): Record<string, unknown> {
    return { code: this.code, message: this.message, hint: this.hint, data: this.data, exitCode: this.exitCode };
  }
}

const make =
  (code: ErrorCode) =>
  (message: string, details?: ErrorDetails): AgentsnapError =>
    new AgentsnapError(code, ERROR_EXITS[code], message, details);

export const errors = {
  notARepository: make('NotARepository'),
  bareRepository: make('BareRepository'),
  needsGitRepository: make('NeedsGitRepository'),
  unsupportedPath: make('UnsupportedPath'),
  gitMissing: make('GitMissing'),
  gitTooOld: make('GitTooOld'),
  invalidSessionId: make('InvalidSessionId'),
  unknownSession: make('UnknownSession'),
  ambiguousSession: make('AmbiguousSession'),
  noSession: make('NoSession'),
  sessionNotRunning: make('SessionNotRunning'),
  stepOutOfRange: make('StepOutOfRange'),
  unknownOperation: make('UnknownOperation'),
  unknownPath: make('UnknownPath'),
  noOpenStep: make('NoOpenStep'),
  nothingToDo: make('NothingToDo'),
  ambiguousOpenStep: make('AmbiguousOpenStep'),
  invalidArgument: make('InvalidArgument'),
  invalidConfig: make('InvalidConfig'),
  unreadableFile: make('UnreadableFile'),
  snapshotFailed: make('SnapshotFailed'),
  busy: make('Busy'),
  refused: make('Refused'),
  unsafeStateFile: make('UnsafeStateFile'),
  conflict: make('Conflict'),
  worktreeSetupFailed: make('WorktreeSetupFailed'),
  noIdentity: make('NoIdentity'),
  gitFailed: make('GitFailed'),
  diskFull: make('DiskFull'),
  internal: make('Internal'),
};

export function isAgentsnapError(err: unknown): err is AgentsnapError {
  return err instanceof AgentsnapError;
}

/**
 * Runs the body of the public API function `caller`: an AgentsnapError that leaves it names the function in
 * `data.caller` (the innermost one, where one calls another), its code, message and exit as thrown.
 */
export async function asCaller<T>(caller: string, body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (e) {
    if (isAgentsnapError(e) && e.data.caller === undefined) e.data.caller = caller;
    throw e; // passed on, tagged
  }
}

/** What says "the disk is full" whatever else is full: errno names and git's and the kernel's own words. */
const DISK_FULL = /No space left on device|Disk quota exceeded|Out of diskspace|\bENOSPC\b|\bEDQUOT\b/i;
/** git's words for a write that failed without saying why (a ref: "couldn't write '<lock>'"; an index: "unable to write new index file"). */
const WRITE_FAILED =
  /couldn't write|could not write|unable to write|failed to write|short write|write error|fsync error|unable to create temporary file/i;

/** Whether the filesystem holding `dir` has (next to) no space or no inode left for this user. */
function fsFull(dir: string): boolean {
  try {
    const st = fs.statfsSync(dir);
    return st.bavail * st.bsize < 256 * 1024 || (st.files > 0 && st.ffree === 0);
  } catch {
    return false; // cannot tell: not reported as full (the error keeps its own code)
  }
}

/** The directories a failed write was in: those of the absolute paths git quoted ('<path>.lock'), and `dir`. */
function writtenDirs(text: string, dir: string | undefined): string[] {
  const dirs = [...text.matchAll(/'(\/[^']+)'/g)].map((m) => path.dirname(m[1] ?? '/'));
  if (dir === undefined) return dirs;
  // The repository's .git may be another filesystem than the caller's directory: the nearest one above it too.
  for (let d = dir; ; d = path.dirname(d)) {
    if (fs.existsSync(path.join(d, '.git'))) return [...dirs, dir, path.join(d, '.git')];
    if (d === path.dirname(d)) return [...dirs, dir];
  }
}

/** statfs of the nearest existing directory (a ref's directory may not exist yet). */
function fsFullAt(dir: string): boolean {
  for (let d = dir; ; d = path.dirname(d)) {
    if (fs.existsSync(d)) return fsFull(d);
    if (d === path.dirname(d)) return false;
  }
}

function textOf(e: unknown): string {
  const parts: string[] = [];
  for (let at = e, depth = 0; at && depth < 5; at = (at as { cause?: unknown }).cause, depth++) {
    parts.push(at instanceof Error ? at.message : String(at));
    const data = (at as { data?: { stderr?: unknown } }).data;
    if (data?.stderr) parts.push(String(data.stderr));
    const code = (at as NodeJS.ErrnoException).code;
    if (typeof code === 'string') parts.push(code);
  }
  return parts.join('\n');
}

/**
 * A failure because the disk (or the user's quota) is full, from git or from
 * Node, as DiskFull; other errors as they are. git often says only that a
 * write failed: that is a full disk when the filesystem of `dir` (the
 * repository) has no room left.
 */
export function asDiskFull(e: unknown, dir?: string): unknown {
  if (isAgentsnapError(e) && e.code === 'DiskFull') return e;
  const text = textOf(e);
  if (!DISK_FULL.test(text) && !(WRITE_FAILED.test(text) && writtenDirs(text, dir).some(fsFullAt))) return e;
  const where = (isAgentsnapError(e) ? e.message : e instanceof Error ? e.message : String(e)).split('\n')[0] ?? '';
  return errors.diskFull(`the disk is full: ${where.replace(/^snapshot failed: /, '')}`, {
    hint: 'Nothing was recorded and no file was changed. Free some space (then `git gc --prune=now` if git left temporary files) and run the command again.',
    cause: e,
  });
}
