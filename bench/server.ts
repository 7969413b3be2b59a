// The warm per-worktree agentsnap server, as the bench sees it: whether this
// agentsnap has one (`agentsnap server status --json`; older builds answer a
// usage error), its pid and peak memory, and stopping it when a scenario ends,
// when the bench ends, and on error or interrupt, so no process outlives the
// run. Works the same with hook commands that never start a server.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { BIN, type BenchEnv } from './measure.js';

export interface ServerInfo {
  /** This agentsnap has the `server` command. */
  supported: boolean;
  running: boolean;
  pid: number | null;
  /** Inotify watches the server says it holds (`watches` in its status JSON, when this agentsnap reports it). */
  watches: number | null;
}

const NONE: ServerInfo = { supported: false, running: false, pid: null, watches: null };

/** Worktrees whose server the bench may have started (through hook calls), stopped again by stopAllServers. */
const touched = new Map<string, BenchEnv>();
/** Every server pid status reported, by worktree: stopping checks they are gone, even if the server lost its pid file. */
const seen = new Map<string, Set<number>>();
let supported: boolean | null = null;

function cli(env: BenchEnv, dir: string, args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd: dir, env: env.env, encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

/** Finds a positive integer `pid` in the status JSON, wherever the shape puts it. */
function findPid(v: unknown): number | null {
  if (!v || typeof v !== 'object') return null;
  const o = v as Record<string, unknown>;
  if (typeof o.pid === 'number' && Number.isInteger(o.pid) && o.pid > 0) return o.pid;
  for (const x of Object.values(o)) {
    const p = findPid(x);
    if (p) return p;
  }
  return null;
}

export function serverStatus(env: BenchEnv, dir: string): ServerInfo {
  if (supported === false) return NONE;
  const r = cli(env, dir, ['server', 'status', '--json']);
  if (r.status === 2 && /unknown command/i.test(r.stdout + r.stderr)) {
    supported = false;
    return NONE;
  }
  supported = true;
  touched.set(dir, env);
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(r.stdout);
  } catch {
    return { supported: true, running: false, pid: null, watches: null };
  }
  const pid = findPid(parsed);
  if (pid) seen.set(dir, (seen.get(dir) ?? new Set()).add(pid));
  const obj = parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : {};
  const running = typeof obj.running === 'boolean' ? obj.running : pid !== null && alive(pid);
  return { supported: true, running, pid: running ? pid : null, watches: running ? findCount(parsed, 'watches') : null };
}

/** A non-negative integer under `key` anywhere in the status JSON (read defensively: the field is new). */
function findCount(v: unknown, key: string): number | null {
  if (!v || typeof v !== 'object') return null;
  const o = v as Record<string, unknown>;
  const x = o[key];
  if (typeof x === 'number' && Number.isInteger(x) && x >= 0) return x;
  for (const y of Object.values(o)) {
    const n = findCount(y, key);
    if (n !== null) return n;
  }
  return null;
}

/** Inotify watches a process holds: the `inotify wd:` lines of its /proc/<pid>/fdinfo/* (null when unreadable). */
export function inotifyWatchesOf(pid: number): number | null {
  let fds: string[];
  try {
    fds = fs.readdirSync(`/proc/${pid}/fdinfo`);
  } catch {
    return null;
  }
  let n = 0;
  for (const fd of fds) {
    let text: string;
    try {
      text = fs.readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8');
    } catch {
      continue; // closed meanwhile
    }
    if (!text.includes('inotify wd:')) continue;
    for (let i = text.indexOf('inotify wd:'); i >= 0; i = text.indexOf('\ninotify wd:', i + 1)) n++;
  }
  return n;
}

/** The server's inotify watches: its own figure when its status gives one, else counted from /proc. */
export function serverWatches(info: ServerInfo): { watches: number; from: 'status' | 'fdinfo' } | null {
  if (info.watches !== null) return { watches: info.watches, from: 'status' };
  const n = info.pid ? inotifyWatchesOf(info.pid) : null;
  return n === null ? null : { watches: n, from: 'fdinfo' };
}

/** fs.inotify.max_user_watches, the per-user limit every server of this user shares (null off Linux). */
export function maxUserWatches(): number | null {
  try {
    return Number(fs.readFileSync('/proc/sys/fs/inotify/max_user_watches', 'utf8').trim());
  } catch {
    return null;
  }
}

/** Remembers a worktree where hook calls ran, so its server is stopped even if the run dies before asking. */
export function noteWorktree(env: BenchEnv, dir: string): void {
  touched.set(dir, env);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function sleepMs(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Stops the worktree's server, if this agentsnap has one: `agentsnap server
 * stop`, then waits for every server pid seen in this worktree to exit; one
 * still there after 5 s gets SIGTERM, then SIGKILL after 3 s more (they are
 * processes this bench started, through its hook calls). Returns a warning
 * when something lingered.
 */
export function stopServer(env: BenchEnv, dir: string): string | null {
  if (supported === false) return null;
  const before = serverStatus(env, dir);
  if (!before.supported) return null;
  cli(env, dir, ['server', 'stop']);
  touched.delete(dir);
  const pids = [...(seen.get(dir) ?? [])];
  seen.delete(dir);
  const lingering: string[] = [];
  for (const pid of pids) {
    if (waitGone(pid, 5000)) continue;
    signal(pid, 'SIGTERM');
    if (waitGone(pid, 3000)) {
      lingering.push(`${pid} (SIGTERM)`);
      continue;
    }
    signal(pid, 'SIGKILL');
    lingering.push(`${pid} (SIGKILL)`);
  }
  return lingering.length ? `server process still running after \`agentsnap server stop\` in ${dir}: ${lingering.join(', ')}` : null;
}

function waitGone(pid: number, ms: number): boolean {
  for (let waited = 0; waited < ms && alive(pid); waited += 50) sleepMs(50);
  return !alive(pid);
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    /* gone meanwhile */
  }
}

/** The bench's exit path (normal end, error, interrupt): every server it may have started is stopped. */
export function stopAllServers(log: (s: string) => void): void {
  for (const [dir, env] of [...touched]) {
    const warning = stopServer(env, dir);
    if (warning) log(`warning: ${warning}`);
  }
  touched.clear();
}

/** Peak resident memory (VmHWM) of a running process, MiB; null when unreadable (not Linux, gone). */
export function vmHwmMiB(pid: number): number | null {
  try {
    const m = /^VmHWM:\s+(\d+)\s+kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/** agentsnap Node processes (by /proc: cwd is `dir`, an argument is agentsnap.js or a module of dist/), and whether each is a server. */
function agentsnapProcessesIn(dir: string): { pid: number; server: boolean }[] {
  const out: { pid: number; server: boolean }[] = [];
  let real = dir;
  try {
    real = fs.realpathSync(dir);
  } catch {
    return out;
  }
  for (const name of fs.readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      if (fs.readlinkSync(`/proc/${pid}/cwd`) !== real) continue;
      const args = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      // The CLI, and what it starts detached: the server, the end-of-session pack (dist/runtime/maintain-main.js).
      if (!args.some((a) => a.endsWith('agentsnap.js') || /[\\/]dist[\\/].*\.js$/.test(a))) continue;
      out.push({ pid, server: args.includes('server') && args.includes('run') });
    } catch {
      /* gone, or not ours */
    }
  }
  return out;
}

/**
 * Before agentsnap's state of a bench repository is deleted: a server that was
 * still starting when `server stop` asked (no pid file yet: it answered "none")
 * is stopped, and background work (the end-of-session pack) gets 10 s to end
 * before it is killed, so nothing writes into the directory being removed.
 */
export function quiesceAgentsnap(dir: string): void {
  if (process.platform !== 'linux') return;
  for (let waited = 0; waited < 10_000; waited += 50) {
    const procs = agentsnapProcessesIn(dir);
    if (procs.length === 0) return;
    for (const p of procs) if (p.server) signal(p.pid, 'SIGTERM');
    sleepMs(50);
  }
  for (const p of agentsnapProcessesIn(dir)) signal(p.pid, 'SIGKILL');
  sleepMs(100);
}

/** CPU ticks (user + system, its reaped children's included) a process has used, from /proc/<pid>/stat (null when gone or unreadable). */
function cpuTicks(pid: number): number | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
  } catch {
    return null;
  }
}

/** CPU ticks its children running now have used (a server's git pack-objects after a session; its long-lived git processes idle). */
function childTicks(pid: number): number {
  let kids: string[];
  try {
    kids = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
  } catch {
    return 0;
  }
  return kids.reduce((sum, k) => sum + (cpuTicks(Number(k)) ?? 0), 0);
}

/**
 * Waits (up to timeoutMs) until the worktree's background server, if one
 * runs, has its watcher up and has used no CPU for quietMs: a sample of the
 * session fixed cost, or of its baseline, is not taken while the server is
 * still setting up its watches or sweeping the worktree (work a user's
 * sessions, minutes apart, do not wait for). Returns whether it settled.
 */
export function waitServerQuiet(env: BenchEnv, dir: string, timeoutMs = 180_000, quietMs = 600): boolean {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const info = serverStatus(env, dir);
    if (!info.running || !info.pid) return true;
    if (info.watches !== null) break;
    if (Date.now() >= deadline) return false;
    sleepMs(100);
  }
  const pid = serverStatus(env, dir).pid;
  if (!pid) return true;
  let last = (cpuTicks(pid) ?? 0) + childTicks(pid);
  let since = Date.now();
  while (Date.now() < deadline) {
    sleepMs(50);
    const own = cpuTicks(pid);
    if (own === null) return true;
    const now = own + childTicks(pid);
    if (now !== last) {
      last = now;
      since = Date.now();
    } else if (Date.now() - since >= quietMs) return true;
  }
  return false;
}
