import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cli, tempRepo, step } from '../support/helpers.js';
import { outsideEffect } from '../../src/index.js';
import { contentLockFile } from '../../src/session/session.js';
import { openRepo } from '../../src/git/repo.js';

test('undo writes the snapshotted bytes exactly, whatever .gitattributes and core.autocrlf say', async () => {
  const repo = tempRepo({ files: { '.gitattributes': '*.txt text eol=crlf\n*.dat filter=never\n' } });
  try {
    repo.git(['config', 'core.autocrlf', 'true']);
    repo.write('lf.txt', 'line one\nline two\n');
    repo.write('mixed.txt', 'a\r\nb\nc\r');
    repo.write('x.dat', 'raw $Id$\n');
    await step(repo, () => {
      repo.write('lf.txt', 'changed\n');
      repo.write('mixed.txt', 'x\n');
      repo.write('x.dat', 'other\n');
    });
    const r = await cli(repo, ['undo', '1']);
    assert.is(r.code, 0, r.stderr);
    assert.is(repo.read('lf.txt').toString(), 'line one\nline two\n');
    assert.is(repo.read('mixed.txt').toString(), 'a\r\nb\nc\r');
    assert.is(repo.read('x.dat').toString(), 'raw $Id$\n');
  } finally {
    repo.cleanup();
  }
});

test('snapshots wait for the worktree content lock that a restore holds (exit 5 when it is never released)', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    assert.is((await cli(repo, ['snap', '-q'])).code, 0);
    repo.git(['config', 'agentsnap.lockTimeout', '300']);
    const r0 = await openRepo(repo.dir, { env: repo.env });
    const lock = contentLockFile(r0);
    // A live owner (this process) holds it, as an undo in progress would.
    fs.writeFileSync(
      lock,
      JSON.stringify({ pid: process.pid, start: null, host: os.hostname(), since: new Date().toISOString(), purpose: 'undo' }),
    );
    const r = await cli(repo, ['snap', '--phase', 'pre']);
    assert.is(r.code, 5, r.stderr);
    assert.match(r.stderr, /content-.*\.lock is locked by pid/);
    fs.unlinkSync(lock);
    assert.is((await cli(repo, ['snap', '--phase', 'pre', '-q'])).code, 0);
  } finally {
    repo.cleanup();
  }
});

test('undo refuses a session of another worktree', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const res = await cli(repo, ['snap', '--json']);
    const id = (JSON.parse(res.stdout) as { session: string }).session;
    const other = path.join(repo.base, 'wt2');
    repo.git(['worktree', 'add', '-q', other]);
    const r = await cli(repo, ['undo', '1', '--session', id], { cwd: other });
    assert.is(r.code, 2);
    assert.match(r.stderr, /belongs to the worktree/);
  } finally {
    repo.cleanup();
  }
});

test('effects outside the worktree are recognised from the tool input', () => {
  const wt = '/work/repo';
  const bash = (command: string) => outsideEffect({ tool: 'Bash', input: { command } }, wt);
  assert.is(bash('git push origin main'), 'git push');
  assert.is(bash('cd x && git -C sub push --force'), 'git push');
  assert.is(bash('npm version patch && npm publish'), 'package publish');
  assert.is(bash('cargo publish --dry-run=false'), 'cargo publish');
  assert.is(bash('docker push registry/app:1'), 'image push');
  assert.is(bash('kubectl apply -f k8s/'), 'cluster change');
  assert.is(bash('terraform apply -auto-approve'), 'infrastructure change');
  assert.is(bash('curl -X POST https://api.example.com/x'), 'network request that may change remote state');
  assert.is(bash('curl -d @body.json https://api'), 'network request that may change remote state');
  assert.is(bash('ssh prod "systemctl restart app"'), 'command on another host');
  assert.is(bash('rsync -a dist/ web:/srv/www'), 'copy to or from another host');
  assert.is(bash('npx prisma migrate deploy'), 'database migration');
  assert.is(bash('bin/rails db:migrate'), 'database migration');
  assert.is(bash('echo hi > /etc/motd'), 'writes /etc/motd outside the repository');
  assert.is(bash('cp build/app /usr/local/bin/app'), 'writes /usr/local/bin/app outside the repository');
  assert.is(
    outsideEffect({ tool: 'Write', input: { file_path: '/home/u/.bashrc', content: '' } }, wt),
    'writes /home/u/.bashrc outside the repository',
  );
  // Harmless ones.
  assert.is(bash('git status && npm test'), null);
  assert.is(bash('curl https://example.com'), null);
  assert.is(bash('echo "git push" > notes.txt'), null);
  assert.is(bash('ls > /dev/null 2>&1'), null);
  assert.is(bash('echo x > /work/repo/out.txt'), null);
  assert.is(outsideEffect({ tool: 'Write', input: { file_path: '/work/repo/a.txt' } }, wt), null);
  assert.is(outsideEffect({ tool: 'Read', input: { file_path: '/etc/passwd' } }, wt), null);
});

// Regression (found by adversarial testing, test/restore/undo.attack.test.ts): undo said "! sub  left as
// it is: nested repository: left alone" for a nested repository the agent had deleted. A snapshot
// records a nested repository as its commit id only (documented), so it cannot come back; the
// message now says so, and everything else is as before.
test('undo after the agent deleted a nested repository says it is not restored (not "left as it is")', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const sub = path.join(repo.dir, 'sub');
    fs.mkdirSync(sub);
    repo.git(['init', '-q', '-b', 'main'], { cwd: sub });
    fs.writeFileSync(path.join(sub, 's'), 's\n');
    repo.git(['add', 's'], { cwd: sub });
    repo.git(['commit', '-q', '-m', 's'], { cwd: sub });
    const head = repo.git(['rev-parse', 'HEAD'], { cwd: sub }).trim();
    fs.writeFileSync(path.join(sub, 'wip.txt'), 'the user work in progress\n');
    await step(repo, () => {
      fs.rmSync(sub, { recursive: true, force: true });
      repo.write('a.txt', 'agent a\n');
    });
    const dry = await cli(repo, ['undo', '--dry-run']);
    assert.is(dry.code, 0, dry.stderr);
    assert.not.match(dry.stdout, /sub\s+left as it is/, dry.stdout);
    const res = await cli(repo, ['undo']);
    assert.is(res.code, 0, res.stderr);
    assert.not.ok(fs.existsSync(sub));
    assert.is(repo.read('a.txt').toString(), 'a\n');
    assert.not.match(res.stdout, /sub\s+left as it is/, res.stdout);
    assert.match(
      res.stdout,
      new RegExp(
        `! sub  nested repository: not restored \\(agentsnap records only its commit id ${head.slice(0, 12)}; its own files are not in the snapshot\\)`,
      ),
      res.stdout,
    );
  } finally {
    repo.cleanup();
  }
});

test('undo leaves a nested repository that is still there "left alone", as before', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const sub = path.join(repo.dir, 'sub');
    fs.mkdirSync(sub);
    repo.git(['init', '-q', '-b', 'main'], { cwd: sub });
    fs.writeFileSync(path.join(sub, 's'), 's\n');
    repo.git(['add', 's'], { cwd: sub });
    repo.git(['commit', '-q', '-m', 's'], { cwd: sub });
    await step(repo, () => {
      fs.writeFileSync(path.join(sub, 's'), 's2\n');
      repo.git(['commit', '-q', '-am', 's2'], { cwd: sub });
    });
    const res = await cli(repo, ['undo']);
    assert.is(res.code, 0, res.stderr);
    assert.match(res.stdout, /! sub  left as it is: nested repository: left alone/, res.stdout);
    assert.is(fs.readFileSync(path.join(sub, 's'), 'utf8'), 's2\n');
  } finally {
    repo.cleanup();
  }
});

// Failing test first (generative seed 430, every mode): an executable the agent made unreadable (chmod
// 000) came back from undo still 000: the restore keeps the file's own permission bits and derived the
// exec bits from its read bits, of which there were none. Its result was not its target (100644, not
// 100755), and the user's file stayed unreadable.
test("undo of an agent's chmod 000 on an executable gives back a readable executable with its bytes", async () => {
  const repo = tempRepo({ files: { 'run.sh': '#!/bin/sh\necho hi\n' } });
  try {
    fs.chmodSync(path.join(repo.dir, 'run.sh'), 0o755);
    repo.git(['add', '-A']);
    repo.git(['commit', '-q', '-m', 'exec']);
    await step(repo, () => fs.chmodSync(path.join(repo.dir, 'run.sh'), 0o000));
    const res = await cli(repo, ['undo']);
    assert.is(res.code, 0, res.stderr);
    const mode = fs.statSync(path.join(repo.dir, 'run.sh')).mode & 0o777;
    assert.ok((mode & 0o500) === 0o500, `owner can read and run it again (mode ${mode.toString(8)})`);
    assert.is(repo.read('run.sh').toString(), '#!/bin/sh\necho hi\n');
  } finally {
    repo.cleanup();
  }
});

test.run();
