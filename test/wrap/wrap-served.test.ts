// A wrap leaves a background server for the next session, and the next wrap's
// session is begun and ended by it (issue 19): the wrapper (bin/wrap-client.js)
// only starts the agent. What a user sees must not change: the same snapshots
// (checked against a full scan of the worktree), output, exit codes, and an end
// recorded even when the server goes away while the agent runs.
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BIN, cliProcess, tempRepo } from '../support/helpers.js';
import { gitCommonDir } from '../support/snap-helpers.js';
import { groundTruth, headTree, journal, ON, serverStatus, sessionOf, untilWatching, withServer } from '../support/served.js';

test('a wrap leaves a background server, and the next session is begun and ended by it, as a full scan sees the worktree', async () => {
  const repo = await withServer();
  try {
    // The user's own edits before the session: in its baseline.
    repo.write('a.txt', 'edited by the user\n');
    repo.write('new-by-user.txt', 'u\n');
    repo.write('ignored/x.log', 'never in a snapshot\n');
    const before = groundTruth(repo);
    const trace = path.join(path.dirname(repo.dir), 'wrapper-trace.json');
    const res = await cliProcess(repo, ['wrap', '--', 'sh', '-c', 'echo by the agent > src/agent.txt; rm src/b.txt; exit 3'], {
      env: { ...ON, GIT_TRACE2_EVENT: trace },
    });
    assert.is(res.code, 3, res.stderr);
    const id = sessionOf(res.stderr);
    assert.match(res.stderr, new RegExp(`session ${id} ended; see \`agentsnap log --session ${id}\``));
    // The wrapper itself ran no git: the server took both snapshots.
    assert.ok(
      !fs.existsSync(trace) || fs.readFileSync(trace, 'utf8').trim() === '',
      `the wrapper ran git:\n${fs.existsSync(trace) ? fs.readFileSync(trace, 'utf8').slice(0, 2000) : ''}`,
    );
    const after = groundTruth(repo);
    const ev = journal(repo, id);
    const start = ev.find((e) => e.type === 'session.start');
    const end = ev.find((e) => e.type === 'session.end');
    assert.is(start?.tree, before, 'the baseline is the worktree before the agent');
    // The run recorded no step: its changes are one step (the whole run), whose post is the session's last snapshot.
    assert.is(headTree(repo, id), after, 'the last snapshot is the worktree after it');
    assert.is(end?.exitCode, 3);
    // The session belongs to the wrapper process, not to the server (a killed wrapper's session is recovered as such).
    const server = await serverStatus(repo);
    assert.ok(start?.owner && start.owner.pid !== server.pid, `owner ${JSON.stringify(start?.owner)} is not the server ${server.pid}`);
    assert.is(fs.readFileSync(path.join(repo.dir, 'ignored/x.log'), 'utf8'), 'never in a snapshot\n');
  } finally {
    repo.cleanup();
  }
});

test('a served wrap prints and exits as a wrap without the server: a signal, a program not found', async () => {
  const repo = await withServer();
  try {
    const norm = (s: string) => s.replace(/[0-9a-z]{8}-[0-9a-z]{4}/g, 'ID');
    const served = await cliProcess(repo, ['wrap', '--', 'sh', '-c', 'kill -TERM $$'], { env: ON });
    const plain = await cliProcess(repo, ['wrap', '--', 'sh', '-c', 'kill -TERM $$'], { env: { AGENTSNAP_SERVER: 'off' } });
    assert.is(served.code, 143);
    assert.is(served.code, plain.code);
    assert.is(norm(served.stderr), norm(plain.stderr));
    assert.is(served.stdout, plain.stdout);
    const missing = await cliProcess(repo, ['wrap', '--', 'no-such-agent-here'], { env: ON });
    const missingPlain = await cliProcess(repo, ['wrap', '--', 'no-such-agent-here'], { env: { AGENTSNAP_SERVER: 'off' } });
    assert.is(missing.code, missingPlain.code);
    assert.is(missing.stderr, missingPlain.stderr);
    assert.ok(missing.code !== 0 && !/at .*\.js:\d+/.test(missing.stderr), missing.stderr);
  } finally {
    repo.cleanup();
  }
});

test('the server stopped while the agent ran: the wrapper ends the session itself, its final snapshot complete', async () => {
  const repo = await withServer();
  try {
    const script = `${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} server stop >/dev/null && echo after the server > late.txt`;
    const res = await cliProcess(repo, ['wrap', '--', 'sh', '-c', script], { env: ON });
    assert.is(res.code, 0, res.stderr);
    assert.match(res.stderr, /the background server stopped while the agent ran/);
    const id = sessionOf(res.stderr);
    assert.ok(journal(repo, id).some((e) => e.type === 'session.end'));
    assert.is(headTree(repo, id), groundTruth(repo), 'the last snapshot holds the file written after the server stopped');
  } finally {
    repo.cleanup();
  }
});

test('a session the server began keeps it past its idle time while the agent runs', async () => {
  const repo = await withServer({ AGENTSNAP_SERVER_IDLE_MS: '500' });
  try {
    // Housekeeping runs every 2 s: an agent of 4.5 s outlives the idle time several times over.
    const res = await cliProcess(repo, ['wrap', '--', 'sh', '-c', 'sleep 4.5; echo late > slow.txt'], { env: ON });
    assert.is(res.code, 0, res.stderr);
    assert.not.match(res.stderr, /server stopped/);
    const id = sessionOf(res.stderr);
    assert.ok(journal(repo, id).some((e) => e.type === 'session.end'));
    assert.is(headTree(repo, id), groundTruth(repo));
  } finally {
    repo.cleanup();
  }
});

test('beside a background server, a wrap the server does not begin (--auto) takes its snapshots through it', async () => {
  const repo = await withServer({ AGENTSNAP_SERVER_TRACE: '1' });
  try {
    repo.write('user.txt', 'before\n');
    const before = groundTruth(repo);
    const res = await cliProcess(repo, ['wrap', '--auto', '--', 'sh', '-c', 'echo auto > auto.txt'], { env: ON });
    assert.is(res.code, 0, res.stderr);
    const id = sessionOf(res.stderr);
    assert.is(journal(repo, id).find((e) => e.type === 'session.start')?.tree, before);
    // --auto: a checkpoint may have taken the change before the end.
    assert.is(headTree(repo, id), groundTruth(repo));
    const log = fs.readFileSync(path.join(gitCommonDir(repo), 'agentsnap', 'run', 'main', 'server.log'), 'utf8');
    assert.match(log, /tree served/, 'the baseline and end came from the server');
  } finally {
    repo.cleanup();
  }
});

test('a snapshot the server gives whose reply is longer than a FIFO holds (3,000 changed paths) arrives whole', async () => {
  const repo = await withServer();
  try {
    const res = await cliProcess(
      repo,
      [
        'wrap',
        '--auto',
        '--',
        'sh',
        '-c',
        'mkdir many && cd many && i=0; while [ $i -lt 3000 ]; do echo $i > "file-with-a-longish-name-$i.txt"; i=$((i+1)); done',
      ],
      { env: ON, timeoutMs: 120_000 },
    );
    assert.is(res.code, 0, res.stderr);
    const id = sessionOf(res.stderr);
    assert.is(headTree(repo, id), groundTruth(repo));
    // However the checkpoints split it, the session's changes hold the 3,000 files.
    const changed = new Set(journal(repo, id).flatMap((e) => ((e as { changed?: { path: string }[] }).changed ?? []).map((c) => c.path)));
    assert.is([...changed].filter((p) => p.startsWith('many/')).length, 3000);
  } finally {
    repo.cleanup();
  }
});

test("the snapshot the server is asked for under other git settings is the wrapper's own", async () => {
  const repo = await withServer({ AGENTSNAP_SERVER_TRACE: '1' });
  try {
    const global = path.join(path.dirname(repo.dir), 'other-gitconfig');
    fs.writeFileSync(global, '[core]\n\texcludesFile = /dev/null\n');
    repo.write('user.txt', 'before\n');
    const res = await cliProcess(repo, ['wrap', '--auto', '--', 'sh', '-c', 'echo x > x.txt'], {
      env: { ...ON, GIT_CONFIG_GLOBAL: global },
    });
    assert.is(res.code, 0, res.stderr);
    assert.is(headTree(repo, sessionOf(res.stderr)), groundTruth(repo));
    const log = fs.readFileSync(path.join(gitCommonDir(repo), 'agentsnap', 'run', 'main', 'server.log'), 'utf8');
    assert.match(log, /tree declined \(another git environment\)/);
  } finally {
    repo.cleanup();
  }
});

test('nothing is left running after a wrap with agentsnap.serverAfterWrap false, or the server off', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    repo.git(['config', 'agentsnap.serverAfterWrap', 'false']);
    const res = await cliProcess(repo, ['wrap', '-q', '--', 'true'], { env: { AGENTSNAP_SERVER: 'on', AGENTSNAP_SERVER_AFTER_WRAP: '' } });
    assert.is(res.code, 0, res.stderr);
    assert.is((await serverStatus(repo)).running, false);
    repo.git(['config', '--unset', 'agentsnap.serverAfterWrap']);
    const off = await cliProcess(repo, ['wrap', '-q', '--', 'true'], {
      env: { AGENTSNAP_SERVER: 'off', AGENTSNAP_SERVER_AFTER_WRAP: '1' },
    });
    assert.is(off.code, 0, off.stderr);
    assert.is((await serverStatus(repo)).running, false);
    // The default: one is left.
    const on = await cliProcess(repo, ['wrap', '-q', '--', 'true'], { env: { AGENTSNAP_SERVER: 'on', AGENTSNAP_SERVER_AFTER_WRAP: '' } });
    assert.is(on.code, 0, on.stderr);
    assert.is((await untilWatching(repo)).running, true);
  } finally {
    repo.cleanup();
  }
});

test.run();
