// Shadow repositories (issue 33): agentsnap in a directory that is not in any git repository. The directory gets
// a git dir of its own kept outside it, under `$XDG_STATE_HOME/agentsnap/shadows/<name>-<hash of its real path>/`
// (`git/`, and `origin.json`: the directory's real path and inode), and is opened through it as the "dotfiles"
// layout is (GIT_DIR + GIT_WORK_TREE): everything else in agentsnap works on it unchanged. Nothing is written into
// the directory itself.
//
// Why each check:
//   - The key is the real path, and origin.json's inode must match: a directory removed and made again at the same
//     path (or another one moved there) is not the one the shadow recorded, so it is not used for it.
//   - Git trusts a GIT_DIR it is given (safe.directory is checked only when it discovers one), and a git dir's
//     config can name programs git runs (core.fsmonitor, hooks): every directory from `agentsnap/` down must be the
//     user's own, not a link, and writable by nobody else, or no shadow is found (and none is created there).
//   - A home directory or `/` is a million unrelated files: a shadow is made there only when asked with --force.
import fs from 'node:fs';
import path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { errors } from '../base/errors.js';
import { cleanGitEnv, runGit } from './run.js';

/** A shadow repository: where its git dir is, and the directory it records. */
export interface Shadow {
  /** `<shadows>/<key>`: removed whole by `gc --all`. */
  readonly dir: string;
  /** `<dir>/git`: the git dir (GIT_DIR). */
  readonly gitDir: string;
  /** The directory it records (GIT_WORK_TREE): a real path. */
  readonly worktree: string;
}

interface Origin {
  path: string;
  ino: number;
  created: string;
}

/**
 * What a shadow leaves out besides the directory's own .gitignore files (written to its info/exclude, so a user
 * can edit them there): dependencies, virtual environments, caches and build outputs, which are reinstalled or
 * rebuilt rather than restored.
 */
export const SHADOW_DEFAULT_EXCLUDES = [
  'node_modules/',
  '.venv/',
  'venv/',
  '__pycache__/',
  '*.pyc',
  '.mypy_cache/',
  '.pytest_cache/',
  '.tox/',
  '.gradle/',
  '.next/',
  '.nuxt/',
  '.cache/',
  'target/',
  'dist/',
  'build/',
  '.DS_Store',
];

/** `$XDG_STATE_HOME/agentsnap/shadows` (an absolute XDG_STATE_HOME), else `$HOME/.local/state/agentsnap/shadows`; null without a home. */
export function shadowsRoot(env: NodeJS.ProcessEnv): string | null {
  const xdg = env.XDG_STATE_HOME;
  if (xdg && path.isAbsolute(xdg)) return path.join(xdg, 'agentsnap', 'shadows');
  const home = env.HOME;
  if (home && path.isAbsolute(home)) return path.join(home, '.local', 'state', 'agentsnap', 'shadows');
  return null;
}

/** `<last component, made safe>-<20 hex digits of sha256(real path)>`: readable in a listing, unique by path. */
export function shadowKey(realDir: string): string {
  const base = (path.basename(realDir) || 'root')
    .replace(/[^A-Za-z0-9._-]/g, '_')
    .replace(/^\.+/, '_')
    .slice(0, 40);
  return `${base}-${createHash('sha256').update(realDir).digest('hex').slice(0, 20)}`;
}

const euid = (): number | null => (typeof process.geteuid === 'function' ? process.geteuid() : null);

/** A directory only this user can change: owned by the effective uid, not a link, writable by no one else. */
function ownDir(p: string): boolean {
  const st = fs.lstatSync(p, { throwIfNoEntry: false });
  if (!st || !st.isDirectory()) return false;
  const uid = euid();
  return (uid === null || st.uid === uid) && (st.mode & 0o022) === 0;
}

/** The parent of `agentsnap/`: it may be shared (root's, or sticky like /tmp), but no one else may rename our directory in it. */
function safeParent(p: string): boolean {
  const st = fs.statSync(p, { throwIfNoEntry: false });
  if (!st || !st.isDirectory()) return false;
  const uid = euid();
  if (uid !== null && st.uid !== uid && st.uid !== 0) return false;
  return (st.mode & 0o002) === 0 || (st.mode & 0o1000) !== 0;
}

/** Whether the chain `<parent of agentsnap>/agentsnap/shadows[/<key>[/git]]` is the user's own (see the header). */
function trustedChain(root: string, below: string[]): boolean {
  const agentsnapDir = path.dirname(root);
  if (!safeParent(path.dirname(agentsnapDir)) || !ownDir(agentsnapDir) || !ownDir(root)) return false;
  let p = root;
  for (const part of below) {
    p = path.join(p, part);
    if (!ownDir(p)) return false;
  }
  return true;
}

function readOrigin(file: string): Origin | null {
  try {
    const st = fs.lstatSync(file);
    const uid = euid();
    if (!st.isFile() || (uid !== null && st.uid !== uid)) return null;
    const o = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<Origin>;
    return typeof o.path === 'string' && typeof o.ino === 'number' ? (o as Origin) : null;
  } catch {
    return null;
  }
}

/** The shadow recorded for exactly `realDir` (a real path), if there is one and it is trustworthy and still this directory's. */
export function shadowOf(realDir: string, env: NodeJS.ProcessEnv): Shadow | null {
  const root = shadowsRoot(env);
  if (!root) return null;
  const key = shadowKey(realDir);
  const dir = path.join(root, key);
  if (!fs.existsSync(path.join(dir, 'origin.json'))) return null;
  if (!trustedChain(root, [key, 'git'])) return null;
  const origin = readOrigin(path.join(dir, 'origin.json'));
  const st = fs.statSync(realDir, { throwIfNoEntry: false });
  if (!origin || !st || origin.path !== realDir || origin.ino !== st.ino) return null;
  return { dir, gitDir: path.join(dir, 'git'), worktree: realDir };
}

/** The shadow of `cwd` or of its nearest ancestor that has one (how git finds a .git above it). */
export function findShadow(cwd: string, env: NodeJS.ProcessEnv): Shadow | null {
  let dir: string;
  try {
    dir = fs.realpathSync(cwd);
  } catch {
    return null;
  }
  for (;;) {
    const found = shadowOf(dir, env);
    if (found) return found;
    const up = path.dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
}

/** Why a shadow cannot be made for `realDir`, or null. */
function shadowRefusal(realDir: string, root: string, env: NodeJS.ProcessEnv, force: boolean): Error | null {
  const home = env.HOME ? (fs.existsSync(env.HOME) ? fs.realpathSync(env.HOME) : env.HOME) : null;
  if (!force && (realDir === path.parse(realDir).root || realDir === home)) {
    const what = realDir === home ? 'your home directory' : 'the root directory';
    return errors.refused(`${realDir} is not in a git repository, and agentsnap does not snapshot ${what} unless asked.`, {
      hint: 'Run agentsnap in the project directory, or create a shadow repository here anyway with `agentsnap shadow create --force`.',
      data: { dir: realDir, reason: 'home-or-root' },
    });
  }
  const below = path.relative(root, realDir);
  if (below === '' || !(below === '..' || below.startsWith(`..${path.sep}`) || path.isAbsolute(below))) {
    return errors.refused(`${realDir} is inside agentsnap's own shadow repositories (${root}).`, {
      hint: 'Run agentsnap in a project directory.',
      data: { dir: realDir, reason: 'inside-shadows' },
    });
  }
  return null;
}

/** Makes `dir` and its missing parents 0700 (whatever the umask). */
function mkdirPrivate(dir: string): void {
  const missing: string[] = [];
  for (let p = dir; !fs.existsSync(p); p = path.dirname(p)) missing.unshift(p);
  for (const p of missing) {
    try {
      fs.mkdirSync(p, { mode: 0o700 });
      fs.chmodSync(p, 0o700);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  }
}

/**
 * The shadow of `cwd` (its real path), made when there is none: a git dir with the directory as its worktree and
 * the default excludes. Two commands that make it at once get the same one (each builds it aside, then renames).
 */
export async function createShadow(cwd: string, env: NodeJS.ProcessEnv, opts: { force?: boolean } = {}): Promise<Shadow> {
  const realDir = fs.realpathSync(cwd);
  const existing = shadowOf(realDir, env);
  if (existing) return existing;
  const root = shadowsRoot(env);
  if (!root) {
    throw errors.notARepository(`${realDir} is not in a git repository, and there is no home directory to keep a shadow repository in.`, {
      hint: 'Set HOME (or XDG_STATE_HOME), or run agentsnap in a git repository (`git init`).',
      data: { cwd: realDir },
    });
  }
  const refusal = shadowRefusal(realDir, root, env, !!opts.force);
  if (refusal) throw refusal;
  mkdirPrivate(root);
  if (!trustedChain(root, [])) {
    throw errors.refused(
      `agentsnap's shadow repositories directory ${root} is not yours alone (owner, mode or a link): agentsnap does not keep a repository there.`,
      {
        hint: `Make ${path.dirname(root)} and ${root} directories owned by you with mode 0700, or set XDG_STATE_HOME to a private directory.`,
        data: { dir: root },
      },
    );
  }
  const key = shadowKey(realDir);
  const dir = path.join(root, key);
  const st = fs.statSync(realDir);
  if (fs.existsSync(dir)) {
    // The path's shadow belongs to another directory that was here (or its origin is unreadable): kept, set aside.
    fs.renameSync(dir, path.join(root, `${key}.replaced-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`));
  }
  const tmp = path.join(root, `.tmp-${key}-${process.pid}-${randomBytes(4).toString('hex')}`);
  mkdirPrivate(tmp);
  try {
    const gitDir = path.join(tmp, 'git');
    // GIT_DEFAULT_HASH is the one git variable taken from the caller here: the object format asked for (sha256).
    const quiet = { cwd: tmp, env: { ...cleanGitEnv(env), ...(env.GIT_DEFAULT_HASH ? { GIT_DEFAULT_HASH: env.GIT_DEFAULT_HASH } : {}) } };
    await runGit(['init', '-q', '--bare', gitDir], quiet);
    const cfg = (k: string, v: string) => runGit(['--git-dir', gitDir, 'config', k, v], quiet);
    await cfg('core.bare', 'false');
    await cfg('core.worktree', realDir);
    const excludes = [...SHADOW_DEFAULT_EXCLUDES];
    const inside = path.relative(realDir, root);
    if (!inside.startsWith('..') && !path.isAbsolute(inside)) excludes.push(`/${inside.split(path.sep).join('/')}/`);
    fs.mkdirSync(path.join(gitDir, 'info'), { recursive: true, mode: 0o700 });
    fs.writeFileSync(
      path.join(gitDir, 'info', 'exclude'),
      `# agentsnap shadow repository of ${realDir}: what its snapshots leave out, besides the directory's .gitignore files.\n${excludes.join('\n')}\n`,
      { mode: 0o600 },
    );
    const origin: Origin = { path: realDir, ino: st.ino, created: new Date().toISOString() };
    fs.writeFileSync(path.join(tmp, 'origin.json'), `${JSON.stringify(origin)}\n`, { mode: 0o600 });
    try {
      fs.renameSync(tmp, dir);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw e;
      // Another command made it first: that one is used.
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  const made = shadowOf(realDir, env);
  if (!made) {
    throw errors.internal(`the shadow repository for ${realDir} was made in ${dir} but cannot be opened.`, { data: { dir } });
  }
  return made;
}

/** Refuses `what` (a command that needs a real repository) in a shadow repository's directory. */
export function refuseInShadow(repo: { shadow?: Shadow | undefined; worktree: string }, what: string): void {
  if (!repo.shadow) return;
  throw errors.needsGitRepository(
    `${what} needs a git repository, and ${repo.worktree} is in none (agentsnap keeps a shadow repository for it).`,
    {
      hint: 'Run `git init` there first (then `agentsnap shadow import` carries the sessions over), or use undo, restore and revert, which work here.',
      data: { worktree: repo.worktree, shadow: repo.shadow.dir, command: what },
    },
  );
}

/** In a git repository: the shadow repository kept for its worktree from before `git init` (`shadow import` carries it over), if any. */
export function shadowLeftBehind(repo: { shadow?: Shadow | undefined; worktree: string; callerEnv: NodeJS.ProcessEnv }): Shadow | null {
  if (repo.shadow) return null;
  let real: string;
  try {
    real = fs.realpathSync(repo.worktree);
  } catch {
    return null;
  }
  return shadowOf(real, repo.callerEnv);
}
