// Issue 32, items 2 and 3, through the executable: `log` is one timeline (steps, the user's edits between
// them, every operation, undone steps marked) in text and --json; `op log` lists the operations with ids;
// `op undo [ID]` takes back a revert, restore, apply, undo, redo or op undo, bytes exact, and refuses
// (exit 3, nothing changed) where a change the user made since would be lost; undo's dry run names the
// earlier operations it takes back.
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cliProcess, step, tempRepo, worktreeFiles, type CliResult, type TempRepo } from '../support/helpers.js';
import { openRepo } from '../../src/git/repo.js';
import { startWorktreeSession } from '../../src/worktrees/worktree.js';

function ok(r: CliResult, what: string): CliResult {
  assert.is(r.code, 0, `${what}: ${r.stdout}${r.stderr}`);
  return r;
}

/** Every file of the worktree as text (the comparisons below are of bytes). */
function files(repo: TempRepo): Record<string, string> {
  return Object.fromEntries([...worktreeFiles(repo)].map(([p, f]) => [p, f.content.toString('latin1')]));
}

interface OpJson {
  id: string;
  kind: string;
  what: string;
  status: string;
  undoneBy: string | null;
}

async function opLog(repo: TempRepo): Promise<OpJson[]> {
  return JSON.parse(ok(await cliProcess(repo, ['op', 'log', '--json']), 'op log --json').stdout) as OpJson[];
}

/** Three steps: 1 changes calc.js, 2 puts a bug into calc.js and adds b.txt, 3 changes notes.txt. */
async function threeSteps(repo: TempRepo): Promise<void> {
  await step(repo, () => repo.write('calc.js', 'add\n'));
  await step(repo, () => {
    repo.write('calc.js', 'add\nbug\n');
    repo.write('b.txt', 'bee\n');
  });
  await step(repo, () => repo.write('notes.txt', 'three\n'));
}

test('log after undo 2 marks steps 2-3 undone (text and --json); the undo is a row of the timeline; the user edit before a step is one too', async () => {
  const repo = tempRepo({ files: { 'calc.js': 'start\n' } });
  try {
    await step(repo, () => repo.write('calc.js', 'add\n'));
    repo.write('mine.txt', 'my own\n'); // the user's, between steps 1 and 2
    await step(repo, () => repo.write('b.txt', 'bee\n'));
    await step(repo, () => repo.write('notes.txt', 'three\n'));
    ok(await cliProcess(repo, ['undo', '2']), 'undo 2');
    const text = ok(await cliProcess(repo, ['log']), 'log').stdout;
    assert.match(text, /^\s+1\s+Bash\s+done\s/m, text);
    assert.match(text, /^\s+2\s+Bash\s+undone\s/m, text);
    assert.match(text, /^\s+3\s+Bash\s+undone\s/m, text);
    assert.match(text, /^\s+op 1\s+undo\s.*undo 2: back to before step 2/m, 'the operation is a row');
    assert.match(text, /your edits before step 2: A mine\.txt/, 'the edit between the steps');
    // The operation comes after the steps it undid, in journal order.
    assert.ok(text.indexOf('op 1') > text.search(/^\s+3\s+Bash/m), text);
    const json = JSON.parse(ok(await cliProcess(repo, ['log', '--json']), 'log --json').stdout) as {
      kind: string;
      step?: number;
      status?: string;
      undone?: boolean;
      id?: string;
      operation?: string;
    }[];
    const steps = json.filter((e) => e.step !== undefined);
    assert.equal(
      steps.map((s) => [s.step, s.status, s.undone ?? false]),
      [
        [1, 'done', false],
        [2, 'done', true],
        [3, 'done', true],
      ],
      'status kept as it was, undone added',
    );
    const ops = json.filter((e) => e.kind === 'operation');
    assert.equal(
      ops.map((o) => [o.id, o.operation]),
      [['1', 'undo']],
    );
    assert.is(json.indexOf(ops[0]!), json.length - 1, 'the operation last, after step 3');
  } finally {
    repo.cleanup();
  }
});

test('op undo of a revert returns the worktree byte for byte; op undo of that op undo reverts again; op log lists all three with ids', async () => {
  const repo = tempRepo({ files: { 'calc.js': 'start\n' } });
  try {
    await threeSteps(repo);
    const before = files(repo);
    ok(await cliProcess(repo, ['revert', '2']), 'revert 2');
    const reverted = files(repo);
    assert.is(reverted['calc.js'], 'add\n');
    assert.is(reverted['b.txt'], undefined);
    const redo = await cliProcess(repo, ['redo']);
    assert.is(redo.code, 1, 'redo knows no revert');
    assert.match(redo.stderr, 'To take back operation 1 (revert step 2): `agentsnap op undo 1`', 'and says what does');
    const back = ok(await cliProcess(repo, ['op', 'undo']), 'op undo');
    assert.match(back.stdout, 'operation 1 (revert step 2) taken back');
    assert.equal(files(repo), before, 'exactly as before the revert');
    ok(await cliProcess(repo, ['op', 'undo']), 'op undo of the op undo');
    assert.equal(files(repo), reverted, 'reverted again');
    const log = await opLog(repo);
    assert.equal(
      log.map((o) => [o.id, o.kind, o.undoneBy]),
      [
        ['1', 'revert', null],
        ['2', 'op-undo', '3'],
        ['3', 'op-undo', null],
      ],
    );
    const text = ok(await cliProcess(repo, ['op', 'log']), 'op log').stdout;
    assert.match(text, /^1\s+revert\s.*revert step 2\s.*done$/m, text);
    assert.match(text, /^2\s+op-undo\s.*undone by 3$/m, text);
  } finally {
    repo.cleanup();
  }
});

test('op undo of a revert refuses (exit 3, nothing changed) when the user changed a path it would reset', async () => {
  const repo = tempRepo({ files: { 'calc.js': 'start\n' } });
  try {
    await threeSteps(repo);
    ok(await cliProcess(repo, ['revert', '2']), 'revert 2');
    repo.write('calc.js', 'add\nthe user fixed it\n');
    repo.write('b.txt', 'my own b\n');
    const now = files(repo);
    const refused = await cliProcess(repo, ['op', 'undo', '1']);
    assert.is(refused.code, 3, refused.stderr);
    assert.match(refused.stderr, /op undo 1 would take back the recorded changes to 2 paths you changed too/, refused.stderr);
    assert.match(refused.stderr, 'calc.js');
    assert.equal(files(repo), now, 'nothing changed');
    const dry = await cliProcess(repo, ['op', 'undo', '1', '--dry-run']);
    assert.is(dry.code, 3, 'the dry run says the real one would be refused');
    assert.equal(files(repo), now);
    assert.equal(
      (await opLog(repo)).map((o) => o.id),
      ['1'],
      'nothing recorded',
    );
  } finally {
    repo.cleanup();
  }
});

test("op undo of a revert resets only the paths the revert changed: a later step's change elsewhere and the user's own new file stay", async () => {
  const repo = tempRepo({ files: { 'calc.js': 'start\n' } });
  try {
    await threeSteps(repo);
    ok(await cliProcess(repo, ['revert', '2']), 'revert 2');
    await step(repo, () => repo.write('notes.txt', 'four\n'));
    repo.write('mine.txt', 'my own\n');
    const back = ok(await cliProcess(repo, ['op', 'undo', '1']), 'op undo 1');
    assert.match(back.stdout, /A b\.txt/);
    assert.match(back.stdout, /M calc\.js/);
    assert.equal(files(repo), { 'calc.js': 'add\nbug\n', 'b.txt': 'bee\n', 'notes.txt': 'four\n', 'mine.txt': 'my own\n' });
  } finally {
    repo.cleanup();
  }
});

test('op undo of a restore, of an undo (its steps no longer undone) and of a redo (undone again): bytes exact', async () => {
  const repo = tempRepo({ files: { 'calc.js': 'start\n' } });
  try {
    await threeSteps(repo);
    const atEnd = files(repo);
    ok(await cliProcess(repo, ['restore', '1', '--', 'calc.js']), 'restore 1 -- calc.js');
    assert.is(files(repo)['calc.js'], 'start\n');
    ok(await cliProcess(repo, ['op', 'undo']), 'op undo of the restore');
    assert.equal(files(repo), atEnd, 'restore taken back');

    ok(await cliProcess(repo, ['undo', '2']), 'undo 2');
    const opUndo = ok(await cliProcess(repo, ['op', 'undo']), 'op undo of the undo');
    assert.match(opUndo.stderr, 'steps 2, 3 are back');
    assert.equal(files(repo), atEnd, 'undo taken back');
    let json = JSON.parse(ok(await cliProcess(repo, ['log', '--json']), 'log').stdout) as { step?: number; undone?: boolean }[];
    assert.equal(
      json.filter((e) => e.undone).map((e) => e.step),
      [],
      'no step undone any more',
    );
    const redo = await cliProcess(repo, ['redo']);
    assert.is(redo.code, 1, 'the undo is taken back: nothing to redo');

    ok(await cliProcess(repo, ['undo', '3']), 'undo 3');
    ok(await cliProcess(repo, ['redo']), 'redo');
    assert.equal(files(repo), atEnd);
    const ops = await opLog(repo);
    const redoId = ops[ops.length - 1]!.id;
    const again = ok(await cliProcess(repo, ['op', 'undo', redoId]), 'op undo of the redo');
    assert.match(again.stderr, 'step 3 are undone again');
    assert.not.ok(repo.exists('notes.txt'), 'step 3 undone again');
    const { 'notes.txt': _notes, ...withoutNotes } = atEnd;
    assert.equal(files(repo), withoutNotes);
    json = JSON.parse(ok(await cliProcess(repo, ['log', '--json']), 'log').stdout) as { step?: number; undone?: boolean }[];
    assert.equal(
      json.filter((e) => e.undone).map((e) => e.step),
      [3],
    );
  } finally {
    repo.cleanup();
  }
});

test('undo 3 --dry-run after revert 2 says it takes back operation 1 (revert step 2)', async () => {
  const repo = tempRepo({ files: { 'calc.js': 'start\n' } });
  try {
    await threeSteps(repo);
    ok(await cliProcess(repo, ['revert', '2']), 'revert 2');
    const dry = ok(await cliProcess(repo, ['undo', '3', '--dry-run']), 'undo 3 --dry-run');
    assert.match(dry.stdout, /M calc\.js/);
    assert.match(dry.stdout, 'would take back operation 1 (revert step 2)');
    const json = JSON.parse(ok(await cliProcess(repo, ['undo', '3', '--dry-run', '--json']), 'json').stdout) as {
      files: { takesBack: { op: number; kind: string }[] };
    };
    assert.equal(
      json.files.takesBack.map((t) => [t.op, t.kind]),
      [[1, 'revert']],
    );
  } finally {
    repo.cleanup();
  }
});

test('op undo with an unknown id: exit 1, what and what to do; with no operation: nothing to take back', async () => {
  const repo = tempRepo({ files: { 'calc.js': 'start\n' } });
  try {
    await threeSteps(repo);
    const none = await cliProcess(repo, ['op', 'undo']);
    assert.is(none.code, 1, none.stderr);
    assert.match(none.stderr, /nothing to take back in session \S+: it has no operations/);
    ok(await cliProcess(repo, ['revert', '2']), 'revert 2');
    const unknown = await cliProcess(repo, ['op', 'undo', '7']);
    assert.is(unknown.code, 1, unknown.stderr);
    assert.match(unknown.stderr, /no operation "7" in session/);
    assert.match(unknown.stderr, 'agentsnap op log');
    assert.not.match(unknown.stderr, /\bat .*\.js:\d+/, 'no stack trace');
    const json = await cliProcess(repo, ['op', 'undo', '7', '--json']);
    assert.is(json.code, 1);
    assert.is((JSON.parse(json.stdout) as { error: { code: string } }).error.code, 'UnknownOperation');
  } finally {
    repo.cleanup();
  }
});

async function worktreeSession(r: TempRepo, id: string): Promise<string> {
  const repo = await openRepo(r.dir, { env: r.env });
  return (await startWorktreeSession(repo, { session: id })).meta.path;
}

test('op undo of an apply takes it back in the worktree it wrote into; refused (exit 3) over a change made there since', async () => {
  const r = tempRepo({ files: { 'a.txt': 'one\n', 'c.txt': 'sea\n' } });
  try {
    const wt = await worktreeSession(r, 'w1');
    fs.writeFileSync(path.join(wt, 'a.txt'), 'agent a\n');
    fs.writeFileSync(path.join(wt, 'new.txt'), 'new\n');
    ok(await cliProcess(r, ['snap', '--session', 'w1', '-m', 'work'], { cwd: wt }), 'snap');
    const before = files(r);
    ok(await cliProcess(r, ['apply', 'w1']), 'apply');
    const applied = files(r);
    const log = JSON.parse(ok(await cliProcess(r, ['op', 'log', '--session', 'w1', '--json']), 'op log').stdout) as OpJson[];
    assert.equal(
      log.map((o) => [o.id, o.kind]),
      [['a1', 'apply']],
    );
    r.write('a.txt', 'user after apply\n');
    const refused = await cliProcess(r, ['op', 'undo', 'a1', '--session', 'w1']);
    assert.is(refused.code, 3, refused.stderr);
    assert.match(refused.stderr, 'a.txt');
    assert.is(r.read('a.txt').toString(), 'user after apply\n', 'nothing changed');
    assert.ok(r.exists('new.txt'));
    r.write('a.txt', applied['a.txt']!);
    ok(await cliProcess(r, ['op', 'undo', 'a1', '--session', 'w1']), 'op undo a1');
    assert.equal(files(r), before, 'exactly as before the apply');
    const after = JSON.parse(ok(await cliProcess(r, ['op', 'log', '--session', 'w1', '--json']), 'op log').stdout) as OpJson[];
    assert.equal(
      after.map((o) => [o.id, o.kind, o.undoneBy]),
      [
        ['a1', 'apply', 'a1-undo'],
        ['a1-undo', 'apply-undo', null],
      ],
    );
  } finally {
    r.cleanup();
  }
});

test.run();
