// A .gitmodules git cannot parse (an agent wrote garbage into it, or made it a link to another file) while a
// nested repository's commit changes: git's diff reads the worktree's .gitmodules for submodule settings and
// dies ("bad config line 1 in file .gitmodules"), which made the post snapshot fail and the step unprotected
// (found by the generative test, seed 41003, run 32). agentsnap's diffs ask for every gitlink change outright
// (--ignore-submodules=none), which reads no .gitmodules.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { cli, tempRepo, USER_IDENTITY } from '../support/helpers.js';

test('a step that moves a nested repository while .gitmodules is unparsable is recorded and shown; undo puts the file back', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const nest = path.join(repo.dir, 'nest');
    fs.mkdirSync(nest);
    const inNest = (args: string[]) => repo.git(args, { cwd: nest, env: USER_IDENTITY });
    inNest(['init', '-q', `--object-format=${repo.objectFormat}`]);
    fs.writeFileSync(path.join(nest, 'n.txt'), 'n\n');
    inNest(['add', 'n.txt']);
    inNest(['commit', '-qm', 'n']);
    assert.is((await cli(repo, ['snap', '-q'])).code, 0);
    const pre = await cli(repo, ['snap', '--phase', 'pre', '--tool', 'Bash', '-q']);
    assert.is(pre.code, 0, pre.stderr);
    fs.writeFileSync(path.join(nest, 'n.txt'), 'm\n');
    inNest(['commit', '-qam', 'm']);
    repo.write('.gitmodules', 'garbage [[[ not config\n');
    const post = await cli(repo, ['snap', '--phase', 'post']);
    assert.is(post.code, 0, post.stderr);
    assert.not.match(post.stderr, /failed|unprotected/);
    const log = await cli(repo, ['log', '--json']);
    const steps = JSON.parse(log.stdout) as { step: number; status: string; changed: { path: string }[] }[];
    const last = steps[steps.length - 1]!;
    assert.is(last.status, 'done');
    assert.equal(last.changed.map((c) => c.path).sort(), ['.gitmodules', 'nest']);
    const show = await cli(repo, ['show', String(last.step), '--stat']);
    assert.is(show.code, 0, show.stderr);
    const undo = await cli(repo, ['undo', '--force']);
    assert.is(undo.code, 0, undo.stderr);
    assert.not.ok(repo.exists('.gitmodules'));
  } finally {
    repo.cleanup();
  }
});

test.run();
