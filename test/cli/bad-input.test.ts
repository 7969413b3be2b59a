// Bad input: each case gets a clear message and a documented exit code, and
// changes nothing (what test/cli/cli-errors.test.ts and test/session/journal.test.ts do
// not already cover: not a repository, bare, old git, invalid ids, unknown
// sessions and corrupt journal lines are there).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  BIN,
  cli,
  cliProcess,
  indexBytes,
  refsUnder,
  tempRepo,
  treeFiles,
  worktreeFiles,
  type TempRepo,
  sessionOf,
  step,
} from '../support/helpers.js';
import { integrityProblems } from '../support/crash-harness.js';
import { openRepo } from '../../src/git/repo.js';
import { startWorktreeSession } from '../../src/worktrees/worktree.js';

const isRoot = process.getuid?.() === 0;

/**
 * Runs agentsnap as root without the capabilities that let root read any file
 * whatever its mode (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH): it then obeys file
 * permissions, yet still owns, and so reads, the checkout and the temp repo, even
 * from a private (0700) directory that another user could not enter.
 */
const DROP_READ_CAPS = ['--inh-caps=-dac_override,-dac_read_search', '--bounding-set=-dac_override,-dac_read_search', '--'];
function withoutReadCaps(repo: TempRepo, args: string[]): { code: number; stdout: string; stderr: string } {
  const r = spawnSync('setpriv', [...DROP_READ_CAPS, process.execPath, BIN, ...args], { cwd: repo.dir, env: repo.env, encoding: 'utf8' });
  return { code: r.status ?? 128, stdout: r.stdout, stderr: r.stderr };
}

test('files without read permission (root without its read capabilities): exit 1 naming the file, no step, nothing changed', async () => {
  if (!isRoot || spawnSync('setpriv', [...DROP_READ_CAPS, 'true']).status !== 0) {
    console.log(
      '  (skipped: needs root and setpriv to drop the read capabilities; test/session/session.test.ts covers it as a normal user)',
    );
    return;
  }
  const repo = tempRepo({ files: { 'a.txt': 'a\n', 'locked.txt': 'l\n' } });
  try {
    const first = withoutReadCaps(repo, ['snap', '--json']);
    assert.is(first.code, 0, first.stderr);
    const refs = refsUnder(repo, 'refs/agent/');
    const index = indexBytes(repo);
    fs.chmodSync(path.join(repo.dir, 'locked.txt'), 0o000);
    repo.write('new-locked.txt', 'x\n', 0o000);
    const r = withoutReadCaps(repo, ['snap']);
    assert.is(r.code, 1, r.stderr);
    assert.match(r.stderr, /locked\.txt/);
    assert.match(r.stderr, /not readable|could not be read/);
    assert.not.match(r.stderr, /\n\s+at /);
    assert.equal(refsUnder(repo, 'refs/agent/'), refs, 'no step');
    assert.equal(indexBytes(repo), index);
    // Excluding it is the way out the message offers.
    repo.git(['config', '--add', 'agentsnap.exclude', '*locked.txt']);
    fs.chmodSync(path.join(repo.dir, 'locked.txt'), 0o644);
    const ok = withoutReadCaps(repo, ['snap']);
    assert.is(ok.code, 0, ok.stderr);
  } finally {
    repo.cleanup();
  }
});

test('a step ref deleted or moved by hand: log and undo follow the journal; doctor reports it and --fix restores it', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    await step(repo, () => repo.write('a.txt', 'two\n'));
    await step(repo, () => repo.write('a.txt', 'three\n'));
    const id = sessionOf(repo);
    const refs = refsUnder(repo, `refs/agent/${id}/`);
    repo.git(['update-ref', '-d', `refs/agent/${id}/2`]);
    repo.git(['update-ref', `refs/agent/${id}/1`, repo.git(['rev-parse', 'HEAD']).trim()]);
    const log = await cli(repo, ['log', '--json']);
    assert.is(log.code, 0, log.stderr);
    const doctor = await cli(repo, ['doctor', '--json']);
    assert.is(doctor.code, 1);
    assert.match(doctor.stdout, `refs/agent/${id}/2`);
    assert.match(doctor.stdout, `refs/agent/${id}/1`);
    // undo 2 takes the state before step 2 from the journal, not from the moved ref.
    const undo = await cli(repo, ['undo', '2']);
    assert.is(undo.code, 0, undo.stderr);
    assert.is(repo.read('a.txt').toString(), 'two\n');
    const fixed = await cli(repo, ['doctor', '--fix']);
    assert.match(fixed.stdout + fixed.stderr, /refs/);
    for (const n of [1, 2]) assert.is(refsUnder(repo, `refs/agent/${id}/`).get(`refs/agent/${id}/${n}`), refs.get(`refs/agent/${id}/${n}`));
  } finally {
    repo.cleanup();
  }
});

test('files changing, appearing and disappearing while being snapshotted: every snapshot succeeds; the one after the churn is exact', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    assert.is((await cli(repo, ['snap'])).code, 0);
    // A writer rewriting, creating and deleting files as fast as it can.
    const writer = spawn(process.execPath, [
      '-e',
      `const fs=require('fs');const d=process.argv[1];let i=0;const end=Date.now()+60000;
       while(Date.now()<end&&!fs.existsSync(d+'/../stop')){const n='churn/f'+(i%40)+'.txt';fs.mkdirSync(d+'/churn',{recursive:true});
       if(i%3===0){try{fs.rmSync(d+'/'+n)}catch{}}else fs.writeFileSync(d+'/'+n,String(i).repeat(i%500));
       if(i%7===0){try{fs.rmSync(d+'/churn',{recursive:true})}catch{}}i++}`,
      repo.dir,
    ]);
    try {
      for (let k = 0; k < 6; k++) {
        const r = await cliProcess(repo, ['snap', '-m', `during ${k}`]);
        assert.is(r.code, 0, `snapshot ${k} during the churn: ${r.stderr}`);
      }
    } finally {
      fs.writeFileSync(path.join(repo.base, 'stop'), '');
      await new Promise((r) => writer.on('close', r));
    }
    const last = await cli(repo, ['snap', '--json']);
    assert.is(last.code, 0, last.stderr);
    assert.equal(treeFiles(repo, (JSON.parse(last.stdout) as { commit: string }).commit), worktreeFiles(repo));
    assert.equal(integrityProblems(repo), []);
  } finally {
    repo.cleanup();
  }
});

test('a 2 GB untracked file (sparse) is skipped by the size cap without being read', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const big = path.join(repo.dir, 'huge.bin');
    fs.closeSync(fs.openSync(big, 'w'));
    fs.truncateSync(big, 2 * 1024 ** 3);
    const time = fs.existsSync('/usr/bin/time');
    const r = spawnSync(
      time ? '/usr/bin/time' : process.execPath,
      [...(time ? ['-f', 'maxrss=%M', process.execPath] : []), BIN, 'snap', '--json'],
      { cwd: repo.dir, env: repo.env, encoding: 'utf8' },
    );
    assert.is(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { skipped: { path: string; reason: string }[]; commit: string };
    assert.equal(out.skipped, [{ path: 'huge.bin', reason: 'too-large', size: 2 * 1024 ** 3 }]);
    assert.not.ok(treeFiles(repo, out.commit).has('huge.bin'));
    const rss = Number(/maxrss=(\d+)/.exec(r.stderr)?.[1] ?? 0);
    if (time) assert.ok(rss < 400 * 1024, `agentsnap used ${rss} KiB: the file was read into memory`);
    // Nothing of it went into the object store.
    const count = repo.git(['count-objects', '-v']);
    assert.ok(Number(/size: (\d+)/.exec(count)?.[1]) < 10_000, count);
  } finally {
    repo.cleanup();
  }
});

test('an agent creating a directory of 20,000 files: snapshot and undo handle it (100k in the bench)', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const n = 20_000;
    const s = await step(repo, () => {
      const dir = path.join(repo.dir, 'gen');
      fs.mkdirSync(dir);
      for (let i = 0; i < n; i++) fs.writeFileSync(path.join(dir, `f${i}.txt`), `${i}\n`);
    });
    const id = sessionOf(repo);
    const post = refsUnder(repo, `refs/agent/${id}/`).get(`refs/agent/${id}/${s}`)!;
    assert.is(repo.git(['ls-tree', '-r', '--name-only', post, 'gen']).split('\n').filter(Boolean).length, n);
    const undo = await cliProcess(repo, ['undo', String(s), '--json']);
    assert.is(undo.code, 0, undo.stderr);
    assert.not.ok(repo.exists('gen'), 'the files and the directory they left are gone');
  } finally {
    repo.cleanup();
  }
});

test('case-only renames are recorded and undone exactly', async () => {
  const repo = tempRepo({ files: { 'Readme.md': 'r\n', 'src/Main.ts': 'm\n' } });
  try {
    const before = worktreeFiles(repo);
    const s = await step(repo, () => {
      fs.renameSync(path.join(repo.dir, 'Readme.md'), path.join(repo.dir, 'README.md'));
      fs.renameSync(path.join(repo.dir, 'src'), path.join(repo.dir, 'Src'));
    });
    const id = sessionOf(repo);
    const post = treeFiles(repo, refsUnder(repo, `refs/agent/${id}/`).get(`refs/agent/${id}/${s}`)!);
    assert.equal([...post.keys()].sort(), ['README.md', 'Src/Main.ts']);
    const undo = await cli(repo, ['undo', String(s)]);
    assert.is(undo.code, 0, undo.stderr);
    assert.equal(worktreeFiles(repo), before);
  } finally {
    repo.cleanup();
  }
});

test('a session worktree deleted by hand: doctor reports it, discard needs --force and keeps the snapshots, gc prunes', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const r = await openRepo(repo.dir, { env: repo.env });
    const wt = (await startWorktreeSession(r, { session: 'gone-wt' })).meta.path;
    fs.writeFileSync(path.join(wt, 'agent.txt'), 'work\n');
    assert.is((await cli(repo, ['snap', '--session', 'gone-wt'], { cwd: wt })).code, 0);
    const refs = refsUnder(repo, 'refs/agent/gone-wt/');
    fs.rmSync(wt, { recursive: true, force: true });
    const doctor = await cli(repo, ['doctor', '--json']);
    assert.match(doctor.stdout, /prunable|worktree/);
    const log = await cli(repo, ['log', '--session', 'gone-wt']);
    assert.is(log.code, 0, log.stderr);
    const discard = await cli(repo, ['discard', 'gone-wt']);
    assert.ok([0, 3].includes(discard.code), discard.stderr);
    if (discard.code === 3) assert.is((await cli(repo, ['discard', 'gone-wt', '--force'])).code, 0);
    assert.equal(refsUnder(repo, 'refs/agent/gone-wt/'), refs, 'snapshots kept until gc');
    const gc = await cli(repo, ['gc']);
    assert.is(gc.code, 0, gc.stderr);
    assert.not.match(repo.git(['worktree', 'list', '--porcelain']), wt);
    assert.equal(integrityProblems(repo), []);
  } finally {
    repo.cleanup();
  }
});

test('a full disk: the snapshot fails with a clear message, nothing half-written; the next one works once there is space', async () => {
  if (!isRoot) {
    console.log('  (skipped: mounting a small tmpfs needs root)');
    return;
  }
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  // The object store on a 1 MiB filesystem (the worktree stays where it is, so big files can be written).
  const objects = path.join(repo.dir, '.git', 'objects');
  fs.renameSync(objects, `${objects}.orig`);
  fs.mkdirSync(objects);
  if (spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', objects]).status !== 0) {
    console.log('  (skipped: mount -t tmpfs is not allowed here)');
    repo.cleanup();
    return;
  }
  try {
    fs.cpSync(`${objects}.orig`, objects, { recursive: true });
    const first = await cli(repo, ['snap', '--json']);
    assert.is(first.code, 0, first.stderr);
    const id = (JSON.parse(first.stdout) as { session: string }).session;
    const refs = refsUnder(repo, 'refs/agent/');
    const journalFile = path.join(repo.dir, '.git', 'agentsnap', 'sessions', id, 'journal.jsonl');
    const journal = fs.readFileSync(journalFile);
    const index = indexBytes(repo);
    // Random bytes do not compress: the objects do not fit.
    for (const f of ['big.bin', 'big2.bin'])
      repo.write(f, Buffer.from(Array.from({ length: 700 * 1024 }, () => Math.floor(Math.random() * 256))));
    const r = await cli(repo, ['snap']);
    assert.is(r.code, 1, r.stderr);
    assert.match(r.stderr, /^agentsnap: the disk is full: .*No space left on device/);
    assert.match(r.stderr, 'Free some space');
    assert.not.match(r.stderr, /\n\s+at /);
    assert.equal(refsUnder(repo, 'refs/agent/'), refs);
    assert.ok(fs.readFileSync(journalFile).equals(journal), 'journal unchanged');
    assert.equal(indexBytes(repo), index);
    // Space again (the objects of the failed attempt stay until git's own gc prunes them).
    assert.is(spawnSync('mount', ['-o', 'remount,size=16m', objects]).status, 0);
    repo.rm('big.bin');
    repo.rm('big2.bin');
    repo.write('a.txt', 'small change\n');
    const next = await cli(repo, ['snap']);
    assert.is(next.code, 0, next.stderr);
    assert.equal(integrityProblems(repo), []);
  } finally {
    spawnSync('umount', ['-l', objects]);
    repo.cleanup();
  }
});

// Failing test first (generative seed 476, mode nocaps): an undo --force over a file it cannot read died with
// exit 70 (git hash-object: Permission denied) instead of leaving that file and restoring the rest. The file was
// one the safety snapshot did not need to read (ignored by then) but the undo's plan had to compare.
test('undo --force over a file it cannot read (root without its read capabilities): that file is left as it is, the rest restored', async () => {
  if (!isRoot || spawnSync('setpriv', [...DROP_READ_CAPS, 'true']).status !== 0) {
    console.log('  (skipped: needs root and setpriv to drop the read capabilities)');
    return;
  }
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    repo.write('b.txt', 'b\n'); // untracked: in the baseline snapshot
    const pre = withoutReadCaps(repo, ['snap', '--phase', 'pre', '--tool', 'Bash', '--json']);
    assert.is(pre.code, 0, pre.stderr);
    repo.write('a.txt', 'agent\n');
    repo.write('b.txt', 'agent b\n');
    repo.write('.gitignore', 'b.txt\n');
    const post = withoutReadCaps(repo, ['snap', '--phase', 'post', '--step', '1', '--tool', 'Bash']);
    assert.is(post.code, 0, post.stderr);
    fs.chmodSync(path.join(repo.dir, 'b.txt'), 0o000);
    const r = withoutReadCaps(repo, ['undo', '--force', '1']);
    assert.not.match(r.stderr, /hash-object|GitFailed/, r.stderr);
    // The undo puts back what it can read; its result snapshot then meets b.txt unignored and unreadable, which a
    // snapshot refuses as always (exit 1, naming it): the operation completes once b.txt is readable again.
    assert.is(r.code, 1, r.stderr);
    assert.match(r.stderr, 'b.txt could not be read');
    assert.not.match(r.stderr, /\n\s+at /);
    fs.chmodSync(path.join(repo.dir, 'b.txt'), 0o644);
    assert.is(repo.read('b.txt').toString(), 'agent b\n', 'the unreadable one is left as it was, bytes and all');
    const again = withoutReadCaps(repo, ['undo', '--force', '1']);
    assert.is(again.code, 0, again.stderr);
    assert.is(repo.read('a.txt').toString(), 'a\n');
    assert.not.ok(fs.existsSync(path.join(repo.dir, '.gitignore')), "the agent's .gitignore is undone");
  } finally {
    repo.cleanup();
  }
});

test.run();
