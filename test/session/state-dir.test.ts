// The state directory (src/base/state-dir.ts): no state file is written
// through a symlink an agent put in its place (the link's target keeps its
// bytes), files are 0600 and directories 0700 whatever the umask, and the
// warm server's warm-up snapshot works on a fresh repository (the content
// lock's directory is created where the lock is named).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { cli, cliProcess, runProcess, BIN, sessionOf, tempRepo, type TempRepo } from '../support/helpers.js';
import { openRepo } from '../../src/git/repo.js';
import { acquireLock } from '../../src/base/lock.js';
import { contentLockFile } from '../../src/session/locks.js';

function seeded(): TempRepo {
  const repo = tempRepo({ files: { 'a.txt': 'one\n', 'src/b.txt': 'two\n' } });
  return repo;
}

const stateDir = (repo: TempRepo) => path.join(repo.dir, '.git', 'agentsnap');

/** A file outside the repository with known bytes, which no agentsnap command may change. */
function outsideFile(repo: TempRepo, name: string): { file: string; bytes: Buffer } {
  const file = path.join(repo.base, name);
  const bytes = Buffer.from(`the user's own ${name}, not agentsnap's\n`);
  fs.writeFileSync(file, bytes);
  return { file, bytes };
}

/** Replaces a state file with a symlink to `target`, as an agent step running as the user can. */
function linkInPlace(file: string, target: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.rmSync(file, { force: true });
  fs.symlinkSync(target, file);
}

const ON = { AGENTSNAP_SERVER: 'on' };

/** Polls the log until the server says how its warm-up ended (a condition, not a delay); '' at the deadline. */
async function warmUpOutcome(log: string): Promise<string> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const text = fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : '';
    const line = text.split('\n').find((l) => /engine: (warmed up|warm-up snapshot failed|not started)/.test(l));
    if (line) return line;
    await new Promise((r) => setTimeout(r, 20));
  }
  return '';
}

test("state dir: server start on a fresh repository warms its engine up (the content lock's directory is created)", async () => {
  const repo = seeded();
  try {
    assert.not.ok(fs.existsSync(path.join(stateDir(repo), 'locks')), 'a fresh repository: no locks dir yet');
    const start = await cliProcess(repo, ['server', 'start', '--json'], { env: { ...ON, AGENTSNAP_SERVER_TRACE: '1' } });
    assert.is(start.code, 0, start.stderr);
    const log = path.join(stateDir(repo), 'run', 'main', 'server.log');
    try {
      const outcome = await warmUpOutcome(log);
      assert.match(outcome, /engine: warmed up/, fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : 'no log');
    } finally {
      await cliProcess(repo, ['server', 'stop'], { env: ON });
    }
  } finally {
    repo.cleanup();
  }
});

test("state dir: a warm-up snapshot that fails is in the server's log without AGENTSNAP_SERVER_TRACE", async () => {
  const repo = seeded();
  // The content lock held by this (live) process: the server's warm-up waits the configured 200 ms and fails Busy.
  repo.git(['config', 'agentsnap.lockTimeout', '200']);
  const r = await openRepo(repo.dir, { env: repo.env });
  const held = await acquireLock(contentLockFile(r), { purpose: 'test' });
  try {
    const start = await cliProcess(repo, ['server', 'start'], { env: ON });
    assert.is(start.code, 0, start.stderr);
    const log = path.join(stateDir(repo), 'run', 'main', 'server.log');
    try {
      const deadline = Date.now() + 60_000;
      let text = '';
      while (Date.now() < deadline && !/content-[0-9a-f]+\.lock is locked/.test(text)) {
        await new Promise((res) => setTimeout(res, 20));
        text = fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : '';
      }
      assert.match(text, /content-[0-9a-f]+\.lock is locked by pid \d+ \(test/);
    } finally {
      await cliProcess(repo, ['server', 'stop'], { env: ON });
    }
  } finally {
    held.release();
    repo.cleanup();
  }
});

test('state dir: a gc.stamp replaced by a symlink is replaced, its target keeps its bytes', async () => {
  const repo = seeded();
  try {
    fs.mkdirSync(stateDir(repo), { recursive: true });
    const outside = outsideFile(repo, 'stamp-target.txt');
    const stamp = path.join(stateDir(repo), 'gc.stamp');
    linkInPlace(stamp, outside.file);
    const r = await cliProcess(repo, ['wrap', '-q', '--', 'true']);
    assert.is(r.code, 0, r.stderr);
    assert.is(fs.readFileSync(outside.file, 'utf8'), outside.bytes.toString('utf8'), "the link's target is untouched");
    const st = fs.lstatSync(stamp);
    assert.ok(st.isFile(), 'gc.stamp is a regular file again');
    assert.is(st.mode & 0o777, 0o600);
  } finally {
    repo.cleanup();
  }
});

test('state dir: a server.log replaced by a symlink is replaced by a fresh log, its target keeps its bytes', async () => {
  const repo = seeded();
  try {
    const outside = outsideFile(repo, 'log-target.txt');
    const log = path.join(stateDir(repo), 'run', 'main', 'server.log');
    linkInPlace(log, outside.file);
    const start = await cliProcess(repo, ['server', 'start'], { env: { ...ON, AGENTSNAP_SERVER_TRACE: '1' } });
    try {
      assert.is(start.code, 0, start.stderr);
      await warmUpOutcome(log);
      assert.is(fs.readFileSync(outside.file, 'utf8'), outside.bytes.toString('utf8'), "the link's target is untouched");
      const st = fs.lstatSync(log);
      assert.ok(st.isFile(), 'server.log is a regular file');
      assert.is(st.mode & 0o777, 0o600);
    } finally {
      await cliProcess(repo, ['server', 'stop'], { env: ON });
    }
  } finally {
    repo.cleanup();
  }
});

for (const linked of ['run/main', 'run']) {
  test(`state dir: a server run dir whose ${linked} is a symlink to a directory elsewhere: server start refuses (exit 3), nothing is created there`, async () => {
    const repo = seeded();
    try {
      const elsewhere = path.join(repo.base, 'elsewhere');
      fs.mkdirSync(elsewhere);
      linkInPlace(path.join(stateDir(repo), linked), elsewhere);
      const start = await cliProcess(repo, ['server', 'start'], { env: ON });
      try {
        assert.is(start.code, 3, `${start.stdout}${start.stderr}`);
        assert.ok(start.stderr.includes(`${linked} is a symbolic link, not a file agentsnap wrote`), start.stderr);
        assert.not.match(start.stderr, /^\s+at /m);
        assert.equal(fs.readdirSync(elsewhere), [], "nothing written into the link's target");
      } finally {
        await cliProcess(repo, ['server', 'stop'], { env: ON });
      }
    } finally {
      repo.cleanup();
    }
  });
}

test('state dir: a journal replaced by a symlink is refused (exit 3, what/why/what to do), its target keeps its bytes', async () => {
  const repo = seeded();
  try {
    const pre = await cli(repo, ['snap', '--phase', 'pre', '--tool', 'Bash', '-q']);
    assert.is(pre.code, 0, pre.stderr);
    const id = sessionOf(repo);
    const journal = path.join(stateDir(repo), 'sessions', id, 'journal.jsonl');
    // The agent moves the journal out and leaves a link to it: the same bytes, somewhere else.
    const moved = path.join(repo.base, 'journal-elsewhere.jsonl');
    fs.copyFileSync(journal, moved);
    const before = fs.readFileSync(moved);
    linkInPlace(journal, moved);
    repo.write('a.txt', 'changed\n');
    const post = await cliProcess(repo, ['snap', '--phase', 'post', '-q']);
    assert.is(post.code, 3, `${post.stdout}${post.stderr}`);
    assert.match(post.stderr, /journal\.jsonl is a symbolic link, not a file agentsnap wrote/);
    assert.match(post.stderr, /remove it/);
    assert.not.match(post.stderr, /^\s+at /m);
    // doctor names it among its findings (exit 1: problems found) instead of failing as a whole.
    const doctor = await cliProcess(repo, ['doctor']);
    assert.is(doctor.code, 1, `${doctor.stdout}${doctor.stderr}`);
    assert.match(`${doctor.stdout}${doctor.stderr}`, new RegExp(`session ${id}: .*journal\\.jsonl is a symbolic link`));
    assert.is(fs.readFileSync(moved, 'utf8'), before.toString('utf8'), "the link's target is untouched");
  } finally {
    repo.cleanup();
  }
});

test('state dir: a session lock replaced by a symlink to a FIFO does not hang the next command, nor is the FIFO opened', async () => {
  const repo = seeded();
  try {
    const pre = await cli(repo, ['snap', '--phase', 'pre', '--tool', 'Bash', '-q']);
    assert.is(pre.code, 0, pre.stderr);
    const id = sessionOf(repo);
    const fifo = path.join(repo.base, 'fifo');
    execFileSync('mkfifo', [fifo]);
    linkInPlace(path.join(stateDir(repo), 'sessions', id, 'lock'), fifo);
    // A reader of the FIFO would block forever: the bound is only there to end a failing run.
    const post = await cliProcess(repo, ['snap', '--phase', 'post', '-q'], { timeoutMs: 60_000 });
    assert.is(post.code, 0, post.stderr);
    assert.ok(fs.lstatSync(fifo).isFIFO(), 'the FIFO is still there');
  } finally {
    repo.cleanup();
  }
});

test('state dir: a FIFO planted in place of a snapshot cache (index.user-copy) is not opened: the next snapshot completes', async () => {
  const repo = seeded();
  try {
    const pre = await cli(repo, ['snap', '--phase', 'pre', '--tool', 'Bash', '-q']);
    assert.is(pre.code, 0, pre.stderr);
    const id = sessionOf(repo);
    const cache = path.join(stateDir(repo), 'sessions', id, 'index.user-copy');
    assert.ok(fs.existsSync(cache), 'the session keeps the record of its copy of the user index');
    fs.rmSync(cache);
    execFileSync('mkfifo', [cache]);
    repo.write('a.txt', 'changed\n');
    // A reader of the FIFO would block forever: the bound is only there to end a failing run.
    const post = await cliProcess(repo, ['snap', '--phase', 'post', '-q'], { timeoutMs: 60_000 });
    assert.is(post.code, 0, post.stderr);
  } finally {
    repo.cleanup();
  }
});

/** Every path under dir with its mode, for the message of a failed check. */
function modesUnder(dir: string): { path: string; mode: number; dir: boolean }[] {
  const out: { path: string; mode: number; dir: boolean }[] = [];
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const abs = path.join(d, e.name);
      const st = fs.lstatSync(abs);
      out.push({ path: path.relative(dir, abs), mode: st.mode & 0o777, dir: st.isDirectory() });
      if (st.isDirectory()) walk(abs);
    }
  };
  walk(dir);
  return out;
}

test('state dir: under umask 000, every file agentsnap creates there is 0600 and every directory 0700', async () => {
  const repo = seeded();
  try {
    // A typical session through the CLI run by a shell with umask 000: a wrapped agent that makes two calls.
    const node = JSON.stringify(process.execPath);
    const bin = JSON.stringify(BIN);
    const agent = `${node} ${bin} snap --phase pre --tool Write -q && echo x > a.txt && ${node} ${bin} snap --phase post -q && ${node} ${bin} snap --phase pre --tool Bash -q && rm src/b.txt && ${node} ${bin} snap --phase post -q`;
    const script = `umask 000 && ${node} ${bin} wrap -q -- sh -c ${JSON.stringify(agent)} && ${node} ${bin} undo >/dev/null && ${node} ${bin} gc >/dev/null && ${node} ${bin} log >/dev/null`;
    const r = await runProcess('/bin/sh', ['-c', script], { cwd: repo.dir, env: { ...repo.env, AGENTSNAP_SERVER_AFTER_WRAP: '0' } });
    assert.is(r.code, 0, `${r.stdout}${r.stderr}`);
    const all = modesUnder(stateDir(repo));
    assert.ok(
      all.some((e) => e.path.endsWith('journal.jsonl')),
      'the session wrote its journal',
    );
    assert.ok(
      all.some((e) => e.path === 'gc.stamp'),
      'and the gc stamp',
    );
    const wrong = all.filter((e) => e.mode !== (e.dir ? 0o700 : 0o600)).map((e) => `${e.path} ${e.mode.toString(8)}`);
    assert.equal(wrong, [], `not private: ${wrong.join(', ')}`);
  } finally {
    repo.cleanup();
  }
});

test.run();
