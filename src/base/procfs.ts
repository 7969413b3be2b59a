// Processes as Linux's /proc shows them: the ones whose environment carries a
// marker (wrap gives the agent AGENTSNAP_SESSION, and every process it starts
// inherits it, even after it is re-parented away), when each started, its
// command line and the TCP ports it listens on, and stopping one only while it
// is provably the same process (pid reuse). Elsewhere than Linux: nothing found.
import fs from 'node:fs';

export interface ProcessInfo {
  pid: number;
  ppid: number;
  /** Start time, ms since the epoch (from the boot-relative start in ticks: ~10 ms precision). */
  startedAtMs: number;
  /** The kernel's start time in clock ticks since boot: with the pid, the process's identity. */
  startTicks: number;
  argv: string[];
  /** TCP ports it listens on (IPv4 and IPv6). */
  ports: number[];
}

/** Clock ticks per second (USER_HZ): 100 on every Linux ABI Node runs on. */
const HZ = 100;

function read(file: string): string | null {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return null; // the process is gone, or no /proc: unknown to the caller
  }
}

/** pid's parent, start ticks and state from /proc/<pid>/stat (the command name in parentheses may hold anything). */
function statOf(pid: number): { ppid: number; startTicks: number; state: string } | null {
  const text = read(`/proc/${pid}/stat`);
  if (!text) return null;
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // After the name: state(3) ppid(4) … starttime(22), numbered from 1 with pid and name as 1 and 2.
  const state = fields[0] ?? '';
  const ppid = Number(fields[1]);
  const startTicks = Number(fields[19]);
  return Number.isFinite(ppid) && Number.isFinite(startTicks) ? { ppid, startTicks, state } : null;
}

function envHas(pid: number, marker: string): boolean {
  try {
    // Every entry ends in NUL: the marker is the first entry or follows a NUL.
    const env = fs.readFileSync(`/proc/${pid}/environ`);
    return env.subarray(0, marker.length + 1).equals(Buffer.from(`${marker}\0`)) || env.includes(Buffer.from(`\0${marker}\0`));
  } catch {
    return false; // gone, or another user's: not one of ours
  }
}

/** Socket inodes of TCP sockets in LISTEN state, with their port. */
function listeningSockets(): Map<string, number> {
  const out = new Map<string, number>();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const text = read(file);
    if (!text) continue;
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f[3] !== '0A') continue;
      const port = parseInt(f[1]?.split(':')[1] ?? '', 16);
      if (f[9] && Number.isFinite(port)) out.set(f[9], port);
    }
  }
  return out;
}

function portsOf(pid: number, sockets: Map<string, number>): number[] {
  const ports = new Set<number>();
  let fds: string[];
  try {
    fds = fs.readdirSync(`/proc/${pid}/fd`);
  } catch {
    return []; // gone, or another user's: no ports known
  }
  for (const fd of fds) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
      const port = m ? sockets.get(m[1] as string) : undefined;
      if (port !== undefined) ports.add(port);
    } catch {
      /* closed meanwhile */
    }
  }
  return [...ports].sort((a, b) => a - b);
}

/** ms since the epoch of a start time in ticks since boot (now minus the uptime since then; /proc/uptime is in 10 ms). */
function startTimeMs(startTicks: number): number {
  const uptime = Number((read('/proc/uptime') ?? '0').split(' ')[0]);
  return Date.now() - (uptime - startTicks / HZ) * 1000;
}

/**
 * The live processes of this user (root: every user's) whose environment holds `marker` (`NAME=value`),
 * but this process. Zombies (exited, not yet reaped) are not live. Never throws.
 */
export function processesWithEnv(marker: string): ProcessInfo[] {
  let pids: number[];
  try {
    pids = fs
      .readdirSync('/proc')
      .filter((n) => /^\d+$/.test(n))
      .map(Number);
  } catch {
    return []; // no /proc (not Linux): no process found, as documented (never throws)
  }
  const uid = process.getuid?.() ?? -1;
  const found: ProcessInfo[] = [];
  let sockets: Map<string, number> | null = null;
  for (const pid of pids) {
    if (pid === process.pid) continue;
    try {
      if (uid !== 0 && fs.statSync(`/proc/${pid}`).uid !== uid) continue;
    } catch {
      continue; // gone meanwhile: not a process to list
    }
    if (!envHas(pid, marker)) continue;
    const st = statOf(pid);
    if (!st || st.state === 'Z' || st.state === 'X') continue;
    const argv = (read(`/proc/${pid}/cmdline`) ?? '').split('\0').filter((a, i, all) => a !== '' || i < all.length - 1);
    sockets ??= listeningSockets();
    found.push({
      pid,
      ppid: st.ppid,
      startTicks: st.startTicks,
      startedAtMs: startTimeMs(st.startTicks),
      argv,
      ports: portsOf(pid, sockets),
    });
  }
  return found;
}

/** Whether `p` is still running as the same process (same pid and start, still marked, not a zombie). */
export function stillRunning(p: Pick<ProcessInfo, 'pid' | 'startTicks'>, marker: string): boolean {
  const st = statOf(p.pid);
  return !!st && st.startTicks === p.startTicks && st.state !== 'Z' && st.state !== 'X' && envHas(p.pid, marker);
}

export type StopResult = 'terminated' | 'killed' | 'gone' | 'failed';

/**
 * Stops `p` if it is still the same process: SIGTERM, then SIGKILL once `graceMs` passed; 'gone' when it had
 * already ended (or is another process now). Waits for it to end, polling (bounded): never signals a pid
 * that was reused meanwhile, since each signal is sent right after checking the start time again.
 */
export async function stopProcess(p: Pick<ProcessInfo, 'pid' | 'startTicks'>, marker: string, graceMs: number): Promise<StopResult> {
  const signal = (sig: NodeJS.Signals): boolean => {
    if (!stillRunning(p, marker)) return false;
    try {
      process.kill(p.pid, sig);
      return true;
    } catch {
      return false; // gone meanwhile, or no longer ours: nothing to signal
    }
  };
  const endedWithin = async (ms: number): Promise<boolean> => {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      if (!stillRunning(p, marker)) return true;
      await new Promise((r) => setTimeout(r, 25));
    }
    return !stillRunning(p, marker);
  };
  if (!signal('SIGTERM')) return 'gone';
  if (await endedWithin(graceMs)) return 'terminated';
  if (!signal('SIGKILL')) return 'terminated';
  return (await endedWithin(5000)) ? 'killed' : 'failed';
}
