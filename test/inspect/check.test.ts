// Per-step checks, bisect and undo --last-good (issue 17): commands run against the states after steps in a
// throwaway worktree, never the user's; results journaled per step and shown in log; bisect finds the first bad step.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { cli, cliProcess, tempRepo, worktreeFiles, type TempRepo } from '../support/helpers.js';

/** One step; with `env`, through the real CLI process (whose client hands `snap` to a running warm server). */
async function step(repo: TempRepo, tool: string, change: () => void, env?: Record<string, string>): Promise<number> {
  const run = (args: string[]) => (env ? cliProcess(repo, args, { env }) : cli(repo, args));
  const pre = await run(['snap', '--phase', 'pre', '--tool', tool, '--json']);
  assert.is(pre.code, 0, pre.stderr);
  const n = (JSON.parse(pre.stdout) as { step: number }).step;
  change();
  const post = await run(['snap', '--phase', 'post', '--step', String(n), '--tool', tool, '--json']);
  assert.is(post.code, 0, post.stderr);
  return n;
}

function worktrees(repo: TempRepo): string[] {
  const r = spawnSync('git', ['worktree', 'list', '--porcelain'], { cwd: repo.dir, env: repo.env, encoding: 'utf8' });
  return r.stdout.split('\n').filter((l) => l.startsWith('worktree '));
}

/** A session of four calls: the third breaks "the tests" (test.sh exits 1 once broken.txt exists), the fourth edits docs. */
async function session(repo: TempRepo, env?: Record<string, string>): Promise<number[]> {
  return [
    await step(repo, 'Write', () => repo.write('src.txt', 'v1\n'), env),
    await step(repo, 'Bash', () => repo.write('src.txt', 'v2\n'), env),
    await step(repo, 'Bash', () => repo.write('broken.txt', 'oops\n'), env),
    await step(repo, 'Edit', () => repo.write('README', 'docs\n'), env),
  ];
}

const TESTS = 'echo "checking in $PWD"; echo made-by-check > check-output.txt; test ! -e broken.txt';

test("check: every state in a throwaway worktree, the user's files untouched; log shows ✓/✗; results reused; nothing left behind", async () => {
  const repo = tempRepo({ files: { README: 'readme\n' } });
  try {
    const steps = await session(repo);
    const before = worktreeFiles(repo);
    const res = await cli(repo, ['check', '--each', '--run', TESTS, '--json']);
    assert.is(res.code, 1, 'a failing state: exit 1');
    const results = (JSON.parse(res.stdout) as { results: { step: number; verdict: string; exitCode: number; output: string }[] }).results;
    assert.equal(
      results.map((r) => [r.step, r.verdict]),
      [
        [0, 'pass'],
        [steps[0], 'pass'],
        [steps[1], 'pass'],
        [steps[2], 'fail'],
        [steps[3], 'fail'],
      ],
    );
    assert.match(results[0]?.output ?? '', 'checking in ');
    assert.not.match(results[0]?.output ?? '', `checking in ${repo.dir}\n`, "never in the user's worktree");
    assert.equal(worktreeFiles(repo), before, "the user's worktree is byte for byte as it was");
    assert.not.ok(fs.existsSync(path.join(repo.dir, 'check-output.txt')));
    assert.is(worktrees(repo).length, 1, `the throwaway worktree is gone: ${worktrees(repo).join(', ')}`);

    const log = await cli(repo, ['log']);
    const marks = log.stdout
      .split('\n')
      .filter((l) => /^\s+\d+\s/.test(l))
      .map((l) => (l.includes('✓') ? '✓' : l.includes('✗') ? '✗' : ' '));
    assert.equal(marks, ['✓', '✓', '✗', '✗'], log.stdout);
    const json = await cli(repo, ['log', '--json']);
    assert.equal(
      (JSON.parse(json.stdout) as { check: { verdict: string } | null }[]).map((r) => r.check?.verdict ?? null),
      ['pass', 'pass', 'fail', 'fail'],
    );

    // Run again: recorded for the same command and state, not run again (unless --fresh).
    const again = await cli(repo, ['check', '--step', String(steps[1]), '--run', TESTS]);
    assert.is(again.code, 0, again.stderr);
    assert.match(again.stdout, 'recorded earlier for this state');
    const fresh = await cli(repo, ['check', '--step', String(steps[1]), '--run', TESTS, '--fresh']);
    assert.not.match(fresh.stdout, 'recorded earlier');
    const range = await cli(repo, ['check', '--steps', `${steps[2]}..`, '--run', 'true', '--json']);
    assert.equal(
      (JSON.parse(range.stdout) as { results: { step: number }[] }).results.map((r) => r.step),
      [steps[2], steps[3]],
    );

    // why names the checks around the step that wrote a line.
    const why = await cli(repo, ['why', 'broken.txt:1']);
    assert.is(why.code, 0, why.stderr);
    // The newest check of each state: step 2's (before) by the test command, step 3's (after) by `true`.
    assert.match(why.stdout, /checks: before the step ✓ echo "checking in .*; after it ✓ true/);

    // undo --last-good: back to the state after the last step whose newest check passed.
    const good = await cli(repo, ['check', '--each', '--run', TESTS]);
    assert.is(good.code, 1);
    const undo = await cli(repo, ['undo', '--last-good']);
    assert.is(undo.code, 0, undo.stderr);
    assert.match(undo.stdout, `undo ${steps[2]}`);
    assert.not.ok(fs.existsSync(path.join(repo.dir, 'broken.txt')));
    assert.is(repo.read('README').toString(), 'readme\n');

    // Mistakes: one message, exit 2, nothing run.
    for (const args of [
      ['check'],
      ['check', '--run', ''],
      ['check', '--each', '--step', '1', '--run', 'true'],
      ['check', '--steps', '5..2', '--run', 'true'],
      ['check', '--step', 'x', '--run', 'true'],
      ['check', '--step', '99', '--run', 'true'],
    ]) {
      const bad = await cli(repo, args);
      assert.ok(bad.code === 2 || bad.code === 1, `${args.join(' ')}: ${bad.code} ${bad.stderr}`);
      assert.not.match(bad.stderr, '    at ', 'no stack trace');
    }
    const both = await cli(repo, ['undo', '2', '--last-good']);
    assert.is(both.code, 2);
    assert.match(both.stderr, '--last-good and a step number exclude each other');
  } finally {
    repo.cleanup();
  }
});

test('bisect: the first bad step with its call and diff; 125 skips; nothing to find when the bad state passes or the baseline fails', async () => {
  const repo = tempRepo({ files: { README: 'readme\n' } });
  try {
    const steps = await session(repo);
    const res = await cli(repo, ['bisect', '--run', TESTS, '--patch']);
    assert.is(res.code, 0, res.stderr);
    assert.match(res.stdout, `first bad step: ${steps[2]}  Bash  done`);
    assert.match(res.stdout, '+oops');
    assert.match(res.stdout, `agentsnap undo ${steps[2]}`);
    const json = await cli(repo, ['bisect', '--run', TESTS, '--json']);
    assert.is((JSON.parse(json.stdout) as { firstBad: number }).firstBad, steps[2]);

    // The state after step 2 cannot be tested (125): the answer is step 2 or 3, and bisect says so.
    const skip = `test "$AGENTSNAP_CHECK_STEP" = ${steps[1]} && exit 125; ${TESTS}`;
    const skipped = await cli(repo, ['bisect', '--run', skip, '--good', String(steps[0]), '--json']);
    assert.is(skipped.code, 1);
    const sk = JSON.parse(skipped.stdout) as { firstBad: number | null; skipped: number[]; problem: string };
    assert.is(sk.firstBad, null);
    assert.equal(sk.skipped, [steps[1]]);
    assert.match(sk.problem, `steps ${steps[1]} could not be tested`);

    const passes = await cli(repo, ['bisect', '--run', 'true']);
    assert.is(passes.code, 1);
    assert.match(passes.stdout, 'does not fail the check');
    const baseline = await cli(repo, ['bisect', '--run', 'false']);
    assert.is(baseline.code, 1);
    assert.match(baseline.stdout, 'fails already before the session');
    const order = await cli(repo, ['bisect', '--run', 'true', '--good', String(steps[3]), '--bad', String(steps[1])]);
    assert.is(order.code, 2);
    assert.match(order.stderr, 'must come before');
    assert.is(worktrees(repo).length, 1);
  } finally {
    repo.cleanup();
  }
});

test('check: agentsnap.worktreeShare directories reach the check (by symlink where allowed); a failing setup command leaves no worktree', async () => {
  const repo = tempRepo({ files: { '.gitignore': 'node_modules/\n', README: 'x\n' } });
  try {
    repo.write('node_modules/dep/index.js', 'module.exports = 1\n');
    await step(repo, 'Write', () => repo.write('a.txt', 'a\n'));
    spawnSync('git', ['config', 'agentsnap.worktreeShare', 'node_modules'], { cwd: repo.dir, env: repo.env });
    spawnSync('git', ['config', 'agentsnap.worktreeShareSymlink', 'true'], { cwd: repo.dir, env: repo.env });
    const res = await cli(repo, ['check', '--run', 'cat node_modules/dep/index.js', '--json']);
    assert.is(res.code, 0, res.stderr);
    assert.match((JSON.parse(res.stdout) as { results: { output: string }[] }).results[0]?.output ?? '', 'module.exports = 1');
    assert.ok(fs.existsSync(path.join(repo.dir, 'node_modules/dep/index.js')), "the user's shared directory is still there");

    spawnSync('git', ['config', 'agentsnap.worktreeSetup', 'exit 7'], { cwd: repo.dir, env: repo.env });
    const setup = await cli(repo, ['check', '--run', 'true', '--fresh']);
    assert.ok(setup.code !== 0);
    assert.match(setup.stderr, 'worktree setup command');
    assert.is(worktrees(repo).length, 1);
    assert.ok(fs.existsSync(path.join(repo.dir, 'node_modules/dep/index.js')));
  } finally {
    repo.cleanup();
  }
});

/** Polls log --json until the newest step has a check and no runner holds the lock (a loaded machine only makes it slower). */
async function backgroundCheckOf(
  repo: TempRepo,
  newest: number,
  env: Record<string, string> = {},
): Promise<{ verdict: string; command: string }> {
  const lock = path.join(repo.dir, '.git', 'agentsnap', 'locks');
  let rows: { step: number; check: { verdict: string; command: string } | null }[] = [];
  for (let i = 0; i < 1200; i++) {
    rows = JSON.parse((await cli(repo, ['log', '--json'], { env })).stdout) as typeof rows;
    const runner = fs.existsSync(lock) && fs.readdirSync(lock).some((f) => f.startsWith('check-'));
    if (rows.find((r) => r.step === newest)?.check && !runner) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const last = rows.find((r) => r.step === newest)?.check;
  assert.ok(last, `the newest step was checked in the background: ${JSON.stringify(rows)}`);
  return last;
}

test('check: git config agentsnap.check checks the newest step in the background after each step; log turns green or red', async () => {
  const repo = tempRepo({ files: { README: 'readme\n' } });
  try {
    spawnSync('git', ['config', 'agentsnap.check', 'test ! -e broken.txt'], { cwd: repo.dir, env: repo.env });
    const steps = await session(repo);
    const last = await backgroundCheckOf(repo, steps[3] as number);
    assert.is(last.verdict, 'fail');
    assert.is(last.command, 'test ! -e broken.txt');
    assert.is(worktrees(repo).length, 1);
    const log = await cli(repo, ['log']);
    assert.match(log.stdout, '✗');
  } finally {
    repo.cleanup();
  }
});

test('check: agentsnap.check also runs in the background when the warm server answers the calls (its cached settings)', async () => {
  const repo = tempRepo({ files: { README: 'readme\n' } });
  const env = { AGENTSNAP_SERVER: 'on', AGENTSNAP_SERVER_TRACE: '1' };
  try {
    spawnSync('git', ['config', 'agentsnap.check', 'test ! -e broken.txt'], { cwd: repo.dir, env: repo.env });
    const started = await cliProcess(repo, ['server', 'start'], { env });
    assert.is(started.code, 0, started.stderr);
    const steps = await session(repo, env);
    const trace = fs.readFileSync(path.join(repo.dir, '.git', 'agentsnap', 'run', 'main', 'server.log'), 'utf8');
    assert.is((trace.match(/call \d+: snap --phase (pre|post) /g) ?? []).length, 8, `every snap answered by the server: ${trace}`);
    const last = await backgroundCheckOf(repo, steps[3] as number, env);
    assert.is(last.verdict, 'fail');
    assert.is(last.command, 'test ! -e broken.txt');
  } finally {
    await cliProcess(repo, ['server', 'stop'], { env });
    repo.cleanup();
  }
});

test.run();
