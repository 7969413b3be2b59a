// Blame across commits (issue 17): with the git hooks installed, post-commit notes which session step wrote
// each committed line (refs/notes/agentsnap); amend and rebase carry the note (notes.rewriteRef); a later
// session's blame names the earlier session's step.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { agentsnapOnPath, cli, cliProcess, tempRepo, type TempRepo } from '../support/helpers.js';
import { recordStep } from '../support/snap-helpers.js';

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
    const note = JSON.parse(git(repo, env, ['notes', '--ref=agentsnap', 'show', 'HEAD'])) as {
      files: Record<string, [number, number, string, number][]>;
    };
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

test.run();
