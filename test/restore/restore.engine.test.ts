// The one restore engine (src/restore/restore.ts) as apply and new worktrees use it:
// everything checked before the first write, exact bytes despite checkout filters.
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cli, refsUnder, tempRepo } from '../support/helpers.js';
import { openRepo } from '../../src/git/repo.js';
import { createSessionWorktree, startWorktreeSession } from '../../src/worktrees/worktree.js';

test('apply refuses before the first write when a directory holding a file not in the snapshot is in the way', async () => {
  const r = tempRepo({ files: { 'a.txt': 'a\n', '.gitignore': '*.log\n' } });
  try {
    const repo = await openRepo(r.dir, { env: r.env });
    const wt = (await startWorktreeSession(repo, { session: 'e1' })).meta.path;
    fs.writeFileSync(path.join(wt, 'a.txt'), 'by the agent\n');
    fs.writeFileSync(path.join(wt, 'out'), 'a file named out\n');
    assert.is((await cli(r, ['snap', '--session', 'e1'], { cwd: wt })).code, 0);
    // Meanwhile the user has a directory `out/` holding only an ignored file.
    r.write('out/build.log', 'keep me\n');
    const res = await cli(r, ['apply', 'e1']);
    assert.is(res.code, 4, res.stderr);
    assert.match(res.stderr, 'out');
    assert.is(r.read('a.txt').toString(), 'a\n', 'nothing was written, not even the paths that were fine');
    assert.is(r.read('out/build.log').toString(), 'keep me\n');
    assert.is(refsUnder(r, 'refs/agentsnap/safety/').size, 0, 'no safety snapshot either');
    // Once it is out of the way, apply goes through.
    r.rm('out');
    assert.is((await cli(r, ['apply', 'e1'])).code, 0);
    assert.is(r.read('a.txt').toString(), 'by the agent\n');
    assert.is(r.read('out').toString(), 'a file named out\n');
  } finally {
    r.cleanup();
  }
});

test('a worktree started from the current state gets the exact bytes even where the checkout wrote others', async () => {
  // What git's checkout writes may differ from the blob (eol and smudge filters, or here a post-checkout hook):
  // the files you changed still arrive exactly as you have them.
  const r = tempRepo({ files: { 'a.txt': 'one\n', 'b.txt': 'b\n' } });
  try {
    r.write('.git/hooks/post-checkout', '#!/bin/sh\necho "checkout was here" >> a.txt\n', 0o755);
    r.write('a.txt', 'two\n');
    r.write('new.txt', 'new\n');
    const repo = await openRepo(r.dir, { env: r.env });
    const created = await createSessionWorktree(repo, { session: 'e2' });
    assert.is(fs.readFileSync(path.join(created.meta.path, 'a.txt'), 'utf8'), 'two\n');
    assert.is(fs.readFileSync(path.join(created.meta.path, 'new.txt'), 'utf8'), 'new\n');
  } finally {
    r.cleanup();
  }
});

test.run();
