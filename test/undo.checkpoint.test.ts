// Issue 13 item 5: checkpoints must not swallow the user's own edits. What a
// checkpoint records is the user's (a `snap -m`, the checkpoint a resumed
// `wrap --session` takes, the one a post hook takes when no pre came), except
// the automatic checkpoints of `wrap --auto` (the agent's steps). undo, redo,
// restore and revert refuse (exit 3) to take back the user's changes unless --force.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { cli, cliProcess, step, tempRepo, type TempRepo } from './helpers.js';

function text(repo: TempRepo, rel: string): string {
  return repo.read(rel).toString();
}

function agentScript(repo: TempRepo, name: string, body: string): string {
  const file = path.join(repo.base, name);
  fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return file;
}

test('undo N refuses (exit 3) to revert an edit a later `snap -m` checkpoint recorded; --force reverts it', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a0\n', 'b.txt': 'b0\n' } });
  try {
    await step(repo, () => repo.write('a.txt', 'a1 by the agent\n'));
    repo.write('b.txt', 'b1 mine\n');
    const cp = await cli(repo, ['snap', '-m', 'my edit']);
    assert.is(cp.code, 0, cp.stderr);
    const log = await cli(repo, ['log']);
    assert.match(log.stdout, /^\s+2 .*changed outside tool calls \(undo needs --force\)/m);
    assert.not.match(log.stdout, /^\s+1 .*undo needs --force/m);
    const json = JSON.parse((await cli(repo, ['log', '--json'])).stdout) as { files: { step: number; madeBy?: string }[] } | { step: number; madeBy?: string }[];
    const steps = Array.isArray(json) ? json : json.files;
    assert.is(steps.find((s) => s.step === 2)?.madeBy, 'user');
    const r = await cli(repo, ['undo', '1']);
    assert.is(r.code, 3, r.stdout + r.stderr);
    assert.match(r.stderr, 'b.txt');
    assert.match(r.stderr, /outside the recorded tool calls/);
    assert.not.match(r.stderr, /a\.txt/, 'the agent\'s change is not listed');
    assert.is(text(repo, 'a.txt'), 'a1 by the agent\n', 'nothing written');
    assert.is(text(repo, 'b.txt'), 'b1 mine\n');
    const forced = await cli(repo, ['undo', '1', '--force']);
    assert.is(forced.code, 0, forced.stderr);
    assert.is(text(repo, 'a.txt'), 'a0\n');
    assert.is(text(repo, 'b.txt'), 'b0\n');
  } finally {
    repo.cleanup();
  }
});

test('undo of a `snap -m` checkpoint itself refuses (its change is the user\'s); bare undo too', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a0\n' } });
  try {
    await step(repo, () => repo.write('x.txt', 'agent\n'));
    repo.write('a.txt', 'a1 mine\n');
    assert.is((await cli(repo, ['snap', '-m', 'mine'])).code, 0);
    for (const args of [['undo', '2'], ['undo']]) {
      const r = await cli(repo, args);
      assert.is(r.code, 3, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, 'a.txt');
      assert.is(text(repo, 'a.txt'), 'a1 mine\n');
    }
    const dry = await cli(repo, ['undo', '2', '--dry-run', '--json']);
    assert.is(dry.code, 0, dry.stderr);
    const plan = (JSON.parse(dry.stdout) as { files: { wouldRefuse: boolean; outside: { path: string }[] } }).files;
    assert.ok(plan.wouldRefuse, dry.stdout);
    assert.equal(plan.outside.map((o) => o.path), ['a.txt']);
    const forced = await cli(repo, ['undo', '2', '--force']);
    assert.is(forced.code, 0, forced.stderr);
    assert.is(text(repo, 'a.txt'), 'a0\n');
  } finally {
    repo.cleanup();
  }
});

test('an edit made between two `wrap --session` runs lands in the resume checkpoint: undo 1 refuses, --force reverts', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a0\n', 'b.txt': 'b0\n' } });
  try {
    const agent = (content: string) =>
      agentScript(
        repo,
        `agent-${content}.sh`,
        [
          'step=$(node "$AGENTSNAP_BIN" snap --phase pre --tool Edit -q)',
          `echo ${content} > a.txt`,
          'node "$AGENTSNAP_BIN" snap --phase post --step "$step" -q >/dev/null',
        ].join('\n'),
      );
    const first = await cliProcess(repo, ['wrap', '--session', 'w1', '--', agent('a1')]);
    assert.is(first.code, 0, first.stderr);
    repo.write('b.txt', 'b1 edited by hand between the runs\n');
    const second = await cliProcess(repo, ['wrap', '--session', 'w1', '--', agent('a2')]);
    assert.is(second.code, 0, second.stderr);
    const r = await cli(repo, ['undo', '1', '--session', 'w1']);
    assert.is(r.code, 3, r.stdout + r.stderr);
    assert.match(r.stderr, 'b.txt');
    assert.is(text(repo, 'a.txt'), 'a2\n');
    assert.is(text(repo, 'b.txt'), 'b1 edited by hand between the runs\n');
    // The step of the second run alone is the agent's: undoing it needs no --force.
    const own = await cli(repo, ['undo', '3', '--session', 'w1']);
    assert.is(own.code, 0, own.stderr);
    assert.is(text(repo, 'a.txt'), 'a1\n');
    assert.is(text(repo, 'b.txt'), 'b1 edited by hand between the runs\n');
    const forced = await cli(repo, ['undo', '1', '--session', 'w1', '--force']);
    assert.is(forced.code, 0, forced.stderr);
    assert.is(text(repo, 'a.txt'), 'a0\n');
    assert.is(text(repo, 'b.txt'), 'b0\n');
  } finally {
    repo.cleanup();
  }
});

test('restore (before a step) refuses to overwrite a path a later checkpoint recorded as the user\'s; --force restores it', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a0\n', 'b.txt': 'b0\n' } });
  try {
    await step(repo, () => {
      repo.write('a.txt', 'a1\n');
      repo.write('b.txt', 'b1\n');
    });
    repo.write('b.txt', 'b2 mine\n');
    assert.is((await cli(repo, ['snap', '-m', 'mine'])).code, 0);
    const r = await cli(repo, ['restore', '1', '--', 'b.txt']);
    assert.is(r.code, 3, r.stdout + r.stderr);
    assert.match(r.stderr, 'b.txt');
    assert.is(text(repo, 'b.txt'), 'b2 mine\n');
    // A path only the agent changed is restored without --force.
    const own = await cli(repo, ['restore', '1', '--', 'a.txt']);
    assert.is(own.code, 0, own.stderr);
    assert.is(text(repo, 'a.txt'), 'a0\n');
    const forced = await cli(repo, ['restore', '1', '--force', '--', 'b.txt']);
    assert.is(forced.code, 0, forced.stderr);
    assert.is(text(repo, 'b.txt'), 'b0\n');
  } finally {
    repo.cleanup();
  }
});

test('redo refuses to overwrite an edit a checkpoint recorded after the undo; --force redoes', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a0\n', 'b.txt': 'b0\n' } });
  try {
    await step(repo, () => {
      repo.write('a.txt', 'a1\n');
      repo.write('b.txt', 'b1\n');
    });
    assert.is((await cli(repo, ['undo', '1'])).code, 0);
    repo.write('b.txt', 'b2 mine after the undo\n');
    assert.is((await cli(repo, ['snap', '-m', 'mine'])).code, 0);
    const r = await cli(repo, ['redo']);
    assert.is(r.code, 3, r.stdout + r.stderr);
    assert.match(r.stderr, 'b.txt');
    assert.is(text(repo, 'a.txt'), 'a0\n');
    assert.is(text(repo, 'b.txt'), 'b2 mine after the undo\n');
    const forced = await cli(repo, ['redo', '--force']);
    assert.is(forced.code, 0, forced.stderr);
    assert.is(text(repo, 'a.txt'), 'a1\n');
    assert.is(text(repo, 'b.txt'), 'b1\n');
  } finally {
    repo.cleanup();
  }
});

test('revert of a `snap -m` checkpoint refuses (it would take back the user\'s edit); --force reverts', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a0\n' } });
  try {
    assert.is((await cli(repo, ['snap', '-m', 'session start'])).code, 0);
    repo.write('a.txt', 'a1 mine\n');
    assert.is((await cli(repo, ['snap', '-m', 'mine'])).code, 0);
    const r = await cli(repo, ['revert', '2']);
    assert.is(r.code, 3, r.stdout + r.stderr);
    assert.match(r.stderr, 'a.txt');
    assert.is(text(repo, 'a.txt'), 'a1 mine\n');
    const forced = await cli(repo, ['revert', '2', '--force']);
    assert.is(forced.code, 0, forced.stderr);
    assert.is(text(repo, 'a.txt'), 'a0\n');
  } finally {
    repo.cleanup();
  }
});

test('a checkpoint taken while a tool call runs: the running call\'s change is the agent\'s, the rest the user\'s', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a0\n', 'b.txt': 'b0\n' } });
  try {
    const pre = await cli(repo, ['snap', '--phase', 'pre', '--tool', 'Bash', '-q']);
    assert.is(pre.code, 0, pre.stderr);
    repo.write('a.txt', 'a1 by the running call\n');
    assert.is((await cli(repo, ['snap', '-m', 'mid-call'])).code, 0);
    assert.is((await cli(repo, ['snap', '--phase', 'post', '--step', '1', '-q'])).code, 0);
    const own = await cli(repo, ['undo', '1']);
    assert.is(own.code, 0, own.stdout + own.stderr);
    assert.is(text(repo, 'a.txt'), 'a0\n');
  } finally {
    repo.cleanup();
  }
});

test('wrap --auto: the automatic checkpoints are the agent\'s steps (the last burst too): undo needs no --force', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a0\n' } });
  try {
    // A long quiet time: the agent exits before any checkpoint is due; the wrapper's last one records its change.
    repo.git(['config', 'agentsnap.autoQuiet', '600000']);
    repo.git(['config', 'agentsnap.autoPoll', '0']);
    const res = await cliProcess(repo, ['wrap', '--auto', '--session', 'auto1', '--', 'sh', '-c', 'echo a1 > a.txt']);
    assert.is(res.code, 0, res.stderr);
    const r = await cli(repo, ['undo', '--session', 'auto1']);
    assert.is(r.code, 0, r.stdout + r.stderr);
    assert.is(text(repo, 'a.txt'), 'a0\n');
  } finally {
    repo.cleanup();
  }
});

test('wrap --auto beside a hooked agent: its calls are its steps, what a checkpoint sees besides them is not (undo refuses)', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a0\n' } });
  try {
    repo.git(['config', 'agentsnap.autoQuiet', '600000']);
    repo.git(['config', 'agentsnap.autoPoll', '0']);
    // A stand-in named codex whose hooks never run: the change it makes reached no hook.
    const fake = path.join(repo.base, 'codex');
    fs.writeFileSync(fake, '#!/bin/sh\necho a1 > a.txt\n', { mode: 0o755 });
    const res = await cliProcess(repo, ['wrap', '--auto', '--session', 'auto2', '--', fake, 'exec', 'x']);
    assert.is(res.code, 0, res.stderr);
    const r = await cli(repo, ['undo', '--session', 'auto2']);
    assert.is(r.code, 3, r.stdout + r.stderr);
    assert.match(r.stderr, 'a.txt');
    assert.is(text(repo, 'a.txt'), 'a1\n');
  } finally {
    repo.cleanup();
  }
});

test.run();
