// Issue 13: what the user's index flags, the file system and git's own
// silence must not hide from a snapshot. skip-worktree and assume-unchanged
// files are snapshotted as they are on disk (the user's index and its flags
// untouched), a sparse checkout's entries that are not on disk stay off it,
// unreadable directories and over-long paths are listed as skipped (and
// never deleted or overwritten by a restore), and the executable bit is kept
// under core.fileMode=false.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  BIN,
  ROOT,
  cli,
  indexBytes,
  runProcess,
  tempRepo,
  treeFiles,
  worktreeFiles,
  type CliResult,
  type TempRepo,
} from '../support/helpers.js';
import { blobAt, entryAt, snapJson, type SnapJson } from '../support/snap-helpers.js';
import { openRepo } from '../../src/git/repo.js';
import { loadSettings } from '../../src/settings/settings.js';
import { snapshotNow } from '../../src/snapshot/snapshot-now.js';
import { startWorktreeSession } from '../../src/worktrees/worktree.js';
import { IncrementalSnapshotter } from '../../src/snapshot/incremental.js';

/** One tool call through `snap --json`: pre, the change, post. */
async function jsonStep(
  repo: TempRepo,
  change: () => void,
  opts: { checkIndex?: boolean } = {},
): Promise<{ pre: SnapJson; post: SnapJson }> {
  const run = async (args: string[]) => {
    if (opts.checkIndex !== false) return snapJson(repo, args);
    const res = await cli(repo, ['snap', '--json', ...args]);
    assert.is(res.code, 0, `snap failed: ${res.stdout} ${res.stderr}`);
    return JSON.parse(res.stdout) as SnapJson;
  };
  const pre = await run(['--phase', 'pre', '--tool', 'Bash']);
  change();
  const post = await run(['--phase', 'post']);
  return { pre, post };
}

function flags(repo: TempRepo): string {
  return repo.git(['ls-files', '-v']);
}

test("issue 13 #1: an agent overwriting a --skip-worktree config.json is recorded; undo gives back the user's bytes; the user's index flags stay byte-identical", async () => {
  const repo = tempRepo({ files: { 'config.json': '{"base": true}\n', 'a.txt': 'a\n' } });
  try {
    repo.write('config.json', '{"user": "local"}\n');
    repo.git(['update-index', '--skip-worktree', 'config.json']);
    const index = indexBytes(repo);
    const { pre, post } = await jsonStep(repo, () => repo.write('config.json', '{"agent": "was here"}\n'));
    assert.equal(blobAt(repo, pre.commit, 'config.json').toString(), '{"user": "local"}\n', "the pre-snapshot holds the user's bytes");
    assert.equal(blobAt(repo, post.commit, 'config.json').toString(), '{"agent": "was here"}\n');
    assert.equal(
      post.changed.map((c) => `${c.change} ${c.path}`),
      ['M config.json'],
    );
    const undo = await cli(repo, ['undo', '--json']);
    assert.is(undo.code, 0, undo.stderr);
    assert.equal(repo.read('config.json').toString(), '{"user": "local"}\n');
    assert.equal(indexBytes(repo), index, "the user's index (and its skip-worktree flag) is untouched");
    assert.match(flags(repo), /^S config\.json$/m);
  } finally {
    repo.cleanup();
  }
});

test("issue 13 #1: an assume-unchanged file is recorded as on disk, and undo puts the user's bytes back", async () => {
  const repo = tempRepo({ files: { 'settings.ini': 'base\n', 'a.txt': 'a\n' } });
  try {
    repo.write('settings.ini', 'user\n');
    repo.git(['update-index', '--assume-unchanged', 'settings.ini']);
    const index = indexBytes(repo);
    const { pre, post } = await jsonStep(repo, () => repo.write('settings.ini', 'agent\n'));
    assert.equal(blobAt(repo, pre.commit, 'settings.ini').toString(), 'user\n');
    assert.equal(
      post.changed.map((c) => `${c.change} ${c.path}`),
      ['M settings.ini'],
    );
    const undo = await cli(repo, ['undo']);
    assert.is(undo.code, 0, undo.stderr);
    assert.equal(repo.read('settings.ini').toString(), 'user\n');
    assert.equal(indexBytes(repo), index);
    assert.match(flags(repo), /^h settings\.ini$/m);
  } finally {
    repo.cleanup();
  }
});

test("issue 13 #1: flags set after the session started, a throwaway snapshot and the incremental engine's full scan all read the disk", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n', 'b.txt': 'b\n', 'c.txt': 'c\n' } });
  try {
    const base = await snapJson(repo);
    repo.write('a.txt', 'a local\n');
    repo.git(['update-index', '--skip-worktree', 'a.txt']);
    repo.write('b.txt', 'b local\n');
    repo.git(['update-index', '--assume-unchanged', 'b.txt']);
    const s = await snapJson(repo, ['--session', base.session]);
    assert.equal(treeFiles(repo, s.commit), worktreeFiles(repo));

    const r = await openRepo(repo.dir, { env: repo.env });
    const settings = await loadSettings(r);
    const now = await snapshotNow(r, settings, 'test');
    assert.equal(treeFiles(repo, now.tree), worktreeFiles(repo));

    const engine = await IncrementalSnapshotter.open(r, { runDir: path.join(repo.base, 'run'), settings });
    try {
      const first = await engine.snapshot({ settings, parentTree: null });
      assert.equal(treeFiles(repo, first.tree), worktreeFiles(repo));
      repo.write('a.txt', 'a agent\n');
      const second = await engine.snapshot({ settings, parentTree: first.tree });
      assert.equal(treeFiles(repo, second.tree), worktreeFiles(repo));
      assert.equal(
        second.changed.map((c) => c.path),
        ['a.txt'],
      );
    } finally {
      await engine.close();
    }
  } finally {
    repo.cleanup();
  }
});

function sparseRepo(opts: { sparseIndex?: boolean } = {}): TempRepo {
  const repo = tempRepo({ files: { 'in/a.txt': 'a\n', 'out/b.txt': 'b\n', 'out/deep/c.txt': 'c\n', 'top.txt': 't\n' } });
  repo.git(['sparse-checkout', 'set', ...(opts.sparseIndex ? ['--cone', '--sparse-index'] : []), 'in']);
  assert.not.ok(repo.exists('out'), 'out/ is outside the cone');
  return repo;
}

test('issue 13 #7: sparse cone checkout, agent step, undo: no out-of-cone file appears', async () => {
  const repo = sparseRepo();
  try {
    const index = indexBytes(repo);
    const { pre, post } = await jsonStep(repo, () => repo.write('in/new.txt', 'new\n'));
    assert.equal(
      treeFiles(repo, pre.commit),
      worktreeFiles(repo, (p) => p === 'in/new.txt'),
    );
    assert.equal(
      post.changed.map((c) => `${c.change} ${c.path}`),
      ['A in/new.txt'],
      'entries that are not on disk are no change',
    );
    const undo = await cli(repo, ['undo']);
    assert.is(undo.code, 0, undo.stderr);
    assert.not.ok(repo.exists('out'), 'nothing outside the cone was created');
    assert.not.ok(repo.exists('in/new.txt'));
    assert.equal(indexBytes(repo), index);
  } finally {
    repo.cleanup();
  }
});

for (const sparseIndex of [false, true]) {
  test(`issue 13 #7: an out-of-cone file the agent writes is recorded; undo removes it (its bytes stay in the safety snapshot)${sparseIndex ? ' (sparse index)' : ''}`, async () => {
    const repo = sparseRepo({ sparseIndex });
    try {
      const index = indexBytes(repo);
      const { post } = await jsonStep(repo, () => repo.write('out/b.txt', 'agent\n'));
      assert.equal(blobAt(repo, post.commit, 'out/b.txt').toString(), 'agent\n');
      const undo = await cli(repo, ['undo', '--json']);
      assert.is(undo.code, 0, undo.stderr);
      assert.not.ok(repo.exists('out'), "the step's out-of-cone file is gone again");
      const safety = (JSON.parse(undo.stdout) as { files: { safety: string } }).files.safety;
      assert.equal(blobAt(repo, safety, 'out/b.txt').toString(), 'agent\n');
      assert.equal(indexBytes(repo), index);
    } finally {
      repo.cleanup();
    }
  });
}

test('issue 13 #7: an agent widening the sparse checkout is undone file by file (the out-of-cone files it brought are removed)', async () => {
  const repo = sparseRepo();
  try {
    await jsonStep(repo, () => repo.git(['sparse-checkout', 'add', 'out']), { checkIndex: false });
    assert.ok(repo.exists('out/b.txt'));
    const undo = await cli(repo, ['undo']);
    assert.is(undo.code, 0, undo.stderr);
    assert.not.ok(repo.exists('out'), 'undo brought back the files as they were before the step');
  } finally {
    repo.cleanup();
  }
});

test('issue 13 #7: a session worktree started from a sparse worktree keeps the entries that were not on disk (no deletions to promote)', async () => {
  const repo = sparseRepo();
  try {
    repo.write('in/a.txt', 'a changed\n');
    const res = await startWorktreeSession(await openRepo(repo.dir, { env: repo.env }), { session: 'sparse-wt' });
    const wt = res.meta.path;
    assert.equal(fs.readFileSync(path.join(wt, 'in/a.txt'), 'utf8'), 'a changed\n');
    // git gives the new worktree the same sparse checkout; what matters is that nothing reads as deleted there.
    assert.equal(repo.git(['status', '--porcelain'], { cwd: wt }), ' M in/a.txt\n');
    assert.equal(fs.existsSync(path.join(wt, 'out')), repo.git(['config', '--get', 'core.sparseCheckout'], { cwd: wt }).trim() !== 'true');
  } finally {
    repo.cleanup();
  }
});

test('issue 13 #7: promote of a session in a sparse checkout commits its changes, not the deletion of every entry outside the cone', async () => {
  const repo = sparseRepo();
  try {
    const { pre } = await jsonStep(repo, () => {
      repo.write('in/a.txt', 'agent\n');
      repo.write('out/b.txt', 'agent wrote outside the cone\n');
    });
    const res = await cli(repo, ['promote', pre.session, '--branch', 'agent/sparse'], {
      env: { GIT_AUTHOR_NAME: 'U', GIT_AUTHOR_EMAIL: 'u@example.com', GIT_COMMITTER_NAME: 'U', GIT_COMMITTER_EMAIL: 'u@example.com' },
    });
    assert.is(res.code, 0, res.stderr);
    const diff = repo.git(['diff-tree', '-r', '--name-status', '--no-renames', 'agent/sparse^', 'agent/sparse']);
    assert.equal(diff.trim().split('\n').sort(), ['M\tin/a.txt', 'M\tout/b.txt']);
  } finally {
    repo.cleanup();
  }
});

// Root reads anything; without CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH it obeys permissions while still owning the checkout.
const SETPRIV = ['--inh-caps=-dac_override,-dac_read_search', '--bounding-set=-dac_override,-dac_read_search', '--'];
const setprivWorks = (() => {
  const r = spawnSync('setpriv', [...SETPRIV, 'true']);
  return r.status === 0;
})();

function unprivileged(repo: TempRepo, args: string[]): Promise<CliResult> {
  return runProcess('setpriv', [...SETPRIV, process.execPath, BIN, ...args], { cwd: repo.dir, env: repo.env });
}

async function unprivilegedJson(repo: TempRepo, args: string[]): Promise<SnapJson> {
  const res = await unprivileged(repo, ['snap', '--json', ...args]);
  assert.is(res.code, 0, `snap failed: ${res.stdout} ${res.stderr}`);
  return JSON.parse(res.stdout) as SnapJson;
}

test('issue 13 #6: an unreadable directory is listed as skipped (never silently left out); undo neither deletes nor overwrites it', async () => {
  if (process.getuid?.() !== 0 && process.getuid !== undefined) {
    // Not root: chmod 000 already applies to this process's children.
  } else if (!setprivWorks) {
    console.log('skipped: issue 13 #6 unreadable directory (setpriv cannot drop CAP_DAC_OVERRIDE here)');
    return;
  }
  const repo = tempRepo({ files: { 'a.txt': 'a\n', 'locked/tracked.txt': 'tracked v1\n' } });
  const lockedDir = path.join(repo.dir, 'locked');
  const listDir = path.join(repo.dir, 'nolist');
  try {
    repo.write('locked/untracked.txt', 'mine\n');
    repo.write('locked/.env', 'SECRET=1\n'); // skipped (a secret): known to git's untracked cache only
    repo.write('locked/tracked.txt', 'tracked v2\n');
    repo.write('nolist/inside.txt', 'inside\n');
    const base = await unprivilegedJson(repo, []);
    assert.equal(blobAt(repo, base.commit, 'locked/untracked.txt').toString(), 'mine\n');
    fs.chmodSync(lockedDir, 0o000);
    fs.chmodSync(listDir, 0o300); // names can be opened, the directory not listed
    const pre = await unprivilegedJson(repo, ['--phase', 'pre', '--tool', 'Bash', '--session', base.session]);
    const reasons = new Map(pre.skipped.map((s) => [s.path, s.reason]));
    assert.is(reasons.get('locked'), 'unreadable', JSON.stringify(pre.skipped));
    assert.is(reasons.get('nolist'), 'unreadable', JSON.stringify(pre.skipped));
    assert.not.ok(reasons.has('locked/tracked.txt'), 'the directory stands for what is below it');
    assert.is(entryAt(repo, pre.commit, 'locked/tracked.txt'), null, 'no stale index bytes for a file that could not be read');
    // A second snapshot (the session's own index, git's untracked cache) still says so.
    repo.write('a.txt', 'a2\n');
    const post = await unprivilegedJson(repo, ['--phase', 'post', '--session', base.session]);
    const again = new Map(post.skipped.map((s) => [s.path, s.reason]));
    assert.is(again.get('locked'), 'unreadable', JSON.stringify(post.skipped));
    assert.is(again.get('nolist'), 'unreadable', JSON.stringify(post.skipped));
    assert.equal(post.skipped.map((x) => x.path).sort(), ['locked', 'nolist'], 'the session index lists what a fresh one does');
    assert.is(entryAt(repo, post.commit, 'locked/untracked.txt'), null);
    // Equal to a snapshot on a fresh throwaway index (tree and skipped set), as the same unprivileged user.
    const script = `import { openRepo } from ${JSON.stringify(path.join(ROOT, 'dist/git/repo.js'))};
      import { loadSettings } from ${JSON.stringify(path.join(ROOT, 'dist/settings/settings.js'))};
      import { snapshotNow } from ${JSON.stringify(path.join(ROOT, 'dist/snapshot/snapshot-now.js'))};
      const r = await openRepo(process.cwd(), { env: process.env });
      console.log(JSON.stringify(await snapshotNow(r, await loadSettings(r), 'test')));`;
    const fresh = await runProcess('setpriv', [...SETPRIV, process.execPath, '--input-type=module', '-e', script], {
      cwd: repo.dir,
      env: repo.env,
    });
    assert.is(fresh.code, 0, fresh.stderr);
    const now = JSON.parse(fresh.stdout) as { tree: string; skipped: string[] };
    assert.is(now.tree, post.tree);
    assert.equal(now.skipped.sort(), ['locked', 'nolist']);
    // Undo to the pre-snapshot that could not read them: nothing of theirs is deleted.
    const undo = await unprivileged(repo, ['undo', '--session', base.session]);
    assert.is(undo.code, 0, undo.stdout + undo.stderr);
    assert.equal(repo.read('a.txt').toString(), 'a\n');
    // Back to the baseline (which read everything) while they are unreadable: a file the safety snapshot could not read is not overwritten.
    fs.chmodSync(listDir, 0o700);
    fs.writeFileSync(path.join(listDir, 'inside.txt'), 'changed while unlisted\n');
    fs.chmodSync(listDir, 0o300);
    const back = await unprivileged(repo, [
      'restore',
      String(base.step),
      '--after',
      '--force',
      '--session',
      base.session,
      '--',
      'locked',
      'nolist',
    ]);
    assert.is(back.code, 0, back.stdout + back.stderr);
    fs.chmodSync(lockedDir, 0o700);
    fs.chmodSync(listDir, 0o700);
    assert.equal(repo.read('locked/untracked.txt').toString(), 'mine\n');
    assert.equal(repo.read('locked/tracked.txt').toString(), 'tracked v2\n');
    assert.equal(repo.read('nolist/inside.txt').toString(), 'changed while unlisted\n');
  } finally {
    for (const d of [lockedDir, listDir]) if (fs.existsSync(d)) fs.chmodSync(d, 0o700);
    repo.cleanup();
  }
});

// Generative seed 208 (nocaps): git's untracked cache records an ignore file it cannot read as absent (a null
// oid) and, while the directory's mtime stays (a chmod changes only the file's), never reads it again: once
// readable, the ignored local.db was recorded as an untracked file by every later snapshot.
test('issue 13 #6: a .gitignore unreadable for a while: its rules hold again once it is readable', async () => {
  if (process.getuid?.() !== 0 && process.getuid !== undefined) {
    // Not root: chmod 000 already applies to this process's children.
  } else if (!setprivWorks) {
    console.log('skipped: issue 13 #6 unreadable .gitignore (setpriv cannot drop CAP_DAC_OVERRIDE here)');
    return;
  }
  const repo = tempRepo({ files: { '.gitignore': '*.db\n', 'a.txt': 'a\n' } });
  const ignore = path.join(repo.dir, '.gitignore');
  try {
    repo.write('local.db', "the user's ignored database\n");
    const base = await unprivilegedJson(repo, []);
    assert.is(entryAt(repo, base.commit, 'local.db'), null);
    for (const step of [1, 2]) {
      repo.write('a.txt', `a${step}\n`);
      await unprivilegedJson(repo, ['--session', base.session]);
    }
    // The directory last changed a while ago (else git re-reads it as racily changed anyway).
    const past = new Date(Date.now() - 60_000);
    fs.utimesSync(repo.dir, past, past);
    fs.chmodSync(ignore, 0o000);
    // The rules cannot be read: the snapshot fails naming the file, or lists what git saw; either way it is no loss.
    await unprivileged(repo, ['snap', '--json', '--session', base.session]);
    fs.chmodSync(ignore, 0o644);
    for (const step of [3, 4]) {
      // Written in place: the directory's mtime stays, as after any edit of an existing file.
      fs.writeFileSync(path.join(repo.dir, 'a.txt'), `a${step}\n`);
      const snap = await unprivilegedJson(repo, ['--session', base.session]);
      assert.is(entryAt(repo, snap.commit, 'local.db'), null, `snapshot ${step}: local.db is ignored again`);
    }
  } finally {
    fs.chmodSync(ignore, 0o644);
    repo.cleanup();
  }
});

// Generative seed 203 (nocaps, after the fixes above): an untracked file the session's own index holds,
// unreadable and then ignored by a new rule, failed every snapshot (the index's entry was re-read before
// the entries the rules now leave out were dropped): every later step was unprotected.
test('issue 13 #6: an unreadable untracked file that a new rule ignores does not fail the snapshot', async () => {
  if (process.getuid?.() !== 0 && process.getuid !== undefined) {
    // Not root: chmod 000 already applies to this process's children.
  } else if (!setprivWorks) {
    console.log('skipped: issue 13 #6 unreadable ignored file (setpriv cannot drop CAP_DAC_OVERRIDE here)');
    return;
  }
  const repo = tempRepo({ files: { '.gitignore': '*.db\n', 'a.txt': 'a\n' } });
  const b = path.join(repo.dir, 'b.txt');
  try {
    repo.write('b.txt', 'untracked b\n');
    const base = await unprivilegedJson(repo, []);
    // The session on its own index (which then holds b.txt), not a copy of the user's.
    fs.rmSync(path.join(repo.dir, '.git', 'agentsnap', 'sessions', base.session, 'index.user-copy'), { force: true });
    for (const step of [1, 2]) {
      repo.write('a.txt', `a${step}\n`);
      const snap = await unprivilegedJson(repo, ['--session', base.session]);
      assert.ok(entryAt(repo, snap.commit, 'b.txt'));
    }
    fs.chmodSync(b, 0o000);
    repo.write('.gitignore', '*.db\nb.txt\n');
    for (const step of [3, 4]) {
      fs.writeFileSync(path.join(repo.dir, 'a.txt'), `a${step}\n`);
      const snap = await unprivilegedJson(repo, ['--session', base.session]);
      assert.is(entryAt(repo, snap.commit, 'b.txt'), null, `snapshot ${step}: b.txt is ignored`);
    }
  } finally {
    fs.chmodSync(b, 0o644);
    repo.cleanup();
  }
});

test('issue 13 #6: undo of a step that put a directory holding an unreadable one where a file was leaves that directory (no internal error)', async () => {
  // Found by the generative test (seed 318): the check of "a directory becoming a file" listed the directory's
  // files with readdir, which threw EACCES on the unreadable one inside: undo exited 70.
  if (!setprivWorks) {
    console.log('skipped: issue 13 #6 undo over an unreadable directory (setpriv cannot drop CAP_DAC_OVERRIDE here)');
    return;
  }
  const repo = tempRepo({ files: { 'a.txt': 'a\n', g: 'g\n' } });
  const locked = path.join(repo.dir, 'g', 'h');
  try {
    const base = await unprivilegedJson(repo, []);
    await unprivilegedJson(repo, ['--phase', 'pre', '--tool', 'Bash', '--session', base.session]);
    fs.rmSync(path.join(repo.dir, 'g'));
    repo.write('g/h/inner.txt', "the agent's, unreadable by the time of the undo\n");
    repo.write('a.txt', 'a2\n');
    fs.chmodSync(locked, 0o000);
    const post = await unprivilegedJson(repo, ['--phase', 'post', '--session', base.session]);
    assert.ok(
      post.skipped.some((s) => s.path === 'g/h' && s.reason === 'unreadable'),
      JSON.stringify(post.skipped),
    );
    const undo = await unprivileged(repo, ['undo', '--json', '--session', base.session]);
    assert.is(undo.code, 0, undo.stdout + undo.stderr);
    const out = JSON.parse(undo.stdout) as { files: { left: { path: string; reason: string }[] } };
    assert.ok(
      out.files.left.some((l) => l.path === 'g'),
      JSON.stringify(out.files.left),
    );
    assert.equal(repo.read('a.txt').toString(), 'a\n', 'the rest of the undo is done');
    fs.chmodSync(locked, 0o700);
    assert.equal(
      repo.read('g/h/inner.txt').toString(),
      "the agent's, unreadable by the time of the undo\n",
      'the directory it could not read is left as it was',
    );
  } finally {
    if (fs.existsSync(locked)) fs.chmodSync(locked, 0o700);
    repo.cleanup();
  }
});

test('issue 13 #6: the incremental engine equals a full scan while a directory is unreadable and after', async () => {
  if (!setprivWorks) {
    console.log('skipped: issue 13 #6 incremental engine with an unreadable directory (setpriv cannot drop CAP_DAC_OVERRIDE here)');
    return;
  }
  const repo = tempRepo({ files: { 'a.txt': 'a\n', 'locked/tracked.txt': 't\n' } });
  try {
    repo.write('locked/untracked.txt', 'mine\n');
    const dist = (m: string) => JSON.stringify(path.join(ROOT, 'dist', m));
    // Runs as the unprivileged user: the engine, the chmods and the reference scans.
    const script = `import fs from 'node:fs';
      import { openRepo } from ${dist('git/repo.js')};
      import { loadSettings } from ${dist('settings/settings.js')};
      import { snapshotNow } from ${dist('snapshot/snapshot-now.js')};
      import { IncrementalSnapshotter } from ${dist('snapshot/incremental.js')};
      const r = await openRepo(process.cwd(), { env: process.env });
      const settings = await loadSettings(r);
      const engine = await IncrementalSnapshotter.open(r, { runDir: ${JSON.stringify(path.join(repo.base, 'run'))}, settings });
      const out = [];
      let parent = null;
      const round = async (label) => {
        const got = await engine.snapshot({ settings, parentTree: parent });
        const want = await snapshotNow(r, settings, 'test');
        out.push({ label, got: { tree: got.tree, skipped: got.skipped.map((x) => x.path + ':' + x.reason).sort() }, want: want.tree, wantSkipped: want.skipped.sort() });
        parent = got.tree;
      };
      try {
        await round('readable');
        fs.chmodSync('locked', 0o000);
        await round('unreadable');
        fs.writeFileSync('a.txt', 'a2\\n');
        await round('unreadable, edit');
        fs.chmodSync('locked', 0o755);
        await round('readable again');
      } finally {
        fs.chmodSync('locked', 0o755);
        await engine.close();
      }
      console.log(JSON.stringify(out));`;
    const res = await runProcess('setpriv', [...SETPRIV, process.execPath, '--input-type=module', '-e', script], {
      cwd: repo.dir,
      env: repo.env,
    });
    assert.is(res.code, 0, res.stderr);
    const rounds = JSON.parse(res.stdout) as {
      label: string;
      got: { tree: string; skipped: string[] };
      want: string;
      wantSkipped: string[];
    }[];
    for (const r of rounds) {
      assert.is(r.got.tree, r.want, `${r.label}: tree differs from the full scan`);
      assert.equal(
        r.got.skipped.map((x) => x.split(':')[0]),
        r.wantSkipped,
        `${r.label}: skipped differs`,
      );
    }
    assert.equal(rounds[1]!.got.skipped, ['locked:unreadable']);
    assert.equal(rounds[3]!.got.skipped, []);
  } finally {
    if (fs.existsSync(path.join(repo.dir, 'locked'))) fs.chmodSync(path.join(repo.dir, 'locked'), 0o755);
    repo.cleanup();
  }
});

/** A file below a path longer than PATH_MAX (4096), made with relative steps. Returns the top directory. */
function makeLongPath(repo: TempRepo): { top: string; depth: number; name: string } {
  const name = 'd'.repeat(200);
  const depth = 25;
  const script = `mkdir long && cd long && for i in $(seq ${depth}); do mkdir ${name} && cd ${name} || exit 1; done; printf deep > f.txt`;
  const r = spawnSync('bash', ['-c', script], { cwd: repo.dir });
  assert.is(r.status, 0, r.stderr?.toString());
  return { top: 'long', depth, name };
}

function readLong(repo: TempRepo, l: { depth: number; name: string }): string | null {
  const r = spawnSync('bash', ['-c', `cd long && for i in $(seq ${l.depth}); do cd ${l.name} || exit 1; done; cat f.txt`], {
    cwd: repo.dir,
  });
  return r.status === 0 ? r.stdout.toString() : null;
}

test('issue 13 #6: a path longer than PATH_MAX is listed as skipped (path-too-long) and an undo leaves it alone', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const l = makeLongPath(repo);
    const { pre, post } = await jsonStep(repo, () => repo.write('a.txt', 'a2\n'));
    for (const s of [pre, post]) {
      const long = s.skipped.filter((x) => x.reason === 'path-too-long');
      assert.is(long.length, 1, JSON.stringify(s.skipped.map((x) => [x.path.length, x.reason])));
      assert.ok(long[0]!.path.startsWith(`long/${l.name}/`), 'names the directory it could not go into');
      assert.ok(!long[0]!.path.endsWith('/'));
    }
    const undo = await cli(repo, ['undo']);
    assert.is(undo.code, 0, undo.stderr);
    assert.equal(repo.read('a.txt').toString(), 'a\n');
    assert.is(readLong(repo, l), 'deep');
  } finally {
    spawnSync('rm', ['-rf', 'long'], { cwd: repo.dir }); // fs.rmSync cannot name what is below PATH_MAX
    repo.cleanup();
  }
});

test('issue 13 #7: under core.fileMode=false an untracked executable deleted by the agent comes back 0755 (and a tracked one keeps its disk mode)', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n', 'tracked.sh': '#!/bin/sh\n' } });
  try {
    repo.git(['config', 'core.fileMode', 'false']);
    repo.write('tool.sh', '#!/bin/sh\necho hi\n', 0o755);
    fs.chmodSync(path.join(repo.dir, 'tracked.sh'), 0o755); // git says nothing under fileMode=false
    const { pre } = await jsonStep(repo, () => {
      repo.rm('tool.sh');
      repo.rm('tracked.sh');
    });
    assert.is(entryAt(repo, pre.commit, 'tool.sh')?.mode, '100755');
    assert.is(entryAt(repo, pre.commit, 'tracked.sh')?.mode, '100755');
    const undo = await cli(repo, ['undo']);
    assert.is(undo.code, 0, undo.stderr);
    assert.is(fs.statSync(path.join(repo.dir, 'tool.sh')).mode & 0o777, 0o755);
    assert.is(fs.statSync(path.join(repo.dir, 'tracked.sh')).mode & 0o777, 0o755);
    assert.equal(repo.read('tool.sh').toString(), '#!/bin/sh\necho hi\n');
  } finally {
    repo.cleanup();
  }
});

test.run();
