// Done-when of the parallel-agents issue: four sessions in four worktrees plus
// one in the main worktree snapshot at the same time (separate processes);
// then one is applied, one promoted, the rest discarded, and gc leaves nothing
// of the discarded ones.
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cli, cliProcess, indexBytes, refsUnder, tempRepo, treeFiles, worktreeFiles } from '../support/helpers.js';
import { openRepo } from '../../src/git/repo.js';
import { startWorktreeSession } from '../../src/worktrees/worktree.js';

const ROUNDS = 3;

test('four worktree sessions and one main-worktree session snapshot concurrently without cross-talk; apply, promote, discard, gc', async () => {
  const r = tempRepo({ files: { 'shared.txt': 'base\n', 'src/app.js': 'console.log(1);\n' } });
  try {
    r.git(['config', 'user.name', 'Jane Dev']);
    r.git(['config', 'user.email', 'jane@example.com']);
    const repo = await openRepo(r.dir, { env: r.env });
    const ids = ['w1', 'w2', 'w3', 'w4'];
    const dirs = new Map<string, string>();
    for (const id of ids) dirs.set(id, (await startWorktreeSession(repo, { session: id })).meta.path);
    const first = await cliProcess(r, ['snap', '--json']);
    assert.is(first.code, 0, first.stderr);
    const mainId = (JSON.parse(first.stdout) as { session: string }).session;
    dirs.set(mainId, r.dir);
    const mainIndex = indexBytes(r);

    const all = [...ids, mainId];
    const results = await Promise.all(
      all.map(async (id) => {
        const dir = dirs.get(id) ?? '';
        const errs: string[] = [];
        for (let i = 1; i <= ROUNDS; i++) {
          const pre = await cliProcess(r, ['snap', '--session', id, '--phase', 'pre', '--tool', 'Edit'], { cwd: dir });
          if (pre.code !== 0) errs.push(pre.stderr);
          fs.mkdirSync(path.join(dir, 'out'), { recursive: true });
          fs.writeFileSync(path.join(dir, 'out', `${id === mainId ? 'main' : id}-${i}.txt`), `${id} round ${i}\n`);
          const post = await cliProcess(r, ['snap', '--session', id, '--phase', 'post'], { cwd: dir });
          if (post.code !== 0) errs.push(post.stderr);
        }
        return errs;
      }),
    );
    assert.equal(results.flat(), [], 'no lock errors or failures');

    // The main worktree holds only what its own session wrote; its index is untouched.
    const mainFiles = [...worktreeFiles(r).keys()].sort();
    assert.equal(mainFiles, ['out/main-1.txt', 'out/main-2.txt', 'out/main-3.txt', 'shared.txt', 'src/app.js']);
    assert.equal(indexBytes(r), mainIndex);

    // Each session's log is complete, and each snapshot holds only its own session's files.
    for (const id of all) {
      const log = await cli(r, ['log', '--session', id, '--json']);
      assert.is(log.code, 0, log.stderr);
      // (the main session's first step is the checkpoint that started it)
      const steps = (JSON.parse(log.stdout) as { kind: string; status: string; changed: { path: string }[] }[]).filter(
        (s) => s.kind === 'call',
      );
      assert.equal(
        steps.map((s) => s.status),
        ['done', 'done', 'done'],
        `${id}: ${log.stdout}`,
      );
      const tag = id === mainId ? 'main' : id;
      steps.forEach((s, i) =>
        assert.equal(
          s.changed.map((c) => c.path),
          [`out/${tag}-${i + 1}.txt`],
          id,
        ),
      );
      const head = refsUnder(r, `refs/agentsnap/sessions/${id}/`).get(`refs/agentsnap/sessions/${id}/head`) ?? '';
      const files = [...treeFiles(r, head).keys()].filter((p) => p.startsWith('out/')).sort();
      assert.equal(
        files,
        [1, 2, 3].map((n) => `out/${tag}-${n}.txt`),
      );
    }

    // Bring one back, promote one, discard the rest.
    const applied = await cli(r, ['apply', 'w1']);
    assert.is(applied.code, 0, applied.stderr);
    assert.is(r.read('out/w1-2.txt').toString(), 'w1 round 2\n');
    assert.equal(indexBytes(r), mainIndex);
    const promoted = await cli(r, ['promote', 'w2', '--branch', 'agent/w2']);
    assert.is(promoted.code, 0, promoted.stderr);
    assert.is(r.git(['show', 'agent/w2:out/w2-3.txt']), 'w2 round 3\n');
    for (const id of ['w3', 'w4', mainId]) {
      const d = await cli(r, ['discard', id]);
      assert.is(d.code, 0, d.stderr);
    }
    assert.ok(fs.existsSync(r.dir), 'the main worktree is never removed');

    const gc = await cli(r, ['gc', '--json']);
    assert.is(gc.code, 0, gc.stderr);
    const wtList = r.git(['worktree', 'list', '--porcelain']);
    const state = path.join(r.dir, '.git', 'agentsnap');
    for (const id of ['w3', 'w4', mainId]) {
      assert.is(refsUnder(r, `refs/agent/${id}/`).size, 0, id);
      assert.is(refsUnder(r, `refs/agentsnap/sessions/${id}/`).size, 0, id);
      assert.not.ok(fs.existsSync(path.join(state, 'sessions', id)), id);
      assert.not.ok(fs.existsSync(path.join(state, 'worktrees', id)), id);
      assert.not.ok(fs.existsSync(path.join(r.dir, '.git', 'worktrees', id)), id);
      assert.not.match(wtList, `/worktrees/${id}\n`);
    }
    // The applied and promoted sessions are still there.
    assert.ok(refsUnder(r, 'refs/agent/w1/').size > 0);
    assert.ok(refsUnder(r, 'refs/agent/w2/').size > 0);
  } finally {
    r.cleanup();
  }
});

test.run();
