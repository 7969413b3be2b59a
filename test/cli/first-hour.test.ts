// Issue 32's "Done when": a newcomer's first hour, scripted, through the executable (bin/agentsnap.js in its own
// process, as a global install runs it): set up (`init claude`, `hooks install`, `doctor`), wrap an agent that edits,
// runs `sed` and `rm`, creates files and runs a failing test, the user's own edits between its steps, `log`, `undo`
// (keeping the user's file, refusing the both-changed one, `--merge`), `revert` and `op undo` of it, `bisect`,
// `blame`, and uninstalling as the README says, after which nothing of agentsnap is left.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cliProcess, step, tempRepo, type CliResult, type TempRepo } from '../support/helpers.js';

const CALC = 'module.exports.add = (a, b) => a + b;\n';
const BUGGY_CALC = 'module.exports.add = (a, b) => a - b;\n';
const TEST_JS = [
  "const { add } = require('./src/calc.js');",
  "if (add(2, 2) !== 4) { console.error('not ok 1 - adds two numbers'); process.exit(1); }",
  "console.log('ok 1 - adds two numbers');",
  '',
].join('\n');

function ok(r: CliResult, what: string): CliResult {
  assert.is(r.code, 0, `${what}: exit ${r.code}\n${r.stdout}${r.stderr}`);
  return r;
}

function text(repo: TempRepo, rel: string): string {
  return repo.read(rel).toString('utf8');
}

test('bisect after `op undo` of a revert of the first bad step: suggests `revert N` again, not "already taken back"', async () => {
  const repo = tempRepo({ files: { 'src/calc.js': CALC, 'test.js': TEST_JS } });
  try {
    await step(repo, () => repo.write('src/calc.js', BUGGY_CALC));
    ok(await cliProcess(repo, ['revert', '1']), 'revert 1');
    ok(await cliProcess(repo, ['op', 'undo']), 'op undo');
    assert.is(text(repo, 'src/calc.js'), BUGGY_CALC);
    const bisect = ok(await cliProcess(repo, ['bisect', '--run', 'node test.js']), 'bisect');
    assert.match(bisect.stdout, 'first bad step: 1');
    assert.not.match(bisect.stdout, 'already taken back');
    assert.match(bisect.stdout, 'agentsnap revert 1');
    const json = JSON.parse(ok(await cliProcess(repo, ['bisect', '--run', 'node test.js', '--json']), 'bisect --json').stdout) as {
      revertedBy: number | null;
    };
    assert.is(json.revertedBy, null);
  } finally {
    repo.cleanup();
  }
});

test.run();
