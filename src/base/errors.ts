// base/ (the bottom layer): errors with stable codes, session ids, lock files
// with owners, node:fs with byte names, small fs helpers, shell quoting, the
// package root. Imports nothing of agentsnap above it: no git, no sessions.
//
// Errors are classes with a stable string `code` and structured `data`, so the
// CLI can map them to exit codes and `--json` output without parsing messages.

/** Documented process exit codes (docs/reference.md, "Exit codes"). */
export const ExitCode = {
  ok: 0,
  user: 1,
  usage: 2,
  refused: 3,
  conflict: 4,
  busy: 5,
  internal: 70,
} as const;
export type ExitCodeName = keyof typeof ExitCode;

export interface ErrorDetails {
  /** What to do about it: one short sentence. */
  hint?: string;
  data?: Record<string, unknown>;
  cause?: unknown;
}

export class AgentsnapError extends Error {
  readonly code: string;
  readonly exit: ExitCodeName;
  readonly hint: string | undefined;
  readonly data: Record<string, unknown>;

  constructor(code: string, exit: ExitCodeName, message: string, details: ErrorDetails = {}) {
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
  (code: string, exit: ExitCodeName) =>
  (message: string, details?: ErrorDetails): AgentsnapError =>
    new AgentsnapError(code, exit, message, details);

export const errors = {
  notARepository: make('NotARepository', 'user'),
  bareRepository: make('BareRepository', 'user'),
  unsupportedPath: make('UnsupportedPath', 'user'),
  gitMissing: make('GitMissing', 'user'),
  gitTooOld: make('GitTooOld', 'user'),
  invalidSessionId: make('InvalidSessionId', 'user'),
  unknownSession: make('UnknownSession', 'user'),
  ambiguousSession: make('AmbiguousSession', 'user'),
  noSession: make('NoSession', 'user'),
  sessionNotRunning: make('SessionNotRunning', 'user'),
  stepOutOfRange: make('StepOutOfRange', 'user'),
  unknownPath: make('UnknownPath', 'user'),
  noOpenStep: make('NoOpenStep', 'user'),
  nothingToDo: make('NothingToDo', 'user'),
  ambiguousOpenStep: make('AmbiguousOpenStep', 'user'),
  invalidArgument: make('InvalidArgument', 'usage'),
  invalidConfig: make('InvalidConfig', 'user'),
  unreadableFile: make('UnreadableFile', 'user'),
  snapshotFailed: make('SnapshotFailed', 'internal'),
  busy: make('Busy', 'busy'),
  refused: make('Refused', 'refused'),
  unsafeStateFile: make('UnsafeStateFile', 'refused'),
  conflict: make('Conflict', 'conflict'),
  worktreeSetupFailed: make('WorktreeSetupFailed', 'user'),
  noIdentity: make('NoIdentity', 'user'),
  gitFailed: make('GitFailed', 'internal'),
  diskFull: make('DiskFull', 'user'),
  internal: make('Internal', 'internal'),
};

export function isAgentsnapError(err: unknown): err is AgentsnapError {
  return err instanceof AgentsnapError;
}

/** A failure because the disk (or the user's quota) is full, from git or from Node, as DiskFull; other errors as they are. */
export function asDiskFull(e: unknown): unknown {
  const code = (e as NodeJS.ErrnoException | null)?.code;
  const text = isAgentsnapError(e) ? `${e.message}\n${String(e.data.stderr ?? '')}` : e instanceof Error ? e.message : '';
  if (code !== 'ENOSPC' && code !== 'EDQUOT' && !/No space left on device|Disk quota exceeded/i.test(text)) return e;
  const where = isAgentsnapError(e) ? e.message : e instanceof Error ? e.message : String(e);
  return errors.diskFull(`the disk is full: ${where.replace(/^snapshot failed: /, '')}`, {
    hint: 'Free some space and run the command again. Nothing was half-written: a snapshot that fails records no step.',
    cause: e,
  });
}
