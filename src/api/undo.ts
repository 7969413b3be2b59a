// Public API of the operations that move the worktree (undo, redo, restore,
// revert), the conversation rewind and status. Validates input and picks the
// session, then calls src/restore/undo.ts, which trusts it.
import { errors } from '../base/errors.js';
import type { Repo } from '../git/repo.js';
import { repoFor } from './open.js';
import { loadSession, selectSession } from '../session/session.js';
import { sessionArg, stepNumber, toRepoPath, type SessionOptions } from './api.js';
import {
  foldOps,
  redoOperation,
  restoreOperation,
  revertOperation,
  statusOf,
  undoOperation,
  type OperationResult,
  type SessionStatusReport,
} from '../restore/undo.js';
import { compactChat, rewindChat, type ChatRewind } from '../restore/rewind.js';
import { readJournal } from '../session/journal.js';
import { serverInfo } from '../server/server.js';
import { readWatchState, type WatcherReport } from '../server/watch-state.js';
import { sessionPaths } from '../session/session.js';
import { planItemsDone, type PlanItem } from '../session/plan.js';
import { agentProcesses, stopAgentProcesses, type AgentProcess } from '../session/processes.js';
import type { StopResult } from '../base/procfs.js';
import { loadSettings } from '../settings/settings.js';
import { lastGood } from './check.js';
import type { DepsSyncListener, DepsSyncOutcome } from '../deps/sync.js';
import { runDepsSync } from './deps.js';
import { shadowLeftBehind } from '../git/shadow.js';

export type { OperationResult, SessionStatusReport, OutsideChange, BothChanged, FileChange, OpRecord } from '../restore/undo.js';
export type { DepsToSync, Ecosystem } from '../deps/deps.js';
export type { DepsSyncOutcome, DepsSyncListener } from '../deps/sync.js';
export type { ChatRewind, ChatFork, ChatCompact, ChatDigest, ConversationSize } from '../restore/rewind.js';

export interface OperationCommonOptions extends SessionOptions {
  /** Print what would change; change nothing. */
  dryRun?: boolean;
  /** Go ahead over changes made outside tool calls and over unprotected steps (all kept in the safety snapshot). */
  force?: boolean;
  /** The worktree exactly as at the target, refusing where the user's edits would be lost (default: take back the agent's changes, keep the user's). */
  exact?: boolean;
  /** A path both the agent and the user changed: merge the user's version with the agent's changes taken out (git merge-file). */
  merge?: boolean;
  /** Test seam: stop after this many file changes, as a crash would. */
  interruptAfter?: number;
  /** The open step of the tool call asking for it (agentsnap's MCP tools): see OperationOptions.byStep. */
  byStep?: number | undefined;
  /**
   * After the operation is done (never in a dry run): run the package manager's command for each dependency
   * manifest or lockfile it moved (`result.deps`), in its directory, with `env`'s PATH. A missing program or a
   * failing command is reported in `depsSync`, never thrown: the operation stays done.
   */
  syncDeps?: boolean;
  /** Hears of each command as it starts and gets its output (default: the output is discarded). */
  depsListener?: DepsSyncListener;
}

async function sessionFor(opts: SessionOptions): Promise<{ repo: Repo; id: string; source: 'flag' | 'env' | 'recent' }> {
  const repo = await repoFor(opts);
  const session = sessionArg(repo, opts.session);
  const sel = await selectSession(repo, { session });
  return { repo, id: sel.id, source: sel.source };
}

function opOptions(opts: OperationCommonOptions) {
  if (opts.exact && opts.merge) {
    throw errors.invalidArgument('--exact and --merge exclude each other: --exact makes the worktree exactly as at the target.', {
      hint: "Drop --exact to take back only the agent's changes and merge the files you changed too.",
    });
  }
  return {
    dryRun: !!opts.dryRun,
    force: !!opts.force,
    exact: !!opts.exact,
    merge: !!opts.merge,
    ...(opts.interruptAfter !== undefined ? { interruptAfter: opts.interruptAfter } : {}),
    ...(opts.byStep !== undefined ? { byStep: stepNumber(opts.byStep, 'byStep') } : {}),
  };
}

export interface UndoOptions extends OperationCommonOptions {
  /** Step to undo (with every later one); default: the last step not already undone. */
  step?: number | undefined;
  /**
   * files (default), chat (conversation only), both, or compact: a fork of the conversation in which
   * everything before step N is one digest and the rest is kept (files untouched).
   */
  scope?: 'files' | 'chat' | 'both' | 'compact';
  /** Also stop the processes the undone steps started and left running (SIGTERM, then SIGKILL). */
  stopProcesses?: boolean;
  /** Back to the state after the last step whose newest check passed (`agentsnap check`), instead of a step. */
  lastGood?: boolean;
}

export interface UndoOutcome {
  source: 'flag' | 'env' | 'recent';
  files: OperationResult | null;
  chat: ChatRewind | null;
  /** The step the conversation was rewound to (before it). */
  chatStep: number | null;
  /** The items of the agent's plan the undone steps had marked completed (the agent may still believe them done). */
  planUndone: PlanItem[];
  /**
   * Live processes the undone steps started and left running (servers, watchers): an undo puts files back,
   * not processes; with `stopProcesses` (not in a dry run) each says how it was stopped.
   */
  processes: (AgentProcess & { stopped?: StopResult })[];
  /** `syncDeps`: what each package manager's command did (null: not asked for, or a dry run). */
  depsSync: DepsSyncOutcome[] | null;
}

/** `agentsnap undo [N]`: the worktree (and/or the conversation) back to before step N. */
export async function undo(opts: UndoOptions = {}): Promise<UndoOutcome> {
  if (opts.lastGood) return undo({ ...opts, lastGood: false, step: await lastGoodStep(opts) });
  const step = opts.step === undefined ? undefined : stepNumber(opts.step);
  const scope = opts.scope ?? 'files';
  if (!['files', 'chat', 'both', 'compact'].includes(scope))
    throw errors.invalidArgument(`scope must be files, chat, both or compact, not ${JSON.stringify(scope)}.`);
  const { repo, id, source } = await sessionFor(opts);
  let files: OperationResult | null = null;
  // The command's one read of the settings: the operation and the redaction of its processes share it.
  const settings = scope === 'files' || scope === 'both' ? await loadSettings(repo) : null;
  if (settings) files = await undoOperation(repo, id, step, { ...opOptions(opts), settings });
  let chat: ChatRewind | null = null;
  let chatStep: number | null = null;
  if (scope !== 'files') {
    const s = loadSession(repo, id);
    chatStep = files?.target.step ?? step ?? lastUndoneStep(repo, id) ?? s.steps[s.steps.length - 1]?.step ?? null;
    if (chatStep === null) throw errors.invalidArgument(`session ${id} has no steps: there is no conversation to rewind.`);
    const st = s.steps.find((x) => x.step === chatStep);
    if (!st) throw errors.stepOutOfRange(`session ${id} has no step ${chatStep}.`, { data: { session: id, step: chatStep } });
    // The digest says whether the files are back to before the step: this call put them there
    // (--both), or the last operation was an undo to it; `--chat` alone restores none.
    const filesRestored = files !== null ? files.target.step === chatStep : lastUndoneStep(repo, id) === chatStep;
    if (!opts.dryRun) chat = scope === 'compact' ? compactChat(s, st, s.cwd) : rewindChat(s, st, s.cwd, { filesRestored });
  }
  let planUndone: PlanItem[] = [];
  let processes: UndoOutcome['processes'] = [];
  const from = files?.target.step;
  if (files && settings && from !== undefined) {
    const s = loadSession(repo, id);
    if (files.undone.length > 0) planUndone = planItemsDone(s, Math.min(...files.undone), Math.max(...files.undone));
    // `undo N` undoes N and every later step, also when they were undone already (a second `undo N --stop-processes`).
    processes = agentProcesses(s, settings.redactPatterns).filter((p) => p.step >= from);
    if (opts.stopProcesses && !opts.dryRun) processes = await stopAgentProcesses(s, processes);
  }
  return { source, files, chat, chatStep, planUndone, processes, depsSync: await runDepsSync(repo, files, opts) };
}

/** The step `undo --last-good` undoes: the first one after the last state that passed its check. */
async function lastGoodStep(opts: UndoOptions): Promise<number> {
  if (opts.step !== undefined)
    throw errors.invalidArgument('--last-good and a step number exclude each other: --last-good picks the step.');
  const { repo, id } = await sessionFor(opts);
  const s = loadSession(repo, id);
  const found = lastGood(s);
  if (!found) {
    throw errors.invalidArgument(`no state of session ${id} has passed a check yet: there is no last good step.`, {
      hint: "Check the steps first: agentsnap check --each --run '<your test command>'.",
      data: { session: id },
    });
  }
  if (found.undoFrom === null) {
    throw errors.invalidArgument(
      `the state after the newest step (${found.good}) passed its check: there is nothing after the last good step to undo.`,
      { data: { session: id, good: found.good } },
    );
  }
  return found.undoFrom;
}

/** The step the last undo went back to, when the last operation was an undo. */
function lastUndoneStep(repo: Repo, id: string): number | null {
  const ops = foldOps(readJournal(sessionPaths(repo, id).journal).events);
  const last = ops[ops.length - 1];
  return last && last.kind === 'undo' && last.status === 'done' ? (last.target.step ?? null) : null;
}

/** What redo, restore and revert return: the operation's result, where the session came from, what `syncDeps` ran. */
export type OperationOutcome = OperationResult & { source: 'flag' | 'env' | 'recent'; depsSync: DepsSyncOutcome[] | null };

/** `agentsnap redo`: back to the state before the last undo (itself an operation, undoable). */
export async function redo(opts: OperationCommonOptions = {}): Promise<OperationOutcome> {
  const { repo, id, source } = await sessionFor(opts);
  const r = await redoOperation(repo, id, opOptions(opts));
  return { ...r, source, depsSync: await runDepsSync(repo, r, opts) };
}

export interface RestoreOptions extends OperationCommonOptions {
  step: number;
  /** The state after step N instead of before it. */
  after?: boolean;
  /** Paths relative to the caller's directory (a directory covers what is below it). */
  paths: string[];
}

/** `agentsnap restore N -- <paths>`: these paths as they were before (or after) step N. */
export async function restore(opts: RestoreOptions): Promise<OperationOutcome> {
  const step = stepNumber(opts.step);
  if (!Array.isArray(opts.paths) || opts.paths.length === 0) {
    throw errors.invalidArgument('name the paths to restore, e.g. `agentsnap restore 3 -- src/app.ts`.', {
      hint: 'To put the whole worktree back, use `agentsnap undo N`.',
    });
  }
  const { repo, id, source } = await sessionFor(opts);
  const paths = opts.paths.map((p) => toRepoPath(repo, p));
  const all = paths.includes('.');
  const r = await restoreOperation(repo, id, step, opts.after ? 'after' : 'before', all ? [] : paths, opOptions(opts));
  return { ...r, source, depsSync: await runDepsSync(repo, r, opts) };
}

/** `agentsnap revert N`: takes back only what step N changed, keeping later steps (three-way merge). */
export async function revert(opts: OperationCommonOptions & { step: number }): Promise<OperationOutcome> {
  const step = stepNumber(opts.step);
  const { repo, id, source } = await sessionFor(opts);
  const r = await revertOperation(repo, id, step, opOptions(opts));
  return { ...r, source, depsSync: await runDepsSync(repo, r, opts) };
}

/** `agentsnap status`: where the session stands, the processes its calls left running, and the warm server's file watcher (null: no server runs here). */
export async function status(opts: SessionOptions = {}): Promise<
  SessionStatusReport & {
    processes: AgentProcess[];
    source: 'flag' | 'env' | 'recent';
    watcher: WatcherReport | null;
    /** The shadow repository the snapshots are kept in (the directory is in no git repository), else null. */
    shadow: string | null;
    /** In a git repository: a shadow repository kept from before `git init` (`agentsnap shadow import`), else null. */
    shadowLeftBehind: string | null;
  }
> {
  const { repo, id, source } = await sessionFor(opts);
  const server = serverInfo(repo);
  const processes = agentProcesses(loadSession(repo, id), (await loadSettings(repo)).redactPatterns);
  return {
    ...statusOf(repo, id),
    processes,
    source,
    watcher: server ? readWatchState(server.runDir, server.pid) : null,
    shadow: repo.shadow?.dir ?? null,
    shadowLeftBehind: shadowLeftBehind(repo)?.shadow.dir ?? null,
  };
}
