// In-process loose objects (src/git/objects.ts) and the persistent readers
// (cat-file, check-ignore): what they write is what git writes, byte for
// byte where git defines it, and git accepts it (fsck --strict).
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { tempRepo } from '../support/helpers.js';
import { openRepo } from '../../src/git/repo.js';
import { encodeCommit, encodeTree, objectStore, parseTree } from '../../src/git/objects.js';
import { ObjectReader } from '../../src/git/cat-file.js';
import { IgnoreChecker } from '../../src/git/check-ignore.js';
import { commitTree } from '../../src/git/plumbing.js';
import { readIndexPaths } from '../../src/git/index-file.js';

function objectFiles(dir: string): string[] {
  const out: string[] = [];
  for (const sub of fs.readdirSync(dir)) {
    const abs = path.join(dir, sub);
    if (!fs.statSync(abs).isDirectory()) continue;
    for (const name of fs.readdirSync(abs)) out.push(`${sub}/${name}`);
  }
  return out;
}

for (const objectFormat of ['sha1', 'sha256'] as const)
  test(`${objectFormat}: blobs, trees and commits written in-process are what git writes and pass fsck --strict`, async () => {
    const t = tempRepo({ files: { 'a.txt': 'a\n' }, objectFormat });
    try {
      const repo = await openRepo(t.dir, { env: t.env });
      const store = objectStore(repo);
      assert.ok(store, `a plain ${objectFormat} repository is writable in-process`);
      assert.is(store.objectFormat, objectFormat);
      const content = Buffer.from('hello\r\nwörld\0binary\n');
      const blob = store.write('blob', content);
      fs.writeFileSync(path.join(t.base, 'content'), content);
      assert.is(blob, t.git(['hash-object', '--no-filters', path.join(t.base, 'content')]).trim());
      const st = fs.statSync(path.join(repo.commonDir, 'objects', blob.slice(0, 2), blob.slice(2)));
      assert.is(st.mode & 0o222, 0, 'loose objects are read-only like git');
      const link = store.write('blob', Buffer.from('a.txt'));
      const exe = store.write('blob', Buffer.from('#!/bin/sh\n'));
      // Names that sort differently as directories: "a" (dir, sorts as "a/"), "a.b", "a-b", "a0".
      const sub = store.write('tree', encodeTree([{ mode: '100644', name: 'x', oid: blob }]));
      const tree = store.write(
        'tree',
        encodeTree([
          { mode: '100644', name: 'a.b', oid: blob },
          { mode: '40000', name: 'a', oid: sub },
          { mode: '100755', name: 'a-b', oid: exe },
          { mode: '120000', name: 'a0', oid: link },
          { mode: '100644', name: 'sp ace ü', oid: blob },
        ]),
      );
      const mktree = t
        .git(['mktree', '-z'], {
          input:
            [
              `100644 blob ${blob}\ta.b`,
              `040000 tree ${sub}\ta`,
              `100755 blob ${exe}\ta-b`,
              `120000 blob ${link}\ta0`,
              `100644 blob ${blob}\tsp ace ü`,
            ].join('\0') + '\0',
        })
        .trim();
      assert.is(tree, mktree, 'encodeTree orders entries like git (directories as name + "/")');
      const reader = new ObjectReader(repo);
      try {
        const read = await reader.read(tree);
        assert.is(read.type, 'tree');
        assert.equal(
          parseTree(read.body, objectFormat).map((e) => e.name),
          ['a-b', 'a.b', 'a', 'a0', 'sp ace ü'],
        );
        assert.equal(parseTree(read.body, objectFormat).find((e) => e.name === 'a')?.oid, sub);
        assert.equal((await reader.read(blob)).body, content);
        await reader.read('0'.repeat(blob.length)).then(
          () => assert.unreachable('a missing object is an error'),
          (e: Error) => assert.match(e.message, /missing/),
        );
        assert.equal((await reader.read(link)).body.toString(), 'a.txt', 'the reader goes on after a missing object');
      } finally {
        await reader.close();
      }
      // The same commit as commit-tree, for the same inputs and dates.
      const date = 1_700_000_000;
      const message = 'agentsnap: step 1\n\nAgentsnap-Session: s1\nAgentsnap-Step: 1\n';
      const viaGit = await commitTree(
        {
          ...repo,
          git: (args, o = {}) =>
            repo.git(args, {
              ...o,
              extraEnv: { ...(o.extraEnv ?? {}), GIT_AUTHOR_DATE: `${date} +0200`, GIT_COMMITTER_DATE: `${date + 5} -0130` },
            }),
        },
        { tree, parents: [t.git(['rev-parse', 'HEAD']).trim()], message },
      );
      const inProcess = store.write(
        'commit',
        encodeCommit({
          tree,
          parents: [t.git(['rev-parse', 'HEAD']).trim()],
          author: { time: date, tz: '+0200' },
          committer: { time: date + 5, tz: '-0130' },
          message,
        }),
      );
      assert.is(inProcess, viaGit, 'encodeCommit + write gives the oid of git commit-tree');
      t.git(['update-ref', 'refs/agentsnap/test', inProcess]);
      t.git(['fsck', '--strict', '--no-dangling']);
      assert.match(t.git(['cat-file', '-p', tree]), new RegExp(`120000 blob ${link}\ta0`));
      assert.is(t.git(['cat-file', '-p', exe]), '#!/bin/sh\n');
      assert.equal(
        objectFiles(path.join(repo.commonDir, 'objects')).filter((f) => f.includes('tmp_')),
        [],
        'no temporary object file is left behind',
      );
      // Writing again is a no-op.
      assert.is(store.write('blob', content), blob);
    } finally {
      t.cleanup();
    }
  });

test("a fan-out directory that git's prune removes between its mkdir and the write: created again, the object written (as git does)", async () => {
  const t = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    // `git prune`/`prune-packed` of another process removes empty objects/xx directories at any moment.
    const rmdir = 'find .git/objects -mindepth 1 -maxdepth 1 -type d -name "[0-9a-f][0-9a-f]" -empty -delete';
    const repo = await openRepo(t.dir, {
      env: { ...t.env, AGENTSNAP_TEST_POINT: 'object-write.before-open', AGENTSNAP_TEST_POINT_RUN: rmdir },
    });
    const store = objectStore(repo);
    assert.ok(store);
    for (let i = 0; i < 8; i++) {
      const oid = store.write('blob', Buffer.from(`a fresh blob ${i}\n`));
      assert.is(t.git(['cat-file', 'blob', oid]), `a fresh blob ${i}\n`);
    }
  } finally {
    t.cleanup();
  }
});

test('objectStore declines where git would write differently', async () => {
  const t = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    t.git(['config', 'core.sharedRepository', 'group']);
    assert.is(objectStore(await openRepo(t.dir, { env: t.env })), null, 'shared repository');
    t.git(['config', '--unset', 'core.sharedRepository']);
    t.git(['config', 'core.fsync', 'loose-object']);
    assert.is(objectStore(await openRepo(t.dir, { env: t.env })), null, 'fsync of loose objects asked for');
    t.git(['config', '--unset', 'core.fsync']);
    assert.ok(objectStore(await openRepo(t.dir, { env: t.env })));
  } finally {
    t.cleanup();
  }
});

test('index files of versions 2, 3 and 4 are read like ls-files reads them', async () => {
  const t = tempRepo({ files: { 'a.txt': 'a\n', 'dir/b c.txt': 'b\n', 'dir/sub/ünï.txt': 'u\n', 'dir/sub/zz': 'z\n', e: 'e\n' } });
  try {
    const indexFile = path.join(t.dir, '.git', 'index');
    for (const version of ['2', '3', '4']) {
      t.git(['update-index', '--index-version', version]);
      const want = t.git(['ls-files', '-z']).split('\0').filter(Boolean);
      const got = readIndexPaths(indexFile, t.objectFormat);
      assert.ok(got, `version ${version} is read`);
      assert.equal(got.paths, want, `version ${version}`);
      assert.is(got.unsupported, null);
    }
    t.write('new.txt', 'n\n');
    t.git(['add', '-N', 'new.txt']); // intent-to-add: an extended entry (version 3)
    assert.equal(readIndexPaths(indexFile, t.objectFormat)?.paths, t.git(['ls-files', '-z']).split('\0').filter(Boolean));
    t.git(['update-index', '--assume-unchanged', 'a.txt']);
    assert.match(readIndexPaths(indexFile, t.objectFormat)?.unsupported ?? '', /assume-unchanged/);
    t.git(['update-index', '--no-assume-unchanged', 'a.txt']);
    t.git(['update-index', '--skip-worktree', 'e']);
    assert.match(readIndexPaths(indexFile, t.objectFormat)?.unsupported ?? '', /skip-worktree/);
    t.git(['update-index', '--no-skip-worktree', 'e']);
    t.git(['update-index', '--add', '--cacheinfo', `160000,${t.git(['rev-parse', 'HEAD']).trim()},sub`]);
    assert.match(readIndexPaths(indexFile, t.objectFormat)?.unsupported ?? '', /gitlink/);
    t.git(['update-index', '--split-index']);
    assert.is(readIndexPaths(indexFile, t.objectFormat), null, 'a split index is left to git');
  } finally {
    t.cleanup();
  }
});

test('the ignore checker agrees with ls-files -o --exclude-standard (negations, excluded parents, info/exclude, excludesFile)', async () => {
  const t = tempRepo({ files: { 'keep.txt': 'k\n' } });
  try {
    t.write('.gitignore', '*.log\n!important.log\nbuild/\nout\n/rooted.txt\ndeep/**/x.tmp\n');
    t.write('sub/.gitignore', '!*.log\nlocal.txt\n');
    t.write('build/.gitignore', '!keep.o\n');
    t.write('.git/info/exclude', 'excluded-by-info\n');
    t.write('../home/ignore-global', 'global-ignored\n');
    t.git(['config', 'core.excludesFile', path.join(t.home, 'ignore-global')]);
    const files = [
      'a.log',
      'important.log',
      'sub/a.log',
      'sub/local.txt',
      'sub/ok.txt',
      'build/x.o',
      'build/keep.o',
      'out',
      'dir/out/f',
      'rooted.txt',
      'sub/rooted.txt',
      'deep/a/b/x.tmp',
      'deep/x.tmp',
      'excluded-by-info',
      'sub/excluded-by-info/f',
      'global-ignored',
      'spa ce.txt',
      'ünï.log',
      'ünï.txt',
    ];
    for (const f of files) t.write(f, 'x');
    const listed = new Set(t.git(['ls-files', '-z', '-o', '--exclude-standard']).split('\0').filter(Boolean));
    const repo = await openRepo(t.dir, { env: t.env });
    const checker = new IgnoreChecker(repo);
    try {
      const ignored = await checker.ignored(files);
      for (const f of files) assert.is(!ignored.has(f), listed.has(f), `${f}: check-ignore and ls-files -o disagree`);
      assert.ok(await checker.isIgnored('build'), 'an ignored directory');
      assert.not.ok(await checker.isIgnored('sub'));
    } finally {
      await checker.close();
    }
  } finally {
    t.cleanup();
  }
});

test.run();
