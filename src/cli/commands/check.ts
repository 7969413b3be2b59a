// check and bisect: run a command against the states after steps, find the first bad one.
import { autoCheck, bisect, check, type CheckResult } from '../../api/check.js';
import { ExitCode, errors } from '../../base/errors.js';
import type { CommandFactory } from '../context.js';
import { jsonOption, sessionOption, sessionSourceNote } from '../context.js';
import { printableDiff, printablePath, type Output } from '../output.js';
import { printableLine, printableText } from '../../base/printable.js';

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

function printOutput(out: Output, r: CheckResult): void {
  if (r.verdict === 'pass' || !r.output) return;
  // The check's output is the project's (its test names, its files' text): escaped like every recorded text.
  for (const line of printableText(r.output).split('\n').slice(-8)) out.out(out.color.dim(`    ${line}`));
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
    out.note(sessionSourceNote(res.session.id, res.source));
    for (const w of res.warnings) out.err(`agentsnap: warning: ${printableLine(w)}`);
    for (const r of res.results) {
      out.out(resultLine(out, r));
      printOutput(out, r);
    }
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
        ...jsonOption,
      })
      .example("$0 bisect --run 'npm test'", 'which step broke the tests'),
  handler: async (raw) => {
    const argv = raw as unknown as { session?: string; run: string; good?: string; bad?: string; retries: number; json: boolean };
    const out = ctx.output(argv);
    const res = await bisect({
      cwd: ctx.io.cwd,
      env: ctx.io.env,
      session: argv.session,
      run: String(argv.run),
      good: optionalStep(argv.good, '--good'),
      bad: optionalStep(argv.bad, '--bad'),
      retries: argv.retries,
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
        results: res.results,
        skipped: res.skipped,
        problem: res.problem,
      });
      return;
    }
    out.note(sessionSourceNote(res.session.id, res.source));
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
    out.out(`to go back to before it: agentsnap undo ${st.step}    to take back only its changes: agentsnap revert ${st.step}`);
  },
});
