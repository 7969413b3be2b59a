// The end of a wrap never records nothing silently (issue 32 item 4): a wrapped
// command that recorded no step of its own but changed files leaves one
// undoable step (the whole run), and the end message says which; one that
// changed nothing says so. The same with the warm server beginning and ending
// the session (bin/wrap-client.js), without it, and when the server is gone
// by the end (the wrapper ends the session itself).
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BIN, cliProcess, tempRepo, type TempRepo } from '../support/helpers.js';
import { journal, ON, sessionOf, withServer } from '../support/served.js';

const OFF = { AGENTSNAP_SERVER: 'off' };

/** Each way a wrap's session can be begun and ended: by the wrapper alone, or by the background server. */
const MODES: { name: string; repo: () => Promise<TempRepo>; env: Record<string, string> }[] = [
  { name: 'without the server', repo: async () => tempRepo({ files: { 'a.txt': 'a\n', 'src/b.txt': 'b\n' } }), env: OFF },
  { name: 'with the warm server', repo: () => withServer(), env: ON },
];

for (const mode of MODES) {
  test(`${mode.name}: wrap -- bash -c 'echo changed >> a.txt' leaves one step, which log shows and undo 1 takes back`, async () => {
    const repo = await mode.repo();
    try {
      const before = repo.read('a.txt');
      const res = await cliProcess(repo, ['wrap', '--', 'bash', '-c', 'echo changed >> a.txt'], { env: mode.env });
      assert.is(res.code, 0, res.stderr);
      const id = sessionOf(res.stderr);
      assert.match(
        res.stderr,
        `agentsnap: recorded 1 step (the whole run: 1 file changed); \`agentsnap undo 1 --session ${id}\` takes it back`,
      );
      if (mode.env === ON) assert.ok(journal(repo, id).some((e) => e.type === 'session.end'));
      const log = await cliProcess(repo, ['log', '--session', id], { env: mode.env });
      assert.is(log.code, 0, log.stderr);
      assert.match(log.stdout, /\b1\b.*wrap/);
      assert.match(log.stdout, "bash -c 'echo changed >> a.txt'");
      const show = await cliProcess(repo, ['show', '1', '--session', id], { env: mode.env });
      assert.is(show.code, 0, show.stderr);
      assert.match(show.stdout, 'a.txt');
      const undo = await cliProcess(repo, ['undo', '1', '--session', id], { env: mode.env });
      assert.is(undo.code, 0, undo.stderr + undo.stdout);
      assert.equal(repo.read('a.txt'), before);
    } finally {
      repo.cleanup();
    }
  });

  test(`${mode.name}: a wrapped command that changes nothing records nothing and says so`, async () => {
    const repo = await mode.repo();
    try {
      const res = await cliProcess(repo, ['wrap', '--', 'sh', '-c', 'cat a.txt >/dev/null'], { env: mode.env });
      assert.is(res.code, 0, res.stderr);
      const id = sessionOf(res.stderr);
      assert.match(res.stderr, `agentsnap: session ${id} ended; no files changed, nothing recorded`);
      assert.not.match(res.stderr, 'recorded 1 step');
      assert.not.ok(journal(repo, id).some((e) => e.type === 'step.pre' || e.type === 'step.checkpoint'));
      const undo = await cliProcess(repo, ['undo', '--session', id], { env: mode.env });
      assert.is(undo.code, 1, undo.stderr);
    } finally {
      repo.cleanup();
    }
  });
}

test('the server stopped while the command ran: the wrapper that ends the session records the whole run as one step too', async () => {
  const repo = await withServer();
  try {
    const script = `${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} server stop >/dev/null && echo after the server > late.txt`;
    const res = await cliProcess(repo, ['wrap', '--', 'sh', '-c', script], { env: ON });
    assert.is(res.code, 0, res.stderr);
    assert.match(res.stderr, /the background server stopped while the agent ran/);
    const id = sessionOf(res.stderr);
    assert.match(res.stderr, `recorded 1 step (the whole run: 1 file changed); \`agentsnap undo 1 --session ${id}\``);
    const undo = await cliProcess(repo, ['undo', '1', '--session', id], { env: OFF });
    assert.is(undo.code, 0, undo.stderr + undo.stdout);
    assert.not.ok(repo.exists('late.txt'));
  } finally {
    repo.cleanup();
  }
});

test('a failing command is still one step (failed), and a resumed session records its next run as its own step', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const first = await cliProcess(repo, ['wrap', '--session', 'again', '--', 'sh', '-c', 'echo one > a.txt; exit 3'], { env: OFF });
    assert.is(first.code, 3, first.stderr);
    assert.match(first.stderr, '`agentsnap undo 1 --session again` takes it back');
    const second = await cliProcess(repo, ['wrap', '--session', 'again', '--', 'sh', '-c', 'echo two > a.txt; echo n > new.txt'], {
      env: OFF,
    });
    assert.is(second.code, 0, second.stderr);
    // Step 2 is the resume's checkpoint, step 3 the second run.
    assert.match(second.stderr, 'recorded 1 step (the whole run: 2 files changed); `agentsnap undo 3 --session again` takes it back');
    const log = await cliProcess(repo, ['log', '--session', 'again', '--json'], { env: OFF });
    const steps = JSON.parse(log.stdout) as { step: number; tool: string | null; status: string }[];
    const wrapSteps = steps.filter((s) => s.tool === 'wrap').map((s) => [s.step, s.status]);
    assert.equal(wrapSteps, [
      [1, 'failed'],
      [3, 'done'],
    ]);
    const undo = await cliProcess(repo, ['undo', '3', '--session', 'again'], { env: OFF });
    assert.is(undo.code, 0, undo.stderr + undo.stdout);
    assert.is(repo.read('a.txt').toString(), 'one\n');
    assert.not.ok(repo.exists('new.txt'));
  } finally {
    repo.cleanup();
  }
});

test('wrap --worktree: the whole run is one step of the session worktree, named after the apply/promote/discard lines', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const res = await cliProcess(repo, ['wrap', '--worktree', '--', 'sh', '-c', 'echo x > a.txt'], { env: OFF });
    assert.is(res.code, 0, res.stderr);
    const id = sessionOf(res.stderr);
    assert.match(res.stderr, `discard:  agentsnap discard ${id}`);
    assert.match(res.stderr, `recorded 1 step (the whole run: 1 file changed); \`agentsnap undo 1 --session ${id}\` takes it back`);
    const log = await cliProcess(repo, ['log', '--session', id, '--json'], { env: OFF });
    assert.is(log.code, 0, log.stderr);
    const steps = JSON.parse(log.stdout) as { step: number; tool: string | null }[];
    assert.equal(
      steps.map((s) => [s.step, s.tool]),
      [[1, 'wrap']],
    );
    assert.is(repo.read('a.txt').toString(), 'a\n', "the user's worktree is untouched");
  } finally {
    repo.cleanup();
  }
});

test('--auto: its checkpoints are the steps, as before; no whole-run step beside them', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const res = await cliProcess(repo, ['wrap', '--auto', '--', 'sh', '-c', 'echo x > a.txt'], { env: OFF });
    assert.is(res.code, 0, res.stderr);
    const id = sessionOf(res.stderr);
    assert.not.match(res.stderr, 'recorded 1 step');
    assert.match(res.stderr, `session ${id} ended; see`);
    const tools = journal(repo, id)
      .filter((e) => e.type === 'step.checkpoint' || e.type === 'step.pre')
      .map((e) => (e as { tool?: string | null }).tool);
    assert.equal(tools, ['auto']);
  } finally {
    repo.cleanup();
  }
});

test('a known agent none of whose calls reached the hooks: its changes are one step, changes outside any tool call', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const fake = path.join(repo.base, 'codex');
    fs.writeFileSync(fake, '#!/bin/sh\necho two > a.txt\n', { mode: 0o755 });
    const res = await cliProcess(repo, ['wrap', '--', fake, 'exec', 'x'], { env: OFF });
    assert.is(res.code, 0, res.stderr);
    const id = sessionOf(res.stderr);
    assert.match(res.stderr, "codex changed 1 file(s) but none of its tool calls reached agentsnap's hooks");
    assert.match(res.stderr, `recorded as step 1 (changes outside any tool call: \`agentsnap undo 1 --session ${id}\``);
    const log = await cliProcess(repo, ['log', '--session', id], { env: OFF });
    assert.is(log.code, 0, log.stderr);
    assert.match(log.stdout, /\b1\b.*wrap.*changes outside any tool call/);
    const undo = await cliProcess(repo, ['undo', '1', '--session', id], { env: OFF });
    assert.is(undo.code, 0, undo.stderr + undo.stdout);
    assert.is(repo.read('a.txt').toString(), 'one\n');
  } finally {
    repo.cleanup();
  }
});

test.run();
