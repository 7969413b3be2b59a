// The warm server: hook calls through the shell client and `snap` through the
// Node shim give the same steps as the Node path, and every way the server
// can be missing or go away falls back to it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execFileSync, spawn } from 'node:child_process';
import { cli, cliProcess, runProcess, sessionOf, tempRepo, type TempRepo } from '../support/helpers.js';
import { loadSession } from '../../src/session/session.js';
import { openRepo } from '../../src/git/repo.js';
import { startWorktreeServer } from '../../src/runtime/server-api.js';
import { runSnap } from '../../src/cli/main.js';
import { runDirOf, serverInfo } from '../../src/server/server.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLIENT = path.join(ROOT, 'bin', 'agentsnap-hook');
const JS = path.join(ROOT, 'bin', 'agentsnap.js');

function seeded(): TempRepo {
  const repo = tempRepo();
  repo.write('a.txt', 'one\n');
  repo.write('src/b.txt', 'two\n');
  repo.git(['add', '.']);
  repo.git(['commit', '-qm', 'init']);
  return repo;
}

const run = runProcess;

/** The session's steps, read through the library. */
async function stepsOf(repo: TempRepo) {
  const id = sessionOf(repo);
  return { id, steps: loadSession(await openRepo(repo.dir, { env: repo.env }), id).steps };
}

function payload(repo: TempRepo, event: 'PreToolUse' | 'PostToolUse', id: string): string {
  return JSON.stringify({
    session_id: 'agent-1',
    cwd: repo.dir,
    hook_event_name: event,
    tool_name: 'Write',
    tool_input: { file_path: path.join(repo.dir, 'a.txt'), content: 'changed\n' },
    tool_use_id: id,
    ...(event === 'PostToolUse' ? { tool_response: { ok: true } } : {}),
  });
}

/** The hook as `wrap` writes it: the shell client with the run dir and the Node fallback. */
function hook(repo: TempRepo, runDir: string, event: 'PreToolUse' | 'PostToolUse', id: string, env: NodeJS.ProcessEnv = repo.env) {
  return run('/bin/sh', [CLIENT, '--run', runDir, '--exec', process.execPath, JS, 'claude', event], {
    cwd: repo.dir,
    env,
    input: payload(repo, event, id),
  });
}

const serverEnv = (repo: TempRepo) => ({ ...repo.env, AGENTSNAP_SERVER: 'on' });

test('server: a tool call through the shell client is recorded like the Node hook records it', async () => {
  const repo = seeded();
  const r = await openRepo(repo.dir, { env: serverEnv(repo) });
  const server = await startWorktreeServer(r, { hosted: true, snap: runSnap });
  try {
    const pre = await hook(repo, server.runDir, 'PreToolUse', 'toolu_1');
    assert.is(pre.code, 0, pre.stderr);
    assert.is(pre.stderr, '');
    repo.write('a.txt', 'changed\n');
    const post = await hook(repo, server.runDir, 'PostToolUse', 'toolu_1');
    assert.is(post.code, 0, post.stderr);
    const s = await stepsOf(repo);
    const step = s.steps.find((st) => st.toolUseId === 'toolu_1');
    assert.ok(step, 'the call became a step');
    assert.is(step?.status, 'done');
    assert.equal(
      step?.changed.map((c) => c.path),
      ['a.txt'],
    );
    // The step's post snapshot holds the new bytes.
    assert.is(repo.git(['show', `refs/agent/${s.id}/${step?.step}:a.txt`]), 'changed\n');
  } finally {
    await server.close();
  }
  assert.is(serverInfo(await openRepo(repo.dir, { env: repo.env })), null, 'closed');
  assert.not.ok(fs.existsSync(path.join(runDirOf(await openRepo(repo.dir)), 'pid')));
});

test('server: without a server the client runs the Node hook (same result)', async () => {
  const repo = seeded();
  const runDir = path.join(repo.base, 'no-such-run-dir');
  const pre = await hook(repo, runDir, 'PreToolUse', 'toolu_2');
  assert.is(pre.code, 0, pre.stderr);
  repo.write('a.txt', 'changed\n');
  const post = await hook(repo, runDir, 'PostToolUse', 'toolu_2');
  assert.is(post.code, 0, post.stderr);
  const s = await stepsOf(repo);
  assert.equal(
    s.steps.find((st) => st.toolUseId === 'toolu_2')?.changed.map((c) => c.path),
    ['a.txt'],
  );
});

test('server: a stale pid file (server killed) makes the client fall back', async () => {
  const repo = seeded();
  const r = await openRepo(repo.dir, { env: repo.env });
  const runDir = runDirOf(r);
  fs.mkdirSync(runDir, { recursive: true });
  // A pid that is surely not running.
  fs.writeFileSync(path.join(runDir, 'pid'), '4194303\n');
  const pre = await hook(repo, runDir, 'PreToolUse', 'toolu_3');
  assert.is(pre.code, 0, pre.stderr);
  assert.ok((await stepsOf(repo)).steps.some((st) => st.toolUseId === 'toolu_3'));
});

/**
 * What a client finds when the server died right after its pid check: a live
 * pid (a stand-in process), the FIFOs still there, nobody holding a reply slot.
 */
async function goneServerRunDir(repo: TempRepo): Promise<{ runDir: string; stop: () => void }> {
  const runDir = runDirOf(await openRepo(repo.dir, { env: repo.env }));
  // As a server makes it (the clients' trust check passes): agentsnap/, run/ and the run dir 0700.
  fs.mkdirSync(runDir, { recursive: true, mode: 0o700 });
  for (const d of [runDir, path.dirname(runDir), path.dirname(path.dirname(runDir))]) fs.chmodSync(d, 0o700);
  const stand = spawn('sleep', ['60'], { stdio: 'ignore' });
  fs.writeFileSync(path.join(runDir, 'pid'), `${stand.pid}\n`);
  for (const fifo of ['req', 'slot.0']) execFileSync('mkfifo', [path.join(runDir, fifo)]);
  return { runDir, stop: () => stand.kill() };
}

test("server: a server gone between the client's pid check and its reply slot makes the client fall back, not hang", async () => {
  const repo = seeded();
  const { runDir, stop } = await goneServerRunDir(repo);
  try {
    const pre = await run('/bin/sh', [CLIENT, '--run', runDir, '--exec', process.execPath, JS, 'claude', 'PreToolUse'], {
      cwd: repo.dir,
      env: repo.env,
      input: payload(repo, 'PreToolUse', 'toolu_gone'),
      timeoutMs: 20_000,
    });
    assert.is(pre.code, 0, pre.stderr);
    assert.ok(
      (await stepsOf(repo)).steps.some((st) => st.toolUseId === 'toolu_gone'),
      'recorded through the Node hook',
    );
  } finally {
    stop();
  }
});

test('server: snap through the Node shim falls back, not hangs, when the server is gone before it opens its reply slot', async () => {
  const repo = seeded();
  const { stop } = await goneServerRunDir(repo);
  try {
    // The Node path then starts a real server for the next snap: one that exits as soon as it is idle.
    const res = await run(process.execPath, [JS, 'snap', '--json'], {
      cwd: repo.dir,
      env: { ...repo.env, AGENTSNAP_SERVER: 'on', AGENTSNAP_SERVER_IDLE_MS: '200' },
      timeoutMs: 20_000,
    });
    assert.is(res.code, 0, res.stderr);
    assert.ok((JSON.parse(res.stdout) as { session?: string }).session, 'snap ran on the Node path');
  } finally {
    stop();
  }
});

test('server: snap through the Node shim runs in the server and prints what snap prints', async () => {
  const repo = seeded();
  const env = serverEnv(repo);
  const r = await openRepo(repo.dir, { env });
  const server = await startWorktreeServer(r, { hosted: true, snap: runSnap });
  try {
    const first = await run(process.execPath, [JS, 'snap', '--json'], { cwd: path.join(repo.dir, 'src'), env });
    assert.is(first.code, 0, first.stderr);
    const res = JSON.parse(first.stdout) as { step: number; session: string; startedSession: boolean };
    assert.is(res.startedSession, true);
    repo.write('src/b.txt', 'three\n');
    const second = await run(process.execPath, [JS, 'snap'], { cwd: repo.dir, env });
    assert.is(second.code, 0, second.stderr);
    assert.is(second.stdout.trim(), '2');
    assert.match(second.stderr, /step 2 checkpoint .* \(1 file changed\)/);
    assert.is(repo.git(['show', `refs/agent/${res.session}/2:src/b.txt`]), 'three\n');
    // An error keeps its exit code and message.
    const bad = await run(process.execPath, [JS, 'snap', '--session', '../x'], { cwd: repo.dir, env });
    assert.is(bad.code, 1);
    assert.match(bad.stderr, /session id/i);
  } finally {
    await server.close();
  }
});

test('server: a hook that finds no server starts one in the background for the next call', async () => {
  const repo = seeded();
  const env = { ...serverEnv(repo), AGENTSNAP_SERVER_IDLE_MS: '3000' };
  const r = await openRepo(repo.dir, { env });
  const runDir = runDirOf(r);
  const pre = await hook(repo, runDir, 'PreToolUse', 'toolu_4', env);
  assert.is(pre.code, 0, pre.stderr);
  let info = serverInfo(r);
  for (let i = 0; i < 200 && !info; i++) {
    await new Promise((res) => setTimeout(res, 25));
    info = serverInfo(r);
  }
  assert.ok(info, 'a background server came up');
  repo.write('a.txt', 'changed\n');
  const post = await hook(repo, runDir, 'PostToolUse', 'toolu_4', env);
  assert.is(post.code, 0, post.stderr);
  assert.equal(
    (await stepsOf(repo)).steps.find((st) => st.toolUseId === 'toolu_4')?.changed.map((c) => c.path),
    ['a.txt'],
  );
  const stop = await cliProcess(repo, ['server', 'stop', '--json'], { env: { AGENTSNAP_SERVER: 'on' } });
  assert.is(stop.code, 0, stop.stderr);
  assert.is((JSON.parse(stop.stdout) as { running: boolean }).running, false);
  assert.is(serverInfo(r), null);
});

test('server: with AGENTSNAP_SERVER=off nothing starts and hooks still record', async () => {
  const repo = seeded();
  const r = await openRepo(repo.dir, { env: repo.env });
  const pre = await hook(repo, runDirOf(r), 'PreToolUse', 'toolu_5');
  assert.is(pre.code, 0, pre.stderr);
  await new Promise((res) => setTimeout(res, 200));
  assert.is(serverInfo(r), null);
  const start = await cliProcess(repo, ['server', 'start']);
  assert.is(start.code, 3);
  assert.match(start.stderr, /switched off/);
});

test("server: stop refuses a wrapper's server (exit 3, one message) and leaves it serving", async () => {
  const repo = seeded();
  const r = await openRepo(repo.dir, { env: serverEnv(repo) });
  const server = await startWorktreeServer(r, { hosted: true, snap: runSnap });
  try {
    const stop = await cliProcess(repo, ['server', 'stop'], { env: { AGENTSNAP_SERVER: 'on' } });
    assert.is(stop.code, 3, stop.stderr);
    assert.match(stop.stderr, /runs inside the wrapper with pid \d+/);
    assert.is(stop.stderr.trim().split('\n').length, 2, 'message and hint');
    assert.ok(serverInfo(r), 'still serving');
    const status = await cliProcess(repo, ['server', 'status', '--json'], { env: { AGENTSNAP_SERVER: 'on' } });
    assert.equal((JSON.parse(status.stdout) as { running: boolean; hosted: boolean }).hosted, true);
  } finally {
    await server.close();
  }
});

test('server: start when the server cannot come up says why at once (exit 70, the log named, no stack trace)', async () => {
  const repo = seeded();
  // The spawned server's Node cannot even start: it preloads a module that does not exist.
  const r = await cli(repo, ['server', 'start'], {
    env: { AGENTSNAP_SERVER: 'on', NODE_OPTIONS: `--require=${path.join(repo.base, 'missing-module.cjs')}` },
  });
  assert.is(r.code, 70, r.stderr);
  assert.match(r.stderr, /the agentsnap server did not start: Error: Cannot find module/);
  assert.match(r.stderr, /server\.log/);
  assert.not.match(r.stderr, /^\s+at /m);
  assert.is(serverInfo(await openRepo(repo.dir, { env: repo.env })), null);
});

test.run();
