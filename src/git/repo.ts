// A Repo says where a repository is: the worktree and git directories, the
// environment, and a git runner bound to them. Nothing here is global, so one
// process can hold several repositories at once. What a command does with it
// (its settings, snapshotter, object writer, ref store) is its context
// (session/context.ts), built once at the command's entry.
import path from 'node:path';
import { isUtf8 } from 'node:buffer';
import { realpathSync, statSync } from 'node:fs';
import { errors, type AgentsnapError } from '../base/errors.js';
import { cleanGitEnv, runGit, type GitOptions, type GitResult } from './run.js';
import { createShadow, findShadow, namedShadow, type Shadow } from './shadow.js';

export const MIN_GIT_VERSION = '2.30.0';

export type ObjectFormat = 'sha1' | 'sha256';

export interface Repo {
  /** Top level of the worktree agentsnap operates on. */
  readonly worktree: string;
  /** This worktree's git dir (differs from commonDir in a linked worktree). */
  readonly gitDir: string;
  /** The repository's common git dir (shared by all linked worktrees). */
  readonly commonDir: string;
  /** `<commonDir>/agentsnap`: journals, private indexes, locks. */
  readonly stateDir: string;
  /** The repository's object format: its ids are 40 hex digits in sha1, 64 in sha256 (see nullOid, emptyTree). */
  readonly objectFormat: ObjectFormat;
  /** Path of the caller's directory relative to the worktree ('' at the top). */
  readonly prefix: string;
  /** Environment for git processes, already cleaned of redirecting variables. */
  readonly env: NodeJS.ProcessEnv;
  /** The environment agentsnap was started with (for AGENTSNAP_* lookups). */
  readonly callerEnv: NodeJS.ProcessEnv;
  /** Set when the directory is in no git repository and agentsnap keeps one for it outside it (git/shadow.ts). */
  readonly shadow?: Shadow | undefined;
  git(args: string[], opts?: Partial<Omit<GitOptions, 'cwd' | 'env'>>): Promise<GitResult>;
}

export interface OpenRepoOptions {
  env?: NodeJS.ProcessEnv;
  /**
   * In a directory that is in no git repository: `find` (the default) opens the shadow repository agentsnap keeps
   * for it or an ancestor, if any; `create` also makes one (the commands that take snapshots: snap, wrap, hooks, init).
   */
  shadow?: 'find' | 'create';
}

function bindGit(worktree: string, gitDir: string, env: NodeJS.ProcessEnv): Repo['git'] {
  // GIT_DIR and GIT_WORK_TREE are set explicitly (after discovery) so later
  // calls neither rediscover nor depend on the caller's directory.
  const bound = { ...env, GIT_DIR: gitDir, GIT_WORK_TREE: worktree };
  return (args, opts = {}) => runGit(args, { cwd: worktree, env: bound, ...opts });
}

/** False only when p is certainly not a directory (missing, or not one); other errors are left to git. */
function existsDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code !== 'ENOENT' && code !== 'ENOTDIR';
  }
}

/** Why git could not open the repository at `cwd` (`named`: the GIT_DIR it was opened through), as the error to throw. */
function openFailure(cwd: string, stderr: string, named: { GIT_DIR: string } | null): AgentsnapError {
  if (/not a git repository/i.test(stderr)) {
    if (named) {
      return errors.notARepository(`GIT_DIR names no git repository: ${named.GIT_DIR} (from ${cwd}).`, {
        hint: 'Set GIT_DIR to the git directory of the repository (relative paths are taken from the current directory), or unset it.',
        data: { cwd, gitDir: named.GIT_DIR },
      });
    }
    return errors.notARepository(`not a git repository, and agentsnap keeps no shadow repository for it yet: ${cwd}`, {
      hint: '`agentsnap snap` or `agentsnap wrap` here records it in a shadow repository kept outside it (or run `git init`). For a repository whose git directory is elsewhere (a bare "dotfiles" repository used with --git-dir and --work-tree), set GIT_DIR and GIT_WORK_TREE as those options say.',
      data: { cwd, shadow: 'none' },
    });
  }
  if (/dubious ownership/i.test(stderr)) {
    return errors.notARepository(`git refuses to use the repository at ${cwd}: it is owned by another user.`, {
      hint: 'Mark it safe with `git config --global --add safe.directory <path>` if you trust it.',
      data: { cwd },
    });
  }
  return errors.gitFailed(`git could not read the repository at ${cwd}: ${stderr.trim()}`, { data: { cwd } });
}

/** AGENTSNAP_SHADOWS=off (or 0): a directory in no git repository is refused, as before shadow repositories. */
function shadowsOff(env: NodeJS.ProcessEnv): boolean {
  const v = env.AGENTSNAP_SHADOWS?.trim().toLowerCase();
  return v === 'off' || v === '0' || v === 'false' || v === 'no';
}

/** The refusal of a `cwd` that names no directory (or one whose name is not UTF-8). */
function noSuchDirectory(cwd: string): AgentsnapError {
  // A directory whose name is not UTF-8 reaches Node as a string with U+FFFD in it (process.cwd() decodes
  // lossily): it names no directory, and spawning git there fails with ENOENT, which is not "git is missing".
  const lossy = cwd.includes('\uFFFD');
  return errors.unsupportedPath(
    lossy ? `the directory's name is not UTF-8 (${cwd}): agentsnap cannot work in it.` : `the directory ${cwd} does not exist.`,
    {
      hint: lossy
        ? 'Rename the directory (or a parent) to a UTF-8 name, or run agentsnap through a symlink whose path is UTF-8.'
        : 'Run agentsnap from an existing directory of a git worktree.',
      data: { cwd },
    },
  );
}

/** Finds the repository containing `cwd`; refuses bare repositories and .git directories. */
export async function openRepo(cwd: string, options: OpenRepoOptions = {}): Promise<Repo> {
  const callerEnv = options.env ?? process.env;
  const env = cleanGitEnv(callerEnv);
  // A directory whose name is not UTF-8 reaches Node as a string with U+FFFD in it (process.cwd() decodes
  // lossily): it names no directory, and spawning git there fails with ENOENT, which is not "git is missing".
  if (!existsDir(cwd)) throw noSuchDirectory(cwd);
  const OPEN = [
    'rev-parse',
    '--is-bare-repository',
    '--is-inside-work-tree',
    '--absolute-git-dir',
    '--git-common-dir',
    '--show-object-format',
    '--show-toplevel',
    '--show-prefix',
  ];
  let res = await runGit(OPEN, { cwd, env, okCodes: [128] });
  // A wrap in a shadow repository's directory names it to its agent (AGENTSNAP_SHADOW): the run's calls go on
  // recording there even after the agent runs `git init` at its top (then `shadow import` carries the session
  // over). A repository below it (one that was there, or one the agent made in a subdirectory) stays its own.
  const pinned =
    callerEnv.AGENTSNAP_SHADOW && !callerEnv.GIT_DIR && !shadowsOff(callerEnv)
      ? namedShadow(callerEnv.AGENTSNAP_SHADOW, cwd, callerEnv)
      : null;
  const useShadowFirst = !!pinned && (res.code !== 0 || res.stdout.toString('utf8').split('\n')[5] === pinned.worktree);
  if (pinned && useShadowFirst)
    res = await runGit(OPEN, { cwd, env: { ...env, GIT_DIR: pinned.gitDir, GIT_WORK_TREE: pinned.worktree }, okCodes: [128] });
  // The "dotfiles" layout: a repository whose git dir is elsewhere ($HOME/.cfg), named by GIT_DIR (with
  // GIT_WORK_TREE or core.worktree). Found by nothing else, so taken from the caller only then: where a
  // .git is found, agentsnap keeps working on it as before.
  const named = callerEnv.GIT_DIR
    ? { GIT_DIR: callerEnv.GIT_DIR, ...(callerEnv.GIT_WORK_TREE ? { GIT_WORK_TREE: callerEnv.GIT_WORK_TREE } : {}) }
    : null;
  const viaGitDir = !!named && res.code !== 0 && /not a git repository/i.test(res.stderr);
  if (viaGitDir) res = await openNamedGitDir(cwd, env, named, OPEN);
  // In no repository at all: the shadow repository kept for this directory (or made for it, by a command that snapshots).
  let shadow: Shadow | null = useShadowFirst ? pinned : null;
  if (!shadow && !named && res.code !== 0 && /not a git repository/i.test(res.stderr) && !shadowsOff(callerEnv)) {
    shadow = findShadow(cwd, callerEnv) ?? (options.shadow === 'create' ? await createShadow(cwd, callerEnv) : null);
    if (shadow) res = await runGit(OPEN, { cwd, env: { ...env, GIT_DIR: shadow.gitDir, GIT_WORK_TREE: shadow.worktree }, okCodes: [128] });
  }
  const lines = res.stdout.toString('utf8').split('\n');
  if (res.code !== 0 && lines.length < 3) throw openFailure(cwd, res.stderr, viaGitDir ? named : null);
  // One value per line: a path holding a newline would shift every value after it (a crafted name could
  // point the state dir at another repository), so such a repository is refused rather than misread.
  if (res.code === 0 && lines.length !== 8) {
    throw errors.unsupportedPath(`the repository's path holds a newline (${JSON.stringify(cwd)}): agentsnap cannot work in it.`, {
      hint: 'Rename the directory so that its path holds no newline.',
      data: { cwd },
    });
  }
  // A path that is not UTF-8 (the worktree reached through a symlink, say) cannot be named to git or the filesystem from a string.
  if (res.code === 0 && !isUtf8(res.stdout)) {
    throw errors.unsupportedPath(`the repository's path is not UTF-8 (${lines[5] ?? cwd}): agentsnap cannot work in it.`, {
      hint: 'Rename the directory (or a parent) to a UTF-8 name.',
      data: { cwd },
    });
  }
  const [bare, inside, gitDirRaw, commonRaw, objectFormatRaw, toplevel, prefix] = lines;
  if (bare === 'true') {
    throw errors.bareRepository(`${gitDirRaw ?? cwd} is a bare repository: there is no worktree to snapshot.`, {
      hint: viaGitDir
        ? 'Name its worktree with GIT_WORK_TREE (core.worktree is not used while core.bare is true: `git --git-dir=<dir> config core.bare false`).'
        : 'Run agentsnap in a worktree (see `git worktree add`).',
      data: { gitDir: gitDirRaw },
    });
  }
  if (viaGitDir && inside !== 'true' && toplevel) {
    throw errors.notARepository(`${cwd} is outside the worktree ${toplevel} of the repository GIT_DIR names (${gitDirRaw}).`, {
      hint: `Run agentsnap from inside ${toplevel}.`,
      data: { cwd, worktree: toplevel, gitDir: gitDirRaw },
    });
  }
  if (inside !== 'true' || !toplevel) {
    throw errors.notARepository(`${cwd} is inside a git directory, not a worktree.`, {
      hint: 'Run agentsnap from the worktree, outside .git.',
      data: { cwd },
    });
  }
  if (objectFormatRaw !== 'sha1' && objectFormatRaw !== 'sha256') {
    throw errors.gitFailed(
      `git names an object format agentsnap does not know (${JSON.stringify(objectFormatRaw)}) for the repository at ${toplevel}.`,
      {
        hint: 'agentsnap works in sha1 and sha256 repositories.',
        data: { objectFormat: objectFormatRaw },
      },
    );
  }
  const gitDir = gitDirRaw ?? '';
  const commonDir = realpathSync(path.resolve(cwd, commonRaw ?? gitDir));
  const worktree = toplevel;
  if (viaGitDir) await refuseGitDirInSnapshots(worktree, gitDir, env);
  return {
    worktree,
    gitDir,
    commonDir,
    stateDir: path.join(commonDir, 'agentsnap'),
    objectFormat: objectFormatRaw,
    prefix: prefix ?? '',
    env,
    callerEnv,
    ...(shadow ? { shadow } : {}),
    git: bindGit(worktree, gitDir, env),
  };
}

/**
 * The shadow repository of a directory that is now in a git repository of its own (`shadow import` reads it): opened
 * by its git dir, with no discovery, which would find the directory's .git instead.
 */
export async function openShadowRepo(shadow: Shadow, options: OpenRepoOptions = {}): Promise<Repo> {
  const callerEnv = options.env ?? process.env;
  const env = cleanGitEnv(callerEnv);
  const res = await runGit(['rev-parse', '--show-object-format'], { cwd: shadow.gitDir, env: { ...env, GIT_DIR: shadow.gitDir } });
  const format = res.stdout.toString('utf8').trim();
  if (format !== 'sha1' && format !== 'sha256')
    throw errors.gitFailed(`the shadow repository ${shadow.dir} names an unknown object format (${format}).`);
  return {
    worktree: shadow.worktree,
    gitDir: shadow.gitDir,
    commonDir: shadow.gitDir,
    stateDir: path.join(shadow.gitDir, 'agentsnap'),
    objectFormat: format,
    prefix: '',
    env,
    callerEnv,
    shadow,
    git: bindGit(shadow.worktree, shadow.gitDir, env),
  };
}

/**
 * Opening through GIT_DIR: git takes the current directory for the worktree when none is named, which would make
 * a snapshot of wherever agentsnap was started; so a worktree must be named (GIT_WORK_TREE or core.worktree).
 */
async function openNamedGitDir(
  cwd: string,
  env: NodeJS.ProcessEnv,
  named: { GIT_DIR: string; GIT_WORK_TREE?: string },
  args: string[],
): Promise<GitResult> {
  const located = { ...env, ...named };
  if (!named.GIT_WORK_TREE) {
    const wt = await runGit(['config', '--get', 'core.worktree'], { cwd, env: located, okCodes: [1, 128] });
    if (wt.code === 1) {
      throw errors.notARepository(
        `GIT_DIR is set (${named.GIT_DIR}) but names no worktree: neither GIT_WORK_TREE nor core.worktree is set.`,
        {
          hint: 'Set GIT_WORK_TREE to the top of the worktree (what `git --work-tree` names), or `git --git-dir=<dir> config core.worktree <path>`.',
          data: { cwd, gitDir: named.GIT_DIR },
        },
      );
    }
  }
  return runGit(args, { cwd, env: located, okCodes: [128] });
}

/**
 * A git dir inside its worktree ($HOME/.cfg in $HOME) is, to git, untracked files like any other: unless it is
 * ignored, a snapshot would record the repository (and agentsnap's state in it) into itself, and a restore
 * could write there. Checked at every opening, as an agent may edit the ignore rules.
 */
async function refuseGitDirInSnapshots(worktree: string, gitDir: string, env: NodeJS.ProcessEnv): Promise<void> {
  const rel = path.relative(worktree, gitDir);
  if (rel === '' || rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) return; // outside the worktree
  const res = await runGit(['check-ignore', '-q', '--', rel.split(path.sep).join('/')], {
    cwd: worktree,
    env: { ...env, GIT_DIR: gitDir, GIT_WORK_TREE: worktree },
    okCodes: [1],
  });
  if (res.code === 0) return;
  throw errors.unsupportedPath(
    `the git directory ${gitDir} is inside its worktree ${worktree} and not ignored: a snapshot would record the repository into itself.`,
    {
      hint: `Ignore it, outside the reach of the worktree's files: \`echo '/${rel.split(path.sep).join('/')}/' >> ${path.join(gitDir, 'info', 'exclude')}\`.`,
      data: { worktree, gitDir },
    },
  );
}

/** Parses `git version 2.39.5` style output into comparable numbers. */
export function parseGitVersion(text: string): [number, number, number] | undefined {
  const m = /git version (\d+)\.(\d+)(?:\.(\d+))?/.exec(text);
  if (!m) return undefined;
  return [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)];
}

export function versionAtLeast(v: [number, number, number], min: string): boolean {
  const m = min.split('.').map(Number);
  for (let i = 0; i < 3; i++) {
    const a = v[i] ?? 0;
    const b = m[i] ?? 0;
    if (a !== b) return a > b;
  }
  return true;
}

/** Throws GitTooOld when the git on PATH is older than MIN_GIT_VERSION. */
export async function checkGitVersion(env: NodeJS.ProcessEnv = cleanGitEnv()): Promise<string> {
  const res = await runGit(['version'], { cwd: process.cwd(), env });
  const text = res.stdout.toString('utf8').trim();
  const v = parseGitVersion(text);
  if (!v) throw errors.gitFailed(`could not understand the git version: ${text}`);
  if (!versionAtLeast(v, MIN_GIT_VERSION)) {
    throw errors.gitTooOld(`git ${v.join('.')} is too old: agentsnap needs git ${MIN_GIT_VERSION} or newer.`, {
      hint: 'Upgrade git, or put a newer git first on PATH.',
      data: { version: v.join('.'), minimum: MIN_GIT_VERSION },
    });
  }
  return v.join('.');
}
