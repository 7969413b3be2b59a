// Blame across commits (issue 17): which session step wrote each committed line, worked out when `blame` asks
// (test/git/hooks-cost.test.ts: with no hook per commit) or read from the git note `hooks note-commit` and `gc`
// write (refs/notes/agentsnap); amend and rebase carry the note (notes.rewriteRef); a later session's blame names
// the earlier session's step.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { agentsnapOnPath, cli, cliProcess, tempRepo, type TempRepo } from '../support/helpers.js';
import { recordStep } from '../support/snap-helpers.js';
import { openRepo } from '../../src/git/repo.js';
import { fileRuns } from '../../src/blame/notes.js';

function git(repo: TempRepo, env: Record<string, string>, args: string[]): string {
  const id = { GIT_AUTHOR_NAME: 'U', GIT_AUTHOR_EMAIL: 'u@example.com', GIT_COMMITTER_NAME: 'U', GIT_COMMITTER_EMAIL: 'u@example.com' };
  const r = spawnSync('git', args, { cwd: repo.dir, env: { ...repo.env, ...id, ...env }, encoding: 'utf8' });
  assert.is(r.status, 0, `git ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

test('blame notes: committed agent lines keep their step through commit --amend and rebase, in a later session', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'base\n', 'other.txt': 'o\n' } });
  try {
    const env = { PATH: agentsnapOnPath(repo.base) };
    const inst = await cli(repo, ['hooks', 'install'], { env });
    assert.is(inst.code, 0, inst.stderr);
    assert.match(git(repo, env, ['config', '--get-all', 'notes.rewriteRef']), 'refs/notes/agentsnap');
    const base = git(repo, env, ['rev-parse', 'HEAD']).trim();
    git(repo, env, ['checkout', '-q', '-b', 'feature']);
    const one = await recordStep(repo, () => repo.write('a.txt', 'base\nagent one\n'), env);
    repo.write('a.txt', 'base\nagent one\nmine\n'); // the user's line, between steps
    const two = await recordStep(repo, () => repo.write('a.txt', 'base\nagent one\nmine\nagent two\n'), env);
    const first = (JSON.parse((await cli(repo, ['log', '--json'], { env })).stdout) as { step: number }[]).length;
    assert.is(first, 2);
    git(repo, env, ['add', 'a.txt']);
    git(repo, env, ['commit', '-q', '-m', 'agent work']);
    const noted = await cli(repo, ['hooks', 'note-commit'], { env });
    assert.is(noted.code, 0, noted.stderr);
    assert.match(noted.stderr, 'noted which session steps wrote the committed lines of 1 file (refs/notes/agentsnap)');
    const note = JSON.parse(git(repo, env, ['notes', '--ref=agentsnap', 'show', 'HEAD'])) as {
      files: Record<string, [number, number, string, number][]>;
      blobs: Record<string, string>;
    };
    assert.equal(note.blobs, { 'a.txt': git(repo, env, ['rev-parse', 'HEAD:a.txt']).trim() }, 'the blob the lines are numbered in');
    const runs = note.files['a.txt'] ?? [];
    assert.equal(
      runs.map(([line, count, , st]) => [line, count, st]),
      [
        [2, 1, one],
        [4, 1, two],
      ],
    );

    git(repo, env, ['commit', '-q', '--amend', '-m', 'agent work, amended']);
    assert.match(git(repo, env, ['notes', '--ref=agentsnap', 'show', 'HEAD']), '"a.txt"');
    // Rebase onto a commit of the user's made meanwhile on another branch.
    git(repo, env, ['checkout', '-q', '-b', 'main2', base]);
    repo.write('other.txt', 'o2\n');
    git(repo, env, ['commit', '-q', '-am', 'user work']);
    git(repo, env, ['checkout', '-q', 'feature']);
    git(repo, env, ['rebase', '-q', 'main2']);
    assert.match(git(repo, env, ['notes', '--ref=agentsnap', 'show', 'HEAD']), '"a.txt"', 'the note followed the rebased commit');

    // A later session: every line is from before it, and the committed agent lines name the earlier steps.
    const later = await cliProcess(repo, ['wrap', '--agent', 'generic', '--', 'true'], { env });
    assert.is(later.code, 0, later.stderr);
    const id = /started session (\S+)/.exec(later.stderr)?.[1] as string;
    const blame = await cli(repo, ['blame', 'a.txt', '--session', id, '--json'], { env });
    assert.is(blame.code, 0, blame.stderr);
    const lines = (JSON.parse(blame.stdout) as { lines: { text: string; origin: { kind: string; step?: number } }[] }).lines.map((l) => [
      l.text,
      l.origin.kind,
      l.origin.step ?? null,
    ]);
    assert.equal(lines, [
      ['base', 'before-session', null],
      ['agent one', 'committed', one],
      ['mine', 'before-session', null],
      ['agent two', 'committed', two],
    ]);
    const text = await cli(repo, ['why', 'a.txt:2', '--session', id], { env });
    assert.match(text.stdout, `written by step ${one} (Bash) of session `);

    const un = await cli(repo, ['hooks', 'uninstall'], { env });
    assert.is(un.code, 0, un.stderr);
    const left = spawnSync('git', ['config', '--get-all', 'notes.rewriteRef'], { cwd: repo.dir, env: repo.env, encoding: 'utf8' });
    assert.not.match(left.stdout, 'refs/notes/agentsnap');
  } finally {
    repo.cleanup();
  }
});

test('blame notes: a note copied to a commit whose file is another blob has its lines mapped through the diff (deleted, changed, inserted lines)', async () => {
  const repo = tempRepo({ files: { 'f.txt': 'L1\nL2\nL3\nL4\nL5\nL6\n' } });
  try {
    const was = repo.git(['rev-parse', 'HEAD:f.txt']).trim();
    repo.write('f.txt', 'L1\nL3\nX4\nL5\nY\nL6\n');
    repo.git(['commit', '-q', '-am', 'moved']);
    const r = await openRepo(repo.dir, { env: repo.env });
    const note = { v: 1 as const, files: { 'f.txt': [[1, 6, 's', 1]] as [number, number, string, number][] }, blobs: { 'f.txt': was } };
    // L1 → 1, L2 gone, L3 → 2, L4 changed (its step is not the new line's), L5 → 4, L6 → 6.
    assert.equal(await fileRuns(r, note, 'HEAD', 'f.txt'), [
      [1, 2, 's', 1],
      [4, 1, 's', 1],
      [6, 1, 's', 1],
    ]);
    assert.equal(await fileRuns(r, note, 'HEAD~1', 'f.txt'), note.files['f.txt'], 'the very blob: as written');
    const gone = { ...note, blobs: { 'f.txt': '0123456789012345678901234567890123456789' } };
    assert.is(await fileRuns(r, gone, 'HEAD', 'f.txt'), null, 'the blob it was made for is gone: no answer');
    // A note fetched from someone else's remote: its blob is passed to no git command.
    const out = path.join(repo.base, 'written-by-git');
    const hostile = { ...note, blobs: { 'f.txt': `--output=${out}` } };
    assert.is(await fileRuns(r, hostile, 'HEAD', 'f.txt'), null);
    assert.not.ok(fs.existsSync(out), 'no file written through a note');
  } finally {
    repo.cleanup();
  }
});

test('blame notes: without the git hooks, gc writes none (refs/notes/agentsnap is never created), and blame still works the step out while the session exists', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'base\n' } });
  try {
    const env = { PATH: agentsnapOnPath(repo.base) };
    const n = await recordStep(repo, () => repo.write('a.txt', 'base\nagent\n'), env);
    git(repo, env, ['commit', '-q', '-am', 'agent work']);
    assert.is((await cli(repo, ['end'], { env })).code, 0);
    const later = await cliProcess(repo, ['wrap', '--agent', 'generic', '--', 'true'], { env });
    const id = /started session (\S+)/.exec(later.stderr)?.[1] as string;
    const blame = await cli(repo, ['blame', 'a.txt', '--session', id, '--json'], { env });
    assert.is(blame.code, 0, blame.stderr);
    const kinds = (JSON.parse(blame.stdout) as { lines: { origin: { kind: string; step?: number } }[] }).lines.map((l) => [
      l.origin.kind,
      l.origin.step ?? null,
    ]);
    assert.equal(kinds, [
      ['before-session', null],
      ['committed', n],
    ]);
    const gc = await cli(repo, ['gc', '--older-than', '0', '--json'], { env });
    assert.is(gc.code, 0, gc.stderr);
    assert.is((JSON.parse(gc.stdout) as { notedCommits: number }).notedCommits, 0);
    assert.is(repo.gitRaw(['rev-parse', '--verify', '-q', 'refs/notes/agentsnap']).stdout, '');
  } finally {
    repo.cleanup();
  }
});

test.run();
