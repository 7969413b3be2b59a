// Issue 29 item 7: a repository made with `git init --object-format=sha256` works everywhere. Object ids there
// are 64 hex digits (32 bytes in an index file), the null id and the empty tree differ from SHA-1's. Every test
// here runs in sha256 whatever AGENTSNAP_TEST_OBJECT_FORMAT says (which runs other files in sha256 too).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { cli, step, tempRepo, worktreeFiles, type TempRepo } from './helpers.js';

function sha256Repo(files: Record<string, string>): TempRepo {
  const repo = tempRepo({ files, objectFormat: 'sha256' });
  assert.is(repo.git(['rev-parse', '--show-object-format']).trim(), 'sha256');
  return repo;
}

async function interrupted(repo: TempRepo): Promise<number[]> {
  const st = await cli(repo, ['status', '--json']);
  assert.is(st.code, 0, st.stderr);
  return (JSON.parse(st.stdout) as { interrupted: number[] }).interrupted;
}

/** One step that deletes a file and changes two files' type (file → symlink, file → directory). */
async function deleteAndRetype(repo: TempRepo): Promise<number> {
  return step(repo, () => {
    repo.rm('gone.txt');
    repo.rm('link');
    fs.symlinkSync('keep.txt', path.join(repo.dir, 'link'));
    repo.rm('dir');
    repo.write('dir/inner.txt', 'inner\n');
  });
}

const FILES = { 'keep.txt': 'keep\n', 'gone.txt': 'gone\n', link: 'a file, later a symlink\n', dir: 'a file, later a directory\n' };

test('sha256: undo and redo of a step that deletes a file and changes types exit 0 with the worktree at the target, nothing interrupted', async () => {
  const repo = sha256Repo(FILES);
  try {
    const before = worktreeFiles(repo);
    await deleteAndRetype(repo);
    const after = worktreeFiles(repo);
    const u = await cli(repo, ['undo']);
    assert.is(u.code, 0, u.stderr);
    assert.equal(worktreeFiles(repo), before);
    assert.equal(await interrupted(repo), []);
    const r = await cli(repo, ['redo']);
    assert.is(r.code, 0, r.stderr);
    assert.equal(worktreeFiles(repo), after);
    assert.ok(fs.lstatSync(path.join(repo.dir, 'link')).isSymbolicLink());
    assert.equal(await interrupted(repo), []);
  } finally {
    repo.cleanup();
  }
});

test('sha256: restore and revert of a step that deletes a file and changes types exit 0 with the worktree at the target', async () => {
  const repo = sha256Repo(FILES);
  try {
    const before = worktreeFiles(repo);
    await deleteAndRetype(repo);
    const after = worktreeFiles(repo);
    await step(repo, () => repo.write('keep.txt', 'keep 2\n'));
    const afterTwo = worktreeFiles(repo);
    const rs = await cli(repo, ['restore', '1', '--', 'gone.txt', 'link', 'dir']);
    assert.is(rs.code, 0, rs.stderr);
    const expected = new Map(before);
    expected.set('keep.txt', afterTwo.get('keep.txt')!);
    assert.equal(worktreeFiles(repo), expected);
    assert.equal(await interrupted(repo), []);
    const ra = await cli(repo, ['restore', '1', '--after', '--', 'gone.txt', 'link', 'dir']);
    assert.is(ra.code, 0, ra.stderr);
    assert.equal(worktreeFiles(repo), afterTwo);
    assert.equal(await interrupted(repo), []);
    const rv = await cli(repo, ['revert', '1']);
    assert.is(rv.code, 0, rv.stderr);
    assert.equal(worktreeFiles(repo), expected);
    assert.equal(await interrupted(repo), []);
    assert.not.equal(after, expected);
  } finally {
    repo.cleanup();
  }
});

test.run();
