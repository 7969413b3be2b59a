import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { cliProcess, refsUnder, tempRepo, treeFiles, type TempRepo } from '../support/helpers.js';
import { readJournal } from '../../src/session/journal.js';

function sessionFrom(stderr: string): string {
  const m = /started session (\S+)/.exec(stderr);
  if (!m?.[1]) throw new Error(`no session line in: ${stderr}`);
  return m[1];
}

/** A generic scripted agent: records where it runs and its env, then one snap-bracketed edit. */
function agentScript(repo: TempRepo): string {
  const file = path.join(repo.base, 'agent.sh');
  const body = [
    'pwd -P > "$AGENTSNAP_SOURCE_WORKTREE/../cwd.txt"',
    'echo "$AGENTSNAP_SESSION $AGENTSNAP_WORKTREE" > "$AGENTSNAP_SOURCE_WORKTREE/../env.txt"',
    'cd "$AGENTSNAP_WORKTREE"',
    'step=$(node "$AGENTSNAP_BIN" snap --phase pre --tool Edit -q)',
    'echo "by the agent" > a.txt',
    'rm gone.txt',
    'node "$AGENTSNAP_BIN" snap --phase post --step "$step" -q >/dev/null',
    'exit 5',
  ].join('\n');
  fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return file;
}

test('wrap --worktree runs the agent in its own worktree from the current state; the user worktree is untouched; apply brings it back', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n', 'gone.txt': 'bye\n', 'sub/x.txt': 'x\n' } });
  try {
    repo.write('draft.txt', 'uncommitted\n');
    repo.write('a.txt', 'edited by the user\n');
    const before = repo.git(['status', '--porcelain=v1', '-uall']);
    const indexBefore = fs.readFileSync(path.join(repo.dir, '.git', 'index'));
    const res = await cliProcess(repo, ['wrap', '--worktree', '--name', 'try-it', '--', agentScript(repo)], {
      cwd: path.join(repo.dir, 'sub'),
    });
    assert.is(res.code, 5, res.stderr);
    const id = sessionFrom(res.stderr);
    const meta = JSON.parse(fs.readFileSync(path.join(repo.dir, '.git', 'agentsnap', 'sessions', id, 'worktree.json'), 'utf8')) as {
      path: string;
      name: string;
    };
    assert.is(meta.name, 'try-it');
    // The agent ran in the same subdirectory of its own worktree, with the session in its env.
    assert.is(fs.readFileSync(path.join(repo.base, 'cwd.txt'), 'utf8').trim(), fs.realpathSync(path.join(meta.path, 'sub')));
    assert.is(fs.readFileSync(path.join(repo.base, 'env.txt'), 'utf8').trim(), `${id} ${meta.path}`);
    // It started from the user's worktree as it was, uncommitted files included.
    const events = readJournal(path.join(repo.dir, '.git', 'agentsnap', 'sessions', id, 'journal.jsonl')).events as unknown as Record<
      string,
      unknown
    >[];
    assert.equal(
      events.map((e) => e.type),
      ['session.start', 'step.pre', 'step.post', 'session.end'],
    );
    assert.is(events[0]?.worktree, meta.path);
    const baseline = treeFiles(repo, events[0]?.baseline as string);
    assert.is(baseline.get('a.txt')?.content.toString(), 'edited by the user\n');
    assert.is(baseline.get('draft.txt')?.content.toString(), 'uncommitted\n');
    const post = treeFiles(repo, refsUnder(repo, `refs/agent/${id}/`).get(`refs/agent/${id}/1`) as string);
    assert.is(post.get('a.txt')?.content.toString(), 'by the agent\n');
    assert.not.ok(post.has('gone.txt'));
    // The user's files and index are untouched; the exit message says what to do next.
    assert.is(repo.git(['status', '--porcelain=v1', '-uall']), before);
    assert.ok(fs.readFileSync(path.join(repo.dir, '.git', 'index')).equals(indexBefore));
    assert.is(repo.read('a.txt').toString(), 'edited by the user\n');
    // Automatic retention ran at the start (time-gated: the stamp says when it is due next).
    assert.ok(fs.statSync(path.join(repo.dir, '.git', 'agentsnap', 'gc.stamp')).mtimeMs > Date.now());
    // Named as the user named it (--name try-it).
    for (const cmd of ['agentsnap apply try-it', 'agentsnap promote try-it --branch', 'agentsnap discard try-it'])
      assert.match(res.stderr, cmd);

    // A later edit of a.txt by the user conflicts with the agent's: apply refuses and writes nothing.
    repo.write('a.txt', 'edited again\n');
    const refused = await cliProcess(repo, ['apply', id]);
    assert.is(refused.code, 4, refused.stderr);
    assert.is(repo.read('a.txt').toString(), 'edited again\n');
    assert.ok(repo.exists('gone.txt'));
    repo.write('a.txt', 'edited by the user\n');
    const applied = await cliProcess(repo, ['apply', id]);
    assert.is(applied.code, 0, applied.stderr);
    assert.is(repo.read('a.txt').toString(), 'by the agent\n');
    assert.not.ok(repo.exists('gone.txt'));
    assert.is(repo.read('draft.txt').toString(), 'uncommitted\n');
    const discarded = await cliProcess(repo, ['discard', id]);
    assert.is(discarded.code, 0, discarded.stderr);
    assert.not.ok(fs.existsSync(meta.path));
  } finally {
    repo.cleanup();
  }
});

test('wrap --from and --name need --worktree; --worktree --from HEAD starts clean', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n', 'gone.txt': 'bye\n' } });
  try {
    const usage = await cliProcess(repo, ['wrap', '--from', 'HEAD', '--', 'true']);
    assert.is(usage.code, 2, usage.stderr);
    repo.write('a.txt', 'dirty\n');
    const res = await cliProcess(repo, ['wrap', '--worktree', '--from', 'HEAD', '--', agentScript(repo)]);
    assert.is(res.code, 5, res.stderr);
    const id = sessionFrom(res.stderr);
    const events = readJournal(path.join(repo.dir, '.git', 'agentsnap', 'sessions', id, 'journal.jsonl')).events as unknown as Record<
      string,
      unknown
    >[];
    assert.is(
      treeFiles(repo, events[0]?.baseline as string)
        .get('a.txt')
        ?.content.toString(),
      'one\n',
    );
    const bad = await cliProcess(repo, ['wrap', '--worktree', '--from', 'no-such-rev', '--', agentScript(repo)]);
    assert.is(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, 'no-such-rev is not a commit');
    assert.match(bad.stderr, 'The agent was not started');
  } finally {
    repo.cleanup();
  }
});

test("wrap --worktree: the agent's PWD is the directory it runs in (OpenCode takes its project from $PWD, not from its working directory)", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n', 'sub/x.txt': 'x\n' } });
  try {
    const script =
      "require('fs').writeFileSync(process.env.AGENTSNAP_SOURCE_WORKTREE + '/../pwd.txt', process.env.PWD + '\\n' + process.cwd() + '\\n')";
    const res = await cliProcess(repo, ['wrap', '--worktree', '--', process.execPath, '-e', script], {
      cwd: path.join(repo.dir, 'sub'),
      env: { PWD: path.join(repo.dir, 'sub') },
    });
    assert.is(res.code, 0, res.stderr);
    const [pwd, cwd] = fs.readFileSync(path.join(repo.base, 'pwd.txt'), 'utf8').split('\n');
    assert.match(String(cwd), `${path.sep}agentsnap${path.sep}worktrees${path.sep}`, 'the agent runs in its own worktree');
    assert.is(pwd, cwd);
  } finally {
    repo.cleanup();
  }
});

test.run();
