// server/ (above restore/): the warm server's channel, run dir, lock and
// lifecycle (this file) and the hosting of one Repo with its accelerators
// (serve.ts). What a call does is passed in (ServerCalls, composed by
// server-api.ts): nothing here imports the hook router, the API or the CLI.
//
// The warm per-worktree server: answers agent hook calls (and `agentsnap
// snap`) in a process that is already running, so a tool call costs no Node
// start-up. `wrap` hosts one in its own process while the agent runs; without
// a wrapper (hooks written by `init`, or `snap`), the first call that finds
// none starts one in the background, which exits after agentsnap.serverIdle.
//
// Clients reach it through FIFOs in a 0700 run directory: a POSIX shell has
// no socket client, and nothing here listens on the network. The client side,
// the request record and the rule by which a client trusts a run directory are
// in channel.ts (and bin/agentsnap-hook, its sh counterpart).
//   <run>/pid        the server's pid: written once it is ready, removed first on shutdown
//   <run>/req        request FIFO, one line a call: "<slot> <pid>" (short lines are written atomically)
//   <run>/slot.<n>   reply FIFOs; the server holds each open for writing, so a client
//                    waiting on one reads end-of-file if the server dies, and falls back
//   <run>/claim.<n>  a client's claim on slot n (an exclusive create), removed after the reply
//   <run>/in.<n>     the request record (what was asked, then the payload), removed after the reply
// What was asked is the record's alone; the caller's environment and working
// directory are read from /proc/<pid>/ of the client, which must belong to the same user.
import fs from 'node:fs';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { errors } from '../base/errors.js';
import { packageRoot } from '../base/package-root.js';
import { acquireLock, ownerAlive, type Lock, type LockOwner } from '../base/lock.js';
import { ensureStateDir, openStateLog, replaceStateFile, runDirLayout, stateLayout } from '../base/state-dir.js';
import type { Repo } from '../git/repo.js';
import { serverEnabled, type Settings } from '../settings/settings.js';
import { decodeRecord, pauseForTest, readPlainBytes, readPlainFile, runDirName, SLOTS } from './channel.js';

export { SLOTS } from './channel.js';

/** The package's files the hook commands name. */
const PACKAGE_ROOT = packageRoot();
export const HOOK_CLIENT = path.join(PACKAGE_ROOT, 'bin', 'agentsnap-hook');
export const AGENTSNAP_JS = path.join(PACKAGE_ROOT, 'bin', 'agentsnap.js');

/**
 * Where the server of `repo`'s worktree keeps its FIFOs: `run/main` for the
 * main worktree, `run/wt-<name>` for a linked one (its git dir's name), which
 * a shell finds from its working directory without running git (see
 * bin/agentsnap-hook; bin/agentsnap.js does the same for `snap`).
 */
export function runDirOf(repo: Pick<Repo, 'stateDir' | 'gitDir' | 'commonDir'>): string {
  const linked = fs.existsSync(path.join(repo.gitDir, 'commondir'));
  return path.join(stateLayout.runRoot(repo), runDirName(repo.gitDir, linked));
}

/**
 * Makes the run dir of `repo`'s worktree as clients trust it (channel.ts): `agentsnap/`, `run/` and the run dir
 * directories of this uid, mode 0700 (an older agentsnap left `agentsnap/` 0755: tightened). Throws Refused when
 * one is a symlink, not a directory or another user's: nothing of the server's goes there.
 */
export function prepareRunDir(repo: Pick<Repo, 'stateDir' | 'gitDir' | 'commonDir'>): string {
  const dir = runDirOf(repo);
  const uid = typeof process.geteuid === 'function' ? process.geteuid() : null;
  for (const d of [repo.stateDir, path.dirname(dir), dir]) {
    try {
      fs.mkdirSync(d, { mode: 0o700 });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const refused = () => errors.refused(`${d} is not a directory of this user's: the server does not run there.`);
    const st = fs.lstatSync(d);
    if (!st.isDirectory() || (uid !== null && st.uid !== uid)) throw refused();
    if ((st.mode & 0o7777) === 0o700) continue;
    pauseForTest();
    // Tightened through a descriptor of the directory itself, checked again: a path swapped since the lstat (by
    // whoever may rename a directory above it) must not make this chmod something else through a symlink.
    let fd: number;
    try {
      fd = fs.openSync(d, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW);
    } catch {
      throw refused();
    }
    try {
      const again = fs.fstatSync(fd);
      if (!again.isDirectory() || (uid !== null && again.uid !== uid)) throw refused();
      fs.fchmodSync(fd, 0o700);
    } finally {
      fs.closeSync(fd);
    }
  }
  return dir;
}

export { serverEnabled, serverEnabledWithoutConfig } from '../settings/settings.js';

export interface ServerInfo {
  pid: number;
  runDir: string;
  /** Whether it runs inside a wrapper (true) or as a background process. */
  hosted: boolean;
  since: string;
}

/** The live server of this worktree, if any (from its lock, which names its owner). */
export function serverInfo(repo: Pick<Repo, 'stateDir' | 'gitDir' | 'commonDir'>): ServerInfo | null {
  const dir = runDirOf(repo);
  let owner: LockOwner & { hosted?: boolean };
  try {
    owner = JSON.parse(readPlainFile(path.join(dir, 'server.lock')) ?? '') as LockOwner & { hosted?: boolean };
  } catch {
    return null; // no lock, or a torn one: no live server
  }
  if (typeof owner.pid !== 'number' || !ownerAlive(owner)) return null;
  // Absent while starting or stopping.
  const ready = Number(readPlainFile(path.join(dir, 'pid'))?.trim() ?? '') === owner.pid;
  if (!ready) return null;
  return { pid: owner.pid, runDir: dir, hosted: owner.purpose === 'server (hosted)', since: owner.since };
}

/**
 * Whether a server may still be using the run dir `dir`: the owner of its
 * lock or the pid in its pid file is alive (a reused pid keeps it too), or
 * the lock is being written (unreadable and under a minute old).
 */
export function runDirInUse(dir: string): boolean {
  const lock = path.join(dir, 'server.lock');
  let lockSt: fs.Stats | undefined;
  try {
    lockSt = fs.lstatSync(lock);
  } catch {
    /* no lock */
  }
  if (lockSt) {
    let owner: LockOwner | null = null;
    try {
      owner = JSON.parse(readPlainFile(lock) ?? '') as LockOwner;
    } catch {
      /* being written, or not a lock at all */
    }
    if (owner && typeof owner.pid === 'number' && ownerAlive(owner)) return true;
    if (!owner && Date.now() - lockSt.mtimeMs < 60_000) return true;
  }
  try {
    const pid = Number(readPlainFile(path.join(dir, 'pid'))?.trim() ?? '');
    if (Number.isInteger(pid) && pid > 0 && processExists(pid)) return true;
  } catch {
    /* no pid file */
  }
  return false;
}

/** What a call is: what was asked from the client's request record, its environment and cwd from its /proc entries. */
export interface ServerCall {
  pid: number;
  /** The agentsnap arguments the record states: `hook <agent> <event> …`, `snap …`, `wrap …`, `wrap-end` or `tree`. */
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** The record's payload (a hook's stdin, the JSON of wrap-end or tree). */
  readStdin(): Promise<string>;
}

/**
 * What the server answers: for a hook, ok or one warning line for the
 * agent's stderr (hooks never fail the agent); for a CLI command, its exit
 * code and output.
 */
export type CallHandler = (
  call: ServerCall,
) => Promise<{ warning: string | null; exit?: { code: number; stdout: string; stderr: string }; spawn?: { json: string; stderr: string } }>;

export interface ServerOptions {
  /** Runs inside a wrapper (no idle exit) rather than as a background process. */
  hosted: boolean;
  /** Background servers exit after this long without a call. */
  idleMs?: number;
  handle: CallHandler;
  /** Called for failures outside any call (the server goes on). */
  onError?: (e: unknown) => void;
  /** Whether calls are still to come that the server must wait for (a session it began whose agent runs): no idle exit meanwhile. */
  busy?: () => boolean;
}

export class HookServer {
  private readonly fds: number[] = [];
  private reqFd = -1;
  private reading: Promise<void> = Promise.resolve();
  private stopping = false;
  private queue: Promise<void> = Promise.resolve();
  /** Snapshot requests in progress (served beside the queue: see onData). */
  private readonly trees = new Set<Promise<void>>();
  private buffered = '';
  private lastCall = Date.now();
  private timer: NodeJS.Timeout | null = null;
  private closing: Promise<void> | null = null;
  private readonly closedWaiters: (() => void)[] = [];

  private constructor(
    readonly runDir: string,
    /** The run dir through the descriptor of the directory itself (see start), for every use of the channel's files. */
    private readonly channelDir: { fd: number; path: string },
    private readonly worktree: string,
    private readonly lock: Lock,
    private readonly opts: ServerOptions,
    private readonly slotFds: number[],
  ) {}

  /**
   * Starts the server of `repo`'s worktree. Throws Busy when another live
   * process serves it already (its clients are served either way).
   */
  static async start(repo: Repo, opts: ServerOptions): Promise<HookServer> {
    const dir = prepareRunDir(repo);
    const lock = await acquireLock(path.join(dir, 'server.lock'), { timeoutMs: 0, purpose: opts.hosted ? 'server (hosted)' : 'server' });
    let pinned = -1;
    try {
      // The channel's files are used through a descriptor of the run dir itself: whoever may rename a directory above
      // it (another user who owns the repository's parent) cannot make the server read a record, or remove or create
      // a file, in a directory of theirs. /proc/<pid>/fd/<n>: mkfifo, a child, resolves it too.
      pinned = fs.openSync(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW);
      const st = fs.fstatSync(pinned);
      const uid = typeof process.geteuid === 'function' ? process.geteuid() : null;
      if ((uid !== null && st.uid !== uid) || (st.mode & 0o7777) !== 0o700)
        throw errors.refused(`${dir} is not a directory of this user's: the server does not run there.`);
      const channelDir = { fd: pinned, path: `/proc/${process.pid}/fd/${pinned}` };
      const cdir = channelDir.path;
      // Left by a server that was killed: nothing in them is still waited on.
      for (const name of fs.readdirSync(cdir))
        if (name !== 'server.lock' && name !== 'autostart.stamp' && name !== 'server.log' && !name.startsWith('engine'))
          fs.rmSync(path.join(cdir, name), { force: true, recursive: true });
      const fifos = ['req', ...Array.from({ length: SLOTS }, (_, n) => `slot.${n}`)].map((f) => path.join(cdir, f));
      // Not spawnSync: the baseline snapshot goes on meanwhile (a wrapper starts its server beside it).
      const made = await new Promise<{ status: number | null; stderr: string }>((resolve) => {
        let stderr = '';
        const child = spawn('mkfifo', ['-m', '600', ...fifos], { stdio: ['ignore', 'ignore', 'pipe'] });
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        child.on('error', (e) => resolve({ status: null, stderr: String(e) }));
        child.on('close', (status) => resolve({ status, stderr }));
      });
      if (made.status !== 0) throw errors.internal(`could not create the server's FIFOs: ${made.stderr.trim()}`);
      // O_RDWR: opening never blocks, and the server's own write end keeps the FIFOs alive between clients.
      const flags = fs.constants.O_RDWR | fs.constants.O_NONBLOCK;
      const slotFds = fifos.slice(1).map((f) => fs.openSync(f, flags));
      const server = new HookServer(dir, channelDir, repo.worktree, lock, opts, slotFds);
      server.fds.push(...slotFds);
      // Blocking reads on a pool thread (nothing here may load a network module, not even for a FIFO).
      server.reqFd = fs.openSync(fifos[0] as string, fs.constants.O_RDWR);
      server.reading = server.readRequests();
      if (!opts.hosted) {
        server.timer = setInterval(() => server.housekeeping(), 2000);
        server.timer.unref();
      }
      const tmp = path.join(cdir, `pid.tmp-${process.pid}`);
      fs.writeFileSync(tmp, `${process.pid}\n`, { mode: 0o600 });
      fs.renameSync(tmp, path.join(cdir, 'pid'));
      return server;
    } catch (e) {
      if (pinned >= 0) fs.closeSync(pinned);
      lock.release();
      throw e;
    }
  }

  /** Resolves when the server has shut down. */
  closed(): Promise<void> {
    if (this.closing && this.fds.length === 0) return Promise.resolve();
    return new Promise((r) => this.closedWaiters.push(r));
  }

  private async readRequests(): Promise<void> {
    const buf = Buffer.alloc(4096);
    while (!this.stopping) {
      let n: number;
      try {
        n = await new Promise<number>((resolve, reject) =>
          fs.read(this.reqFd, buf, 0, buf.length, null, (e, got) => (e ? reject(e) : resolve(got))),
        );
      } catch (e) {
        if (!this.stopping) this.opts.onError?.(e);
        return;
      }
      if (this.stopping) return;
      this.onData(buf.subarray(0, n));
    }
  }

  private onData(chunk: Buffer): void {
    this.buffered += chunk.toString('latin1');
    let nl: number;
    while ((nl = this.buffered.indexOf('\n')) >= 0) {
      const line = this.buffered.slice(0, nl);
      this.buffered = this.buffered.slice(nl + 1);
      const m = /^(\d+) (\d+)$/.exec(line);
      if (!m) continue;
      const slot = Number(m[1]);
      const pid = Number(m[2]);
      if (slot >= SLOTS) continue;
      this.lastCall = Date.now();
      // What was asked: the client's request record, read now (it is written before the request line).
      const record = readRecord(path.join(this.channelDir.path, `in.${slot}`));
      if (!record) {
        // Left to the client (its record and claim too): it takes the Node path.
        this.queue = this.queue.then(() => this.writeReply(this.slotFds[slot] as number, `${pid} refused\n`));
        continue;
      }
      if (record.args[0] === 'tree') {
        // A wrapper's snapshot request holds its session's lock while it waits: behind a queued hook call of that
        // session (waiting for the same lock) it would wait for that call's lock timeout. It takes the content lock
        // in the handler, like any snapshot, so it runs beside the queue.
        const t = this.serve(slot, pid, record);
        this.trees.add(t);
        void t.finally(() => this.trees.delete(t));
        continue;
      }
      // One call at a time: calls of one session serialise on its lock anyway.
      this.queue = this.queue.then(() => this.serve(slot, pid, record));
    }
  }

  private async serve(slot: number, pid: number, record: CallRecord): Promise<void> {
    let reply: string;
    try {
      const call = readCall(pid, record);
      const res = await this.opts.handle(call);
      const b64 = (t: string) => (t ? Buffer.from(t).toString('base64') : '-');
      if (res.spawn) reply = `${pid} spawn ${b64(res.spawn.json)} ${b64(res.spawn.stderr)}`;
      else if (res.exit) reply = `${pid} exit ${res.exit.code} ${b64(res.exit.stdout)} ${b64(res.exit.stderr)}`;
      else reply = res.warning ? `${pid} warn ${res.warning.replace(/[\r\n]+/g, ' ')}` : `${pid} ok`;
    } catch (e) {
      this.opts.onError?.(e);
      reply = `${pid} warn agentsnap: warning: server failed on this call: ${(e instanceof Error ? e.message : String(e)).split('\n')[0]}`;
    }
    this.lastCall = Date.now();
    await this.writeReply(this.slotFds[slot] as number, `${reply}\n`);
    fs.rmSync(path.join(this.channelDir.path, `in.${slot}`), { force: true });
    fs.rmSync(path.join(this.channelDir.path, `claim.${slot}`), { force: true });
  }

  /**
   * Writes a reply whole: a reply FIFO holds 64 KiB, and a reply can be longer (a wrapper's final snapshot lists
   * every changed path), so a write that would block waits for the client to read. A client that stops reading
   * (killed) is given up on after 30 s, and what it left in the FIFO is read away: the next client of the slot must
   * not find the half of someone else's line before its own.
   */
  private async writeReply(fd: number, text: string): Promise<void> {
    let buf = Buffer.from(text);
    const deadline = Date.now() + 30_000;
    while (buf.length > 0) {
      try {
        buf = buf.subarray(fs.writeSync(fd, buf));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EAGAIN' || Date.now() > deadline) {
          this.opts.onError?.(e);
          const sink = Buffer.alloc(64 * 1024);
          try {
            while (fs.readSync(fd, sink, 0, sink.length, null) > 0);
          } catch {
            /* empty (EAGAIN) */
          }
          return;
        }
        await new Promise((r) => setTimeout(r, 2));
      }
    }
  }

  private housekeeping(): void {
    const idleMs = this.opts.idleMs ?? 10 * 60_000;
    // Gone run dir or worktree: the repository, agentsnap's state or a session worktree was removed.
    if (
      !fs.existsSync(path.join(this.channelDir.path, 'pid')) ||
      !fs.existsSync(this.worktree) ||
      (Date.now() - this.lastCall > idleMs && !this.opts.busy?.())
    ) {
      void this.close();
      return;
    }
    // Claims of clients killed before they sent their request would hold a slot forever.
    for (let n = 0; n < SLOTS; n++) {
      const claim = path.join(this.channelDir.path, `claim.${n}`);
      try {
        // Never through a FIFO or a symlink (an agent step may plant one here): a blocking read would wedge the server.
        const fd = fs.openSync(claim, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
        let text: string | null = null;
        try {
          if (fs.fstatSync(fd).isFile()) text = fs.readFileSync(fd, 'utf8');
        } finally {
          fs.closeSync(fd);
        }
        const pid = text === null ? 0 : Number(text.trim());
        if (text === null || (pid > 0 && !processExists(pid))) {
          fs.rmSync(path.join(this.channelDir.path, `in.${n}`), { force: true });
          fs.rmSync(claim, { force: true });
        }
      } catch {
        /* no claim */
      }
    }
  }

  /** Stops taking calls (the pid file goes first), answers those already sent, then closes. */
  close(): Promise<void> {
    if (this.closing) return this.closing;
    this.closing = (async () => {
      if (this.timer) clearInterval(this.timer);
      fs.rmSync(path.join(this.channelDir.path, 'pid'), { force: true });
      // A client that read the pid just before it went is given a moment to send its request.
      await new Promise((r) => setTimeout(r, this.opts.hosted ? 50 : 300));
      // Calls in progress finish (a stuck one is given up on: its client falls back when the slot closes).
      await Promise.race([Promise.all([this.queue, ...this.trees]), new Promise((r) => setTimeout(r, 10_000).unref())]);
      // Wake the pending read with a line of our own, then close.
      this.stopping = true;
      try {
        fs.writeSync(this.reqFd, '\n');
      } catch {
        /* closed already */
      }
      await this.reading;
      try {
        fs.closeSync(this.reqFd);
      } catch {
        /* closed already */
      }
      for (const fd of this.fds.splice(0)) {
        try {
          fs.closeSync(fd);
        } catch {
          /* closed already */
        }
      }
      for (const name of ['req', ...['slot', 'claim', 'in'].flatMap((k) => Array.from({ length: SLOTS }, (_, n) => `${k}.${n}`))]) {
        fs.rmSync(path.join(this.channelDir.path, name), { force: true });
      }
      fs.closeSync(this.channelDir.fd);
      this.lock.release();
      for (const w of this.closedWaiters.splice(0)) w();
    })();
    return this.closing;
  }
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** What a client asked (its request record, channel.ts): the agentsnap arguments and the payload. */
export interface CallRecord {
  args: string[];
  payload: Buffer;
}

/** The request record in `file` (never through a symlink), or null when there is none or it is not one. */
export function readRecord(file: string): CallRecord | null {
  const bytes = readPlainBytes(file);
  const record = bytes && decodeRecord(bytes);
  return record && record.args.length > 0 ? record : null;
}

/** A client's call: what it asked (its record), its environment and working directory from /proc/<pid>/; only a process of this same user is served. */
export function readCall(pid: number, record: CallRecord): ServerCall {
  const proc = `/proc/${pid}`;
  const st = fs.statSync(proc);
  if (typeof process.getuid === 'function' && st.uid !== process.getuid()) {
    throw errors.refused(`process ${pid} belongs to another user.`);
  }
  const env: NodeJS.ProcessEnv = {};
  for (const kv of fs.readFileSync(`${proc}/environ`).toString('utf8').split('\0')) {
    const eq = kv.indexOf('=');
    if (eq > 0) env[kv.slice(0, eq)] = kv.slice(eq + 1);
  }
  const cwd = fs.readlinkSync(`${proc}/cwd`);
  return {
    pid,
    args: record.args,
    env,
    cwd,
    readStdin: async () => record.payload.toString('utf8'),
  };
}

/**
 * Starts a background server for `repo`'s worktree unless one runs; returns
 * without waiting for it (the next call finds it). Its output goes to
 * `<run>/server.log`.
 */
export function spawnBackgroundServer(
  repo: Pick<Repo, 'stateDir' | 'gitDir' | 'commonDir' | 'worktree' | 'callerEnv' | 'shadow'>,
): ChildProcess | null {
  // The clients find a server through the worktree's .git: a shadow repository's directory has none to find it by.
  if (repo.shadow) return null;
  try {
    const dir = prepareRunDir(repo);
    // A link in the log's place is replaced, never written through (src/base/state-dir.ts).
    const log = openStateLog(runDirLayout.serverLog(dir));
    // A small young generation: the heap grows in bursts during full scans (peak RSS 127 -> 103 MB at 100k files);
    // --optimize-for-size collects sooner as the heap grows (bench hook rows at 1M files, same day: 253-318 -> 208 MiB,
    // per call unchanged: 54-102 -> 73-77 ms; at 100k 103 -> 88 MiB, 113 -> 117 ms).
    const child = spawn(process.execPath, ['--max-semi-space-size=1', '--optimize-for-size', AGENTSNAP_JS, 'server', 'run'], {
      cwd: repo.worktree,
      env: repo.callerEnv,
      detached: true,
      stdio: ['ignore', log, log],
    });
    child.unref();
    fs.closeSync(log);
    return child;
  } catch {
    /* a server is an optimisation: without one, calls take the Node path (`server start` checks the run dir and log first, so it names what failed) */
    return null;
  }
}

/**
 * After a call that took the Node path: starts a background server for the
 * next ones, unless one runs, it is switched off, or an attempt was made in
 * the last 30 s (a server that cannot start must not cost every call a spawn).
 */
export function autoStartServer(
  repo: Pick<Repo, 'stateDir' | 'gitDir' | 'commonDir' | 'worktree' | 'callerEnv' | 'shadow'>,
  settings: Pick<Settings, 'server'>,
): void {
  if (repo.shadow) return; // no client would find it (spawnBackgroundServer)
  if (!serverEnabled(repo.callerEnv, settings) || serverInfo(repo)) return;
  let dir: string;
  try {
    dir = prepareRunDir(repo);
  } catch {
    return; // not a run dir of this user's: no server, calls take the Node path
  }
  const stamp = runDirLayout.autostartStamp(dir);
  try {
    // lstat: the stamp's own time (a link in its place is replaced below, its target never written).
    if (Date.now() - (fs.lstatSync(stamp, { throwIfNoEntry: false })?.mtimeMs ?? 0) < 30_000) return;
    ensureStateDir(dir, repo.stateDir);
    replaceStateFile(stamp, `${process.pid}\n`);
  } catch {
    return; /* an optimisation only: without a stamp, no spawn (one that cannot be timed must not run on every call) */
  }
  spawnBackgroundServer(repo);
}

/** Waits (up to timeoutMs) until the worktree's server is ready. */
export async function waitForServer(
  repo: Pick<Repo, 'stateDir' | 'gitDir' | 'commonDir'>,
  timeoutMs: number,
  child: ChildProcess | null = null,
): Promise<ServerInfo | null> {
  const deadline = Date.now() + timeoutMs;
  // A server that exits before it serves is not waited for to the deadline.
  let exited = false;
  child?.once('exit', () => (exited = true));
  for (;;) {
    const info = serverInfo(repo);
    if (info || exited || Date.now() >= deadline) return info;
    await new Promise((r) => setTimeout(r, 20));
  }
}
