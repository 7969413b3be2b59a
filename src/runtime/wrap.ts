// `agentsnap wrap -- <agent>`: runs an agent inside a session. Baseline first
// (no baseline, no agent), then the agent with the terminal inherited and
// hooks injected for the agents that have them, then a final snapshot and the
// session's end. The wrapper's exit code is the agent's.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { packageRoot } from '../base/package-root.js';
import { shellQuote } from '../base/shell.js';
import { AgentsnapError, errors, isAgentsnapError } from '../base/errors.js';
import { checkGitVersion, openRepo, type Repo } from '../git/repo.js';
import type { Settings } from '../settings/settings.js';
import { openContext, type Context, type ContextOpener } from '../session/context.js';
import { engineSnapshotter } from '../snapshot/snapshotter.js';
import { closeEndedCalls } from './hook.js';
import {
  endSession,
  listWrappedSessions,
  type EndResult,
  resumeSession,
  sessionPaths,
  sessionsDir,
  startSession,
  STEP_REF_PREFIX,
  wrapperOwner,
} from '../session/session.js';
import { startWorktreeSession, type StartPoint } from '../worktrees/worktree.js';
import { maybeAutoGc } from '../worktrees/gc.js';
import type { Agent, RunContext, RunHooks } from '../agents/adapter.js';
import { ADAPTERS, AGENTS, adapterOf, adapterOrGeneric, findAgent } from '../agents/registry.js';
import { claudeArgv as claudeArgvFor, claudeHookSettings as claudeSettingsFor } from '../agents/claude.js';
import { redactValue } from '../session/redact.js';
import { sessionFinished } from '../session/state.js';
import { assertSessionId } from '../base/ids.js';
import { HOOK_CLIENT, runDirOf, serverEnabled, serverInfo, spawnBackgroundServer, type HookServer } from '../server/server.js';
import { serverSnapshotter } from '../server/tree-client.js';
import { inTerminalForeground } from '../server/channel.js';
import { serverAfterWrap } from '../settings/settings.js';
import { startWorktreeServer } from './server-api.js';
import { serverEngineIfUp, type ServerCalls } from '../server/serve.js';
import { startAutoCheckpoints } from './wrap-auto.js';
import { sessionFiles } from '../base/state-dir.js';

/** The executable of this install: hooks call it so they run the same agentsnap as the wrapper. */
export const AGENTSNAP_BIN = path.join(packageRoot(), 'bin', 'agentsnap.js');

export type AgentChoice = Agent | 'auto';

export interface WrapOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** The command and its arguments. */
  command: string[];
  session?: string | undefined;
  agent?: AgentChoice | undefined;
  /** Checkpoint whenever the worktree changed and then stayed quiet (agents without hooks). */
  auto?: boolean | undefined;
  /** Called once the baseline is taken, before the agent starts. */
  onStart?: (info: WrapStart) => void;
  onProgress?: (phase: string) => void;
  /** A name for a new session (`wrap --name`): shown by `sessions`, accepted wherever its id is. */
  name?: string | null | undefined;
  /** Run the agent in a new session worktree (`wrap --worktree`) instead of this worktree. */
  worktree?: { name?: string | null | undefined; from?: StartPoint | undefined } | null | undefined;
  /** How this run's warm server answers a `snap` the Node client hands it (the CLI passes its snap command; absent: the client runs it). */
  serveSnap?: ServerCalls['snap'];
  /** `wrap --environment`: ignored directories this session snapshots whole besides agentsnap.environment (checked paths). */
  environment?: string[] | undefined;
  /** `wrap --mcp`: also offer agentsnap's MCP server (`agentsnap mcp`) to the agent for this run, through its own per-run mechanism. */
  mcp?: boolean | undefined;
  /** Test seam: called right before the agent is spawned (a signal sent to the wrapper here must reach the agent). */
  beforeSpawn?: () => void;
  /**
   * The session is begun by this worktree's running background server for a thin client (bin/wrap-client.js)
   * that starts the agent: no server is hosted (this one answers the hooks), the repository is the server's
   * own (`openContext`: its engine takes the snapshots) and the session's owner is the client.
   */
  servedBy?: {
    openContext: ContextOpener;
    owner: { pid: number; start: string | null; host: string };
    /** checkGitVersion as the server remembers it (asked once per PATH and exec path while it runs). */
    gitVersion: (env: NodeJS.ProcessEnv) => Promise<string>;
  };
}

export interface WrapStart {
  session: string;
  refPrefix: string;
  resumed: boolean;
  agent: Agent;
  /** The command as it is run (with injected hook settings). */
  argv: string[];
  /** The worktree the agent runs in. */
  worktree: string;
  /** With `worktree`: the session worktree was created for this run. */
  sessionWorktree: boolean;
  /** Setup that did not go as configured (session worktrees). */
  warnings: string[];
  /** The shadow repository the snapshots go to (the worktree is in no git repository), else null. */
  shadow: string | null;
  /** A shadow kept for another directory at this path, set aside when this run made its own (git/shadow.ts). */
  shadowSetAside: string | null;
}

export interface WrapResult {
  session: string;
  agent: Agent;
  /** What the wrapper exits with: the agent's code, or 128 + signal number. */
  exitCode: number;
  signal: string | null;
  /** Set when the final snapshot or the end of the session could not be recorded. */
  endError: AgentsnapError | null;
  /** The worktree the agent ran in. */
  worktree: string;
  /** The agent ran in a session worktree agentsnap created (see apply, promote, discard). */
  sessionWorktree: boolean;
  /** Problems after the agent ended that lost nothing but need the user's eye (one line each). */
  warnings: string[];
  /**
   * A run that recorded no step of its own: the step its changes became (the whole run), or 'unchanged' (nothing
   * recorded, nothing changed); null when the run recorded its own steps (see EndResult.wholeRun).
   */
  wholeRun: EndResult['wholeRun'];
}

/** Recognises the agent from the command: its program name, or the script a runner (node, npx…) starts. */
export function detectAgent(command: string[]): Agent {
  return findAgent(command)?.agent ?? 'generic';
}

export { findAgent } from '../agents/registry.js';

export { shellQuote } from '../base/shell.js';

export interface HookCommandOptions {
  wrapped: boolean;
  session?: string;
  worktree?: string;
  /** The run directory of the server answering this worktree's hooks (none: the Node hook). */
  runDir?: string | undefined;
}

/**
 * The hook command line an agent runs: this node, this install, `hook <agent> <event>`.
 * `session`/`worktree` name the wrapper's session on the command line, for
 * agents that may not pass the environment on to hooks (Gemini CLI can sanitize it).
 */
export function hookCommand(agent: Agent, event: string, opts: HookCommandOptions): string {
  // With a server: the shell client (no Node start), which falls back to this node and install.
  const words = opts.runDir
    ? ['/bin/sh', HOOK_CLIENT, '--run', opts.runDir, '--exec', process.execPath, AGENTSNAP_BIN, agent, event]
    : [process.execPath, AGENTSNAP_BIN, 'hook', agent, event];
  if (opts.wrapped) words.push('--wrapped');
  if (opts.session) words.push('--session', opts.session);
  if (opts.worktree) words.push('--worktree', opts.worktree);
  return words.map(shellQuote).join(' ');
}

// The three below are agents/claude.ts's and agents/codex.ts's injections with this install's hook commands,
// kept here for the public API (claudeHookSettings) and tests; wrap itself goes through the adapters.

/**
 * Claude Code hook settings recording every tool call (PreToolUse, PostToolUse, PostToolUseFailure), with this
 * install's hook commands; for a wrapper's session also SessionStart (see agents/claude.ts).
 */
export function claudeHookSettings(opts: HookCommandOptions & { sessionEnd?: boolean }): ReturnType<typeof claudeSettingsFor> {
  return claudeSettingsFor((ev) => hookCommand('claude', ev, opts), { sessionEnd: !!opts.sessionEnd, sessionStart: opts.wrapped });
}

/** The claude command with this run's hooks added through `--settings` (see agents/claude.ts). */
export function claudeArgv(command: string[], cwd: string, at = findAgent(command)?.index ?? 0, runDir?: string): string[] {
  return claudeArgvFor(command, cwd, at, (ev) => hookCommand('claude', ev, { wrapped: true, runDir }));
}

/** The codex command with this run's hooks, trusted for this run only, as `-c` overrides (see agents/codex.ts). */
export function codexArgv(command: string[], at = findAgent(command)?.index ?? 0, runDir?: string): string[] {
  return ADAPTERS.codex?.wrapArgv?.(runContextFor({ command, at, cwd: '', env: {}, agent: 'codex', runDir })) ?? [...command];
}

/** What an adapter needs to inject one run's hooks. */
function runContextFor(opts: {
  command: string[];
  at: number;
  cwd: string;
  env: NodeJS.ProcessEnv;
  agent: Agent;
  runDir: string | undefined;
  /** The session and its repository (none for codexArgv, which builds a command line only). */
  where?: { repo: Repo; session: string };
  /** `wrap --mcp`: offer agentsnap's MCP server to the agent. */
  mcp?: boolean;
}): RunContext {
  const { command, at, cwd, env, agent, runDir, where, mcp = false } = opts;
  return {
    // The server of this install, for this session and worktree whatever environment and directory the agent starts it with.
    mcp:
      mcp && where
        ? { command: process.execPath, args: [AGENTSNAP_BIN, 'mcp', '--session', where.session, '--worktree', where.repo.worktree] }
        : null,
    command,
    at,
    cwd,
    env,
    hookCommand: (ev, extra) => hookCommand(agent, ev, { wrapped: true, runDir, ...(extra ?? {}) }),
    session: where?.session ?? '',
    worktree: where?.repo.worktree ?? '',
    sessionDir: where ? sessionPaths(where.repo, where.session).dir : '',
  };
}

/** Finds the program the way the shell would (PATH search for a bare name); throws when it cannot be started. */
export function resolveProgram(program: string, env: NodeJS.ProcessEnv, cwd: string): string {
  const candidates = program.includes('/')
    ? [path.resolve(cwd, program)]
    : (env.PATH ?? '')
        .split(path.delimiter)
        .filter(Boolean)
        .map((dir) => path.join(path.resolve(cwd, dir), program));
  let found: string | null = null;
  for (const file of candidates) {
    try {
      const st = fs.statSync(file);
      if (!st.isFile()) continue;
      found = found ?? file;
      fs.accessSync(file, fs.constants.X_OK);
      return file;
    } catch {
      /* next */
    }
  }
  if (found) {
    throw errors.invalidArgument(`cannot start ${program}: ${found} is not executable.`, {
      hint: `Make it executable (chmod +x ${found}) or run it through its interpreter.`,
      data: { program, path: found },
    });
  }
  throw errors.invalidArgument(`cannot start ${program}: command not found.`, {
    hint: program.includes('/') ? 'Check the path.' : 'Check the name, or that the directory holding it is on PATH.',
    data: { program },
  });
}

/** Signals the terminal sends to its whole foreground group: the agent already got them. */
const TERMINAL_SIGNALS = new Set<NodeJS.Signals>(['SIGINT', 'SIGQUIT', 'SIGHUP']);
const FORWARDED_SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGQUIT', 'SIGHUP', 'SIGTERM', 'SIGUSR1', 'SIGUSR2'];

function runChild(
  program: string,
  argv: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
  beforeSpawn?: () => void,
): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve, reject) => {
    // The handlers go in before the agent exists: a signal that lands between spawn() and their
    // install (a loaded machine can deschedule the wrapper there while the agent already runs) took
    // the default action and killed the wrapper, leaving the agent running and its session open.
    let child: ReturnType<typeof spawn> | null = null;
    const handlers = new Map<NodeJS.Signals, () => void>();
    const cleanup = () => {
      for (const [sig, h] of handlers) process.off(sig, h);
    };
    const forward = (sig: NodeJS.Signals) => {
      try {
        child?.kill(sig);
      } catch {
        /* already gone */
      }
    };
    for (const sig of FORWARDED_SIGNALS) {
      const h = () => {
        // Ctrl-C and friends reach the agent straight from the terminal; sending them again would deliver them twice.
        if (TERMINAL_SIGNALS.has(sig) && inTerminalForeground()) return;
        forward(sig);
      };
      handlers.set(sig, h);
      process.on(sig, h);
    }
    beforeSpawn?.();
    // Node runs signal listeners on a later turn of the event loop, so one raised in beforeSpawn (or
    // sent then) finds the agent spawned below and is forwarded to it, never lost.
    child = spawn(program, argv.slice(1), { cwd, env, stdio: 'inherit', argv0: argv[0] });
    child.on('error', (e) => {
      cleanup();
      reject(e);
    });
    child.on('exit', (code, signal) => {
      cleanup();
      resolve({ code, signal });
    });
  });
}

function wrapFailed(what: string, e: unknown): AgentsnapError {
  const inner = isAgentsnapError(e) ? e : errors.internal(e instanceof Error ? e.message : String(e), { cause: e });
  return new AgentsnapError(inner.code, inner.exit, `${what}: ${inner.message}`, {
    hint: `The agent was not started, so nothing ran unprotected. ${inner.hint ?? 'Fix the cause and run the same command again, or run the agent without agentsnap.'}`,
    data: inner.data,
    cause: e,
  });
}

/** The directory in `to` that is where `cwd` is in `from` (a subdirectory the user ran wrap in), or `to` itself when it has none. */
function sameSubdir(from: string, to: string, cwd: string): string {
  let rel: string;
  try {
    rel = path.relative(fs.realpathSync(from), fs.realpathSync(cwd));
  } catch {
    return to; // a directory gone meanwhile: the worktree's root
  }
  if (!rel || rel.startsWith('..') || path.isAbsolute(rel)) return to;
  const there = path.join(to, rel);
  try {
    return fs.statSync(there).isDirectory() ? there : to;
  } catch {
    return to; // not there in the session worktree: its root
  }
}

/**
 * Whether a background server can begin this wrap for a thin client that starts the agent itself: in this
 * worktree, without automatic checkpoints (they watch from the wrapper's process), and for an agent whose run
 * needs no state outside its command line (an adapter with prepareRun, Gemini's home overlay, is finished by its
 * wrapper, or recovered by the next one while that wrapper is gone).
 */
export function servable(opts: Pick<WrapOptions, 'worktree' | 'auto' | 'agent' | 'command'>): boolean {
  if (opts.worktree || opts.auto || !opts.command[0]) return false;
  const choice = opts.agent ?? 'auto';
  const agent = choice === 'auto' ? detectAgent(opts.command) : choice;
  const adapter = adapterOf(agent);
  return !!adapter && !adapter.prepareRun;
}

/** Runs `command` as an agent inside an agentsnap session. */
export async function wrap(opts: WrapOptions): Promise<WrapResult> {
  const run = await beginWrap(opts);
  let exit: { code: number | null; signal: NodeJS.Signals | null };
  try {
    exit = await runChild(run.program, run.argv, run.cwd, run.env, opts.beforeSpawn);
  } catch (e) {
    return run.notStarted(e);
  }
  return run.finish(exit);
}

/**
 * The end of a session whose beginning is gone (a thin client's server that stopped while its agent ran): the
 * final snapshot (a full scan, no server) and the session's end, as finish() ends it. An agent that could not be
 * started (`error`) ends the session without one and throws, as wrap does.
 */
export async function endWrap(opts: {
  cwd: string;
  env: NodeJS.ProcessEnv;
  session: string;
  agent: string;
  exit: { code: number | null; signal: NodeJS.Signals | null; error?: string };
  /** The server's answer when it was there but did not end the session (else it was gone). */
  refused?: string | null;
}): Promise<WrapResult> {
  const ctx = await openContext(await openRepo(opts.cwd, { env: opts.env }));
  const { repo } = ctx;
  const agent: Agent = AGENTS.includes(opts.agent) ? opts.agent : 'generic';
  const { exit } = opts;
  if (exit.error !== undefined) {
    await endSession(ctx, opts.session, { exitCode: null, signal: null }).catch(() => undefined); // the agent did not start: that error is the one reported
    throw errors.invalidArgument(`cannot start the agent: ${exit.error}`);
  }
  const exitCode = exitCodeOf(exit);
  // The server ended it, and went (killed) before its reply reached the client: the session ended as it should.
  if (await sessionFinished(repo, opts.session).catch(() => false /* cannot be told: ended here as if not */)) {
    return {
      session: opts.session,
      agent,
      exitCode,
      signal: exit.signal,
      endError: null,
      worktree: repo.worktree,
      sessionWorktree: false,
      warnings: [],
      wholeRun: null, // told by the server's reply, which was lost
    };
  }
  const adapter = adapterOrGeneric(agent);
  const warnings = [
    opts.refused
      ? `agentsnap: warning: the background server did not end the session (${opts.refused}); it was ended by this wrapper (a full scan).`
      : 'agentsnap: warning: the background server stopped while the agent ran; the session was ended by this wrapper (a full scan).',
  ];
  if (adapter.callEnded) await closeEndedCalls(ctx, opts.session, adapter).catch(() => undefined); // those calls stay open and are closed as interrupted by the end below
  let endError: AgentsnapError | null = null;
  let wholeRun: EndResult['wholeRun'] = null;
  try {
    const end = await endSession(ctx, opts.session, {
      exitCode: exit.code,
      signal: exit.signal,
      packInBackground: true,
      runStep: wholeRunStep(agent),
    });
    wholeRun = end.wholeRun;
    warnings.push(...unhookedWarning(agent, opts.session, wholeRun));
  } catch (e) {
    endError = isAgentsnapError(e) ? e : errors.internal(e instanceof Error ? e.message : String(e), { cause: e });
  }
  return {
    session: opts.session,
    agent,
    exitCode,
    signal: exit.signal,
    endError,
    worktree: repo.worktree,
    sessionWorktree: false,
    warnings,
    wholeRun,
  };
}

/** How a wrapped run that recorded no step of its own is recorded at its end (EndOptions.runStep): one step, tool `wrap`. */
function wholeRunStep(agent: Agent): { tool: string; message: string | null } {
  return { tool: 'wrap', message: agent === 'generic' ? null : 'changes outside any tool call' };
}

/** The warning for a hooked agent whose changes became one step because none of its calls reached the hooks. */
function unhookedWarning(agent: Agent, session: string, wholeRun: EndResult['wholeRun']): string[] {
  if (agent === 'generic' || wholeRun === null || wholeRun === 'unchanged') return [];
  return [
    `agentsnap: warning: ${agent} changed ${wholeRun.changed} file(s) but none of its tool calls reached agentsnap's hooks; ` +
      `they are recorded as step ${wholeRun.step} (changes outside any tool call: \`agentsnap undo ${wholeRun.step} --session ${session}\` takes them back). ` +
      'Check that the agent runs hooks here (see the README on wrap).',
  ];
}

/** What a wrapper exits with: the agent's code, or 128 + its signal's number. */
function exitCodeOf(exit: { code: number | null; signal: NodeJS.Signals | null }): number {
  return exit.signal ? 128 + (os.constants.signals[exit.signal] ?? 0) : (exit.code ?? 1);
}

/** A session begun for an agent (beginWrap): what to start, and its end once the agent exited. */
export interface WrapRun {
  session: string;
  agent: Agent;
  /** The program found on PATH, the agent's argv (argv[0] as typed, with hooks injected), its directory and whole environment. */
  program: string;
  argv: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** The session's worktree (where its end opens the repository: the directory the wrap began in may be gone by then). */
  worktree: string;
  /** The final snapshot and the session's end, after the agent exited with this. */
  finish(exit: { code: number | null; signal: NodeJS.Signals | null }): Promise<WrapResult>;
  /** The agent could not be started: ends the session, and throws why. */
  notStarted(e: unknown): Promise<never>;
}

/**
 * A wrap's first half: the baseline, the hooks and the environment of the
 * agent, which the caller starts (wrap() here, or the thin client a
 * background server answers: bin/wrap-client.js), then finish().
 */
export async function beginWrap(opts: WrapOptions): Promise<WrapRun> {
  const { command, agent, program } = checkWrapCommand(opts);
  const begun = await beginWrapSession(opts, command, agent);
  const hooks = await injectRunHooks(opts, command, agent, begun);
  // Time-gated retention (one stat unless it is due): it runs beside the agent, never delaying its start.
  const autoGc = maybeAutoGc(begun.source);
  const { session, repo, inWorktree } = begun;
  opts.onStart?.({
    session,
    refPrefix: `${STEP_REF_PREFIX}${session}/`,
    resumed: begun.resumed,
    agent,
    argv: hooks.argv,
    worktree: repo.worktree,
    sessionWorktree: inWorktree,
    warnings: begun.warnings,
    shadow: repo.shadow?.dir ?? null,
    shadowSetAside: repo.shadow?.setAside ?? null,
  });
  const env = agentEnvironment(opts, begun, agent, hooks.agentEnv);
  const endWarnings: string[] = [];
  // A hooked agent's calls are its steps: what an automatic checkpoint sees between them is not the agent's.
  const auto = opts.auto
    ? startAutoCheckpoints(begun.ctx, session, { onWarning: (w) => endWarnings.push(w), madeBy: agent === 'generic' ? 'agent' : 'user' })
    : null;
  const running: RunningWrap = { ...begun, ...hooks, opts, command, agent, program, auto, autoGc, endWarnings };
  return {
    session,
    agent,
    program,
    argv: hooks.argv,
    cwd: begun.cwd,
    env,
    worktree: repo.worktree,
    finish: (exit) => finishWrap(running, exit),
    notStarted: (e) => abandonWrap(running, e),
  };
}

/** A wrap's command checked (an agent command after `--`, a known --agent, a valid --session): its agent and program. */
function checkWrapCommand(opts: WrapOptions): { command: string[]; agent: Agent; program: string } {
  const command = opts.command;
  if (command.length === 0 || !command[0]) {
    throw errors.invalidArgument('name the agent command to run after `--`.', { hint: 'For example: agentsnap wrap -- claude' });
  }
  const choice = opts.agent ?? 'auto';
  if (choice !== 'auto' && !AGENTS.includes(choice)) {
    throw errors.invalidArgument(`--agent must be auto, ${AGENTS.join(', ')}; not ${JSON.stringify(choice)}.`);
  }
  if (opts.session !== undefined) assertSessionId(opts.session);
  const program = resolveProgram(command[0], opts.env, opts.cwd);
  return { command, agent: choice === 'auto' ? detectAgent(command) : choice, program };
}

/** The session a wrap runs (new, resumed or in a new session worktree) and the warm server that answers its hooks. */
interface BegunWrapSession {
  /** The repository the wrap began in; `repo` is the session's (a session worktree's, or the same). */
  source: Repo;
  repo: Repo;
  /** The agent's directory: the caller's, or the same subdirectory of a session worktree. */
  cwd: string;
  ctx: Context;
  settings: Settings;
  session: string;
  /** What a session worktree's setup adds to the agent's environment. */
  sessionEnv: Record<string, string>;
  resumed: boolean;
  inWorktree: boolean;
  server: HookServer | null;
  runDir: string | undefined;
  warnings: string[];
}

/** A wrap's session begun, and its server started; on failure the server is closed and the error says which phase failed. */
async function beginWrapSession(opts: WrapOptions, command: string[], agent: Agent): Promise<BegunWrapSession> {
  // The server's context for a session it begins (its engine takes the snapshots), else this command's, read below.
  const served = opts.servedBy ? await opts.servedBy.openContext(opts.cwd, opts.env) : null;
  const source = served?.repo ?? (await openRepo(opts.cwd, { env: opts.env, shadow: 'create' }));
  const inWorktree = !!opts.worktree;
  const resumed = !inWorktree && !!opts.session && fs.existsSync(sessionFiles(source, opts.session).journal);
  // The warm server answers this run's hooks from this process (none where it is switched off). In this
  // worktree it starts beside the baseline (its channel and engine need nothing from the session; the agent,
  // whose hooks it answers, starts only after both); a session worktree exists only once it is created.
  let serverStart: Promise<HookServer | 'busy' | null> | null = null;
  // A new session refuses a git that is too old before it writes anything (startSession awaits this): asked beside the settings.
  const gitVersion = !inWorktree && !resumed ? (opts.servedBy?.gitVersion ?? checkGitVersion)(source.env) : undefined;
  gitVersion?.catch(() => {}); // awaited by startSession; a failure surfaces there
  let opened: OpenedWrapSession;
  try {
    let ctx = served ?? (await openContext(source));
    if (!inWorktree && !opts.servedBy && serverEnabled(opts.env, ctx.settings)) {
      // A background server (left by the last wrap, or started by a hook) has watched this worktree since before
      // this session: it takes the baseline and the final snapshot, each at the cost of a hooked call instead of a
      // look at the whole worktree (issue 19). Where it cannot, the snapshot is this process's own, as without it.
      const running = serverInfo(source);
      if (running && !running.hosted) ctx = { ...ctx, snapshotter: serverSnapshotter(source) };
    }
    if (!inWorktree) serverStart = startWrapServer(opts, source, ctx.settings);
    // Read beside the baseline, for the warning below (a session begun meanwhile is a race either way).
    const listed = inWorktree ? null : listWrappedSessions(source);
    listed?.catch(() => {}); // awaited below, where a failure is reported
    // The command line is journaled: redact tokens passed as arguments.
    const journaled = redactValue(command, ctx.settings.redactPatterns);
    opened = await openWrapSession(opts, { source, ctx, agent, command: journaled, resumed, gitVersion });
    if (listed) opened.warnings.push(...(await otherWrappersWarning(listed, opened.session, opened.repo)));
  } catch (e) {
    const started = await serverStart;
    if (started && started !== 'busy') await started.close();
    const what = inWorktree
      ? 'could not create the session worktree'
      : resumed
        ? `could not resume session ${opts.session}`
        : 'could not take the baseline snapshot';
    throw wrapFailed(what, e);
  }
  const started = await (serverStart ?? startWrapServer(opts, opened.repo, opened.settings));
  return {
    ...opened,
    source,
    resumed,
    inWorktree,
    server: started === 'busy' ? null : started,
    runDir: started === 'busy' ? runDirOf(opened.repo) : started?.runDir,
  };
}

/** The warm server a wrap hosts: 'busy' where another process serves this worktree already (and answers these hooks too), null where it is off or cannot start. */
function startWrapServer(opts: WrapOptions, at: Repo, settings: Settings): Promise<HookServer | 'busy' | null> {
  if (opts.servedBy) return Promise.resolve('busy');
  if (!serverEnabled(opts.env, settings)) return Promise.resolve(null);
  return startWorktreeServer(at, {
    hosted: true,
    engineAtFirstCall: true,
    gitConfig: settings.gitConfig,
    ...(opts.serveSnap ? { snap: opts.serveSnap } : {}),
  }).catch((e: unknown) => (isAgentsnapError(e) && e.code === 'Busy' ? ('busy' as const) : null));
}

type OpenedWrapSession = Pick<BegunWrapSession, 'repo' | 'cwd' | 'ctx' | 'settings' | 'session' | 'sessionEnv' | 'warnings'>;

/** The wrap's session itself: created in a new session worktree, resumed, or started here with its baseline. */
async function openWrapSession(
  opts: WrapOptions,
  at: { source: Repo; ctx: Context; agent: Agent; command: string[]; resumed: boolean; gitVersion: Promise<string> | undefined },
): Promise<OpenedWrapSession> {
  const { source, ctx, agent, command, gitVersion } = at;
  const owner = opts.servedBy?.owner ?? wrapperOwner();
  const progress = opts.onProgress ? { onProgress: opts.onProgress } : {};
  const environment = opts.environment?.length ? { environment: opts.environment } : {};
  const here = { repo: source, cwd: opts.cwd, ctx, settings: ctx.settings, sessionEnv: {}, warnings: [] };
  if (opts.worktree) {
    const started = await startWorktreeSession(source, {
      ...(opts.session ? { session: opts.session } : {}),
      name: opts.worktree.name ?? null,
      from: opts.worktree.from ?? 'current',
      settings: ctx.settings,
      setupStdio: 'inherit',
      agent,
      command,
      owner,
      ...environment,
      ...progress,
    });
    return {
      repo: started.repo,
      cwd: sameSubdir(source.worktree, started.repo.worktree, opts.cwd),
      ctx: started.ctx,
      settings: started.ctx.settings,
      session: started.meta.session,
      sessionEnv: started.env,
      warnings: [...started.warnings],
    };
  }
  if (at.resumed && opts.session) {
    return { ...here, session: (await resumeSession(ctx, opts.session, { agent, command, owner, ...environment, ...progress })).session };
  }
  // Its final snapshot is the Node path's unless the agent made a call (the server's engine opens at the first one): the baseline's copy of the user's index is kept warm for it.
  const started = await startSession(ctx, {
    agent,
    command,
    ...(opts.name ? { name: opts.name } : {}),
    owner,
    warmCopy: true,
    ...(gitVersion ? { gitVersion } : {}),
    ...(opts.session ? { id: opts.session } : {}),
    ...environment,
    ...progress,
  });
  return { ...here, session: started.session };
}

/** Two wrappers in one worktree are serialised (every snapshot and restore holds the worktree's content lock), not refused: the warning that says so. */
async function otherWrappersWarning(listed: ReturnType<typeof listWrappedSessions>, session: string, repo: Repo): Promise<string[]> {
  const others = (await listed).filter((o) => o.id !== session && o.worktree === repo.worktree && o.status === 'running' && !!o.owner);
  if (others.length === 0) return [];
  return [
    `${others.map((o) => `session ${o.id} (wrapper pid ${o.owner?.pid})`).join(', ')} also runs in this worktree: snapshots and undos of both take turns, never interleaved, and each session records the other's edits as changes made outside its tool calls. To run agents side by side, give each its own worktree: agentsnap wrap --worktree -- <agent>.`,
  ];
}

/** The agent's hooks for this run: on its command line, and any state they need beside it (undone by finish()). */
async function injectRunHooks(
  opts: WrapOptions,
  command: string[],
  agent: Agent,
  begun: BegunWrapSession,
): Promise<{ adapter: ReturnType<typeof adapterOrGeneric>; argv: string[]; agentEnv: Record<string, string>; injected: RunHooks | null }> {
  const { repo, session, warnings } = begun;
  const adapter = adapterOrGeneric(agent);
  const run = runContextFor({
    command,
    at: findAgent(command)?.index ?? 0,
    cwd: opts.cwd,
    env: opts.env,
    agent,
    runDir: begun.runDir,
    where: { repo, session },
    mcp: !!opts.mcp,
  });
  const argv = adapter.wrapArgv?.(run) ?? [...command];
  if (opts.mcp && agent === 'generic') {
    warnings.push(
      `--mcp: agentsnap knows no per-run MCP configuration of ${command[0] ?? 'this agent'}; add \`${shellQuote(process.execPath)} ${shellQuote(AGENTSNAP_BIN)} mcp\` to its own MCP servers (AGENTSNAP_SESSION names this session).`,
    );
  }
  if (!adapter.prepareRun) return { adapter, argv, agentEnv: {}, injected: null };
  warnings.push(...(adapter.recover?.(sessionsDir(repo)) ?? []));
  try {
    const injected = adapter.prepareRun(run);
    return { adapter, argv, agentEnv: injected.env, injected };
  } catch (e) {
    await begun.server?.close();
    await endSession(begun.ctx, session, { exitCode: null, signal: null }).catch(() => undefined); // the hooks could not be added: that error is the one reported
    throw wrapFailed(`could not add agentsnap's hooks to ${adapter.displayName}`, e);
  }
}

/** The wrapped agent's environment: the caller's, the session worktree's and the hooks' additions, and the AGENTSNAP_* variables. */
function agentEnvironment(opts: WrapOptions, begun: BegunWrapSession, agent: Agent, agentEnv: Record<string, string>): NodeJS.ProcessEnv {
  return {
    ...opts.env,
    ...begun.sessionEnv,
    ...agentEnv,
    // As a shell's `cd` would: a session worktree's agent must not take its project from the caller's PWD (OpenCode does).
    PWD: path.resolve(begun.cwd),
    AGENTSNAP_SESSION: begun.session,
    AGENTSNAP_WORKTREE: begun.repo.worktree,
    // In a shadow repository's directory: its calls keep going there even if the agent runs `git init` (git/shadow.ts).
    ...(begun.repo.shadow ? { AGENTSNAP_SHADOW: begun.repo.shadow.gitDir } : {}),
    AGENTSNAP_BIN,
    AGENTSNAP_NODE: process.execPath,
    AGENTSNAP_AGENT: agent,
    // Hooks that `init` wrote into the agent's settings stand aside: the injected ones record the calls.
    AGENTSNAP_HOOKS: agent === 'generic' ? '' : agent,
  };
}

/** A begun wrap while its agent runs: what finishWrap and abandonWrap end. */
interface RunningWrap extends BegunWrapSession {
  opts: WrapOptions;
  command: string[];
  agent: Agent;
  program: string;
  adapter: ReturnType<typeof adapterOrGeneric>;
  injected: RunHooks | null;
  auto: ReturnType<typeof startAutoCheckpoints> | null;
  autoGc: ReturnType<typeof maybeAutoGc>;
  /** Warnings of the run's end (the automatic checkpoints', the hooks' removal, the end's). */
  endWarnings: string[];
}

/** The agent could not be started: the session ends, and this throws why. */
async function abandonWrap(w: RunningWrap, e: unknown): Promise<never> {
  await w.auto?.stop();
  await w.server?.close();
  w.endWarnings.push(...(w.injected?.finish() ?? []));
  await endSession(w.ctx, w.session, { exitCode: null, signal: null }).catch(() => undefined); // the agent did not start: that error is the one reported
  await w.autoGc;
  throw errors.invalidArgument(`cannot start ${w.command[0]}: ${(e as Error).message}`, { data: { program: w.program } });
}

/** The agent exited: the final snapshot and the session's end, the hooks removed and the server closed (or left to watch). */
async function finishWrap(w: RunningWrap, exit: { code: number | null; signal: NodeJS.Signals | null }): Promise<WrapResult> {
  const { ctx, server, session, agent, repo, endWarnings } = w;
  await w.auto?.stop();
  // The final snapshot comes from the server's engine when it has taken one (what its watcher saw since, instead
  // of a scan of the whole worktree): the server closes after it. An agent that made no call started no engine.
  const engine = server ? serverEngineIfUp(server) : null;
  const endCtx: Context =
    engine && engine.stats.full + engine.stats.incremental > 0 ? { ...ctx, snapshotter: engineSnapshotter(engine, repo) } : ctx;
  // Without the engine the server has nothing to do for the end: it closes beside the final snapshot (its close
  // gives a client that read its pid file just before it went 50 ms to send its call, which need not delay the end).
  const closing = endCtx === ctx ? server?.close() : undefined;
  endWarnings.push(...(w.injected?.finish() ?? []));
  const exitCode = exitCodeOf(exit);
  let endError: AgentsnapError | null = null;
  let wholeRun: EndResult['wholeRun'] = null;
  try {
    // A last call the agent ended without a post hook (Codex's failed apply_patch) is closed as its files tell, not `interrupted`.
    if (w.adapter.callEnded) await closeEndedCalls(endCtx, session, w.adapter).catch(() => undefined); // those calls stay open and are closed as interrupted by the end below
    const end = await endSession(endCtx, session, {
      exitCode: exit.code,
      signal: exit.signal,
      packInBackground: w.opts.servedBy ? 'deferred' : true,
      // Never silently nothing: a run that recorded no step but changed files becomes one step.
      runStep: wholeRunStep(agent),
    });
    wholeRun = end.wholeRun;
    endWarnings.push(...unhookedWarning(agent, session, wholeRun));
  } catch (e) {
    endError = isAgentsnapError(e) ? e : errors.internal(e instanceof Error ? e.message : String(e), { cause: e });
  }
  await (closing ?? server?.close());
  // The next session in this worktree finds a server that has watched since: its baseline and end cost what a
  // hooked call does (see above). It exits after agentsnap.serverIdle without a call, like any background server.
  if (server && !w.inWorktree && serverAfterWrap(w.opts.env, w.settings)) spawnBackgroundServer(repo);
  await w.autoGc;
  return {
    session,
    agent,
    exitCode,
    signal: exit.signal,
    endError,
    worktree: repo.worktree,
    sessionWorktree: w.inWorktree,
    warnings: endWarnings,
    wholeRun,
  };
}
