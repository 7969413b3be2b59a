import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { cli, indexBytes, refsUnder, tempRepo, treeFiles, worktreeFiles, type TempRepo, step } from '../support/helpers.js';
import { openContext } from '../../src/session/context.js';

function sessionId(repo: TempRepo): string {
  const refs = [...refsUnder(repo, 'refs/agent/').keys()];
  return refs[0]!.split('/')[2]!;
}

test('undo N puts back modified, created, deleted, renamed files, the executable bit and symlinks, byte for byte', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n', 'keep.txt': 'keep\n', 'old-name.txt': 'renamed\n', 'run.sh': '#!/bin/sh\n' } });
  try {
    repo.write('link', 'x');
    fs.rmSync(path.join(repo.dir, 'link'));
    fs.symlinkSync('a.txt', path.join(repo.dir, 'link'));
    repo.write('bin.dat', Buffer.from([0, 1, 2, 255, 13, 10]));
    repo.git(['stash', 'list']);
    const before = worktreeFiles(repo);
    const index = indexBytes(repo);
    const head = repo.git(['rev-parse', 'HEAD']);
    await step(repo, () => {
      repo.write('a.txt', 'two\r\n');
      repo.write('new/deep/file.txt', 'new\n');
      fs.renameSync(path.join(repo.dir, 'old-name.txt'), path.join(repo.dir, 'new-name.txt'));
      fs.chmodSync(path.join(repo.dir, 'run.sh'), 0o755);
      fs.rmSync(path.join(repo.dir, 'link'));
      fs.symlinkSync('keep.txt', path.join(repo.dir, 'link'));
      repo.rm('bin.dat');
    });
    await step(repo, () => repo.write('a.txt', 'three\n'));
    const res = await cli(repo, ['undo', '1']);
    assert.is(res.code, 0, res.stderr);
    assert.equal(worktreeFiles(repo), before);
    assert.not.ok(repo.exists('new'), 'directories left empty are removed');
    assert.equal(indexBytes(repo), index, 'the user index is untouched');
    assert.is(repo.git(['rev-parse', 'HEAD']), head);
    assert.is(repo.git(['stash', 'list']), '');
    assert.match(res.stdout, /undo 1 \(operation 1\)/);
    assert.match(res.stdout, /D new\/deep\/file.txt/);
    // The safety snapshot keeps the state the undo replaced.
    const id = sessionId(repo);
    const safety = refsUnder(repo, `refs/agentsnap/sessions/${id}/ops/`).get(`refs/agentsnap/sessions/${id}/ops/1`);
    assert.ok(safety);
    assert.is(treeFiles(repo, safety!).get('a.txt')?.content.toString(), 'three\n');
    assert.match(repo.git(['cat-file', 'commit', safety!]), /Agentsnap-Kind: safety/);
    // The next call is step 3 and sees no changes outside tool calls.
    const pre = await cli(repo, ['snap', '--phase', 'pre', '--json']);
    const out = JSON.parse(pre.stdout) as { step: number; changed: unknown[] };
    assert.is(out.step, 3);
    assert.equal(out.changed, []);
  } finally {
    repo.cleanup();
  }
});

test('bare undo walks back one step at a time; redo returns; a bare undo after redo undoes again', async () => {
  const repo = tempRepo({ files: { 'f.txt': '0\n' } });
  try {
    const states: Map<string, { mode: string; content: Buffer }>[] = [];
    for (let i = 1; i <= 3; i++) {
      states.push(worktreeFiles(repo));
      await step(repo, () => repo.write('f.txt', `${i}\n`));
    }
    const final = worktreeFiles(repo);
    let r = await cli(repo, ['undo']);
    assert.is(r.code, 0, r.stderr);
    assert.equal(worktreeFiles(repo), states[2]);
    r = await cli(repo, ['undo']);
    assert.is(r.code, 0, r.stderr);
    assert.match(r.stdout, /undo 2/);
    assert.equal(worktreeFiles(repo), states[1]);
    r = await cli(repo, ['redo']);
    assert.is(r.code, 0, r.stderr);
    assert.equal(worktreeFiles(repo), states[2]);
    r = await cli(repo, ['redo']);
    assert.is(r.code, 0, r.stderr);
    assert.equal(worktreeFiles(repo), final);
    r = await cli(repo, ['redo']);
    assert.is(r.code, 1);
    assert.match(r.stderr, /nothing to redo/);
    r = await cli(repo, ['undo']);
    assert.is(r.code, 0, r.stderr);
    assert.match(r.stdout, /undo 3/);
    const st = JSON.parse((await cli(repo, ['status', '--json'])).stdout) as {
      undone: number[];
      ops: { kind: string }[];
      redoable: number;
    };
    assert.equal(st.undone, [3]);
    assert.equal(
      st.ops.map((o) => o.kind),
      ['undo', 'undo', 'redo', 'redo', 'undo'],
    );
    assert.is(st.redoable, 5);
  } finally {
    repo.cleanup();
  }
});

test('undo --exact refuses to overwrite changes made outside tool calls (exit 3), lists them, and --force keeps them in the safety snapshot', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n', 'b.txt': 'b\n' } });
  try {
    await step(repo, () => repo.write('a.txt', 'agent\n'));
    repo.write('a.txt', 'user edit between steps\n');
    await step(repo, () => repo.write('b.txt', 'agent b\n'));
    repo.write('notes.txt', 'user notes since the last snapshot\n');
    const before = worktreeFiles(repo);
    const dry = await cli(repo, ['undo', '1', '--exact', '--dry-run']);
    assert.is(dry.code, 3, 'the dry run exits as the undo would');
    assert.match(dry.stdout, /refused without --force/);
    assert.match(dry.stdout, /M a.txt \(before step 2\)/);
    let r = await cli(repo, ['undo', '1', '--exact']);
    assert.is(r.code, 3);
    assert.match(r.stderr, /2 changes made outside the recorded tool calls/);
    assert.match(r.stderr, /a.txt \(before step 2\)/);
    assert.match(r.stderr, /notes.txt \(since the last snapshot\)/);
    assert.equal(worktreeFiles(repo), before, 'nothing changed');
    // Undoing only step 2 touches b.txt and notes.txt: notes.txt is protected too.
    r = await cli(repo, ['undo', '2', '--exact']);
    assert.is(r.code, 3);
    r = await cli(repo, ['undo', '1', '--exact', '--force']);
    assert.is(r.code, 0, r.stderr);
    assert.is(repo.read('a.txt').toString(), 'a\n');
    assert.not.ok(repo.exists('notes.txt'));
    const id = sessionId(repo);
    const safety = refsUnder(repo, `refs/agentsnap/sessions/${id}/ops/`).get(`refs/agentsnap/sessions/${id}/ops/1`)!;
    const kept = treeFiles(repo, safety);
    assert.is(kept.get('a.txt')?.content.toString(), 'user edit between steps\n');
    assert.is(kept.get('notes.txt')?.content.toString(), 'user notes since the last snapshot\n');
    r = await cli(repo, ['redo']);
    assert.is(r.code, 0, r.stderr);
    assert.equal(worktreeFiles(repo), before);
  } finally {
    repo.cleanup();
  }
});

test('--dry-run prints the planned changes and changes nothing', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    await step(repo, () => {
      repo.write('a.txt', 'b\n');
      repo.write('c.txt', 'c\n');
    });
    const files = worktreeFiles(repo);
    const refs = refsUnder(repo, 'refs/');
    const r = await cli(repo, ['undo', '--dry-run']);
    assert.is(r.code, 0, r.stderr);
    assert.match(r.stdout, /M a.txt\s+\(modify\)/);
    assert.match(r.stdout, /A|D c.txt\s+\(delete\)/);
    assert.equal(worktreeFiles(repo), files);
    assert.equal(refsUnder(repo, 'refs/'), refs);
    const st = JSON.parse((await cli(repo, ['status', '--json'])).stdout) as { ops: unknown[] };
    assert.equal(st.ops, []);
  } finally {
    repo.cleanup();
  }
});

test('restoring never writes through a symlink to a directory outside the worktree', async () => {
  const repo = tempRepo({ files: { 'dir/x': 'inside\n' } });
  const outside = path.join(repo.base, 'outside');
  fs.mkdirSync(outside);
  fs.writeFileSync(path.join(outside, 'x'), 'outside file\n');
  try {
    await step(repo, () => {
      repo.rm('dir');
      fs.symlinkSync(outside, path.join(repo.dir, 'dir'));
    });
    const r = await cli(repo, ['undo', '1']);
    assert.is(r.code, 0, r.stderr);
    assert.ok(fs.lstatSync(path.join(repo.dir, 'dir')).isDirectory(), 'dir is a real directory again');
    assert.is(repo.read('dir/x').toString(), 'inside\n');
    assert.is(fs.readFileSync(path.join(outside, 'x'), 'utf8'), 'outside file\n');
    assert.equal(fs.readdirSync(outside), ['x']);
    // And back: redo makes dir the symlink again, without touching what is behind it.
    const r2 = await cli(repo, ['redo']);
    assert.is(r2.code, 0, r2.stderr);
    assert.ok(fs.lstatSync(path.join(repo.dir, 'dir')).isSymbolicLink());
    assert.is(fs.readFileSync(path.join(outside, 'x'), 'utf8'), 'outside file\n');
  } finally {
    repo.cleanup();
  }
});

test('a symlink that is not in the snapshot (ignored) is never followed: the path behind it is left and reported', async () => {
  const repo = tempRepo({ files: { 'dir/x': 'inside\n', '.gitignore': 'ignored.log\n' } });
  const outside = path.join(repo.base, 'outside');
  fs.mkdirSync(outside);
  try {
    await step(repo, () => {
      repo.rm('dir');
      repo.write('.gitignore', 'ignored.log\ndir\n');
      fs.symlinkSync(outside, path.join(repo.dir, 'dir'));
    });
    const r = await cli(repo, ['undo', '1']);
    assert.is(r.code, 0, r.stderr);
    assert.match(r.stdout, /! dir\/x\s+left as it is: dir is a symlink not in the snapshot; it was not followed/);
    assert.equal(fs.readdirSync(outside), []);
    assert.is(repo.read('.gitignore').toString(), 'ignored.log\n');
  } finally {
    repo.cleanup();
  }
});

test('ignored files, skipped files and nested repositories are never touched', async () => {
  const repo = tempRepo({ files: { '.gitignore': 'build/\n', 'a.txt': 'a\n' } });
  try {
    repo.git(['config', 'agentsnap.maxFileSize', '100']);
    repo.write('big.bin', 'x'.repeat(500));
    await step(repo, () => {
      repo.write('build/out.o', 'object\n');
      repo.write('.env', 'SECRET=1\n');
      repo.write('a.txt', 'changed\n');
      repo.write('big.bin', 'small now\n'); // skipped before the call, snapshotted after
      fs.mkdirSync(path.join(repo.dir, 'nested'));
      repo.git(['init', '-q'], { cwd: path.join(repo.dir, 'nested') });
      fs.writeFileSync(path.join(repo.dir, 'nested', 'n.txt'), 'n\n');
      repo.git(['add', '.'], { cwd: path.join(repo.dir, 'nested') });
      repo.git(['commit', '-qm', 'n'], { cwd: path.join(repo.dir, 'nested') });
    });
    const r = await cli(repo, ['undo', '1']);
    assert.is(r.code, 0, r.stderr);
    assert.is(repo.read('a.txt').toString(), 'a\n');
    assert.is(repo.read('build/out.o').toString(), 'object\n');
    assert.is(repo.read('.env').toString(), 'SECRET=1\n');
    assert.is(repo.read('big.bin').toString(), 'small now\n', 'skipped at the target: kept');
    assert.match(r.stdout, /! big.bin\s+left as it is: not in the target's snapshot \(over the size cap: 500 bytes\): kept as it is/);
    assert.is(repo.read('nested/n.txt').toString(), 'n\n');
    assert.match(r.stdout, /! nested\s+left as it is: nested repository/);
  } finally {
    repo.cleanup();
  }
});

test('restore N -- path brings back one file as before step N, or after it with --after', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a0\n', 'b.txt': 'b0\n' } });
  try {
    await step(repo, () => {
      repo.write('a.txt', 'a1\n');
      repo.write('b.txt', 'b1\n');
    });
    await step(repo, () => {
      repo.write('a.txt', 'a2\n');
      repo.write('b.txt', 'b2\n');
    });
    let r = await cli(repo, ['restore', '1', '--', 'a.txt']);
    assert.is(r.code, 0, r.stderr);
    assert.is(repo.read('a.txt').toString(), 'a0\n');
    assert.is(repo.read('b.txt').toString(), 'b2\n');
    r = await cli(repo, ['restore', '1', '--after', 'a.txt'], { cwd: repo.dir });
    assert.is(r.code, 0, r.stderr);
    assert.is(repo.read('a.txt').toString(), 'a1\n');
    r = await cli(repo, ['restore', '1']);
    assert.is(r.code, 2);
    assert.match(r.stderr, /name the paths/);
  } finally {
    repo.cleanup();
  }
});

test('revert N takes back only step N; a conflict lists the files, exits 4 and changes nothing', async () => {
  const repo = tempRepo({ files: { 'a.txt': '1\n2\n3\n4\n5\n6\n7\n', 'b.txt': 'b\n' } });
  try {
    await step(repo, () => repo.write('a.txt', '1\nTWO\n3\n4\n5\n6\n7\n'));
    await step(repo, () => {
      repo.write('a.txt', '1\nTWO\n3\n4\n5\n6\nSEVEN\n');
      repo.write('b.txt', 'B\n');
    });
    await step(repo, () => repo.write('c.txt', 'c\n'));
    let r = await cli(repo, ['revert', '1']);
    assert.is(r.code, 0, r.stderr);
    assert.is(repo.read('a.txt').toString(), '1\n2\n3\n4\n5\n6\nSEVEN\n');
    assert.is(repo.read('b.txt').toString(), 'B\n');
    assert.is(repo.read('c.txt').toString(), 'c\n');
    await step(repo, () => repo.write('b.txt', 'B again\n'));
    const before = worktreeFiles(repo);
    r = await cli(repo, ['revert', '2']);
    assert.is(r.code, 4);
    assert.match(r.stderr, /conflicts with later changes in 1 file: b.txt/);
    assert.equal(worktreeFiles(repo), before);
  } finally {
    repo.cleanup();
  }
});

test('if the agent committed during the undone steps, undo restores the files, leaves the branch, and says so', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    await step(repo, () => {
      repo.write('a.txt', 'agent\n');
      repo.git(['commit', '-qam', 'agent commit']);
    });
    const head = repo.git(['rev-parse', 'HEAD']);
    const r = await cli(repo, ['undo', '1']);
    assert.is(r.code, 0, r.stderr);
    assert.is(repo.read('a.txt').toString(), 'a\n');
    assert.is(repo.git(['rev-parse', 'HEAD']), head);
    assert.match(r.stdout, /HEAD moved during these steps .* the branch is left where it is/);
  } finally {
    repo.cleanup();
  }
});

test('steps with effects outside the worktree are marked in log and listed after an undo that crosses them', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    await step(repo, () => repo.write('a.txt', 'b\n'));
    // snap records no tool input: write one through the library.
    const { openRepo, recordPre, recordPost } = await import('../../src/index.js');
    const r0 = await openRepo(repo.dir, { env: repo.env });
    const id = sessionId(repo);
    await recordPre(await openContext(r0), id, { tool: 'Bash', input: { command: 'npm test && git push origin main' } });
    await recordPost(await openContext(r0), id, {});
    const log = await cli(repo, ['log']);
    assert.match(log.stdout, /not undoable: git push/);
    const r = await cli(repo, ['undo', '1']);
    assert.is(r.code, 0, r.stderr);
    assert.match(r.stdout, /files restored; not undoable: step 2 `npm test && git push origin main`/);
  } finally {
    repo.cleanup();
  }
});

test('an agent running `agentsnap undo` through its own shell tool does not deadlock', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const { cliProcess } = await import('../support/helpers.js');
    await step(repo, () => repo.write('a.txt', 'b\n'));
    const pre = await cliProcess(repo, ['snap', '--phase', 'pre', '--tool', 'Bash', '-q']);
    assert.is(pre.code, 0, pre.stderr);
    // The Bash tool call itself runs undo (step 2 is open meanwhile).
    repo.git(['config', 'agentsnap.lockTimeout', '3000']); // a deadlock would fail as Busy, not hang
    const u = await cliProcess(repo, ['undo']);
    assert.is(u.code, 0, u.stderr);
    assert.match(u.stdout, /undo 1/, 'the open step is not picked');
    const post = await cliProcess(repo, ['snap', '--phase', 'post', '--json']);
    assert.is(post.code, 0, post.stderr);
    const out = JSON.parse(post.stdout) as { step: number; changed: { path: string }[] };
    assert.is(out.step, 2);
    assert.equal(
      out.changed.map((c) => c.path),
      ['a.txt'],
      'the undo shows up as what the call changed',
    );
    assert.is(repo.read('a.txt').toString(), 'a\n');
  } finally {
    repo.cleanup();
  }
});

test('an undo interrupted half way is completed by the next command', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const before = worktreeFiles(repo);
    await step(repo, () => {
      for (let i = 0; i < 5; i++) repo.write(`f${i}.txt`, `${i}\n`);
      repo.write('a.txt', 'changed\n');
    });
    const { undo } = await import('../../src/index.js');
    let failed = false;
    try {
      await undo({ cwd: repo.dir, env: repo.env, step: 1, interruptAfter: 2 });
    } catch {
      failed = true;
    }
    assert.ok(failed);
    assert.not.equal(worktreeFiles(repo), before, 'half applied');
    let st = JSON.parse((await cli(repo, ['status', '--json'])).stdout) as { interrupted: number[] };
    assert.equal(st.interrupted, [1]);
    const r = await cli(repo, ['undo', '--dry-run']);
    assert.is(r.code, 0, r.stderr);
    const r2 = await cli(repo, ['redo', '--dry-run']);
    assert.is(r2.code, 1, 'nothing to redo yet: the undo is not done');
    // A restore that changes nothing (a.txt is already as before step 1 once the undo is completed).
    const r3 = await cli(repo, ['restore', '1', '--', 'a.txt']);
    assert.is(r3.code, 0, r3.stderr);
    assert.match(r3.stderr, /completed interrupted operation 1 \(undo\)/);
    assert.equal(worktreeFiles(repo), before);
    st = JSON.parse((await cli(repo, ['status', '--json'])).stdout) as { interrupted: number[] };
    assert.equal(st.interrupted, []);
    const red = await cli(repo, ['redo']);
    assert.is(red.code, 0, red.stderr);
    assert.is(repo.read('a.txt').toString(), 'changed\n');
  } finally {
    repo.cleanup();
  }
});

test('an interrupted undo followed by new snapshots is marked abandoned, not replayed over them', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    await step(repo, () => {
      repo.write('a.txt', 'b\n');
      repo.write('c.txt', 'c\n');
    });
    const { undo } = await import('../../src/index.js');
    await undo({ cwd: repo.dir, env: repo.env, step: 1, interruptAfter: 1 }).catch(() => undefined);
    await step(repo, () => repo.write('d.txt', 'd\n'));
    const files = worktreeFiles(repo);
    const r = await cli(repo, ['restore', '2', '--', 'd.txt']);
    assert.is(r.code, 0, r.stderr);
    assert.match(r.stderr, /interrupted operation 1 \(undo\) was not completed/);
    assert.not.ok(repo.exists('d.txt'));
    files.delete('d.txt');
    assert.equal(worktreeFiles(repo), files);
  } finally {
    repo.cleanup();
  }
});

test('undo across an unprotected step needs --force and says why', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    await step(repo, () => repo.write('a.txt', 'b\n'));
    const { openRepo, sessionPaths } = await import('../../src/index.js');
    const { appendEvent, eventBase } = await import('../../src/session/journal.js');
    const r0 = await openRepo(repo.dir, { env: repo.env });
    const id = sessionId(repo);
    appendEvent(sessionPaths(r0, id).journal, {
      ...eventBase(id),
      type: 'step.unprotected',
      step: 2,
      phase: 'pre',
      tool: 'Bash',
      reason: 'disk full',
    });
    let r = await cli(repo, ['undo', '1']);
    assert.is(r.code, 3);
    assert.match(r.stderr, /crosses an unprotected step, step 2 \(disk full\)/);
    r = await cli(repo, ['undo', '1', '--force']);
    assert.is(r.code, 0, r.stderr);
    assert.is(repo.read('a.txt').toString(), 'a\n');
  } finally {
    repo.cleanup();
  }
});

test.run();
