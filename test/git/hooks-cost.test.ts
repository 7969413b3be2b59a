// Issue 32 item 11: the git hooks cost what git costs when no agent session is involved. Counted, not timed:
// a `node` first on PATH records each start (and runs the real one), so "no Node process" is what the test sees.
// With sessions, a commit still gets its blame note (one Node start) and a rebase gets its notes in one Node
// start at its end (post-rewrite), not one per commit it replays. The protections: test/git/hooks.test.ts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { agentsnapOnPath, cli, tempRepo, USER_IDENTITY, type TempRepo } from '../support/helpers.js';
import { recordStep } from '../support/snap-helpers.js';

const TEN_FILES = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`f${i}.txt`, `file ${i}\n`]));

/** PATH with a `node` that appends its arguments to the returned log before running the real node, then agentsnap. */
function countingPath(repo: TempRepo): { PATH: string; log: string } {
  const dir = path.join(repo.base, 'counting-bin');
  fs.mkdirSync(dir);
  const log = path.join(repo.base, 'node-starts.log');
  fs.writeFileSync(log, '');
  fs.writeFileSync(path.join(dir, 'node'), `#!/bin/sh\nprintf '%s\\n' "$*" >> '${log}'\nexec '${process.execPath}' "$@"\n`, {
    mode: 0o755,
  });
  return { PATH: `${dir}${path.delimiter}${agentsnapOnPath(repo.base)}`, log };
}

function starts(log: string): string[] {
  const lines = fs.readFileSync(log, 'utf8').split('\n').filter(Boolean);
  fs.writeFileSync(log, '');
  return lines;
}

function git(repo: TempRepo, env: Record<string, string>, args: string[], cwd = repo.dir): string {
  const r = spawnSync('git', args, { cwd, env: { ...repo.env, ...USER_IDENTITY, ...env }, encoding: 'utf8' });
  assert.is(r.status, 0, `git ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** Five commits on `feature` (one line of f1.txt each) and one on `main` to rebase them onto. */
function fiveToRebase(repo: TempRepo, env: Record<string, string>): void {
  git(repo, env, ['checkout', '-q', '-b', 'feature']);
  for (let i = 1; i <= 5; i++) {
    fs.appendFileSync(path.join(repo.dir, 'f1.txt'), `feature ${i}\n`);
    git(repo, env, ['commit', '-q', '-am', `feature ${i}`]);
  }
  git(repo, env, ['checkout', '-q', 'main']);
  repo.write('f9.txt', 'main moved on\n');
  git(repo, env, ['commit', '-q', '-am', 'main moved on']);
  git(repo, env, ['checkout', '-q', 'feature']);
}

test('hooks installed, no agent session: git commit and a rebase of 5 commits start no node process', async () => {
  const repo = tempRepo({ files: TEN_FILES });
  try {
    const { PATH, log } = countingPath(repo);
    const env = { PATH };
    const inst = await cli(repo, ['hooks', 'install'], { env });
    assert.is(inst.code, 0, inst.stderr);
    starts(log);

    repo.write('f0.txt', 'changed\n');
    git(repo, env, ['commit', '-q', '-am', 'one file']);
    assert.equal(starts(log), [], 'git commit started no node');
    assert.is(git(repo, env, ['show', '-s', '--format=%s', 'HEAD']).trim(), 'one file');

    fiveToRebase(repo, env);
    starts(log);
    git(repo, env, ['rebase', '-q', 'main']);
    assert.equal(starts(log), [], 'the rebase started no node');
    assert.is(git(repo, env, ['rev-list', '--count', 'main..feature']).trim(), '5');
    assert.is(fs.readFileSync(path.join(repo.dir, 'f9.txt'), 'utf8'), 'main moved on\n');
    assert.match(fs.readFileSync(path.join(repo.dir, 'f1.txt'), 'utf8'), 'feature 5\n');

    // A linked worktree (its .git is a file: the hook asks git where the state directory is): the same.
    const linked = path.join(repo.base, 'linked');
    git(repo, env, ['worktree', 'add', '-q', '-b', 'side', linked, 'main']);
    fs.writeFileSync(path.join(linked, 'f3.txt'), 'in the linked worktree\n');
    git(repo, env, ['commit', '-q', '-am', 'linked'], linked);
    assert.equal(starts(log), [], 'a commit in a linked worktree started no node');
  } finally {
    repo.cleanup();
  }
});

test('hooks installed, a session: a commit of a file it changed starts node once for its note, of another file none; a rebase of 6 commits once, at its end, and the notes follow', async () => {
  const repo = tempRepo({ files: TEN_FILES });
  try {
    const { PATH, log } = countingPath(repo);
    const env = { PATH };
    assert.is((await cli(repo, ['hooks', 'install'], { env })).code, 0);
    git(repo, env, ['checkout', '-q', '-b', 'feature']);
    const step = await recordStep(repo, () => repo.write('f1.txt', 'file 1\nagent line\n'), env);
    starts(log);
    // A commit of a file no session changed (the agent's f1.txt stays unstaged): nothing to note, no node.
    repo.write('f7.txt', 'the user only\n');
    git(repo, env, ['add', 'f7.txt']);
    git(repo, env, ['commit', '-q', '-m', 'user file']);
    assert.equal(starts(log), [], 'a commit no session touched started no node');
    git(repo, env, ['commit', '-q', '-am', 'agent work']);
    const committed = starts(log);
    assert.is(committed.length, 1, committed.join('\n'));
    assert.match(committed[0] as string, 'hooks note-commit');
    assert.match(git(repo, env, ['notes', '--ref=agentsnap', 'show', 'HEAD']), `"f1.txt":[[2,1,`);

    for (let i = 2; i <= 5; i++) {
      repo.write(`f${i}.txt`, `user ${i}\n`);
      git(repo, env, ['commit', '-q', '-am', `user ${i}`]);
    }
    git(repo, env, ['checkout', '-q', 'main']);
    repo.write('f1.txt', 'main first\nfile 1\n'); // the agent's line is line 3 in the rebased commit
    git(repo, env, ['commit', '-q', '-am', 'main moved on']);
    git(repo, env, ['checkout', '-q', 'feature']);
    starts(log);
    const rebase = spawnSync('git', ['rebase', '-q', 'main'], {
      cwd: repo.dir,
      env: { ...repo.env, ...USER_IDENTITY, ...env },
      encoding: 'utf8',
    });
    assert.is(rebase.status, 0, rebase.stderr);
    const rebased = starts(log);
    assert.is(rebased.length, 1, `one node start for the whole rebase:\n${rebased.join('\n')}`);
    assert.match(rebased[0] as string, /hooks note-commit( [0-9a-f]{40}){6}$/);
    const agentCommit = git(repo, env, ['rev-parse', 'HEAD~4']).trim();
    assert.is(git(repo, env, ['show', '-s', '--format=%s', agentCommit]).trim(), 'agent work');
    // The note written after the rebase comes first and names the line where it is now; the copied one follows.
    const note = git(repo, env, ['notes', '--ref=agentsnap', 'show', agentCommit]).split('\n').filter(Boolean);
    assert.ok(note.length >= 1, 'the rebased commit has a note');
    const fresh = JSON.parse(note[0] as string) as { files: Record<string, [number, number, string, number][]> };
    assert.equal(
      (fresh.files['f1.txt'] ?? []).map(([line, count, , st]) => [line, count, st]),
      [[3, 1, step]],
    );
  } finally {
    repo.cleanup();
  }
});

test("the user's own post-commit and post-rewrite hooks, chained, still run with their arguments and stdin", async () => {
  const repo = tempRepo({ files: TEN_FILES });
  try {
    const { PATH, log } = countingPath(repo);
    const env = { PATH };
    const hooks = path.join(repo.dir, '.git', 'hooks');
    const seen = path.join(repo.base, 'user-hooks.log');
    fs.writeFileSync(path.join(hooks, 'post-commit'), `#!/bin/sh\necho "post-commit $#" >> '${seen}'\n`, { mode: 0o755 });
    fs.writeFileSync(path.join(hooks, 'post-rewrite'), `#!/bin/sh\necho "post-rewrite $1" >> '${seen}'\ncat >> '${seen}'\n`, {
      mode: 0o755,
    });
    const userRewrite = fs.readFileSync(path.join(hooks, 'post-rewrite'));
    const inst = await cli(repo, ['hooks', 'install'], { env });
    assert.is(inst.code, 0, inst.stderr);
    assert.equal(fs.readFileSync(path.join(hooks, 'post-rewrite.agentsnap-orig')), userRewrite);
    fiveToRebase(repo, env);
    fs.writeFileSync(seen, '');
    const before = git(repo, env, ['rev-list', '--reverse', 'main..feature']).trim().split('\n');
    starts(log);
    git(repo, env, ['rebase', '-q', 'main']);
    const after = git(repo, env, ['rev-list', '--reverse', 'main..feature']).trim().split('\n');
    assert.equal(starts(log), [], 'no session: no node');
    assert.is(
      fs.readFileSync(seen, 'utf8'),
      `${'post-commit 0\n'.repeat(5)}post-rewrite rebase\n${before.map((b, i) => `${b} ${after[i]}\n`).join('')}`,
    );
    const un = await cli(repo, ['hooks', 'uninstall'], { env });
    assert.is(un.code, 0, un.stderr);
    assert.equal(fs.readFileSync(path.join(hooks, 'post-rewrite')), userRewrite, 'put back byte for byte');
  } finally {
    repo.cleanup();
  }
});

test.run();
