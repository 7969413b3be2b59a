// Issue 17 end to end: a scripted agent of 20 shell steps under `wrap`, one of which breaks the test, and an
// edit of the user's between two steps. check --each marks the right steps, bisect names the breaking one,
// blame attributes every line (the shell's and the user's), undo --last-good restores the right tree.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { agentsnapOnPath, cli, cliProcess, tempRepo, treeFiles } from '../support/helpers.js';

const STEPS = 20;
const BREAKS = 12;
const USER_AFTER = 5;
const TEST = '! grep -q BUG notes.txt';

test('last good step: check --each, bisect, blame and undo --last-good over a 20-step scripted session', async () => {
  const repo = tempRepo({ files: { 'notes.txt': 'start\n' } });
  try {
    const lines: string[] = [];
    for (let i = 1; i <= STEPS; i++) {
      const text = i === BREAKS ? 'BUG' : `line ${i}`;
      lines.push(
        `agentsnap snap --phase pre --tool Bash -q >/dev/null`,
        `echo "${text}" >> notes.txt`,
        `agentsnap snap --phase post --step ${i} --tool Bash -q`,
      );
      if (i === USER_AFTER) lines.push('echo "user line" >> notes.txt');
    }
    const res = await cliProcess(repo, ['wrap', '--agent', 'generic', '--', 'sh', '-ec', lines.join('\n')], {
      env: { PATH: agentsnapOnPath(repo.base) },
      timeoutMs: 300_000,
    });
    assert.is(res.code, 0, res.stderr);

    const check = await cli(repo, ['check', '--each', '--run', TEST, '--json']);
    assert.is(check.code, 1);
    const verdicts = (JSON.parse(check.stdout) as { results: { step: number; verdict: string }[] }).results.map((r) => [r.step, r.verdict]);
    assert.equal(
      verdicts,
      Array.from({ length: STEPS + 1 }, (_, n) => [n, n < BREAKS ? 'pass' : 'fail']),
    );
    const log = await cli(repo, ['log']);
    const marks = log.stdout
      .split('\n')
      .filter((l) => /^\s+\d+\s+Bash/.test(l))
      .map((l) => (l.includes('✓') ? '✓' : '✗'));
    assert.equal(marks.join(''), '✓'.repeat(BREAKS - 1) + '✗'.repeat(STEPS - BREAKS + 1));

    const bisect = await cli(repo, ['bisect', '--run', TEST, '--json']);
    assert.is(bisect.code, 0, bisect.stderr);
    assert.is((JSON.parse(bisect.stdout) as { firstBad: number }).firstBad, BREAKS);

    const blame = await cli(repo, ['blame', 'notes.txt', '--json']);
    const who = (JSON.parse(blame.stdout) as { lines: { text: string; origin: { kind: string }; step: number | null }[] }).lines.map(
      (l) => [l.text, l.origin.kind, l.step],
    );
    const expected: [string, string, number | null][] = [['start', 'before-session', null]];
    for (let i = 1; i <= STEPS; i++) {
      expected.push([i === BREAKS ? 'BUG' : `line ${i}`, 'step', i]);
      if (i === USER_AFTER) expected.push(['user line', 'between', USER_AFTER + 1]);
    }
    assert.equal(who, expected);

    const undo = await cli(repo, ['undo', '--last-good']);
    assert.is(undo.code, 0, undo.stderr);
    const s = JSON.parse((await cli(repo, ['log', '--json'])).stdout) as { step: number; post: string }[];
    const good = s.find((r) => r.step === BREAKS - 1)?.post as string;
    assert.equal(
      new Map([...treeFiles(repo, good)].map(([k, v]) => [k, v.content.toString()])).get('notes.txt'),
      repo.read('notes.txt').toString(),
      'the worktree is the state after the last good step',
    );
    assert.not.match(repo.read('notes.txt').toString(), 'BUG');
    assert.match(repo.read('notes.txt').toString(), 'user line\nline 6\n');
  } finally {
    repo.cleanup();
  }
});

test.run();
