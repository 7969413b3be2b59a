// Concurrency: many hook calls of one session at once, two wrappers in one
// worktree, and the user's own git commands while snapshots run.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { cli, cliProcess, indexBytes, refsUnder, tempRepo, treeFiles, USER_IDENTITY, type TempRepo } from '../support/helpers.js';
import { integrityProblems, gitLockFiles } from '../support/crash-harness.js';
import { loadSession } from '../../src/session/session.js';
import { openRepo } from '../../src/git/repo.js';

function gitAsync(repo: TempRepo, args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    const child = spawn('git', args, { cwd: repo.dir, env: { ...repo.env, ...USER_IDENTITY } });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('close', (code) => resolve({ code: code ?? 128, out }));
  });
}

test('16 hook calls of one session at once: every step recorded, numbers unique, each pre matched with its post', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const started = await cli(repo, ['snap', '--json']);
    const id = (JSON.parse(started.stdout) as { session: string }).session;
    const env = { AGENTSNAP_SESSION: id, AGENTSNAP_WORKTREE: repo.dir };
    const hook = (event: string, payload: Record<string, unknown>) =>
      cliProcess(repo, ['hook', 'claude', event, '--wrapped'], {
        env,
        input: JSON.stringify({ session_id: 'claude-session', transcript_path: '', cwd: repo.dir, hook_event_name: event, ...payload }),
      });
    const calls = Array.from({ length: 16 }, (_, i) => `toolu_${String(i).padStart(2, '0')}`);
    // Each call: its pre, its edit, its post — all 16 at once, so pres and posts of different calls interleave.
    const results = await Promise.all(
      calls.map(async (t) => {
        const pre = await hook('PreToolUse', { tool_name: 'Write', tool_use_id: t, tool_input: { file_path: `${t}.txt` } });
        fs.writeFileSync(path.join(repo.dir, `${t}.txt`), `${t}\n`);
        const post = await hook('PostToolUse', {
          tool_name: 'Write',
          tool_use_id: t,
          tool_input: { file_path: `${t}.txt` },
          tool_response: { ok: t },
        });
        return [pre, post];
      }),
    );
    for (const r of results.flat()) {
      assert.is(r.code, 0);
      assert.is(r.stdout, '');
      assert.is(r.stderr, '', 'no warning: every snapshot was taken');
    }
    const s = loadSession(await openRepo(repo.dir, { env: repo.env }), id);
    const steps = s.steps.filter((st) => st.kind === 'call');
    assert.is(steps.length, 16);
    assert.equal(
      steps.map((st) => st.step).sort((a, b) => a - b),
      Array.from({ length: 16 }, (_, i) => i + 2),
      'unique, contiguous step numbers',
    );
    assert.equal(steps.map((st) => st.toolUseId).sort(), calls);
    for (const st of steps) {
      assert.is(st.status, 'done', `step ${st.step}`);
      assert.equal(st.output, { ok: st.toolUseId }, 'the post of a call closed that call');
      // The call's own file was written before its post: the post snapshot holds it.
      assert.is(treeFiles(repo, st.post!).get(`${st.toolUseId}.txt`)?.content.toString(), `${st.toolUseId}\n`);
      assert.is(refsUnder(repo, `refs/agent/${id}/`).get(`refs/agent/${id}/${st.step}`), st.post!);
    }
    assert.equal(integrityProblems(repo), []);
  } finally {
    repo.cleanup();
  }
});

test('two wrappers in one worktree are serialised, with a warning: no snapshot of either holds a half-restored worktree', async () => {
  const many = Array.from({ length: 60 }, (_, i) => `many/f${i}.txt`);
  const files: Record<string, string> = { 'a.txt': 'a\n' };
  for (const f of many) files[f] = 'old\n';
  const repo = tempRepo({ files });
  try {
    const flag = (name: string) => path.join(repo.base, name);
    // B (first): one tool call rewriting 60 files; once A runs, undoes and redoes it a few times:
    // while A runs, the 60 files change only through agentsnap's restores.
    const agentB = path.join(repo.base, 'agent-b.sh');
    fs.writeFileSync(
      agentB,
      [
        '#!/bin/sh',
        `trap 'touch "${flag('b-done')}"' EXIT`,
        'step=$(node "$AGENTSNAP_BIN" snap --phase pre --tool Bash -q) || exit 10',
        'for f in many/*.txt; do echo new > "$f"; done',
        'node "$AGENTSNAP_BIN" snap --phase post --step "$step" -q >/dev/null || exit 11',
        `touch "${flag('b-ready')}"`,
        `n=0; while [ ! -f "${flag('a-started')}" ] && [ $n -lt 400 ]; do sleep 0.05; n=$((n+1)); done`,
        'for k in 1 2 3; do',
        `  node "$AGENTSNAP_BIN" undo "$step" --force >/dev/null 2>"${flag('b-err')}" || exit 12`,
        `  node "$AGENTSNAP_BIN" redo --force >/dev/null 2>"${flag('b-err')}" || exit 13`,
        'done',
      ].join('\n'),
      { mode: 0o755 },
    );
    // A (second): records one tool call after another on its own files until B is done.
    const agentA = path.join(repo.base, 'agent-a.sh');
    fs.writeFileSync(
      agentA,
      [
        '#!/bin/sh',
        `touch "${flag('a-started')}"`,
        'i=0',
        `while [ ! -f "${flag('b-done')}" ] && [ $i -lt 60 ]; do`,
        '  step=$(node "$AGENTSNAP_BIN" snap --phase pre --tool Edit -q) || exit 10',
        '  echo "$i" > "a-$i.txt"',
        '  node "$AGENTSNAP_BIN" snap --phase post --step "$step" -q >/dev/null || exit 11',
        '  i=$((i+1))',
        'done',
        `echo $i > "${flag('a-count')}"`,
      ].join('\n'),
      { mode: 0o755 },
    );
    const b = cliProcess(repo, ['wrap', '--', agentB]);
    for (let i = 0; i < 800 && !fs.existsSync(flag('b-ready')); i++) await new Promise((r) => setTimeout(r, 25));
    const ra = await cliProcess(repo, ['wrap', '--', agentA]);
    const rb = await b;
    const bErr = fs.existsSync(flag('b-err')) ? fs.readFileSync(flag('b-err'), 'utf8') : '';
    assert.is(rb.code, 0, rb.stderr + bErr);
    assert.is(ra.code, 0, ra.stderr);
    assert.match(ra.stderr, /also runs in this worktree: snapshots and undos of both take turns/);
    const sessions = JSON.parse((await cli(repo, ['sessions', '--json'])).stdout) as { id: string; steps: number }[];
    assert.is(sessions.length, 2);
    // Every snapshot of both sessions sees the 60 files all old or all new, never a mix.
    const commits = repo.git(['rev-list', '--glob=refs/agent', '--glob=refs/agentsnap']).split('\n').filter(Boolean);
    for (const c of commits) {
      const t = treeFiles(repo, c);
      const fresh = many.filter((f) => t.get(f)?.content.toString() === 'new\n').length;
      assert.ok(fresh === 0 || fresh === many.length, `snapshot ${c} holds ${fresh} of ${many.length} rewritten files`);
    }
    const aCount = Number(fs.readFileSync(path.join(repo.base, 'a-count'), 'utf8'));
    const idA = sessions.find((s) => s.steps === aCount)?.id;
    assert.ok(idA, `A recorded all its ${aCount} steps`);
    assert.equal(integrityProblems(repo), []);
  } finally {
    repo.cleanup();
  }
});

test("the user's own git commands while snapshots run: no corruption, no stale index.lock, no lost step", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n', 'b.txt': 'b\n' } });
  try {
    assert.is((await cli(repo, ['snap', '-m', 'start'])).code, 0);
    const rounds = 12;
    const agent = (async () => {
      const out: number[] = [];
      for (let i = 0; i < rounds; i++) {
        const pre = await cliProcess(repo, ['snap', '--phase', 'pre', '--tool', 'Bash', '-q']);
        assert.is(pre.code, 0, `pre ${i}: ${pre.stderr}`);
        fs.writeFileSync(path.join(repo.dir, `agent-${i}.txt`), `${i}\n`);
        const post = await cliProcess(repo, ['snap', '--phase', 'post', '--step', pre.stdout.trim(), '-q']);
        assert.is(post.code, 0, `post ${i}: ${post.stderr}`);
        out.push(Number(pre.stdout.trim()));
      }
      return out;
    })();
    const user = (async () => {
      const cmds: string[][] = [
        ['add', 'a.txt'],
        ['commit', '-q', '-m', 'user commit'],
        ['checkout', '-q', '-B', 'feature'],
        ['checkout', '-q', 'main'],
        ['stash', 'push', '-q', '--', 'b.txt'],
        ['stash', 'pop', '-q'],
        ['pack-refs', '--all'],
        ['gc', '-q'],
        ['worktree', 'add', '-q', '--detach', path.join(repo.base, 'wt2')],
        ['worktree', 'prune'],
        ['pack-refs', '--all', '--prune'],
        ['commit', '-q', '--allow-empty', '-m', 'second'],
      ];
      const log: string[] = [];
      for (let round = 0; round < 2; round++) {
        for (const c of cmds) {
          if (c[0] === 'stash' && c[1] === 'push') fs.writeFileSync(path.join(repo.dir, 'b.txt'), `user ${round}\n`);
          if (c[0] === 'worktree' && c[1] === 'prune') fs.rmSync(path.join(repo.base, 'wt2'), { recursive: true, force: true });
          if (c[0] === 'add') fs.writeFileSync(path.join(repo.dir, 'a.txt'), `user ${round}\n`);
          const r = await gitAsync(repo, c);
          log.push(`${c.join(' ')} -> ${r.code} ${r.out.trim()}`);
          assert.is(r.code, 0, `git ${c.join(' ')}: ${r.out}`);
        }
      }
      return log;
    })();
    const [steps] = await Promise.all([agent, user]);
    assert.equal(
      [...steps].sort((x, y) => x - y),
      Array.from({ length: rounds }, (_, i) => i + 2),
      'every step recorded with its own number',
    );
    const id = [...refsUnder(repo, 'refs/agent/').keys()][0]!.split('/')[2]!;
    for (const n of steps) assert.ok(refsUnder(repo, `refs/agent/${id}/`).has(`refs/agent/${id}/${n}`), `ref of step ${n}`);
    assert.equal(integrityProblems(repo), []);
    assert.equal(gitLockFiles(repo), []);
    // The user's index is the one git left: status works and shows the user's commit state.
    assert.ok(indexBytes(repo));
    assert.is(repo.git(['log', '-1', '--format=%s']).trim(), 'second');
    const log = await cli(repo, ['log', '--json']);
    assert.is(log.code, 0, log.stderr);
    assert.is((JSON.parse(log.stdout) as unknown[]).length, rounds + 1);
  } finally {
    repo.cleanup();
  }
});

test.run();
