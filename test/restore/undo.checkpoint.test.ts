// Issue 13 item 5: checkpoints must not swallow the user's own edits. What a
// checkpoint records is the user's (a `snap -m`, the checkpoint a resumed
// `wrap --session` takes, the one a post hook takes when no pre came), except
// the automatic checkpoints of `wrap --auto` (the agent's steps). Since issue
// 32, undo, redo and restore keep what only the user changed (reported kept),
// refuse (exit 3) what both changed unless --merge or --force; the user's own
// checkpoint is a point to return to (item 5): `undo N` of it goes back to
// before it, and --exact passes over it, without --force; revert refuses to
// take back a checkpoint of the user's unless --force.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { cli, cliProcess, step, tempRepo, type TempRepo } from '../support/helpers.js';
import { FAMILIES, runSequence, type Op } from '../support/nothing-lost.js';

function text(repo: TempRepo, rel: string): string {
  return repo.read(rel).toString();
}

function agentScript(repo: TempRepo, name: string, body: string): string {
  const file = path.join(repo.base, name);
  fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return file;
}

test('undo N keeps an edit a later `snap -m` checkpoint recorded; --exact reverts it without --force (issue 32 item 5)', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a0\n', 'b.txt': 'b0\n' } });
  try {
    await step(repo, () => repo.write('a.txt', 'a1 by the agent\n'));
    repo.write('b.txt', 'b1 mine\n');
    const cp = await cli(repo, ['snap', '-m', 'my edit']);
    assert.is(cp.code, 0, cp.stderr);
    const log = await cli(repo, ['log']);
    assert.match(log.stdout, /^\s+2 .*your edits \(an undo keeps them\)/m);
    assert.not.match(log.stdout, /^\s+1 .*an undo keeps them/m);
    const json = JSON.parse((await cli(repo, ['log', '--json'])).stdout) as
      | { files: { step: number; madeBy?: string }[] }
      | { step: number; madeBy?: string }[];
    const steps = Array.isArray(json) ? json : json.files;
    assert.is(steps.find((s) => s.step === 2)?.madeBy, 'user');
    const r = await cli(repo, ['undo', '1']);
    assert.is(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /kept: b\.txt \(your edit at checkpoint 2: my edit\)/);
    assert.is(text(repo, 'a.txt'), 'a0\n');
    assert.is(text(repo, 'b.txt'), 'b1 mine\n');
    assert.is((await cli(repo, ['redo'])).code, 0);
    const exact = await cli(repo, ['undo', '1', '--exact']);
    assert.is(exact.code, 0, exact.stdout + exact.stderr);
    assert.is(text(repo, 'a.txt'), 'a0\n');
    assert.is(text(repo, 'b.txt'), 'b0\n');
  } finally {
    repo.cleanup();
  }
});

test('undo of a `snap -m` checkpoint itself goes back to before it without --force (a point to return to, issue 32 item 5); bare undo too', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a0\n' } });
  try {
    await step(repo, () => repo.write('x.txt', 'agent\n'));
    repo.write('a.txt', 'a1 mine\n');
    assert.is((await cli(repo, ['snap', '-m', 'mine'])).code, 0);
    const dry = await cli(repo, ['undo', '2', '--dry-run', '--json']);
    assert.is(dry.code, 0, dry.stdout + dry.stderr);
    const plan = (JSON.parse(dry.stdout) as { files: { wouldRefuse: boolean; yours: unknown[]; changes: { path: string }[] } }).files;
    assert.not.ok(plan.wouldRefuse, dry.stdout);
    assert.equal(plan.yours, []);
    assert.equal(
      plan.changes.map((c) => c.path),
      ['a.txt'],
    );
    const bare = await cli(repo, ['undo']);
    assert.is(bare.code, 0, bare.stdout + bare.stderr);
    assert.match(bare.stdout, /^undo 2 /m);
    assert.is(text(repo, 'a.txt'), 'a0\n');
    assert.is(text(repo, 'x.txt'), 'agent\n', "the agent's step before the checkpoint stays");
  } finally {
    repo.cleanup();
  }
});

test('an edit made between two `wrap --session` runs lands in the resume checkpoint: undo 1 keeps it, --exact reverts it', async () => {
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
    const r = await cli(repo, ['undo', '1', '--session', 'w1', '--dry-run', '--json']);
    assert.is(r.code, 0, r.stdout + r.stderr);
    assert.equal(
      (JSON.parse(r.stdout) as { files: { yours: { path: string }[] } }).files.yours.map((y) => y.path),
      ['b.txt'],
    );
    // The step of the second run alone is the agent's: undoing it needs no --force.
    const own = await cli(repo, ['undo', '3', '--session', 'w1']);
    assert.is(own.code, 0, own.stderr);
    assert.is(text(repo, 'a.txt'), 'a1\n');
    assert.is(text(repo, 'b.txt'), 'b1 edited by hand between the runs\n');
    const exact = await cli(repo, ['undo', '1', '--session', 'w1', '--exact']);
    assert.is(exact.code, 0, exact.stderr);
    assert.is(text(repo, 'a.txt'), 'a0\n');
    assert.is(text(repo, 'b.txt'), 'b0\n');
  } finally {
    repo.cleanup();
  }
});

test("restore (before a step) refuses to overwrite a path a later checkpoint recorded as the user's; --force restores it", async () => {
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

test("revert of a `snap -m` checkpoint refuses (it would take back the user's edit); --force reverts", async () => {
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

test("a checkpoint taken while a tool call runs: the running call's change is the agent's, the rest the user's", async () => {
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

test("wrap --auto: the automatic checkpoints are the agent's steps (the last burst too): undo needs no --force", async () => {
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

test("wrap --auto beside a hooked agent: its calls are its steps, what a checkpoint sees besides them is the user's (undo of that checkpoint goes back to before it)", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a0\n' } });
  try {
    repo.git(['config', 'agentsnap.autoQuiet', '600000']);
    repo.git(['config', 'agentsnap.autoPoll', '0']);
    // A stand-in named codex whose hooks never run: the change it makes reached no hook.
    const fake = path.join(repo.base, 'codex');
    fs.writeFileSync(fake, '#!/bin/sh\necho a1 > a.txt\n', { mode: 0o755 });
    const res = await cliProcess(repo, ['wrap', '--auto', '--session', 'auto2', '--', fake, 'exec', 'x']);
    assert.is(res.code, 0, res.stderr);
    // Undone itself, the user's checkpoint is a point to return to: what it recorded is taken back.
    const over = await cli(repo, ['undo', '1', '--session', 'auto2', '--dry-run', '--json']);
    assert.is(over.code, 0, over.stdout + over.stderr);
    assert.equal(
      (JSON.parse(over.stdout) as { files: { changes: { path: string }[] } }).files.changes.map((c) => c.path),
      ['a.txt'],
    );
    const r = await cli(repo, ['undo', '--session', 'auto2']);
    assert.is(r.code, 0, r.stdout + r.stderr);
    assert.is(text(repo, 'a.txt'), 'a0\n');
  } finally {
    repo.cleanup();
  }
});

// Operations must not swallow the user's edits either (found by the generative
// test, test/safety/nothing-lost.property.test.ts): an operation's safety snapshot
// holds what the user changed since the session head, and its result (the new
// session head) is built on it. What that snapshot saw besides the tool calls
// is journaled (`op.start.changedBefore`) and stays protected for every later
// operation whose target is before it.
async function sessionWithUserEdit(): Promise<{ repo: TempRepo; n: number }> {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  const start = await cli(repo, ['snap', '--json']);
  assert.is(start.code, 0, start.stderr);
  const n = await step(repo, () => repo.write('b.txt', 'from the agent\n'));
  repo.write('a.txt', "the user's own edit\n");
  return { repo, n };
}

function journalOf(repo: TempRepo): string {
  const dir = path.join(repo.dir, '.git', 'agentsnap', 'sessions');
  const ids = fs.readdirSync(dir);
  assert.is(ids.length, 1);
  return path.join(dir, ids[0]!, 'journal.jsonl');
}

test("without an operation in between, undo N --exact refuses over the user's edit made after step N; undo N keeps it", async () => {
  const { repo, n } = await sessionWithUserEdit();
  try {
    const undo = await cli(repo, ['undo', String(n), '--exact']);
    assert.is(undo.code, 3, undo.stderr);
    assert.is(text(repo, 'a.txt'), "the user's own edit\n");
    const keeps = await cli(repo, ['undo', String(n)]);
    assert.is(keeps.code, 0, keeps.stderr);
    assert.is(text(repo, 'a.txt'), "the user's own edit\n");
    assert.not.ok(repo.exists('b.txt'));
  } finally {
    repo.cleanup();
  }
});

for (const [what, args] of [
  ['a restore of another path', (n: number) => ['restore', String(n), '--after', '--', 'b.txt']],
  ['a revert', (n: number) => ['revert', String(n)]],
] as const) {
  test(`an operation does not absorb the user's edit: after ${what}, undo N keeps it, undo N --exact still refuses over it`, async () => {
    const { repo, n } = await sessionWithUserEdit();
    try {
      const op = await cli(repo, args(n));
      assert.is(op.code, 0, op.stderr);
      const dry = await cli(repo, ['undo', String(n), '--dry-run', '--json']);
      assert.is(dry.code, 0, dry.stdout + dry.stderr);
      assert.equal(
        (JSON.parse(dry.stdout) as { files: { yours: { path: string; when: string }[] } }).files.yours.map((y) => [y.path, y.when]),
        [['a.txt', 'before operation 1 (' + args(n)[0] + ')']],
      );
      const undo = await cli(repo, ['undo', String(n), '--exact']);
      assert.is(undo.code, 3, `undo ${n} exited ${undo.code} and left a.txt as ${JSON.stringify(text(repo, 'a.txt'))}: ${undo.stderr}`);
      assert.match(undo.stderr, /a\.txt \(before operation 1\b/);
      assert.is(text(repo, 'a.txt'), "the user's own edit\n");
      const forced = await cli(repo, ['undo', String(n), '--exact', '--force']);
      assert.is(forced.code, 0, forced.stderr);
      assert.is(text(repo, 'a.txt'), 'a\n');
    } finally {
      repo.cleanup();
    }
  });
}

test("an operation does not absorb the user's edit: a journal from before op.start.changedBefore (computed from the safety commit) refuses too", async () => {
  const { repo, n } = await sessionWithUserEdit();
  try {
    const op = await cli(repo, ['restore', String(n), '--after', '--', 'b.txt']);
    assert.is(op.code, 0, op.stderr);
    const file = journalOf(repo);
    const lines = fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const start = lines.find((e) => e.type === 'op.start')!;
    assert.ok(Array.isArray(start.changedBefore), 'op.start records what its safety snapshot saw');
    delete start.changedBefore;
    fs.writeFileSync(file, lines.map((e) => `${JSON.stringify(e)}\n`).join(''));
    const undo = await cli(repo, ['undo', String(n), '--exact']);
    assert.is(undo.code, 3, undo.stdout + undo.stderr);
    assert.match(undo.stderr, 'a.txt');
    assert.is(text(repo, 'a.txt'), "the user's own edit\n");
  } finally {
    repo.cleanup();
  }
});

test("an operation does not absorb the user's edit: redo after it refuses over the edit (made after the undo it reverses)", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    await step(repo, () => repo.write('b.txt', 'b by the agent\n'));
    const two = await step(repo, () => repo.write('c.txt', 'c by the agent\n'));
    assert.is((await cli(repo, ['undo', String(two)])).code, 0);
    assert.not.ok(fs.existsSync(path.join(repo.dir, 'c.txt')));
    repo.write('a.txt', "the user's own edit\n");
    const op = await cli(repo, ['restore', '1', '--', 'b.txt']);
    assert.is(op.code, 0, op.stderr);
    const redo = await cli(repo, ['redo', '--exact']);
    assert.is(redo.code, 3, redo.stdout + redo.stderr);
    assert.match(redo.stderr, /a\.txt \(before operation 2\b/);
    assert.is(text(repo, 'a.txt'), "the user's own edit\n");
    const forced = await cli(repo, ['redo', '--exact', '--force']);
    assert.is(forced.code, 0, forced.stderr);
    assert.is(text(repo, 'a.txt'), 'a\n');
    assert.is(text(repo, 'c.txt'), 'c by the agent\n');
  } finally {
    repo.cleanup();
  }
});

test("an operation does not absorb the user's edit: --force covers that operation only, a later one over the user's paths refuses again", async () => {
  const { repo, n } = await sessionWithUserEdit();
  try {
    repo.write('b.txt', "the user's edit of the agent's file\n");
    const r = await cli(repo, ['restore', String(n), '--after', '--exact', '--', 'b.txt']);
    assert.is(r.code, 3, r.stdout + r.stderr);
    const forced = await cli(repo, ['restore', String(n), '--after', '--exact', '--force', '--', 'b.txt']);
    assert.is(forced.code, 0, forced.stderr);
    assert.is(text(repo, 'b.txt'), 'from the agent\n');
    // a.txt was not restored: it still holds the user's edit, which the forced restore's result commit holds too.
    const undo = await cli(repo, ['undo', String(n), '--exact']);
    assert.is(undo.code, 3, undo.stdout + undo.stderr);
    assert.match(undo.stderr, 'a.txt');
    assert.is(text(repo, 'a.txt'), "the user's own edit\n");
    assert.is(text(repo, 'b.txt'), 'from the agent\n');
    // A second forced operation on other paths does not clear it either.
    const again = await cli(repo, ['restore', String(n), '--exact', '--force', '--', 'b.txt']);
    assert.is(again.code, 0, again.stderr);
    const still = await cli(repo, ['restore', String(n), '--exact', '--', 'a.txt']);
    assert.is(still.code, 3, still.stdout + still.stderr);
    assert.is(text(repo, 'a.txt'), "the user's own edit\n");
  } finally {
    repo.cleanup();
  }
});

test("an operation does not absorb the user's edit: the generative test's shrunk case (call, user edit, restore --after of another path, undo)", async () => {
  const ops: Op[] = [
    { t: 'call', tool: 'Bash', edits: [{ k: 'write', p: 1, c: 0 }], during: null, fail: false },
    { t: 'edit', e: { k: 'write', p: 0, c: 1 } },
    { t: 'restore', s: 1, after: true, f: 2, force: false },
    { t: 'undo', s: 1, force: false },
  ];
  await runSequence('off', FAMILIES, ops);
});

test("an operation run from inside a tool call: what that call changed before it is the call's own (undo needs no --force)", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const one = await step(repo, () => repo.write('b.txt', 'b by the agent\n'));
    const pre = await cli(repo, ['snap', '--phase', 'pre', '--tool', 'Bash', '-q']);
    assert.is(pre.code, 0, pre.stderr);
    repo.write('c.txt', 'c by the running call\n');
    // The agent runs agentsnap from its own shell tool.
    const op = await cli(repo, ['restore', String(one), '--', 'b.txt']);
    assert.is(op.code, 0, op.stderr);
    assert.is((await cli(repo, ['snap', '--phase', 'post', '-q'])).code, 0);
    const undo = await cli(repo, ['undo', String(one)]);
    assert.is(undo.code, 0, undo.stdout + undo.stderr);
    assert.not.ok(fs.existsSync(path.join(repo.dir, 'c.txt')));
    assert.is(text(repo, 'a.txt'), 'a\n');
  } finally {
    repo.cleanup();
  }
});

test.run();
