// Issue 29 item 13: the bare "dotfiles" layout, a home directory kept in a repository whose git dir is
// elsewhere ($HOME/.cfg, used with `git --git-dir=$HOME/.cfg --work-tree=$HOME`, or core.worktree). No .git is
// found from the worktree: agentsnap takes the repository from GIT_DIR (and GIT_WORK_TREE or core.worktree), as
// git does, and refuses clearly what it cannot do safely there.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { cli, cliProcess, step, tempRepo, worktreeFiles, type TempRepo } from '../support/helpers.js';
import { ON } from '../support/served.js';

interface Dotfiles {
  t: TempRepo;
  /** The git dir, inside the worktree (t.dir) as in the classic layout. */
  gitDir: string;
  /** GIT_DIR and GIT_WORK_TREE as the `config` alias passes them. */
  named: Record<string, string>;
  git(args: string[]): string;
}

/** `git init --bare $HOME/.cfg`, a tracked file committed through --git-dir/--work-tree; `.cfg` ignored in info/exclude unless `ignoreGitDir` is false. */
function dotfiles(opts: { ignoreGitDir?: boolean } = {}): Dotfiles {
  const t = tempRepo({ noInit: true });
  const gitDir = path.join(t.dir, '.cfg');
  t.git(['init', '-q', '--bare', '-b', 'main', `--object-format=${t.objectFormat}`, gitDir]);
  if (opts.ignoreGitDir !== false) fs.appendFileSync(path.join(gitDir, 'info', 'exclude'), '/.cfg/\n');
  const git = (args: string[]) => t.git([`--git-dir=${gitDir}`, `--work-tree=${t.dir}`, ...args]);
  t.write('.bashrc', 'export EDITOR=vi\n');
  t.write('notes/todo.txt', 'one\n');
  git(['add', '.bashrc', 'notes/todo.txt']);
  git(['commit', '-q', '-m', 'dotfiles']);
  return { t, gitDir, named: { GIT_DIR: gitDir, GIT_WORK_TREE: t.dir }, git };
}

/** The worktree's files, the git dir left out. */
function files(d: Dotfiles): Map<string, { mode: string; content: Buffer }> {
  return worktreeFiles(d.t, (rel) => rel === '.cfg' || rel.startsWith('.cfg/'));
}

/** A step through the CLI with GIT_DIR/GIT_WORK_TREE set (helpers' step() runs without them). */
async function namedStep(d: Dotfiles, change: () => void): Promise<void> {
  const pre = await cli(d.t, ['snap', '--phase', 'pre', '--tool', 'Bash', '-q'], { env: d.named });
  assert.is(pre.code, 0, pre.stderr);
  change();
  const post = await cli(d.t, ['snap', '--phase', 'post', '-q'], { env: d.named });
  assert.is(post.code, 0, post.stderr);
}

test('dotfiles: with GIT_DIR and GIT_WORK_TREE set (a bare repository), steps are snapshotted and undo/redo work; the state lives in the git dir; the git dir is never recorded', async () => {
  const d = dotfiles();
  try {
    const index = fs.readFileSync(path.join(d.gitDir, 'index'));
    const before = files(d);
    await namedStep(d, () => {
      d.t.write('.bashrc', 'export EDITOR=nano\n');
      d.t.rm('notes/todo.txt');
      d.t.write('.config/app.toml', 'x = 1\n');
    });
    const after = files(d);
    assert.ok(fs.existsSync(path.join(d.gitDir, 'agentsnap')), 'the state dir is in the git dir');
    const tip = d.git(['for-each-ref', '--format=%(objectname)', 'refs/agent/']).trim().split('\n').pop()!;
    const recorded = d.git(['ls-tree', '-r', '--name-only', tip]).trim().split('\n');
    assert.equal(recorded, ['.bashrc', '.config/app.toml'], 'the step records the worktree, not the git dir');
    const u = await cli(d.t, ['undo'], { env: d.named });
    assert.is(u.code, 0, u.stderr);
    assert.equal(files(d), before);
    const r = await cli(d.t, ['redo'], { env: d.named });
    assert.is(r.code, 0, r.stderr);
    assert.equal(files(d), after);
    assert.ok(fs.readFileSync(path.join(d.gitDir, 'index')).equals(index), 'the user index is untouched');
    // From a subdirectory too, as git works there.
    const log = await cli(d.t, ['log'], { env: d.named, cwd: path.join(d.t.dir, '.config') });
    assert.is(log.code, 0, log.stderr);
  } finally {
    d.t.cleanup();
  }
});

test('dotfiles: core.worktree (core.bare false) names the worktree: GIT_DIR alone is enough', async () => {
  const d = dotfiles();
  try {
    d.t.git([`--git-dir=${d.gitDir}`, 'config', 'core.bare', 'false']);
    d.t.git([`--git-dir=${d.gitDir}`, 'config', 'core.worktree', d.t.dir]);
    const before = files(d);
    const env = { GIT_DIR: d.gitDir };
    const pre = await cli(d.t, ['snap', '--phase', 'pre', '-q'], { env });
    assert.is(pre.code, 0, pre.stderr);
    d.t.write('.bashrc', 'changed\n');
    assert.is((await cli(d.t, ['snap', '--phase', 'post', '-q'], { env })).code, 0);
    const u = await cli(d.t, ['undo'], { env });
    assert.is(u.code, 0, u.stderr);
    assert.equal(files(d), before);
  } finally {
    d.t.cleanup();
  }
});

test('dotfiles: what is not supported is refused with one message saying what to do (exit 1), nothing written', async () => {
  const d = dotfiles({ ignoreGitDir: false });
  try {
    // No GIT_DIR: nothing names the repository; the hint says how (shadow repositories off: else `snap` keeps one
    // for the directory, test/git/shadow.test.ts; in a home directory, the usual dotfiles worktree, that is refused).
    const none = await cli(d.t, ['snap', '-q'], { env: { AGENTSNAP_SHADOWS: 'off' } });
    assert.is(none.code, 1);
    assert.match(none.stderr, /not a git repository/);
    assert.match(none.stderr, /GIT_DIR and GIT_WORK_TREE/);
    // The git dir inside the worktree and not ignored: a snapshot would record the repository into itself.
    const inside = await cli(d.t, ['snap', '-q'], { env: d.named });
    assert.is(inside.code, 1, inside.stderr);
    assert.match(inside.stderr, /\.cfg is inside its worktree .* and not ignored/);
    assert.match(inside.stderr, /echo '\/\.cfg\/' >> .*\.cfg\/info\/exclude/);
    assert.not.match(inside.stderr, /\n\s+at /, 'no stack trace');
    assert.not.ok(fs.existsSync(path.join(d.gitDir, 'agentsnap')), 'nothing written');
    fs.appendFileSync(path.join(d.gitDir, 'info', 'exclude'), '/.cfg/\n');
    // GIT_DIR of a bare repository without a worktree named: git would take the current directory for its top.
    const noWorktree = await cli(d.t, ['snap', '-q'], { env: { GIT_DIR: d.gitDir }, cwd: path.join(d.t.dir, 'notes') });
    assert.is(noWorktree.code, 1, noWorktree.stderr);
    assert.match(noWorktree.stderr, /names no worktree: neither GIT_WORK_TREE nor core.worktree is set/);
    // GIT_DIR naming no repository.
    const wrong = await cli(d.t, ['snap', '-q'], { env: { GIT_DIR: path.join(d.t.base, 'nothing'), GIT_WORK_TREE: d.t.dir } });
    assert.is(wrong.code, 1, wrong.stderr);
    assert.match(wrong.stderr, /GIT_DIR names no git repository/);
    // Started outside the worktree GIT_WORK_TREE names.
    const outside = await cli(d.t, ['snap', '-q'], { env: d.named, cwd: d.t.home });
    assert.is(outside.code, 1, outside.stderr);
    assert.match(outside.stderr, /is outside the worktree/);
    assert.not.ok(fs.existsSync(path.join(d.gitDir, 'agentsnap')), 'nothing written');
  } finally {
    d.t.cleanup();
  }
});

test("dotfiles: wrap with the background server on (started with GIT_DIR/GIT_WORK_TREE) records the agent's change; undo takes it back", async () => {
  const d = dotfiles();
  try {
    const before = files(d);
    for (const run of [1, 2]) {
      // The first wrap leaves a server, the second is served by it.
      const res = await cliProcess(d.t, ['wrap', '--auto', '--', 'sh', '-c', `echo run ${run} > .bashrc`], { env: { ...ON, ...d.named } });
      assert.is(res.code, 0, res.stderr);
      assert.is(d.t.read('.bashrc').toString(), `run ${run}\n`);
    }
    const u = await cliProcess(d.t, ['undo'], { env: d.named });
    assert.is(u.code, 0, u.stderr);
    assert.is(d.t.read('.bashrc').toString(), 'run 1\n');
    await cliProcess(d.t, ['server', 'stop'], { env: { ...ON, ...d.named } });
    assert.not.equal(files(d), before);
  } finally {
    d.t.cleanup();
  }
});

test('dotfiles: a .git found from the current directory is used as before, whatever GIT_DIR says', async () => {
  const d = dotfiles();
  const own = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    await step(own, () => own.write('a.txt', 'b\n'));
    const u = await cli(own, ['undo'], { env: d.named });
    assert.is(u.code, 0, u.stderr);
    assert.is(own.read('a.txt').toString(), 'a\n');
    assert.not.ok(fs.existsSync(path.join(d.gitDir, 'agentsnap')));
  } finally {
    own.cleanup();
    d.t.cleanup();
  }
});

test.run();
