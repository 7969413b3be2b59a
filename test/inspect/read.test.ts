// The read-only commands: sessions, log, show, diff, and their --json shapes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cli, tempRepo, type TempRepo } from '../support/helpers.js';
import { snapJson, startNamedSession } from '../support/snap-helpers.js';

/** A session with: 1 checkpoint, 2 Edit (a.txt), 3 Bash (b.txt + new dir/c.txt), 4 Edit (b.txt). */
async function history(repo: TempRepo): Promise<string> {
  const s = await snapJson(repo, ['-m', 'start']);
  await snapJson(repo, ['--phase', 'pre', '--tool', 'Edit']);
  repo.write('a.txt', 'a\nmore\n');
  await snapJson(repo, ['--phase', 'post']);
  await snapJson(repo, ['--phase', 'pre', '--tool', 'Bash']);
  repo.write('b.txt', 'b2\n');
  repo.write('dir/c.txt', 'c\n');
  await snapJson(repo, ['--phase', 'post']);
  await snapJson(repo, ['--phase', 'pre', '--tool', 'Edit']);
  repo.write('b.txt', 'b3\n');
  await snapJson(repo, ['--phase', 'post']);
  return s.session;
}

interface LogStep {
  step: number;
  tool: string | null;
  status: string;
  pre: string;
  post: string;
  changed: { path: string; change: string; added: number | null; deleted: number | null }[];
}

async function logJson(repo: TempRepo, args: string[] = []): Promise<LogStep[]> {
  const r = await cli(repo, ['log', '--json', ...args]);
  assert.is(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as LogStep[];
}

test('log: steps with tool, status, files and +/- counts; --tool, --last, -- <path>', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n', 'b.txt': 'b\n' } });
  try {
    const session = await history(repo);
    const all = await logJson(repo);
    assert.equal(
      all.map((s) => [s.step, s.tool, s.status]),
      [
        [1, null, 'done'],
        [2, 'Edit', 'done'],
        [3, 'Bash', 'done'],
        [4, 'Edit', 'done'],
      ],
    );
    for (const key of ['step', 'tool', 'status', 'pre', 'post', 'changed']) assert.ok(key in (all[0] ?? {}), `log --json has ${key}`);
    assert.equal(all[1]?.changed, [{ path: 'a.txt', change: 'M', added: 1, deleted: 0 }]);
    assert.equal(
      all[2]?.changed.map((c) => `${c.change} ${c.path}`),
      ['M b.txt', 'A dir/c.txt'],
    );
    assert.equal(
      (await logJson(repo, ['--tool', 'edit'])).map((s) => s.step),
      [2, 4],
    );
    assert.equal(
      (await logJson(repo, ['--last', '2'])).map((s) => s.step),
      [3, 4],
    );
    assert.equal(
      (await logJson(repo, ['--', 'b.txt'])).map((s) => s.step),
      [3, 4],
    );
    assert.equal(
      (await logJson(repo, ['--', 'dir'])).map((s) => s.step),
      [3],
    );
    assert.equal(
      (await logJson(repo, ['--', 'nothing.txt'])).map((s) => s.step),
      [],
    );
    assert.equal(
      (await logJson(repo, ['--tool', 'Edit', '--last', '1', '--', 'b.txt'])).map((s) => s.step),
      [4],
    );

    const text = await cli(repo, ['log']);
    assert.is(text.code, 0);
    assert.match(text.stderr, new RegExp(`session ${session} \\(most recent in this worktree\\)`));
    assert.match(text.stdout, /^\s+2\s+Edit\s+done\s+\S+\s+1 file \+1 -0$/m);
    assert.match(text.stdout, /^\s+M a\.txt\s+\+1 -0$/m);
    assert.match(text.stdout, /^\s+3\s+Bash\s+done\s+\S+\s+2 files \+2 -1$/m);
    assert.match(text.stdout, /\sstart$/m, "a checkpoint's message is its description");
    assert.not.match(text.stdout, /\x1b\[/, 'no colour when piped');
    const viaEnv = await cli(repo, ['log'], { env: { AGENTSNAP_SESSION: session } });
    assert.match(viaEnv.stderr, /\(from AGENTSNAP_SESSION\)/);
  } finally {
    repo.cleanup();
  }
});

test('show N: the diff of that step; --stat; --json', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n', 'b.txt': 'b\n' } });
  try {
    await history(repo);
    const r = await cli(repo, ['show', '3']);
    assert.is(r.code, 0, r.stderr);
    assert.match(r.stdout, /^step 3\s+Bash\s+done/m);
    assert.match(r.stdout, /^diff --git a\/b\.txt b\/b\.txt$/m);
    assert.match(r.stdout, /^-b$/m);
    assert.match(r.stdout, /^\+b2$/m);
    assert.match(r.stdout, /^\+\+\+ b\/dir\/c\.txt$/m);
    assert.not.match(r.stdout, /a\.txt/);
    const stat = await cli(repo, ['show', '2', '--stat']);
    assert.match(stat.stdout, /a\.txt \| 1 \+/);
    const j = JSON.parse((await cli(repo, ['show', '4', '--json'])).stdout) as {
      step: number;
      diff: string;
      session: string;
      tool: string;
    };
    assert.is(j.step, 4);
    assert.is(j.tool, 'Edit');
    assert.match(j.diff, /\+b3/);
    // A checkpoint shows what changed since the snapshot before it.
    repo.write('a.txt', 'checkpointed\n');
    const cp = await snapJson(repo);
    const cpShow = await cli(repo, ['show', String(cp.step)]);
    assert.match(cpShow.stdout, /^\+checkpointed$/m);
    // Step 0 is the baseline: not a step number (refused as undo 0 is, see step-number.test.ts).
    assert.is((await cli(repo, ['show', '0'])).code, 2);
  } finally {
    repo.cleanup();
  }
});

test('diff A B between states, N:pre, and diff A against the worktree including untracked files', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n', 'b.txt': 'b\n' } });
  try {
    await history(repo);
    const d = await cli(repo, ['diff', '1', '3']);
    assert.is(d.code, 0, d.stderr);
    assert.match(d.stdout, /^diff --git a\/a\.txt b\/a\.txt$/m);
    assert.match(d.stdout, /^\+\+\+ b\/dir\/c\.txt$/m);
    assert.not.match(d.stdout, /b3/);
    const pre = await cli(repo, ['diff', '4:pre', '4']);
    assert.match(pre.stdout, /^-b2$/m);
    assert.match(pre.stdout, /^\+b3$/m);
    const none = await cli(repo, ['diff', '3', '4:pre']);
    assert.is(none.stdout, '');
    assert.match(none.stderr, /no differences/);

    repo.write('untracked-now.txt', 'fresh\n');
    repo.rm('a.txt');
    repo.write('.env', 'SECRET=1\n');
    const wt = await cli(repo, ['diff', '4']);
    assert.is(wt.code, 0, wt.stderr);
    assert.match(wt.stdout, /^\+\+\+ b\/untracked-now\.txt$/m);
    assert.match(wt.stdout, /^--- a\/a\.txt$/m);
    assert.not.match(wt.stdout, /SECRET/, 'secrets stay out of diffs against the worktree too');
    const base = await cli(repo, ['diff', '0', '--stat']);
    assert.match(base.stdout, /untracked-now\.txt/);
    assert.match(base.stdout, /dir\/c\.txt/);
    const paths = await cli(repo, ['diff', '0', '--', 'b.txt']);
    assert.match(paths.stdout, /b\.txt/);
    assert.not.match(paths.stdout, /untracked-now/);
    const j = JSON.parse((await cli(repo, ['diff', '2', '3', '--json'])).stdout) as { from: unknown; to: unknown; diff: string };
    assert.equal(j.from, { step: 2, when: 'after' });
    assert.equal(j.to, { step: 3, when: 'after' });
    assert.match(j.diff, /b2/);
    // The diff against the worktree leaves no objects referenced and no new step.
    assert.is((await logJson(repo)).length, 4);
  } finally {
    repo.cleanup();
  }
});

test('sessions: text and --json fields', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const empty = await cli(repo, ['sessions', '--json']);
    assert.equal(JSON.parse(empty.stdout), []);
    const none = await cli(repo, ['sessions']);
    assert.is(none.code, 0);
    assert.match(none.stderr, /no sessions yet/);
    await startNamedSession(repo, 'first');
    const a = await snapJson(repo, ['--session', 'first']);
    await snapJson(repo, ['--session', 'first']);
    await startNamedSession(repo, 'second');
    await snapJson(repo, ['--phase', 'pre', '--session', 'second']);
    const list = JSON.parse((await cli(repo, ['sessions', '--json'])).stdout) as Record<string, unknown>[];
    assert.is(list.length, 2);
    for (const s of list)
      for (const key of ['id', 'worktree', 'status', 'steps', 'createdAt']) assert.ok(key in s, `sessions --json has ${key}`);
    const byId = new Map(list.map((s) => [s.id, s]));
    assert.is(byId.get('first')?.steps, 2);
    assert.is(byId.get('first')?.status, 'running');
    assert.is(byId.get('first')?.worktree, repo.dir);
    assert.ok(!Number.isNaN(Date.parse(String(byId.get('first')?.createdAt))));
    assert.is(byId.get('second')?.steps, 1);
    assert.is(list[0]?.id, 'second', 'most recently active first');
    assert.is(a.session, 'first');
    const text = await cli(repo, ['sessions']);
    assert.match(text.stdout, /^SESSION\s+NAME\s+STATUS\s+STEPS\s/);
    assert.match(text.stdout, /^first\s+-\s+running\s+2\s/m);
    assert.match(text.stdout, /^second\s+-\s+running\s+1\s/m);
  } finally {
    repo.cleanup();
  }
});

test.run();
