// agentsnap packs its own objects now and then: loose objects stay bounded,
// no temporary packs are left, and the repository stays consistent.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { tempRepo } from './helpers.js';
import { assertFsckClean, leftovers, looseObjects, snapJson } from './snap-helpers.js';
import { PACK_EVERY } from '../src/maintenance.js';

test(`after ${PACK_EVERY} snapshots agentsnap's objects are packed; fsck clean; no tmp packs`, async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const first = await snapJson(repo);
    let last = first;
    for (let i = 0; i < PACK_EVERY + 2; i++) {
      repo.write(`f${i % 7}.txt`, `${i}\n`);
      last = await snapJson(repo, ['--session', first.session]);
    }
    const loose = looseObjects(repo);
    assert.ok(loose.size < 40, `${loose.size} loose objects left`);
    assert.match(repo.git(['count-objects', '-v']), /packs: [1-9]/);
    assert.is(repo.git(['cat-file', '-t', last.commit]).trim(), 'commit');
    // Every snapshot is still readable.
    const steps = repo.git(['for-each-ref', '--format=%(objectname)', `refs/agent/${first.session}/`]).split('\n').filter(Boolean);
    assert.is(steps.length, PACK_EVERY + 4);
    for (const c of steps) assert.ok(repo.git(['ls-tree', '-r', '--name-only', c]).includes('a.txt'));
    assertFsckClean(repo);
    assert.equal(leftovers(repo), []);
  } finally {
    repo.cleanup();
  }
});

test.run();
