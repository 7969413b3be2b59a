// check and bisect: run a command against the states after steps, find the first bad one.
import { autoCheck, bisect, check, type CheckResult } from '../../api/check.js';
import { ExitCode, errors } from '../../base/errors.js';
import type { CommandFactory } from '../context.js';
import { jsonOption, sessionOption, sessionSourceNote } from '../context.js';
import { printableDiff, printablePath, type Output } from '../output.js';
import { printableLine, printableText } from '../../base/printable.js';
import { firstFailure } from '../../check/first-failure.js';

function stateName(n: number): string {
  return n === 0 ? 'baseline' : `step ${n}`;
}

function resultLine(out: Output, r: CheckResult): string {
  const c = out.color;
  const mark =
    r.verdict === 'pass'
      ? c.green('✓ pass')
      : r.verdict === 'fail'
        ? c.red(`✗ fail (exit ${r.exitCode})`)
        : c.yellow('~ cannot test (exit 125)');
  return `${stateName(r.step).padEnd(9)} ${mark}  ${(r.durationMs / 1000).toFixed(1)} s${r.reused ? c.dim('  (recorded earlier for this state)') : ''}`;
}

/**
 * Under each failed state, its first failure, once: a failure printed under an earlier state is named, not
 * repeated (times taken are no difference). `verbose`: every failed state's whole recorded output.
 * Returns whether anything was left out.
 */
function printOutput(out: Output, r: CheckResult, verbose: boolean, seen: Map<string, number>): boolean {
  if (r.verdict === 'pass' || !r.output) return false;
  if (verbose) {
    for (const line of printableText(r.output).split('\n')) out.out(out.color.dim(`    ${line}`));
    return false;
  }
  const lines = firstFailure(r.output);
  const key = lines.join('\n').replace(/\d+(?:\.\d+)?\s*(?:ms|s)\b/g, '');
  const earlier = seen.get(key);
  if (earlier !== undefined) {
    out.out(out.color.dim(`    the same failure as ${stateName(earlier)}`));
    return true;
  }
  seen.set(key, r.step);
  for (const line of lines) out.out(out.color.dim(`    ${line}`));
  return r.output.split('\n').length > lines.length;
}

function optionalStep(v: unknown, name: string): number | undefined {
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(String(v)))
    throw errors.invalidArgument(`${name} takes a step number (0: the baseline), not ${JSON.stringify(String(v))}.`);
  return Number(v);
}

export const checkCommand: CommandFactory = (ctx) => ({
  command: 'check',
  describe: 'Run a command against the state after steps, in a throwaway worktree (never yours); log shows ✓/✗',
  builder: (y) =>
    y
      .options({
        ...sessionOption,
        run: { type: 'string', describe: 'the command to run (sh -c), e.g. "npm test"' },
        auto: { type: 'boolean', default: false, hidden: true, describe: 'the background runner of agentsnap.check' },
        steps: { type: 'string', describe: 'the states after steps A..B (0: the baseline)' },
        each: { type: 'boolean', default: false, describe: 'the states after every step' },
        step: { type: 'string', describe: 'the state after step N' },
        fresh: { type: 'boolean', default: false, describe: 'run again where the same command already ran on the same state' },
        verbose: {
          type: 'boolean',
          default: false,
          describe: "each failed state's whole recorded output (default: its first failure, once)",
        },
        ...jsonOption,
      })
      .example("$0 check --run 'npm test'", 'check the state after the latest step')
      .example("$0 check --each --run 'npm test'", 'every step; `log` then shows which ones pass'),
  handler: async (raw) => {
    const argv = raw as unknown as {
      session?: string;
      run?: string;
      steps?: string;
      each: boolean;
      step?: string;
      fresh: boolean;
      verbose: boolean;
      auto: boolean;
      json: boolean;
    };
    const out = ctx.output(argv);
    if (argv.auto) {
      await autoCheck({ cwd: ctx.io.cwd, env: ctx.io.env, session: argv.session });
      return;
    }
    if (argv.run === undefined)
      throw errors.invalidArgument(
        "check needs a command: agentsnap check --run '<cmd>' (or set git config agentsnap.check for checks after each step).",
      );
    const res = await check({
      cwd: ctx.io.cwd,
      env: ctx.io.env,
      session: argv.session,
      run: argv.run,
      steps: argv.steps,
      each: argv.each,
      step: optionalStep(argv.step, '--step'),
      fresh: argv.fresh,
    });
    const failed = res.results.some((r) => r.verdict === 'fail');
    if (failed) ctx.setExitCode(ExitCode.user);
    if (out.json) {
      out.printJson({ session: res.session.id, results: res.results, warnings: res.warnings });
      return;
    }
    out.note(sessionSourceNote(res.session, res.source));
    for (const w of res.warnings) out.err(`agentsnap: warning: ${printableLine(w)}`);
    const seen = new Map<string, number>();
    let leftOut = false;
    for (const r of res.results) {
      out.out(resultLine(out, r));
      if (printOutput(out, r, argv.verbose, seen)) leftOut = true;
    }
    if (leftOut) out.note("agentsnap: --verbose shows each failed state's whole output");
  },
});

export const bisectCommand: CommandFactory = (ctx) => ({
  command: 'bisect',
  describe: 'Find the first step whose state fails a command (binary search over the session; exit 125 = cannot test)',
  builder: (y) =>
    y
      .options({
        ...sessionOption,
        run: { type: 'string', demandOption: true, describe: 'the command (sh -c): exit 0 good, 125 cannot test, anything else bad' },
        good: { type: 'string', describe: 'a step whose state is good (default: the baseline, 0)' },
        bad: { type: 'string', describe: 'a step whose state is bad (default: the latest step)' },
        retries: { type: 'number', default: 0, describe: 'run a failing check again up to N times (flaky checks: good if any run passes)' },
        patch: { type: 'boolean', default: false, describe: "the first bad step's whole diff (default: its diffstat)" },
        ...jsonOption,
      })
      .example("$0 bisect --run 'npm test'", 'which step broke the tests')
      .example("$0 bisect --run 'npm test' --patch", 'the same, with the whole diff of the first bad step'),
  handler: async (raw) => {
    const argv = raw as unknown as {
      session?: string;
      run: string;
      good?: string;
      bad?: string;
      retries: number;
      patch: boolean;
      json: boolean;
    };
    const out = ctx.output(argv);
    const res = await bisect({
      cwd: ctx.io.cwd,
      env: ctx.io.env,
      session: argv.session,
      run: String(argv.run),
      good: optionalStep(argv.good, '--good'),
      bad: optionalStep(argv.bad, '--bad'),
      retries: argv.retries,
      // --json keeps the whole diff it always had: a program reads it, no terminal is flooded.
      patch: argv.patch || argv.json,
    });
    if (!res.firstBad) ctx.setExitCode(ExitCode.user);
    if (out.json) {
      out.printJson({
        session: res.session.id,
        firstBad: res.firstBad?.step ?? null,
        tool: res.firstBad?.tool ?? null,
        what: res.what,
        input: res.firstBad?.input ?? null,
        diff: res.diff,
        revertedBy: res.revertedBy,
        results: res.results,
        skipped: res.skipped,
        problem: res.problem,
      });
      return;
    }
    out.note(sessionSourceNote(res.session, res.source));
    for (const r of res.results) out.out(resultLine(out, r));
    if (!res.firstBad) {
      out.out(out.color.yellow(res.problem ?? 'no first bad step found'));
      return;
    }
    const st = res.firstBad;
    out.out(
      out.color.bold(`first bad step: ${st.step}  ${printablePath(st.tool ?? st.kind)}  ${st.status}`) +
        (res.what ? `  ${out.color.cyan(printablePath(res.what))}` : ''),
    );
    if (st.input !== undefined && st.input !== null) out.out(`input: ${printableLine(JSON.stringify(st.input).slice(0, 400))}`);
    if (res.diff) ctx.io.stdout.write(printableDiff(res.diff.endsWith('\n') ? res.diff : `${res.diff}\n`, out.color));
    // In the report (stdout), right under the stat it explains, also where stdout and stderr go through one pager.
    if (!argv.patch && res.diff) out.out(out.color.dim(`its whole diff: agentsnap show ${st.step} (or bisect --patch)`));
    if (res.revertedBy !== null)
      out.out(
        `its changes were already taken back by operation ${res.revertedBy} (revert ${st.step}): if your worktree still fails the check, the cause is elsewhere`,
      );
    else out.out(`to go back to before it: agentsnap undo ${st.step}    to take back only its changes: agentsnap revert ${st.step}`);
  },
});
