import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cli, indexBytes, refsUnder, tempRepo, treeFiles } from '../support/helpers.js';

test('snap checkpoints the worktree into refs/agent/<session>/<n> without touching the index', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    repo.write('a.txt', 'two\n');
    repo.write('new.txt', 'new\n');
    const before = indexBytes(repo);
    const res = await cli(repo, ['snap', '--json']);
    assert.is(res.code, 0, res.stderr);
    const out = JSON.parse(res.stdout) as { session: string; step: number; commit: string };
    assert.is(out.step, 1);
    const refs = refsUnder(repo, 'refs/agent/');
    assert.is(refs.get(`refs/agent/${out.session}/1`), out.commit);
    assert.ok(refs.has(`refs/agent/${out.session}/0`));
    const files = treeFiles(repo, out.commit);
    assert.is(files.get('a.txt')?.content.toString(), 'two\n');
    assert.is(files.get('new.txt')?.content.toString(), 'new\n');
    assert.equal(indexBytes(repo), before);
  } finally {
    repo.cleanup();
  }
});

test.run();
