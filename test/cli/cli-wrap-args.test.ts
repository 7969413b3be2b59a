// `wrap` starts every session (its fixed cost, issue 19), so its plain argument
// forms skip yargs as `snap`'s do; they must reach the handler exactly as yargs
// gives them, and everything else must still get yargs' parsing and messages.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import yargs from 'yargs';
import { cli, tempRepo } from '../support/helpers.js';
import { parseWrapArgs } from '../../src/cli/main.js';
import { wrapCommand } from '../../src/cli/commands/wrap.js';

/** What yargs hands the wrap handler for `wrap <args>` (with the CLI's parser configuration), without its bookkeeping keys. */
async function viaYargs(args: string[]): Promise<Record<string, unknown>> {
  let got: Record<string, unknown> | null = null;
  const mod = wrapCommand({} as never);
  await yargs(['wrap', ...args])
    .parserConfiguration({ 'populate--': true })
    .strict()
    .exitProcess(false)
    .fail((msg, err) => {
      throw err ?? new Error(msg);
    })
    .command({ ...(mod as object), handler: (a: Record<string, unknown>) => void (got = a) } as never)
    .parseAsync();
  const { _, $0, q, ...rest } = got as unknown as Record<string, unknown>;
  void _;
  void $0;
  void q;
  return rest;
}

test('wrap arguments: the plain forms parse as yargs gives them to the handler', async () => {
  for (const args of [
    ['--', 'true'],
    ['-q', '--', 'true'],
    ['--quiet', '--', 'claude', '--continue', '007', '--help', '-v'],
    ['--session', 'fix-login', '--agent', 'codex', '--auto', '--mcp', '--', 'codex', 'exec'],
    ['--agent=claude', '--session=abc', '--', 'x'],
    ['--worktree', '-q', '--', 'x', '--'],
    // --name implies nothing since sessions of any kind have names (issue 32 item 10): a plain form.
    ['--name', 'n', '--worktree', '--', 'x'],
    ['--name', 'login fix', '--', 'x'],
  ]) {
    const quick = parseWrapArgs(wrapCommand({} as never), args);
    assert.ok(quick, args.join(' '));
    const full = await viaYargs(args);
    // The handler reads these keys (absent ones are undefined either way).
    for (const key of ['session', 'agent', 'auto', 'quiet', 'worktree', 'name', 'from', 'command', 'mcp', '--']) {
      assert.equal(quick[key], full[key], `${args.join(' ')}: ${key}`);
    }
  }
});

test('wrap arguments: anything else is left to yargs', () => {
  for (const args of [
    [],
    ['true'],
    ['--'],
    ['-q'],
    ['--help', '--', 'x'],
    ['-h', '--', 'x'],
    ['--version', '--', 'x'],
    ['--agent', 'bogus', '--', 'x'],
    ['--agent', '--', 'x'],
    ['--session', '--', 'x'],
    ['--session', '-x', '--', 'x'],
    ['-q', '-q', '--', 'x'],
    ['--quiet=true', '--', 'x'],
    ['--no-auto', '--', 'x'],
    ['--from', 'HEAD', '--worktree', '--', 'x'],
    ['--unknown', '--', 'x'],
    ['extra', '--', 'x'],
    ['-qa', '--', 'x'],
  ]) {
    assert.is(parseWrapArgs(wrapCommand({} as never), args), null, args.join(' '));
  }
});

test('wrap: yargs still explains bad arguments (exit 2); the quick form runs the agent with its exit code', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const bad = await cli(repo, ['wrap', '--agent', 'bogus', '--', 'true']);
    assert.is(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /bogus/);
    const none = await cli(repo, ['wrap', '-q']);
    assert.is(none.code, 2, none.stderr);
    assert.match(none.stderr, /name the agent command to run after `--`/);
    const ok = await cli(repo, ['wrap', '-q', '--', 'sh', '-c', 'exit 3']);
    assert.is(ok.code, 3, ok.stderr);
    assert.is(ok.stderr, '');
    const loud = await cli(repo, ['wrap', '--', 'true']);
    assert.is(loud.code, 0, loud.stderr);
    assert.match(loud.stderr, /agentsnap: started session \S+ \(refs refs\/agent\/\S+\/<n>; AGENTSNAP_SESSION set for the command\)/);
  } finally {
    repo.cleanup();
  }
});

test.run();
