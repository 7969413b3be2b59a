// Lock files that record their owner (pid, process start time, host), so a
// lock left behind by a killed process is recognised and taken over instead
// of being waited on forever.
import fs from 'node:fs';
import os from 'node:os';
import { errors } from './errors.js';

export interface LockOwner {
  pid: number;
  /** Process start time in clock ticks since boot (Linux), to survive pid reuse. */
  start: string | null;
  host: string;
  since: string;
  purpose: string;
}

/** The start time of a process as the kernel reports it, or null where unknown. */
export function processStartTime(pid: number): string | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 22; the command name (field 2) may contain spaces, so count after its ')'.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return rest[19] ?? null;
  } catch {
    return null;
  }
}

/** Whether the process that wrote `owner` is still alive on this host. */
export function ownerAlive(owner: Pick<LockOwner, 'pid' | 'start' | 'host'>): boolean {
  if (owner.host !== os.hostname()) return true; // cannot tell: assume alive
  try {
    process.kill(owner.pid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
  if (owner.start === null) return true;
  const now = processStartTime(owner.pid);
  return now === null || now === owner.start;
}

export function currentOwner(purpose: string): LockOwner {
  return {
    pid: process.pid,
    start: processStartTime(process.pid),
    host: os.hostname(),
    since: new Date().toISOString(),
    purpose,
  };
}

function readOwner(file: string): LockOwner | 'missing' | 'unreadable' {
  let text: string;
  try {
    // Never through a symlink, never waiting on a FIFO an agent step put in its place (a blocking read is a hang).
    const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
    try {
      if (!fs.fstatSync(fd).isFile()) return 'unreadable';
      text = fs.readFileSync(fd, 'utf8');
    } finally {
      fs.closeSync(fd);
    }
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'missing' : 'unreadable';
  }
  try {
    const o = JSON.parse(text) as LockOwner;
    if (typeof o.pid === 'number') return o;
  } catch {
    /* torn write by a killed owner */
  }
  return 'unreadable';
}

export interface LockOptions {
  /** How long to wait for a live owner, in ms. */
  timeoutMs?: number;
  purpose?: string;
}

export interface Lock {
  readonly file: string;
  release(): void;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Age after which an unreadable (torn) lock file is considered abandoned. */
const TORN_LOCK_GRACE_MS = 2000;

/** Takes the lock at `file`, waiting for a live owner up to timeoutMs and taking over dead owners' locks. */
export async function acquireLock(file: string, options: LockOptions = {}): Promise<Lock> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const purpose = options.purpose ?? 'agentsnap';
  const deadline = Date.now() + timeoutMs;
  let delay = 2;
  const body = JSON.stringify(currentOwner(purpose));
  for (;;) {
    try {
      const fd = fs.openSync(file, 'wx', 0o600);
      try {
        fs.writeSync(fd, body);
      } finally {
        fs.closeSync(fd);
      }
      let released = false;
      return {
        file,
        release() {
          if (released) return;
          released = true;
          try {
            fs.unlinkSync(file);
          } catch {
            /* already gone */
          }
        },
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const owner = readOwner(file);
    let stale = false;
    if (owner === 'missing') continue;
    if (owner === 'unreadable') {
      try {
        stale = Date.now() - fs.statSync(file).mtimeMs > TORN_LOCK_GRACE_MS;
      } catch {
        continue;
      }
    } else {
      stale = !ownerAlive(owner);
    }
    if (stale) {
      breakStaleLock(file);
      continue;
    }
    if (Date.now() >= deadline) {
      const who = typeof owner === 'object' ? ` by pid ${owner.pid} (${owner.purpose}, since ${owner.since})` : '';
      throw errors.busy(`${file} is locked${who}.`, {
        hint: 'Wait for the other agentsnap command to finish and try again; a lock of a dead process is removed automatically.',
        data: { lock: file, owner: typeof owner === 'object' ? owner : null },
      });
    }
    await sleep(delay);
    delay = Math.min(delay * 2, 50);
  }
}

/** Removes a dead owner's lock without racing another process that is doing the same. */
function breakStaleLock(file: string): void {
  // Rename to a unique name first: only one breaker wins the rename, and a
  // fresh lock created meanwhile by a live process is never the one removed.
  const tomb = `${file}.stale-${process.pid}-${Date.now()}`;
  try {
    fs.renameSync(file, tomb);
  } catch {
    return;
  }
  const owner = readOwner(tomb);
  if (typeof owner === 'object' && ownerAlive(owner)) {
    // We moved a live lock (it was replaced between our check and rename): put it back.
    try {
      fs.linkSync(tomb, file);
    } catch {
      /* someone else holds it now; the live owner keeps running unaffected */
    }
  }
  try {
    fs.unlinkSync(tomb);
  } catch {
    /* gone */
  }
}

/** Runs fn while holding the lock. */
export async function withLock<T>(file: string, options: LockOptions, fn: () => Promise<T>): Promise<T> {
  const lock = await acquireLock(file, options);
  try {
    return await fn();
  } finally {
    lock.release();
  }
}

// ---------------------------------------------------------------------------
// git's own lock files (`<file>.lock`) that a killed git process left behind.
// git never removes them by itself: one left on a private index or on one of
// agentsnap's refs would make every later snapshot fail.

/** Whether some process has `file` open (Linux /proc); null where that cannot be told. */
function openByAnyProcess(file: string): boolean | null {
  let pids: string[];
  try {
    pids = fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n));
  } catch {
    return null;
  }
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = fs.readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // gone, or another user's (git children run as us)
    }
    for (const fd of fds) {
      try {
        if (fs.readlinkSync(`/proc/${pid}/fd/${fd}`) === file) return true;
      } catch {
        /* closed meanwhile */
      }
    }
  }
  return false;
}

/** Without /proc, a git lock file this old is taken to be abandoned (git holds them for moments). */
const GIT_LOCK_GRACE_MS = 10_000;

/**
 * Removes a git lock file that no process holds, waiting up to timeoutMs for
 * one that is held (an orphaned git child of a killed agentsnap finishing its
 * work). The caller holds the agentsnap lock that serialises every writer of
 * the locked file, so a lock nobody holds open is a dead git's. Returns
 * whether the way is clear now: a stale lock removed, or none there any more
 * (the caller retries what the lock stopped).
 */
export async function clearStaleGitLock(file: string, timeoutMs = 5000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let st: fs.Stats;
    try {
      st = fs.statSync(file);
    } catch {
      // Gone already (an orphaned git of a killed agentsnap finished): nothing is in the way any more.
      return true;
    }
    const held = openByAnyProcess(file);
    const stale = held === null ? Date.now() - st.mtimeMs > GIT_LOCK_GRACE_MS : !held;
    if (stale) {
      // git closes a lock file just before renaming it into place: look once more after a moment.
      await sleep(30);
      if (!fs.existsSync(file) || openByAnyProcess(file)) continue;
      try {
        fs.unlinkSync(file);
      } catch {
        /* gone meanwhile */
      }
      return true;
    }
    if (Date.now() >= deadline) return false;
    await sleep(20);
  }
}
