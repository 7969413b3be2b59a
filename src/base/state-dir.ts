// The state directory (`<git common dir>/agentsnap/`, `Repo.stateDir`): its
// layout (every path under it is named here) and the only safe way to write
// files there. It sits in base/ because every layer names a path in it (git/'s
// no-index file, snapshot/'s tmp dir, session/'s journals, server/'s run dir,
// worktrees/' gc stamp); it knows paths and bytes only, never their meaning.
//
// An agent runs as the user and may replace any file here with a symlink (or a
// FIFO). agentsnap never creates links here, so no state file is followed
// through one: every open uses O_NOFOLLOW and checks it got a regular file.
// What happens to a link (decided per file, and why):
//   - replaced: files written whole (state.json, packs.json, gc.stamp, gc.failed,
//     autostart.stamp, watcher.json, caches) go through a temp file + rename,
//     which replaces the link itself and never writes its target;
//     logs (server.log) lose nothing when the link is removed, so it is
//     removed and a fresh log created.
//   - refused (UnsafeStateFile, exit 3): files that hold the user's history
//     (a session's journal.jsonl) or anything else opened for update: taking
//     the link away would hide what it pointed at, so the user decides.
//   - lock files are created with O_EXCL (never through a link); one that is a
//     link or not a regular file is no lock agentsnap wrote and is broken as a
//     dead owner's (src/base/lock.ts).
// One exception by design: a Gemini run's overlay home (sessions/<id>/gemini-home-*/.gemini/) holds links to the
// entries of the user's real ~/.gemini (docs/reference.md); agentsnap never writes through them.
// Files are created 0600 and directories 0700 whatever the umask (fchmod /
// chmod after creation: a umask can only take bits away, but 0600 is exact).
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { errors, isAgentsnapError } from './errors.js';

export const STATE_FILE_MODE = 0o600;
export const STATE_DIR_MODE = 0o700;

/** Anything that knows its state directory (a `Repo`). */
export interface StateRoot {
  readonly stateDir: string;
}

// ---------------------------------------------------------------------------
// Layout

export const stateLayout = {
  /** Lock files: `locks/<name>` (see lockFileIn, which also creates the directory). */
  locksDir: (r: StateRoot): string => path.join(r.stateDir, 'locks'),
  /** One directory per session: journal.jsonl, state.json, index, lock, env-base.json, worktree.json, agent overlays. */
  sessionsDir: (r: StateRoot): string => path.join(r.stateDir, 'sessions'),
  /** The warm servers' run dirs: `run/main`, `run/wt-<linked worktree>`. */
  runRoot: (r: StateRoot): string => path.join(r.stateDir, 'run'),
  /** Time-gated automatic gc: when it last ran. */
  gcStamp: (r: StateRoot): string => path.join(r.stateDir, 'gc.stamp'),
  /** Why the last automatic gc failed (its time, then its message): doctor reports it until a gc succeeds. */
  gcFailure: (r: StateRoot): string => path.join(r.stateDir, 'gc.failed'),
  /** agentsnap's own packs (session/maintenance.ts). */
  packsJson: (r: StateRoot): string => path.join(r.stateDir, 'packs.json'),
  /** `git blame`'s scratch directories (mkdtemp: `tmp-blame-XXXXXX`). */
  blameTmpPrefix: (r: StateRoot): string => path.join(r.stateDir, 'tmp-blame-'),
  /** Throwaway indexes and materialised ignore files. */
  tmpDir: (r: StateRoot): string => path.join(r.stateDir, 'tmp'),
  /** An index path that never exists, for git commands that must not read the user's index. */
  noIndexFile: (r: StateRoot): string => path.join(r.stateDir, 'no-index', 'index'),
  /** Markers of running sessions: `running/<id>`. */
  runningDir: (r: StateRoot): string => path.join(r.stateDir, 'running'),
  /** Init-mode mapping of an agent's session to ours: `agent-sessions/<agent>-<key>`. */
  agentSessionsDir: (r: StateRoot): string => path.join(r.stateDir, 'agent-sessions'),
  /** Session worktrees by default. */
  worktreesDir: (r: StateRoot): string => path.join(r.stateDir, 'worktrees'),
};

/** The files of one session (`sessions/<id>/`); the id is checked by the caller (assertSessionId). */
export function sessionFiles(r: StateRoot, id: string): { dir: string; index: string; journal: string; state: string; lock: string } {
  const dir = path.join(stateLayout.sessionsDir(r), id);
  return {
    dir,
    /** The session's private index (and its caches beside it: `index.user-copy`, `index.oldest`, …). */
    index: path.join(dir, 'index'),
    /** The journal: the truth; refused, never replaced, when it is a link. */
    journal: path.join(dir, 'journal.jsonl'),
    /** The cached fold of the journal. */
    state: path.join(dir, 'state.json'),
    lock: path.join(dir, 'lock'),
  };
}

/** The files of one run dir (the warm server's; `dir` from runDirOf). */
export const runDirLayout = {
  serverLog: (dir: string): string => path.join(dir, 'server.log'),
  autostartStamp: (dir: string): string => path.join(dir, 'autostart.stamp'),
};

/** `locks/<name>`, its directory created (0700): every taker of a lock names it through here. */
export function lockFileIn(r: StateRoot, name: string): string {
  const dir = stateLayout.locksDir(r);
  ensureStateDir(dir, r.stateDir);
  return path.join(dir, name);
}

// ---------------------------------------------------------------------------
// Safe I/O

const { O_NOFOLLOW, O_NONBLOCK, O_CREAT, O_EXCL, O_WRONLY, O_RDWR, O_RDONLY, O_APPEND } = fs.constants;

/** The refusal for a state file that is a link or not a regular file. */
export function unsafeStateFile(file: string, what: string): Error {
  return errors.unsafeStateFile(`${file} is ${what}, not a file agentsnap wrote; agentsnap does not follow or write through it.`, {
    hint: `Look at what it points to, then remove it (\`rm ${JSON.stringify(file).slice(1, -1)}\`); agentsnap never creates links or special files there.`,
    data: { file },
  });
}

function kindOf(st: fs.Stats): string {
  if (st.isSymbolicLink()) return 'a symbolic link';
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

/** The ELOOP of an O_NOFOLLOW open on a link (and the ENXIO of a FIFO without a reader) as the clear refusal. */
function refusalFor(file: string, e: unknown): unknown {
  const code = (e as NodeJS.ErrnoException).code;
  if (code !== 'ELOOP' && code !== 'ENXIO' && code !== 'EISDIR') return e;
  const st = fs.lstatSync(file, { throwIfNoEntry: false });
  return st ? unsafeStateFile(file, kindOf(st)) : e;
}

/** Refuses unless fd is a regular file (the caller closes it). */
function checkRegular(fd: number, file: string): void {
  const st = fs.fstatSync(fd);
  if (!st.isFile()) throw unsafeStateFile(file, kindOf(st));
}

/**
 * Creates `dir` and its missing parents 0700; refuses when it, or any
 * directory between `root` (the state directory, when given) and it, is a link
 * or not a directory (mkdir -p would create below a link's target). Existing
 * directories keep their mode.
 */
export function ensureStateDir(dir: string, root?: string): void {
  if (root !== undefined) {
    const rel = path.relative(root, dir);
    if (rel && !rel.startsWith('..') && !path.isAbsolute(rel)) {
      let d = root;
      for (const part of rel.split(path.sep).slice(0, -1)) {
        d = path.join(d, part);
        const st = fs.lstatSync(d, { throwIfNoEntry: false });
        if (!st) break; // created below, by us
        if (!st.isDirectory()) throw unsafeStateFile(d, kindOf(st));
      }
    }
  }
  const first = fs.mkdirSync(dir, { recursive: true, mode: STATE_DIR_MODE });
  if (first !== undefined) {
    // Exact 0700 for each directory made, whatever the umask.
    for (let d = dir; ; d = path.dirname(d)) {
      fs.chmodSync(d, STATE_DIR_MODE);
      if (d === first || path.dirname(d) === d) break;
    }
    return;
  }
  const st = fs.lstatSync(dir);
  if (!st.isDirectory()) throw unsafeStateFile(dir, kindOf(st));
}

/**
 * Opens a state file for appending or for update (read + write), creating it
 * 0600; never through a link, only a regular file. The caller closes the fd.
 */
export function openStateFile(file: string, how: 'append' | 'update'): number {
  const access = how === 'append' ? O_WRONLY | O_APPEND : O_RDWR;
  let fd: number;
  try {
    fd = fs.openSync(file, access | O_CREAT | O_EXCL | O_NOFOLLOW, STATE_FILE_MODE);
    fs.fchmodSync(fd, STATE_FILE_MODE);
    return fd;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw refusalFor(file, e);
  }
  try {
    // O_NONBLOCK: a FIFO put here must not hang the open (it is refused below).
    fd = fs.openSync(file, access | O_NOFOLLOW | O_NONBLOCK);
  } catch (e) {
    throw refusalFor(file, e);
  }
  try {
    checkRegular(fd, file);
  } catch (e) {
    fs.closeSync(fd);
    throw e;
  }
  return fd;
}

/** Appends bytes to a state file (created 0600; refused when it is a link). */
export function appendStateFile(file: string, data: string | Uint8Array): void {
  const fd = openStateFile(file, 'append');
  try {
    fs.writeSync(fd, typeof data === 'string' ? Buffer.from(data) : data);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * A log of ours (server.log) opened for appending: a link or special file in
 * its place is removed and a fresh log created (a log holds nothing the user
 * needs; its target is never written).
 */
export function openStateLog(file: string): number {
  try {
    return openStateFile(file, 'append');
  } catch (e) {
    if (!(isAgentsnapError(e) && e.code === 'UnsafeStateFile')) throw e;
    const st = fs.lstatSync(file, { throwIfNoEntry: false });
    if (!st || st.isDirectory()) throw e;
    fs.unlinkSync(file);
    return openStateFile(file, 'append');
  }
}

/**
 * Replaces a state file whole, atomically (a reader sees the old bytes or the
 * new): a temp file beside it (O_EXCL, 0600), then rename, which replaces a
 * link in its place rather than writing the link's target.
 */
export function replaceStateFile(file: string, data: string | Uint8Array, opts: { fsync?: boolean } = {}): void {
  const tmp = `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  const fd = fs.openSync(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, STATE_FILE_MODE);
  try {
    try {
      fs.fchmodSync(fd, STATE_FILE_MODE);
      fs.writeSync(fd, typeof data === 'string' ? Buffer.from(data) : data);
      if (opts.fsync) fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, file);
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw refusalFor(file, e);
  }
}

/** A state file's bytes, never through a link; null when it does not exist. */
export function readStateFile(file: string): Buffer | null {
  let fd: number;
  try {
    fd = fs.openSync(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw refusalFor(file, e);
  }
  try {
    checkRegular(fd, file);
    return fs.readFileSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Copies `src` to `dst` (a temp name of ours) as a fresh 0600 file: whatever
 * is at `dst` (a link planted there) is removed, and the copy is created
 * O_EXCL, so it never writes through a link.
 */
export function copyToFreshStateFile(src: string, dst: string): void {
  fs.rmSync(dst, { force: true });
  fs.copyFileSync(src, dst, fs.constants.COPYFILE_EXCL);
  fs.chmodSync(dst, STATE_FILE_MODE);
}
