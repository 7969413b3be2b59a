// Hostile content: symlinks that lead out of the worktree across several
// snapshots, hook payloads built to hurt, file modes of agentsnap's private
// state, tokens in payloads, and no network use at all.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { BIN, ROOT, cli, cliProcess, refsUnder, tempRepo, treeFiles, type TempRepo, sessionOf, step } from '../support/helpers.js';
import { integrityProblems } from '../support/crash-harness.js';
import { openRepo } from '../../src/git/repo.js';
import { undoOperation } from '../../src/restore/undo.js';

/** Every file below dir with its bytes (to prove nothing outside changed). */
function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const name of fs.readdirSync(path.join(dir, rel))) {
      const r = rel ? `${rel}/${name}` : name;
      const st = fs.lstatSync(path.join(dir, r));
      if (st.isDirectory()) walk(r);
      else out[r] = st.isSymbolicLink() ? `-> ${fs.readlinkSync(path.join(dir, r))}` : fs.readFileSync(path.join(dir, r), 'utf8');
    }
  };
  walk('');
  return out;
}

// Regression (found by adversarial testing, test/restore/undo.attack.test.ts): a parent directory moved
// out of the worktree and replaced by a symlink to it *after* the path was set aside and compared
// (the test seam afterCheck), before the install: the install's link(2) resolved the parents again
// and wrote the restored file outside. Node has no openat(2), so the parents are checked once more
// after the install, and what went through the symlink is taken back: agentsnap's new entry
// (unlinked by its inode) and the set-aside version back under its own name in its own directory,
// so the directory that left the worktree holds what it held before the restore touched it.
async function swappedUndo(repo: TempRepo, when: 'afterCheck' | 'beforeReplace', at: string) {
  const outside = path.join(repo.base, 'outside');
  const r = await openRepo(repo.dir, { env: repo.env });
  let swapped = false;
  const res = await undoOperation(r, sessionOf(repo), 1, {
    restoreHooks: {
      [when]: (rel: string) => {
        if (rel !== at || swapped) return;
        swapped = true;
        fs.renameSync(path.join(repo.dir, 'd'), outside);
        fs.symlinkSync(outside, path.join(repo.dir, 'd'));
      },
    },
  });
  assert.ok(swapped);
  return { outside, res };
}

const takenBack = /^d became a symlink during the restore; it was not followed: the restored version was taken back/;

test('undo never writes outside the worktree when the parent becomes a symlink between the check and the install', async () => {
  const repo = tempRepo({ files: { 'd/f': 'user f\n', 'a.txt': 'a\n' } });
  try {
    await step(repo, () => {
      repo.write('d/f', 'agent f\n');
      repo.write('a.txt', 'agent a\n');
    });
    const { outside, res } = await swappedUndo(repo, 'afterCheck', 'd/f');
    // What the directory held when it was moved out: its f as before the restore, nothing of agentsnap.
    assert.equal(tree(outside), { f: 'agent f\n' }, 'the restored file was installed outside the worktree');
    const l = res.left.find((x) => x.path === 'd/f');
    assert.match(l?.reason ?? '', takenBack, JSON.stringify(res.left));
    assert.match(l?.reason ?? '', /what was there is back under its name/);
    assert.is(repo.read('a.txt').toString(), 'a\n', 'the rest of the undo completes');
  } finally {
    repo.cleanup();
  }
});

test('undo never writes outside the worktree when the parent becomes a symlink before a file the step deleted is created again', async () => {
  const repo = tempRepo({ files: { 'd/f': 'user f\n', 'd/g': 'user g\n' } });
  try {
    await step(repo, () => repo.rm('d/g'));
    const { outside, res } = await swappedUndo(repo, 'afterCheck', 'd/g');
    assert.equal(tree(outside), { f: 'user f\n' });
    assert.match(res.left.find((x) => x.path === 'd/g')?.reason ?? '', takenBack, JSON.stringify(res.left));
  } finally {
    repo.cleanup();
  }
});

test('undo never deletes outside the worktree when the parent becomes a symlink after the file to delete was set aside', async () => {
  const repo = tempRepo({ files: { 'd/f': 'user f\n' } });
  try {
    await step(repo, () => repo.write('d/new', 'agent new\n'));
    const { outside, res } = await swappedUndo(repo, 'afterCheck', 'd/new');
    assert.equal(tree(outside), { f: 'user f\n', new: 'agent new\n' });
    assert.match(
      res.left.find((x) => x.path === 'd/new')?.reason ?? '',
      /^d became a symlink during the restore; it was not followed: what was there is back under its name/,
      JSON.stringify(res.left),
    );
  } finally {
    repo.cleanup();
  }
});

test('a path that is a symlink out of the worktree in one snapshot and a directory with files in the next: undo, redo and restore never write outside', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const outside = path.join(repo.base, 'outside');
    fs.mkdirSync(outside);
    fs.writeFileSync(path.join(outside, 'secret.txt'), 'outside\n');
    const outsideBefore = tree(outside);
    // Step 1: the agent makes `data` a symlink to the outside directory.
    const s1 = await step(repo, () => fs.symlinkSync(outside, path.join(repo.dir, 'data')));
    // Step 2: replaces it by a real directory holding files of the same names.
    const s2 = await step(repo, () => {
      fs.rmSync(path.join(repo.dir, 'data'));
      repo.write('data/secret.txt', 'inside\n');
      repo.write('data/new.txt', 'new\n');
    });
    // Step 3: back to the symlink.
    const s3 = await step(repo, () => {
      fs.rmSync(path.join(repo.dir, 'data'), { recursive: true });
      fs.symlinkSync(outside, path.join(repo.dir, 'data'));
    });
    // Undo 3 needs files under data/ while data is a symlink out: it must replace the link, never follow it.
    for (const args of [
      ['undo', String(s3)],
      ['undo', String(s2)],
      ['redo'],
      ['redo'],
      ['restore', String(s3), '--', 'data/secret.txt'],
      ['undo', String(s1)],
    ]) {
      const r = await cli(repo, [...args, '--force']);
      assert.ok(r.code === 0 || r.code === 1, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(tree(outside), outsideBefore, `${args.join(' ')} wrote outside the worktree`);
    }
    assert.equal(integrityProblems(repo), []);
  } finally {
    repo.cleanup();
  }
});

test('hook payloads that are not JSON, huge, or name paths outside the repository: exit 0, nothing on stdout, only the session worktree snapshotted', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const started = await cli(repo, ['snap', '--json']);
    const id = (JSON.parse(started.stdout) as { session: string }).session;
    const env = { AGENTSNAP_SESSION: id, AGENTSNAP_WORKTREE: repo.dir };
    const outside = path.join(repo.base, 'outside');
    fs.mkdirSync(outside);
    fs.writeFileSync(path.join(outside, 'o.txt'), 'o\n');
    const hook = (event: string, input: string) => cliProcess(repo, ['hook', 'claude', event, '--wrapped'], { env, input });
    const payloads: string[] = [
      'not json at all',
      '{"tool_name": "Bash", "tool_use_id": ',
      '\u0000\u0001\u0002binary',
      '[]',
      'null',
      JSON.stringify({ tool_name: 'Write', tool_use_id: 'dots', cwd: '../../..', tool_input: { file_path: '../../../etc/passwd' } }),
      JSON.stringify({
        tool_name: 'Write',
        tool_use_id: 'abs',
        cwd: outside,
        transcript_path: '/etc/shadow',
        tool_input: { file_path: path.join(outside, 'o.txt') },
      }),
      JSON.stringify({
        tool_name: 'Bash\u001b[31m\r\nred',
        tool_use_id: 'ctl\u0000\u0007',
        cwd: `${repo.dir}/\u0000x`,
        tool_input: { command: 'echo \u001b]0;title\u0007' },
      }),
      // 50 MB: a tool output an agent might send.
      JSON.stringify({
        tool_name: 'Bash',
        tool_use_id: 'huge',
        tool_input: { command: 'cat big' },
        tool_response: { stdout: 'x'.repeat(50 * 1024 * 1024) },
      }),
    ];
    for (const p of payloads) {
      for (const event of ['PreToolUse', 'PostToolUse']) {
        const r = await hook(event, p);
        assert.is(r.code, 0, `${event} ${p.slice(0, 60)}: ${r.stderr}`);
        assert.is(r.stdout, '', `${event} ${p.slice(0, 60)} printed on stdout`);
        assert.ok(r.stderr.trim().split('\n').filter(Boolean).length <= 1, `more than one warning line: ${r.stderr.slice(0, 300)}`);
      }
    }
    // Every snapshot holds the session's worktree and nothing else.
    for (const [, commit] of refsUnder(repo, `refs/agent/${id}/`)) {
      assert.equal([...treeFiles(repo, commit).keys()], ['a.txt']);
    }
    // The journal kept the huge output cut to the output limit, and stays small.
    const journal = path.join(repo.dir, '.git', 'agentsnap', 'sessions', id, 'journal.jsonl');
    assert.ok(fs.statSync(journal).size < 1024 * 1024, `journal is ${fs.statSync(journal).size} bytes`);
    assert.equal(integrityProblems(repo), []);
  } finally {
    repo.cleanup();
  }
});

test('journals, private indexes and state are readable only by their owner (0600 files, 0700 directories)', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    await step(repo, () => repo.write('a.txt', 'b\n'));
    assert.is((await cli(repo, ['undo'])).code, 0);
    const state = path.join(repo.dir, '.git', 'agentsnap');
    const bad: string[] = [];
    const walk = (dir: string) => {
      for (const name of fs.readdirSync(dir)) {
        const abs = path.join(dir, name);
        const st = fs.lstatSync(abs);
        const mode = st.mode & 0o777;
        if (st.isDirectory()) {
          if (mode & 0o077) bad.push(`${path.relative(state, abs)}/ ${mode.toString(8)}`);
          walk(abs);
        } else if (mode & 0o077 && name !== 'gc.stamp') bad.push(`${path.relative(state, abs)} ${mode.toString(8)}`);
      }
    };
    if ((fs.statSync(state).mode & 0o077) !== 0) bad.push(`agentsnap/ ${(fs.statSync(state).mode & 0o777).toString(8)}`);
    walk(state);
    assert.equal(bad, []);
  } finally {
    repo.cleanup();
  }
});

test('tokens of several providers in a tool call never reach the journal', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const started = await cli(repo, ['snap', '--json']);
    const id = (JSON.parse(started.stdout) as { session: string }).session;
    const env = { AGENTSNAP_SESSION: id, AGENTSNAP_WORKTREE: repo.dir };
    const tokens = [
      'sk-ant-api03-Xy7_pQ2-mN8vL3kJ6hG9fD1sA4zX7cV0bN3mQ6wE9rT2yU5iO8pA1sD4fG7hJ0kL3zX6cV9bN2mQ5wE8r-T1yU4iAA',
      'sk-proj-Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7Qr9St1Uv3Wx5Yz7Ab9Cd1Ef3Gh5Ij7Kl9Mn1Op3Qr5St7Uv9Wx1Yz3T3BlbkFJ',
      'ghp_16C7e42F292c6912E7710c838347Ae178B4a',
      'glpat-xY7zK2mN9pQ4rS6tV8wB',
      'sk_live_51HvXkZLmN0pQrStUvWxYz0123456789abcdef',
      'AKIAIOSFODNN7EXAMPLE',
      'xoxb-2048-1024-8Yc3vHq9zJmP4kLr2NwT',
      'AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY',
      'npm_abcdefghijklmnopqrstuvwxyz0123456789',
      'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
    ];
    const command = tokens.map((t, i) => `export K${i}=${t}`).join('; ') + '; curl https://user:hunter2pass@example.com';
    for (const event of ['PreToolUse', 'PostToolUse']) {
      const r = await cliProcess(repo, ['hook', 'claude', event, '--wrapped'], {
        env,
        input: JSON.stringify({
          tool_name: 'Bash',
          tool_use_id: 'tok',
          tool_input: { command },
          tool_response: { stdout: `Authorization: Bearer ${tokens[0]}\n${tokens.join('\n')}` },
        }),
      });
      assert.is(r.code, 0, r.stderr);
    }
    const journal = fs.readFileSync(path.join(repo.dir, '.git', 'agentsnap', 'sessions', id, 'journal.jsonl'), 'utf8');
    assert.match(journal, 'REDACTED');
    for (const t of [...tokens, 'hunter2pass']) assert.not.ok(journal.includes(t), `leaked: ${t}`);
  } finally {
    repo.cleanup();
  }
});

test('agentsnap never opens a network connection: no network module in dist/, and a full cycle works with no network', async () => {
  // 1. The code: no module that can open a connection.
  const offenders: string[] = [];
  const walk = (dir: string) => {
    for (const name of fs.readdirSync(dir)) {
      const abs = path.join(dir, name);
      if (fs.statSync(abs).isDirectory()) walk(abs);
      else if (name.endsWith('.js')) {
        const text = fs.readFileSync(abs, 'utf8');
        // agentsnap's own `fetch` (git fetch from a backup remote, only when the user runs it) is not the global one.
        const ownFetch = /function fetch\(|import \{[^}]*\bfetch\b[^}]*\} from '\./.test(text);
        if (
          /from\s*['"](node:)?(net|http|https|http2|dns|dgram|tls)['"]|WebSocket|import\(['"](node:)?(net|http|https|dns)/.test(text) ||
          (!ownFetch && /\bfetch\(/.test(text))
        ) {
          offenders.push(path.relative(ROOT, abs));
        }
      }
    }
  };
  walk(path.join(ROOT, 'dist'));
  // `agentsnap ui`, when the user runs it, listens on 127.0.0.1 (its server) and its page fetches from that server
  // only (CSP default-src 'self'): test/ui/ui.test.ts and test/ui/ui-browser.test.ts hold them to that. Nothing else may.
  const UI = ['dist/ui/server.js', 'dist/ui.bundle.js', 'dist/ui-page/app.js'];
  assert.equal(
    offenders.filter((f) => !UI.includes(f)),
    [],
  );
  // 2. At run time: wrap + undo in a network namespace with no interfaces (root), else skip that half.
  if (process.getuid?.() !== 0 || spawnSync('unshare', ['-n', 'true']).status !== 0) {
    console.log('  (run-time half skipped: unshare -n needs root)');
    return;
  }
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const agent = path.join(repo.base, 'agent.sh');
    fs.writeFileSync(
      agent,
      '#!/bin/sh\nstep=$(node "$AGENTSNAP_BIN" snap --phase pre -q)\necho changed > a.txt\nnode "$AGENTSNAP_BIN" snap --phase post --step "$step" -q >/dev/null\n',
      { mode: 0o755 },
    );
    const run = (args: string[]) =>
      spawnSync('unshare', ['-n', process.execPath, BIN, ...args], { cwd: repo.dir, env: repo.env, encoding: 'utf8' });
    const wrap = run(['wrap', '--', agent]);
    assert.is(wrap.status, 0, wrap.stderr);
    const undo = run(['undo', '1']);
    assert.is(undo.status, 0, undo.stderr);
    assert.is(repo.read('a.txt').toString(), 'a\n');
    assert.ok(sessionOf(repo));
  } finally {
    repo.cleanup();
  }
});

test.run();
