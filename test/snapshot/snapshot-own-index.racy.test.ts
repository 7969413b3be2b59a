// A session's own private index (snapshotThroughIndex: after an undo's safety snapshot, after any fallback from the
// in-process path) holds the stat data git recorded when its status, update-index or add read a file. A file then
// written again in place, same size, its mtime put back (utimes, touch -d, cp -p, rsync -a), within the second of
// the ctime git recorded, keeps that stat data: git trusts it by its stat data (an old mtime is no racy entry) and
// the next snapshot records the old bytes. Made without a clock, as in snapshot-in-process.test.ts: a new inode
// (written aside and renamed) is the stat change git records, core.trustctime=false stands for the ctime's second.
// What a user observes: the snapshot's tree holds the bytes on disk (`git hash-object` of the file).
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { tempRepo, untilClockPast, type TempRepo } from '../support/helpers.js';
import { openRepo, type Repo } from '../../src/git/repo.js';
import { loadSettings, type Settings } from '../../src/settings/settings.js';
import { snapshotTree, type TreeSnapshotResult } from '../../src/snapshot/snapshot.js';
import { oldestUnlikeMtime, readIndexFacts } from '../../src/git/index-file.js';
import { recordApplied } from '../../src/restore/restore.js';

interface Ctx {
  t: TempRepo;
  repo: Repo;
  settings: Settings;
  index: string;
  abs: string;
  old: Date;
}

async function setup(config: string[][]): Promise<Ctx> {
  const t = tempRepo({ files: { 'a.txt': 'a\n', 'run.sh': 'AAAA\n' } });
  for (const kv of config) t.git(['config', ...kv]);
  const repo = await openRepo(t.dir, { env: t.env });
  const settings = await loadSettings(repo);
  const abs = path.join(t.dir, 'run.sh');
  const old = new Date(Date.now() - 60_000);
  fs.utimesSync(abs, old, old);
  t.git(['update-index', '--refresh']);
  return { t, repo, settings, index: path.join(t.base, 'session', 'index'), abs, old };
}

const snap = (c: Ctx, parentTree: string | null, untrackedCache = true): Promise<TreeSnapshotResult> =>
  snapshotTree(c.repo, { indexFile: c.index, settings: c.settings, parentTree, untrackedCache });

/** The same bytes under a new inode, mtime put back: stat-dirty, so git re-reads it and records its stat data. */
function sameBytesNewInode(c: Ctx): void {
  const bytes = fs.readFileSync(c.abs);
  fs.writeFileSync(`${c.abs}.new`, bytes);
  fs.utimesSync(`${c.abs}.new`, c.old, c.old);
  fs.renameSync(`${c.abs}.new`, c.abs);
}

/** Written again in place, same size, mtime put back: the stat data git recorded stays as it is. */
function rewriteKeepingStat(c: Ctx, content: string): void {
  fs.writeFileSync(c.abs, content);
  fs.utimesSync(c.abs, c.old, c.old);
}

function assertHoldsDisk(c: Ctx, res: TreeSnapshotResult, label: string): void {
  const onDisk = c.t.git(['hash-object', '--no-filters', 'run.sh']).trim();
  const inTree = c.t.git(['rev-parse', `${res.tree}:run.sh`]).trim();
  assert.is(inTree, onDisk, `${label}: the snapshot holds the bytes on disk (${fs.readFileSync(c.abs, 'utf8').trim()})`);
}

// (Not under core.checkStat=minimal: git then compares only mtime seconds, size and mode, so the new inode is no
// stat change and the user's own index trusts the rewrite as well.)
{
  test(`the session's own index re-reads an entry git refreshed that was rewritten with its stat data kept`, async () => {
    const c = await setup([['core.trustctime', 'false']]);
    try {
      // An undo's safety snapshot (no untracked cache) makes the index the session's own.
      const s0 = await snap(c, null, false);
      assert.not.ok(fs.existsSync(`${c.index}.user-copy`), 'the index is the session own');
      // Its full path (diff-files, update-index) records the new stat data.
      sameBytesNewInode(c);
      const s1 = await snap(c, s0.tree);
      assertHoldsDisk(c, s1, 'first snapshot');
      rewriteKeepingStat(c, 'BBBB\n');
      const s2 = await snap(c, s1.tree);
      assertHoldsDisk(c, s2, 'after the rewrite (full path)');
      assert.equal(
        s2.changed.map((x) => `${x.change} ${x.path}`),
        ['M run.sh'],
      );
      // Through status on the index (the marker path): its refresh records the stat data.
      sameBytesNewInode(c);
      const s3 = await snap(c, s2.tree);
      assertHoldsDisk(c, s3, 'status refresh');
      rewriteKeepingStat(c, 'CCCC\n');
      const s4 = await snap(c, s3.tree);
      assertHoldsDisk(c, s4, 'after the rewrite (status path)');
      // A snapshot without the untracked cache (undo's safety snapshot) records it too.
      sameBytesNewInode(c);
      const s5 = await snap(c, s4.tree, false);
      assertHoldsDisk(c, s5, 'safety snapshot');
      rewriteKeepingStat(c, 'DDDD\n');
      const s6 = await snap(c, s5.tree);
      assertHoldsDisk(c, s6, 'after the rewrite (after a safety snapshot)');
      // A later snapshot with nothing changed moves no reference past it: rewritten again, still read.
      const s7 = await snap(c, s6.tree);
      rewriteKeepingStat(c, 'EEEE\n');
      const s8 = await snap(c, s7.tree);
      assertHoldsDisk(c, s8, 'rewritten after a snapshot that changed nothing');
    } finally {
      c.t.cleanup();
    }
  });
}

// `trustctime =` (empty; what `git config core.trustctime ""` writes) is false to git: no ctime compared, so the
// reference must count what it counts under core.trustctime=false, not only the entries with a recent ctime.
test(`the session's own index re-reads a rewritten entry with its stat data kept under an empty core.trustctime`, async () => {
  const c = await setup([['core.trustctime', '']]);
  try {
    assert.is(c.t.git(['config', '--bool', 'core.trustctime']).trim(), 'false');
    const s0 = await snap(c, null, false);
    sameBytesNewInode(c);
    const s1 = await snap(c, s0.tree);
    // Through status on the index (the marker path): its refresh records the stat data of a file whose ctime is
    // older than any the reference counts as recent (the clock waited for, no race).
    sameBytesNewInode(c);
    await untilClockPast(fs.statSync(c.abs).ctimeMs + 4100);
    const s2 = await snap(c, s1.tree);
    assertHoldsDisk(c, s2, 'status refresh');
    rewriteKeepingStat(c, 'BBBB\n');
    const s3 = await snap(c, s2.tree);
    assertHoldsDisk(c, s3, 'after the rewrite');
  } finally {
    c.t.cleanup();
  }
});

// An undo: its safety snapshot re-reads the file into the session's index, the restore writes its paths and
// recordApplied writes them into that index (update-index, write-tree: a new index file, its mtime now, the reference
// the safety snapshot left gone); the file then rewritten with its stat data kept is read by the next snapshot.
test(`the session's own index keeps its racy reference through an undo's recordApplied`, async () => {
  const c = await setup([['core.trustctime', 'false']]);
  try {
    const s0 = await snap(c, null);
    sameBytesNewInode(c);
    const safety = await snap(c, s0.tree, false);
    assertHoldsDisk(c, safety, 'safety snapshot');
    // The restore: a.txt back to other bytes, on disk and in the index.
    const from = c.t.git(['rev-parse', `${safety.tree}:a.txt`]).trim();
    c.t.write('a.txt', 'restored\n');
    const to = c.t.git(['hash-object', '-w', '--no-filters', 'a.txt']).trim();
    const applied = await recordApplied(c.repo, c.index, [
      { path: 'a.txt', from: { mode: '100644', oid: from }, to: { mode: '100644', oid: to } },
    ]);
    rewriteKeepingStat(c, 'BBBB\n');
    const next = await snap(c, applied);
    assertHoldsDisk(c, next, 'the snapshot after the undo');
  } finally {
    c.t.cleanup();
  }
});

// The walk under core.trustctime=false: entries whose stat data is not the user's index's entry of that name, and
// entries the user's index lacks, count; entries the user's index holds as they are, and entries only it has, do not.
// A split index (core.splitIndex, `update-index --split-index`) is not read in-process: the walk that sets the
// reference back could not read a private index git kept split, and the hole above stayed open there.
test("under a split index, the session's index is written whole and re-reads an entry rewritten with its stat data kept; no shared index of its own in .git", async () => {
  const c = await setup([
    ['core.trustctime', 'false'],
    ['core.splitIndex', 'true'],
  ]);
  try {
    c.t.git(['update-index', '--split-index']);
    const gitDir = path.join(c.t.dir, '.git');
    const shared = () =>
      fs
        .readdirSync(gitDir)
        .filter((f) => f.startsWith('sharedindex.'))
        .sort();
    const userIndex = fs.readFileSync(path.join(gitDir, 'index'));
    const sharedBefore = shared();
    assert.ok(sharedBefore.length >= 1, "the user's index is split");
    const s0 = await snap(c, null);
    sameBytesNewInode(c);
    const s1 = await snap(c, s0.tree);
    assertHoldsDisk(c, s1, 'first snapshot');
    rewriteKeepingStat(c, 'BBBB\n');
    const s2 = await snap(c, s1.tree);
    assertHoldsDisk(c, s2, 'after the rewrite');
    assert.ok(readIndexFacts(c.index, c.t.objectFormat), 'the private index is not split (read in-process)');
    assert.equal(shared(), sharedBefore, 'no shared index file written into .git');
    assert.ok(fs.readFileSync(path.join(gitDir, 'index')).equals(userIndex), "the user's index is byte-identical");
  } finally {
    c.t.cleanup();
  }
});

test('oldestUnlikeMtime: by name, across indexes that hold different entries', () => {
  const t = tempRepo({ files: { 'a.txt': 'a\n', 'c/d.txt': 'd\n', 'e.txt': 'e\n', 'z.txt': 'z\n' } });
  try {
    const at = (rel: string, s: number) => fs.utimesSync(path.join(t.dir, rel), new Date(s * 1000), new Date(s * 1000));
    for (const [rel, s] of [
      ['a.txt', 1000],
      ['c/d.txt', 2000],
      ['e.txt', 3000],
      ['z.txt', 4000],
    ] as const)
      at(rel, s);
    t.git(['update-index', '--refresh']);
    const priv = path.join(t.base, 'priv-index');
    fs.copyFileSync(path.join(t.dir, '.git', 'index'), priv);
    const env = { GIT_INDEX_FILE: priv };
    t.git(['update-index', '--index-version', '4'], { env });
    const user = path.join(t.dir, '.git', 'index');
    assert.is(oldestUnlikeMtime(priv, t.objectFormat, user), Infinity, 'the same stat data (v4 against v2)');
    t.write('b.txt', 'b\n');
    at('b.txt', 5000);
    t.git(['update-index', '--add', 'b.txt'], { env });
    assert.is(oldestUnlikeMtime(priv, t.objectFormat, user), 5000, 'an entry the user does not track');
    at('e.txt', 2500);
    t.git(['update-index', 'e.txt'], { env });
    assert.is(oldestUnlikeMtime(priv, t.objectFormat, user), 2500, 'an entry whose stat data differs');
    t.git(['update-index', '--force-remove', 'z.txt', 'a.txt'], { env });
    assert.is(oldestUnlikeMtime(priv, t.objectFormat, user), 2500, 'entries only the user has do not count');
    assert.is(oldestUnlikeMtime(user, t.objectFormat, priv), 1000, 'the other way round: a.txt, which the other lacks');
  } finally {
    t.cleanup();
  }
});

test.run();
