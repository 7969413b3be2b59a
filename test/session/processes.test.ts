// The processes an agent leaves running (issue 16): found when asked (status, undo), attributed to the step
// whose call started them, reported by undo, stopped only with --stop-processes, and only while they are
// provably the same process of this session.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { agentsnapOnPath, cli, cliProcess, tempRepo } from '../support/helpers.js';

const linux = process.platform === 'linux' && fs.existsSync('/proc/self/environ');

function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\S+ \(.*\) [ZX] /.test(stat);
  } catch {
    return false;
  }
}

async function until(what: string, ok: () => boolean): Promise<void> {
  for (let i = 0; i < 600 && !ok(); i++) await new Promise((r) => setTimeout(r, 50));
  assert.ok(ok(), what);
}

test('processes: a server the agent left running is listed by status, reported by undo, stopped by undo --stop-processes', async () => {
  if (!linux) {
    console.log('  skipped: needs Linux /proc');
    return;
  }
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  const pids: number[] = [];
  try {
    const pidFile = path.join(repo.base, 'server.pid');
    const portFile = path.join(repo.base, 'server.port');
    // The "agent": a call (step 1) that starts a server in the background and a file, then a call (step 2) that only edits.
    const server = `require('fs').writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); const s = require('net').createServer().listen(0, '127.0.0.1', () => require('fs').writeFileSync(${JSON.stringify(portFile)}, String(s.address().port))); setInterval(() => {}, 1e6)`;
    const script = [
      'set -e',
      'agentsnap snap --phase pre --tool Bash -q',
      `node -e ${JSON.stringify(server).replace(/\$/g, '\\$')} </dev/null >/dev/null 2>&1 &`,
      `while [ ! -s ${JSON.stringify(portFile)} ]; do sleep 0.05; done`,
      'echo made > made.txt',
      'agentsnap snap --phase post --step 1 --tool Bash -q',
      'agentsnap snap --phase pre --tool Edit -q',
      'echo two > a.txt',
      'agentsnap snap --phase post --step 2 --tool Edit -q',
    ].join('\n');
    const env = { PATH: agentsnapOnPath(repo.base) };
    const res = await cliProcess(repo, ['wrap', '--agent', 'generic', '--', 'sh', '-c', script], { env, timeoutMs: 120_000 });
    assert.is(res.code, 0, res.stderr);
    const pid = Number(fs.readFileSync(pidFile, 'utf8'));
    pids.push(pid);
    const port = Number(fs.readFileSync(portFile, 'utf8'));
    assert.ok(alive(pid), 'the server outlived the agent');

    const status = await cli(repo, ['status', '--json'], { env });
    assert.is(status.code, 0, status.stderr);
    const listed = (JSON.parse(status.stdout) as { processes: { pid: number; step: number; ports: number[]; command: string }[] })
      .processes;
    assert.equal(
      listed.map((p) => ({ pid: p.pid, step: p.step, ports: p.ports })),
      [{ pid, step: 1, ports: [port] }],
      status.stdout,
    );
    assert.match(listed[0]?.command ?? '', 'node -e');
    const text = await cli(repo, ['status'], { env });
    assert.match(text.stdout, `processes the agent left running (1):\n  pid ${pid}  node -e`);
    assert.match(text.stdout, `(started by step 1, listening on :${port})`);

    // Undo of step 2 only: the server is step 1's, not reported.
    const undoEdit = await cli(repo, ['undo', '2'], { env });
    assert.is(undoEdit.code, 0, undoEdit.stderr);
    assert.not.match(undoEdit.stdout, 'still running');
    // Undo of step 1: reported, left running.
    const undo2 = await cli(repo, ['undo', '1'], { env });
    assert.is(undo2.code, 0, undo2.stderr);
    assert.match(undo2.stdout, `still running, started by the undone steps (files are put back, processes are not):\n  pid ${pid}`);
    assert.match(undo2.stderr, '`agentsnap undo 1 --stop-processes` also stops them');
    assert.ok(alive(pid), 'undo without --stop-processes stops nothing');
    assert.not.ok(fs.existsSync(path.join(repo.dir, 'made.txt')));
    const dry = await cli(repo, ['undo', '1', '--stop-processes', '--dry-run'], { env });
    assert.is(dry.code, 0, dry.stderr);
    assert.ok(alive(pid), 'a dry run stops nothing');
    // Again with --stop-processes: the files are already there, the server is stopped.
    const stop = await cli(repo, ['undo', '1', '--stop-processes', '--json'], { env });
    assert.is(stop.code, 0, stop.stderr);
    const stopped = (JSON.parse(stop.stdout) as { processes: { pid: number; stopped: string }[] }).processes;
    assert.equal(
      stopped.map((p) => [p.pid, p.stopped]),
      [[pid, 'terminated']],
    );
    await until('the stopped server is gone', () => !alive(pid));
    const after = await cli(repo, ['status', '--json'], { env });
    assert.equal((JSON.parse(after.stdout) as { processes: unknown[] }).processes, []);
  } finally {
    for (const p of pids) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    repo.cleanup();
  }
});

test("processes: a process of another session, or started outside any call, is not the session's", async () => {
  if (!linux) {
    console.log('  skipped: needs Linux /proc');
    return;
  }
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  const pids: number[] = [];
  try {
    const pidFile = path.join(repo.base, 'early.pid');
    // Started by the agent before its first call (as an agent's own helper): no step started it.
    const script = [
      `sleep 300 </dev/null >/dev/null 2>&1 & echo $! > ${JSON.stringify(pidFile)}`,
      // Spacing, not synchronisation: start times are known to ~20 ms; a loaded machine only widens the gap.
      'sleep 0.3',
      'agentsnap snap --phase pre --tool Bash -q',
      'echo x > x.txt',
      'agentsnap snap --phase post --step 1 --tool Bash -q',
    ].join('\n');
    const env = { PATH: agentsnapOnPath(repo.base) };
    const res = await cliProcess(repo, ['wrap', '--agent', 'generic', '--', 'sh', '-c', script], { env, timeoutMs: 120_000 });
    assert.is(res.code, 0, res.stderr);
    const pid = Number(fs.readFileSync(pidFile, 'utf8'));
    pids.push(pid);
    assert.ok(alive(pid));
    const status = await cli(repo, ['status', '--json'], { env });
    assert.equal((JSON.parse(status.stdout) as { processes: unknown[] }).processes, [], status.stdout);
    const undo = await cli(repo, ['undo', '1', '--stop-processes'], { env });
    assert.is(undo.code, 0, undo.stderr);
    assert.ok(alive(pid), 'not stopped: no call of the session started it');
  } finally {
    for (const p of pids) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    repo.cleanup();
  }
});

test.run();
