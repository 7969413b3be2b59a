// Issue 13: the user's git config must neither make snapshots impossible
// nor make them record something other than the disk. Clean filters are
// never run by a snapshot (it keeps raw bytes anyway), core.symlinks=false
// does not turn a plain file into a symlink entry, and core.ignoreCase=true
// on a case-sensitive filesystem does not hide an untracked file whose name
// differs from a tracked one only in case. The user's index, config and
// files stay as they are; the in-process path and the incremental engine
// give the full scan's results.
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cli, indexBytes, step, tempRepo, treeFiles, worktreeFiles, type TempRepo } from '../support/helpers.js';
import { blobAt, entryAt, snapJson } from '../support/snap-helpers.js';
import { openRepo } from '../../src/git/repo.js';
import { loadSettings } from '../../src/settings/settings.js';
import { snapshotTree } from '../../src/snapshot/snapshot.js';
import { removeTempIndex, tempIndex } from '../../src/snapshot/snapshot-now.js';
import { IncrementalSnapshotter } from '../../src/snapshot/incremental.js';

function configBytes(repo: TempRepo): Buffer {
  return fs.readFileSync(path.join(repo.dir, '.git', 'config'));
}

/** The full scan on a fresh index, a session snapshot (in-process path allowed) and the incremental engine agree with the disk. */
async function assertEveryPathReadsTheDisk(repo: TempRepo, skip: (rel: string) => boolean = () => false): Promise<void> {
  const r = await openRepo(repo.dir, { env: repo.env });
  const settings = await loadSettings(r);
  const want = worktreeFiles(repo, skip);
  const idx = tempIndex(r, 'gitcfg-reference');
  let full: string;
  try {
    full = (await snapshotTree(r, { indexFile: idx, settings, parentTree: null })).tree;
  } finally {
    removeTempIndex(idx);
  }
  assert.equal(treeFiles(repo, full), want, 'full scan');
  const sessionIndex = path.join(repo.base, 'session', 'index');
  const first = await snapshotTree(r, { indexFile: sessionIndex, settings, parentTree: null, untrackedCache: true });
  assert.is(first.tree, full, `session snapshot (declined: ${first.declined})`);
  const again = await snapshotTree(r, { indexFile: sessionIndex, settings, parentTree: first.tree, untrackedCache: true });
  assert.is(again.tree, full, 'session snapshot, next');
  const engine = await IncrementalSnapshotter.open(r, { runDir: path.join(repo.base, 'run'), settings });
  try {
    const a = await engine.snapshot({ settings, parentTree: null });
    assert.is(a.tree, full, `engine (${engine.stats.lastFullReason})`);
    const b = await engine.snapshot({ settings, parentTree: a.tree });
    assert.is(b.tree, full, `engine, next (${b.mode})`);
  } finally {
    await engine.close();
  }
}

test('a required clean filter that fails (git-lfs missing) does not stop snapshots: the user edit the agent overwrote comes back', async () => {
  const repo = tempRepo({ files: { '.gitattributes': '*.bin filter=lfs\n' } });
  try {
    repo.git(['config', 'filter.lfs.clean', 'cat']);
    repo.git(['config', 'filter.lfs.smudge', 'cat']);
    repo.git(['config', 'filter.lfs.required', 'true']);
    repo.write('model.bin', 'committed weights\n');
    repo.git(['add', '-A']);
    repo.git(['commit', '-q', '-m', 'lfs file']);
    repo.git(['config', 'filter.lfs.clean', 'git-lfs-not-installed clean -- %f']);
    repo.write('model.bin', 'the user retrained weights\n');
    const index = indexBytes(repo);
    const config = configBytes(repo);
    const snap = await cli(repo, ['snap']);
    assert.is(snap.code, 0, `snap fails: ${snap.stderr}`);
    await step(repo, () => repo.write('model.bin', 'overwritten by the agent\n'));
    const res = await cli(repo, ['undo']);
    assert.is(res.code, 0, res.stderr);
    assert.is(repo.read('model.bin').toString(), 'the user retrained weights\n');
    assert.equal(indexBytes(repo), index, "the user's index is untouched");
    assert.equal(configBytes(repo), config, "the user's config is untouched");
    await assertEveryPathReadsTheDisk(repo);
  } finally {
    repo.cleanup();
  }
});

test('snapshots and undo never run a clean or process filter (any driver, any case of its name) and keep the exact bytes', async () => {
  const repo = tempRepo({ files: { '.gitattributes': '*.up filter=Upper\n*.proc filter=proc\n', 'a.up': 'committed\n', 'b.proc': 'p\n' } });
  const marker = path.join(repo.base, 'filter-ran');
  try {
    // A filter that says when it runs, and turns content upper case (a snapshot must not hold its output).
    repo.git(['config', 'filter.Upper.clean', `sh -c 'echo clean >> "${marker}"; tr a-z A-Z'`]);
    repo.git(['config', 'filter.Upper.required', 'true']);
    repo.git(['config', 'filter.proc.process', `sh -c 'echo process >> "${marker}"; exit 1'`]);
    repo.git(['config', 'filter.proc.required', 'true']);
    repo.write('a.up', 'the user edit\n');
    repo.write('b.proc', 'user p\n');
    repo.write('new.up', 'untracked lower case\n');
    const index = indexBytes(repo);
    const { commit } = await snapJson(repo);
    assert.is(blobAt(repo, commit, 'a.up').toString(), 'the user edit\n');
    assert.is(blobAt(repo, commit, 'new.up').toString(), 'untracked lower case\n');
    await step(repo, () => {
      repo.write('a.up', 'agent\n');
      repo.write('b.proc', 'agent\n');
      repo.rm('new.up');
    });
    const res = await cli(repo, ['undo']);
    assert.is(res.code, 0, res.stderr);
    assert.is(repo.read('a.up').toString(), 'the user edit\n');
    assert.is(repo.read('b.proc').toString(), 'user p\n');
    assert.is(repo.read('new.up').toString(), 'untracked lower case\n');
    await assertEveryPathReadsTheDisk(repo);
    assert.not.ok(fs.existsSync(marker), `a filter ran: ${fs.existsSync(marker) ? fs.readFileSync(marker, 'utf8') : ''}`);
    assert.equal(indexBytes(repo), index, "the user's index is untouched");
  } finally {
    repo.cleanup();
  }
});

test('under core.symlinks=false, undo brings back a link file the agent overwrote', async () => {
  const repo = tempRepo({ files: { t: 'target\n' } });
  try {
    fs.symlinkSync('t', path.join(repo.dir, 'link'));
    repo.git(['add', 'link']);
    repo.git(['commit', '-q', '-m', 'link']);
    repo.git(['config', 'core.symlinks', 'false']);
    fs.rmSync(path.join(repo.dir, 'link'));
    repo.git(['checkout', '--', 'link']); // a plain file holding "t", as on a filesystem without symlinks
    assert.ok(fs.lstatSync(path.join(repo.dir, 'link')).isFile());
    const index = indexBytes(repo);
    await step(repo, () => repo.write('link', 'written by the agent\n'));
    const res = await cli(repo, ['undo', '--json']);
    assert.is(res.code, 0, res.stderr);
    const out = JSON.parse(res.stdout) as { files: { left: { path: string; reason: string }[] } };
    assert.equal(out.files.left, [], JSON.stringify(out.files.left));
    assert.ok(fs.lstatSync(path.join(repo.dir, 'link')).isFile(), 'still a plain file');
    assert.is(fs.readFileSync(path.join(repo.dir, 'link'), 'utf8'), 't');
    assert.equal(indexBytes(repo), index, "the user's index is untouched");
    assert.is(repo.git(['status', '--porcelain']), '', 'git sees the file as committed');
    await assertEveryPathReadsTheDisk(repo);
  } finally {
    repo.cleanup();
  }
});

test('under core.symlinks=false a real symlink and a plain file in place of one are each recorded as on disk', async () => {
  const repo = tempRepo({ files: { t: 'target\n' } });
  try {
    fs.symlinkSync('t', path.join(repo.dir, 'link'));
    repo.git(['add', 'link']);
    repo.git(['commit', '-q', '-m', 'link']);
    repo.git(['config', 'core.symlinks', 'false']);
    fs.symlinkSync('t', path.join(repo.dir, 'untracked-link'));
    const { commit } = await snapJson(repo);
    assert.is(entryAt(repo, commit, 'link')?.mode, '120000', 'a symlink on disk stays one');
    assert.is(entryAt(repo, commit, 'untracked-link')?.mode, '120000');
    fs.rmSync(path.join(repo.dir, 'link'));
    repo.write('link', 't');
    const next = await snapJson(repo);
    assert.is(entryAt(repo, next.commit, 'link')?.mode, '100644', 'a plain file is recorded as one');
    await assertEveryPathReadsTheDisk(repo);
  } finally {
    repo.cleanup();
  }
});

test('under core.ignoreCase=true on a case-sensitive filesystem, an untracked README.md beside readme.md comes back after the agent deletes it', async () => {
  const repo = tempRepo({ files: { 'readme.md': 'tracked\n' } });
  try {
    repo.git(['config', 'core.ignoreCase', 'true']);
    repo.write('README.md', 'the user notes\n');
    const index = indexBytes(repo);
    await assertEveryPathReadsTheDisk(repo);
    await step(repo, () => repo.rm('README.md'));
    const res = await cli(repo, ['undo']);
    assert.is(res.code, 0, res.stderr);
    assert.ok(repo.exists('README.md'), `README.md is gone: ${res.stdout}`);
    assert.is(repo.read('README.md').toString(), 'the user notes\n');
    assert.is(repo.read('readme.md').toString(), 'tracked\n');
    assert.equal(indexBytes(repo), index, "the user's index is untouched");
  } finally {
    repo.cleanup();
  }
});

test("under core.ignoreCase=true on a case-sensitive filesystem, an untracked cache the user's git built (which counts README.md as tracked) does not hide it", async () => {
  const repo = tempRepo({ files: { 'd/readme.md': 'tracked\n' } });
  try {
    repo.git(['config', 'core.ignoreCase', 'true']);
    repo.git(['config', 'core.untrackedCache', 'true']);
    repo.git(['config', 'status.showUntrackedFiles', 'all']); // the flags a snapshot's status uses: the cache fits
    repo.write('d/README.md', 'the user notes\n');
    const past = new Date(Date.now() - 60_000); // not racy: git trusts the cached listing of these directories
    for (const rel of ['d/README.md', 'd', '.']) fs.utimesSync(path.join(repo.dir, rel), past, past);
    repo.git(['status', '--porcelain']); // the user's git writes the cache into its index
    assert.is(repo.git(['status', '--porcelain']), '', "the user's git does not see README.md");
    const index = indexBytes(repo);
    const { commit } = await snapJson(repo);
    assert.is(blobAt(repo, commit, 'd/README.md').toString(), 'the user notes\n');
    repo.write('later.txt', 'l\n');
    const next = await snapJson(repo);
    assert.is(blobAt(repo, next.commit, 'd/README.md').toString(), 'the user notes\n');
    assert.equal(indexBytes(repo), index, "the user's index is untouched");
    await assertEveryPathReadsTheDisk(repo);
  } finally {
    repo.cleanup();
  }
});

test('under core.ignoreCase=true on a case-sensitive filesystem, a user directory .GIT does not make it look case-insensitive', async () => {
  const repo = tempRepo({ files: { 'src/a.txt': 'a\n' } });
  try {
    repo.git(['config', 'core.ignoreCase', 'true']);
    repo.write('.GIT/notes', 'mine\n');
    repo.write('src/A.txt', 'another file\n');
    const { commit } = await snapJson(repo);
    assert.is(blobAt(repo, commit, 'src/A.txt').toString(), 'another file\n');
    assert.is(blobAt(repo, commit, 'src/a.txt').toString(), 'a\n');
  } finally {
    repo.cleanup();
  }
});

// git reads integers as booleans (2, 1k: true): the snapshot must see the case rule git applies.
for (const value of ['2', '1k']) {
  test(`under core.ignoreCase=${value} (true to git) on a case-sensitive filesystem, an untracked README.md beside readme.md is in the snapshot`, async () => {
    const repo = tempRepo({ files: { 'readme.md': 'tracked\n' } });
    try {
      repo.git(['config', 'core.ignoreCase', value]);
      assert.is(repo.git(['config', '--bool', 'core.ignoreCase']).trim(), 'true');
      repo.write('README.md', 'the user notes\n');
      const { commit } = await snapJson(repo);
      assert.is(blobAt(repo, commit, 'README.md').toString(), 'the user notes\n');
      repo.write('later.txt', 'l\n');
      const next = await snapJson(repo);
      assert.is(blobAt(repo, next.commit, 'README.md').toString(), 'the user notes\n');
    } finally {
      repo.cleanup();
    }
  });
}

test.run();
