// Which sessions there are and which one a command means: summaries, liveness
// (decided here only: statusNow, wrapperRunning, wrapperGone, sessionInUse)
// and selection (--session, AGENTSNAP_SESSION, else the most recent).
import fs from 'node:fs';
import { ensureStateDir, replaceStateFile, stateLayout } from '../base/state-dir.js';
import os from 'node:os';
import path from 'node:path';
import { errors, isAgentsnapError } from '../base/errors.js';
import { type SessionStatus } from './journal.js';
import { currentOwner, ownerAlive } from '../base/lock.js';
import { sessionStatus, type Session } from './model.js';
import type { Repo } from '../git/repo.js';
import { sessionIdProblem } from '../base/ids.js';
import { sessionIds } from './refs.js';
import { commandText } from '../agents/describe.js';
import { type SessionState, loadSession, loadState, loadSessionExists } from './state.js';
import { leftBehindHint, shadowLeftBehind } from '../git/shadow.js';

export interface SessionSummary {
  id: string;
  worktree: string;
  status: SessionStatus;
  steps: number;
  openSteps: number;
  createdAt: string;
  lastActivity: string;
  agent: string | null;
  command: string[] | null;
  /** What it is shown and can be named by (sessionName); null: by its id only. */
  name: string | null;
  head: string;
  baseline: string;
  baseHead: string | null;
  branch: string | null;
  /** The wrapper process the session follows, if any. */
  owner: Session['owner'];
}

/**
 * The name a session is shown with and can be named by: the one given (`wrap --name`), else the conversation's
 * first prompt, else its command, shortened (`sh -c '<script>'` as its script); null for a session `snap` started.
 */
export function sessionName(s: Pick<Session, 'name' | 'command' | 'prompt'>): string | null {
  if (s.name) return s.name;
  const text = s.prompt ?? (s.command ? commandText(s.command) : null);
  if (!text) return null;
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= 32 ? line : `${line.slice(0, 31)}…`;
}

/** A session's status now: one whose wrapper process is gone counts as ended. */
export function statusNow(s: Pick<Session, 'discarded' | 'ended' | 'owner'>): SessionStatus {
  return sessionStatus(s, !s.owner || ownerAlive(s.owner));
}

/** A live wrapper process runs the session now. */
export function wrapperRunning(s: Pick<Session, 'discarded' | 'ended' | 'owner'>): boolean {
  return !!s.owner && statusNow(s) === 'running';
}

/** The session is marked running, but its wrapper process is gone (doctor --fix journals its end). */
export function wrapperGone(s: Pick<Session, 'discarded' | 'ended' | 'owner'>): boolean {
  return !s.ended && !s.discarded && !!s.owner && statusNow(s) === 'ended';
}

/** Whether a session is or may still be in use: its wrapper lives, or (without a wrapper) it was active within the last hour. */
export function sessionInUse(s: Pick<SessionSummary, 'status' | 'lastActivity' | 'owner'>, now = Date.now()): boolean {
  if (s.status !== 'running') return false;
  return !!s.owner || now - Date.parse(s.lastActivity) < 60 * 60 * 1000;
}

function summaryOf(state: SessionState): SessionSummary {
  const s = state.session;
  return {
    id: s.id,
    worktree: s.worktree,
    status: statusNow(s),
    owner: s.owner,
    steps: s.stepCount,
    openSteps: s.open.length,
    createdAt: s.createdAt,
    lastActivity: s.lastActivity,
    agent: s.agent,
    command: s.command,
    name: sessionName(s),
    head: s.head,
    baseline: s.baseline,
    baseHead: s.baseHead,
    branch: s.branch,
  };
}

/**
 * `<state dir>/running/<id>`: a session a wrapper runs (a session with an owner) has one from its start or resume
 * to its end, so a new wrapper finds the others in its worktree without reading every session of the repository
 * (issue 19: that read grows with the sessions kept). One left by a wrapper that was killed is dropped by the
 * next listing that finds its session no longer running.
 */
export function runningMarker(repo: Pick<Repo, 'stateDir'>, id: string): string {
  return path.join(stateLayout.runningDir(repo), id);
}

export function markRunning(repo: Pick<Repo, 'stateDir'>, id: string): void {
  const file = runningMarker(repo, id);
  try {
    ensureStateDir(path.dirname(file));
    replaceStateFile(file, '');
  } catch {
    /* only the warning about another wrapper in this worktree depends on it */
  }
}

export function unmarkRunning(repo: Pick<Repo, 'stateDir'>, id: string): void {
  fs.rmSync(runningMarker(repo, id), { force: true });
}

/** The sessions whose wrapper runs now (any worktree), from the running markers. */
export async function listWrappedSessions(repo: Repo): Promise<SessionSummary[]> {
  let names: string[];
  try {
    names = fs.readdirSync(stateLayout.runningDir(repo));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return []; // no wrapper ever ran here
    throw e;
  }
  const out: SessionSummary[] = [];
  for (const name of names) {
    if (sessionIdProblem(name) !== undefined) continue;
    try {
      const s = summaryOf(await loadState(repo, name, false));
      if (s.status === 'running' && s.owner) out.push(s);
      else unmarkRunning(repo, name);
    } catch {
      /* gone meanwhile, or unreadable (doctor reports it) */
    }
  }
  return out;
}

/** Every session of the repository (all worktrees), most recently active first. */
export async function listSessions(repo: Repo): Promise<SessionSummary[]> {
  const out: SessionSummary[] = [];
  for (const name of sessionIds(repo)) {
    try {
      out.push(summaryOf(await loadState(repo, name, false)));
    } catch (e) {
      // A link in a journal's place is refused (what to do named), not taken for "no such session".
      if (isAgentsnapError(e) && e.code === 'UnsafeStateFile') throw e;
      /* gone meanwhile, or unreadable: doctor reports it */
    }
  }
  return out.sort((a, b) => (a.lastActivity < b.lastActivity ? 1 : a.lastActivity > b.lastActivity ? -1 : 0));
}

export interface SelectOptions {
  session?: string | undefined;
}

/** Session selection: --session, else AGENTSNAP_SESSION, else the most recently active, non-discarded session of this worktree. */
export async function selectSession(repo: Repo, opts: SelectOptions = {}): Promise<{ id: string; source: 'flag' | 'env' | 'recent' }> {
  if (opts.session) {
    loadSessionExists(repo, opts.session);
    return { id: opts.session, source: 'flag' };
  }
  const fromEnv = repo.callerEnv.AGENTSNAP_SESSION;
  if (fromEnv) {
    loadSessionExists(repo, fromEnv);
    return { id: fromEnv, source: 'env' };
  }
  const mine = (await listSessions(repo)).filter((s) => s.worktree === repo.worktree && s.status !== 'discarded');
  // An ended session that recorded nothing (`wrap -- false`, an agent that exited at once) is not the default:
  // `undo` would say "nothing to undo" while the work is in the session before it.
  const recent = mine.find((s) => !(s.status === 'ended' && s.steps === 0 && recordedNothing(repo, s.id))) ?? mine[0];
  if (!recent) {
    throw errors.noSession(`no agentsnap session in this worktree (${repo.worktree}).`, {
      hint: leftBehindHintOf(repo) ?? 'Start one with `agentsnap wrap -- <agent>` or `agentsnap snap`.',
      data: { worktree: repo.worktree },
    });
  }
  return { id: recent.id, source: 'recent' };
}

function leftBehindHintOf(repo: Repo): string | null {
  const left = shadowLeftBehind(repo);
  return left ? leftBehindHint(left, repo.worktree) : null;
}

/** The session's head is its baseline's tree: nothing happened in it. */
function recordedNothing(repo: Repo, id: string): boolean {
  try {
    const s = loadSession(repo, id);
    return s.headTree === s.baselineTree;
  } catch {
    return false; // an unreadable session: not one that recorded nothing
  }
}

/** The owner record for a wrapper process. */
export function wrapperOwner(): { pid: number; start: string | null; host: string } {
  const o = currentOwner('wrap');
  return { pid: o.pid, start: o.start, host: os.hostname() };
}
