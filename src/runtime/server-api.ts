// Public API of the warm server: status, start (in the background), stop, and
// run (the background process itself). See src/server/channel.ts for the channel.
import fs from 'node:fs';
import { type Repo } from '../git/repo.js';
import { repoFor } from '../api/open.js';
import { loadSettings } from '../settings/settings.js';
import { errors } from '../base/errors.js';
import { ensureStateDir, openStateLog, readStateFile, runDirLayout } from '../base/state-dir.js';
import type { RepoOptions } from '../api/api.js';
import { parseHookArgs, runHook } from './hook.js';
import { hostWorktreeServer, type ServerCalls, type WorktreeServerOptions } from '../server/serve.js';
import { readWatchState, type WatcherReport } from '../server/watch-state.js';
import {
  autoStartServer,
  runDirOf,
  serverEnabled,
  serverEnabledWithoutConfig,
  serverInfo,
  spawnBackgroundServer,
  waitForServer,
  type HookServer,
  type ServerInfo,
} from '../server/server.js';
import { refuseInShadow } from '../git/shadow.js';

export interface ServerStatus {
  /** Whether a server may run here (Linux, agentsnap.server, AGENTSNAP_SERVER). */
  enabled: boolean;
  running: boolean;
  pid: number | null;
  /** Hosted by a wrapper (stops with it) rather than a background process. */
  hosted: boolean;
  since: string | null;
  runDir: string;
  /** inotify watches the running server holds (null: no server, or its watcher not up yet). */
  watches: number | null;
  /** Its file watcher: watching, or degraded (every snapshot a full scan) with why and the command that raises the limit. */
  watcher: WatcherReport | null;
}

function statusOf(repo: Repo, enabled: boolean, info: ServerInfo | null): ServerStatus {
  const watcher = info ? readWatchState(info.runDir, info.pid) : null;
  return {
    enabled,
    running: info !== null,
    pid: info?.pid ?? null,
    hosted: info?.hosted ?? false,
    since: info?.since ?? null,
    runDir: runDirOf(repo),
    watches: watcher?.watches ?? null,
    watcher,
  };
}

/** `agentsnap server status`. */
export async function serverStatus(opts: RepoOptions = {}): Promise<ServerStatus> {
  const repo = await repoFor(opts);
  const settings = await loadSettings(repo);
  return statusOf(repo, serverEnabled(repo.callerEnv, settings), serverInfo(repo));
}

/** After a `snap` that took the Node path: starts a background server for the next ones (see autoStartServer). */
export async function autoStartServerFor(opts: RepoOptions = {}): Promise<void> {
  // Switched off: no repository to open again (two git processes) after every cold snap.
  if (serverEnabledWithoutConfig(opts.env ?? process.env) === false) return;
  try {
    const repo = await repoFor(opts);
    autoStartServer(repo, await loadSettings(repo));
  } catch {
    /* an optimisation only */
  }
}

/** `agentsnap server start`: a background server for this worktree, unless one runs. */
export async function serverStart(opts: RepoOptions = {}): Promise<ServerStatus> {
  const repo = await repoFor(opts);
  refuseInShadow(repo, 'the warm server');
  const settings = await loadSettings(repo);
  const enabled = serverEnabled(repo.callerEnv, settings);
  if (!enabled) {
    throw errors.refused('the agentsnap server is switched off here.', {
      hint:
        process.platform !== 'linux'
          ? 'It needs Linux (/proc); hooks and snap take the Node path instead.'
          : 'Unset AGENTSNAP_SERVER, or run `git config agentsnap.server true`.',
    });
  }
  const running = serverInfo(repo);
  if (running) return statusOf(repo, enabled, running);
  const log = runDirLayout.serverLog(runDirOf(repo));
  // What spawnBackgroundServer swallows (a server is an optimisation for the hooks' auto-start) reaches the user
  // here: a run dir that is a link (UnsafeStateFile, exit 3), a log that cannot be created.
  ensureStateDir(runDirOf(repo), repo.stateDir);
  fs.closeSync(openStateLog(log));
  const logStart = fs.lstatSync(log).size;
  const child = spawnBackgroundServer(repo);
  const info = await waitForServer(repo, 10_000, child);
  if (!info) {
    const why = whyFromLog(log, logStart);
    throw errors.internal(`the agentsnap server did not start${why ? `: ${why}` : '.'}`, {
      hint: `See ${log}. Hooks and snap keep working without it (they take the Node path).`,
      data: { runDir: runDirOf(repo), log, exitCode: child?.exitCode ?? null },
    });
  }
  return statusOf(repo, enabled, info);
}

/** `agentsnap server stop`: stops a background server (a wrapper's stops when its agent exits). */
export async function serverStop(opts: RepoOptions = {}): Promise<ServerStatus> {
  const repo = await repoFor(opts);
  const settings = await loadSettings(repo);
  const enabled = serverEnabled(repo.callerEnv, settings);
  const info = serverInfo(repo);
  if (!info) return statusOf(repo, enabled, null);
  if (info.hosted) {
    throw errors.refused(`the server of this worktree runs inside the wrapper with pid ${info.pid}.`, {
      hint: 'It stops when that agent exits.',
      data: { pid: info.pid },
    });
  }
  process.kill(info.pid, 'SIGTERM');
  const deadline = Date.now() + 10_000;
  while (serverInfo(repo) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  // Gone from serverInfo means its pid file is gone; wait for the process too, so a caller can start another.
  while (Date.now() < deadline) {
    try {
      process.kill(info.pid, 0);
    } catch {
      break; // ESRCH: the process is gone
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  return statusOf(repo, enabled, serverInfo(repo));
}

export interface ServerRunOptions extends RepoOptions {
  /** Exit after this long without a call (default: agentsnap.serverIdle). */
  idleMs?: number;
  /** How the server runs a `snap` the Node client hands it (the CLI passes its snap command; absent: the client runs it). */
  snap?: ServerCalls['snap'];
  /** How it begins a thin wrap client's session (the CLI's wrap command, runServedWrap; absent: such clients run the whole wrap). */
  wrap?: ServerCalls['wrap'];
}

/**
 * Starts the warm server of `repo`'s worktree (throws Busy when one runs already): hook calls run the same
 * runHook as `agentsnap hook`, a `snap` the `snap` given (the CLI's snap command, `runSnap`: the same code as
 * `agentsnap snap`, which calls api.snap).
 */
export async function startWorktreeServer(
  repo: Repo,
  opts: WorktreeServerOptions & { snap?: ServerCalls['snap']; wrap?: ServerCalls['wrap'] },
): Promise<HookServer> {
  const { snap, wrap, ...rest } = opts;
  return hostWorktreeServer(repo, {
    ...rest,
    calls: {
      hook: async (args, call) => {
        const parsed = parseHookArgs(args, call.env);
        const res = await runHook({ ...parsed, input: call.input, cwd: call.cwd, openContext: call.openContext });
        return { warning: res.warning, trace: `${res.action} ${res.session ?? ''} ${res.step ?? ''} ${res.warning ?? ''}` };
      },
      ...(snap ? { snap } : {}),
      ...(wrap ? { wrap } : {}),
    },
  });
}

/** `agentsnap server run`: serves this worktree in this process until idle, SIGTERM or SIGINT. */
export async function serverRun(opts: ServerRunOptions = {}): Promise<void> {
  const repo = await repoFor(opts);
  const settings = await loadSettings(repo);
  const envIdle = Number(repo.callerEnv.AGENTSNAP_SERVER_IDLE_MS);
  const idleMs = opts.idleMs ?? (Number.isFinite(envIdle) && envIdle > 0 ? envIdle : settings.serverIdleMs);
  const server = await startWorktreeServer(repo, {
    hosted: false,
    // Warm for the next call: a session that starts after this server did (the wrap that left it) takes a baseline of what changed since.
    warmUp: true,
    ...(opts.snap ? { snap: opts.snap } : {}),
    ...(opts.wrap ? { wrap: opts.wrap } : {}),
    idleMs,
    onError: (e) => process.stderr.write(`${new Date().toISOString()} ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`),
    onNotice: (line) => process.stderr.write(`${new Date().toISOString()} ${line}\n`),
  });
  const stop = () => void server.close();
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  try {
    await server.closed();
  } finally {
    process.off('SIGTERM', stop);
    process.off('SIGINT', stop);
  }
}

/** Why a server failed, from what it wrote to its log after `offset`: the last error line, else the last line (null: nothing). */
function whyFromLog(file: string, offset: number): string | null {
  try {
    const text = (readStateFile(file) ?? Buffer.alloc(0)).subarray(offset).toString('utf8');
    const lines = text
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
    const line = lines.filter((l) => /^(\w*Error\b|agentsnap:)/.test(l)).at(-1) ?? lines.at(-1);
    return line ? line.slice(0, 300) : null;
  } catch {
    return null; /* the log is a reason at best: without it, 'did not start' and the log's name still say what to do */
  }
}
