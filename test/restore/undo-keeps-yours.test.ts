// Issue 32 item 1 (and the checkpoint half of item 5): `undo N` takes back
// what the recorded tool calls N… changed and keeps what the user changed
// outside them; a path both changed is refused (exit 3) unless --merge or
// --force; `--exact` keeps the old meaning (the worktree exactly as before
// step N). redo and restore follow the same rule. Every refusal leaves the
// worktree, the index, the refs and the journal byte-identical. Run through
// the built executable (bin/agentsnap.js), as a user runs it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { cli, cliProcess, indexBytes, refsUnder, sessionOf, step, tempRepo, worktreeFiles, type TempRepo } from '../support/helpers.js';

function text(repo: TempRepo, rel: string): string {
  return repo.read(rel).toString();
}

/** Everything a refused operation must leave as it was: the files, the index, every ref, every journal. */
function state(repo: TempRepo): string {
  const files = [...worktreeFiles(repo)].map(([p, f]) => `${f.mode} ${p} ${f.content.toString('base64')}`);
  const gitDir = repo.git(['rev-parse', '--absolute-git-dir']).trim();
  const sessions = path.join(gitDir, 'agentsnap', 'sessions');
  const journals = fs.existsSync(sessions)
    ? fs.readdirSync(sessions).map((id) => {
        const j = path.join(sessions, id, 'journal.jsonl');
        return fs.existsSync(j) ? `${id} ${fs.readFileSync(j).toString('base64')}` : id;
      })
    : [];
  return JSON.stringify({
    files,
    index: indexBytes(repo)?.toString('base64') ?? null,
    refs: [...refsUnder(repo, 'refs/')],
    journals,
  });
}

test("the issue's case: undo 4 takes back steps 4… and keeps the user's untracked scratch.txt (exit 0, reported kept)", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a0\n' } });
  try {
    for (let i = 1; i <= 3; i++) await step(repo, () => repo.write('a.txt', `a${i}\n`));
    await step(repo, () => repo.write('a.txt', 'a4\n'));
    repo.write('scratch.txt', 'my notes\n');
    await step(repo, () => repo.write('new.txt', 'by the agent\n'));
    const r = await cliProcess(repo, ['undo', '4']);
    assert.is(r.code, 0, r.stdout + r.stderr);
    assert.is(text(repo, 'a.txt'), 'a3\n');
    assert.not.ok(repo.exists('new.txt'), "the agent's new file is taken back");
    assert.is(text(repo, 'scratch.txt'), 'my notes\n', 'byte-identical');
    assert.match(r.stdout, /kept: scratch\.txt \(your edit between step 4 and 5\)/);
    const json = JSON.parse((await cliProcess(repo, ['redo', '--json'])).stdout) as { yours: unknown[]; changes: { path: string }[] };
    assert.equal(json.yours, [], 'redo: scratch.txt is as the undo found it, nothing to keep');
    assert.is(text(repo, 'a.txt'), 'a4\n');
    assert.is(text(repo, 'new.txt'), 'by the agent\n');
    assert.is(text(repo, 'scratch.txt'), 'my notes\n');
  } finally {
    repo.cleanup();
  }
});

test('paths only tool calls changed go back exactly: bytes, modes, deletions, creations, symlinks, a file turned directory', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a0\n', 'run.sh': '#!/bin/sh\n', 'gone.txt': 'g0\n', ln: 'x' } });
  try {
    fs.rmSync(path.join(repo.dir, 'ln'));
    fs.symlinkSync('a.txt', path.join(repo.dir, 'ln'));
    repo.git(['add', '-A']);
    repo.git(['commit', '-qm', 'link']);
    await step(repo, () => {
      repo.write('a.txt', Buffer.from([0, 1, 2, 255]));
      fs.chmodSync(path.join(repo.dir, 'run.sh'), 0o755);
      repo.rm('gone.txt');
      repo.write('made.txt', 'new\n');
      fs.rmSync(path.join(repo.dir, 'ln'));
      fs.symlinkSync('made.txt', path.join(repo.dir, 'ln'));
    });
    await step(repo, () => {
      repo.write('d/inner.txt', 'inner\n');
    });
    const before = worktreeFiles(repo);
    repo.write('mine.txt', 'user\n');
    const r = await cliProcess(repo, ['undo', '1']);
    assert.is(r.code, 0, r.stdout + r.stderr);
    const after = worktreeFiles(repo);
    assert.equal(after.get('a.txt')?.content.toString(), 'a0\n');
    assert.is(after.get('run.sh')?.mode, '100644');
    assert.is(after.get('gone.txt')?.content.toString(), 'g0\n');
    assert.not.ok(after.has('made.txt'));
    assert.is(after.get('ln')?.mode, '120000');
    assert.is(after.get('ln')?.content.toString(), 'a.txt');
    assert.not.ok(fs.existsSync(path.join(repo.dir, 'd')), 'the directory step 2 created is gone');
    assert.is(after.get('mine.txt')?.content.toString(), 'user\n');
    assert.ok(before.has('made.txt'));
  } finally {
    repo.cleanup();
  }
});

test('a path both the agent and the user changed: refused (exit 3) naming it and when each changed; nothing changes', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\ntwo\nthree\n' } });
  try {
    await step(repo, () => repo.write('a.txt', 'one\nTWO by agent\nthree\n'));
    await step(repo, () => repo.write('b.txt', 'b\n'));
    repo.write('a.txt', 'one\nTWO by agent\nthree\nfour mine\n');
    const before = state(repo);
    const r = await cliProcess(repo, ['undo', '1']);
    assert.is(r.code, 3, r.stdout + r.stderr);
    assert.match(r.stderr, /a\.txt: changed by step 1 and by you \(since the last snapshot\)/);
    assert.match(r.stderr, /--merge/);
    assert.not.match(r.stderr, /b\.txt/);
    assert.not.match(r.stderr, /at .*\.ts:\d+/, 'no stack trace');
    assert.is(state(repo), before, 'worktree, index, refs and journal byte-identical');
    const dry = await cliProcess(repo, ['undo', '1', '--dry-run', '--json']);
    assert.is(dry.code, 3);
    const plan = (JSON.parse(dry.stdout) as { files: { both: { path: string; by: string[] }[]; changes: { path: string }[] } }).files;
    assert.equal(
      plan.both.map((b) => [b.path, b.by]),
      [['a.txt', ['step 1']]],
    );
    assert.equal(
      plan.changes.map((c) => c.path),
      ['b.txt'],
    );
    assert.is(state(repo), before, 'a dry run changes nothing either');
  } finally {
    repo.cleanup();
  }
});

test("--merge: the user's version with the agent's changes taken out; a conflict is refused (exit 4) and nothing is written", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\ntwo\nthree\nfour\nfive\nsix\n' } });
  try {
    await step(repo, () => repo.write('a.txt', 'one\nTWO by agent\nthree\nfour\nfive\nsix\n'));
    await step(repo, () => repo.write('b.txt', 'b\n'));
    repo.write('a.txt', 'one\nTWO by agent\nthree\nfour\nfive\nsix mine\n');
    const r = await cliProcess(repo, ['undo', '1', '--merge']);
    assert.is(r.code, 0, r.stdout + r.stderr);
    assert.is(text(repo, 'a.txt'), 'one\ntwo\nthree\nfour\nfive\nsix mine\n');
    assert.not.ok(repo.exists('b.txt'));
    assert.match(r.stdout, /merged: a\.txt/);
    // redo brings back exactly what the undo took.
    const redo = await cliProcess(repo, ['redo']);
    assert.is(redo.code, 0, redo.stdout + redo.stderr);
    assert.is(text(repo, 'a.txt'), 'one\nTWO by agent\nthree\nfour\nfive\nsix mine\n');
    assert.is(text(repo, 'b.txt'), 'b\n');
  } finally {
    repo.cleanup();
  }
  const conflicting = tempRepo({ files: { 'a.txt': 'one\ntwo\nthree\n' } });
  try {
    await step(conflicting, () => conflicting.write('a.txt', 'one\nTWO by agent\nthree\n'));
    conflicting.write('a.txt', 'one\nTWO by agent, then mine\nthree\n');
    const before = state(conflicting);
    const r = await cliProcess(conflicting, ['undo', '1', '--merge']);
    assert.is(r.code, 4, r.stdout + r.stderr);
    assert.match(r.stderr, /a\.txt/);
    assert.match(r.stderr, /conflict/);
    assert.is(state(conflicting), before, 'nothing written');
  } finally {
    conflicting.cleanup();
  }
});

test('--force takes a path both changed back to the target (the user version stays in the safety snapshot); what only the user changed is kept', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a0\n' } });
  try {
    await step(repo, () => repo.write('a.txt', 'a1\n'));
    repo.write('a.txt', 'a1 and mine\n');
    repo.write('scratch.txt', 'mine\n');
    const r = await cliProcess(repo, ['undo', '1', '--force', '--json']);
    assert.is(r.code, 0, r.stdout + r.stderr);
    assert.is(text(repo, 'a.txt'), 'a0\n');
    assert.is(text(repo, 'scratch.txt'), 'mine\n');
    const res = JSON.parse(r.stdout) as { files: { safety: string; outside: { path: string }[] } };
    assert.equal(
      res.files.outside.map((o) => o.path),
      ['a.txt'],
    );
    assert.is(repo.git(['cat-file', 'blob', `${res.files.safety}:a.txt`]), 'a1 and mine\n');
  } finally {
    repo.cleanup();
  }
});

test('--exact: the worktree exactly as before step N, refusing (exit 3) where the user edits would be lost; with --force it deletes them', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a0\n' } });
  try {
    await step(repo, () => repo.write('a.txt', 'a1\n'));
    repo.write('scratch.txt', 'mine\n');
    await step(repo, () => repo.write('a.txt', 'a2\n'));
    const before = state(repo);
    const r = await cliProcess(repo, ['undo', '1', '--exact']);
    assert.is(r.code, 3, r.stdout + r.stderr);
    assert.match(r.stderr, /scratch\.txt \(before step 2\)/);
    assert.is(state(repo), before);
    const m = await cliProcess(repo, ['undo', '1', '--exact', '--merge']);
    assert.is(m.code, 2, m.stdout + m.stderr);
    assert.match(m.stderr, /exclude each other/);
    const f = await cliProcess(repo, ['undo', '1', '--exact', '--force']);
    assert.is(f.code, 0, f.stdout + f.stderr);
    assert.is(text(repo, 'a.txt'), 'a0\n');
    assert.not.ok(repo.exists('scratch.txt'));
  } finally {
    repo.cleanup();
  }
});

test('redo after edits made since the undo: keeps what only the user changed, refuses what both changed', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a0\n', 'b.txt': 'b0\n' } });
  try {
    await step(repo, () => {
      repo.write('a.txt', 'a1\n');
      repo.write('b.txt', 'b1\n');
    });
    assert.is((await cliProcess(repo, ['undo', '1'])).code, 0);
    repo.write('c.txt', 'mine after the undo\n');
    const r = await cliProcess(repo, ['redo']);
    assert.is(r.code, 0, r.stdout + r.stderr);
    assert.is(text(repo, 'a.txt'), 'a1\n');
    assert.is(text(repo, 'b.txt'), 'b1\n');
    assert.is(text(repo, 'c.txt'), 'mine after the undo\n');
    assert.match(r.stdout, /kept: c\.txt/);
    assert.is((await cliProcess(repo, ['undo', '1'])).code, 0);
    repo.write('a.txt', 'a0 and mine\n');
    const before = state(repo);
    const both = await cliProcess(repo, ['redo']);
    assert.is(both.code, 3, both.stdout + both.stderr);
    assert.match(both.stderr, /a\.txt: changed by operation 3 \(undo\) and by you/);
    assert.is(state(repo), before);
  } finally {
    repo.cleanup();
  }
});

test('restore of a whole directory keeps the files in it only the user changed; revert takes back only its step', async () => {
  const repo = tempRepo({ files: { 'src/a.txt': 'a0\n', 'src/b.txt': 'b0\n' } });
  try {
    await step(repo, () => {
      repo.write('src/a.txt', 'a1\n');
      repo.write('src/c.txt', 'c by agent\n');
    });
    repo.write('src/b.txt', 'b mine\n');
    const r = await cliProcess(repo, ['restore', '1', '--', 'src']);
    assert.is(r.code, 0, r.stdout + r.stderr);
    assert.is(text(repo, 'src/a.txt'), 'a0\n');
    assert.not.ok(repo.exists('src/c.txt'));
    assert.is(text(repo, 'src/b.txt'), 'b mine\n');
    assert.match(r.stdout, /kept: src\/b\.txt/);
    const exact = await cliProcess(repo, ['restore', '1', '--exact', '--', 'src']);
    assert.is(exact.code, 3, exact.stdout + exact.stderr);
    await step(repo, () => repo.write('src/d.txt', 'd\n'));
    repo.write('mine.txt', 'm\n');
    const v = await cliProcess(repo, ['revert', '2']);
    assert.is(v.code, 0, v.stdout + v.stderr);
    assert.not.ok(repo.exists('src/d.txt'));
    assert.is(text(repo, 'mine.txt'), 'm\n');
    assert.is(text(repo, 'src/b.txt'), 'b mine\n');
  } finally {
    repo.cleanup();
  }
});

test('a `snap -m` checkpoint is passed over without --force: undo keeps what it recorded, --exact returns to before it; undo of the checkpoint itself returns to before it', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a0\n', 'notes.txt': 'n0\n' } });
  try {
    await step(repo, () => repo.write('a.txt', 'a1\n'));
    repo.write('notes.txt', 'n1 mine\n');
    assert.is((await cli(repo, ['snap', '-m', 'save point'])).code, 0);
    await step(repo, () => repo.write('b.txt', 'b by agent\n'));
    const r = await cliProcess(repo, ['undo', '1']);
    assert.is(r.code, 0, r.stdout + r.stderr);
    assert.is(text(repo, 'a.txt'), 'a0\n');
    assert.not.ok(repo.exists('b.txt'));
    assert.is(text(repo, 'notes.txt'), 'n1 mine\n');
    assert.match(r.stdout, /kept: notes\.txt \(your edit at checkpoint 2: save point\)/);
    assert.is((await cliProcess(repo, ['redo'])).code, 0);
    const exact = await cliProcess(repo, ['undo', '1', '--exact']);
    assert.is(exact.code, 0, `no --force needed to go back over checkpoint 2: ${exact.stdout}${exact.stderr}`);
    assert.is(text(repo, 'notes.txt'), 'n0\n');
    assert.is(text(repo, 'a.txt'), 'a0\n');
    assert.not.ok(repo.exists('b.txt'));
    // The save-point workflow: undo of the user's own checkpoint N goes back to before it, no --force needed.
    const other = tempRepo({ files: { 'a.txt': 'a0\n' } });
    try {
      assert.is((await cli(other, ['snap', '-m', 'before refactor'])).code, 0);
      other.write('a.txt', 'a1 refactored by hand\n');
      other.write('new.txt', 'made by hand\n');
      assert.is((await cli(other, ['snap', '-m', 'after refactor'])).code, 0);
      other.write('later.txt', 'not saved in a checkpoint\n');
      const bare = await cliProcess(other, ['undo']);
      assert.is(bare.code, 0, bare.stdout + bare.stderr);
      assert.match(bare.stdout, /^undo 2 /m);
      assert.is(text(other, 'a.txt'), 'a0\n');
      assert.not.ok(other.exists('new.txt'));
      assert.is(text(other, 'later.txt'), 'not saved in a checkpoint\n', 'an edit made since the last checkpoint is kept');
      assert.ok(sessionOf(other).length > 0);
    } finally {
      other.cleanup();
    }
  } finally {
    repo.cleanup();
  }
});

test.run();
