// Issue 32, items 6–10, through the executable (bin/agentsnap.js in its own process): output that tells the story.
// Every place that names a step names its call (show, bisect; the `-m` text, an --auto step's files), show N lists
// the processes its call left running, bisect gives a stat by default and no revert of a step already reverted,
// check --each shows a failure once, blame calls the user's own line "your edit".
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { agentsnapOnPath, cli, cliProcess, tempRepo, type TempRepo } from '../support/helpers.js';

/** One tool call recorded by `snap --phase pre/post` (in-process: the set-up, not what is tested). */
async function call(repo: TempRepo, tool: string, change: () => void): Promise<number> {
  const pre = await cli(repo, ['snap', '--phase', 'pre', '--tool', tool, '--json']);
  assert.is(pre.code, 0, pre.stderr);
  const n = (JSON.parse(pre.stdout) as { step: number }).step;
  change();
  const post = await cli(repo, ['snap', '--phase', 'post', '--step', String(n), '--tool', tool, '--json']);
  assert.is(post.code, 0, post.stderr);
  return n;
}

function count(text: string, needle: string): number {
  return text.split(needle).length - 1;
}

test('show N of a `snap -m` checkpoint names it by its text; log names it once', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    repo.write('a.txt', 'two\n');
    const snap = await cliProcess(repo, ['snap', '-m', 'before the refactor', '--json']);
    assert.is(snap.code, 0, snap.stderr);
    const n = (JSON.parse(snap.stdout) as { step: number }).step;
    const show = await cliProcess(repo, ['show', String(n)]);
    assert.is(show.code, 0, show.stderr);
    assert.match(show.stdout.split('\n')[0] ?? '', /^step \d+ +checkpoint +done +\S+\.\.\S+ +before the refactor$/);
    const json = await cliProcess(repo, ['show', String(n), '--json']);
    assert.is((JSON.parse(json.stdout) as { what: string }).what, 'before the refactor');
    const log = await cliProcess(repo, ['log']);
    assert.is(count(log.stdout, 'before the refactor'), 1, log.stdout);
  } finally {
    repo.cleanup();
  }
});

test('wrap --auto: its step names the files it changed, not "the worktree changed"', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const res = await cliProcess(repo, ['wrap', '--auto', '--', 'sh', '-c', 'echo two > a.txt; echo new > b.txt'], { timeoutMs: 120_000 });
    assert.is(res.code, 0, res.stderr);
    const log = await cliProcess(repo, ['log', '--json']);
    const rows = JSON.parse(log.stdout) as { step: number; tool: string; what: string | null }[];
    const auto = rows.filter((r) => r.tool === 'auto');
    assert.ok(auto.length > 0, log.stdout);
    assert.match(auto.map((r) => r.what).join('\n'), /changed a\.txt, b\.txt/);
    const text = await cliProcess(repo, ['log']);
    assert.not.match(text.stdout, 'the worktree changed');
    const show = await cliProcess(repo, ['show', String(auto[0]!.step)]);
    assert.match(show.stdout.split('\n')[0] ?? '', 'changed a.txt, b.txt');
    const status = await cliProcess(repo, ['status']);
    assert.is(status.code, 0, status.stderr);
    assert.match(status.stdout, 'automatic checkpoints (wrap --auto): the last ');
    assert.not.match(status.stdout, 'hooks');
  } finally {
    repo.cleanup();
  }
});

const linux = process.platform === 'linux' && fs.existsSync('/proc/self/environ');

test('show N lists the processes its call started and left running (status is not the only place)', async () => {
  if (!linux) {
    console.log('  skipped: needs Linux /proc');
    return;
  }
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  let pid = 0;
  try {
    const pidFile = path.join(repo.base, 'sleeper.pid');
    // The "agent": step 1 starts a process in the background and leaves it; step 2 only edits.
    const script = [
      'set -e',
      'agentsnap snap --phase pre --tool Bash -q',
      `sleep 600 </dev/null >/dev/null 2>&1 & echo $! > ${JSON.stringify(pidFile)}`,
      'agentsnap snap --phase post --step 1 --tool Bash -q',
      'agentsnap snap --phase pre --tool Edit -q',
      'echo two > a.txt',
      'agentsnap snap --phase post --step 2 --tool Edit -q',
    ].join('\n');
    const env = { PATH: agentsnapOnPath(repo.base) };
    const res = await cliProcess(repo, ['wrap', '--agent', 'generic', '--', 'sh', '-c', script], { env, timeoutMs: 120_000 });
    assert.is(res.code, 0, res.stderr);
    pid = Number(fs.readFileSync(pidFile, 'utf8'));
    const show1 = await cliProcess(repo, ['show', '1'], { env });
    assert.is(show1.code, 0, show1.stderr);
    assert.match(show1.stdout, `processes it started, still running (1):\n  pid ${pid}  sleep 600  (started by step 1)`);
    const json = await cliProcess(repo, ['show', '1', '--json'], { env });
    assert.equal(
      (JSON.parse(json.stdout) as { processes: { pid: number; step: number }[] }).processes.map((p) => [p.pid, p.step]),
      [[pid, 1]],
    );
    const show2 = await cliProcess(repo, ['show', '2'], { env });
    assert.not.match(show2.stdout, 'processes it started');
  } finally {
    if (pid > 0) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone: nothing to stop
      }
    }
    repo.cleanup();
  }
});

/** Four calls; the third breaks the check (broken.txt), in a 40-line file so its whole diff is long. */
async function breakingSession(repo: TempRepo): Promise<number[]> {
  const long = Array.from({ length: 40 }, (_, i) => `oops line ${i}`).join('\n');
  return [
    await call(repo, 'Write', () => repo.write('src.txt', 'v1\n')),
    await call(repo, 'Bash', () => repo.write('src.txt', 'v2\n')),
    await call(repo, 'Bash', () => repo.write('broken.txt', `${long}\n`)),
    await call(repo, 'Edit', () => repo.write('README', 'docs\n')),
  ];
}

test('bisect: a diffstat by default, the whole diff with --patch; no `revert N` suggested for a step already reverted', async () => {
  const repo = tempRepo({ files: { README: 'readme\n' } });
  try {
    const steps = await breakingSession(repo);
    const bad = steps[2]!;
    const res = await cliProcess(repo, ['bisect', '--run', 'test ! -e broken.txt']);
    assert.is(res.code, 0, res.stderr);
    assert.match(res.stdout, `first bad step: ${bad}  Bash  done`);
    assert.match(res.stdout, /broken\.txt \| 40 \+{10,}/);
    assert.not.match(res.stdout, 'oops line 7');
    assert.match(res.stdout, `its whole diff: agentsnap show ${bad} (or bisect --patch)`);
    assert.match(res.stdout, `agentsnap revert ${bad}`);

    const patch = await cliProcess(repo, ['bisect', '--run', 'test ! -e broken.txt', '--patch']);
    assert.is(patch.code, 0, patch.stderr);
    assert.match(patch.stdout, '+oops line 7');
    assert.not.match(patch.stdout, 'its whole diff');

    const revert = await cliProcess(repo, ['revert', String(bad)]);
    assert.is(revert.code, 0, revert.stderr);
    assert.not.ok(fs.existsSync(path.join(repo.dir, 'broken.txt')));
    const again = await cliProcess(repo, ['bisect', '--run', 'test ! -e broken.txt']);
    assert.is(again.code, 0, again.stderr);
    assert.match(again.stdout, `first bad step: ${bad}`);
    assert.match(again.stdout, `its changes were already taken back by operation 1 (revert ${bad})`);
    assert.not.match(again.stdout, `agentsnap revert ${bad}`);
    const json = await cliProcess(repo, ['bisect', '--run', 'test ! -e broken.txt', '--json']);
    const report = JSON.parse(json.stdout) as { firstBad: number; revertedBy: number | null; diff: string };
    assert.is(report.firstBad, bad);
    assert.is(report.revertedBy, 1);
    assert.match(report.diff, '+oops line 7', '--json keeps the whole diff');
  } finally {
    repo.cleanup();
  }
});

test('check --each: the first failure (the failing test by name) once, later states with the same failure named; --verbose all', async () => {
  const repo = tempRepo({ files: { README: 'readme\n' } });
  try {
    const steps = await breakingSession(repo);
    // A TAP-like runner: the failing test's name, then a summary longer than a tail would show; times differ per state.
    const script = path.join(repo.base, 'tests.sh');
    fs.writeFileSync(
      script,
      [
        'echo "TAP version 13"',
        'if [ -e broken.txt ]; then',
        '  echo "not ok 1 - adds two numbers"',
        '  echo "  ---"',
        '  echo "  expected: 4"',
        '  echo "  actual: 5"',
        '  echo "  ..."',
        '  for x in tests suites pass fail cancelled skipped todo; do echo "# $x 1"; done',
        '  echo "# duration_ms $AGENTSNAP_CHECK_STEP.25"',
        '  exit 1',
        'fi',
        'echo "ok 1 - adds two numbers"',
      ].join('\n'),
    );
    const res = await cliProcess(repo, ['check', '--each', '--run', `sh ${script}`]);
    assert.is(res.code, 1, res.stderr);
    assert.is(count(res.stdout, 'not ok 1 - adds two numbers'), 1, res.stdout);
    assert.match(res.stdout, `step ${steps[2]}`);
    assert.match(res.stdout, `✗ fail (exit 1)`);
    assert.match(res.stdout, `the same failure as step ${steps[2]}`);
    assert.match(res.stderr, "--verbose shows each failed state's whole output");

    const verbose = await cliProcess(repo, ['check', '--each', '--run', `sh ${script}`, '--verbose']);
    assert.is(verbose.code, 1, verbose.stderr);
    assert.is(count(verbose.stdout, 'not ok 1 - adds two numbers'), 2, verbose.stdout);
    assert.is(count(verbose.stdout, '# todo 1'), 2, verbose.stdout);
    assert.not.match(verbose.stdout, 'the same failure as');
  } finally {
    repo.cleanup();
  }
});

test('blame and why: the user\'s own line is "your edit (between step 3 and 4)", also when an operation\'s snapshot first held it', async () => {
  const repo = tempRepo({ files: { 'f.txt': 'a\n' } });
  try {
    await call(repo, 'Bash', () => repo.write('f.txt', 'a\nby step 1\n'));
    await call(repo, 'Edit', () => repo.write('g.txt', 'g\n'));
    repo.write('f.txt', 'a\nby step 1\nmine, between 2 and 3\n'); // outside tool calls
    await call(repo, 'Bash', () => repo.write('h.txt', 'h\n'));
    repo.write('f.txt', 'a\nby step 1\nmine, between 2 and 3\nmine, after 3\n'); // outside tool calls, then an operation
    const revert = await cliProcess(repo, ['revert', '2']);
    assert.is(revert.code, 0, revert.stderr);
    await call(repo, 'Edit', () => repo.write('h.txt', 'h2\n'));

    const blame = await cliProcess(repo, ['blame', 'f.txt']);
    assert.is(blame.code, 0, blame.stderr);
    const rows = blame.stdout
      .trimEnd()
      .split('\n')
      .map((l) => l.replace(/\s+\d\d:\d\d\s+/, ' ').replace(/\s+/g, ' '));
    assert.equal(rows, [
      'before the session 1) a',
      'step 1 Bash 2) by step 1',
      'your edit (between step 2 and 3) 3) mine, between 2 and 3',
      'your edit (between step 3 and 4) 4) mine, after 3',
    ]);
    assert.not.match(blame.stdout, 'operation');
    const why = await cliProcess(repo, ['why', 'f.txt:4']);
    assert.is(why.code, 0, why.stderr);
    assert.match(why.stdout, /^your edit \(between step 3 and 4\)(, by \d\d:\d\d)?: not by a recorded tool call/m);
    assert.not.match(why.stdout, 'put back by');
    const json = await cliProcess(repo, ['blame', 'f.txt', '--json']);
    const origins = (JSON.parse(json.stdout) as { lines: { origin: { kind: string; step: number | null; after: number | null } }[] }).lines;
    assert.equal(
      origins.slice(2).map((l) => [l.origin.kind, l.origin.after, l.origin.step]),
      [
        ['between', 2, 3],
        ['between', 3, 4],
      ],
    );
  } finally {
    repo.cleanup();
  }
});

test('sessions: a date and a name (--name, else the command); the name is accepted where an id is; --worktree hints use it', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const env = { PATH: agentsnapOnPath(repo.base) };
    const agent = (line: string) =>
      ['agentsnap snap --phase pre --tool Bash -q >/dev/null', line, 'agentsnap snap --phase post --tool Bash -q >/dev/null'].join('\n');
    const named = await cliProcess(
      repo,
      ['wrap', '--name', 'login fix', '--agent', 'generic', '--', 'sh', '-c', agent('echo two > a.txt')],
      {
        env,
        timeoutMs: 120_000,
      },
    );
    assert.is(named.code, 0, named.stderr);
    assert.match(named.stderr, "see `agentsnap log --session 'login fix'`");
    const plain = await cliProcess(repo, ['wrap', '--agent', 'generic', '--', 'sh', '-c', agent('echo three > b.txt')], {
      env,
      timeoutMs: 120_000,
    });
    assert.is(plain.code, 0, plain.stderr);

    const list = await cliProcess(repo, ['sessions']);
    assert.is(list.code, 0, list.stderr);
    const lines = list.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /^SESSION\s+NAME\s+STATUS\s/);
    const loginRow = lines.find((l) => l.includes('login fix'));
    assert.ok(loginRow, list.stdout);
    assert.match(loginRow!, /\b\d{4}-\d\d-\d\d \d\d:\d\d\b/, 'the start with its date, today too');
    // No --name: the command, shortened (the script of `sh -c`), with a one-line agent its whole text.
    assert.ok(
      lines.some((l) => /^\S+\s+agentsnap snap --phase pre --\S*…\s/.test(l)),
      list.stdout,
    );
    const json = JSON.parse((await cliProcess(repo, ['sessions', '--json'])).stdout) as { id: string; name: string | null }[];
    const login = json.find((x) => x.name === 'login fix');
    assert.ok(login, JSON.stringify(json));

    // The name where an id goes: log, show, undo.
    const log = await cliProcess(repo, ['log', '--session', 'login fix']);
    assert.is(log.code, 0, log.stderr);
    assert.match(log.stderr, `session ${login!.id} (login fix)`);
    assert.match(log.stdout, /a\.txt/);
    assert.not.match(log.stdout, /b\.txt/);
    const show = await cliProcess(repo, ['show', '1', '--session', 'login fix']);
    assert.is(show.code, 0, show.stderr);
    assert.match(show.stdout, '+two');
    const undo = await cliProcess(repo, ['undo', '1', '--session', 'login fix', '--dry-run', '--json']);
    assert.match(undo.stdout, `"session": "${login!.id}"`);
    const unknown = await cliProcess(repo, ['log', '--session', 'no such name']);
    assert.is(unknown.code, 1, unknown.stderr);
    assert.match(unknown.stderr, 'no session has that name');

    // --worktree: the end-of-session hints name the session as the user did.
    const wt = await cliProcess(
      repo,
      ['wrap', '--worktree', '--name', 'try-it', '--agent', 'generic', '--', 'sh', '-c', 'echo z > z.txt'],
      {
        env,
        timeoutMs: 120_000,
      },
    );
    assert.is(wt.code, 0, wt.stderr);
    assert.match(wt.stderr, 'agentsnap apply try-it ');
    assert.match(wt.stderr, 'agentsnap discard try-it ');
    const discard = await cliProcess(repo, ['discard', 'try-it'], { env });
    assert.is(discard.code, 0, discard.stderr);
  } finally {
    repo.cleanup();
  }
});

test.run();
