// What the warm server's file watcher holds, published for `server status`,
// `status` and `doctor` (which run in other processes): `<run dir>/watcher.json`,
// written by the server when the watcher's state or its number of watches
// changes (at most once a second for the counters), removed when it stops.
// The state of a dead server is never shown: the file names its pid.
import fs from 'node:fs';
import path from 'node:path';
import { readStateFile, replaceStateFile } from '../base/state-dir.js';

export const WATCH_STATE_FILE = 'watcher.json';

/** What users read (`server status --json`'s `watcher`, `status --json`'s `watcher`). */
export interface WatcherReport {
  /** watching: snapshots follow the watcher; degraded: it gave up, every snapshot is a full scan. */
  state: 'watching' | 'degraded';
  /** inotify watches the server holds now (one per watched directory, one for its sync cookies; 0 when degraded). */
  watches: number;
  /** Why it is degraded (null while watching). */
  reason: string | null;
  /** ENOSPC (no inotify watch left), EMFILE (no inotify instance), null otherwise. */
  code: 'ENOSPC' | 'EMFILE' | null;
  /** The limit that was hit, as this process sees it (e.g. `fs.inotify.max_user_watches` and its value). */
  limit: { name: string; value: number | null } | null;
  /** What the user can do: the command that raises the limit, and how to keep it (null while watching). */
  hint: string | null;
  /** When it degraded. */
  since: string | null;
  /** Snapshots the server's engine took by full scan / incrementally since it started. */
  fullScans: number;
  incremental: number;
  /** What the last full scan took (ms): the cost of every snapshot while degraded. */
  lastFullScanMs: number | null;
  /** When this report was written. */
  updated: string;
}

interface StateFile extends WatcherReport {
  pid: number;
}

/** The watches a user may hold as the kernel enforces it for this process (its user namespace's). */
function readLimit(file: string): number | null {
  try {
    const n = Number(fs.readFileSync(file, 'utf8').trim());
    return Number.isFinite(n) ? n : null;
  } catch {
    return null; // no such limit here: unknown
  }
}

export const RAISED_WATCHES = 524288;
export const RAISED_INSTANCES = 1024;

/** The limit behind an inotify failure and how to raise it (now and for good). */
export function inotifyLimit(code: 'ENOSPC' | 'EMFILE' | null): { limit: WatcherReport['limit']; hint: string | null } {
  if (code === null) return { limit: null, hint: null };
  const [key, file, value] =
    code === 'ENOSPC'
      ? (['fs.inotify.max_user_watches', '/proc/sys/user/max_inotify_watches', RAISED_WATCHES] as const)
      : (['fs.inotify.max_user_instances', '/proc/sys/user/max_inotify_instances', RAISED_INSTANCES] as const);
  const hint =
    `Raise the limit: \`sudo sysctl ${key}=${value}\`; to keep it after a reboot: ` +
    `\`echo ${key}=${value} | sudo tee /etc/sysctl.d/60-agentsnap-inotify.conf\`. ` +
    `Then \`agentsnap server stop\` (a wrapper's server: start the agent again), so the next server watches.` +
    (code === 'EMFILE' ? ' If the open-file limit is what ran out, raise `ulimit -n` instead.' : '');
  return { limit: { name: key, value: readLimit(file) }, hint };
}

/** Writes the report (atomically: a reader sees the old one or the new one). */
export function writeWatchState(runDir: string, report: WatcherReport): void {
  const file = path.join(runDir, WATCH_STATE_FILE);
  const body: StateFile = { pid: process.pid, ...report };
  try {
    replaceStateFile(file, `${JSON.stringify(body)}\n`);
  } catch {
    // Status only: a failed write costs the user a stale line, never a snapshot.
  }
}

export function removeWatchState(runDir: string): void {
  fs.rmSync(path.join(runDir, WATCH_STATE_FILE), { force: true });
}

/** The report of the server with this pid, or null (none written yet, another server's, unreadable). */
export function readWatchState(runDir: string, pid: number): WatcherReport | null {
  try {
    const parsed = JSON.parse(readStateFile(path.join(runDir, WATCH_STATE_FILE))?.toString('utf8') ?? 'null') as StateFile | null;
    if (!parsed || parsed.pid !== pid) return null;
    const { pid: _pid, ...report } = parsed;
    return report;
  } catch {
    return null; // no report yet, or a torn one: none
  }
}

export const ENGINE_FAILURE_FILE = 'failed-engine.json';

/** What went wrong with the server's snapshot engine, for doctor: the engine did not start, or its warm-up snapshot failed. */
export interface EngineFailure {
  what: 'start' | 'warm-up';
  error: string;
  at: string;
}

/** Records a failure of this server's engine (the server goes on: without the engine every snapshot is a full scan). */
export function writeEngineFailure(runDir: string, what: EngineFailure['what'], e: unknown): void {
  const body: EngineFailure & { pid: number } = {
    pid: process.pid,
    what,
    error: e instanceof Error ? e.message : String(e),
    at: new Date().toISOString(),
  };
  try {
    replaceStateFile(path.join(runDir, ENGINE_FAILURE_FILE), `${JSON.stringify(body)}\n`);
  } catch {
    // Status only, as the watcher's report: the server's log (server.log) has the failure too.
  }
}

/** The engine failure recorded by the server with this pid, or null (none, another server's). */
export function readEngineFailure(runDir: string, pid: number): EngineFailure | null {
  const raw = readStateFile(path.join(runDir, ENGINE_FAILURE_FILE));
  if (!raw) return null;
  let parsed: (EngineFailure & { pid: number }) | null;
  try {
    parsed = JSON.parse(raw.toString('utf8')) as (EngineFailure & { pid: number }) | null;
  } catch {
    return null; // written whole (temp file + rename): only a hand-edited file is not JSON, and it names no live server
  }
  if (!parsed || parsed.pid !== pid) return null;
  return { what: parsed.what, error: String(parsed.error), at: String(parsed.at) };
}

/** One line for text output: the state, why, what it costs. */
export function watcherLine(w: WatcherReport): string {
  if (w.state === 'watching') return `watcher: ${w.watches} inotify watches`;
  const cost = w.lastFullScanMs !== null ? ` (the last took ${Math.round(w.lastFullScanMs)} ms)` : '';
  return `watcher: degraded, every snapshot is a full scan${cost}: ${w.reason}`;
}
