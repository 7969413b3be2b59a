import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cli, tempRepo, treeFiles } from '../support/helpers.js';

// git re-hashes index entries modified in the same second as the index file was
// written ("racy git"), judged by the index file's mtime. A copy of the index
// with a fresh mtime hides such an edit unless the copy keeps the mtime.
test('a private index seeded from the user index keeps racy-git protection', async () => {
  const r = tempRepo({ files: { 'a.txt': 'base\n' } });
  try {
    r.git(['config', 'core.trustctime', 'false']);
    const file = path.join(r.dir, 'a.txt');
    const t = new Date(Math.floor(Date.now() / 1000 - 100) * 1000);
    fs.utimesSync(file, t, t);
    r.git(['add', 'a.txt']);
    const index = path.join(r.dir, '.git', 'index');
    fs.utimesSync(index, t, t); // the index was written in the same second as the entry
    fs.writeFileSync(file, 'user\n'); // same size, same second: only the racy check finds it
    fs.utimesSync(file, t, t);
    assert.match(r.git(['status', '--porcelain'], { env: { GIT_OPTIONAL_LOCKS: '0' } }), 'M a.txt', 'git itself sees the change');
    const res = await cli(r, ['snap', '--json']);
    assert.is(res.code, 0, res.stderr);
    const out = JSON.parse(res.stdout) as { commit: string };
    assert.is(treeFiles(r, out.commit).get('a.txt')?.content.toString(), 'user\n');
  } finally {
    r.cleanup();
  }
});

test.run();
