// agentsnap packs its own objects now and then: loose objects stay bounded,
// no temporary packs are left, and the repository stays consistent.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROOT, tempRepo, type TempRepo } from '../support/helpers.js';
import { integrityProblems, seededRandom } from '../support/crash-harness.js';
import { assertFsckClean, gitCommonDir, leftovers, looseObjects, snapJson } from '../support/snap-helpers.js';
import { MERGE_AT, PACK_EVERY, geometricSplit, packObjects, readPackList } from '../../src/session/maintenance.js';
import { openRepo } from '../../src/git/repo.js';

/** Name -> bytes of every file in objects/pack. */
function packFiles(repo: TempRepo): Map<string, Buffer> {
  const dir = path.join(gitCommonDir(repo), 'objects', 'pack');
  return new Map(fs.readdirSync(dir).map((n) => [n, fs.readFileSync(path.join(dir, n))]));
}

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
    const steps = repo
      .git(['for-each-ref', '--format=%(objectname)', `refs/agent/${first.session}/`])
      .split('\n')
      .filter(Boolean);
    assert.is(steps.length, PACK_EVERY + 4);
    for (const c of steps) assert.ok(repo.git(['ls-tree', '-r', '--name-only', c]).includes('a.txt'));
    assertFsckClean(repo);
    assert.equal(leftovers(repo), []);
  } finally {
    repo.cleanup();
  }
});

test('geometric split: the smallest packs whose merge leaves a progression of factor 2', () => {
  assert.is(geometricSplit([1, 2, 4, 8]), 0);
  assert.is(geometricSplit([1, 1, 1, 1]), 4);
  assert.is(geometricSplit([1, 1, 10, 100]), 2);
  assert.is(geometricSplit([3, 5, 100, 1000]), 2);
  assert.is(geometricSplit([100]), 0);
});

test("agentsnap merges its own packs: their number stays bounded, every snapshot readable, the user's packs untouched", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    // The user's packs: one with a .keep, one without.
    repo.git(['repack', '-q', '-d']);
    repo.write('b.txt', 'b\n');
    repo.git(['add', 'b.txt']);
    repo.git(['commit', '-q', '-m', 'b']);
    repo.git(['repack', '-q', '-d']);
    const packDir = path.join(gitCommonDir(repo), 'objects', 'pack');
    const firstUserPack = fs.readdirSync(packDir).find((n) => n.endsWith('.pack'))!;
    fs.writeFileSync(path.join(packDir, firstUserPack.replace(/\.pack$/, '.keep')), '');
    const userPacks = packFiles(repo);
    assert.is([...userPacks.keys()].filter((n) => n.endsWith('.pack')).length, 2);

    const lib = await openRepo(repo.dir, { env: repo.env });
    const first = await snapJson(repo);
    let since = first.commit;
    await packObjects(lib, first.commit, null);
    const commits = [first.commit];
    let most = 0;
    for (let i = 0; i < 24; i++) {
      repo.write(`f${i % 5}.txt`, `${i}\n`.repeat(i + 1));
      const s = await snapJson(repo, ['--session', first.session]);
      commits.push(s.commit);
      await packObjects(lib, s.commit, since);
      since = s.commit;
      most = Math.max(most, readPackList(lib).packs.length);
    }
    const own = readPackList(lib);
    assert.ok(most <= MERGE_AT + 3, `agentsnap had up to ${most} packs`);
    assert.equal(own.retired, []);
    const now = packFiles(repo);
    for (const [name, bytes] of userPacks) assert.equal(now.get(name), bytes, `the user's ${name} changed`);
    // Exactly the user's files and agentsnap's listed packs: no tmp_pack_*, .keep, or pack without its index.
    const expected = new Set([...userPacks.keys(), ...own.packs.flatMap((n) => [`${n}.pack`, `${n}.idx`])]);
    assert.equal([...now.keys()].sort(), [...expected].sort());
    for (const c of commits) assert.is(repo.gitRaw(['cat-file', '-e', c]).status, 0, `${c} is gone`);
    assertFsckClean(repo);
    assert.equal(leftovers(repo), []);

    // A maintenance killed after listing the merged pack, before deleting a merged one: the next run deletes it.
    const dup = repo.git(['pack-objects', '-q', '--revs', path.join(packDir, 'pack')], { input: `${first.commit}\n` }).trim();
    fs.writeFileSync(
      path.join(gitCommonDir(repo), 'agentsnap', 'packs.json'),
      JSON.stringify({ packs: own.packs, retired: [`pack-${dup}`] }),
    );
    repo.write('last.txt', 'last\n');
    const last = await snapJson(repo, ['--session', first.session]);
    await packObjects(lib, last.commit, since);
    assert.not.ok(fs.existsSync(path.join(packDir, `pack-${dup}.idx`)));
    assert.not.ok(fs.existsSync(path.join(packDir, `pack-${dup}.pack`)));
    assert.equal(readPackList(lib).retired, []);
    for (const c of [...commits, last.commit]) assert.is(repo.gitRaw(['cat-file', '-e', c]).status, 0, `${c} is gone`);
    assertFsckClean(repo);
  } finally {
    repo.cleanup();
  }
});

/** Runs packObjects in a child process (the built library), SIGKILLed after delayMs; whether the kill came first. */
function packAndKill(repo: TempRepo, head: string, since: string, delayMs: number): Promise<boolean> {
  const code = `import { openRepo } from ${JSON.stringify(path.join(ROOT, 'dist', 'git', 'repo.js'))};
import { packObjects } from ${JSON.stringify(path.join(ROOT, 'dist', 'session', 'maintenance.js'))};
await packObjects(await openRepo(process.cwd(), { env: process.env }), ${JSON.stringify(head)}, ${JSON.stringify(since)});`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', code], {
      cwd: repo.dir,
      env: repo.env,
      stdio: 'ignore',
      detached: true,
    });
    let exited = false;
    const timer = setTimeout(() => {
      if (!exited) process.kill(-child.pid!, 'SIGKILL');
    }, delayMs);
    child.on('error', reject);
    child.on('exit', (_code, signal) => {
      exited = true;
      clearTimeout(timer);
      resolve(signal === 'SIGKILL');
    });
  });
}

const CRASH_TRIALS = Number(process.env.AGENTSNAP_CRASH_TRIALS ?? 4);

test(`crash: maintenance killed at random moments leaves every snapshot readable; the next run tidies up (${CRASH_TRIALS} trials)`, async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  const rnd = seededRandom(Number(process.env.AGENTSNAP_CRASH_SEED ?? 20240611));
  try {
    const lib = await openRepo(repo.dir, { env: repo.env });
    const packDir = path.join(gitCommonDir(repo), 'objects', 'pack');
    const first = await snapJson(repo);
    const commits = [first.commit];
    let since = first.commit;
    await packObjects(lib, first.commit, null);
    const snapAndPack = async (i: number, kill: number | null) => {
      repo.write(`f${i % 3}.txt`, `${i}\n`.repeat(20 + i));
      const s = await snapJson(repo, ['--session', first.session]);
      commits.push(s.commit);
      const killed = kill === null ? (await packObjects(lib, s.commit, since), false) : await packAndKill(repo, s.commit, since, kill);
      since = s.commit;
      return killed;
    };
    for (let i = 0; i < MERGE_AT; i++) await snapAndPack(i, null);
    for (let t = 0; t < CRASH_TRIALS; t++) {
      const delay = Math.floor(rnd() * 400);
      const label = `trial ${t}, kill after ${delay} ms`;
      await snapAndPack(100 + t, delay);
      assert.equal(integrityProblems(repo), [], label);
      for (const c of commits) assert.is(repo.gitRaw(['cat-file', '-e', c]).status, 0, `${label}: ${c} is gone`);
      // The next maintenance finishes what was cut off: nothing retired left, no pack without its index.
      await snapAndPack(200 + t, null);
      assert.equal(readPackList(lib).retired, [], label);
      const names = fs.readdirSync(packDir);
      for (const n of names.filter((x) => x.endsWith('.pack')))
        assert.ok(names.includes(n.replace(/\.pack$/, '.idx')), `${label}: ${n} has no index`);
      for (const n of readPackList(lib).packs) assert.ok(names.includes(`${n}.idx`), `${label}: listed ${n} missing`);
      for (const c of commits) assert.is(repo.gitRaw(['cat-file', '-e', c]).status, 0, `${label}: ${c} is gone`);
    }
    assertFsckClean(repo);
  } finally {
    repo.cleanup();
  }
});

test.run();
