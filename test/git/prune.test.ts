// The user's own git under a session (issue 29, item 6): gc, prune, repack,
// reflog expire, fsck, worktree prune may delete any object no ref, reflog or
// the user's index names, at any moment. No sequence of them may leave a
// session in which a later agentsnap command fails: at worst a step whose
// snapshot the prune took is reported lost (log, doctor), every other step
// still undoable. The moment a prune lands is a named test point
// (src/base/test-point.ts), never timing luck.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cli, cliProcess, refsUnder, sessionOf, step, tempRepo, untilClockPast, type TempRepo } from '../support/helpers.js';
import { openRepo } from '../../src/git/repo.js';
import { loadSettings } from '../../src/settings/settings.js';
import { IncrementalSnapshotter } from '../../src/snapshot/incremental.js';

/** The environment that runs `command` once (its first time: a retry goes through the point again) at the named point. */
function atPoint(repo: TempRepo, point: string, command: string): Record<string, string> {
  const marker = path.join(repo.base, `point-${point}-${Math.random().toString(36).slice(2)}`);
  return { AGENTSNAP_TEST_POINT: point, AGENTSNAP_TEST_POINT_RUN: `test -e '${marker}' || { : > '${marker}'; ${command}; }` };
}

const PRUNE = 'git gc --quiet --prune=now';

/** The tree `git add -A` makes of the worktree as it is, through a throwaway index (the ground truth). */
function groundTruthTree(repo: TempRepo): string {
  const index = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'agentsnap-truth-')), 'index');
  try {
    repo.git(['add', '-A'], { env: { GIT_INDEX_FILE: index } });
    return repo.git(['write-tree'], { env: { GIT_INDEX_FILE: index } }).trim();
  } finally {
    fs.rmSync(path.dirname(index), { recursive: true, force: true });
  }
}

function treeOf(repo: TempRepo, commit: string): string {
  return repo.git(['rev-parse', `${commit}^{tree}`]).trim();
}

async function ok(repo: TempRepo, args: string[], env: Record<string, string> = {}): Promise<string> {
  const r = await cli(repo, args, { env });
  assert.is(r.code, 0, `agentsnap ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return r.stdout;
}

/** Every operation after the prune: steps, snap, undo, redo, restore, revert, log, doctor; each exits 0 and undo puts back bytes. */
async function everythingStillWorks(repo: TempRepo): Promise<void> {
  const n = await step(repo, () => repo.write('later.txt', 'later\n'));
  const snap = JSON.parse(await ok(repo, ['snap', '-m', 'after the prune', '--json'])) as { step: number; tree: string };
  assert.is(snap.tree, groundTruthTree(repo));
  await ok(repo, ['undo', String(n)]);
  assert.not.ok(repo.exists('later.txt'), 'the undo took the step back');
  await ok(repo, ['redo']);
  assert.is(repo.read('later.txt').toString(), 'later\n');
  await ok(repo, ['revert', String(n)]);
  assert.not.ok(repo.exists('later.txt'));
  // The state before the checkpoint holds later.txt.
  await ok(repo, ['restore', String(snap.step), '--', 'later.txt']);
  assert.is(repo.read('later.txt').toString(), 'later\n');
  await ok(repo, ['log']);
  assert.equal(doctorProblems(await cli(repo, ['doctor', '--json'])), []);
}

/** doctor's problems, but for the git hooks (tests do not install them). */
function doctorProblems(r: { stdout: string; stderr: string }): string[] {
  const report = JSON.parse(r.stdout) as { checks: { check: string; status: string; message: string }[] };
  return report.checks.filter((c) => c.status === 'problem' && c.check !== 'hooks').map((c) => c.message);
}

test('a prune between a step writing its objects and naming them: that step and every later command succeed', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    await step(repo, () => repo.write('a.txt', 'one\n'));
    await ok(repo, ['snap', '--phase', 'pre', '--tool', 'Edit', '-q']);
    repo.write('a.txt', 'two\n');
    repo.write('new.txt', 'new\n');
    // The post snapshot's commit, tree and blobs are written and nothing names them yet when the prune runs.
    const post = await cli(repo, ['snap', '--phase', 'post', '--json'], { env: atPoint(repo, 'commit-event.before-keep', PRUNE) });
    assert.is(post.code, 0, post.stderr + post.stdout);
    const { commit } = JSON.parse(post.stdout) as { commit: string };
    assert.is(treeOf(repo, commit), groundTruthTree(repo), 'the step records the worktree');
    const id = sessionOf(repo);
    assert.is(refsUnder(repo, `refs/agent/${id}/`).get(`refs/agent/${id}/2`), commit);
    await ok(repo, ['undo', '2']);
    assert.is(repo.read('a.txt').toString(), 'one\n');
    assert.not.ok(repo.exists('new.txt'));
    await ok(repo, ['redo']);
    await everythingStillWorks(repo);
  } finally {
    repo.cleanup();
  }
});

test('a prune between a pre snapshot writing its objects and naming them: every later command succeeds', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    await step(repo, () => repo.write('a.txt', 'one\n'));
    repo.write('b.txt', 'only in the pre snapshot\n');
    const pre = await cli(repo, ['snap', '--phase', 'pre', '--tool', 'Bash', '--json'], {
      env: atPoint(repo, 'commit-event.before-keep', PRUNE),
    });
    assert.is(pre.code, 0, pre.stderr);
    assert.is(treeOf(repo, (JSON.parse(pre.stdout) as { commit: string }).commit), groundTruthTree(repo));
    repo.rm('b.txt');
    await ok(repo, ['snap', '--phase', 'post', '-q']);
    await ok(repo, ['undo', '2']);
    assert.is(repo.read('b.txt').toString(), 'only in the pre snapshot\n');
    await everythingStillWorks(repo);
  } finally {
    repo.cleanup();
  }
});

test('a private index naming blobs a prune deleted (the user dropped the only refs naming them): the next snapshot is taken from the disk', async () => {
  // .gitattributes: the full path through the session's own private index (not a copy of the user's, whose blobs git keeps).
  const repo = tempRepo({ files: { 'a.txt': 'a\n', '.gitattributes': '*.bin binary\n' } });
  try {
    await step(repo, () => repo.write('a.txt', 'edited by the agent\n'));
    const id = sessionOf(repo);
    // The user deletes agentsnap's refs by hand (and its keep refs), then prunes: the private index names blobs of nothing.
    const drop = repo.git(['for-each-ref', '--format=delete %(refname)', `refs/agent/${id}/`, `refs/agentsnap/sessions/${id}/`]);
    repo.git(['update-ref', '--stdin'], { input: drop });
    repo.git(['repack', '-adq']);
    repo.git(['prune', '--expire=now']);
    assert.not.ok(repo.gitRaw(['cat-file', '-e', repo.git(['hash-object', 'a.txt']).trim()]).status === 0, 'the blob is gone');
    repo.write('c.txt', 'c\n');
    const snap = await cli(repo, ['snap', '-m', 'after', '--json']);
    assert.is(snap.code, 0, snap.stderr);
    assert.is((JSON.parse(snap.stdout) as { tree: string }).tree, groundTruthTree(repo));
    // The step the prune took is named lost; the later ones are whole.
    const rows = JSON.parse(await ok(repo, ['log', '--json'])) as { step: number; lost?: boolean }[];
    assert.equal(
      rows.filter((r) => r.lost).map((r) => r.step),
      [1],
    );
    const plain = await ok(repo, ['log'], { NO_COLOR: '1' });
    assert.match(plain, /snapshot lost: deleted by git's prune/);
    const doctor = JSON.parse((await cli(repo, ['doctor', '--json'])).stdout) as { checks: { check: string; message: string }[] };
    assert.match(doctor.checks.find((c) => c.check === 'lost')?.message ?? '', /step 1\b.*deleted by git's prune/);
    await everythingStillWorks(repo);
  } finally {
    repo.cleanup();
  }
});

/** Writes loose objects until two are in objects/17, where `git gc --auto` counts (so gc.auto=1 always triggers it). */
function enoughLooseObjectsForGcAuto(repo: TempRepo): void {
  let found = 0;
  for (let i = 0; found < 2; i++) {
    const body = `loose ${i}\n`;
    if (
      !createHash('sha1')
        .update(`blob ${Buffer.byteLength(body)}\0${body}`)
        .digest('hex')
        .startsWith('17')
    )
      continue;
    repo.git(['hash-object', '-w', '--stdin'], { input: body });
    found++;
  }
}

test('gc.pruneExpire=now: a `git gc --auto` mid-session (between objects and refs, and between steps) leaves every command working', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    for (const [k, v] of [
      ['gc.pruneExpire', 'now'],
      ['gc.auto', '1'],
      ['gc.autoDetach', 'false'],
    ] as const)
      repo.git(['config', k, v]);
    await step(repo, () => repo.write('a.txt', 'one\n'));
    enoughLooseObjectsForGcAuto(repo);
    const packsBefore = fs.readdirSync(path.join(repo.dir, '.git', 'objects', 'pack')).length;
    await ok(repo, ['snap', '--phase', 'pre', '-q']);
    repo.write('a.txt', 'two\n');
    await ok(repo, ['snap', '--phase', 'post', '-q'], atPoint(repo, 'commit-event.before-keep', 'git gc --auto --quiet'));
    assert.ok(fs.readdirSync(path.join(repo.dir, '.git', 'objects', 'pack')).length > packsBefore, 'git gc --auto ran');
    enoughLooseObjectsForGcAuto(repo);
    repo.git(['gc', '--auto', '--quiet']);
    await ok(repo, ['undo', '2']);
    assert.is(repo.read('a.txt').toString(), 'one\n');
    await ok(repo, ['redo']);
    assert.is(repo.read('a.txt').toString(), 'two\n');
    await everythingStillWorks(repo);
  } finally {
    repo.cleanup();
  }
});

for (const [name, command] of [
  ['git reflog expire --all --expire=now', 'git reflog expire --all --expire=now && git gc --quiet --prune=now'],
  ['git worktree prune', 'git worktree prune && git gc --quiet --prune=now'],
  ['git fsck', 'git fsck --no-progress --unreachable >/dev/null && git gc --quiet --prune=now'],
  ['git repack -ad && git prune --expire=now', 'git repack -adq && git prune --expire=now'],
] as const) {
  test(`${name} mid-session (between objects and refs, and between steps): every command still works`, async () => {
    const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
    try {
      await step(repo, () => repo.write('a.txt', 'one\n'));
      await ok(repo, ['snap', '--phase', 'pre', '-q'], atPoint(repo, 'commit-event.before-keep', command));
      repo.write('a.txt', 'two\n');
      await ok(repo, ['snap', '--phase', 'post', '-q'], atPoint(repo, 'commit-event.before-keep', command));
      repo.git(['-c', 'core.editor=true', 'commit', '-qam', 'the user commits']);
      const res = spawnSync('/bin/sh', ['-c', command], { cwd: repo.dir, env: repo.env, encoding: 'utf8' });
      assert.is(res.status, 0, res.stderr);
      await ok(repo, ['undo', '2']);
      assert.is(repo.read('a.txt').toString(), 'one\n');
      await ok(repo, ['redo']);
      await everythingStillWorks(repo);
    } finally {
      repo.cleanup();
    }
  });
}

test('doctor --fix after a prune took a journaled step: sets the refs that can be set, names the lost step, every other step stays undoable', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    await step(repo, () => repo.write('a.txt', 'one\n'));
    await step(repo, () => repo.write('a.txt', 'two\n'));
    const id = sessionOf(repo);
    // What an older agentsnap left after a prune between its journal line and its refs: step 2's snapshots named by
    // the journal only. And a step ref lost by a crash (its commit still there).
    const drop = [
      `refs/agent/${id}/2`,
      `refs/agentsnap/sessions/${id}/head`,
      ...refsUnder(repo, `refs/agentsnap/sessions/${id}/keep/`).keys(),
    ];
    repo.git(['update-ref', '--stdin'], { input: drop.map((r) => `delete ${r}\n`).join('') });
    repo.git(['gc', '--quiet', '--prune=now']);
    const step1 = repo.git(['rev-parse', `refs/agent/${id}/1`]).trim();
    repo.git(['update-ref', '-d', `refs/agent/${id}/1`]);
    repo.git(['tag', 'keep-step-1', step1]);
    const before = JSON.parse((await cli(repo, ['doctor', '--json'])).stdout) as {
      checks: { check: string; status: string; message: string }[];
    };
    assert.ok(
      before.checks.some((c) => c.check === 'refs' && c.status === 'problem' && c.message.includes(`refs/agent/${id}/1`)),
      JSON.stringify(before.checks),
    );
    assert.match(
      before.checks.find((c) => c.check === 'lost')?.message ?? JSON.stringify(before.checks),
      /the session head, step 2 were deleted by git's prune/,
    );
    const fix = await cli(repo, ['doctor', '--fix', '--json']);
    const report = JSON.parse(fix.stdout) as { fixed: string[]; checks: { check: string; status: string; message: string }[] };
    assert.ok(
      report.fixed.some((l) => /set 1 ref\(s\) from its journal/.test(l)),
      report.fixed.join('\n'),
    );
    assert.ok(
      report.fixed.some((l) => /the session head, step 2 were deleted by git's prune/.test(l)),
      report.fixed.join('\n'),
    );
    assert.equal(doctorProblems(fix), []);
    assert.is(repo.git(['rev-parse', `refs/agent/${id}/1`]).trim(), step1);
    // Step 1 is still undoable; later snapshots chain on what is still there. What step 2 wrote is in no snapshot
    // left: a change the session cannot tell from the user's, so the undo asks for --force (and keeps it in its safety snapshot).
    assert.is((await cli(repo, ['undo', '1'])).code, 3);
    await ok(repo, ['undo', '1', '--force']);
    assert.is(repo.read('a.txt').toString(), 'a\n');
    await everythingStillWorks(repo);
  } finally {
    repo.cleanup();
  }
});

test("the server's engine, whose cached blob and tree ids a prune deleted (nothing named its last tree): the next snapshot is whole and equals `git add -A`", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n', 'src/b.txt': 'b\n' } });
  const r = await openRepo(repo.dir, { env: repo.env });
  const settings = await loadSettings(r);
  const engine = await IncrementalSnapshotter.open(r, { runDir: path.join(repo.base, 'run'), settings, idleSweeps: false });
  try {
    await engine.snapshot({ settings, parentTree: null });
    // An incremental snapshot: the root directory's entries stay loaded in the engine, a.txt's new blob among them.
    repo.write('a.txt', "only in the engine's objects\n");
    // Past the engine's racy margin (2.5 s): the next snapshots trust a.txt's stat and reuse its blob id.
    await untilClockPast(Date.now() + 3000);
    const second = await engine.snapshot({ settings, parentTree: null });
    assert.is(second.mode, 'incremental');
    assert.is(second.tree, groundTruthTree(repo));
    // Nothing names that tree or its new blob (no session journaled it): the user's prune deletes them.
    repo.git(['gc', '--quiet', '--prune=now']);
    assert.is.not(repo.gitRaw(['cat-file', '-e', second.tree]).status, 0, 'the tree is gone');
    // A change in another directory: the root's entries (a.txt's pruned blob among them) are reused as they are.
    repo.write('src/b.txt', 'b2\n');
    const next = await engine.snapshot({ settings, parentTree: null });
    // Every object the tree names is there (a tree over pruned blobs would be a snapshot nothing can restore);
    // checked before the ground truth, whose `git add -A` writes the blobs again.
    const ids = repo.git(['ls-tree', '-r', '-t', '--format=%(objectname)', next.tree]);
    assert.not.match(repo.git(['cat-file', '--batch-check'], { input: ids }), / missing$/m);
    assert.is(next.tree, groundTruthTree(repo));
    assert.is(repo.gitRaw(['cat-file', '-p', `${next.tree}:a.txt`]).stdout, "only in the engine's objects\n");
  } finally {
    await engine.close();
    repo.cleanup();
  }
});

test("agent hooks: a prune inside a hook's snapshot leaves that step and every later hook step protected", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    await ok(repo, ['snap', '-m', 'start']);
    const env = { AGENTSNAP_SESSION: sessionOf(repo), AGENTSNAP_WORKTREE: repo.dir };
    const hook = (event: string, id: string, extra: Record<string, string> = {}) =>
      cliProcess(repo, ['hook', 'claude', event, '--wrapped'], {
        env: { ...env, ...extra },
        input: JSON.stringify({
          session_id: 's1',
          transcript_path: '',
          cwd: repo.dir,
          hook_event_name: event,
          tool_name: 'Bash',
          tool_use_id: id,
          tool_input: { command: 'edit' },
          tool_response: {},
        }),
      });
    for (const [i, point] of ['pre', 'post', null, null].entries()) {
      const id = `toolu_${i}`;
      const pre = await hook('PreToolUse', id, point === 'pre' ? atPoint(repo, 'commit-event.before-keep', PRUNE) : {});
      assert.is(pre.code, 0, pre.stderr);
      assert.is(pre.stderr, '', 'no warning');
      repo.write('a.txt', `call ${i}\n`);
      const post = await hook('PostToolUse', id, point === 'post' ? atPoint(repo, 'commit-event.before-keep', PRUNE) : {});
      assert.is(post.code, 0, post.stderr);
      assert.is(post.stderr, '', 'no warning');
    }
    const journal = fs.readFileSync(path.join(repo.dir, '.git', 'agentsnap', 'sessions', sessionOf(repo), 'journal.jsonl'), 'utf8');
    assert.not.match(journal, /step\.unprotected/);
    // Steps 2 to 5 are the four calls (1 is the checkpoint that started the session): undo the second call.
    await ok(repo, ['undo', '3']);
    assert.is(repo.read('a.txt').toString(), 'call 0\n');
    await ok(repo, ['redo']);
    assert.is(repo.read('a.txt').toString(), 'call 3\n');
    await everythingStillWorks(repo);
  } finally {
    repo.cleanup();
  }
});

test.run();
