// Attack on lazy blame notes (commits 6640e82, a2e3051): attribution worked out when blame asks, notes written by gc,
// notes copied by rebase mapped through the diff, hostile notes fetched from a remote.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { agentsnapOnPath, cli, cliProcess, tempRepo, type TempRepo } from '../support/helpers.js';
import { openRepo } from '../../src/git/repo.js';
import { fileRuns } from '../../src/blame/notes.js';

const ID = { GIT_AUTHOR_NAME: 'U', GIT_AUTHOR_EMAIL: 'u@example.com', GIT_COMMITTER_NAME: 'U', GIT_COMMITTER_EMAIL: 'u@example.com' };

function git(repo: TempRepo, env: Record<string, string>, args: string[], cwd = repo.dir, input?: string): string {
  const r = spawnSync('git', args, { cwd, env: { ...repo.env, ...ID, ...env }, encoding: 'utf8', input });
  assert.is(r.status, 0, `git ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

async function stepIn(repo: TempRepo, cwd: string, change: () => void, env: Record<string, string>): Promise<number> {
  const pre = await cli(repo, ['snap', '--phase', 'pre', '--tool', 'Bash', '--json'], { env, cwd });
  assert.is(pre.code, 0, pre.stderr);
  const n = (JSON.parse(pre.stdout) as { step: number }).step;
  change();
  const post = await cli(repo, ['snap', '--phase', 'post', '--step', String(n), '--tool', 'Bash'], { env, cwd });
  assert.is(post.code, 0, post.stderr);
  return n;
}

async function laterSession(repo: TempRepo, env: Record<string, string>): Promise<string> {
  const later = await cliProcess(repo, ['wrap', '--agent', 'generic', '--', 'true'], { env });
  assert.is(later.code, 0, later.stderr);
  return /started session (\S+)/.exec(later.stderr)?.[1] as string;
}

async function blameKinds(repo: TempRepo, env: Record<string, string>, id: string, file = 'a.txt') {
  const blame = await cli(repo, ['blame', file, '--session', id, '--json'], { env });
  assert.is(blame.code, 0, blame.stderr);
  return (JSON.parse(blame.stdout) as { lines: { text: string; origin: { kind: string; step?: number } }[] }).lines.map((l) => [
    l.text,
    l.origin.kind,
    l.origin.step ?? null,
  ]);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('attack: a line the user committed is not credited to a step a session made AFTER the commit (lazy attribution)', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'base\n' } });
  try {
    const env = { PATH: agentsnapOnPath(repo.base) };
    // A session in a linked worktree (gc and blame count sessions of every worktree), begun before the user's commit.
    const wt = path.join(repo.base, 'wt2');
    git(repo, env, ['worktree', 'add', '-q', '-b', 'side', wt]);
    await stepIn(repo, wt, () => fs.writeFileSync(path.join(wt, 'a.txt'), 'base\nearly\n'), env);
    await sleep(1100);
    // The user writes and commits a line by hand on the main worktree.
    repo.write('a.txt', 'base\nshared\n');
    git(repo, env, ['commit', '-q', '-am', 'user work']);
    await sleep(1100);
    // Only afterwards does the session's agent write the same line in its own worktree.
    await stepIn(repo, wt, () => fs.writeFileSync(path.join(wt, 'a.txt'), 'base\nshared\n'), env);
    const id = await laterSession(repo, env);
    // The committed line existed before that step ran: the step cannot have written it.
    assert.equal(await blameKinds(repo, env, id), [
      ['base', 'before-session', null],
      ['shared', 'before-session', null],
    ]);
  } finally {
    repo.cleanup();
  }
});

test('attack: a hostile note (fetched) with a non-string session and a step holding terminal escapes: blame neither crashes nor prints escapes', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'base\nsecond\n' } });
  try {
    const env = { PATH: agentsnapOnPath(repo.base) };
    const note = JSON.stringify({
      v: 1,
      files: {
        'a.txt': [
          [1, 1, { evil: 1 }, 3],
          [2, 1, 'sess', '\u001b]0;pwned\u0007\u001b[2J'],
        ],
      },
    });
    git(repo, env, ['notes', '--ref=agentsnap', 'add', '-f', '-F', '-', 'HEAD'], repo.dir, `${note}\n`);
    const id = await laterSession(repo, env);
    const text = await cli(repo, ['blame', 'a.txt', '--session', id], { env });
    assert.is(text.code, 0, text.stderr);
    assert.not.match(text.stderr, 'TypeError');
    assert.not.ok(text.stdout.includes('\u001b'), `escape sequences from a note printed: ${JSON.stringify(text.stdout)}`);
    const why = await cli(repo, ['why', 'a.txt:2', '--session', id], { env });
    assert.not.ok(why.stdout.includes('\u001b'), `escape sequences from a note printed by why: ${JSON.stringify(why.stdout)}`);
    const why1 = await cli(repo, ['why', 'a.txt:1', '--session', id], { env });
    assert.not.match(why1.stderr, 'TypeError');
    assert.is(why1.code, 0, why1.stderr);
  } finally {
    repo.cleanup();
  }
});

test('attack: a hostile note of many huge runs does not make blame hang (mapped path)', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'L1\nL2\n' } });
  try {
    const was = repo.git(['rev-parse', 'HEAD:a.txt']).trim();
    repo.write('a.txt', 'L0\nL1\nL2\n');
    repo.git(['commit', '-q', '-am', 'changed']);
    const r = await openRepo(repo.dir, { env: repo.env });
    const runs = Array.from({ length: 400 }, (_, i) => [1 + i, 1_000_000, 's', 1] as [number, number, string, number]);
    const note = { v: 1 as const, files: { 'a.txt': runs }, blobs: { 'a.txt': was } };
    const t0 = Date.now();
    const out = await fileRuns(r, note, 'HEAD', 'a.txt');
    const ms = Date.now() - t0;
    assert.ok(ms < 5000, `fileRuns took ${ms} ms for a 2-line file`);
    assert.ok((out ?? []).length < 1000, `runs beyond the file: ${(out ?? []).length}`);
  } finally {
    repo.cleanup();
  }
});

test('attack: commit --amend of a noted commit: the step that wrote the amended line is still named while its session exists', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'base\n' } });
  try {
    const env = { PATH: agentsnapOnPath(repo.base) };
    assert.is((await cli(repo, ['hooks', 'install'], { env })).code, 0);
    const one = await stepIn(repo, repo.dir, () => repo.write('a.txt', 'base\none\n'), env);
    git(repo, env, ['commit', '-q', '-am', 'one']);
    assert.is((await cli(repo, ['hooks', 'note-commit'], { env })).code, 0);
    const two = await stepIn(repo, repo.dir, () => repo.write('a.txt', 'base\none\ntwo\n'), env);
    git(repo, env, ['commit', '-q', '--amend', '-am', 'one and two']);
    const id = await laterSession(repo, env);
    assert.equal(await blameKinds(repo, env, id), [
      ['base', 'before-session', null],
      ['one', 'committed', one],
      ['two', 'committed', two],
    ]);
  } finally {
    repo.cleanup();
  }
});

test("attack: a squash (rebase fixup) of two noted commits keeps the second commit's steps, after gc removed the sessions", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'base\n' } });
  try {
    const env = { PATH: agentsnapOnPath(repo.base) };
    assert.is((await cli(repo, ['hooks', 'install'], { env })).code, 0);
    const base = git(repo, env, ['rev-parse', 'HEAD']).trim();
    const one = await stepIn(repo, repo.dir, () => repo.write('a.txt', 'base\none\n'), env);
    git(repo, env, ['commit', '-q', '-am', 'one']);
    assert.is((await cli(repo, ['hooks', 'note-commit'], { env })).code, 0);
    const two = await stepIn(repo, repo.dir, () => repo.write('a.txt', 'base\none\ntwo\n'), env);
    git(repo, env, ['commit', '-q', '-am', 'two']);
    assert.is((await cli(repo, ['hooks', 'note-commit'], { env })).code, 0);
    git(repo, { GIT_SEQUENCE_EDITOR: "sed -i '2s/^pick/fixup/'" }, ['rebase', '-q', '-i', base]);
    assert.is(git(repo, env, ['rev-list', '--count', `${base}..HEAD`]).trim(), '1');
    assert.is((await cli(repo, ['end'], { env })).code, 0);
    const gc = await cli(repo, ['gc', '--older-than', '0', '--json'], { env });
    assert.is(gc.code, 0, gc.stderr);
    const id = await laterSession(repo, env);
    assert.equal(await blameKinds(repo, env, id), [
      ['base', 'before-session', null],
      ['one', 'committed', one],
      ['two', 'committed', two],
    ]);
  } finally {
    repo.cleanup();
  }
});

test('attack: hooks install after an upgrade takes out the old post-commit/post-rewrite and puts back the chained user hooks byte for byte (mode too), in a linked worktree', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'base\n' } });
  try {
    const env = { PATH: agentsnapOnPath(repo.base) };
    const old = spawnSync('git', ['-C', process.cwd(), 'show', '6640e82^:hooks/agentsnap-hook'], { encoding: 'buffer' }).stdout;
    assert.ok(old.length > 100);
    const hooks = path.join(repo.dir, '.git', 'hooks');
    fs.mkdirSync(hooks, { recursive: true });
    const mine = Buffer.from('#!/bin/sh\r\n# my post-commit \u00e9\n\necho mine >> "$GIT_DIR/mine.log"\n\u0000trailing');
    fs.writeFileSync(path.join(hooks, 'post-commit'), old, { mode: 0o755 });
    fs.writeFileSync(path.join(hooks, 'post-commit.agentsnap-orig'), mine, { mode: 0o700 });
    fs.chmodSync(path.join(hooks, 'post-commit.agentsnap-orig'), 0o700);
    fs.writeFileSync(path.join(hooks, 'post-rewrite'), old, { mode: 0o755 });
    const wt = path.join(repo.base, 'wt2');
    git(repo, env, ['worktree', 'add', '-q', '-b', 'side', wt]);
    const status = await cli(repo, ['hooks', 'status', '--json'], { env, cwd: wt });
    assert.is(status.code, 0, status.stderr);
    const inst = await cli(repo, ['hooks', 'install'], { env, cwd: wt });
    assert.is(inst.code, 0, inst.stderr);
    assert.equal(fs.readFileSync(path.join(hooks, 'post-commit')), mine);
    assert.is(fs.statSync(path.join(hooks, 'post-commit')).mode & 0o777, 0o700);
    assert.not.ok(fs.existsSync(path.join(hooks, 'post-commit.agentsnap-orig')));
    assert.not.ok(fs.existsSync(path.join(hooks, 'post-rewrite')));
    const after = JSON.parse((await cli(repo, ['hooks', 'status', '--json'], { env })).stdout) as { installed: boolean; retired: string[] };
    assert.is(after.installed, true);
    assert.equal(after.retired, []);
  } finally {
    repo.cleanup();
  }
});

test('attack: a user commit rebased after a parallel session wrote the same line is not credited to that session', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'base\n', 'b.txt': 'b\n' } });
  try {
    const env = { PATH: agentsnapOnPath(repo.base) };
    const base = git(repo, env, ['rev-parse', 'HEAD']).trim();
    // The user's own line, committed first.
    repo.write('a.txt', 'base\nshared\n');
    git(repo, env, ['commit', '-q', '-am', 'user work']);
    await sleep(1100);
    // Afterwards a parallel session, from an older base, writes the same line.
    const wt = path.join(repo.base, 'wt2');
    git(repo, env, ['worktree', 'add', '-q', '-b', 'side', wt, base]);
    await stepIn(repo, wt, () => fs.writeFileSync(path.join(wt, 'a.txt'), 'base\nshared\n'), env);
    await sleep(1100);
    // The user rebases their branch onto upstream work: the commit is made anew (committer time: now).
    git(repo, env, ['branch', 'up', base]);
    git(repo, env, ['checkout', '-q', 'up']);
    repo.write('b.txt', 'b2\n');
    git(repo, env, ['commit', '-q', '-am', 'upstream']);
    git(repo, env, ['checkout', '-q', '-']);
    git(repo, env, ['rebase', '-q', 'up']);
    const id = await laterSession(repo, env);
    assert.equal(await blameKinds(repo, env, id), [
      ['base', 'before-session', null],
      ['shared', 'before-session', null],
    ]);
  } finally {
    repo.cleanup();
  }
});

test("gc with the hooks installed: a user's 50 commits to a file sessions changed are read in one git log, and only the commit holding a step's line is blamed", async () => {
  const repo = tempRepo({ files: { 'f.txt': 'base\n' } });
  try {
    // A `git` first on PATH that logs each `blame` (the expensive part of noting) and runs the real one.
    const bin = path.join(repo.base, 'counting-git');
    fs.mkdirSync(bin);
    const log = path.join(repo.base, 'git-blames.log');
    const real = spawnSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).stdout.trim();
    fs.writeFileSync(
      path.join(bin, 'git'),
      `#!/bin/sh\nfor a; do [ "$a" = blame ] && echo blame >> '${log}'; done\nexec '${real}' "$@"\n`,
      {
        mode: 0o755,
      },
    );
    const env = { PATH: `${bin}${path.delimiter}${agentsnapOnPath(repo.base)}` };
    const steps: number[] = [];
    for (let s = 0; s < 3; s++) {
      steps.push(await stepIn(repo, repo.dir, () => repo.write('f.txt', `base\nagent ${s}\n`), env));
      assert.is((await cli(repo, ['end'], { env })).code, 0);
    }
    git(repo, env, ['commit', '-qam', 'agent work']);
    const agentCommit = git(repo, env, ['rev-parse', 'HEAD']).trim();
    const r = spawnSync('sh', ['-c', 'for i in $(seq 1 50); do echo "line $i" >> f.txt; git commit -qam "c$i"; done'], {
      cwd: repo.dir,
      env: { ...repo.env, ...ID },
    });
    assert.is(r.status, 0, String(r.stderr));
    assert.is((await cli(repo, ['hooks', 'install'], { env })).code, 0);
    fs.writeFileSync(log, '');
    const gc = await cli(repo, ['gc', '--older-than', '0', '--json'], { env });
    assert.is(gc.code, 0, gc.stderr);
    assert.is((JSON.parse(gc.stdout) as { notedCommits: number }).notedCommits, 1);
    const blames = fs.readFileSync(log, 'utf8').split('\n').filter(Boolean).length;
    assert.ok(blames <= 3, `${blames} blames: at most one per session, for the one commit that added a step's line`);
    assert.match(git(repo, env, ['notes', '--ref=agentsnap', 'show', agentCommit]), '"f.txt":[[2,1,');
  } finally {
    repo.cleanup();
  }
});

test("attack: an older version's note (no blobs), copied by a rebase after the upgrade to a commit whose file moved, credits no wrong line", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'b1\nb2\nb3\nb4\n' } });
  try {
    const env = { PATH: agentsnapOnPath(repo.base) };
    const base = git(repo, env, ['rev-parse', 'HEAD']).trim();
    git(repo, env, ['checkout', '-q', '-b', 'feature']);
    repo.write('a.txt', 'b1\nb2\nb3\nagent\nhuman\nb4\n');
    git(repo, env, ['commit', '-q', '-am', 'agent and user work']);
    // What an older agentsnap's post-commit hook wrote: line 4 is step 1's, no blobs.
    const old = JSON.stringify({ v: 1, files: { 'a.txt': [[4, 1, 'oldsession', 1]] } });
    git(repo, env, ['notes', '--ref=agentsnap', 'add', '-f', '-F', '-', 'HEAD'], repo.dir, `${old}\n`);
    // The upgrade: hooks install takes post-commit and post-rewrite out (nothing notes a rebase afresh any more).
    assert.is((await cli(repo, ['hooks', 'install'], { env })).code, 0);
    // Upstream deleted the first line; the feature is rebased onto it (git copies the note as it is).
    git(repo, env, ['checkout', '-q', '-b', 'up', base]);
    repo.write('a.txt', 'b2\nb3\nb4\n');
    git(repo, env, ['commit', '-q', '-am', 'upstream']);
    git(repo, env, ['checkout', '-q', 'feature']);
    git(repo, env, ['rebase', '-q', 'up']);
    assert.match(git(repo, env, ['notes', '--ref=agentsnap', 'show', 'HEAD']), 'oldsession');
    const id = await laterSession(repo, env);
    const lines = await blameKinds(repo, env, id);
    // "human" is the user's line: never step 1's.
    assert.equal(lines[3], ['human', 'before-session', null], JSON.stringify(lines));
  } finally {
    repo.cleanup();
  }
});

test.run();
