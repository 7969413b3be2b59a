// A nested repository's `git init` stopped by a full disk (generative seed 2903, shrunk by hand): it leaves
// nest/.git with hooks/ and no HEAD, which git does not take for a repository (`git add -A` reads nest as a
// plain directory, its .git left out), so no snapshot records a gitlink there, in either mode. Replayed
// through the generative harness (test/support/nothing-lost.ts): its ground truth once took any .git for a
// nested repository and named the superproject's HEAD as its commit. The repository lives on a tmpfs (root).
import { test } from 'uvu';
import { FAMILIES, diskFullUnavailable, runSequence, type Op } from '../support/nothing-lost.js';

test('a nested git init stopped by a full disk is a plain directory, as git reads it: no gitlink (off, bgserver)', async () => {
  if (diskFullUnavailable) {
    console.log(`  (skipped: ${diskFullUnavailable})`);
    return;
  }
  const ops: Op[] = [
    { t: 'fill', level: 1 }, // 8 KiB left: git init copies a few hook samples, then ENOSPC
    { t: 'nested', k: 'commit', c: 4 }, // no nest yet: git init nest, stopped half-way
    { t: 'free' },
    { t: 'call', tool: 'Bash', edits: [{ k: 'append', f: 4, c: 4 }], during: null, fail: false, gc: null }, // its pre snapshot: no gitlink
    { t: 'nested', k: 'commit', c: 0 }, // the half-made nest is made again (git init, n.txt, no commit)
    { t: 'call', tool: 'Write', edits: [{ k: 'write', p: 0, c: 1 }], during: null, fail: false, gc: null },
    { t: 'nested', k: 'commit', c: 1 }, // a commit in nest: a gitlink from now on
    { t: 'call', tool: 'Write', edits: [{ k: 'write', p: 1, c: 0 }], during: null, fail: false, gc: null },
  ];
  for (const mode of ['off', 'bgserver'] as const) await runSequence(mode, [...FAMILIES], ops, undefined, 'sha1');
});

test.run();
