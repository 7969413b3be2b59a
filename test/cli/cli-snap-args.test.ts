// `snap` runs on every tool call without a server, so its plain argument forms
// skip yargs; everything else must still get yargs' parsing and messages.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cli, tempRepo } from '../support/helpers.js';
import yargs from 'yargs';
import type { CommandModule } from 'yargs';
import { parseSnapArgs } from '../../src/cli/main.js';
import { snapCommand } from '../../src/cli/commands/snap.js';

const snap = snapCommand({} as never);

test('snap arguments: the plain forms parse as yargs gives them to the handler', () => {
  assert.equal(parseSnapArgs(snap, []), { json: false, quiet: false });
  assert.equal(parseSnapArgs(snap, ['-q']), { json: false, quiet: true });
  assert.equal(parseSnapArgs(snap, ['--json', '--session', 'abc', '-m', 'before refactor']), {
    json: true,
    quiet: false,
    session: 'abc',
    message: 'before refactor',
  });
  assert.equal(parseSnapArgs(snap, ['--phase=post', '--step', '12', '--status', 'failed', '--tool', 'Bash']), {
    json: false,
    quiet: false,
    phase: 'post',
    step: 12,
    status: 'failed',
    tool: 'Bash',
  });
});

/** What yargs hands `command`'s handler for `<name> <args>` (the CLI's parser configuration), without its bookkeeping keys. */
async function viaYargs(command: CommandModule, args: string[]): Promise<Record<string, unknown>> {
  let got: Record<string, unknown> | null = null;
  const name = String(command.command).split(' ')[0] as string;
  await yargs([name, ...args])
    .parserConfiguration({ 'populate--': true })
    .strict()
    .exitProcess(false)
    .fail((msg, err) => {
      throw err ?? new Error(msg);
    })
    .command({ ...(command as object), handler: (a: Record<string, unknown>) => void (got = a) } as never)
    .parseAsync();
  const { _, $0, ...rest } = got as unknown as Record<string, unknown>;
  void _;
  void $0;
  return rest;
}

test('snap arguments: the plain forms reach the handler as yargs gives them', async () => {
  for (const args of [
    [],
    ['-q'],
    ['--json', '--session', 'abc', '-m', 'before refactor'],
    ['--phase=post', '--step', '12', '--status', 'failed', '--tool', 'Bash'],
    ['--message=x y', '--quiet', '--phase', 'pre'],
  ]) {
    const quick = parseSnapArgs(snap, args);
    assert.ok(quick, args.join(' '));
    const full = await viaYargs(snap, args);
    for (const key of ['session', 'phase', 'step', 'tool', 'message', 'status', 'json', 'quiet']) {
      assert.equal(quick[key], full[key], `${args.join(' ')}: ${key}`);
    }
  }
});

test("plain arguments follow the command's yargs definition: a new option, an alias, what only yargs can check", async () => {
  const command = (build: (y: never) => unknown): CommandModule =>
    ({ command: 'probe', describe: 'x', builder: build, handler: () => {} }) as unknown as CommandModule;
  const plain = command((y: never) =>
    (y as { options(o: object): unknown }).options({
      count: { type: 'number', alias: 'c', describe: 'a whole number' },
      label: { type: 'string', alias: ['l', 'name'] },
      dry: { type: 'boolean', default: false },
      also: { type: 'string', implies: 'dry' },
    }),
  );
  const args = ['-c', '3', '--name', 'n', '--dry'];
  assert.equal(parseSnapArgs(plain, args), { dry: true, count: 3, label: 'n' });
  const full = await viaYargs(plain, args);
  for (const key of ['count', 'label', 'dry']) assert.equal(parseSnapArgs(plain, args)?.[key], full[key], key);
  // An option with more than a type (implies, coerce…) is yargs' to parse, as is every option of a builder with a check.
  assert.is(parseSnapArgs(plain, ['--also', 'x', '--dry']), null);
  const checked = command((y: never) =>
    ((y as { options(o: object): unknown }).options({ dry: { type: 'boolean' } }) as { check(f: () => boolean): unknown }).check(
      () => true,
    ),
  );
  assert.is(parseSnapArgs(checked, ['--dry']), null);
  assert.is(parseSnapArgs(checked, []), null);
});

test('snap arguments: anything else is left to yargs', () => {
  for (const args of [
    ['--help'],
    ['-h'],
    ['--phase', 'bogus'],
    ['--step', 'x'],
    ['--step', '0'],
    ['-q', '-q'],
    ['--json=true'],
    ['-m'],
    ['-m', '-x'],
    ['--unknown'],
    ['extra'],
    ['--'],
    ['-qm', 'x'],
  ]) {
    assert.is(parseSnapArgs(snap, args), null, args.join(' '));
  }
});

test('snap: yargs still explains bad arguments (exit 2) and prints help', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const bad = await cli(repo, ['snap', '--phase', 'bogus']);
    assert.is(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /--phase must be "pre" or "post", not "bogus"/);
    const help = await cli(repo, ['snap', '--help']);
    assert.is(help.code, 0);
    assert.match(help.stdout, /bracket a tool call/);
    const ok = await cli(repo, ['snap', '-q', '-m', 'note']);
    assert.is(ok.code, 0, ok.stderr);
    assert.is(ok.stdout, '1\n');
  } finally {
    repo.cleanup();
  }
});

test.run();
