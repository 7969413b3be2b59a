// Issue 32 item 11: the git hooks cost what git costs when no agent session is involved. Counted, not timed:
// a `node` first on PATH records each start (and runs the real one), so "no Node process" is what the test sees.
// With sessions too: blame notes are worked out when `blame` asks and written by `gc` before it removes a session,
// never by a hook as the commit is made. The protections: test/git/hooks.test.ts.
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

test('hooks installed, a session: a commit and a rebase start no node; blame works the step out, gc writes the note before the session goes, and blame still names the step after', async () => {
  const repo = tempRepo({ files: TEN_FILES });
  try {
    const { PATH, log } = countingPath(repo);
    const env = { PATH };
    assert.is((await cli(repo, ['hooks', 'install'], { env })).code, 0);
    git(repo, env, ['checkout', '-q', '-b', 'feature']);
    const step = await recordStep(repo, () => repo.write('f1.txt', 'file 1\nagent line\n'), env);
    const first = (JSON.parse((await cli(repo, ['sessions', '--json'], { env })).stdout) as { id: string }[])[0]?.id as string;
    starts(log);
    git(repo, env, ['commit', '-q', '-am', 'agent work']);
    assert.equal(starts(log), [], "the commit of the agent's file started no node");
    const noNote = spawnSync('git', ['notes', '--ref=agentsnap', 'show', 'HEAD'], { cwd: repo.dir, env: repo.env, encoding: 'utf8' });
    assert.is.not(noNote.status, 0, 'no note is written when the commit is made');
    for (let i = 2; i <= 5; i++) {
      repo.write(`f${i}.txt`, `user ${i}\n`);
      git(repo, env, ['commit', '-q', '-am', `user ${i}`]);
    }
    git(repo, env, ['checkout', '-q', 'main']);
    repo.write('f1.txt', 'main first\nfile 1\n'); // the agent's line is line 3 in the rebased commit
    git(repo, env, ['commit', '-q', '-am', 'main moved on']);
    git(repo, env, ['checkout', '-q', 'feature']);
    starts(log);
    git(repo, env, ['rebase', '-q', 'main']);
    assert.equal(starts(log), [], 'the rebase of 5 commits started no node');
    const agentCommit = git(repo, env, ['rev-parse', 'HEAD~4']).trim();
    assert.is(git(repo, env, ['show', '-s', '--format=%s', agentCommit]).trim(), 'agent work');

    /** blame of f1.txt in a new session: each line's origin kind and step. */
    const blameInNewSession = async (): Promise<[string, string, number | null][]> => {
      const later = await cli(repo, ['wrap', '--agent', 'generic', '--', 'true'], { env });
      assert.is(later.code, 0, later.stderr);
      const id = /started session (\S+)/.exec(later.stderr)?.[1] as string;
      const b = await cli(repo, ['blame', 'f1.txt', '--session', id, '--json'], { env });
      assert.is(b.code, 0, b.stderr);
      return (JSON.parse(b.stdout) as { lines: { text: string; origin: { kind: string; step?: number; session?: string } }[] }).lines.map(
        (l) => [l.text, `${l.origin.kind}${l.origin.session ? ` ${l.origin.session}` : ''}`, l.origin.step ?? null],
      );
    };
    const expected: [string, string, number | null][] = [
      ['main first', 'before-session', null],
      ['file 1', 'before-session', null],
      ['agent line', `committed ${first}`, step],
    ];
    const ended = await cli(repo, ['end'], { env });
    assert.is(ended.code, 0, ended.stderr);
    assert.equal(await blameInNewSession(), expected, 'worked out from the first session, which still exists');

    const gc = await cli(repo, ['gc', '--older-than', '0', '--json'], { env });
    assert.is(gc.code, 0, gc.stderr);
    const report = JSON.parse(gc.stdout) as { removedSessions: string[]; notedCommits: number };
    assert.ok(report.removedSessions.includes(first), gc.stdout);
    assert.is(report.notedCommits, 1, "the one commit holding a step's line got its note");
    const note = JSON.parse(git(repo, env, ['notes', '--ref=agentsnap', 'show', agentCommit])) as {
      files: Record<string, [number, number, string, number][]>;
    };
    assert.equal(note.files['f1.txt'], [[3, 1, first, step]]);
    assert.equal(await blameInNewSession(), expected, 'read from the note once the session is gone');
  } finally {
    repo.cleanup();
  }
});

test("the user's own post-commit and post-rewrite hooks are not agentsnap's business: install leaves them, they run as before", async () => {
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
    assert.equal(fs.readFileSync(path.join(hooks, 'post-rewrite')), userRewrite);
    assert.not.ok(fs.existsSync(path.join(hooks, 'post-rewrite.agentsnap-orig')));
    fiveToRebase(repo, env);
    fs.writeFileSync(seen, '');
    const before = git(repo, env, ['rev-list', '--reverse', 'main..feature']).trim().split('\n');
    starts(log);
    git(repo, env, ['rebase', '-q', 'main']);
    const after = git(repo, env, ['rev-list', '--reverse', 'main..feature']).trim().split('\n');
    assert.equal(starts(log), [], 'no node');
    assert.is(
      fs.readFileSync(seen, 'utf8'),
      `${'post-commit 0\n'.repeat(5)}post-rewrite rebase\n${before.map((b, i) => `${b} ${after[i]}\n`).join('')}`,
    );
    const un = await cli(repo, ['hooks', 'uninstall'], { env });
    assert.is(un.code, 0, un.stderr);
    assert.equal(fs.readFileSync(path.join(hooks, 'post-rewrite')), userRewrite, 'untouched');
  } finally {
    repo.cleanup();
  }
});

test("an older agentsnap's post-commit and post-rewrite hooks: status and doctor name them, install takes them out and puts back the hook each chained", async () => {
  const repo = tempRepo({ files: TEN_FILES });
  try {
    const env = { PATH: agentsnapOnPath(repo.base) };
    const hooks = path.join(repo.dir, '.git', 'hooks');
    // What an older version left: its script (the marker line) under both names, the user's post-commit chained.
    const old = '#!/bin/sh\n# agentsnap-hook: an older version\nagentsnap hooks note-commit >/dev/null 2>&1 || :\n';
    const user = '#!/bin/sh\necho user post-commit\n';
    fs.writeFileSync(path.join(hooks, 'post-commit'), old, { mode: 0o755 });
    fs.writeFileSync(path.join(hooks, 'post-commit.agentsnap-orig'), user, { mode: 0o755 });
    fs.writeFileSync(path.join(hooks, 'post-rewrite'), old, { mode: 0o755 });
    const status = await cli(repo, ['hooks', 'status'], { env });
    assert.is(status.code, 0, status.stderr);
    assert.match(status.stdout, /post-commit +left by an older agentsnap \(`agentsnap hooks install` takes it out\)/);
    const doctor = await cli(repo, ['doctor'], { env });
    assert.match(doctor.stdout + doctor.stderr, 'post-commit left by an older agentsnap, post-rewrite left by an older agentsnap');
    const inst = await cli(repo, ['hooks', 'install'], { env });
    assert.is(inst.code, 0, inst.stderr);
    assert.match(inst.stderr, 'removed post-commit and restored the hook that was there before');
    assert.match(inst.stderr, 'removed post-rewrite');
    assert.is(fs.readFileSync(path.join(hooks, 'post-commit'), 'utf8'), user);
    assert.not.ok(fs.existsSync(path.join(hooks, 'post-commit.agentsnap-orig')));
    assert.not.ok(fs.existsSync(path.join(hooks, 'post-rewrite')));
    const json = JSON.parse((await cli(repo, ['hooks', 'status', '--json'], { env })).stdout) as { installed: boolean; retired: string[] };
    assert.equal([json.installed, json.retired], [true, []]);
  } finally {
    repo.cleanup();
  }
});

test.run();
