// The untracked-cache path (one `git status` through git's untracked cache)
// must record exactly what the full scan (diff-files + ls-files -o) records,
// including changes that git's filtered refresh would call clean.
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cli, tempRepo, treeFiles, type TempRepo } from '../support/helpers.js';
import { assertFsckClean, blobAt, gitCommonDir, snapJson } from '../support/snap-helpers.js';

/** The markers that put a session's private index on the untracked-cache path. */
function markers(repo: TempRepo): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of fs.readdirSync(dir)) {
      const abs = path.join(dir, name);
      if (fs.lstatSync(abs).isDirectory()) walk(abs);
      else if (name.endsWith('.no-attributes')) out.push(abs);
    }
  };
  walk(path.join(gitCommonDir(repo), 'agentsnap'));
  return out;
}

/**
 * Puts the session on its own private index: the first snapshot keeps a copy
 * of the user's index (snapshotTree's in-process path); without its record,
 * the next snapshot is a full scan into the index, which then holds the
 * snapshot's tree and takes the untracked-cache path.
 */
async function onOwnIndex(repo: TempRepo, session: string): Promise<void> {
  const copy = path.join(gitCommonDir(repo), 'agentsnap', 'sessions', session, 'index.user-copy');
  assert.ok(fs.existsSync(copy), 'the first snapshot kept a copy of the user index');
  fs.rmSync(copy);
  await snapJson(repo, ['--session', session]);
}

function assertExactBytes(repo: TempRepo, commit: string, rel: string): void {
  assert.equal(blobAt(repo, commit, rel), repo.read(rel), `${rel}: snapshot bytes differ from the file`);
}

test('the untracked-cache path and the full scan write the same tree', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n', 'dir/b.txt': 'b\n', 'dir/sub/c.txt': 'c\n', 'gone.txt': 'g\n' } });
  try {
    const s1 = await snapJson(repo);
    await onOwnIndex(repo, s1.session);
    assert.is(markers(repo).length, 1, 'a repository without attributes takes the untracked-cache path');
    repo.write('a.txt', 'a2\n');
    repo.write('dir/new file.txt', 'n\n');
    repo.write('dir/sub/deeper/x.txt', 'x\n');
    repo.write('.gitignore', '*.log\n');
    repo.write('dir/debug.log', 'ignored\n');
    fs.rmSync(path.join(repo.dir, 'gone.txt'));
    fs.chmodSync(path.join(repo.dir, 'dir/b.txt'), 0o755);
    const fast = await snapJson(repo, ['--session', s1.session]);
    // The same worktree through the full scan: no marker, nothing to change.
    for (const m of markers(repo)) fs.rmSync(m);
    const full = await snapJson(repo, ['--session', s1.session]);
    assert.is(fast.tree, full.tree);
    assert.equal(full.changed, []);
    const files = treeFiles(repo, fast.commit);
    assert.ok(files.has('dir/new file.txt') && files.has('dir/sub/deeper/x.txt'));
    assert.not.ok(files.has('gone.txt') || files.has('dir/debug.log'));
    assert.is(files.get('dir/b.txt')?.mode, '100755');
    // Back on the fast path, a new file in a directory the cache has seen.
    assert.is(markers(repo).length, 1);
    repo.write('dir/sub/later.txt', 'l\n');
    const again = await snapJson(repo, ['--session', s1.session]);
    assert.equal(
      again.changed.map((c) => c.path),
      ['dir/sub/later.txt'],
    );
    assertFsckClean(repo);
  } finally {
    repo.cleanup();
  }
});

test('an attributes file that appears with a line-ending-only edit: the exact bytes are recorded', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\ntwo\n', 'b.txt': 'b\n' } });
  try {
    const s1 = await snapJson(repo);
    await onOwnIndex(repo, s1.session);
    assert.is(markers(repo).length, 1);
    // In one step: `* text=auto` appears and a.txt turns CRLF. Normalised, a.txt
    // equals its previous blob, so git's refresh alone would call it clean.
    repo.write('.gitattributes', '* text=auto\n');
    repo.write('a.txt', 'one\r\ntwo\r\n');
    const s2 = await snapJson(repo, ['--session', s1.session]);
    assertExactBytes(repo, s2.commit, 'a.txt');
    assert.ok(s2.changed.some((c) => c.path === 'a.txt'));
    assert.is(markers(repo).length, 0, 'attributes present: the full scan from now on');
    repo.write('a.txt', 'one\ntwo\n');
    const s3 = await snapJson(repo, ['--session', s1.session]);
    assertExactBytes(repo, s3.commit, 'a.txt');
    assertFsckClean(repo);
  } finally {
    repo.cleanup();
  }
});

test('a clean filter that appears with a filter-equal edit: the exact bytes are recorded', async () => {
  const repo = tempRepo({ files: { 'note.up': 'ABC\n' } });
  try {
    repo.git(['config', 'filter.x.clean', 'tr a-z A-Z']);
    repo.git(['config', 'filter.x.smudge', 'cat']);
    const s1 = await snapJson(repo);
    await onOwnIndex(repo, s1.session);
    assert.is(markers(repo).length, 1);
    repo.write('sub/.gitattributes', '');
    repo.write('.gitattributes', '*.up filter=x\n');
    repo.write('note.up', 'abc\n'); // the filter maps it to the previous blob
    const s2 = await snapJson(repo, ['--session', s1.session]);
    assertExactBytes(repo, s2.commit, 'note.up');
  } finally {
    repo.cleanup();
  }
});

test('an undo that brings an attributes file back ends the untracked-cache path', async () => {
  const repo = tempRepo({ files: { 'note.up': 'ABC\n' } });
  try {
    repo.git(['config', 'filter.x.clean', 'tr a-z A-Z']);
    repo.git(['config', 'filter.x.smudge', 'cat']);
    const s1 = await snapJson(repo);
    repo.write('.gitattributes', '*.up filter=x\n');
    await snapJson(repo, ['--session', s1.session]);
    fs.rmSync(path.join(repo.dir, '.gitattributes'));
    const s3 = await snapJson(repo, ['--session', s1.session]);
    await snapJson(repo, ['--session', s1.session]);
    assert.is(markers(repo).length, 1, 'no attributes again: back on the untracked-cache path');
    // Step s3 is the user's own checkpoint (a `snap`): taking it back needs --force.
    const undo = await cli(repo, ['undo', String(s3.step), '--session', s1.session, '--force']);
    assert.is(undo.code, 0, undo.stderr);
    assert.is(repo.read('.gitattributes').toString(), '*.up filter=x\n');
    // Same size, and the filter maps it to the stored blob: only a full scan records it.
    repo.write('note.up', 'abc\n');
    const later = new Date(Date.now() + 10_000); // a whole second apart from the stored stat data
    fs.utimesSync(path.join(repo.dir, 'note.up'), later, later);
    const s4 = await snapJson(repo, ['--session', s1.session]);
    assertExactBytes(repo, s4.commit, 'note.up');
    assertFsckClean(repo);
  } finally {
    repo.cleanup();
  }
});

test('git config that transforms content keeps the full scan', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const s1 = await snapJson(repo);
    await onOwnIndex(repo, s1.session);
    assert.is(markers(repo).length, 1);
    fs.mkdirSync(path.join(gitCommonDir(repo), 'info'), { recursive: true });
    fs.writeFileSync(path.join(gitCommonDir(repo), 'info', 'attributes'), '* text=auto\n');
    repo.write('a.txt', 'a\r\n');
    const s2 = await snapJson(repo, ['--session', s1.session]);
    assertExactBytes(repo, s2.commit, 'a.txt');
    repo.write('a.txt', 'a\n');
    const s3 = await snapJson(repo, ['--session', s1.session]);
    assertExactBytes(repo, s3.commit, 'a.txt');
  } finally {
    repo.cleanup();
  }
});

// git reads a global attributes file where core.attributesFile is not set ($XDG_CONFIG_HOME/git/attributes,
// else ~/.config/git/attributes): a file the user added under it holds a converted blob in the user's index,
// and a snapshot took that blob (and git's filtered refresh) for the file's bytes.
test('attributes from the global attributes file git reads by default keep the exact bytes', async () => {
  const repo = tempRepo({ files: { 'b.txt': 'b\n' } });
  try {
    fs.mkdirSync(path.join(repo.home, '.config', 'git'), { recursive: true });
    fs.writeFileSync(path.join(repo.home, '.config', 'git', 'attributes'), '*.txt text\n');
    repo.write('a.txt', 'one\r\ntwo\r\n');
    repo.git(['add', 'a.txt']);
    repo.git(['commit', '-q', '-m', 'crlf']);
    const s1 = await snapJson(repo);
    assertExactBytes(repo, s1.commit, 'a.txt');
    repo.write('c.txt', 'three\r\n');
    const s2 = await snapJson(repo, ['--session', s1.session]);
    assertExactBytes(repo, s2.commit, 'a.txt');
    assertExactBytes(repo, s2.commit, 'c.txt');
  } finally {
    repo.cleanup();
  }
});

test('a private index written after the last snapshot (a snapshot killed halfway) is reconciled as it is', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n', 'dir/b.txt': 'b\n' } });
  try {
    const first = await snapJson(repo);
    await onOwnIndex(repo, first.session);
    await snapJson(repo);
    assert.is(markers(repo).length, 1, 'on the untracked-cache path');
    // What a snapshot killed between its update-index and its write-tree leaves: an added entry no tree holds.
    repo.write('later-ignored.log', 'x\n');
    const index = path.join(gitCommonDir(repo), 'agentsnap', 'sessions', first.session, 'index');
    repo.git(['update-index', '--add', '--', 'later-ignored.log'], { env: { GIT_INDEX_FILE: index } });
    // Before the next snapshot, the file becomes ignored: only agentsnap's index has it, so it must drop out.
    repo.write('.gitignore', '*.log\n');
    const next = await snapJson(repo);
    assert.equal([...treeFiles(repo, next.commit).keys()].sort(), ['.gitignore', 'a.txt', 'dir/b.txt']);
    assertFsckClean(repo);
  } finally {
    repo.cleanup();
  }
});

// Issue 13, seed 203 of the generative test (server mode): a directory removed
// in the same timestamp tick as its parent's cached listing was listed as
// "unreadable" (git: could not open directory 'd/': No such file or directory),
// and the same staleness hides a new untracked file. git tells a directory
// changed since its cached listing by its stat data, and one changed in the
// same tick as the cached stat by the index file's mtime (racy, as for
// entries); update-index and write-tree rewrote the private index after the
// status that listed it, moving that mtime past the tick. The tick collision
// is made here with utimes (core.trustctime=false: ctime cannot be set).
test('a directory changed in the same tick as its cached listing is listed again (racy untracked cache)', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n', 'd/c.txt': 'c\n' } });
  try {
    repo.git(['config', 'core.trustctime', 'false']);
    const s1 = await snapJson(repo);
    await onOwnIndex(repo, s1.session);
    assert.is(markers(repo).length, 1);
    // A new directory (adding its file to the private index invalidates only that directory's cached listing).
    repo.write('gone/f.txt', 'f\n');
    // The root as changed half a second into the previous second: the status lists it with that stat.
    const tick = new Date((Math.floor(Date.now() / 1000) - 1) * 1000 + 500);
    fs.utimesSync(repo.dir, tick, tick);
    const s2 = await snapJson(repo, ['--session', s1.session]);
    assert.ok(treeFiles(repo, s2.commit).has('gone/f.txt'));
    // Changed again within that tick: a new file, a directory gone.
    repo.write('y.txt', 'y\n');
    fs.rmSync(path.join(repo.dir, 'gone'), { recursive: true });
    fs.utimesSync(repo.dir, tick, tick);
    const s3 = await snapJson(repo, ['--session', s1.session]);
    const files = treeFiles(repo, s3.commit);
    assert.ok(files.has('y.txt'), 'the new untracked file is recorded');
    assert.not.ok(files.has('gone/f.txt'));
    assert.equal(s3.skipped, [], 'nothing listed as left out');
  } finally {
    repo.cleanup();
  }
});

test.run();
