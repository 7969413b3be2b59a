// Public API of shadow repositories (issue 33): where agentsnap keeps the snapshots of a directory that is in no git
// repository, making one on request (`--force`: also a home directory or `/`), and carrying its sessions into the
// repository `git init` made there later.
import path from 'node:path';
import { errors, isAgentsnapError } from '../base/errors.js';
import { openRepo } from '../git/repo.js';
import { createShadow, excludePatterns, leftBehindHint, setAsideShadows, shadowLeftBehind } from '../git/shadow.js';
import { importShadow, type ShadowImportResult } from '../session/shadow-import.js';
import type { RepoOptions } from './api.js';

export type { ShadowImportResult } from '../session/shadow-import.js';

export interface ShadowReport {
  /** The directory the snapshots are of. */
  worktree: string;
  /** The shadow repository's directory (null: the directory is in a git repository). */
  shadow: string | null;
  /** Its git dir (GIT_DIR for `git config agentsnap.exclude …`). */
  gitDir: string | null;
  /** What its snapshots leave out besides the directory's .gitignore files and agentsnap.exclude: its info/exclude. */
  excludes: string[];
  /** In a git repository: a shadow repository kept from before `git init` (for its top: `shadow import` carries it over). */
  leftBehind: string | null;
  /** What to do about it. */
  leftBehindHint: string | null;
  /** Shadows kept for directories that were at this path before, set aside (`gc --all` removes them). */
  setAside: string[];
}

/** `agentsnap shadow`: whether this directory's snapshots are kept in a shadow repository, where, and what they leave out. */
export async function shadowShow(opts: RepoOptions = {}): Promise<ShadowReport> {
  const repo = await openRepo(opts.cwd ?? process.cwd(), opts.env ? { env: opts.env } : {});
  if (!repo.shadow) {
    const left = shadowLeftBehind(repo);
    return {
      worktree: repo.worktree,
      shadow: null,
      gitDir: null,
      excludes: [],
      leftBehind: left?.shadow.dir ?? null,
      leftBehindHint: left ? leftBehindHint(left, repo.worktree) : null,
      setAside: [],
    };
  }
  return {
    worktree: repo.worktree,
    shadow: repo.shadow.dir,
    gitDir: repo.shadow.gitDir,
    excludes: excludePatterns(path.join(repo.shadow.gitDir, 'info', 'exclude')),
    leftBehind: null,
    leftBehindHint: null,
    setAside: setAsideShadows(repo.worktree, repo.callerEnv),
  };
}

/** `agentsnap shadow create [--force]`: the shadow repository of this directory, made now (`--force`: even for a home directory or `/`). */
export async function shadowCreate(opts: RepoOptions & { force?: boolean } = {}): Promise<ShadowReport> {
  const cwd = opts.cwd ?? process.cwd();
  const env = opts.env ?? process.env;
  let inRepo: string | null = null;
  try {
    const repo = await openRepo(cwd, { env });
    if (!repo.shadow) inRepo = repo.worktree;
  } catch (e) {
    if (!(isAgentsnapError(e) && e.code === 'NotARepository' && e.data.shadow === 'none')) throw e; // in no repository, with no shadow yet: made below
  }
  if (inRepo !== null) {
    throw errors.nothingToDo(
      `${cwd} is in the git repository ${inRepo}: agentsnap keeps its snapshots there, not in a shadow repository.`,
      {
        data: { worktree: inRepo },
      },
    );
  }
  await createShadow(cwd, env, { force: !!opts.force });
  return shadowShow({ cwd, env });
}

/** `agentsnap shadow import`: carries the sessions of the shadow repository kept before `git init` into this repository. */
export async function shadowImport(opts: RepoOptions & { dryRun?: boolean } = {}): Promise<ShadowImportResult> {
  const repo = await openRepo(opts.cwd ?? process.cwd(), opts.env ? { env: opts.env } : {});
  return importShadow(repo, { dryRun: !!opts.dryRun });
}
