// The warm server of one worktree (server.ts beside this is the channel):
// one Repo kept open with its accelerators (cached settings, a long-lived ref
// updater, in-process commits, the incremental snapshot engine), and each
// call handed to the functions its starter gave (`ServerCalls`: the hook
// router's runHook for `agentsnap hook …`, the CLI's snap command — which
// calls api.snap — for `snap`). Owns the
// process side of serving; must not import what a call does (hook routing,
// the API, the CLI): those sit above and are passed in (server-api.ts
// startWorktreeServer), so the server runs exactly the code the CLI runs.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { checkGitVersion, openRepo, type Repo } from '../git/repo.js';
import { type GitConfig } from '../git/config.js';
import { settingsCache, type Settings } from '../settings/settings.js';
import { inProcessObjectWriter, LongLivedRefStore } from '../git/writers.js';
import { openContext, type ContextOpener } from '../session/context.js';
import { hostSnapshotter, type EngineSlot } from '../snapshot/snapshotter.js';
import { HookServer, type CallHandler, type ServerCall } from './server.js';
import type { TreeSnapshotResult } from '../snapshot/snapshot.js';
import { IncrementalSnapshotter } from '../snapshot/incremental.js';
import { inotifyLimit, removeWatchState, writeWatchState, type WatcherReport } from './watch-state.js';
import { settingsKey, type TreeRequest } from './tree-client.js';
import { contentLockFile } from '../session/locks.js';
import { processStartTime, withLock } from '../base/lock.js';
import crypto from 'node:crypto';
import { writeEngineFailure } from './watch-state.js';

/** What a call runs: the server itself knows none of it. */
export interface ServerCalls {
  /** `agentsnap hook <args…>` with the agent's payload; the warning goes to the agent's stderr. */
  hook(
    args: string[],
    call: { env: NodeJS.ProcessEnv; cwd: string; input: string; openContext: ContextOpener },
  ): Promise<{ warning: string | null; trace?: string }>;
  /**
   * `agentsnap snap <args…>` from the Node client (bin/agentsnap.js over channel.ts): the exit code, output captured in io.
   * Absent, or null from it: the client is told to run the command itself (same output, without the server).
   */
  snap?: (
    args: string[],
    io: { stdout: Writable; stderr: Writable; env: NodeJS.ProcessEnv; cwd: string; openContext: ContextOpener },
  ) => Promise<number | null>;
  /**
   * The first half of `agentsnap wrap <args…>` for the thin client (bin/wrap-client.js), which starts the agent
   * itself: the session begun (output in io), or its exit code when it ended there (a reported error), or null:
   * the client runs the whole wrap itself.
   */
  wrap?: (
    args: string[],
    io: {
      stdout: Writable;
      stderr: Writable;
      env: NodeJS.ProcessEnv;
      cwd: string;
      openContext: ContextOpener;
      owner: WrapClientOwner;
      gitVersion: (env: NodeJS.ProcessEnv) => Promise<string>;
    },
  ) => Promise<ServedWrap | { code: number } | null>;
}

/** The process of a thin wrap client: the session's owner while its agent runs. */
export interface WrapClientOwner {
  pid: number;
  start: string | null;
  host: string;
}

/** A session a server began for a thin wrap client: what the client starts, and the end it asks for after. */
export interface ServedWrap {
  spawn: { program: string; argv: string[]; cwd: string; env: NodeJS.ProcessEnv };
  /** What the client needs to end the session itself should this server be gone by then (finishServedWrap). */
  begun: { session: string; agent: string; quiet: boolean; worktree: string };
  /** After the agent exited (or could not be started: `error`): the exit code, output in io. */
  finish(
    exit: { code: number | null; signal: NodeJS.Signals | null; error?: string },
    io: { stdout: Writable; stderr: Writable },
  ): Promise<number>;
}

export interface WorktreeServerOptions {
  /** Runs inside a wrapper (true) or as the background process `agentsnap server run`. */
  hosted: boolean;
  idleMs?: number;
  /** Snapshots through the watcher-fed incremental engine (default true); off: full scans. */
  incremental?: boolean;
  onError?: (e: unknown) => void;
  /** Stat sweeps of the worktree in idle time (default true; tests drive them through serverEngine). */
  idleSweeps?: boolean;
  /** Start the engine at the first call instead of now (wrap: an agent that makes no call never pays for its watches). */
  engineAtFirstCall?: boolean;
  /** The repository's git config when the starter has just read it (wrap's settings): not read again here. */
  gitConfig?: GitConfig | undefined;
  /** Told once, when the watcher gives up (a background server writes it to its log). */
  onNotice?: (line: string) => void;
  /**
   * Take the engine's first snapshot (a full scan) as soon as it is up, in idle time (a background server): the
   * next call, a session's baseline among them, then costs what its watcher saw since instead of a full scan.
   */
  warmUp?: boolean;
}

/**
 * Publishes the engine's watcher state to the run dir (watch-state.ts): at
 * once when the state, the reason or the number of watches changed, the
 * counters at most once a second; the notice once, when it degrades.
 */
function watchPublisher(
  runDir: string,
  engine: IncrementalSnapshotter,
  onNotice?: (line: string) => void,
): { publish(): void; close(): void } {
  let lastKey = '';
  let timer: NodeJS.Timeout | null = null;
  let told = false;
  let closed = false;
  const report = (): WatcherReport => {
    const w = engine.watchState();
    const d = w.degraded;
    const { limit, hint } = d ? inotifyLimit(d.code) : { limit: null, hint: null };
    return {
      state: d ? 'degraded' : 'watching',
      watches: w.watches,
      reason: d?.reason ?? null,
      code: d?.code ?? null,
      limit,
      hint: d
        ? (hint ??
          'Every snapshot is a full scan while this server runs (what a snapshot without a server costs, minus Node start-up); once the reason is gone, `agentsnap server stop` makes the next server watch again.')
        : null,
      since: d?.since ?? null,
      fullScans: engine.stats.full,
      incremental: engine.stats.incremental,
      lastFullScanMs: engine.stats.lastFullMs === null ? null : Math.round(engine.stats.lastFullMs),
      updated: new Date().toISOString(),
    };
  };
  const write = () => {
    timer = null;
    if (closed) return;
    const r = report();
    lastKey = `${r.state}|${r.watches}|${r.reason}`;
    writeWatchState(runDir, r);
    if (r.state === 'degraded' && !told) {
      told = true;
      onNotice?.(`agentsnap: the file watcher is degraded, every snapshot is a full scan: ${r.reason}.${r.hint ? ` ${r.hint}` : ''}`);
    }
  };
  return {
    publish() {
      if (closed) return;
      const w = engine.watchState();
      if (`${w.degraded ? 'degraded' : 'watching'}|${w.watches}|${w.degraded?.reason ?? null}` !== lastKey) {
        if (timer) clearTimeout(timer);
        write();
      } else if (!timer) {
        timer = setTimeout(write, 1000);
        timer.unref();
      }
    },
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
      removeWatchState(runDir);
    },
  };
}

const engines = new WeakMap<HookServer, { open(): Promise<IncrementalSnapshotter | null>; now(): IncrementalSnapshotter | null }>();

/** The server's incremental engine once it is up (null when it did not start or is off); starts it if it waits for a call. */
export function serverEngine(server: HookServer): Promise<IncrementalSnapshotter | null> {
  return engines.get(server)?.open() ?? Promise.resolve(null);
}

/** The server's engine if it is up now, without starting or waiting for it. */
export function serverEngineIfUp(server: HookServer): IncrementalSnapshotter | null {
  return engines.get(server)?.now() ?? null;
}

/** Git-relevant variables: a call whose git environment differs from the server's gets a repo of its own. */
const GIT_ENV_KEYS = ['GIT_CONFIG_GLOBAL', 'GIT_CONFIG_SYSTEM', 'GIT_CONFIG_NOSYSTEM', 'HOME', 'XDG_CONFIG_HOME', 'PATH', 'GIT_EXEC_PATH'];

function gitEnvKey(env: NodeJS.ProcessEnv): string {
  return JSON.stringify(GIT_ENV_KEYS.map((k) => env[k] ?? null));
}

/** Whether `dir` is the worktree or inside it. */
function inside(worktree: string, dir: string): boolean {
  const rel = path.relative(worktree, dir);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/** A writable that collects what is written to it. */
function collector(): Writable & { text(): string } {
  const chunks: Buffer[] = [];
  const w = new Writable({
    write(chunk: Buffer | string, _enc, cb) {
      chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
      cb();
    },
  }) as Writable & { text(): string };
  w.text = () => Buffer.concat(chunks).toString('utf8');
  return w;
}

/** A payload may name the worktree through a symlink (its cwd as the agent's shell sees it): paths compare as real paths. */
function realOrSelf(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return p; // not there: compared as given
  }
}

type EngineSnapshot = (o: { settings: Settings; parentTree: string | null }) => Promise<TreeSnapshotResult>;

/**
 * What every call in one worktree's server shares (its context is built per call, contextFor): a long-lived ref
 * updater, commits written in-process (where objectStore says that is what git would do), settings re-read only when
 * a file they come from changed, the incremental engine once it is up, and the sessions begun for thin wrap clients.
 */
class WorktreeHost {
  private readonly refs: LongLivedRefStore;
  private readonly objects: ReturnType<typeof inProcessObjectWriter>;
  private readonly settingsNow: () => Promise<Settings>;
  private readonly slot: EngineSlot = { engine: null };
  private readonly serverGitKey: string;
  private readonly realWorktree: string;
  private readonly trace: ((what: string) => void) | null;
  /** Sessions begun for thin wrap clients, by token: ended by the client's wrap-end call (or given up with it). */
  private readonly wraps = new Map<string, { pid: number; start: string | null; run: ServedWrap }>();
  // git's version, asked once per PATH and exec path while this server runs (each session start checks it).
  private readonly gitVersions = new Map<string, Promise<string>>();
  private server: HookServer | null = null;
  // The engine starts watching beside the first calls (~0.4 s at 100k files); until it is up, calls take full scans.
  private engine: IncrementalSnapshotter | null = null;
  /** The engine's snapshot for the server's own use (a wrapper's tree request, the warm-up), once it is up. */
  private engineSnapshot: EngineSnapshot | null = null;
  private published: ReturnType<typeof watchPublisher> | null = null;
  private opening: Promise<void> | null = null;
  private closing = false;

  constructor(
    private readonly repo: Repo,
    private readonly opts: WorktreeServerOptions & { calls: ServerCalls },
  ) {
    this.refs = new LongLivedRefStore(repo);
    this.objects = inProcessObjectWriter(repo, opts.gitConfig);
    this.settingsNow = settingsCache(repo);
    this.serverGitKey = gitEnvKey(repo.callerEnv);
    this.realWorktree = realOrSelf(repo.worktree);
    this.trace = repo.callerEnv.AGENTSNAP_SERVER_TRACE
      ? (what: string) => process.stderr.write(`${new Date().toISOString()} ${what}\n`)
      : null;
  }

  /** Starts serving (throws Busy when a server runs already), then the engine unless it waits for the first call. */
  async start(): Promise<HookServer> {
    const opts = this.opts;
    const server = await HookServer.start(this.repo, {
      hosted: opts.hosted,
      ...(opts.idleMs !== undefined ? { idleMs: opts.idleMs } : {}),
      handle: (call) => this.handle(call),
      busy: () => this.wrapsAlive(),
      ...(opts.onError ? { onError: opts.onError } : {}),
    });
    this.server = server;
    if (!opts.engineAtFirstCall) void this.openEngine();
    engines.set(server, { open: () => this.openEngine().then(() => this.engine), now: () => this.engine });
    void server.closed().then(() => this.close());
    return server;
  }

  private async close(): Promise<void> {
    this.closing = true;
    await this.opening;
    this.published?.close();
    this.refs.close();
    await this.engine?.close();
  }

  /** The server's repo for calls in its worktree with its git environment; a fresh one otherwise. */
  // Compared as real paths, or every call through a symlink took a fresh repository, hence a full scan, instead of the warm engine.
  private readonly contextFor: ContextOpener = async (dir, env) => {
    const real = gitEnvKey(env) === this.serverGitKey ? realOrSelf(dir) : null;
    if (real !== null && inside(this.realWorktree, real)) {
      const callRepo: Repo = {
        ...this.repo,
        callerEnv: env,
        prefix: path.relative(this.realWorktree, real).split(path.sep).join('/') + (real === this.realWorktree ? '' : '/'),
      };
      const settings = await this.settingsNow();
      return { repo: callRepo, settings, snapshotter: hostSnapshotter(this.slot, callRepo), objects: this.objects, refs: this.refs };
    }
    return openContext(await openRepo(dir, { env }));
  };

  private wrapsAlive(): boolean {
    for (const [token, w] of this.wraps) if (processStartTime(w.pid) !== w.start || w.start === null) this.wraps.delete(token);
    return this.wraps.size > 0;
  }

  private readonly gitVersion = (env: NodeJS.ProcessEnv): Promise<string> => {
    const key = `${env.PATH ?? ''}\0${env.GIT_EXEC_PATH ?? ''}`;
    let known = this.gitVersions.get(key);
    if (!known) {
      known = checkGitVersion(env);
      this.gitVersions.set(key, known);
      known.catch(() => this.gitVersions.delete(key)); // a failure is asked again, and reported, next time
    }
    return known;
  };

  private async handle(call: ServerCall): ReturnType<CallHandler> {
    const e = this.slot.engine;
    const before = e ? { full: e.stats.full, incremental: e.stats.incremental } : null;
    try {
      return await this.serveCall(call);
    } finally {
      this.afterCall(before);
    }
  }

  /** After a call: the watcher's state for other processes, and (traced) what the engine's snapshots were. */
  private afterCall(before: { full: number; incremental: number } | null): void {
    const e = this.slot.engine;
    if (!e) return;
    this.published?.publish();
    if (!this.trace || (before && before.full === e.stats.full && before.incremental === e.stats.incremental)) return;
    this.trace(
      `snapshot: ${e.stats.full - (before?.full ?? 0)} full${e.stats.lastFullReason ? ` (last: ${e.stats.lastFullReason})` : ''}, ${e.stats.incremental - (before?.incremental ?? 0)} incremental${e.stats.lastWaitMs >= 1 ? `, waited ${Math.round(e.stats.lastWaitMs)} ms for the sweep or call before it` : ''}`,
    );
  }

  private async serveCall(call: ServerCall): ReturnType<CallHandler> {
    const trace = this.trace;
    const calls = this.opts.calls;
    void this.openEngine();
    trace?.(`call ${call.pid}: ${call.args.join(' ')}`);
    if (call.args[0] === 'wrap') return this.serveWrap(call);
    if (call.args[0] === 'wrap-end') return this.serveWrapEnd(call);
    if (call.args[0] === 'tree') {
      const exit = await this.serveTree(call);
      trace?.(`call ${call.pid}: tree ${exit.code === 0 ? 'served' : `declined (${exit.stderr})`}`);
      return { warning: null, exit };
    }
    if (call.args[0] === 'hook') {
      const input = await call.readStdin();
      trace?.(`call ${call.pid}: read ${input.length} bytes`);
      const res = await calls.hook(call.args.slice(1), { env: call.env, cwd: call.cwd, input, openContext: this.contextFor });
      trace?.(`call ${call.pid}: ${res.trace ?? res.warning ?? 'ok'}`);
      return { warning: res.warning };
    }
    if (call.args[0] === 'snap' && calls.snap) {
      const stdout = collector();
      const stderr = collector();
      const code = await calls.snap(call.args.slice(1), { stdout, stderr, env: call.env, cwd: call.cwd, openContext: this.contextFor });
      if (code !== null) return { warning: null, exit: { code, stdout: stdout.text(), stderr: stderr.text() } };
    }
    return { warning: `agentsnap: warning: the server does not run \`${call.args[0] ?? ''}\`` };
  }

  /**
   * A wrapper's snapshot (tree-client.ts), from the engine only: without one up (or for another worktree, git
   * environment or settings) the wrapper is told no (exit 3) and scans for itself. Under the content lock, as
   * lockedSnapshot takes every snapshot.
   */
  private async serveTree(call: ServerCall): Promise<{ code: number; stdout: string; stderr: string }> {
    const no = (why: string) => ({ code: 3, stdout: '', stderr: why });
    const snapshot = this.engineSnapshot; // set once the engine is up
    if (!snapshot) return no('no engine');
    if (!sameCapabilities(call.pid)) return no('other capabilities');
    if (gitEnvKey(call.env) !== this.serverGitKey) return no('another git environment');
    let req: TreeRequest;
    try {
      req = JSON.parse(await call.readStdin()) as TreeRequest;
    } catch {
      return no('unreadable request'); // refused: the client snapshots itself (a full scan)
    }
    if (req?.v !== 1 || typeof req.worktree !== 'string' || realOrSelf(req.worktree) !== this.realWorktree) return no('another worktree');
    if (req.parentTree !== null && !/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(String(req.parentTree))) return no('bad parent');
    const settings = await this.settingsNow();
    if (settingsKey(settings) !== req.settings) return no('other settings');
    const res = await withLock(contentLockFile(this.repo), { timeoutMs: settings.lockTimeoutMs, purpose: 'snapshot' }, () =>
      snapshot({ settings, parentTree: req.parentTree }),
    );
    return { code: 0, stdout: JSON.stringify({ tree: res.tree, skipped: res.skipped, changed: res.changed, seeded: false }), stderr: '' };
  }

  private async serveWrap(call: ServerCall): ReturnType<CallHandler> {
    // A client that can read what this server cannot, or the reverse (same user, other capabilities: root under
    // setpriv, a container), would get another snapshot here than its own: it begins the session itself.
    if (!sameCapabilities(call.pid)) return { warning: 'agentsnap: warning: the server does not begin this wrap (other capabilities)' };
    const owner: WrapClientOwner = { pid: call.pid, start: processStartTime(call.pid), host: os.hostname() };
    const stdout = collector();
    const stderr = collector();
    const wrap = this.opts.calls.wrap;
    const io = { stdout, stderr, env: call.env, cwd: call.cwd, openContext: this.contextFor, owner, gitVersion: this.gitVersion };
    const res = wrap ? await wrap(call.args.slice(1), io) : null;
    if (!res) return { warning: 'agentsnap: warning: the server does not begin this wrap' };
    if ('code' in res) return { warning: null, exit: { code: res.code, stdout: stdout.text(), stderr: stderr.text() } };
    const token = crypto.randomBytes(12).toString('hex');
    this.wraps.set(token, { pid: call.pid, start: owner.start, run: res });
    // The agent's environment as changes to the client's own (which it starts the agent with).
    const set: Record<string, string> = {};
    for (const [k, v] of Object.entries(res.spawn.env)) if (v !== undefined && call.env[k] !== v) set[k] = v;
    const unset = Object.keys(call.env).filter((k) => res.spawn.env[k] === undefined);
    const spawn = {
      token,
      program: res.spawn.program,
      argv: res.spawn.argv,
      cwd: res.spawn.cwd,
      env: { set, unset },
      stdout: stdout.text(),
      begun: res.begun,
    };
    return { warning: null, spawn: { json: JSON.stringify(spawn), stderr: stderr.text() } };
  }

  private async serveWrapEnd(call: ServerCall): ReturnType<CallHandler> {
    let req: { token?: unknown; code?: unknown; signal?: unknown; error?: unknown };
    try {
      req = JSON.parse(await call.readStdin()) as typeof req;
    } catch {
      return { warning: 'agentsnap: warning: unreadable wrap-end request' }; // reported: the warning names it
    }
    const w = typeof req.token === 'string' ? this.wraps.get(req.token) : undefined;
    if (!w || w.pid !== call.pid) return { warning: 'agentsnap: warning: no such session begun here' };
    this.wraps.delete(req.token as string);
    const stdout = collector();
    const stderr = collector();
    const exit = {
      code: typeof req.code === 'number' ? req.code : null,
      signal: typeof req.signal === 'string' ? (req.signal as NodeJS.Signals) : null,
      ...(typeof req.error === 'string' ? { error: req.error } : {}),
    };
    const code = await w.run.finish(exit, { stdout, stderr });
    return { warning: null, exit: { code, stdout: stdout.text(), stderr: stderr.text() } };
  }

  /** Opens the incremental engine once (a no-op before the server listens, when it is off, or once it closes). */
  private openEngine(): Promise<void> {
    const server = this.server;
    if (!server) return Promise.resolve();
    this.opening ??=
      this.opts.incremental === false || this.closing
        ? Promise.resolve()
        : this.settingsNow()
            .then((settings) =>
              IncrementalSnapshotter.open(this.repo, {
                runDir: path.join(server.runDir, 'engine'),
                settings,
                idleSweeps: this.opts.idleSweeps !== false,
              }),
            )
            .then((e) => this.engineUp(server, e))
            .catch((e) => {
              this.trace?.(`engine: not started (${e instanceof Error ? e.message : String(e)}); full scans`);
              writeEngineFailure(server.runDir, 'start', e); // for doctor
              this.opts.onError?.(e);
            });
    return this.opening;
  }

  private engineUp(server: HookServer, e: IncrementalSnapshotter): void {
    this.engine = e;
    const watch = watchPublisher(server.runDir, e, this.opts.onNotice);
    this.published = watch;
    watch.publish();
    const take: EngineSnapshot = (o) => e.snapshot(o).finally(() => watch.publish());
    this.engineSnapshot = take;
    this.slot.engine = e;
    if (!this.opts.warmUp) return;
    void this.settingsNow()
      .then((settings) =>
        withLock(contentLockFile(this.repo), { timeoutMs: settings.lockTimeoutMs, purpose: 'snapshot' }, () =>
          take({ settings, parentTree: null }),
        ),
      )
      .then(() => this.trace?.('engine: warmed up'))
      .catch((err: unknown) => {
        this.trace?.(`engine: warm-up snapshot failed (${err instanceof Error ? err.message : String(err)})`);
        writeEngineFailure(server.runDir, 'warm-up', err); // for doctor
        // Not only under the trace: it reaches the server's log (server.log).
        this.opts.onError?.(err);
      });
  }
}

/** Starts the server of `repo`'s worktree (throws Busy when one runs already). */
export async function hostWorktreeServer(repo: Repo, opts: WorktreeServerOptions & { calls: ServerCalls }): Promise<HookServer> {
  return new WorktreeHost(repo, opts).start();
}

/** The effective capabilities of a process (/proc/<pid>/status CapEff), or null where they cannot be read. */
function capEff(pid: number | 'self'): string | null {
  try {
    return /^CapEff:\s*(\S+)$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? null;
  } catch {
    return null; // a process gone, or no /proc: unknown, and the server refuses it
  }
}

/** Whether a client has this server's capabilities (what it may read decides its snapshots). */
function sameCapabilities(pid: number): boolean {
  const ours = capEff('self');
  return ours !== null && capEff(pid) === ours;
}
