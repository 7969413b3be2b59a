// Issue 30 item 6: a step number is checked by one validator wherever it is taken (show, snap --step, undo,
// restore, revert), through the library API and through the CLI: the same values are refused with the same
// error, and the same values are taken.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cli, tempRepo, type TempRepo } from '../support/helpers.js';
import { isAgentsnapError, restore, revert, show, undo } from '../../src/index.js';

/** A repository with one session of two steps: step 1 wrote b.txt, step 2 changed a.txt. */
async function twoSteps(): Promise<TempRepo> {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  const run = async (args: string[]) => {
    const r = await cli(repo, args);
    assert.is(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
  };
  await run(['snap', '--phase', 'pre', '--tool', 'Bash']);
  repo.write('b.txt', 'b\n');
  await run(['snap', '--phase', 'post']);
  await run(['snap', '--phase', 'pre', '--tool', 'Edit']);
  repo.write('a.txt', 'a2\n');
  await run(['snap', '--phase', 'post']);
  return repo;
}

/** The code and message a library call fails with, or 'ok'. */
async function outcome(call: () => Promise<unknown>): Promise<string> {
  try {
    await call();
    return 'ok';
  } catch (e) {
    if (!isAgentsnapError(e)) throw e;
    return `${e.code}: ${e.message}`;
  }
}

test('show, undo, restore and revert refuse the same step numbers with the same error, through the API', async () => {
  const repo = await twoSteps();
  try {
    await sameStepsThroughApi(repo);
  } finally {
    repo.cleanup();
  }
});

async function sameStepsThroughApi(repo: TempRepo): Promise<void> {
  const at = { cwd: repo.dir, env: repo.env };
  for (const step of [0, -1, 1.5]) {
    const want = `InvalidArgument: step must be a whole number of 1 or more, not ${JSON.stringify(step)}.`;
    assert.is(await outcome(() => show({ ...at, step })), want, `show ${step}`);
    assert.is(await outcome(() => undo({ ...at, step, dryRun: true })), want, `undo ${step}`);
    assert.is(await outcome(() => restore({ ...at, step, paths: ['a.txt'], dryRun: true })), want, `restore ${step}`);
    assert.is(await outcome(() => revert({ ...at, step, dryRun: true })), want, `revert ${step}`);
  }
  // And take the same ones.
  assert.is(await outcome(() => show({ ...at, step: 1 })), 'ok');
  assert.is(await outcome(() => undo({ ...at, step: 1, dryRun: true })), 'ok');
  assert.is(await outcome(() => restore({ ...at, step: 1, paths: ['a.txt'], dryRun: true })), 'ok');
  assert.is(await outcome(() => revert({ ...at, step: 1, dryRun: true })), 'ok');
}

test('show, undo, restore, revert and snap --step refuse 0 the same way through the CLI (exit 2, InvalidArgument) and take 1', async () => {
  const repo = await twoSteps();
  try {
    await sameStepsThroughCli(repo);
  } finally {
    repo.cleanup();
  }
});

async function sameStepsThroughCli(repo: TempRepo): Promise<void> {
  const before = repo.git(['for-each-ref', 'refs/agent']);
  const commands = (n: string) => [
    ['show', n],
    ['undo', n, '--dry-run'],
    ['restore', n, '--dry-run', '--', 'a.txt'],
    ['revert', n, '--dry-run'],
  ];
  const messages = new Set<string>();
  for (const args of [...commands('0'), ['snap', '--phase', 'post', '--step', '0']]) {
    const r = await cli(repo, [args[0] as string, '--json', ...args.slice(1)]);
    assert.is(r.code, 2, `${args.join(' ')}: exit ${r.code} ${r.stderr}`);
    const { error } = JSON.parse(r.stdout) as { error: { code: string; message: string } };
    assert.is(error.code, 'InvalidArgument', args.join(' '));
    if (args[0] !== 'snap') messages.add(error.message);
  }
  // One message for the step positional, whichever command takes it.
  assert.equal([...messages], ['"0" is not a step number.'], 'show, undo, restore and revert say the same');
  assert.is(repo.git(['for-each-ref', 'refs/agent']), before, 'nothing moved');
  assert.is(repo.read('a.txt').toString(), 'a2\n');
  for (const args of commands('1')) {
    const r = await cli(repo, args);
    assert.is(r.code, 0, `${args.join(' ')}: exit ${r.code} ${r.stderr}`);
  }
}

test.run();
