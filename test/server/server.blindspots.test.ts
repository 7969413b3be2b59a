// Writes no inotify event reports, with the warm server on: a write through a
// shared mmap (numpy.memmap, LMDB, SQLite in mmap mode) and a write through a
// hard link made from outside the worktree. The server's engine must see them
// anyway (its stat sweep, the /proc maps check at each snapshot): the next
// pre-snapshot holds the new bytes, so an undo of the agent deleting the file
// brings the new bytes back. Sweeps are driven through the engine's API, not
// waited for by time. The window that remains is shown by
// test/snapshot/incremental.sweep.test.ts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawn, spawnSync } from 'node:child_process';
import { cli, runProcess, sessionOf, tempRepo, type TempRepo } from '../support/helpers.js';
import { loadSession } from '../../src/session/session.js';
import { openRepo } from '../../src/git/repo.js';
import { serverEngine } from '../../src/server/serve.js';
import { startWorktreeServer } from '../../src/runtime/server-api.js';
import { runSnap } from '../../src/cli/main.js';
import type { HookServer } from '../../src/server/server.js';
import type { IncrementalSnapshotter } from '../../src/snapshot/incremental.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLIENT = path.join(ROOT, 'bin', 'agentsnap-hook');
const JS = path.join(ROOT, 'bin', 'agentsnap.js');
const HAS_PYTHON = spawnSync('python3', ['-c', 'import mmap'], { stdio: 'ignore' }).status === 0;

/** Writes `bytes` over the start of `file` through a shared mapping (the file is not written any other way). */
const MMAP_WRITE =
  'import mmap,sys\nf=open(sys.argv[1],"r+b")\nm=mmap.mmap(f.fileno(),0)\nb=sys.argv[2].encode()\nm[:len(b)]=b\nm.flush()\n';

function seeded(): TempRepo {
  const repo = tempRepo();
  repo.write('a.txt', 'one\n');
  repo.write('src/b.txt', 'two\n');
  repo.git(['add', '.']);
  repo.git(['commit', '-qm', 'init']);
  return repo;
}

function payload(repo: TempRepo, event: 'PreToolUse' | 'PostToolUse', id: string, command: string): string {
  return JSON.stringify({
    session_id: 'agent-1',
    cwd: repo.dir,
    hook_event_name: event,
    tool_name: 'Bash',
    tool_input: { command },
    tool_use_id: id,
    ...(event === 'PostToolUse' ? { tool_response: { stdout: '', stderr: '', interrupted: false } } : {}),
  });
}

async function hook(repo: TempRepo, server: HookServer, event: 'PreToolUse' | 'PostToolUse', id: string, command = 'true'): Promise<void> {
  const env = { ...repo.env, AGENTSNAP_SERVER: 'on' };
  const r = await runProcess('/bin/sh', [CLIENT, '--run', server.runDir, '--exec', process.execPath, JS, 'claude', event], {
    cwd: repo.dir,
    env,
    input: payload(repo, event, id, command),
  });
  assert.is(r.code, 0, r.stderr);
  assert.is(r.stderr, '', 'answered by the server, no warning');
}

/** A server on the repository with its engine up and sweeps driven by the test only. */
async function withServer(repo: TempRepo, body: (server: HookServer, engine: IncrementalSnapshotter) => Promise<void>): Promise<void> {
  const r = await openRepo(repo.dir, { env: { ...repo.env, AGENTSNAP_SERVER: 'on' } });
  const server = await startWorktreeServer(r, { hosted: true, snap: runSnap, idleSweeps: false });
  try {
    const engine = await serverEngine(server);
    assert.ok(engine, 'the incremental engine started');
    await body(server, engine);
  } finally {
    await server.close();
  }
}

/** The last step: its pre-snapshot's a.txt, then what undo brings back after the agent deleted a.txt. */
async function deleteAndUndo(repo: TempRepo, server: HookServer, id: string): Promise<{ pre: string; undone: string }> {
  await hook(repo, server, 'PreToolUse', id, 'rm a.txt');
  fs.rmSync(path.join(repo.dir, 'a.txt'));
  await hook(repo, server, 'PostToolUse', id, 'rm a.txt');
  const session = loadSession(await openRepo(repo.dir, { env: repo.env }), sessionOf(repo));
  const st = session.steps.find((s) => s.toolUseId === id);
  assert.ok(st?.pre, 'the call has a pre-snapshot');
  const pre = repo.git(['show', `${st?.pre}:a.txt`]);
  const undo = await cli(repo, ['undo']);
  assert.is(undo.code, 0, undo.stderr);
  return { pre, undone: repo.read('a.txt').toString() };
}

test('server: an mmap write (mapping gone) is in the next pre-snapshot after a sweep; undo of a delete brings it back', async () => {
  if (!HAS_PYTHON) {
    console.log('  skipped: python3 with its mmap module is not installed');
    return;
  }
  const repo = seeded();
  await withServer(repo, async (server, engine) => {
    await hook(repo, server, 'PreToolUse', 'toolu_1');
    await hook(repo, server, 'PostToolUse', 'toolu_1');
    await engine.sweep(); // the idle sweep after the call: records what is on disk
    const w = spawnSync('python3', ['-c', MMAP_WRITE, path.join(repo.dir, 'a.txt'), 'MAP\n'], { encoding: 'utf8' });
    assert.is(w.status, 0, w.stderr);
    assert.is(repo.read('a.txt').toString(), 'MAP\n');
    await engine.sweep(); // idle time before the next call
    const { pre, undone } = await deleteAndUndo(repo, server, 'toolu_2');
    assert.is(pre, 'MAP\n', 'the pre-snapshot holds the bytes written through the mapping');
    assert.is(undone, 'MAP\n');
  });
});

test('server: a file still mapped shared-writable at the pre is read then (no sweep needed)', async () => {
  if (!HAS_PYTHON) {
    console.log('  skipped: python3 with its mmap module is not installed');
    return;
  }
  const repo = seeded();
  await withServer(repo, async (server, engine) => {
    await hook(repo, server, 'PreToolUse', 'toolu_1');
    await hook(repo, server, 'PostToolUse', 'toolu_1');
    await engine.sweep();
    // Maps, writes, says so, and keeps the mapping until its stdin closes.
    const holder = spawn(
      'python3',
      ['-c', `${MMAP_WRITE}print("ready",flush=True)\nsys.stdin.read()\n`, path.join(repo.dir, 'a.txt'), 'MAP\n'],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    const exited = new Promise<number | null>((res) => holder.on('exit', (code) => res(code)));
    try {
      await new Promise<void>((res, rej) => {
        let out = '';
        holder.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('ready')) res();
        });
        holder.on('exit', () => rej(new Error('the mapping process exited early')));
      });
      await hook(repo, server, 'PreToolUse', 'toolu_2', 'cat a.txt');
      await hook(repo, server, 'PostToolUse', 'toolu_2', 'cat a.txt');
    } finally {
      holder.stdin.end();
    }
    assert.is(await exited, 0);
    const st = loadSession(await openRepo(repo.dir, { env: repo.env }), sessionOf(repo)).steps.find((s) => s.toolUseId === 'toolu_2');
    assert.is(
      repo.git(['show', `${st?.pre}:a.txt`]),
      'MAP\n',
      'the pre-snapshot taken while mapped holds the bytes written through the mapping',
    );
    // Written again through a new mapping that is gone by the next call: the
    // file was mapped at the last snapshot, so the next one reads it again.
    const w = spawnSync('python3', ['-c', MMAP_WRITE, path.join(repo.dir, 'a.txt'), 'TWO\n'], { encoding: 'utf8' });
    assert.is(w.status, 0, w.stderr);
    const { pre, undone } = await deleteAndUndo(repo, server, 'toolu_3');
    assert.is(pre, 'TWO\n');
    assert.is(undone, 'TWO\n');
  });
});

test('server: a write through a hard link made from outside the worktree is in the next pre-snapshot after a sweep; undo brings it back', async () => {
  const repo = seeded();
  await withServer(repo, async (server, engine) => {
    await hook(repo, server, 'PreToolUse', 'toolu_1');
    await hook(repo, server, 'PostToolUse', 'toolu_1');
    await engine.sweep();
    const outside = path.join(repo.base, 'outside-link.txt');
    fs.linkSync(path.join(repo.dir, 'a.txt'), outside);
    fs.writeFileSync(outside, 'written outside\n');
    assert.is(repo.read('a.txt').toString(), 'written outside\n');
    await engine.sweep();
    const { pre, undone } = await deleteAndUndo(repo, server, 'toolu_2');
    assert.is(pre, 'written outside\n', 'the pre-snapshot holds the bytes written through the outside link');
    assert.is(undone, 'written outside\n');
    // Known as hard-linked now: a second write through the outside name needs no sweep.
    fs.rmSync(outside);
    fs.linkSync(path.join(repo.dir, 'a.txt'), outside);
    await engine.sweep();
    fs.writeFileSync(outside, 'again outside\n');
    const second = await deleteAndUndo(repo, server, 'toolu_3');
    assert.is(second.pre, 'again outside\n', 'a file known to be hard-linked is re-checked at every snapshot');
    assert.is(second.undone, 'again outside\n');
  });
});

test('server: its own idle sweeps find a write through an outside hard link before the next call (no sweep driven by the test)', async () => {
  const repo = seeded();
  const r = await openRepo(repo.dir, { env: { ...repo.env, AGENTSNAP_SERVER: 'on' } });
  const server = await startWorktreeServer(r, { hosted: true, snap: runSnap });
  try {
    const engine = await serverEngine(server);
    assert.ok(engine);
    await hook(repo, server, 'PreToolUse', 'toolu_1');
    await hook(repo, server, 'PostToolUse', 'toolu_1');
    const outside = path.join(repo.base, 'outside-link.txt');
    fs.linkSync(path.join(repo.dir, 'a.txt'), outside);
    fs.writeFileSync(outside, 'written outside\n');
    // Two more sweeps: the second began after the write (a sweep in progress may have looked at a.txt before it).
    const target = engine.stats.sweeps + 2;
    for (let i = 0; i < 600 && engine.stats.sweeps < target; i++) await new Promise((res) => setTimeout(res, 50));
    assert.ok(engine.stats.sweeps >= target, `the server swept on its own (${engine.stats.sweeps} sweeps)`);
    const { pre, undone } = await deleteAndUndo(repo, server, 'toolu_2');
    assert.is(pre, 'written outside\n');
    assert.is(undone, 'written outside\n');
  } finally {
    await server.close();
  }
});

test('server: a call whose payload names the worktree through a symlink is answered by the warm engine (not a fresh full scan)', async () => {
  const repo = seeded();
  const link = path.join(repo.base, 'link-to-worktree');
  fs.symlinkSync(repo.dir, link);
  try {
    await withServer(repo, async (server, engine) => {
      const env = { ...repo.env, AGENTSNAP_SERVER: 'on' };
      const call = async (event: 'PreToolUse' | 'PostToolUse', id: string) => {
        const input = JSON.stringify({ ...JSON.parse(payload(repo, event, id, 'true')), cwd: link });
        const r = await runProcess('/bin/sh', [CLIENT, '--run', server.runDir, '--exec', process.execPath, JS, 'claude', event], {
          cwd: link,
          env,
          input,
        });
        assert.is(r.code, 0, r.stderr);
        assert.is(r.stderr, '', 'answered by the server, no warning');
      };
      await call('PreToolUse', 't1');
      await call('PostToolUse', 't1');
      repo.write('a.txt', 'edited through the link\n');
      await call('PreToolUse', 't2');
      await call('PostToolUse', 't2');
      assert.ok(
        engine.stats.full + engine.stats.incremental >= 4,
        `the engine took the snapshots (full ${engine.stats.full}, incremental ${engine.stats.incremental})`,
      );
      assert.ok(engine.stats.incremental >= 3, `incremental after the first (${engine.stats.incremental})`);
    });
    const session = loadSession(await openRepo(repo.dir, { env: repo.env }), sessionOf(repo));
    const st = session.steps.find((s) => s.toolUseId === 't2');
    assert.ok(st?.pre, 'the call has a pre-snapshot');
    assert.is(repo.git(['show', `${st?.pre}:a.txt`]), 'edited through the link\n');
  } finally {
    repo.cleanup();
  }
});

test.run();
