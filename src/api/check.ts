// Public API of `check` and `bisect` (issue 17): which step broke it, and the
// last state where it passed. Validates, then runs worktrees/check.ts.
import { errors } from '../base/errors.js';
import { loadSettings } from '../settings/settings.js';
import { openCheckWorktree, recordedChecks, runAutoCheck, verdictOf, type CheckResult } from '../check/check.js';
import { loadSession } from '../session/session.js';
import { describeStep, showStep } from '../session/read.js';
import { foldOps } from '../restore/undo.js';
import type { Session, Step } from '../session/model.js';
import { resolveSession, type ResolvedSession, type SessionOptions } from './api.js';

export type { CheckResult } from '../check/check.js';

/** States that can be checked: the baseline (0) and every step with a state after it of its own. */
function checkableSteps(s: Session): number[] {
  return [0, ...s.steps.filter((st) => st.post && st.source !== 'transcript').map((st) => st.step)];
}

function parseRange(s: Session, text: string): number[] {
  const m = /^(\d+)?\.\.(\d+)?$/.exec(text);
  if (!m) throw errors.invalidArgument(`--steps takes A..B (step numbers, either side may be left out), not ${JSON.stringify(text)}.`);
  const all = checkableSteps(s);
  const from = m[1] === undefined ? 0 : Number(m[1]);
  const to = m[2] === undefined ? Math.max(...all) : Number(m[2]);
  if (from > to) throw errors.invalidArgument(`--steps ${text}: ${from} comes after ${to}.`);
  const picked = all.filter((n) => n >= from && n <= to);
  // Nothing to run must not read as "every state passed" (exit 0).
  if (picked.length === 0)
    throw errors.stepOutOfRange(`session ${s.id} has no state after a step in ${text} to check.`, { data: { session: s.id, steps: text } });
  return picked;
}

export interface CheckOptions extends SessionOptions {
  /** The command (sh -c), run in a throwaway worktree of each chosen state. */
  run: string;
  /** A..B */
  steps?: string | undefined;
  each?: boolean;
  step?: number | undefined;
  /** Run again where the same command already ran on the same state. */
  fresh?: boolean;
}

export interface CheckReport {
  session: Session;
  source: ResolvedSession['source'];
  results: CheckResult[];
  warnings: string[];
}

function requireCommand(run: unknown): string {
  if (typeof run !== 'string' || run.trim() === '')
    throw errors.invalidArgument("a check needs a command: --run '<cmd>' (e.g. --run 'npm test').");
  return run;
}

/** `agentsnap check --run <cmd>`: the command against the state after each chosen step (default: the latest). */
export async function check(opts: CheckOptions): Promise<CheckReport> {
  const run = requireCommand(opts.run);
  const picked = [opts.steps !== undefined, !!opts.each, opts.step !== undefined].filter(Boolean).length;
  if (picked > 1) throw errors.invalidArgument('--steps, --each and --step exclude each other.');
  const r = await resolveSession(opts);
  const s = r.session;
  const all = checkableSteps(s);
  let steps: number[];
  if (opts.each) steps = all;
  else if (opts.steps !== undefined) steps = parseRange(s, opts.steps);
  else if (opts.step !== undefined) {
    if (!Number.isInteger(opts.step) || opts.step < 0)
      throw errors.invalidArgument(`--step takes a step number, not ${JSON.stringify(opts.step)}.`);
    if (!all.includes(opts.step))
      throw errors.stepOutOfRange(`session ${s.id} has no state after step ${opts.step} to check.`, {
        data: { session: s.id, step: opts.step },
      });
    steps = [opts.step];
  } else steps = [all[all.length - 1] as number];
  const settings = await loadSettings(r.repo);
  const wt = await openCheckWorktree(r.repo, s, { settings, fresh: !!opts.fresh });
  const results: CheckResult[] = [];
  try {
    for (const n of steps) results.push(await wt.run(n, run));
  } finally {
    await wt.close();
  }
  return { session: s, source: r.source, results, warnings: wt.warnings };
}

export interface BisectOptions extends SessionOptions {
  run: string;
  /** A state known good (default: the baseline, 0). */
  good?: number | undefined;
  /** A state known bad (default: the latest step). */
  bad?: number | undefined;
  /** Run a failing check again up to this many times; it passes if any run passes (flaky checks). */
  retries?: number;
  /** The first bad step's whole diff instead of its diffstat (a step can change thousands of lines). */
  patch?: boolean;
}

export interface BisectReport {
  session: Session;
  source: ResolvedSession['source'];
  /** The first step whose state fails; null when it could not be told (skips, or the bad state passes). */
  firstBad: Step | null;
  what: string | null;
  /** Its diffstat (pre to post), or with `patch` its diff. */
  diff: string;
  /** The revert operation that already took back the first bad step's changes; null when none did. */
  revertedBy: number | null;
  /** Every state checked, in the order it was. */
  results: CheckResult[];
  /** Steps that could not be tested (exit 125) between the last good and the first bad. */
  skipped: number[];
  /** Why firstBad is null. */
  problem: string | null;
}

/** `agentsnap bisect --run <cmd>`: binary search over the session's states for the first bad step. */
export async function bisect(opts: BisectOptions): Promise<BisectReport> {
  const run = requireCommand(opts.run);
  const retries = opts.retries ?? 0;
  if (!Number.isInteger(retries) || retries < 0 || retries > 20)
    throw errors.invalidArgument(`--retries takes 0 to 20, not ${JSON.stringify(opts.retries)}.`);
  const r = await resolveSession(opts);
  const s = r.session;
  const all = checkableSteps(s);
  const good = opts.good ?? 0;
  const bad = opts.bad ?? (all[all.length - 1] as number);
  for (const [name, n] of [
    ['--good', good],
    ['--bad', bad],
  ] as const) {
    if (!all.includes(n))
      throw errors.stepOutOfRange(`${name} ${n}: session ${s.id} has no state after step ${n}.`, { data: { session: s.id, step: n } });
  }
  if (good >= bad) throw errors.invalidArgument(`--good ${good} must come before --bad ${bad}.`);
  const settings = await loadSettings(r.repo);
  const wt = await openCheckWorktree(r.repo, s, { settings });
  const results: CheckResult[] = [];
  const verdicts = new Map<number, CheckResult['verdict']>();
  const test = async (n: number): Promise<CheckResult['verdict']> => {
    let res = await wt.run(n, run);
    results.push(res);
    for (let i = 0; i < retries && res.verdict === 'fail'; i++) {
      // A retry is a fresh run, never the recorded result.
      const again = await openCheckWorktree(r.repo, s, { settings, fresh: true });
      try {
        res = await again.run(n, run);
      } finally {
        await again.close();
      }
      results.push(res);
    }
    verdicts.set(n, res.verdict);
    return res.verdict;
  };
  let problem: string | null = null;
  let firstBad: number | null = null;
  const skipped: number[] = [];
  try {
    // The ends are checked too (recorded results are reused): a "bad" state that passes means there is nothing to find.
    if ((await test(bad)) !== 'fail')
      problem = `the state after step ${bad} does not fail the check (${verdicts.get(bad)}): nothing to bisect.`;
    else if ((await test(good)) === 'fail')
      problem =
        good === 0
          ? 'the check fails already before the session (the baseline): no step of the session broke it.'
          : `the state after step ${good} fails the check too: give an earlier --good.`;
    else {
      let lo = all.indexOf(good);
      let hi = all.indexOf(bad);
      // Invariant: all[lo] is good (or skipped from below), all[hi] is bad.
      while (hi - lo > 1) {
        const candidates = all.slice(lo + 1, hi);
        const mid = candidates.length ? pickUntested(candidates, verdicts) : null;
        if (mid === null) break;
        const v = verdicts.get(mid) ?? (await test(mid));
        if (v === 'pass') lo = all.indexOf(mid);
        else if (v === 'fail') hi = all.indexOf(mid);
        else skipped.push(mid);
      }
      const between = all.slice(lo + 1, hi);
      if (between.length === 0) firstBad = all[hi] as number;
      else problem = `steps ${between.join(', ')} could not be tested (exit 125): the first bad step is one of them or step ${all[hi]}.`;
    }
  } finally {
    await wt.close();
  }
  const st = firstBad !== null ? (s.steps.find((x) => x.step === firstBad) ?? null) : null;
  const diff = st ? (await showStep(r.repo, s.id, st.step, { color: false, stat: !opts.patch })).diff : '';
  return {
    session: s,
    source: r.source,
    firstBad: st,
    what: st ? describeStep(s, st) : null,
    diff,
    revertedBy: st ? revertOf(s, st.step) : null,
    results,
    skipped: skipped.sort((a, b) => a - b),
    problem,
  };
}

/**
 * The done revert of step `n` that neither a redo nor an `op undo` took back, newest first; null when its
 * changes were never reverted (or are back).
 */
function revertOf(s: Session, n: number): number | null {
  const reverts = foldOps(s.extraEvents).filter(
    (o) => o.kind === 'revert' && o.status === 'done' && o.target.step === n && o.redoneBy === null && o.undoneBy === null,
  );
  return reverts[reverts.length - 1]?.op ?? null;
}

/** The middle of `candidates` that has not been found untestable; null when all were. */
function pickUntested(candidates: number[], verdicts: Map<number, CheckResult['verdict']>): number | null {
  const open = candidates.filter((n) => verdicts.get(n) !== 'skip');
  if (open.length === 0) return null;
  return open[Math.floor((open.length - 1) / 2)] as number;
}

/**
 * The last step whose check passed, and the first step after it (what `undo --last-good` undoes). Judged by
 * the command of the newest check (several commands' results do not mix): its newest result per state.
 */
export function lastGood(s: Session): { good: number; command: string; undoFrom: number | null } | null {
  const all = recordedChecks(s);
  const command = all[all.length - 1]?.command;
  if (command === undefined) return null;
  const checks = new Map(all.filter((c) => c.command === command).map((c) => [c.step, c]));
  let good: number | null = null;
  for (const n of checkableSteps(s)) if (checks.get(n)?.verdict === 'pass') good = n;
  if (good === null) return null;
  const after = s.steps.find((st) => st.step > (good as number) && st.source !== 'transcript');
  return { good, command, undoFrom: after?.step ?? null };
}

/** `agentsnap check --auto`: the background runner agentsnap.check starts after each step (see runAutoCheck). */
export async function autoCheck(opts: SessionOptions): Promise<CheckResult[]> {
  const r = await resolveSession(opts);
  const settings = await loadSettings(r.repo);
  return runAutoCheck(r.repo, r.session.id, settings, () => loadSession(r.repo, r.session.id));
}

export { verdictOf };
