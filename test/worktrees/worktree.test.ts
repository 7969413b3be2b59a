import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { indexBytes, refsUnder, tempRepo, treeFiles, type TempRepo } from '../support/helpers.js';
import { openRepo } from '../../src/git/repo.js';
import { createSessionWorktree, startWorktreeSession } from '../../src/worktrees/worktree.js';
import { loadSession } from '../../src/session/session.js';
import { isAgentsnapError } from '../../src/base/errors.js';

async function repoOf(r: TempRepo, cwd = r.dir) {
  return openRepo(cwd, { env: r.env });
}

function status(r: TempRepo, cwd: string): string {
  return r.git(['status', '--porcelain=v1', '--untracked-files=all'], { cwd });
}

test('a session worktree starts from the user worktree as it is: same bytes, same status, detached HEAD, user untouched', async () => {
  const r = tempRepo({ files: { 'a.txt': 'one\n', 'keep.txt': 'keep\n', '.gitignore': '.env\nnode_modules/\n', 'gone.txt': 'x\n' } });
  try {
    r.write('a.txt', 'two\r\n');
    r.write('b.txt', 'staged\n');
    r.git(['add', 'b.txt']);
    r.write('c/untracked.bin', Buffer.from([0, 1, 2, 255]));
    r.rm('gone.txt');
    r.write('run.sh', '#!/bin/sh\n', 0o755);
    fs.symlinkSync('a.txt', path.join(r.dir, 'link'));
    r.write('.env', 'SECRET=1\n');
    r.write('node_modules/pkg/index.js', 'module.exports = 1;\n');
    r.git(['config', '--add', 'agentsnap.worktreeCopy', '.env']);
    r.git(['config', '--add', 'agentsnap.worktreeShare', 'node_modules']);
    r.git(['config', 'agentsnap.worktreeShareSymlink', 'true']);
    const userIndex = indexBytes(r);
    const userStatus = status(r, r.dir);
    const head = r.git(['rev-parse', 'HEAD']).trim();

    const res = await startWorktreeSession(await repoOf(r), { session: 'wt1' });
    const wt = res.meta.path;
    const common = fs.realpathSync(path.join(r.dir, '.git'));
    assert.is(wt, path.join(common, 'agentsnap', 'worktrees', 'wt1'));
    assert.is(res.env.AGENTSNAP_SESSION, 'wt1');
    assert.is(res.env.AGENTSNAP_WORKTREE, wt);
    // Same bytes, modes and symlinks as the user's worktree.
    assert.is(fs.readFileSync(path.join(wt, 'a.txt'), 'utf8'), 'two\r\n');
    assert.equal(fs.readFileSync(path.join(wt, 'c/untracked.bin')), Buffer.from([0, 1, 2, 255]));
    assert.is(fs.statSync(path.join(wt, 'run.sh')).mode & 0o111, 0o111);
    assert.is(fs.readlinkSync(path.join(wt, 'link')), 'a.txt');
    assert.not.ok(fs.existsSync(path.join(wt, 'gone.txt')));
    // Uncommitted there too, with the user's staged state mirrored.
    // A symlinked share shows as untracked to git in the agent's worktree (documented); snapshots leave it out.
    const shareHow = res.meta.shared[0]?.how;
    const wtStatus = status(r, wt)
      .split('\n')
      .filter((l) => !(shareHow === 'symlink' && l === '?? node_modules'))
      .join('\n');
    assert.is(wtStatus, userStatus);
    assert.is(r.git(['rev-parse', 'HEAD'], { cwd: wt }).trim(), head);
    assert.is(r.gitRaw(['symbolic-ref', '-q', 'HEAD'], { cwd: wt }).status, 1, 'detached');
    assert.is(r.git(['branch', '--list']).trim(), '* main', 'no branch created');
    // Setup: .env copied, node_modules shared (clone where supported, else a symlink left out of snapshots).
    assert.is(fs.readFileSync(path.join(wt, '.env'), 'utf8'), 'SECRET=1\n');
    assert.is(fs.readFileSync(path.join(wt, 'node_modules/pkg/index.js'), 'utf8'), 'module.exports = 1;\n');
    assert.is(res.meta.shared.length, 1);
    const baseline = treeFiles(r, res.baseline.commit);
    assert.not.ok(baseline.has('node_modules'), 'the shared directory is not snapshotted');
    assert.not.ok(baseline.has('.env'));
    assert.is(baseline.get('a.txt')?.content.toString(), 'two\r\n');
    assert.ok(baseline.has('b.txt'));
    // The session lives in the worktree; the user's worktree, index and status are untouched.
    assert.is(loadSession(await repoOf(r), 'wt1').worktree, wt);
    assert.equal(indexBytes(r), userIndex);
    assert.is(status(r, r.dir), userStatus);
    assert.ok(refsUnder(r, 'refs/agentsnap/sessions/wt1/').has('refs/agentsnap/sessions/wt1/origin'));
  } finally {
    r.cleanup();
  }
});

test('--from HEAD starts clean; a revision works too', async () => {
  const r = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    r.write('a.txt', 'dirty\n');
    r.write('new.txt', 'n\n');
    const first = r.git(['rev-parse', 'HEAD']).trim();
    r.git(['commit', '-qam', 'second']);
    r.write('a.txt', 'dirty again\n');
    const res = await createSessionWorktree(await repoOf(r), { session: 'clean', from: 'HEAD' });
    assert.is(fs.readFileSync(path.join(res.meta.path, 'a.txt'), 'utf8'), 'dirty\n');
    assert.not.ok(fs.existsSync(path.join(res.meta.path, 'new.txt')));
    assert.is(status(r, res.meta.path), '');
    assert.is(res.meta.origin, null);
    const old = await createSessionWorktree(await repoOf(r), { session: 'old', from: first });
    assert.is(fs.readFileSync(path.join(old.meta.path, 'a.txt'), 'utf8'), 'one\n');
    const bad = await createSessionWorktree(await repoOf(r), { session: 'bad', from: 'no-such-rev' }).catch((e: unknown) => e);
    assert.ok(isAgentsnapError(bad) && bad.exitCode === 2, String(bad));
  } finally {
    r.cleanup();
  }
});

test('the setup command comes from git config, gets the session env, and a failure leaves nothing behind', async () => {
  const r = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    r.git(['config', 'agentsnap.worktreeSetup', 'echo "$AGENTSNAP_SESSION" > setup-ran.txt']);
    const ok = await createSessionWorktree(await repoOf(r), { session: 'set1' });
    assert.is(fs.readFileSync(path.join(ok.meta.path, 'setup-ran.txt'), 'utf8'), 'set1\n');
    r.git(['config', 'agentsnap.worktreeSetup', 'echo broken >&2; exit 3']);
    const before = r.git(['worktree', 'list', '--porcelain']);
    const err = await createSessionWorktree(await repoOf(r), { session: 'set2' }).catch((e: unknown) => e);
    assert.ok(isAgentsnapError(err) && err.code === 'WorktreeSetupFailed', String(err));
    assert.match(String((err as { data: { output: string } }).data.output), 'broken');
    assert.is(r.git(['worktree', 'list', '--porcelain']), before);
    const common = path.join(r.dir, '.git');
    assert.not.ok(fs.existsSync(path.join(common, 'agentsnap', 'worktrees', 'set2')));
    assert.not.ok(fs.existsSync(path.join(common, 'agentsnap', 'sessions', 'set2')));
    assert.is(refsUnder(r, 'refs/agentsnap/sessions/set2/').size, 0);
  } finally {
    r.cleanup();
  }
});

test.run();
