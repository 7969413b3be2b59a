// Shadow repositories (issue 33): agentsnap in a directory that is in no git repository. The directory gets
// a git dir of its own kept outside it, under `$XDG_STATE_HOME/agentsnap/shadows/<name>-<hash of its real path>/`
// (`git/`, and `origin.json`: the directory's real path, device, inode and birth time), and is opened through it as
// the "dotfiles" layout is (GIT_DIR + GIT_WORK_TREE): everything else in agentsnap works on it unchanged. Nothing
// is written into the directory itself.
//
// Why each check:
//   - The key is the real path, and origin.json's inode (with the birth time where the filesystem has one, else the
//     device) must match: a directory removed and made again at the same path (or another one moved or mounted
//     there) is not the one the shadow recorded, so it is not given its sessions; its shadow is set aside, said so.
//   - Git trusts a GIT_DIR it is given (safe.directory is checked only when it discovers one), and a git dir's
//     config can name programs git runs (core.fsmonitor, hooks): every directory from `agentsnap/` down must be the
//     user's own, not a link, and writable by nobody else, and no other user may rename anything above it (each
//     ancestor is the user's or root's, and writable by others only when sticky), as ssh's StrictModes asks of
//     ~/.ssh. A shadow that fails this is refused (exit 3) and left as it is, never set aside or replaced.
//   - A home directory, `/`, a directory above home and a world-writable one (/tmp) hold other people's or
//     unrelated files: a shadow is made there only when asked with --force.
import fs from 'node:fs';
import path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { errors } from '../base/errors.js';
import { acquireLock } from '../base/lock.js';
import { cleanGitEnv, runGit } from './run.js';

/** A shadow repository: where its git dir is, and the directory it records. */
export interface Shadow {
  /** `<shadows>/<key>`: removed whole by `gc --all`. */
  readonly dir: string;
  /** `<dir>/git`: the git dir (GIT_DIR). */
  readonly gitDir: string;
  /** The directory it records (GIT_WORK_TREE): a real path. */
  readonly worktree: string;
  /** Set when this open made the shadow and set aside one kept for another directory at this path (see createShadow). */
  readonly setAside?: string;
}

interface Origin {
  path: string;
  ino: number;
  dev?: number;
  /** Birth time in ms (0: the filesystem gives none). */
  btime?: number;
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
function ownDir(p: string): string | null {
  const st = fs.lstatSync(p, { throwIfNoEntry: false });
  if (!st || !st.isDirectory()) return `${p} is not a directory (a link or missing)`;
  const uid = euid();
  if (uid !== null && st.uid !== uid) return `${p} is owned by uid ${st.uid}, not by you`;
  if ((st.mode & 0o002) !== 0) return `${p} is writable by everyone (mode ${(st.mode & 0o7777).toString(8)})`;
  // A group write bit (umask 002) lets no one else in when the group is the user's alone.
  if ((st.mode & 0o020) !== 0 && !privateGroup(st.gid))
    return `${p} is writable by its group (gid ${st.gid}, mode ${(st.mode & 0o7777).toString(8)})`;
  return null;
}

/** A group whose only member is this user (a "user private group"): its write bit lets no one else in. */
function privateGroup(gid: number): boolean {
  const uid = euid();
  try {
    const group = fs
      .readFileSync('/etc/group', 'utf8')
      .split('\n')
      .map((l) => l.split(':'))
      .find((f) => Number(f[2]) === gid);
    if (!group || (group[3] ?? '').trim() !== '') return false;
    const primary = fs
      .readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .map((l) => l.split(':'))
      .filter((f) => Number(f[3]) === gid);
    return primary.length === 1 && Number(primary[0]?.[2]) === uid;
  } catch {
    // /etc/group or /etc/passwd unreadable (LDAP, sssd): not known to be private, so refused (fails safe)
    return false;
  }
}

/**
 * The directories above `agentsnap/` (its real path's ancestors, up to /): each is the user's or root's, and no
 * one else may write in it, unless it is sticky (as /tmp is: only an entry's owner renames it).
 */
function ancestorsRefusal(dir: string): string | null {
  const uid = euid();
  for (let p = dir; ; p = path.dirname(p)) {
    const st = fs.lstatSync(p, { throwIfNoEntry: false });
    if (!st || !st.isDirectory()) return `${p} is not a directory`;
    if (uid !== null && st.uid !== uid && st.uid !== 0) return `${p} is owned by uid ${st.uid}`;
    const sticky = (st.mode & 0o1000) !== 0;
    if (!sticky && (st.mode & 0o002) !== 0) return `${p} is writable by everyone`;
    if (!sticky && (st.mode & 0o020) !== 0 && !privateGroup(st.gid)) return `${p} is writable by its group (gid ${st.gid})`;
    if (path.dirname(p) === p) return null;
  }
}

/** Why the chain `<ancestors>/agentsnap/shadows[/<below>...]` is not the user's alone (see the header), or null. */
function chainRefusal(root: string, below: string[]): string | null {
  const agentsnapDir = path.dirname(root);
  const why = ancestorsRefusal(path.dirname(agentsnapDir)) ?? ownDir(agentsnapDir) ?? ownDir(root);
  if (why) return why;
  let p = root;
  for (const part of below) {
    p = path.join(p, part);
    const bad = ownDir(p);
    if (bad) return bad;
  }
  return null;
}

/** The real path of `p`, whose last components may not exist yet (they are taken as they are). */
function realpathLoose(p: string): string {
  const rest: string[] = [];
  for (let q = p; ; q = path.dirname(q)) {
    try {
      return path.join(fs.realpathSync(q), ...rest.reverse());
    } catch {
      // this component does not exist yet: resolved from the nearest one that does
      if (path.dirname(q) === q) return p;
      rest.push(path.basename(q));
    }
  }
}

/** `shadowsRoot(env)` as a real path (HOME may be reached through a link: /home -> /var/home). */
function realShadowsRoot(env: NodeJS.ProcessEnv): string | null {
  const root = shadowsRoot(env);
  return root ? realpathLoose(root) : null;
}

function readOrigin(file: string): Origin | null {
  try {
    const st = fs.lstatSync(file);
    const uid = euid();
    if (!st.isFile() || (uid !== null && st.uid !== uid)) return null;
    const o = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<Origin>;
    return typeof o.path === 'string' && typeof o.ino === 'number' ? (o as Origin) : null;
  } catch {
    // unreadable or not JSON: no origin, so the shadow is not taken for this directory's (set aside on create)
    return null;
  }
}

/**
 * A directory's birth time in ms, or 0 where it cannot be told from the ctime: without statx (old kernels, some
 * seccomp profiles) Node reports the ctime for it, which moves with every entry added; a real birth time equal to
 * the ctime (a directory not changed since it was made, within the clock's tick) is taken for none as well.
 */
function birthTime(st: fs.Stats): number {
  return st.birthtimeMs > 0 && st.birthtimeMs !== st.ctimeMs ? Math.round(st.birthtimeMs) : 0;
}

/** Whether `st` is the directory `origin` recorded: its inode, and its birth time where both have one, else its device. */
function sameDirectory(origin: Origin, realDir: string, st: fs.Stats): boolean {
  if (origin.path !== realDir || origin.ino !== st.ino) return false;
  const btime = birthTime(st);
  if (origin.btime && btime) return origin.btime === btime;
  // Recorded as the raw birth time, so a directory made and filled within one clock tick still has one to compare.
  return origin.dev === undefined || origin.dev === st.dev;
}

/** What is kept for exactly `realDir`: its shadow, nothing, one another user could change, or one of another directory. */
type Inspected =
  | { kind: 'ok'; shadow: Shadow }
  | { kind: 'none' }
  | { kind: 'untrusted'; dir: string; why: string }
  | { kind: 'other'; dir: string };

function inspectShadow(realDir: string, root: string): Inspected {
  const key = shadowKey(realDir);
  const dir = path.join(root, key);
  if (!fs.lstatSync(dir, { throwIfNoEntry: false })) return { kind: 'none' };
  const why = chainRefusal(root, [key]);
  if (why) return { kind: 'untrusted', dir, why };
  // No git dir at all (removed by hand, a build that died): no repository to trust or distrust, set aside as broken.
  if (!fs.lstatSync(path.join(dir, 'git'), { throwIfNoEntry: false })) return { kind: 'other', dir };
  const gitWhy = ownDir(path.join(dir, 'git'));
  if (gitWhy) return { kind: 'untrusted', dir, why: gitWhy };
  const origin = readOrigin(path.join(dir, 'origin.json'));
  const st = fs.statSync(realDir, { throwIfNoEntry: false });
  if (!origin || !st || !sameDirectory(origin, realDir, st)) return { kind: 'other', dir };
  return { kind: 'ok', shadow: { dir, gitDir: path.join(dir, 'git'), worktree: realDir } };
}

function untrustedShadow(dir: string, why: string): Error {
  return errors.refused(`the shadow repository ${dir} is not used: ${why}, so another user could change what git runs there.`, {
    hint: `Make it yours alone (\`chmod -R go-w ${dir}\`, and the directories above it), or set XDG_STATE_HOME to a private directory. Nothing was changed.`,
    data: { shadow: dir, why },
  });
}

/** The shadow recorded for exactly `realDir` (a real path), if there is one and it is still this directory's; throws when one is there that another user could change. */
export function shadowOf(realDir: string, env: NodeJS.ProcessEnv): Shadow | null {
  const root = realShadowsRoot(env);
  if (!root) return null;
  const found = inspectShadow(realDir, root);
  if (found.kind === 'untrusted') throw untrustedShadow(found.dir, found.why);
  return found.kind === 'ok' ? found.shadow : null;
}

/** The shadow of `cwd` or of its nearest ancestor that has one (how git finds a .git above it). */
export function findShadow(cwd: string, env: NodeJS.ProcessEnv): Shadow | null {
  let dir: string;
  try {
    dir = fs.realpathSync(cwd);
  } catch {
    // the directory is gone (ENOENT): no shadow names it
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

/** The shadow kept in `gitDir` (AGENTSNAP_SHADOW, which a wrap hands its agent), if it is a trusted one recording `cwd` or an ancestor. */
export function namedShadow(gitDir: string, cwd: string, env: NodeJS.ProcessEnv): Shadow | null {
  const root = realShadowsRoot(env);
  if (!root || path.dirname(path.dirname(gitDir)) !== root) return null;
  const origin = readOrigin(path.join(path.dirname(gitDir), 'origin.json'));
  if (!origin) return null;
  let real: string;
  try {
    real = fs.realpathSync(cwd);
  } catch {
    // cwd is gone: no pinned shadow (the open fails as it would without one)
    return null;
  }
  const rel = path.relative(origin.path, real);
  if (rel.startsWith('..') || path.isAbsolute(rel)) return null;
  const shadow = shadowOf(origin.path, env);
  return shadow && shadow.gitDir === gitDir ? shadow : null;
}

/** Why a shadow cannot be made for `realDir`, or null. */
function shadowRefusal(realDir: string, root: string, env: NodeJS.ProcessEnv, force: boolean): Error | null {
  if (realDir.includes('\n')) {
    return errors.unsupportedPath(`the directory's path holds a newline (${JSON.stringify(realDir)}): agentsnap cannot work in it.`, {
      hint: 'Rename the directory so that its path holds no newline.',
      data: { cwd: realDir },
    });
  }
  const below = path.relative(root, realDir);
  if (below === '' || !(below === '..' || below.startsWith(`..${path.sep}`) || path.isAbsolute(below))) {
    return errors.refused(`${realDir} is inside agentsnap's own shadow repositories (${root}).`, {
      hint: 'Run agentsnap in a project directory.',
      data: { dir: realDir, reason: 'inside-shadows' },
    });
  }
  if (force) return null;
  const home = env.HOME && path.isAbsolute(env.HOME) ? realpathLoose(env.HOME) : null;
  const aboveHome = home !== null && home !== realDir && !path.relative(realDir, home).startsWith('..');
  const st = fs.statSync(realDir);
  const shared = (st.mode & 0o002) !== 0;
  const what =
    realDir === path.parse(realDir).root
      ? 'the root directory'
      : realDir === home
        ? 'your home directory'
        : aboveHome
          ? 'a directory above your home directory'
          : shared
            ? 'a directory everyone can write in'
            : null;
  if (!what) return null;
  return errors.refused(`${realDir} is not in a git repository, and agentsnap does not snapshot ${what} unless asked.`, {
    hint: 'Run agentsnap in the project directory, or create a shadow repository here anyway with `agentsnap shadow create --force`. A repository whose git directory is elsewhere (a "dotfiles" repository) is opened with GIT_DIR and GIT_WORK_TREE set.',
    data: { dir: realDir, reason: 'home-or-root' },
  });
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
 * the default excludes, built aside and renamed into place under a lock (two commands that make it at once get the
 * same one). One kept for another directory at this path (origin.json does not match) is set aside, never deleted,
 * and said so (`setAside`); one another user could change is refused.
 */
export async function createShadow(cwd: string, env: NodeJS.ProcessEnv, opts: { force?: boolean } = {}): Promise<Shadow> {
  const realDir = fs.realpathSync(cwd);
  const existing = shadowOf(realDir, env);
  if (existing) return existing;
  const root = realShadowsRoot(env);
  if (!root) {
    throw errors.notARepository(`${realDir} is not in a git repository, and there is no home directory to keep a shadow repository in.`, {
      hint: 'Set HOME (or XDG_STATE_HOME), or run agentsnap in a git repository (`git init`).',
      data: { cwd: realDir },
    });
  }
  const refusal = shadowRefusal(realDir, root, env, !!opts.force);
  if (refusal) throw refusal;
  mkdirPrivate(root);
  const why = chainRefusal(root, []);
  if (why) {
    throw errors.refused(
      `agentsnap's shadow repositories directory ${root} is not yours alone: ${why}; agentsnap does not keep a repository there.`,
      {
        hint: `Make ${path.dirname(root)} and ${root} directories owned by you with mode 0700 (and no directory above them writable by others), or set XDG_STATE_HOME to a private directory.`,
        data: { dir: root, why },
      },
    );
  }
  const key = shadowKey(realDir);
  const dir = path.join(root, key);
  const lock = await acquireLock(path.join(root, `.${key}.lock`), { timeoutMs: 30_000, purpose: 'shadow create' });
  let setAside: string | undefined;
  try {
    const now = inspectShadow(realDir, root);
    if (now.kind === 'ok') return now.shadow; // another command made it meanwhile
    if (now.kind === 'untrusted') throw untrustedShadow(now.dir, now.why);
    if (now.kind === 'other') {
      setAside = path.join(root, `${key}.replaced-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`);
      fs.renameSync(dir, setAside);
    }
    await buildShadow(realDir, root, dir, env);
  } finally {
    lock.release();
  }
  const made = shadowOf(realDir, env);
  if (!made) throw errors.internal(`the shadow repository for ${realDir} was made in ${dir} but cannot be opened.`, { data: { dir } });
  return setAside ? { ...made, setAside } : made;
}

/** The shadow's git dir and origin.json, built in a temporary directory and renamed to `dir`. */
async function buildShadow(realDir: string, root: string, dir: string, env: NodeJS.ProcessEnv): Promise<void> {
  const st = fs.statSync(realDir);
  const tmp = path.join(root, `.tmp-${path.basename(dir)}-${process.pid}-${randomBytes(4).toString('hex')}`);
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
    const origin: Origin = {
      path: realDir,
      ino: st.ino,
      dev: st.dev,
      btime: Math.round(st.birthtimeMs),
      created: new Date().toISOString(),
    };
    fs.writeFileSync(path.join(tmp, 'origin.json'), `${JSON.stringify(origin)}\n`, { mode: 0o600 });
    // git init made its directories by the umask (002: group-writable): the shadow is the user's alone, as
    // agentsnap's state directory is; the sample hooks go (nothing of them runs).
    fs.rmSync(path.join(gitDir, 'hooks'), { recursive: true, force: true });
    makePrivate(tmp);
    fs.renameSync(tmp, dir);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/** Directories 0700 and files 0600, recursively (no links are made here). */
function makePrivate(p: string): void {
  const st = fs.lstatSync(p);
  if (st.isSymbolicLink()) return;
  fs.chmodSync(p, st.isDirectory() ? 0o700 : 0o600);
  if (st.isDirectory()) for (const name of fs.readdirSync(p)) makePrivate(path.join(p, name));
}

/** The shadows set aside for `realDir`'s path (kept for directories that were there before): `gc --all` there removes them. */
export function setAsideShadows(realDir: string, env: NodeJS.ProcessEnv): string[] {
  const root = realShadowsRoot(env);
  if (!root || !fs.existsSync(root)) return [];
  const prefix = `${shadowKey(realDir)}.replaced-`;
  return fs
    .readdirSync(root)
    .filter((n) => n.startsWith(prefix))
    .map((n) => path.join(root, n));
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

/** A shadow repository kept from before `git init`: of the repository's top (`shadow import` carries it over), or of a directory below it. */
export interface LeftBehind {
  shadow: Shadow;
  /** It records the repository's top; else a directory below it, whose snapshots cannot become this repository's. */
  atTop: boolean;
}

/**
 * In a git repository: a shadow repository kept from before `git init` for its top, or for the directory the
 * command runs in or one between it and the top. Never throws (it only adds a hint).
 */
export function shadowLeftBehind(
  repo: {
    shadow?: Shadow | undefined;
    worktree: string;
    prefix: string;
    callerEnv: NodeJS.ProcessEnv;
  },
  opts: { strict?: boolean } = {},
): LeftBehind | null {
  if (repo.shadow) return null;
  try {
    const top = fs.realpathSync(repo.worktree);
    const atTop = shadowOf(top, repo.callerEnv);
    if (atTop) return { shadow: atTop, atTop: true };
    for (let dir = path.resolve(top, repo.prefix); dir !== top && dir.startsWith(`${top}${path.sep}`); dir = path.dirname(dir)) {
      const below = shadowOf(dir, repo.callerEnv);
      if (below) return { shadow: below, atTop: false };
    }
    return null;
  } catch (e) {
    if (opts.strict) throw e; // `shadow import`: one that cannot be trusted is said so, with what is wrong
    return null;
  }
}

/** What to say about a shadow repository left behind by `git init` (the hint of log, status and `shadow import`). */
export function leftBehindHint(left: LeftBehind, top: string): string {
  return left.atTop
    ? 'Its earlier sessions are in the shadow repository agentsnap kept before `git init`: `agentsnap shadow import` carries them over.'
    : `The shadow repository agentsnap kept for ${left.shadow.worktree} before \`git init\` in ${top} holds its earlier sessions; it records ${left.shadow.worktree} as its top, so they cannot become this repository's (make ${left.shadow.worktree} a repository of its own to import them).`;
}

/** The patterns of a gitignore-style exclude file (comments and blank lines left out, trailing blanks dropped). */
export function excludePatterns(file: string): string[] {
  try {
    return fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .map((l) => l.trimEnd())
      .filter((l) => l.trim() !== '' && !l.startsWith('#'));
  } catch {
    // no such file (none written yet): no patterns
    return [];
  }
}
