// src/git/index-file.ts reads the user's index in chunks (issue 19: a 1M-entry
// index is ~140 MB): whatever the chunk size, every index version gives the
// paths git lists, in its order, and the same facts about the entries.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import path from 'node:path';
import { tempRepo } from '../support/helpers.js';
import { forEachIndexName, readIndexFlags, readIndexPaths } from '../../src/git/index-file.js';

function filesOf(n: number): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < n; i++) {
    // Names of many lengths (padding to 8 bytes in versions 2 and 3), deep and shallow, shared prefixes (version 4).
    const long = 'x'.repeat((i * 37) % 200);
    files[`d${i % 7}/sub${i % 3}/f${i}-${long}.txt`] = `${i}\n`;
    if (i % 10 === 0) files[`top-${i}.md`] = `${i}\n`;
  }
  files['é/ü-名前.txt'] = 'utf8\n';
  return files;
}

for (const version of ['2', '3', '4']) {
  test(`index version ${version}: the paths of ls-files at every chunk size`, () => {
    const t = tempRepo({ files: filesOf(200) });
    t.git(['update-index', '--index-version', version]);
    if (version === '3') t.git(['update-index', '--skip-worktree', 'top-0.md']); // an extended entry
    // Names of 0xfff bytes and more: their length is not in the entry's flags (the walk scans for the NUL).
    const blob = t.git(['hash-object', '-w', '--stdin'], { input: 'long\n' }).trim();
    for (const len of [0xffe, 0xfff, 0x1000, 4300]) {
      const name = `long/${'n'.repeat(200)}/`.repeat(30).slice(0, len - 2) + `${len % 10}.t`.slice(-2);
      t.git(['update-index', '--add', '--cacheinfo', `100644,${blob},${name}`]);
    }
    const file = path.join(t.dir, '.git', 'index');
    const want = t.git(['ls-files', '-z']).split('\0').filter(Boolean);
    for (const chunk of [64, 65, 100, 333, 1000, 4096, 1 << 20]) {
      const got: string[] = [];
      const res = forEachIndexName(file, t.objectFormat, (b, start, end) => got.push(b.toString('utf8', start, end)), chunk);
      assert.ok(res, `chunk ${chunk}`);
      assert.equal(got, want, `chunk ${chunk}`);
      assert.equal(res.unsupported, version === '3' ? 'skip-worktree entry in the index (sparse checkout): top-0.md' : null);
    }
    assert.equal(readIndexPaths(file, t.objectFormat)?.paths, want);
    assert.equal(
      readIndexFlags(file, t.objectFormat)?.skipWorktree.map((b) => b.toString()),
      version === '3' ? ['top-0.md'] : [],
    );
  });
}

test('a truncated index is not read (null: the caller asks git)', async () => {
  const t = tempRepo({ files: filesOf(50) });
  const file = path.join(t.dir, '.git', 'index');
  const fs = await import('node:fs');
  const bytes = fs.readFileSync(file);
  fs.writeFileSync(file, bytes.subarray(0, Math.floor(bytes.length / 2)));
  for (const chunk of [64, 1000, 1 << 20])
    assert.is(
      forEachIndexName(file, t.objectFormat, () => undefined, chunk),
      null,
    );
});

test('a split index is not read (null: the caller asks git), and no entry is given with an empty name', () => {
  const t = tempRepo({ files: filesOf(30) });
  t.git(['update-index', '--split-index']);
  t.write('top-0.md', 'changed\n');
  t.git(['add', 'top-0.md']); // replaced in the split index: an entry with no name
  const file = path.join(t.dir, '.git', 'index');
  for (const chunk of [64, 1 << 20]) {
    const got: string[] = [];
    assert.is(
      forEachIndexName(file, t.objectFormat, (b, start, end) => got.push(b.toString('utf8', start, end)), chunk),
      null,
    );
    assert.ok(!got.includes(''), `chunk ${chunk}: an empty name`);
  }
});

test.run();
