// The public API: validates what callers pass, then calls the internal layer,
// which trusts its input. The CLI is a thin layer over these functions.
import fs from 'node:fs';
import nodePath from 'node:path';
import { errors } from '../base/errors.js';
import { type Repo } from '../git/repo.js';
import { missingObjects } from '../git/missing.js';
import { contextFor, repoFor } from './open.js';
import type { ContextOpener } from '../session/context.js';
import { autoStartServer } from '../server/server.js';
import {
  endByUser,
  listSessions,
  loadSession,
  recordCheckpoint,
  recordPost,
  recordPre,
  selectSession,
  sessionPaths,
  sessionForSnap,
  stepRef,
  type SnapshotResult,
} from '../session/session.js';
import { describeStep, diffStates, filterSteps, parseStatePoint, showStep, stepOf, type StatePoint } from '../session/read.js';
import { sessionSettings, type Session, type Step } from '../session/model.js';
import { dependencyFiles } from '../deps/deps.js';
import { readJournal, type ChangedPath, type JournalEvent, type StepPostEvent } from '../session/journal.js';
import { operationLog, stepPositions, type OpLogEntry } from '../restore/op-undo.js';
import { foldOps, undoneSteps } from '../restore/undo.js';
import { sessionIdOrName } from '../worktrees/worktree.js';
import { undoApply, type UndoApplyResult } from '../worktrees/apply-undo.js';
import {
  applySession,
  discardSession,
  promoteSession,
  sessionsOverview,
  type ApplyResult,
  type DiscardResult,
  type PromoteResult,
  type SessionOverview,
} from '../worktrees/parallel.js';
import { gc as runGc, parseDuration, type GcReport } from '../worktrees/gc.js';
import { hooksStatus } from '../install/git-hooks.js';
import { INIT_AGENTS, stillInitialised, type InitAgent } from '../install/init.js';
import { planAt, planHistory, type PlanState } from '../session/plan.js';
import { environmentAt, type StepEnvironment } from '../session/environment.js';
import { agentProcesses, type AgentProcess } from '../session/processes.js';
import { environmentMatcher, loadSettings } from '../settings/settings.js';
import { latestCheckByStep, maybeStartAutoCheck, type CheckResult } from '../check/check.js';
import { leftBehindHint, refuseInShadow, setAsideShadows, shadowLeftBehind } from '../git/shadow.js';

export interface RepoOptions {
  /** Directory inside the worktree (default: process.cwd()). */
  cwd?: string;
  /** Environment to read AGENTSNAP_* and git variables from (default: process.env). */
  env?: NodeJS.ProcessEnv;
  /** For hosts that keep a repository open (the warm server): the context of a call in `cwd` (its repository, settings, snapshotter…). */
  openContext?: ContextOpener | undefined;
}

export interface SessionOptions extends RepoOptions {
  session?: string | undefined;
}

/** A step number as every API function that takes one checks it (show, snap --step, undo, restore, revert): steps count from 1. */
export function stepNumber(n: unknown, what = 'step'): number {
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1) {
    throw errors.invalidArgument(`${what} must be a whole number of 1 or more, not ${JSON.stringify(n)}.`, { data: { value: n } });
  }
  return n;
}

/** A count (--keep, --last): a whole number of 0 or more. */
function countArg(n: unknown, what: string): number {
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) {
    throw errors.invalidArgument(`${what} must be a whole number of 0 or more, not ${JSON.stringify(n)}.`, { data: { value: n } });
  }
  return n;
}

/** A session named by its id or its --name (see sessionIdOrName); undefined stays undefined (the default session). */
export function sessionArg(repo: Repo, value: unknown, opts: { mayBeNew?: boolean } = {}): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') throw errors.invalidArgument('name the session (see `agentsnap sessions`).');
  return sessionIdOrName(repo, value, opts);
}

export interface SnapOptions extends SessionOptions {
  phase?: 'pre' | 'post' | undefined;
  step?: number | undefined;
  tool?: string | undefined;
  message?: string | undefined;
  status?: StepPostEvent['status'] | undefined;
  onProgress?: (phase: string) => void;
  /** After the snapshot, start a background server for the next calls (see autoStartServer): the CLI's Node path. */
  autoStartServer?: boolean;
}

export interface SnapOutcome extends SnapshotResult {
  phase: 'pre' | 'post' | 'checkpoint';
  /** Set when this call started the session (its baseline is step 0). */
  startedSession: boolean;
  ref: string;
  /** The shadow repository's directory, when the worktree is in no git repository (issue 33). */
  shadow?: string;
  /** A shadow kept for another directory at this path, set aside when this call made its own. */
  shadowSetAside?: string;
}

/** `agentsnap snap`: a checkpoint, or the pre or post snapshot of a tool call. */
export async function snap(opts: SnapOptions = {}): Promise<SnapOutcome> {
  if (opts.phase !== undefined && opts.phase !== 'pre' && opts.phase !== 'post') {
    throw errors.invalidArgument(`--phase must be pre or post, not ${JSON.stringify(opts.phase)}.`);
  }
  if (opts.step !== undefined) {
    stepNumber(opts.step);
    if (opts.phase !== 'post') throw errors.invalidArgument('--step goes with --phase post (pre and checkpoints allocate the next step).');
  }
  const ctx = await contextFor({ ...opts, shadow: 'create' });
  const { repo, settings } = ctx;
  const session = sessionArg(repo, opts.session, { mayBeNew: true });
  const progress = opts.onProgress ? { onProgress: opts.onProgress } : {};
  const { id, created } = await sessionForSnap(ctx, { session, ...progress, start: opts.phase !== 'post' });
  const common = progress;
  // A session this call started: its baseline and this snapshot are one instant, taken by one scan.
  const sameInstantAs = created;
  let res: SnapshotResult;
  let phase: SnapOutcome['phase'];
  if (opts.phase === 'pre') {
    phase = 'pre';
    res = await recordPre(ctx, id, {
      ...common,
      sameInstantAs,
      tool: opts.tool ?? null,
      message: opts.message ?? null,
      env: opts.env ?? process.env,
    });
  } else if (opts.phase === 'post') {
    phase = 'post';
    res = await recordPost(ctx, id, {
      ...common,
      ...(opts.step !== undefined ? { step: opts.step } : {}),
      ...(opts.status ? { status: opts.status } : {}),
    });
  } else {
    phase = 'checkpoint';
    res = await recordCheckpoint(ctx, id, { ...common, sameInstantAs, tool: opts.tool ?? null, message: opts.message ?? null });
  }
  // A step (or checkpoint) ended: agentsnap.check, when set, checks the newest state in the background.
  if (phase !== 'pre') maybeStartAutoCheck(repo, id, settings);
  // With the repository and settings already at hand (opening it again costs two git processes).
  if (opts.autoStartServer) {
    try {
      autoStartServer(repo, settings);
    } catch {
      // A server is an optimisation: the snapshot is taken either way.
    }
  }
  return {
    ...res,
    phase,
    startedSession: created !== null,
    ref: stepRef(id, res.step),
    ...(repo.shadow ? { shadow: repo.shadow.dir } : {}),
    ...(repo.shadow?.setAside ? { shadowSetAside: repo.shadow.setAside } : {}),
  };
}

export interface EndOutcome {
  session: string;
  /** False: the session had already ended (or been discarded); nothing was written. */
  ended: boolean;
  /** The final snapshot, when the worktree changed after the session's last step. */
  commit: string | null;
  changed: ChangedPath[];
}

/**
 * `agentsnap end`: ends the current session (--session, AGENTSNAP_SESSION, else the running session of this
 * worktree: the one `snap` continues), so that `gc --all` no longer counts it in use. A session a live wrapper
 * runs is refused: its wrapper ends it.
 */
export async function end(opts: SessionOptions = {}): Promise<EndOutcome> {
  const ctx = await contextFor(opts);
  const { repo } = ctx;
  const named = sessionArg(repo, opts.session);
  let id: string;
  if (named || repo.callerEnv.AGENTSNAP_SESSION) {
    id = (await selectSession(repo, { session: named })).id;
  } else {
    const running = (await listSessions(repo)).filter((s) => s.worktree === repo.worktree && s.status === 'running');
    // The one `snap` continues; a wrapped one is named only to say that its wrapper ends it.
    const found = running.find((s) => !s.owner) ?? running[0];
    if (!found) {
      throw errors.noSession(`no session is running in this worktree (${repo.worktree}): there is nothing to end.`, {
        hint: '`agentsnap sessions` lists the sessions and whether each has ended.',
        data: { worktree: repo.worktree },
      });
    }
    id = found.id;
  }
  return { session: id, ...(await endByUser(ctx, id)) };
}

/** `agentsnap sessions`: every session of the repository, most recently active first, with worktree, liveness, changes and disk use. */
export async function sessions(opts: RepoOptions = {}): Promise<SessionOverview[]> {
  return sessionsOverview(await repoFor(opts));
}

function requireSession(repo: Repo, id: unknown): string {
  if (typeof id !== 'string' || id === '') throw errors.invalidArgument('name the session (see `agentsnap sessions`).');
  return sessionIdOrName(repo, id);
}

export interface ApplyCommandOptions extends RepoOptions {
  session: string;
  forceConflicts?: boolean;
  /** Only say what would be written (ApplyResult.dryRun): nothing changes. */
  dryRun?: boolean;
}

/** `agentsnap apply <session>`: the session's net change merged into this worktree. */
export async function apply(opts: ApplyCommandOptions): Promise<ApplyResult> {
  const repo = await repoFor(opts);
  refuseInShadow(repo, 'apply');
  const id = requireSession(repo, opts.session);
  return applySession(repo, id, { forceConflicts: !!opts.forceConflicts, dryRun: !!opts.dryRun });
}

export interface UndoApplyCommandOptions extends RepoOptions {
  /** Only an apply of this session (id or name); default: the last apply into this worktree. */
  session?: string | undefined;
  force?: boolean;
}

/** `agentsnap apply --undo`: the last apply into this worktree taken back, where nothing changed the paths since. */
export async function applyUndo(opts: UndoApplyCommandOptions = {}): Promise<UndoApplyResult> {
  const repo = await repoFor(opts);
  const session = sessionArg(repo, opts.session);
  return undoApply(repo, { session, force: !!opts.force });
}

export interface PromoteCommandOptions extends RepoOptions {
  session: string;
  branch: string;
  message?: string | undefined;
  force?: boolean;
  /** Also commit what was uncommitted in the session's worktree before it started (left out by default). */
  includeUncommitted?: boolean;
}

/** `agentsnap promote <session> --branch NAME`: one ordinary commit on a new branch. */
export async function promote(opts: PromoteCommandOptions): Promise<PromoteResult> {
  if (typeof opts.branch !== 'string' || opts.branch === '') throw errors.invalidArgument('--branch NAME is required.');
  const repo = await repoFor(opts);
  refuseInShadow(repo, 'promote');
  const id = requireSession(repo, opts.session);
  return promoteSession(repo, id, {
    branch: opts.branch,
    message: opts.message,
    force: !!opts.force,
    includeUncommitted: !!opts.includeUncommitted,
  });
}

export interface DiscardCommandOptions extends RepoOptions {
  session: string;
  purge?: boolean;
  force?: boolean;
}

/** `agentsnap discard <session>`: final snapshot, then the session's worktree goes. */
export async function discard(opts: DiscardCommandOptions): Promise<DiscardResult> {
  const repo = await repoFor(opts);
  const id = requireSession(repo, opts.session);
  return discardSession(repo, id, { purge: !!opts.purge, force: !!opts.force });
}

export interface GcCommandOptions extends RepoOptions {
  /** A duration such as 14d, 12h, 0. */
  olderThan?: string | undefined;
  keep?: number | undefined;
  dryRun?: boolean;
  all?: boolean;
  force?: boolean;
}

/** `agentsnap gc`: drops old sessions and agentsnap's orphans; reports disk use before and after. */
export async function gc(opts: GcCommandOptions = {}): Promise<GcReport> {
  if (opts.keep !== undefined) countArg(opts.keep, '--keep');
  const olderThanMs = opts.olderThan === undefined ? undefined : parseDuration('--older-than', opts.olderThan);
  const repo = await repoFor(opts);
  // --all takes out agentsnap's data; its set-up has its own commands (README "Uninstall"): named when left.
  const hooks = opts.all ? await hooksStatus(repo) : null;
  const hooksInstalled = !!hooks && (hooks.retired.length > 0 || hooks.hooks.some((h) => h.state === 'current' || h.state === 'outdated'));
  const report = await runGc(repo, {
    ...(olderThanMs !== undefined ? { olderThanMs } : {}),
    ...(opts.keep !== undefined ? { keep: opts.keep } : {}),
    dryRun: !!opts.dryRun,
    all: !!opts.all,
    force: !!opts.force,
    keepNotesRewrite: hooksInstalled,
  });
  // In a shadow repository's directory, everything agentsnap put there is the shadow repository: it goes whole, with
  // those set aside at this path (kept for directories that were here before). A shadow left behind by `git init`
  // is left for `shadow import`, and said so.
  if (opts.all && report.refused.length === 0) {
    report.removedShadows = [...(repo.shadow ? [repo.shadow.dir] : []), ...setAsideShadows(repo.worktree, repo.callerEnv)];
    if (!opts.dryRun) for (const d of report.removedShadows) fs.rmSync(d, { recursive: true, force: true });
    if (repo.shadow) report.after = 0;
    const left = shadowLeftBehind(repo);
    if (left) report.left.push(`the shadow repository ${left.shadow.dir} from before \`git init\`: ${leftBehindHint(left, repo.worktree)}`);
  }
  if (hooks && hooksInstalled) report.left.push(`agentsnap's git hooks in ${hooks.dir}: \`agentsnap hooks uninstall\` takes them out`);
  if (opts.all)
    for (const a of INIT_AGENTS)
      if (stillInitialised(repo, a as InitAgent))
        report.left.push(`${a}'s agentsnap hooks: \`agentsnap init --remove ${a}\` takes them out`);
  return report;
}

export interface ResolvedSession {
  repo: Repo;
  session: Session;
  source: 'flag' | 'env' | 'recent';
}

/** The session a command operates on (--session, AGENTSNAP_SESSION, or the most recent of this worktree). */
export async function resolveSession(opts: SessionOptions = {}): Promise<ResolvedSession> {
  const repo = await repoFor(opts);
  const session = sessionArg(repo, opts.session);
  const sel = await selectSession(repo, { session });
  return { repo, session: loadSession(repo, sel.id), source: sel.source };
}

export interface LogOptions extends SessionOptions {
  tool?: string | undefined;
  last?: number | undefined;
  paths?: string[] | undefined;
  /** Only steps whose recorded input, output, error or message holds this text (plain text, case-insensitive). */
  grep?: string | undefined;
}

/** A row of `log`: the step, and what its call was in one line (`describeStep`: the command, the file, the MCP tool's argument). */
export interface LogRow {
  session: Session;
  step: Step;
  what: string | null;
  /** The agent's plan as of this step (after it); null: no plan tool ran by then. */
  plan: PlanState | null;
  /** The newest check of the state after this step (`agentsnap check`); null: never checked. */
  check: CheckResult | null;
  /** Its snapshot (before or after) was deleted by the user's git prune: it cannot be undone to. */
  lost?: boolean;
  /** An undo (not redone, not taken back) took this step back. */
  undone?: boolean;
  /** The dependency manifests and lockfiles the step changed (issue 33: "dependencies changed"); [] for none. */
  depsChanged: string[];
  /** The session's environment directories (agentsnap.environment and `wrap --environment`): `log` shows each as one line. */
  environment: string[];
}

/** One entry of `log`'s timeline: a step (with the user's edits before it on the step), or an operation. */
export type LogEntry = { row: LogRow; op?: undefined } | { op: OpLogEntry; row?: undefined };

/** The dependency manifests and lockfiles a step changed (its own changes, not the user's edits before it). */
function stepDeps(step: Step): string[] {
  return dependencyFiles(step.changed.map((c) => c.path));
}

/** The rows whose snapshots the user's git prune deleted, marked `lost`. */
async function markLost(repo: Repo, rows: LogRow[]): Promise<LogRow[]> {
  const gone = await missingObjects(
    repo,
    rows.flatMap((r) => [r.step.pre, r.step.post]),
  );
  if (gone.size === 0) return rows;
  return rows.map((r) => ((r.step.pre && gone.has(r.step.pre)) || (r.step.post && gone.has(r.step.post)) ? { ...r, lost: true } : r));
}

/** `agentsnap log`: the steps of a session, filtered. */
export async function log(
  opts: LogOptions = {},
): Promise<{ session: Session; steps: Step[]; rows: LogRow[]; timeline: LogEntry[]; source: ResolvedSession['source'] }> {
  if (opts.last !== undefined) countArg(opts.last, '--last');
  const r = await resolveSession(opts);
  const paths = (opts.paths ?? []).map((p) => toRepoPath(r.repo, p));
  const steps = filterSteps(r.session, { tool: opts.tool, last: opts.last, paths, grep: opts.grep });
  const plans = planHistory(r.session);
  const checks = latestCheckByStep(r.session);
  const events = readJournal(sessionPaths(r.repo, r.session.id).journal).events;
  const undone = undoneSteps(foldOps(events));
  const { environment } = sessionSettings(await loadSettings(r.repo), r.session);
  const rows = await markLost(
    r.repo,
    steps.map((step) => ({
      session: r.session,
      step,
      what: describeStep(r.session, step),
      plan: planAt(r.session, step.step, plans),
      check: checks.get(step.step) ?? null,
      ...(undone.has(step.step) ? { undone: true } : {}),
      depsChanged: stepDeps(step),
      environment,
    })),
  );
  return { session: r.session, steps, rows, timeline: timelineOf(events, rows, opts), source: r.source };
}

/**
 * The steps shown and the operations among them, in journal order (issue 32: `log` is the one timeline).
 * A filter by tool, text or path selects steps only; with --last, the operations from the first step shown.
 */
function timelineOf(events: JournalEvent[], rows: LogRow[], opts: LogOptions): LogEntry[] {
  const filtered = opts.tool !== undefined || opts.grep !== undefined || (opts.paths ?? []).length > 0;
  const at = stepPositions(events);
  const first = rows.length > 0 && opts.last !== undefined ? (at.get(rows[0]!.step.step) ?? 0) : -1;
  const ops = filtered ? [] : operationLog(events).filter((o) => o.at > first);
  const entries: { at: number; entry: LogEntry }[] = [
    ...rows.map((row) => ({ at: at.get(row.step.step) ?? Number.MAX_SAFE_INTEGER, entry: { row } })),
    ...ops.map((op) => ({ at: op.at, entry: { op } })),
  ];
  return entries.sort((a, b) => a.at - b.at).map((e) => e.entry);
}

/**
 * `agentsnap log --all-sessions`: the steps of every session of the repository (every worktree's, ended and
 * discarded ones included) that pass the filters, in the order they started; `last` counts over them all.
 */
export async function logAllSessions(opts: Omit<LogOptions, 'session'> = {}): Promise<{ rows: LogRow[]; sessions: number }> {
  if (opts.last !== undefined) countArg(opts.last, '--last');
  const repo = await repoFor(opts);
  const paths = (opts.paths ?? []).map((p) => toRepoPath(repo, p));
  const rows: LogRow[] = [];
  const list = await listSessions(repo);
  const settings = await loadSettings(repo);
  for (const summary of list) {
    let session: Session;
    try {
      session = loadSession(repo, summary.id);
    } catch {
      continue; // an unreadable session is doctor's to report
    }
    const plans = planHistory(session);
    const checks = latestCheckByStep(session);
    const { environment } = sessionSettings(settings, session);
    for (const step of filterSteps(session, { tool: opts.tool, paths, grep: opts.grep })) {
      rows.push({
        session,
        step,
        what: describeStep(session, step),
        plan: planAt(session, step.step, plans),
        check: checks.get(step.step) ?? null,
        depsChanged: stepDeps(step),
        environment,
      });
    }
  }
  // Time order across sessions (a session's own steps keep their order when their times tie).
  const order = (r: LogRow) => Date.parse(r.step.startedAt) || 0;
  const sorted = rows
    .map((r, i) => ({ r, i }))
    .sort((a, b) => order(a.r) - order(b.r) || a.i - b.i)
    .map((x) => x.r);
  return {
    rows: await markLost(repo, opts.last !== undefined ? sorted.slice(Math.max(0, sorted.length - opts.last)) : sorted),
    sessions: list.length,
  };
}

/** A path given on the command line (relative to the caller's directory) as a worktree-relative path. */
export function toRepoPath(repo: Repo, p: string): string {
  // An absolute path is the file system's, not the worktree's: `/etc/passwd` is outside
  // (refused as `../x` is), `<worktree>/a.txt` is `a.txt`. Symlinked spellings of the
  // worktree are compared by real path.
  if (nodePath.isAbsolute(p)) {
    const rel = relativeToWorktree(repo.worktree, p);
    if (rel === null) throw errors.invalidArgument(`${p} is outside the worktree.`, { data: { path: p } });
    return toRepoPath({ ...repo, prefix: '' }, rel === '' ? '.' : rel);
  }
  const joined = repo.prefix ? `${repo.prefix}${p}` : p;
  const parts: string[] = [];
  for (const part of joined.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (parts.length === 0) {
        throw errors.invalidArgument(`${p} is outside the worktree.`, { data: { path: p } });
      }
      parts.pop();
    } else parts.push(part);
  }
  return parts.join('/') || '.';
}

/** `abs` relative to the worktree (posix separators), or null when it is not inside it. */
function relativeToWorktree(worktree: string, abs: string): string | null {
  const inside = (root: string, x: string) => {
    const rel = nodePath.relative(root, x);
    return rel === '' || (!rel.startsWith('..') && !nodePath.isAbsolute(rel)) ? rel.split(nodePath.sep).join('/') : null;
  };
  const direct = inside(worktree, nodePath.resolve(abs));
  if (direct !== null) return direct;
  // The deepest part of the path that exists, by its real path (the rest cannot be a link).
  let head = nodePath.resolve(abs);
  let tail = '';
  for (;;) {
    try {
      const real = fs.realpathSync(head);
      return inside(fs.realpathSync(worktree), nodePath.join(real, tail));
    } catch {
      const parent = nodePath.dirname(head); // no such path yet: resolve its deepest existing parent instead
      if (parent === head) return null;
      tail = nodePath.join(nodePath.basename(head), tail);
      head = parent;
    }
  }
}

export interface ShowOptions extends SessionOptions {
  step: number;
  color?: boolean;
  stat?: boolean;
}

/** `agentsnap show N`: what step N was and changed: its call, diff, plan, environment and the processes it left running. */
export async function show(opts: ShowOptions): Promise<{
  session: Session;
  step: Step;
  what: string | null;
  diff: string;
  plan: PlanState | null;
  environment: StepEnvironment;
  /** Live processes this step's call started and left running (a server, a watcher). */
  processes: AgentProcess[];
  /** The dependency manifests and lockfiles the step changed ("dependencies changed"); [] for none. */
  depsChanged: string[];
  /** The step changed files below an environment directory (agentsnap.environment): what was installed is in its snapshots. */
  installedChanged: boolean;
  source: ResolvedSession['source'];
}> {
  stepNumber(opts.step);
  const r = await resolveSession(opts);
  stepOf(r.session, opts.step);
  const out = await showStep(r.repo, r.session.id, opts.step, { color: !!opts.color, stat: !!opts.stat });
  const settings = sessionSettings(await loadSettings(r.repo), r.session);
  const inEnvironment = environmentMatcher(settings.environment);
  return {
    session: r.session,
    step: out.step,
    what: describeStep(r.session, out.step),
    diff: out.diff,
    plan: planAt(r.session, out.step.step),
    environment: environmentAt(r.session, out.step.step),
    processes: agentProcesses(r.session, settings.redactPatterns).filter((p) => p.step === out.step.step),
    depsChanged: stepDeps(out.step),
    installedChanged: out.step.changed.some((c) => inEnvironment(c.path)),
    source: r.source,
  };
}

export interface DiffCommandOptions extends SessionOptions {
  from: string;
  to?: string | undefined;
  color?: boolean;
  stat?: boolean;
  paths?: string[] | undefined;
}

/** `agentsnap diff A [B]`: between two states of a session, or a state and the worktree. */
export async function diff(
  opts: DiffCommandOptions,
): Promise<{ session: Session; from: StatePoint; to: StatePoint | 'worktree'; diff: string; source: ResolvedSession['source'] }> {
  const from = parseStatePoint(opts.from);
  const to = opts.to === undefined ? 'worktree' : parseStatePoint(opts.to);
  const r = await resolveSession(opts);
  const paths = (opts.paths ?? []).map((p) => toRepoPath(r.repo, p));
  const text = await diffStates(r.repo, r.session.id, from, to, { color: !!opts.color, stat: !!opts.stat, paths });
  return { session: r.session, from, to, diff: text, source: r.source };
}
