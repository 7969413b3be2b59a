// The processes an agent left running (issue 16), found when asked, never on
// the tool-call path: under `wrap` every process the agent starts inherits
// AGENTSNAP_SESSION=<id>, so a live process of the same user carrying it, that
// started while one of the session's calls ran, was started by that call (a
// server, a watcher, a database the agent left behind). Processes are
// reported and can be stopped; they are never revived by redo.
import path from 'node:path';
import { processesWithEnv, stillRunning, stopProcess, type StopResult } from '../base/procfs.js';
import { packageRoot } from '../base/package-root.js';
import { redactText } from './redact.js';
import type { Session, Step } from './model.js';

export interface AgentProcess {
  pid: number;
  /** The command line, redacted and cut to 200 characters. */
  command: string;
  startedAt: string;
  /** TCP ports it listens on. */
  ports: number[];
  /** The step whose call started it. */
  step: number;
  /** With the pid, its identity (a pid reused later is another process). */
  startTicks: number;
}

/** Slack around a call's start and end: a process's start time is known to ~10 ms, the journal's times to 1 ms. */
const SLACK_MS = 50;

export function sessionMarker(id: string): string {
  return `AGENTSNAP_SESSION=${id}`;
}

/**
 * The step a process that started at `ms` belongs to: the ended call whose run holds it; else, within the slack
 * of the start time's precision, the call nearest to it (a process started right as a call began or ended).
 */
function stepAt(steps: Step[], ms: number): Step | null {
  let near: { st: Step; by: number } | null = null;
  for (const st of steps) {
    if (st.kind !== 'call' || st.source === 'transcript' || !st.endedAt) continue;
    const from = Date.parse(st.startedAt);
    const to = Date.parse(st.endedAt);
    if (ms >= from && ms <= to) return st;
    const by = ms < from ? from - ms : ms - to;
    if (by <= SLACK_MS && (!near || by < near.by)) near = { st, by };
  }
  return near?.st ?? null;
}

/**
 * The session's live processes started by its calls that ended (a process is "left running" once the call that
 * started it ended and it lives on: re-parented away, or kept as the agent's child, as Claude Code keeps its
 * background commands). Left out: the wrapper and the agent itself, agentsnap's own processes, the processes of
 * calls still running, and anything that started outside a call (the agent's own helpers, started with it).
 */
export function agentProcesses(s: Session, redactPatterns: RegExp[] = []): AgentProcess[] {
  const marker = sessionMarker(s.id);
  const all = processesWithEnv(marker);
  // agentsnap's own processes (hooks, a server) carry the marker too.
  const own = [path.join(packageRoot(), 'bin') + path.sep, path.join(packageRoot(), 'dist') + path.sep];
  const out: AgentProcess[] = [];
  for (const p of all) {
    if (s.owner && (p.pid === s.owner.pid || p.ppid === s.owner.pid)) continue;
    if (p.argv.some((a) => own.some((o) => a.startsWith(o)))) continue;
    const st = stepAt(s.steps, p.startedAtMs);
    if (!st) continue;
    const text = redactText(p.argv.join(' '), redactPatterns);
    out.push({
      pid: p.pid,
      command: text.length > 200 ? `${text.slice(0, 199)}…` : text,
      startedAt: new Date(p.startedAtMs).toISOString(),
      ports: p.ports,
      step: st.step,
      startTicks: p.startTicks,
    });
  }
  return out.sort((a, b) => a.step - b.step || a.pid - b.pid);
}

export interface StoppedProcess extends AgentProcess {
  stopped: StopResult;
}

/** Stops each (SIGTERM, SIGKILL after `graceMs`), only while it is still the same process of this session. */
export async function stopAgentProcesses(s: Session, list: AgentProcess[], graceMs = 3000): Promise<StoppedProcess[]> {
  const marker = sessionMarker(s.id);
  return Promise.all(list.map(async (p) => ({ ...p, stopped: await stopProcess(p, marker, graceMs) })));
}

/** Whether it still runs (same pid, same start, still this session's). */
export function agentProcessRunning(s: Session, p: AgentProcess): boolean {
  return stillRunning(p, sessionMarker(s.id));
}
