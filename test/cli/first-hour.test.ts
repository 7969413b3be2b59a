// Issue 32's "Done when": a newcomer's first hour, scripted, through the executable (bin/agentsnap.js in its own
// process, as a global install runs it): set up (`init claude`, `hooks install`, `doctor`), wrap an agent that edits,
// runs `sed` and `rm`, creates files and runs a failing test, the user's own edits between its steps, `log`, `undo`
// (keeping the user's file, refusing the both-changed one, `--merge`), `revert` and `op undo` of it, `bisect`,
// `blame`, and uninstalling as the README says, after which nothing of agentsnap is left.
// Below it, the smallest tests of what the hour found broken: bisect after `op undo` of a revert, and
// `undo --merge` of a file the user edited before the agent changed it again.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import {
  agentsnapOnPath,
  cliProcess,
  refsUnder,
  step,
  tempRepo,
  worktreeFiles,
  type CliResult,
  type TempRepo,
} from '../support/helpers.js';

const CALC = 'module.exports.add = (a, b) => a + b;\n';
const BUGGY_CALC = 'module.exports.add = (a, b) => a - b;\n';
const TEST_JS = [
  "const { add } = require('./src/calc.js');",
  "if (add(2, 2) !== 4) { console.error('not ok 1 - adds two numbers'); process.exit(1); }",
  "console.log('ok 1 - adds two numbers');",
  '',
].join('\n');
const NOTES = '# notes\nfirst\nsecond\nthird\nlast line\n';
/** The user's own Claude Code settings, in their own formatting: uninstalling must give back these bytes. */
const SETTINGS = '{\n    "permissions": { "allow": ["Bash(node test.js)"] }\n}\n';

function ok(r: CliResult, what: string): CliResult {
  assert.is(r.code, 0, `${what}: exit ${r.code}\n${r.stdout}${r.stderr}`);
  return r;
}

function text(repo: TempRepo, rel: string): string {
  return repo.read(rel).toString('utf8');
}

/** Every file of the worktree as text (the comparisons are of bytes). */
function files(repo: TempRepo): Record<string, string> {
  return Object.fromEntries([...worktreeFiles(repo)].map(([p, f]) => [p, f.content.toString('latin1')]));
}

/** What of the repository's .git agentsnap may touch: its hooks, info/exclude. */
function gitDirFiles(repo: TempRepo): Record<string, string> {
  const out: Record<string, string> = {};
  for (const rel of ['hooks', 'info']) {
    for (const name of fs.readdirSync(path.join(repo.dir, '.git', rel)))
      out[`${rel}/${name}`] = fs.readFileSync(path.join(repo.dir, '.git', rel, name), 'latin1');
  }
  return out;
}

/**
 * The agent, run by `agentsnap wrap -- sh agent.sh`: five tool calls, each between `snap --phase pre` and
 * `--phase post` as an agent's hooks record them. Between steps 3 and 4 the user writes a file of their own,
 * scratch.txt, and the first line of notes.md, whose last line the agent changes in step 5 (outside any tool
 * call; in the script so that nothing depends on when the user types).
 */
const AGENT = [
  'set -e',
  'pre() { agentsnap snap --phase pre --tool "$1" -q >/dev/null; }',
  'post() { agentsnap snap --phase post --tool "$1" -q >/dev/null; }',
  // 1: a new file.
  "pre Write; mkdir -p src; printf 'module.exports.double = (x) => x * 2;\\n' > src/double.js; post Write",
  // 2: sed puts the bug in.
  "pre Bash; sed -i 's/a + b/a - b/' src/calc.js; post Bash",
  // 3: rm.
  'pre Bash; rm old.txt; post Bash',
  // The user, between steps 3 and 4.
  "printf 'my own notes\\n' > scratch.txt",
  "sed -i 's/^# notes$/# notes (mine)/' notes.md",
  // 4: the tests fail (exit 1); the agent goes on.
  'pre Bash; node test.js || true; post Bash',
  // 5: sed on notes.md, and a new file.
  "pre Bash; sed -i 's/^last line$/last line, by the agent/' notes.md; mkdir -p docs; printf 'docs\\n' > docs/new.md; post Bash",
  '',
].join('\n');

test('the first hour: install, wrap an agent, user edits between steps, undo, op undo of a revert, bisect, blame, uninstall without a trace', async () => {
  const repo = tempRepo({
    files: { 'src/calc.js': CALC, 'test.js': TEST_JS, 'notes.md': NOTES, 'old.txt': 'old\n', '.claude/settings.json': SETTINGS },
  });
  try {
    const env = { PATH: agentsnapOnPath(repo.base) };
    const run = (args: string[]) => cliProcess(repo, args, { env, timeoutMs: 120_000 });
    const configBefore = repo.git(['config', '--list']);
    const gitDirBefore = gitDirFiles(repo);

    // 1. Install: `init claude`, the git hooks, and doctor says all is well.
    ok(await run(['init', 'claude']), 'init claude');
    assert.match(text(repo, '.claude/settings.local.json'), 'agentsnap-hook claude PreToolUse');
    assert.is(text(repo, '.claude/settings.json'), SETTINGS, "the user's own settings file is not touched");
    ok(await run(['hooks', 'install']), 'hooks install');
    const doctor = ok(await run(['doctor']), 'doctor');
    assert.match(doctor.stdout, /^healthy$/m);
    assert.not.match(doctor.stdout, 'problem');

    // 2-3. The agent's five steps; the user's scratch.txt between steps 3 and 4.
    const agent = path.join(repo.base, 'agent.sh');
    fs.writeFileSync(agent, AGENT);
    const wrap = ok(await run(['wrap', '--agent', 'generic', '--', 'sh', agent]), 'wrap');
    assert.match(wrap.stderr, 'not ok 1 - adds two numbers', "the agent's failing test run");
    assert.match(wrap.stderr, /session \S+ ended; see `agentsnap log --session \S+`/);
    assert.is(text(repo, 'src/calc.js'), BUGGY_CALC);
    assert.not.ok(repo.exists('old.txt'));
    const myNotes = NOTES.replace('# notes\n', '# notes (mine)\n');
    assert.is(text(repo, 'notes.md'), myNotes.replace('last line', 'last line, by the agent'));
    assert.is(text(repo, 'docs/new.md'), 'docs\n');

    // 4. log: the steps and the user's edit between them.
    const log = ok(await run(['log']), 'log').stdout;
    assert.match(log, /^\s+1\s+Write\s+done\s.*\n\s+A src\/double\.js/m, log);
    assert.match(log, /^\s+2\s+Bash\s+done\s.*\n\s+M src\/calc\.js/m, log);
    assert.match(log, /^\s+3\s+Bash\s+done\s.*\n\s+D old\.txt/m, log);
    assert.match(log, /^\s+your edits before step 4: M notes\.md, A scratch\.txt$/m, log);
    assert.match(log, /^\s+4\s+Bash\s+done\s/m, log);
    assert.match(log, /^\s+5\s+Bash\s+done\s.*\n\s+A docs\/new\.md.*\n\s+M notes\.md/m, log);

    // undo 3: notes.md both changed -> refused (exit 3), nothing changed.
    const beforeUndo = files(repo);
    const refused = await run(['undo', '3']);
    assert.is(refused.code, 3, refused.stdout + refused.stderr);
    assert.match(refused.stderr, 'M notes.md: changed by step 5 and by you (between step 3 and 4)');
    assert.match(refused.stderr, 'Run again with --merge');
    assert.equal(files(repo), beforeUndo);
    // --merge: steps 3-5 taken back, the user's scratch.txt kept, notes.md the user's line without the agent's.
    const merged = ok(await run(['undo', '3', '--merge']), 'undo 3 --merge');
    assert.match(merged.stdout, 'kept: scratch.txt (your edit between step 3 and 4)');
    assert.match(merged.stdout, 'merged: notes.md');
    assert.is(text(repo, 'notes.md'), myNotes);
    assert.is(text(repo, 'scratch.txt'), 'my own notes\n');
    assert.is(text(repo, 'old.txt'), 'old\n');
    assert.not.ok(repo.exists('docs/new.md'));
    assert.is(text(repo, 'src/calc.js'), BUGGY_CALC, 'step 2 is before the undo target');

    // 5. revert 2 takes the bug out; op log lists it; op undo takes the revert back.
    const revert = ok(await run(['revert', '2']), 'revert 2');
    assert.match(revert.stdout, "step 2's changes taken back");
    assert.is(text(repo, 'src/calc.js'), CALC);
    const opLog = ok(await run(['op', 'log']), 'op log').stdout;
    assert.match(opLog, /^1\s+undo\s.*undo 3: back to before step 3/m, opLog);
    assert.match(opLog, /^2\s+revert\s.*revert step 2\s.*done$/m, opLog);
    const ops = JSON.parse(ok(await run(['op', 'log', '--json']), 'op log --json').stdout) as { id: string; kind: string }[];
    const revertId = ops.find((o) => o.kind === 'revert')?.id;
    assert.is(revertId, '2');
    const opUndo = ok(await run(['op', 'undo', revertId!]), 'op undo');
    assert.match(opUndo.stdout, 'operation 2 (revert step 2) taken back');
    assert.is(text(repo, 'src/calc.js'), BUGGY_CALC);
    assert.is(text(repo, 'notes.md'), myNotes, 'the rest as it was');
    assert.is(text(repo, 'scratch.txt'), 'my own notes\n');
    const log2 = ok(await run(['log']), 'log').stdout;
    assert.match(log2, /^\s+3\s+Bash\s+undone\s/m, log2);
    assert.match(log2, /^\s+op 2\s+revert\s+undone by op 3\s/m, log2);

    // 6. bisect: the first bad step, as a diffstat.
    const bisect = ok(await run(['bisect', '--run', 'node test.js']), 'bisect');
    assert.match(bisect.stdout, 'first bad step: 2  Bash  done');
    assert.match(bisect.stdout, /src\/calc\.js \| 2 \+-/);
    assert.not.match(bisect.stdout, '-module.exports.add', 'a stat, not the diff');
    assert.match(bisect.stdout, 'agentsnap revert 2');
    assert.not.match(bisect.stdout, 'already taken back', 'the revert was taken back by op undo');

    // 7. blame: a line credited to its step, the user's lines as "your edit".
    const rows = async (file: string) =>
      ok(await run(['blame', file]), `blame ${file}`)
        .stdout.trimEnd()
        .split('\n')
        .map((l) => l.replace(/\s+\d\d:\d\d\s+/, ' ').replace(/\s+/g, ' '));
    assert.equal(await rows('src/double.js'), ['step 1 Write 1) module.exports.double = (x) => x * 2;']);
    assert.equal((await rows('scratch.txt'))[0], 'your edit (between step 3 and 4) 1) my own notes');
    const notes = await rows('notes.md');
    assert.is(notes[0], 'your edit (between step 3 and 4) 1) # notes (mine)');
    assert.is(notes[1], 'before the session 2) first');
    // Blame of the calc file credits the bug's line to "op undo 2: back to before operation 2", not to step 2 whose
    // change it is (the op undo only put it back): not asserted here; open in issue 32.

    // 8. Uninstall as the README says; then no trace.
    const userFiles = files(repo);
    ok(await run(['init', '--remove', 'claude']), 'init --remove claude');
    ok(await run(['hooks', 'uninstall']), 'hooks uninstall');
    const gc = ok(await run(['gc', '--all']), 'gc --all');
    assert.match(gc.stdout, /^removed 1 session, \d+ refs and the state directory /m);
    assert.equal([...refsUnder(repo, 'refs/').keys()], ['refs/heads/main']);
    assert.not.ok(fs.existsSync(path.join(repo.dir, '.git', 'agentsnap')));
    assert.is(repo.git(['config', '--list']), configBefore);
    assert.not.match(repo.git(['config', '--list']), /agentsnap|log-all/);
    assert.equal(gitDirFiles(repo), gitDirBefore, '.git/hooks and .git/info as before init');
    assert.is(text(repo, '.claude/settings.json'), SETTINGS);
    assert.not.ok(repo.exists('.claude/settings.local.json'));
    assert.equal(fs.readdirSync(path.join(repo.dir, '.claude')), ['settings.json']);
    delete userFiles['.claude/settings.local.json'];
    delete userFiles['.claude/commands/agentsnap-undo.md'];
    assert.equal(files(repo), userFiles, "the worktree's files as the user left them");
  } finally {
    repo.cleanup();
  }
});

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

test("undo --merge: the user's edit came before the agent changed the same file again (other lines): merged, not refused", async () => {
  const repo = tempRepo({ files: { 'notes.md': NOTES } });
  try {
    await step(repo, () => repo.write('x.txt', 'x\n'));
    repo.write('notes.md', NOTES.replace('# notes\n', '# notes (mine)\n')); // the user's, between steps 1 and 2
    await step(repo, () => repo.write('notes.md', text(repo, 'notes.md').replace('last line', 'last line, by the agent')));
    const merged = ok(await cliProcess(repo, ['undo', '1', '--merge']), 'undo 1 --merge');
    assert.match(merged.stdout, 'merged: notes.md');
    assert.is(text(repo, 'notes.md'), NOTES.replace('# notes\n', '# notes (mine)\n'));
    assert.not.ok(repo.exists('x.txt'));
  } finally {
    repo.cleanup();
  }
});

test("undo --merge: the user's edits before and after the agent's change of the same line: refused (exit 4), nothing changed", async () => {
  const repo = tempRepo({ files: { 'notes.md': NOTES } });
  try {
    await step(repo, () => repo.write('x.txt', 'x\n'));
    repo.write('notes.md', NOTES.replace('# notes\n', '# notes (mine)\n'));
    await step(repo, () => repo.write('notes.md', text(repo, 'notes.md').replace('# notes (mine)', '# notes (the agent)')));
    repo.write('notes.md', text(repo, 'notes.md').replace('# notes (the agent)', '# notes (mine, again)'));
    const before = files(repo);
    const refused = await cliProcess(repo, ['undo', '1', '--merge']);
    assert.is(refused.code, 4, refused.stdout + refused.stderr);
    assert.match(refused.stderr, 'not merged: a conflict between your edit and taking out step 2');
    assert.equal(files(repo), before);
  } finally {
    repo.cleanup();
  }
});

test.run();
