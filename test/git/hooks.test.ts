import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { cli, refsUnder, tempRepo, type TempRepo } from '../support/helpers.js';

/** What `hooks install` installs; `--strict` adds reference-transaction (issue 32 item 11: it slows every rebase). */
const HOOKS = ['pre-commit', 'pre-merge-commit', 'pre-push'];

/** A repository with every hook installed (`--strict`) and one checkpoint: returns the snapshot commit of step 1. */
async function setup(files: Record<string, string> = { 'a.txt': 'one\n' }): Promise<{ repo: TempRepo; snap: string; session: string }> {
  const repo = tempRepo({ files });
  const inst = await cli(repo, ['hooks', 'install', '--strict']);
  assert.is(inst.code, 0, inst.stderr);
  repo.write('a.txt', 'two\n');
  const res = await cli(repo, ['snap', '--json']);
  assert.is(res.code, 0, res.stderr);
  const out = JSON.parse(res.stdout) as { session: string; commit: string };
  repo.git(['checkout', '-q', '--', 'a.txt']);
  return { repo, snap: out.commit, session: out.session };
}

function hooksDir(repo: TempRepo): string {
  return path.resolve(repo.dir, repo.git(['rev-parse', '--git-path', 'hooks']).trim());
}

test('install writes the four hooks, is idempotent, and status reports them current', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'x\n' } });
  try {
    const first = await cli(repo, ['hooks', 'install', '--json']);
    assert.is(first.code, 0, first.stderr);
    const dir = hooksDir(repo);
    const bytes = HOOKS.map((h) => fs.readFileSync(path.join(dir, h)));
    for (const h of HOOKS) assert.ok(fs.statSync(path.join(dir, h)).mode & 0o100, `${h} executable`);
    const again = await cli(repo, ['hooks', 'install', '--json']);
    const out = JSON.parse(again.stdout) as { actions: { action: string }[]; installed: boolean };
    assert.ok(out.actions.every((a) => a.action === 'unchanged'));
    assert.ok(out.installed);
    assert.equal(
      HOOKS.map((h) => fs.readFileSync(path.join(dir, h))),
      bytes,
    );
    const status = await cli(repo, ['hooks', 'status']);
    assert.is(status.code, 0);
    assert.match(status.stdout, /reference-transaction\s+not installed \(only with `agentsnap hooks install --strict`\)/);
    assert.not.ok(fs.existsSync(path.join(dir, 'reference-transaction')));
    // --strict adds it; a plain install keeps it; --no-strict takes it out.
    const strict = await cli(repo, ['hooks', 'install', '--strict', '--json']);
    assert.ok(JSON.parse(strict.stdout).strict);
    assert.match((await cli(repo, ['hooks', 'status'])).stdout, /reference-transaction\s+installed, current/);
    assert.is((await cli(repo, ['hooks', 'install'])).code, 0);
    assert.ok(fs.existsSync(path.join(dir, 'reference-transaction')), 'a plain install keeps --strict');
    const loose = await cli(repo, ['hooks', 'install', '--no-strict', '--json']);
    assert.equal(
      JSON.parse(loose.stdout).actions.find((a: { name: string }) => a.name === 'reference-transaction'),
      {
        name: 'reference-transaction',
        action: 'removed',
      },
    );
    assert.not.ok(fs.existsSync(path.join(dir, 'reference-transaction')));
    assert.ok(JSON.parse(loose.stdout).installed);
    const wrong = await cli(repo, ['hooks', 'status', '--strict']);
    assert.is(wrong.code, 2, wrong.stderr);
    // An outdated script is reported and updated.
    fs.appendFileSync(path.join(dir, 'pre-push'), '# old\n');
    assert.match((await cli(repo, ['hooks', 'status'])).stdout, /pre-push\s+installed, outdated/);
    await cli(repo, ['hooks', 'install']);
    assert.match((await cli(repo, ['hooks', 'status'])).stdout, /pre-push\s+installed, current/);
  } finally {
    repo.cleanup();
  }
});

test('a commit whose parent is a snapshot is refused, naming it and the way out', async () => {
  const { repo, snap, session } = await setup();
  try {
    repo.git(['checkout', '-q', `refs/agent/${session}/1`]);
    repo.write('b.txt', 'b\n');
    repo.git(['add', 'b.txt']);
    const r = repo.gitRaw(['commit', '-q', '-m', 'on a snapshot']);
    assert.is.not(r.status, 0);
    assert.match(r.stderr, 'refusing to commit on top of an agent snapshot');
    assert.match(r.stderr, snap);
    assert.match(r.stderr, `session ${session}, step 1`);
    assert.match(r.stderr, 'agentsnap promote');
    assert.is(repo.git(['rev-parse', 'HEAD']).trim(), snap);
  } finally {
    repo.cleanup();
  }
});

test('a merge that brings in a snapshot is refused (merge commit and git commit concluding it)', async () => {
  const { repo, snap, session } = await setup();
  try {
    repo.git(['checkout', '-q', '--', 'a.txt']);
    // Snapshots descend from a root baseline: merging one means unrelated histories.
    const r = repo.gitRaw([
      'merge',
      '--no-ff',
      '--allow-unrelated-histories',
      '-X',
      'theirs',
      '-m',
      'merge snap',
      `refs/agent/${session}/1`,
    ]);
    assert.is.not(r.status, 0);
    assert.match(r.stderr, 'refusing a merge that brings agent snapshot commits into history', r.stderr);
    assert.match(r.stderr, snap);
    repo.gitRaw(['merge', '--abort']);
    repo.git(['reset', '-q', '--hard']);
    const r2 = repo.gitRaw(['merge', '--no-ff', '--no-commit', '--allow-unrelated-histories', '-X', 'theirs', `refs/agent/${session}/1`]);
    assert.is(r2.status, 0, r2.stderr);
    const c = repo.gitRaw(['commit', '-q', '-m', 'conclude']);
    assert.is.not(c.status, 0);
    assert.match(c.stderr, 'refusing a merge');
    repo.gitRaw(['merge', '--abort']);
    repo.git(['reset', '-q', '--hard']);
    // --no-verify skips pre-merge-commit; reference-transaction still refuses moving the branch.
    const main = repo.git(['rev-parse', 'main']).trim();
    const nv = repo.gitRaw([
      'merge',
      '--no-verify',
      '--no-ff',
      '--allow-unrelated-histories',
      '-X',
      'theirs',
      '-m',
      'nv',
      `refs/agent/${session}/1`,
    ]);
    assert.is.not(nv.status, 0);
    assert.match(nv.stderr, 'refusing to set refs/heads/main');
    assert.is(repo.git(['rev-parse', 'main']).trim(), main);
  } finally {
    repo.cleanup();
  }
});

test('a branch or tag set to a snapshot is refused by reference-transaction (ff merge, reset, branch -f, update-ref, tag)', async () => {
  const { repo, snap, session } = await setup();
  try {
    const main = repo.git(['rev-parse', 'main']).trim();
    repo.git(['checkout', '-q', '--', 'a.txt']);
    const attempts: string[][] = [
      ['branch', '-f', 'x', `refs/agent/${session}/1`],
      ['update-ref', 'refs/heads/y', snap],
      ['tag', 't1', snap],
      ['checkout', '-q', '-b', 'z', snap],
      ['reset', '--hard', snap],
    ];
    for (const args of attempts) {
      const r = repo.gitRaw(args);
      assert.is.not(r.status, 0, `git ${args.join(' ')} must be refused`);
      assert.match(r.stderr, 'refusing to set refs/', `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, snap);
      repo.git(['reset', '-q', '--hard', main]);
    }
    assert.equal([...refsUnder(repo, 'refs/heads/').keys()], ['refs/heads/main']);
    void session;
    assert.equal([...refsUnder(repo, 'refs/tags/').keys()], []);
    assert.is(repo.git(['rev-parse', 'main']).trim(), main);
    // A fast-forward onto a snapshot (from a branch that was made at the baseline with the checks off).
    repo.git(['branch', 'old', `refs/agent/${session}/0`], { env: { AGENTSNAP_HOOKS: '0' } });
    repo.git(['checkout', '-q', 'old']);
    const ff = repo.gitRaw(['merge', '--ff-only', `refs/agent/${session}/1`]);
    assert.is.not(ff.status, 0);
    assert.match(ff.stderr, 'refusing to set refs/heads/old');
    assert.is(repo.git(['rev-parse', 'old']).trim(), repo.git(['rev-parse', `refs/agent/${session}/0`]).trim());
    // A commit made on top of a snapshot with --no-verify still cannot get a branch.
    repo.git(['checkout', '-q', snap]);
    repo.git(['commit', '-q', '--allow-empty', '--no-verify', '-m', 'sneaky']);
    const b = repo.gitRaw(['branch', 'sneaky']);
    assert.is.not(b.status, 0);
    assert.match(b.stderr, 'refusing to set refs/heads/sneaky');
  } finally {
    repo.cleanup();
  }
});

test("a commit staging agentsnap's internal files is refused", async () => {
  const { repo } = await setup();
  try {
    repo.write('copy/agentsnap/sessions/abc/journal.jsonl', '{}\n');
    repo.write('tools/pre-commit.agentsnap-orig', '#!/bin/sh\n');
    repo.git(['add', 'copy', 'tools']);
    const r = repo.gitRaw(['commit', '-q', '-m', 'oops']);
    assert.is.not(r.status, 0);
    assert.match(r.stderr, "refusing to commit agentsnap's internal files");
    assert.match(r.stderr, 'copy/agentsnap/sessions/abc/journal.jsonl');
    assert.match(r.stderr, 'tools/pre-commit.agentsnap-orig');
    assert.match(r.stderr, 'git rm --cached');
    // The project's checked-in settings file is not internal.
    repo.git(['reset', '-q']);
    repo.write('.agentsnap.json', '{}\n');
    repo.git(['add', '.agentsnap.json', 'a.txt']);
    const ok = repo.gitRaw(['commit', '-q', '-m', 'settings']);
    assert.is(ok.status, 0, ok.stderr);
  } finally {
    repo.cleanup();
  }
});

test('ordinary commits, merges, branches, tags and pushes pass; agentsnap keeps snapshotting', async () => {
  const { repo } = await setup();
  try {
    const bare = path.join(repo.base, 'origin.git');
    repo.git(['init', '-q', '--bare', bare]);
    repo.git(['remote', 'add', 'origin', bare]);
    repo.write('a.txt', 'three\n');
    repo.git(['commit', '-q', '-am', 'ordinary']);
    repo.git(['checkout', '-q', '-b', 'side']);
    repo.write('side.txt', 'side\n');
    repo.git(['add', 'side.txt']);
    repo.git(['commit', '-q', '-m', 'side']);
    repo.git(['checkout', '-q', 'main']);
    repo.write('main.txt', 'main\n');
    repo.git(['add', 'main.txt']);
    repo.git(['commit', '-q', '-m', 'main work']);
    repo.git(['merge', '-q', '--no-ff', '-m', 'merge side', 'side']);
    repo.git(['tag', '-a', '-m', 'v1', 'v1']);
    repo.git(['tag', 'tree-tag', 'HEAD^{tree}']);
    repo.git(['branch', '-f', 'side', 'main']);
    const p = repo.gitRaw(['push', '-q', 'origin', 'main', 'side', 'v1']);
    assert.is(p.status, 0, p.stderr);
    assert.is(p.stderr, '');
    assert.is(repo.git(['--git-dir', bare, 'rev-parse', 'main']).trim(), repo.git(['rev-parse', 'main']).trim());
    const s = await cli(repo, ['snap', '--json']);
    assert.is(s.code, 0, s.stderr);
  } finally {
    repo.cleanup();
  }
});

test('pushes of agentsnap refs or snapshot commits to a non-backup remote are refused; a backup remote takes them', async () => {
  const { repo, snap, session } = await setup();
  try {
    const bare = path.join(repo.base, 'origin.git');
    repo.git(['init', '-q', '--bare', bare]);
    repo.git(['remote', 'add', 'origin', bare]);
    repo.git(['push', '-q', 'origin', 'main']);
    for (const spec of [`refs/agent/${session}/1:refs/agent/${session}/1`, 'refs/agent/*:refs/agent/*']) {
      const r = repo.gitRaw(['push', 'origin', spec]);
      assert.is.not(r.status, 0);
      assert.match(r.stderr, "refusing to push agentsnap's refs to origin");
      assert.match(r.stderr, `refs/agent/${session}/1`);
      assert.match(r.stderr, 'agentsnap remote add');
    }
    const mirror = repo.gitRaw(['push', '--mirror', 'origin']);
    assert.is.not(mirror.status, 0);
    assert.match(mirror.stderr, "refusing to push agentsnap's refs");
    // A snapshot inside the pushed range (a --no-verify commit on top of it), sent without a local branch.
    repo.git(['checkout', '-q', snap]);
    repo.git(['commit', '-q', '--allow-empty', '--no-verify', '-m', 'on top']);
    const r = repo.gitRaw(['push', 'origin', 'HEAD:refs/heads/leak']);
    assert.is.not(r.status, 0);
    assert.match(r.stderr, 'refusing to push agent snapshot commits to origin');
    assert.match(r.stderr, snap);
    assert.match(r.stderr, 'refs/heads/leak');
    assert.is(repo.gitRaw(['--git-dir', bare, 'rev-parse', '--verify', '-q', 'leak']).status, 1);
    assert.is(repo.git(['--git-dir', bare, 'for-each-ref', 'refs/agent/']), '');
    // The designated backup remote accepts them through the same hook.
    const add = await cli(repo, ['remote', 'add', 'origin']);
    assert.is(add.code, 0, add.stderr);
    const ok = repo.gitRaw(['push', '-q', 'origin', 'refs/agent/*:refs/agent/*']);
    assert.is(ok.status, 0, ok.stderr);
  } finally {
    repo.cleanup();
  }
});

const CHAINED_PRE_COMMIT = `#!/bin/sh
# a hand-written hook: refuses commits that stage BLOCK, records how it was called
echo "called as $(basename "$0") in $(basename "$(dirname "$0")")" >> "$(git rev-parse --git-dir)/hook-log"
if git diff --cached --name-only | grep -q '^BLOCK$'; then
  echo "my-hook: BLOCK may not be committed" >&2
  exit 1
fi
`;

const CHAINED_PRE_PUSH = `#!/usr/bin/env bash
cat > "$(git rev-parse --git-dir)/pre-push-stdin"
echo "$1 $2" > "$(git rev-parse --git-dir)/pre-push-args"
`;

const CHAINED_REF_TX = `#!/usr/bin/python3
import sys, os
data = sys.stdin.read()
with open(os.path.join(os.environ.get('GIT_DIR', '.git'), 'reftx-log'), 'a') as f:
    f.write(sys.argv[1] + '\\n' + data)
`;

test('an existing hook is chained: its behaviour, refusals and stdin are kept; uninstall restores it byte for byte', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const dir = hooksDir(repo);
    const gitDir = repo.git(['rev-parse', '--absolute-git-dir']).trim();
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'pre-commit'), CHAINED_PRE_COMMIT, { mode: 0o755 });
    fs.writeFileSync(path.join(dir, 'pre-push'), CHAINED_PRE_PUSH, { mode: 0o750 });
    fs.writeFileSync(path.join(dir, 'reference-transaction'), CHAINED_REF_TX, { mode: 0o700 });
    const before = new Map(
      ['pre-commit', 'pre-push', 'reference-transaction'].map((h) => [
        h,
        { bytes: fs.readFileSync(path.join(dir, h)), mode: fs.statSync(path.join(dir, h)).mode },
      ]),
    );
    const inst = await cli(repo, ['hooks', 'install', '--strict']);
    assert.is(inst.code, 0, inst.stderr);
    assert.match(inst.stderr, 'chaining the hook that was there');
    assert.match((await cli(repo, ['hooks', 'status'])).stdout, /pre-commit\s+installed, current; chains .*pre-commit\.agentsnap-orig/);
    // Ordinary commit: the chained hook runs, seeing itself as .../hooks/pre-commit.
    repo.write('b.txt', 'b\n');
    repo.git(['add', 'b.txt']);
    repo.git(['commit', '-q', '-m', 'b']);
    assert.is(fs.readFileSync(path.join(gitDir, 'hook-log'), 'utf8'), 'called as pre-commit in hooks\n');
    // Its own refusal still refuses.
    repo.write('BLOCK', 'x\n');
    repo.git(['add', 'BLOCK']);
    const r = repo.gitRaw(['commit', '-q', '-m', 'blocked']);
    assert.is.not(r.status, 0);
    assert.match(r.stderr, 'my-hook: BLOCK may not be committed');
    repo.git(['rm', '-q', '--cached', 'BLOCK']);
    repo.rm('BLOCK');
    // pre-push gets the same stdin and arguments.
    const bare = path.join(repo.base, 'origin.git');
    repo.git(['init', '-q', '--bare', bare]);
    repo.git(['remote', 'add', 'origin', bare]);
    repo.git(['push', '-q', 'origin', 'main']);
    const head = repo.git(['rev-parse', 'main']).trim();
    assert.is(
      fs.readFileSync(path.join(gitDir, 'pre-push-stdin'), 'utf8'),
      `refs/heads/main ${head} refs/heads/main ${'0'.repeat(head.length)}\n`,
    );
    assert.is(fs.readFileSync(path.join(gitDir, 'pre-push-args'), 'utf8'), `origin ${bare}\n`);
    // reference-transaction (not a shell script) gets every state with its stdin.
    fs.rmSync(path.join(gitDir, 'reftx-log'), { force: true });
    repo.git(['branch', 'topic']);
    assert.is(
      fs.readFileSync(path.join(gitDir, 'reftx-log'), 'utf8'),
      `prepared\n${'0'.repeat(head.length)} ${head} refs/heads/topic\ncommitted\n${'0'.repeat(head.length)} ${head} refs/heads/topic\n`,
    );
    // agentsnap's own snapshots still work through the chained reference-transaction hook.
    assert.is((await cli(repo, ['snap'])).code, 0);
    const un = await cli(repo, ['hooks', 'uninstall']);
    assert.is(un.code, 0, un.stderr);
    for (const [h, b] of before) {
      assert.equal(fs.readFileSync(path.join(dir, h)), b.bytes, `${h} bytes`);
      assert.is(fs.statSync(path.join(dir, h)).mode, b.mode, `${h} mode`);
    }
    assert.not.ok(fs.existsSync(path.join(dir, 'pre-merge-commit')));
    assert.equal(
      fs.readdirSync(dir).filter((n) => n.includes('agentsnap')),
      [],
    );
  } finally {
    repo.cleanup();
  }
});

test('a husky-style hook that finds its script through $0 keeps working when chained', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    // husky v9: core.hooksPath=.husky/_, each hook sources "$(dirname "$0")/h", which runs .husky/<name>.
    repo.write(
      '.husky/_/h',
      '#!/usr/bin/env sh\nn=$(basename "$0")\ns=$(dirname "$(dirname "$0")")/$n\n[ ! -f "$s" ] && exit 0\nsh -e "$s" "$@"\n',
    );
    repo.write('.husky/_/pre-commit', '#!/usr/bin/env sh\n. "$(dirname "$0")/h"\n', 0o755);
    repo.write('.husky/_/.gitignore', '*\n');
    repo.write('.husky/pre-commit', 'echo "husky pre-commit ran" >&2\nexit 3\n');
    repo.git(['add', '.husky/pre-commit', 'a.txt']);
    repo.git(['config', 'core.hooksPath', '.husky/_']);
    const inst = await cli(repo, ['hooks', 'install']);
    assert.is(inst.code, 0, inst.stderr);
    assert.ok(fs.existsSync(path.join(repo.dir, '.husky/_/pre-commit.agentsnap-orig')));
    assert.match(inst.stdout, `hooks directory: ${path.join(repo.dir, '.husky/_')}`);
    const r = repo.gitRaw(['commit', '-q', '-m', 'x']);
    assert.is.not(r.status, 0);
    assert.match(r.stderr, 'husky pre-commit ran');
  } finally {
    repo.cleanup();
  }
});

test('core.hooksPath is respected, and a checked-in hooks directory is not changed without --force', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n', '.githooks/pre-commit': '#!/bin/sh\nexit 0\n' } });
  try {
    const outside = path.join(repo.base, 'shared-hooks');
    repo.git(['config', 'core.hooksPath', outside]);
    assert.is((await cli(repo, ['hooks', 'install'])).code, 0);
    assert.ok(fs.existsSync(path.join(outside, 'pre-commit')));
    assert.not.ok(fs.existsSync(path.join(repo.dir, '.git/hooks/pre-commit')));
    repo.git(['config', 'core.hooksPath', '.githooks']);
    const r = await cli(repo, ['hooks', 'install']);
    assert.is(r.code, 3);
    assert.match(r.stderr, 'is checked in');
    assert.is(repo.read('.githooks/pre-commit').toString(), '#!/bin/sh\nexit 0\n');
    assert.is((await cli(repo, ['hooks', 'install', '--force'])).code, 0);
    assert.is(repo.read('.githooks/pre-commit.agentsnap-orig').toString(), '#!/bin/sh\nexit 0\n');
  } finally {
    repo.cleanup();
  }
});

test('AGENTSNAP_HOOKS=0 turns the checks off', async () => {
  const { repo, session } = await setup();
  try {
    repo.git(['checkout', '-q', '--', 'a.txt']);
    const r = repo.gitRaw(['branch', 'kept', `refs/agent/${session}/1`], { env: { AGENTSNAP_HOOKS: '0' } });
    assert.is(r.status, 0, r.stderr);
  } finally {
    repo.cleanup();
  }
});

test.run();
