// `snap` runs on every tool call without a server, so its plain argument forms
// skip yargs; everything else must still get yargs' parsing and messages.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cli, tempRepo } from '../support/helpers.js';
import { parseSnapArgs } from '../../src/cli/main.js';

test('snap arguments: the plain forms parse as yargs gives them to the handler', () => {
  assert.equal(parseSnapArgs([]), { json: false, quiet: false });
  assert.equal(parseSnapArgs(['-q']), { json: false, quiet: true });
  assert.equal(parseSnapArgs(['--json', '--session', 'abc', '-m', 'before refactor']), {
    json: true,
    quiet: false,
    session: 'abc',
    message: 'before refactor',
  });
  assert.equal(parseSnapArgs(['--phase=post', '--step', '12', '--status', 'failed', '--tool', 'Bash']), {
    json: false,
    quiet: false,
    phase: 'post',
    step: 12,
    status: 'failed',
    tool: 'Bash',
  });
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
    assert.is(parseSnapArgs(args), null, args.join(' '));
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
