// A full disk (issue 29, item 8): every ENOSPC, from git or from node:fs, is
// `DiskFull`, exit 1, with nothing journaled, no ref added, the worktree as it
// was; once there is space again (and `git gc --prune=now` took what the
// failed attempt left), every command works. The repository's .git is on a
// small tmpfs; the disk fills at a named point of the command (an object, a
// keep ref, the journal line, the step refs: src/base/test-point.ts), never
// by timing luck.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { cli, cliProcess, sessionOf, step, tempRepo, worktreeFiles, type CliResult, type TempRepo } from '../support/helpers.js';
import { integrityProblems } from '../support/crash-harness.js';
import { openRepo } from '../../src/git/repo.js';
import { startWorktreeSession } from '../../src/worktrees/worktree.js';

const isRoot = process.getuid?.() === 0;

interface FullDisk {
  repo: TempRepo;
  gitDir: string;
  /** The shell command that fills the tmpfs to its last byte. */
  fill: string;
  free(): void;
  cleanup(): void;
}

/** A repository whose .git is on a 16 MiB tmpfs; null (the test says it skipped) where mounting is not allowed. */
function repoOnTmpfs(): FullDisk | null {
  if (!isRoot) {
    console.log('  (skipped: mounting a small tmpfs needs root)');
    return null;
  }
  const repo = tempRepo({ files: { 'a.txt': 'a\n', 'src/b.txt': 'b\n' } });
  const gitDir = path.join(repo.dir, '.git');
  fs.renameSync(gitDir, `${gitDir}.orig`);
  fs.mkdirSync(gitDir);
  if (spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', gitDir]).status !== 0) {
    console.log('  (skipped: mount -t tmpfs is not allowed here)');
    fs.rmdirSync(gitDir);
    fs.renameSync(`${gitDir}.orig`, gitDir);
    repo.cleanup();
    return null;
  }
  fs.cpSync(`${gitDir}.orig`, gitDir, { recursive: true });
  const fillFile = path.join(gitDir, 'test-fill.bin');
  return {
    repo,
    gitDir,
    fill: `dd if=/dev/zero of='${fillFile}' bs=4096 2>/dev/null; true`,
    free: () => fs.rmSync(fillFile, { force: true }),
    cleanup: () => {
      spawnSync('umount', ['-l', gitDir]);
      repo.cleanup();
    },
  };
}

function journalFile(repo: TempRepo): string {
  return path.join(repo.dir, '.git', 'agentsnap', 'sessions', sessionOf(repo), 'journal.jsonl');
}

/**
 * Every ref of the repository: a failed step adds none and moves none. A keep ref (refs/agentsnap/sessions/<id>/keep/<i>,
 * which keeps a snapshot's objects from git's prune until its journal line) is put back when the step fails, but on a
 * full disk writing its old value can fail too: it may then name the snapshot that was not recorded (its value is not
 * compared; its name is).
 */
function allRefs(repo: TempRepo): string {
  return repo
    .git(['for-each-ref', '--format=%(objectname) %(refname)'])
    .replace(/^[0-9a-f]+ (refs\/agentsnap\/sessions\/[^/]+\/keep\/)/gm, '(kept) $1');
}

/** What a user observes of the repository: journal bytes, refs, worktree files. */
function observe(repo: TempRepo) {
  return { journal: fs.readFileSync(journalFile(repo)), refs: allRefs(repo), files: worktreeFiles(repo) };
}

function assertDiskFull(r: CliResult, before: ReturnType<typeof observe>, repo: TempRepo): void {
  assert.is(r.code, 1, `exit ${r.code}: ${r.stderr}`);
  assert.match(r.stderr, /^agentsnap: the disk is full: /);
  assert.match(r.stderr, /Free some space/);
  assert.not.match(r.stderr, /\n\s+at /, 'no stack trace');
  const after = observe(repo);
  assert.ok(after.journal.equals(before.journal), 'journal byte-identical');
  assert.is(after.refs, before.refs, 'no ref added or moved');
  assert.equal(after.files, before.files, 'worktree untouched');
}

/** Space again: the fill removed, what the failed attempt wrote pruned; then every command works. */
async function worksAgain(d: FullDisk): Promise<void> {
  const { repo } = d;
  d.free();
  repo.git(['gc', '--quiet', '--prune=now']);
  const n = await step(repo, () => repo.write('after.txt', 'after\n'));
  const snap = await cli(repo, ['snap', '-m', 'space again']);
  assert.is(snap.code, 0, snap.stderr);
  const undo = await cli(repo, ['undo', String(n)]);
  assert.is(undo.code, 0, undo.stderr);
  assert.not.ok(repo.exists('after.txt'));
  const redo = await cli(repo, ['redo']);
  assert.is(redo.code, 0, redo.stderr);
  assert.is(repo.read('after.txt').toString(), 'after\n');
  assert.equal(integrityProblems(repo), []);
}

/**
 * Pads the journal with checkpoints whose messages make it end on a 4 KiB page boundary: tmpfs fills by pages, and
 * an append that fits in the last page's slack needs no new one (it would not meet the full disk).
 */
async function journalOnPageBoundary(repo: TempRepo): Promise<void> {
  const file = journalFile(repo);
  let size = fs.statSync(file).size;
  let lineOverhead = 0;
  for (let attempt = 0; attempt < 6 && size % 4096 !== 0; attempt++) {
    const want = 4096 - (size % 4096);
    let len = lineOverhead ? want - lineOverhead : 10;
    if (len < 1) len += 4096;
    const r = await cli(repo, ['snap', '-m', 'x'.repeat(len)]);
    assert.is(r.code, 0, r.stderr);
    const next = fs.statSync(file).size;
    lineOverhead = next - size - len;
    size = next;
  }
  assert.is(size % 4096, 0, 'the journal ends on a page boundary');
}

const point = (d: FullDisk, name: string) => ({ AGENTSNAP_TEST_POINT: name, AGENTSNAP_TEST_POINT_RUN: d.fill });

test('snap on a full disk: its objects cannot be written: DiskFull, exit 1, nothing recorded; works again after freeing space', async () => {
  const d = repoOnTmpfs();
  if (!d) return;
  const { repo } = d;
  try {
    await step(repo, () => repo.write('a.txt', 'one\n'));
    repo.write('a.txt', 'a change the snapshot must store\n');
    const before = observe(repo);
    spawnSync('/bin/sh', ['-c', d.fill]);
    assertDiskFull(await cli(repo, ['snap', '-m', 'full']), before, repo);
    await worksAgain(d);
  } finally {
    d.cleanup();
  }
});

for (const [where, name] of [
  ['its keep ref', 'commit-event.before-keep'],
  ['its journal line', 'commit-event.before-journal'],
  ['its step refs (after the journal line: taken back)', 'commit-event.before-refs'],
] as const) {
  test(`a step whose disk fills before ${where}: DiskFull, exit 1, journal unchanged, no ref; works again after freeing space`, async () => {
    const d = repoOnTmpfs();
    if (!d) return;
    const { repo } = d;
    try {
      await step(repo, () => repo.write('a.txt', 'one\n'));
      await journalOnPageBoundary(repo);
      repo.write('a.txt', 'two\n');
      const before = observe(repo);
      assertDiskFull(await cli(repo, ['snap', '-m', 'at the point'], { env: point(d, name) }), before, repo);
      await worksAgain(d);
    } finally {
      d.cleanup();
    }
  });
}

test("undo's safety snapshot on a full disk: DiskFull, exit 1, the worktree untouched, nothing journaled", async () => {
  const d = repoOnTmpfs();
  if (!d) return;
  const { repo } = d;
  try {
    const n = await step(repo, () => repo.write('a.txt', 'one\n'));
    repo.write('src/b.txt', 'a change outside the calls, in no object yet\n');
    const before = observe(repo);
    spawnSync('/bin/sh', ['-c', d.fill]);
    assertDiskFull(await cli(repo, ['undo', String(n), '--force']), before, repo);
    await worksAgain(d);
  } finally {
    d.cleanup();
  }
});

test('a hook step on a full disk: the agent goes on (exit 0) with one warning that says the disk is full; nothing journaled', async () => {
  const d = repoOnTmpfs();
  if (!d) return;
  const { repo } = d;
  try {
    await step(repo, () => repo.write('a.txt', 'one\n'));
    await journalOnPageBoundary(repo);
    const env = { AGENTSNAP_SESSION: sessionOf(repo), AGENTSNAP_WORKTREE: repo.dir };
    repo.write('a.txt', 'written before the call, in no object yet\n');
    const before = observe(repo);
    spawnSync('/bin/sh', ['-c', d.fill]);
    const payload = {
      session_id: 's1',
      transcript_path: '',
      cwd: repo.dir,
      hook_event_name: 'PreToolUse',
      tool_name: 'Bash',
      tool_use_id: 'toolu_1',
      tool_input: { command: 'true' },
    };
    const r = await cliProcess(repo, ['hook', 'claude', 'PreToolUse', '--wrapped'], { env, input: JSON.stringify(payload) });
    assert.is(r.code, 0, r.stderr);
    assert.match(r.stderr, /^agentsnap: warning: pre snapshot of this Bash call failed \(the disk is full: /);
    assert.not.match(r.stderr, /\n\s+at /);
    const after = observe(repo);
    assert.ok(after.journal.equals(before.journal), 'journal byte-identical');
    assert.is(after.refs, before.refs);
    assert.equal(after.files, before.files);
    await worksAgain(d);
  } finally {
    d.cleanup();
  }
});

test("a post hook with no pre (the pre found the disk full) whose ref cannot be written: one warning that says the disk is full, not git's words", async () => {
  // Found by the generative test (seed 29002): git says only "couldn't write '<ref>.lock'" when a ref's lock gets no page.
  const d = repoOnTmpfs();
  if (!d) return;
  const { repo } = d;
  try {
    await step(repo, () => repo.write('a.txt', 'one\n'));
    const env = { AGENTSNAP_SESSION: sessionOf(repo), AGENTSNAP_WORKTREE: repo.dir, ...point(d, 'commit-event.before-refs') };
    const payload = {
      session_id: 's1',
      transcript_path: '',
      cwd: repo.dir,
      hook_event_name: 'PostToolUse',
      tool_name: 'Bash',
      tool_use_id: 'toolu_9',
      tool_input: { command: 'true' },
      tool_response: { stdout: '', stderr: '' },
    };
    const r = await cliProcess(repo, ['hook', 'claude', 'PostToolUse', '--wrapped'], { env, input: JSON.stringify(payload) });
    assert.is(r.code, 0, r.stderr);
    assert.match(r.stderr, /^agentsnap: warning: no snapshot after this Bash call: the disk is full: /, r.stderr);
    assert.not.match(r.stderr, /\n\s+at /);
    await worksAgain(d);
  } finally {
    d.cleanup();
  }
});

test("apply's safety snapshot on a full disk: DiskFull, exit 1, the target worktree untouched, no safety ref, nothing journaled", async () => {
  const d = repoOnTmpfs();
  if (!d) return;
  const { repo } = d;
  try {
    // A worktree session (its worktree is under .git/agentsnap/worktrees, on the tmpfs too) with one change to apply.
    const wt = (await startWorktreeSession(await openRepo(repo.dir, { env: repo.env }), { session: 'wt1' })).meta.path;
    fs.writeFileSync(path.join(wt, 'a.txt'), 'from the agent\n');
    const snap = await cli(repo, ['snap', '--session', 'wt1', '-m', 'work'], { cwd: wt });
    assert.is(snap.code, 0, snap.stderr);
    repo.write('src/b.txt', "the user's own change, in no object yet\n");
    const journal = fs.readFileSync(path.join(d.gitDir, 'agentsnap', 'sessions', 'wt1', 'journal.jsonl'));
    const refs = allRefs(repo);
    const files = worktreeFiles(repo);
    spawnSync('/bin/sh', ['-c', d.fill]);
    const r = await cli(repo, ['apply', 'wt1']);
    assert.is(r.code, 1, r.stderr);
    assert.match(r.stderr, /^agentsnap: the disk is full: /);
    assert.not.match(r.stderr, /\n\s+at /);
    assert.ok(
      fs.readFileSync(path.join(d.gitDir, 'agentsnap', 'sessions', 'wt1', 'journal.jsonl')).equals(journal),
      'journal byte-identical',
    );
    assert.is(allRefs(repo), refs, 'no safety ref');
    assert.equal(worktreeFiles(repo), files, 'the target worktree untouched');
    d.free();
    repo.git(['gc', '--quiet', '--prune=now']);
    const again = await cli(repo, ['apply', 'wt1']);
    assert.is(again.code, 0, again.stderr);
    assert.is(repo.read('a.txt').toString(), 'from the agent\n');
    assert.is(repo.read('src/b.txt').toString(), "the user's own change, in no object yet\n");
  } finally {
    d.cleanup();
  }
});

test('a session start on a full disk: DiskFull, exit 1, no session, no ref', async () => {
  const d = repoOnTmpfs();
  if (!d) return;
  const { repo } = d;
  try {
    repo.write('a.txt', 'changed before any session\n');
    const refs = allRefs(repo);
    const files = worktreeFiles(repo);
    spawnSync('/bin/sh', ['-c', d.fill]);
    const r = await cli(repo, ['snap', '-m', 'first']);
    assert.is(r.code, 1, r.stderr);
    assert.match(r.stderr, /^agentsnap: the disk is full: /);
    assert.is(allRefs(repo), refs);
    assert.equal(worktreeFiles(repo), files);
    assert.equal((await cli(repo, ['sessions', '--json'])).stdout.trim(), '[]');
    d.free();
    repo.git(['gc', '--quiet', '--prune=now']);
    const again = await cli(repo, ['snap', '-m', 'first']);
    assert.is(again.code, 0, again.stderr);
    await worksAgain(d);
  } finally {
    d.cleanup();
  }
});

test.run();
