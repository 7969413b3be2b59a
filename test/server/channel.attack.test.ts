// The channel (src/server/channel.ts, bin/agentsnap-hook) attacked where the
// conformance table (test/server/channel.conformance.test.ts) does not reach: between
// the trust check and the use. A run dir that passes the check can still be
// swapped for another one afterwards by whoever may rename a directory above
// it: another user who owns the directory the victim's repository sits in (a
// shared, world-writable project directory). The swap is made at an explicit
// hook point (AGENTSNAP_TEST_CHANNEL_PAUSE: the client reads that FIFO to its
// end right after its check), not by luck.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createRequire } from 'node:module';
import {
  ROOT,
  hermeticEnv,
  runProcess,
  stopProcessesIn,
  tempRepo,
  USER_IDENTITY,
  type CliResult,
  type TempRepo,
} from '../support/helpers.js';
import { packageRootFor } from '../support/package-for-uid.js';
import { FAKE_SERVER } from '../support/fake-server.js';

const ATTACKER = 4242;
const OTHER_VICTIM = 4343;
const isRoot = typeof process.geteuid === 'function' && process.geteuid() === 0;
const setprivWorks =
  isRoot && spawnSync('setpriv', [`--reuid=${OTHER_VICTIM}`, `--regid=${OTHER_VICTIM}`, '--clear-groups', 'true']).status === 0;
/** The package every victim runs: one the second uid can reach (a copy where the checkout is private: see package-for-uid.ts). */
const PKG = setprivWorks ? packageRootFor(OTHER_VICTIM) : ROOT;
const BIN = path.join(PKG, 'bin', 'agentsnap.js');
const HOOK = path.join(PKG, 'bin', 'agentsnap-hook');
const VICTIMS = setprivWorks ? [0, OTHER_VICTIM] : [];

const asUid = (uid: number, file: string, args: string[]): [string, string[]] =>
  uid === 0 ? [file, args] : ['setpriv', [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', file, ...args]];

function runAs(
  uid: number,
  file: string,
  args: string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv; input?: string },
): Promise<CliResult> {
  const [f, a] = asUid(uid, file, args);
  return runProcess(f, a, { cwd: opts.cwd, env: opts.env, input: opts.input ?? '', timeoutMs: 120_000 });
}

function syncAs(uid: number, cwd: string, file: string, args: string[], env: NodeJS.ProcessEnv = process.env): void {
  const [f, a] = asUid(uid, file, args);
  const r = spawnSync(f, a, { cwd, env });
  assert.is(r.status, 0, `${file} ${args.join(' ')}: ${r.stderr}`);
}

function mkdirOwned(dir: string, uid: number, mode: number): void {
  fs.mkdirSync(dir, { recursive: true });
  fs.chmodSync(dir, mode);
  fs.chownSync(dir, uid, uid);
}

async function until(what: string, ok: () => boolean): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!ok()) {
    assert.ok(Date.now() < deadline, what);
    await new Promise((r) => setTimeout(r, 20));
  }
}

type Client = 'hook' | 'snap' | 'wrap';

function hookPayload(cwd: string): string {
  return JSON.stringify({
    session_id: 'agent-1',
    cwd,
    hook_event_name: 'PreToolUse',
    tool_name: 'Bash',
    tool_input: { command: 'true' },
    tool_use_id: 'toolu_1',
  });
}

for (const victim of VICTIMS) {
  for (const client of ['hook', 'snap', 'wrap'] as Client[]) {
    test(`channel attack, victim uid ${victim}, ${client}: another user who owns the repository's parent swaps the repository for a tree of theirs after the trust check — nothing planted runs, no request reaches their server`, async () => {
      const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'agentsnap-attack-')));
      let fake: ChildProcess | null = null;
      const readers: ChildProcess[] = [];
      try {
        fs.chmodSync(base, 0o755);
        const home = path.join(base, 'home');
        mkdirOwned(home, victim, 0o700);
        const marker = path.join(home, 'PLANTED-COMMAND-RAN');
        const env = {
          ...hermeticEnv(home),
          ...USER_IDENTITY,
          AGENTSNAP_SERVER: 'on',
          AGENTSNAP_SERVER_AFTER_WRAP: '0',
          AGENTSNAP_SERVER_TRACE: '1',
        };
        // The attacker's world-writable (not sticky) directory, the victim's repository in it, served by the victim's own server.
        const shared = path.join(base, 'shared');
        mkdirOwned(shared, ATTACKER, 0o777);
        const proj = path.join(shared, 'proj');
        mkdirOwned(proj, victim, 0o755);
        syncAs(victim, proj, 'git', ['init', '-q', '-b', 'main'], env);
        fs.writeFileSync(path.join(proj, 'a.txt'), 'a\n');
        fs.chownSync(path.join(proj, 'a.txt'), victim, victim);
        syncAs(victim, proj, 'git', ['add', '-A'], env);
        syncAs(victim, proj, 'git', ['commit', '-q', '-m', 'initial'], env);
        const first = await runAs(victim, process.execPath, [BIN, 'wrap', '-q', '--', 'true'], {
          cwd: proj,
          env: { ...env, AGENTSNAP_SERVER_AFTER_WRAP: '1' },
        });
        assert.is(first.code, 0, first.stderr);
        const genuineRun = path.join(proj, '.git', 'agentsnap', 'run', 'main');
        await until('the genuine server came up', () => fs.existsSync(path.join(genuineRun, 'pid')));
        // The attacker's tree, to be put in the repository's place: the same run dir path, a server of theirs behind it.
        const evil = path.join(shared, 'evil');
        const evilRun = path.join(evil, '.git', 'agentsnap', 'run', 'main');
        for (const d of ['', '.git', '.git/agentsnap', '.git/agentsnap/run', '.git/agentsnap/run/main'])
          mkdirOwned(path.join(evil, d), ATTACKER, 0o700);
        for (const name of ['req', ...Array.from({ length: 16 }, (_, n) => `slot.${n}`)]) {
          spawnSync('mkfifo', ['-m', '666', path.join(evilRun, name)]);
          fs.chownSync(path.join(evilRun, name), ATTACKER, ATTACKER);
        }
        // And claim.<n> / in.<n> as symlinks to a FIFO of theirs, whose reader logs what comes through (a noclobber
        // create opens an existing non-regular file without O_EXCL, following the link: it could as well be a device).
        const attackersHome = path.join(base, 'attacker');
        mkdirOwned(attackersHome, ATTACKER, 0o755);
        const leak = path.join(attackersHome, 'leak');
        spawnSync('mkfifo', ['-m', '622', leak]);
        fs.chownSync(leak, ATTACKER, ATTACKER);
        for (let n = 0; n < 16; n++) for (const k of ['claim', 'in']) fs.symlinkSync(leak, path.join(evilRun, `${k}.${n}`));
        const leakLog = path.join(base, 'leak.log');
        fs.writeFileSync(leakLog, '', { mode: 0o666 });
        fs.chmodSync(leakLog, 0o666);
        const leakReader = spawn(
          'setpriv',
          [
            `--reuid=${ATTACKER}`,
            `--regid=${ATTACKER}`,
            '--clear-groups',
            '/bin/sh',
            '-c',
            'while :; do cat "$1" >> "$2"; done',
            'sh',
            leak,
            leakLog,
          ],
          { stdio: 'ignore', detached: true },
        );
        readers.push(leakReader);
        const script = path.join(base, 'fake-server.cjs');
        fs.writeFileSync(script, FAKE_SERVER, { mode: 0o644 });
        fake = spawn(
          'setpriv',
          [`--reuid=${ATTACKER}`, `--regid=${ATTACKER}`, '--clear-groups', process.execPath, script, evilRun, marker],
          { stdio: 'ignore' },
        );
        await until(
          'the fake server started',
          () => fs.existsSync(path.join(evilRun, 'fake-ready')) && fs.readFileSync(path.join(evilRun, 'fake-ready'), 'utf8') === 'ready\n',
        );
        // The hook point: the client reads this FIFO right after its trust check passed.
        const pause = path.join(base, 'pause');
        spawnSync('mkfifo', ['-m', '666', pause]);
        const runEnv = { ...env, AGENTSNAP_TEST_CHANNEL_PAUSE: pause };
        const running =
          client === 'hook'
            ? runAs(victim, '/bin/sh', [HOOK, '--exec', process.execPath, BIN, 'claude', 'PreToolUse'], {
                cwd: proj,
                env: runEnv,
                input: hookPayload(proj),
              })
            : client === 'snap'
              ? runAs(victim, process.execPath, [BIN, 'snap'], { cwd: proj, env: runEnv })
              : runAs(victim, process.execPath, [BIN, 'wrap', '--', 'echo', 'hello'], { cwd: proj, env: runEnv });
        // Opening the FIFO for writing completes once the client opened it to read: it is past its check.
        let paused = false;
        const writer = fs.promises.open(pause, 'w').then((h) => ((paused = true), h));
        const done = running.then(async (r) => {
          if (!paused) fs.closeSync(fs.openSync(pause, fs.constants.O_RDWR)); // it never paused: let the open above complete
          return r;
        });
        const h = await Promise.race([writer, done.then(() => writer)]);
        if (paused) {
          // The attacker may: it owns `shared`. Two renames, as that user.
          syncAs(ATTACKER, shared, 'mv', [proj, path.join(shared, 'proj.real')]);
          syncAs(ATTACKER, shared, 'mv', [evil, proj]);
        }
        await h.close();
        const res = await done;
        assert.ok(paused, `the client reached its hook point after a passed trust check: ${res.stderr}`);
        const what = `${client}, uid ${victim}`;
        assert.not.ok(fs.existsSync(marker), `${what}: the planted command did not run`);
        assert.not.match(res.stdout + res.stderr, /PLANTED/, `${what}: the planted reply is not printed`);
        const log = path.join(proj, '.git', 'agentsnap', 'run', 'main', 'served.log');
        assert.is(fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : '', '', `${what}: the attacker's server saw no request`);
        const attackersRun = path.join(proj, '.git', 'agentsnap', 'run', 'main');
        const created = fs
          .readdirSync(attackersRun)
          .filter((name) => /^(claim|in)\.\d+$/.test(name) && !fs.lstatSync(path.join(attackersRun, name)).isSymbolicLink());
        assert.equal(created, [], `${what}: nothing created in the attacker's dir`);
        assert.is(fs.readFileSync(leakLog, 'utf8'), '', `${what}: nothing written through the attacker's links`);
        // The hook (sh) uses the run dir it checked (held open), so its own server still serves it; the Node clients take the Node path.
        if (client === 'hook') {
          assert.is(res.code, 0, `${what}: ${res.stderr}`);
          const genuineLog = path.join(shared, 'proj.real', '.git', 'agentsnap', 'run', 'main', 'server.log');
          assert.match(fs.readFileSync(genuineLog, 'utf8'), /: hook claude PreToolUse$/m, `${what}: served by the user's own server`);
        }
      } finally {
        fake?.kill('SIGKILL');
        for (const p of readers.splice(0)) {
          try {
            process.kill(-(p.pid as number), 'SIGKILL');
          } catch {
            /* gone */
          }
        }
        stopProcessesIn(base);
        fs.rmSync(base, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 });
      }
    });
  }
}

/**
 * A gitfile (`.git` as a file: a linked worktree, `--separate-git-dir`) and a `commondir` file as git reads them: the
 * text after `gitdir: ` with trailing line breaks dropped, spaces kept; anything else is no repository to git. Both
 * clients use the run dir only for what git would open (exactly `gitdir: <path>` and an optional newline); the rest
 * takes the Node path, which runs git.
 */
const GITFILES: { name: string; text: (gitDir: string) => string; trusted: boolean }[] = [
  { name: 'gitdir: <path>', text: (g) => `gitdir: ${g}\n`, trusted: true },
  { name: 'a first line that is not gitdir: (git: invalid gitfile format)', text: (g) => `junk\ngitdir: ${g}\n`, trusted: false },
  { name: 'a second line (git: the path holds the line break)', text: (g) => `gitdir: ${g}\nmore\n`, trusted: false },
  { name: 'a trailing space (git: the path holds it)', text: (g) => `gitdir: ${g} \n`, trusted: false },
  { name: 'two spaces after gitdir: (git: a relative path beginning with a space)', text: (g) => `gitdir:  ${g}\n`, trusted: false },
];

for (const c of GITFILES) {
  test(`channel attack: a gitfile with ${c.name} → ${c.trusted ? 'served' : 'the Node path'}, Node and sh alike`, async () => {
    if (!isRoot) return;
    const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'agentsnap-attack-')));
    let fake: ChildProcess | null = null;
    try {
      const home = path.join(base, 'home');
      mkdirOwned(home, 0, 0o700);
      const env = { ...hermeticEnv(home), ...USER_IDENTITY, AGENTSNAP_SERVER: 'on' };
      const dir = path.join(base, 'w');
      const gitDir = path.join(base, 'gd');
      syncAs(0, base, 'git', ['init', '-q', '-b', 'main', '--separate-git-dir', gitDir, dir], env);
      const run = path.join(gitDir, 'agentsnap', 'run', 'main');
      for (const d of ['agentsnap', 'agentsnap/run', 'agentsnap/run/main']) mkdirOwned(path.join(gitDir, d), 0, 0o700);
      for (const name of ['req', ...Array.from({ length: 16 }, (_, n) => `slot.${n}`)])
        spawnSync('mkfifo', ['-m', '600', path.join(run, name)]);
      const script = path.join(base, 'fake-server.cjs');
      fs.writeFileSync(script, FAKE_SERVER);
      fake = spawn(process.execPath, [script, run, path.join(home, 'marker')], { stdio: 'ignore' });
      await until(
        'the stand-in started',
        () => fs.existsSync(path.join(run, 'fake-ready')) && fs.readFileSync(path.join(run, 'fake-ready'), 'utf8') === 'ready\n',
      );
      fs.writeFileSync(path.join(run, 'pid'), `${fake.pid}\n`, { mode: 0o600 });
      fs.writeFileSync(path.join(dir, '.git'), c.text(gitDir));
      const channel = createRequire(import.meta.url)(path.join(ROOT, 'dist', 'channel.cjs')) as {
        trustedRunDir(cwd: string): { run: string; pid: number } | null;
      };
      assert.is(channel.trustedRunDir(dir) !== null, c.trusted, 'the Node check');
      // The sh client: a call the stand-in logs when it trusts the run dir; its "Node path" here is a stand-in that reads its input.
      const drain = path.join(base, 'drain.sh');
      fs.writeFileSync(drain, 'cat >/dev/null\n');
      const res = await runProcess('/bin/sh', [HOOK, '--exec', '/bin/sh', drain, 'claude', 'PreToolUse'], {
        cwd: dir,
        env,
        input: hookPayload(dir),
      });
      assert.is(res.code, 0, res.stderr);
      assert.is(
        fs.readFileSync(path.join(run, 'served.log'), 'utf8').split('\n').filter(Boolean).length,
        c.trusted ? 1 : 0,
        'the sh check',
      );
    } finally {
      fake?.kill('SIGKILL');
      stopProcessesIn(base);
      fs.rmSync(base, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 });
    }
  });
}

/** A background server of the user's own in a temp repository (left by a wrap), its run dir and log. */
async function ownServer(): Promise<{ repo: TempRepo; env: NodeJS.ProcessEnv; run: string; log: string }> {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  const env = { ...repo.env, AGENTSNAP_SERVER: 'on', AGENTSNAP_SERVER_AFTER_WRAP: '1', AGENTSNAP_SERVER_TRACE: '1' };
  const first = await runProcess(process.execPath, [BIN, 'wrap', '-q', '--', 'true'], { cwd: repo.dir, env });
  assert.is(first.code, 0, first.stderr);
  const run = path.join(repo.dir, '.git', 'agentsnap', 'run', 'main');
  await until('the background server came up', () => fs.existsSync(path.join(run, 'pid')));
  return { repo, env: { ...env, AGENTSNAP_SERVER_AFTER_WRAP: '0' }, run, log: path.join(run, 'server.log') };
}

test("channel attack, the user's own agent: a FIFO planted as claim.<n> in the run dir does not wedge the server (its housekeeping removes it), and the next calls are served", async () => {
  const { repo, env, run, log } = await ownServer();
  try {
    spawnSync('mkfifo', ['-m', '600', path.join(run, 'claim.7')]);
    // The server's housekeeping (every 2 s) reads each claim to see whether its client lives: not through a FIFO.
    await until('the planted claim.7 is removed', () => !fs.existsSync(path.join(run, 'claim.7')));
    const snap = await runProcess(process.execPath, [BIN, 'snap'], { cwd: repo.dir, env, timeoutMs: 60_000 });
    assert.is(snap.code, 0, snap.stderr);
    assert.match(fs.readFileSync(log, 'utf8'), /: snap$/m, 'served');
  } finally {
    repo.cleanup();
  }
});

test("channel attack, the user's own agent: FIFOs (and symlinks to one) planted as in.<n> in the run dir do not hang the sh hook client; it is served", async () => {
  const { repo, env, run, log } = await ownServer();
  try {
    spawnSync('mkfifo', ['-m', '600', path.join(run, 'in.0')]);
    spawnSync('mkfifo', ['-m', '600', path.join(repo.dir, '..', 'a-fifo')]);
    for (let n = 1; n < 16; n++) fs.symlinkSync(path.join(repo.dir, '..', 'a-fifo'), path.join(run, `in.${n}`));
    const res = await runProcess('/bin/sh', [HOOK, '--exec', process.execPath, BIN, 'claude', 'PreToolUse'], {
      cwd: repo.dir,
      env,
      input: hookPayload(repo.dir),
      timeoutMs: 60_000,
    });
    assert.is(res.code, 0, res.stderr);
    assert.match(fs.readFileSync(log, 'utf8'), /: hook claude PreToolUse$/m, 'served');
  } finally {
    repo.cleanup();
  }
});

test("channel attack, the user's own agent: autostart.stamp in the run dir made a symlink to a file of the user's — a hook that would start a server does not truncate it", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const env = { ...repo.env, AGENTSNAP_SERVER: 'on', AGENTSNAP_SERVER_TRACE: '1' };
    const run = path.join(repo.dir, '.git', 'agentsnap', 'run', 'main');
    fs.mkdirSync(run, { recursive: true, mode: 0o700 });
    const precious = path.join(repo.dir, '..', 'precious.txt');
    fs.writeFileSync(precious, "the user's work\n");
    // Older than the 30 s between two attempts (the stamp's age is the file's, through the link).
    fs.utimesSync(precious, new Date(2020, 0, 1), new Date(2020, 0, 1));
    for (const name of ['autostart.stamp']) {
      fs.symlinkSync(precious, path.join(run, name));
      const res = await runProcess(process.execPath, [BIN, 'hook', 'claude', 'PreToolUse'], {
        cwd: repo.dir,
        env,
        input: hookPayload(repo.dir),
        timeoutMs: 60_000,
      });
      assert.is(res.code, 0, res.stderr);
      // The hook wrote its stamp (or did not) before it returned.
      assert.is(fs.readFileSync(precious, 'utf8'), "the user's work\n", `${name}: the file behind the symlink keeps its bytes`);
      assert.ok(fs.lstatSync(path.join(run, name)).isSymbolicLink(), `${name}: left as it is`);
      stopProcessesIn(repo.dir);
      fs.rmSync(path.join(run, name));
    }
  } finally {
    repo.cleanup();
  }
});

test("channel attack, the user's own agent: server.lock and pid in the run dir made FIFOs — no client or Node path waits on them", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const env = { ...repo.env, AGENTSNAP_SERVER: 'on' };
    const run = path.join(repo.dir, '.git', 'agentsnap', 'run', 'main');
    fs.mkdirSync(run, { recursive: true, mode: 0o700 });
    for (const name of ['server.lock', 'pid']) spawnSync('mkfifo', ['-m', '600', path.join(run, name)]);
    const hook = await runProcess(process.execPath, [BIN, 'hook', 'claude', 'PreToolUse'], {
      cwd: repo.dir,
      env,
      input: hookPayload(repo.dir),
      timeoutMs: 60_000,
    });
    assert.is(hook.code, 0, `the Node hook: ${hook.stderr}`);
    const sh = await runProcess('/bin/sh', [HOOK, '--exec', process.execPath, BIN, 'claude', 'PostToolUse'], {
      cwd: repo.dir,
      env,
      input: hookPayload(repo.dir),
      timeoutMs: 60_000,
    });
    assert.is(sh.code, 0, `the sh hook: ${sh.stderr}`);
    const wrap = await runProcess(process.execPath, [BIN, 'wrap', '--', 'echo', 'hello'], { cwd: repo.dir, env, timeoutMs: 60_000 });
    assert.is(wrap.code, 0, `wrap: ${wrap.stderr}`);
    assert.is(wrap.stdout, 'hello\n');
    const snap = await runProcess(process.execPath, [BIN, 'snap'], { cwd: repo.dir, env, timeoutMs: 60_000 });
    assert.is(snap.code, 0, `snap: ${snap.stderr}`);
  } finally {
    repo.cleanup();
  }
});

if (isRoot) {
  test("channel attack: the server's tightening of an older 0755 agentsnap/ follows no symlink swapped in after its check — the file it points at keeps its mode", async () => {
    const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'agentsnap-attack-')));
    try {
      fs.chmodSync(base, 0o755);
      const home = path.join(base, 'home');
      mkdirOwned(home, 0, 0o700);
      const env = { ...hermeticEnv(home), ...USER_IDENTITY, AGENTSNAP_SERVER: 'on', AGENTSNAP_SERVER_IDLE_MS: '1000' };
      const shared = path.join(base, 'shared');
      mkdirOwned(shared, ATTACKER, 0o777);
      const proj = path.join(shared, 'proj');
      mkdirOwned(proj, 0, 0o755);
      syncAs(0, proj, 'git', ['init', '-q', '-b', 'main'], env);
      fs.writeFileSync(path.join(proj, 'a.txt'), 'a\n');
      syncAs(0, proj, 'git', ['add', '-A'], env);
      syncAs(0, proj, 'git', ['commit', '-q', '-m', 'initial'], env);
      // As an older agentsnap left it: the server tightens it to 0700 when it starts.
      mkdirOwned(path.join(proj, '.git', 'agentsnap'), 0, 0o755);
      // A file of the victim's outside any repository, and the attacker's tree whose agentsnap/ is a symlink to it.
      const target = path.join(base, 'target');
      fs.writeFileSync(target, 'keep\n', { mode: 0o644 });
      fs.chmodSync(target, 0o644);
      const evil = path.join(shared, 'evil');
      mkdirOwned(path.join(evil, '.git'), ATTACKER, 0o755);
      mkdirOwned(evil, ATTACKER, 0o755);
      fs.symlinkSync(target, path.join(evil, '.git', 'agentsnap'));
      const pause = path.join(base, 'pause');
      spawnSync('mkfifo', ['-m', '666', pause]);
      const running = runAs(0, process.execPath, [BIN, 'server', 'run'], {
        cwd: proj,
        env: { ...env, AGENTSNAP_TEST_CHANNEL_PAUSE: pause },
      });
      let paused = false;
      const writer = fs.promises.open(pause, 'w').then((h) => ((paused = true), h));
      const done = running.then((r) => {
        if (!paused) fs.closeSync(fs.openSync(pause, fs.constants.O_RDWR));
        return r;
      });
      const h = await Promise.race([writer, done.then(() => writer)]);
      if (paused) {
        syncAs(ATTACKER, shared, 'mv', [proj, path.join(shared, 'proj.real')]);
        syncAs(ATTACKER, shared, 'mv', [evil, proj]);
      }
      await h.close();
      const res = await done;
      assert.ok(paused, `the server reached its tightening: ${res.stderr}`);
      assert.is(fs.statSync(target).mode & 0o7777, 0o644, `the symlinked file keeps its mode (${res.stderr})`);
      assert.is(fs.readFileSync(target, 'utf8'), 'keep\n');
      assert.not.match(res.stderr, /\n\s+at /, 'no stack trace');
    } finally {
      stopProcessesIn(base);
      fs.rmSync(base, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 });
    }
  });
}

test.run();
