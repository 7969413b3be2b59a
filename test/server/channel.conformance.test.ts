// The client–server channel (src/server/channel.ts, bin/agentsnap-hook): every
// client — the sh hook client, the snap client, the wrap client, the tree
// client — against one table of cases. A genuine server of the user's own
// serves each of them; a run directory another user planted (plain files, a
// fake server of theirs behind FIFOs, a foreign repository, a loose mode, a
// pid of 0 or of someone else's process, a symlinked in.<n>) is never used:
// the client takes the Node path as if no server ran, runs nothing the
// planted reply names, writes nothing there and nothing through it.
// Victims: root (the tests' own uid) and, through setpriv, a second uid.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROOT, hermeticEnv, runProcess, stopProcessesIn, tempRepo, USER_IDENTITY, type CliResult } from '../support/helpers.js';
import { packageRootFor } from '../support/package-for-uid.js';
import { openRepo } from '../../src/git/repo.js';
import { startWorktreeServer } from '../../src/runtime/server-api.js';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { FAKE_SERVER } from '../support/fake-server.js';

const ATTACKER = 4242;
const OTHER_VICTIM = 4343;
const isRoot = typeof process.geteuid === 'function' && process.geteuid() === 0;
const setprivWorks = isRoot && spawnSync('setpriv', ['--reuid=4343', '--regid=4343', '--clear-groups', 'true']).status === 0;
/** The package every victim runs: one the second uid can reach (a copy where the checkout is private: see package-for-uid.ts). */
const PKG = setprivWorks ? packageRootFor(OTHER_VICTIM) : ROOT;
const BIN = path.join(PKG, 'bin', 'agentsnap.js');
const HOOK = path.join(PKG, 'bin', 'agentsnap-hook');

/** The uids the cases run as: root, and a plain user where setpriv can make one. */
const VICTIMS = setprivWorks ? [0, OTHER_VICTIM] : isRoot ? [0] : [];

/** Where one case runs: a temp base every uid can traverse, the victim's home, the target a planted symlink points at. */
interface Ground {
  base: string;
  victim: number;
  home: string;
  env: NodeJS.ProcessEnv;
  /** What the planted command would create (in the victim's home: the victim may write there). */
  marker: string;
  /** A root-only 0600 file outside any repository. */
  secret: string;
  cleanup(): void;
}

function ground(victim: number): Ground {
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'agentsnap-channel-')));
  fs.chmodSync(base, 0o755);
  const home = path.join(base, 'home');
  fs.mkdirSync(home, { mode: 0o700 });
  fs.chownSync(home, victim, victim);
  const secret = path.join(base, 'secret');
  fs.writeFileSync(secret, 'SECRET\n', { mode: 0o600 });
  const env = {
    ...hermeticEnv(home),
    ...USER_IDENTITY,
    AGENTSNAP_SERVER: 'on',
    AGENTSNAP_SERVER_AFTER_WRAP: '0',
    AGENTSNAP_SERVER_TRACE: '1',
  };
  return {
    base,
    victim,
    home,
    env,
    marker: path.join(home, 'PLANTED-COMMAND-RAN'),
    secret,
    cleanup: () => {
      stopProcessesIn(base);
      fs.rmSync(base, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 });
    },
  };
}

/** Runs `file args` as uid `uid` (setpriv for a plain user). */
function runAs(
  uid: number,
  file: string,
  args: string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv; input?: string },
): Promise<CliResult> {
  if (uid === 0) return runProcess(file, args, { cwd: opts.cwd, env: opts.env, input: opts.input ?? '', timeoutMs: 120_000 });
  return runProcess('setpriv', [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', file, ...args], {
    cwd: opts.cwd,
    env: opts.env,
    input: opts.input ?? '',
    timeoutMs: 120_000,
  });
}

function gitAs(uid: number, cwd: string, args: string[], env: NodeJS.ProcessEnv): void {
  const r =
    uid === 0
      ? spawnSync('git', args, { cwd, env })
      : spawnSync('setpriv', [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', 'git', ...args], { cwd, env });
  assert.is(r.status, 0, `git ${args.join(' ')}: ${r.stderr}`);
}

/** A repository of `uid`'s at `dir` with one commit. */
function repoOf(uid: number, dir: string, env: NodeJS.ProcessEnv): void {
  fs.mkdirSync(dir, { recursive: true });
  fs.chownSync(dir, uid, uid);
  gitAs(uid, dir, ['init', '-q', '-b', 'main'], env);
  fs.writeFileSync(path.join(dir, 'a.txt'), 'a\n');
  fs.chownSync(path.join(dir, 'a.txt'), uid, uid);
  gitAs(uid, dir, ['add', '-A'], env);
  gitAs(uid, dir, ['commit', '-q', '-m', 'initial'], env);
}

interface Planted {
  /** Where the victim runs its commands. */
  cwd: string;
  /** Whether cwd is in a repository of the victim's (the Node path then succeeds). */
  victimsRepo: boolean;
  /** The planted run dir. */
  run: string;
  /** Whether the run dir and everything in it belong to the attacker (the victim must write nothing there). */
  attackersDir: boolean;
  fake: ChildProcess | null;
}

type PlantKind =
  | 'plain files above a non-repository'
  | 'a fake server above a non-repository'
  | "a fake server in the attacker's repository"
  | 'a 0755 run dir of the attacker in the repository'
  | 'pid 0'
  | "the pid of another user's process"
  | 'a symlinked in.<n>';

const PLANTS: PlantKind[] = [
  'plain files above a non-repository',
  'a fake server above a non-repository',
  "a fake server in the attacker's repository",
  'a 0755 run dir of the attacker in the repository',
  'pid 0',
  "the pid of another user's process",
  'a symlinked in.<n>',
];

function mkdirOwned(dir: string, uid: number, mode: number): void {
  fs.mkdirSync(dir, { recursive: true });
  fs.chmodSync(dir, mode);
  fs.chownSync(dir, uid, uid);
}

async function startFake(g: Ground, run: string): Promise<ChildProcess> {
  const script = path.join(g.base, 'fake-server.cjs');
  fs.writeFileSync(script, FAKE_SERVER, { mode: 0o644 });
  const fake = spawn('setpriv', [`--reuid=${ATTACKER}`, `--regid=${ATTACKER}`, '--clear-groups', process.execPath, script, run, g.marker], {
    stdio: 'ignore',
  });
  // Ready once its FIFOs are open (a file it writes then, not a delay).
  const deadline = Date.now() + 60_000;
  const ready = path.join(run, 'fake-ready');
  while (!fs.existsSync(ready) || fs.readFileSync(ready, 'utf8') !== 'ready\n') {
    assert.ok(Date.now() < deadline && fake.exitCode === null, 'the fake server started');
    await new Promise((r) => setTimeout(r, 10));
  }
  return fake;
}

/** The channel's files in `run`, as `owner`: req and slots as FIFOs (or plain files), the pid file, a background server's lock. */
function channelFiles(run: string, owner: number, pid: string, opts: { fifos: boolean; mode: number }): void {
  for (const name of ['req', ...Array.from({ length: 16 }, (_, n) => `slot.${n}`)]) {
    const f = path.join(run, name);
    if (opts.fifos) spawnSync('mkfifo', ['-m', opts.mode.toString(8), f]);
    else fs.writeFileSync(f, '');
    fs.chmodSync(f, opts.mode);
    fs.chownSync(f, owner, owner);
  }
  pidFiles(run, owner, pid);
}

/** The pid file and a background server's lock naming `pid`. */
function pidFiles(run: string, owner: number, pid: string): void {
  for (const [name, text] of [
    ['pid', `${pid}\n`],
    ['server.lock', JSON.stringify({ pid: Number(pid), purpose: 'server', host: os.hostname(), since: new Date().toISOString() })],
  ] as const) {
    fs.writeFileSync(path.join(run, name), text, { mode: 0o644 });
    fs.chownSync(path.join(run, name), owner, owner);
  }
}

async function plant(g: Ground, kind: PlantKind): Promise<Planted> {
  if (kind === 'plain files above a non-repository' || kind === 'a fake server above a non-repository') {
    // A world-writable parent (as /tmp): the attacker makes `.git/agentsnap/run/main` in it; the victim works below, in no repository.
    const shared = path.join(g.base, 'shared');
    mkdirOwned(shared, 0, 0o1777);
    const run = path.join(shared, '.git', 'agentsnap', 'run', 'main');
    for (const d of ['.git', '.git/agentsnap', '.git/agentsnap/run', '.git/agentsnap/run/main'])
      mkdirOwned(path.join(shared, d), ATTACKER, 0o777);
    const cwd = path.join(shared, 'victim');
    mkdirOwned(cwd, g.victim, 0o755);
    const fifos = kind === 'a fake server above a non-repository';
    channelFiles(run, ATTACKER, '0', { fifos, mode: 0o666 });
    return { cwd, victimsRepo: false, run, attackersDir: true, fake: fifos ? await startFake(g, run) : null };
  }
  if (kind === "a fake server in the attacker's repository") {
    const dir = path.join(g.base, 'theirs');
    mkdirOwned(dir, ATTACKER, 0o755);
    repoOf(ATTACKER, dir, g.env);
    const run = path.join(dir, '.git', 'agentsnap', 'run', 'main');
    for (const d of ['agentsnap', 'agentsnap/run', 'agentsnap/run/main']) mkdirOwned(path.join(dir, '.git', d), ATTACKER, 0o700);
    fs.chmodSync(run, 0o777);
    channelFiles(run, ATTACKER, '0', { fifos: true, mode: 0o666 });
    return { cwd: dir, victimsRepo: false, run, attackersDir: true, fake: await startFake(g, run) };
  }
  // The victim's own repository.
  const dir = path.join(g.base, 'mine');
  mkdirOwned(dir, g.victim, 0o755);
  repoOf(g.victim, dir, g.env);
  const state = path.join(dir, '.git', 'agentsnap');
  const run = path.join(state, 'run', 'main');
  // 0755 as an older agentsnap left them (the attacker can reach run/ to plant, and its fake server its FIFOs).
  mkdirOwned(state, g.victim, 0o755);
  mkdirOwned(path.join(state, 'run'), g.victim, 0o755);
  if (kind === 'a 0755 run dir of the attacker in the repository' || kind === 'a symlinked in.<n>') {
    mkdirOwned(run, ATTACKER, 0o755);
    channelFiles(run, ATTACKER, '0', { fifos: true, mode: 0o666 });
    fs.chmodSync(run, 0o777); // the fake server, the attacker, writes its log; made 0755 again below
    const fake = await startFake(g, run);
    if (kind === 'a symlinked in.<n>') for (let n = 0; n < 16; n++) fs.symlinkSync(g.secret, path.join(run, `in.${n}`));
    fs.chmodSync(run, 0o755);
    return { cwd: dir, victimsRepo: true, run, attackersDir: true, fake };
  }
  // pid 0 / another user's pid: everything else is as a genuine server's (the victim's dir, 0700, FIFOs of the victim's);
  // the FIFOs are open to all so that the attacker's process can hold them.
  mkdirOwned(run, g.victim, 0o700);
  fs.chmodSync(run, 0o777);
  channelFiles(run, g.victim, '0', { fifos: true, mode: 0o666 });
  const fake = await startFake(g, run);
  for (const d of [run, path.dirname(run), state]) fs.chmodSync(d, 0o700);
  if (kind === "the pid of another user's process") pidFiles(run, g.victim, String(fake.pid));
  return { cwd: dir, victimsRepo: true, run, attackersDir: false, fake };
}

/** Every file in `dir` with its bytes (symlinks as their target), to compare before and after. */
function contents(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of fs.readdirSync(dir).sort()) {
    const f = path.join(dir, name);
    const st = fs.lstatSync(f);
    out[name] = st.isSymbolicLink()
      ? `-> ${fs.readlinkSync(f)}`
      : st.isFile()
        ? fs.readFileSync(f, 'latin1')
        : st.isFIFO()
          ? 'fifo'
          : 'other';
  }
  return out;
}

type Client = 'hook' | 'snap' | 'wrap' | 'tree';
// The tree client first: in a run dir of the victim's own, the Node path of the others may start a genuine server
// there (the planted pid file names a process that is not one), which would then serve it, rightly.
const CLIENTS: Client[] = ['tree', 'hook', 'snap', 'wrap'];

/** The tree client as a wrapper calls it (src/server/tree-client.ts, as built): "served", "not served" or "no repository". */
const TREE_CLIENT = `
import { openRepo } from ${JSON.stringify(pathToFileURL(path.join(PKG, 'dist', 'git', 'repo.js')).href)};
import { loadSettings } from ${JSON.stringify(pathToFileURL(path.join(PKG, 'dist', 'settings', 'settings.js')).href)};
import { snapshotByServer } from ${JSON.stringify(pathToFileURL(path.join(PKG, 'dist', 'server', 'tree-client.js')).href)};
let repo;
try { repo = await openRepo(process.cwd(), { env: process.env }); } catch { process.stdout.write('no repository\\n'); process.exit(0); }
const res = await snapshotByServer(repo, { parentTree: null, settings: await loadSettings(repo) });
process.stdout.write(res ? 'served\\n' : 'not served\\n');
`;

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

function runClient(g: Ground, client: Client, cwd: string): Promise<CliResult> {
  if (client === 'hook')
    return runAs(g.victim, '/bin/sh', [HOOK, '--exec', process.execPath, BIN, 'claude', 'PreToolUse'], {
      cwd,
      env: g.env,
      input: hookPayload(cwd),
    });
  if (client === 'tree') return runAs(g.victim, process.execPath, ['--input-type=module', '-e', TREE_CLIENT], { cwd, env: g.env });
  if (client === 'snap') return runAs(g.victim, process.execPath, [BIN, 'snap'], { cwd, env: g.env });
  return runAs(g.victim, process.execPath, [BIN, 'wrap', '--', 'echo', 'hello'], { cwd, env: g.env });
}

/**
 * What the Node path gives: in the victim's repository the command's own result; in a directory in no repository
 * (`noRepo`) the command's own result too, through the shadow repository agentsnap keeps in the victim's home
 * (test/git/shadow.test.ts); in the attacker's repository git's refusal.
 */
function assertNodePath(client: Client, res: CliResult, victimsRepo: boolean, what: string, noRepo = false): void {
  assert.not.match(res.stdout + res.stderr, /PLANTED/, `${what}: the planted reply is not printed`);
  if (client === 'hook') {
    assert.is(res.code, 0, `${what}: ${res.stderr}`);
  } else if (client === 'tree') {
    assert.is(res.code, 0, `${what}: ${res.stderr}`);
    if (noRepo) assert.match(res.stdout, /^(no repository|not served)\n$/, what);
    else assert.is(res.stdout, victimsRepo ? 'not served\n' : 'no repository\n', what);
  } else if (victimsRepo || noRepo) {
    assert.is(res.code, 0, `${what}: ${res.stderr}`);
    if (client === 'wrap') assert.is(res.stdout, 'hello\n', what);
    else assert.match(res.stdout, /^\d+\n$/, what);
  } else {
    assert.is(res.code, 1, `${what}: ${res.stdout}${res.stderr}`);
    assert.match(res.stderr, /not a git repository|owned by another user/i, what);
    assert.not.match(res.stdout, /hello/, what);
  }
}

for (const victim of VICTIMS) {
  for (const kind of PLANTS) {
    test(`channel, victim uid ${victim}: ${kind} — every client takes the Node path, runs nothing planted, writes nothing there`, async () => {
      const g = ground(victim);
      let p: Planted | null = null;
      try {
        p = await plant(g, kind);
        const before = contents(p.run);
        for (const client of CLIENTS) {
          const res = await runClient(g, client, p.cwd);
          const what = `${client} (${kind}, uid ${victim})`;
          assertNodePath(client, res, p.victimsRepo, what, kind.includes('non-repository'));
          assert.not.ok(fs.existsSync(g.marker), `${what}: the planted command did not run`);
          assert.is(fs.readFileSync(g.secret, 'utf8'), 'SECRET\n', `${what}: the symlinked file keeps its bytes`);
          const log = path.join(p.run, 'served.log');
          assert.is(fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : '', '', `${what}: the planted server saw no request`);
          if (p.attackersDir) assert.equal(contents(p.run), before, `${what}: nothing written into the planted dir`);
        }
      } finally {
        p?.fake?.kill('SIGKILL');
        g.cleanup();
      }
    });
  }
}

/** A background server of the victim's own, left by a first wrap (as the victim), in the victim's repository. */
async function genuine(g: Ground, linked = false): Promise<{ cwd: string; log: string }> {
  const main = path.join(g.base, 'mine');
  mkdirOwned(main, g.victim, 0o755);
  repoOf(g.victim, main, g.env);
  // A linked worktree: its .git is a gitfile, its run dir run/wt-<name> under the main repository's common dir.
  const dir = linked ? path.join(g.base, 'linked') : main;
  if (linked) gitAs(g.victim, main, ['worktree', 'add', '-q', dir], g.env);
  const first = await runAs(g.victim, process.execPath, [BIN, 'wrap', '-q', '--', 'true'], {
    cwd: dir,
    env: { ...g.env, AGENTSNAP_SERVER_AFTER_WRAP: '1' },
  });
  assert.is(first.code, 0, first.stderr);
  const run = path.join(main, '.git', 'agentsnap', 'run', linked ? 'wt-linked' : 'main');
  const deadline = Date.now() + 60_000;
  while (!fs.existsSync(path.join(run, 'pid'))) {
    assert.ok(Date.now() < deadline, 'the background server came up');
    await new Promise((r) => setTimeout(r, 20));
  }
  return { cwd: dir, log: path.join(run, 'server.log') };
}

const served = (log: string, what: RegExp): number =>
  fs
    .readFileSync(log, 'utf8')
    .split('\n')
    .filter((l) => what.test(l)).length;

for (const [victim, linked] of [...VICTIMS.map((v) => [v, false] as const), ...VICTIMS.slice(0, 1).map((v) => [v, true] as const)]) {
  test(`channel, victim uid ${victim}: a genuine server of the user's own serves the hook, snap, wrap and tree clients${linked ? ' (a linked worktree)' : ''}`, async () => {
    const g = ground(victim);
    try {
      const { cwd, log } = await genuine(g, linked);
      const asked: Record<Client, RegExp> = {
        hook: /: hook claude PreToolUse$/,
        snap: /: snap$/,
        wrap: /: wrap -- echo hello$/,
        tree: /: tree$/,
      };
      for (const client of CLIENTS) {
        const before = served(log, asked[client]);
        const res = await runClient(g, client, cwd);
        if (client === 'tree') assert.is(res.stdout, 'served\n', `tree (genuine, uid ${victim}): ${res.stderr}`);
        else assertNodePath(client, res, true, `${client} (genuine, uid ${victim})`);
        assert.is(served(log, asked[client]), before + 1, `${client}: served (${fs.readFileSync(log, 'utf8')})`);
      }
    } finally {
      g.cleanup();
    }
  });
}

test('channel: a record a client of ours left behind at in.<n> (killed, or its write cut short by a full disk) is replaced: every client is served, quietly', async () => {
  // Found by the generative test (seed 29102): the sh client's exclusive create failed on the stale file ("cannot
  // create …/in.0: File exists" on the agent's stderr) and the call went the slow way.
  if (VICTIMS.length === 0) return;
  const g = ground(VICTIMS[0] as number);
  try {
    const { cwd, log } = await genuine(g);
    const run = path.join(cwd, '.git', 'agentsnap', 'run', 'main');
    const asked: Record<Client, RegExp> = {
      hook: /: hook claude PreToolUse$/,
      snap: /: snap$/,
      wrap: /: wrap -- echo hello$/,
      tree: /: tree$/,
    };
    for (const client of CLIENTS) {
      // Half a record in every slot's file: whichever slot the client claims holds one.
      for (let n = 0; n < 16; n++) fs.writeFileSync(path.join(run, `in.${n}`), 'agentsnap-call 2 4\nhook\0cla');
      const before = served(log, asked[client]);
      const res = await runClient(g, client, cwd);
      if (client === 'tree') assert.is(res.stdout, 'served\n', `tree: ${res.stderr}`);
      else assertNodePath(client, res, true, client);
      assert.equal(
        res.stderr.split('\n').filter((l) => l !== '' && !l.startsWith('agentsnap: ')),
        [],
        `${client}: nothing on stderr but agentsnap's own lines`,
      );
      assert.is(served(log, asked[client]), before + 1, `${client}: served (${fs.readFileSync(log, 'utf8')})`);
    }
  } finally {
    g.cleanup();
  }
});

test('channel: the server refuses a request without a valid record (an old client, or not a record at all): `<pid> refused`, the claim and the record left to the client', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  const server = await startWorktreeServer(await openRepo(repo.dir, { env: { ...repo.env, AGENTSNAP_SERVER: 'on' } }), { hosted: true });
  try {
    const run = server.runDir;
    for (const [n, record] of [
      [0, ''],
      [1, `agentsnap-call 1 1\nhook\0{}`],
      [2, `agentsnap-call 2 3\nhook\0claude\0`],
      [3, '{"session_id":"x"}'],
    ] as const) {
      fs.writeFileSync(path.join(run, `claim.${n}`), `${process.pid}\n`);
      fs.writeFileSync(path.join(run, `in.${n}`), record);
      const slot = path.join(run, `slot.${n}`);
      const ours = fs.openSync(slot, fs.constants.O_RDWR);
      const reply = fs.openSync(slot, fs.constants.O_RDONLY);
      fs.closeSync(ours);
      fs.writeFileSync(path.join(run, 'req'), `${n} ${process.pid}\n`);
      // The server answers from this very process: an asynchronous read.
      const buf = Buffer.alloc(256);
      const got = await new Promise<number>((resolve, reject) =>
        fs.read(reply, buf, 0, buf.length, null, (e, k) => (e ? reject(e) : resolve(k))),
      );
      fs.closeSync(reply);
      assert.is(buf.toString('utf8', 0, got), `${process.pid} refused\n`, `record ${JSON.stringify(record)}`);
      assert.is(fs.readFileSync(path.join(run, `in.${n}`), 'utf8'), record, 'the record is left to the client');
      assert.ok(fs.existsSync(path.join(run, `claim.${n}`)), 'the claim is left to the client');
    }
  } finally {
    await server.close();
    repo.cleanup();
  }
});

test('channel: the server makes what the clients trust: an older 0755 agentsnap/ and run/ are tightened to 0700, and a session is served', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const state = path.join(repo.dir, '.git', 'agentsnap');
    fs.mkdirSync(path.join(state, 'run'), { recursive: true, mode: 0o755 });
    for (const d of [state, path.join(state, 'run')]) fs.chmodSync(d, 0o755);
    const env = { ...repo.env, AGENTSNAP_SERVER: 'on', AGENTSNAP_SERVER_AFTER_WRAP: '1', AGENTSNAP_SERVER_TRACE: '1' };
    const first = await runProcess(process.execPath, [BIN, 'wrap', '-q', '--', 'true'], { cwd: repo.dir, env });
    assert.is(first.code, 0, first.stderr);
    const run = path.join(state, 'run', 'main');
    const deadline = Date.now() + 60_000;
    while (!fs.existsSync(path.join(run, 'pid'))) {
      assert.ok(Date.now() < deadline, 'the background server came up');
      await new Promise((r) => setTimeout(r, 20));
    }
    for (const d of [state, path.join(state, 'run'), run]) assert.is(fs.statSync(d).mode & 0o7777, 0o700, d);
    const snap = await runProcess(process.execPath, [BIN, 'snap'], { cwd: repo.dir, env });
    assert.is(snap.code, 0, snap.stderr);
    assert.match(fs.readFileSync(path.join(run, 'server.log'), 'utf8'), /: snap$/m, 'served');
  } finally {
    repo.cleanup();
  }
});

/**
 * The trust check itself, the Node one (dist/channel.cjs, as the bin/ shims load it) and the sh one
 * (bin/agentsnap-hook), against one table: a run dir as a server makes it, served by a stand-in of this uid's, and
 * each way it can differ from that. Both must say the same, and what the table says.
 */
const TRUST_CASES: { name: string; trusted: boolean; change?: (r: { dir: string; git: string; state: string; run: string }) => void }[] = [
  { name: 'as a server makes it', trusted: true },
  { name: 'the run dir 0710', trusted: false, change: (r) => fs.chmodSync(r.run, 0o710) },
  { name: 'agentsnap/ setgid', trusted: false, change: (r) => fs.chmodSync(r.state, 0o2700) },
  {
    name: 'run/ a symlink to a 0700 directory of ours',
    trusted: false,
    change: (r) => {
      fs.renameSync(path.join(r.state, 'run'), path.join(r.state, 'run.real'));
      fs.symlinkSync('run.real', path.join(r.state, 'run'));
    },
  },
  {
    name: '.git a symlink to the git dir',
    trusted: false,
    change: (r) => {
      fs.renameSync(r.git, `${r.dir}.git`);
      fs.symlinkSync(`${r.dir}.git`, r.git);
    },
  },
  { name: "the worktree top another user's", trusted: false, change: (r) => fs.chownSync(r.dir, ATTACKER, ATTACKER) },
  { name: "the git dir another user's", trusted: false, change: (r) => fs.chownSync(r.git, ATTACKER, ATTACKER) },
  {
    name: 'req a symlink to a FIFO of ours',
    trusted: false,
    change: (r) => {
      fs.renameSync(path.join(r.run, 'req'), path.join(r.run, 'req.real'));
      fs.symlinkSync('req.real', path.join(r.run, 'req'));
    },
  },
  {
    name: 'req a regular file',
    trusted: false,
    change: (r) => {
      fs.rmSync(path.join(r.run, 'req'));
      fs.writeFileSync(path.join(r.run, 'req'), '');
    },
  },
  {
    name: 'pid a symlink',
    trusted: false,
    change: (r) => {
      fs.renameSync(path.join(r.run, 'pid'), path.join(r.run, 'pid.real'));
      fs.symlinkSync('pid.real', path.join(r.run, 'pid'));
    },
  },
  { name: 'pid 0', trusted: false, change: (r) => fs.writeFileSync(path.join(r.run, 'pid'), '0\n') },
  { name: 'pid not a number', trusted: false, change: (r) => fs.writeFileSync(path.join(r.run, 'pid'), '12x\n') },
  { name: 'pid of no process', trusted: false, change: (r) => fs.writeFileSync(path.join(r.run, 'pid'), '4194303\n') },
];

for (const c of TRUST_CASES) {
  test(`channel trust check, Node and sh alike: ${c.name} → ${c.trusted ? 'served' : 'the Node path'}`, async () => {
    if (!isRoot) return;
    const g = ground(0);
    let fake: ChildProcess | null = null;
    try {
      const dir = path.join(g.base, 'mine');
      repoOf(0, dir, g.env);
      const git = path.join(dir, '.git');
      const state = path.join(git, 'agentsnap');
      const run = path.join(state, 'run', 'main');
      for (const d of [state, path.dirname(run), run]) mkdirOwned(d, 0, 0o700);
      for (const name of ['req', ...Array.from({ length: 16 }, (_, n) => `slot.${n}`)])
        spawnSync('mkfifo', ['-m', '600', path.join(run, name)]);
      // The stand-in server, of this uid: a genuine one as far as any check can tell.
      const script = path.join(g.base, 'fake-server.cjs');
      fs.writeFileSync(script, FAKE_SERVER);
      fake = spawn(process.execPath, [script, run, g.marker], { stdio: 'ignore' });
      const ready = path.join(run, 'fake-ready');
      const deadline = Date.now() + 60_000;
      while (!fs.existsSync(ready) || fs.readFileSync(ready, 'utf8') !== 'ready\n') {
        assert.ok(Date.now() < deadline && fake.exitCode === null, 'the stand-in started');
        await new Promise((r) => setTimeout(r, 10));
      }
      fs.writeFileSync(path.join(run, 'pid'), `${fake.pid}\n`, { mode: 0o600 });
      c.change?.({ dir, git, state, run });
      const channel = createRequire(import.meta.url)(path.join(ROOT, 'dist', 'channel.cjs')) as {
        trustedRunDir(cwd: string): { run: string; pid: number } | null;
      };
      assert.is(channel.trustedRunDir(dir) !== null, c.trusted, 'the Node check');
      // The sh client: a call the stand-in logs when trusted; the "Node path" here is `sh /dev/null`, which does nothing.
      const res = await runProcess('/bin/sh', [HOOK, '--exec', '/bin/sh', '/dev/null', 'claude', 'PreToolUse'], {
        cwd: dir,
        env: g.env,
        input: hookPayload(dir),
      });
      assert.is(res.code, 0, res.stderr);
      const log = fs.realpathSync(run) === run ? path.join(run, 'served.log') : path.join(fs.realpathSync(run), 'served.log');
      assert.is(fs.readFileSync(log, 'utf8').split('\n').filter(Boolean).length, c.trusted ? 1 : 0, 'the sh check');
    } finally {
      fake?.kill('SIGKILL');
      g.cleanup();
    }
  });
}

test.run();
