// apply and promote as a user meets them (issue 14): the files they bring as a
// diffstat, the user's own changes from before the session named (promote
// leaves them out unless asked), sessions named by their --name, and
// `apply --undo`. Through the built bundle (cliProcess).
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cliProcess, tempRepo, USER_IDENTITY, type TempRepo } from '../support/helpers.js';
import { openRepo } from '../../src/git/repo.js';
import { startWorktreeSession } from '../../src/worktrees/worktree.js';

async function worktreeSession(r: TempRepo, id: string, name?: string): Promise<string> {
  const repo = await openRepo(r.dir, { env: r.env });
  const res = await startWorktreeSession(repo, { session: id, ...(name ? { name } : {}) });
  return res.meta.path;
}

function writeIn(dir: string, rel: string, content: string): void {
  fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
  fs.writeFileSync(path.join(dir, rel), content);
}

async function snapIn(r: TempRepo, id: string, wt: string): Promise<void> {
  const res = await cliProcess(r, ['snap', '--session', id, '-m', 'work'], { cwd: wt });
  assert.is(res.code, 0, res.stderr);
}

test('apply prints a diffstat of the files it brings and a summary line', async () => {
  const r = tempRepo({ files: { 'a.txt': 'l1\nl2\nl3\n', 'del.txt': 'd1\nd2\n' } });
  try {
    const wt = await worktreeSession(r, 's1');
    writeIn(wt, 'a.txt', 'l1\nagent\nl3\nmore\n');
    writeIn(wt, 'new/agent.txt', 'from agent\n');
    fs.rmSync(path.join(wt, 'del.txt'));
    await snapIn(r, 's1', wt);
    const res = await cliProcess(r, ['apply', 's1']);
    assert.is(res.code, 0, res.stderr);
    assert.match(res.stdout, /^ a\.txt +\| \+2 -1$/m);
    assert.match(res.stdout, /^ new\/agent\.txt +\| \+1 -0$/m);
    assert.match(res.stdout, /^ del\.txt +\| \+0 -2$/m);
    assert.match(res.stdout, /^ 3 files changed, 3 insertions\(\+\), 3 deletions\(-\)$/m);
    assert.match(res.stderr, 'agentsnap apply --undo', 'it says how to take it back');
  } finally {
    r.cleanup();
  }
});

test('promote of a main-worktree session leaves out what was uncommitted before the session, naming it; --include-uncommitted takes it', async () => {
  const r = tempRepo({ files: { 'a.txt': 'a1\na2\na3\n', 'b.txt': 'b\n' } });
  try {
    const base = r.git(['rev-parse', 'HEAD']).trim();
    // The user's own work, there before the session started.
    r.write('a.txt', 'mine\na2\na3\n');
    r.write('notes.txt', 'my secret notes\n');
    const pre = await cliProcess(r, ['snap', '--phase', 'pre', '--tool', 'Edit', '-q']);
    assert.is(pre.code, 0, pre.stderr);
    r.write('b.txt', 'agent\n');
    r.write('a.txt', 'mine\na2\nagent\n');
    const post = await cliProcess(r, ['snap', '--phase', 'post', '-q']);
    assert.is(post.code, 0, post.stderr);
    const id = r.git(['for-each-ref', '--format=%(refname)', 'refs/agent/']).split('\n')[0]!.split('/')[2]!;
    const res = await cliProcess(r, ['promote', id, '--branch', 'agent/x'], { env: USER_IDENTITY });
    assert.is(res.code, 0, res.stderr);
    assert.match(res.stderr, /uncommitted.*before the session/);
    assert.match(res.stderr, 'notes.txt');
    assert.match(res.stderr, 'a.txt');
    assert.is(r.git(['rev-parse', 'agent/x^']).trim(), base);
    assert.is(r.git(['show', 'agent/x:b.txt']), 'agent\n');
    assert.is(r.git(['show', 'agent/x:a.txt']), 'a1\na2\nagent\n', "only the agent's edit of a.txt");
    assert.is(r.gitRaw(['cat-file', '-e', 'agent/x:notes.txt']).status, 128, "the user's untracked file is not committed");
    assert.match(res.stdout, /^ a\.txt +\| \+1 -1$/m);
    assert.match(res.stdout, /^ 2 files changed/m);

    const all = await cliProcess(r, ['promote', id, '--branch', 'agent/y', '--include-uncommitted'], { env: USER_IDENTITY });
    assert.is(all.code, 0, all.stderr);
    assert.match(all.stderr, /includes .*uncommitted/);
    assert.is(r.git(['show', 'agent/y:notes.txt']), 'my secret notes\n');
    assert.is(r.git(['show', 'agent/y:a.txt']), 'mine\na2\nagent\n');
  } finally {
    r.cleanup();
  }
});

test("promote refuses (exit 4) when the agent changed a file in a way that cannot be told apart from the user's uncommitted edit of it", async () => {
  const r = tempRepo({ files: { 'a.txt': 'a1\n' } });
  try {
    r.write('a.txt', 'mine\n');
    await cliProcess(r, ['snap', '--phase', 'pre', '--tool', 'Edit', '-q']);
    r.write('a.txt', 'mine and agent\n');
    await cliProcess(r, ['snap', '--phase', 'post', '-q']);
    const id = r.git(['for-each-ref', '--format=%(refname)', 'refs/agent/']).split('\n')[0]!.split('/')[2]!;
    const res = await cliProcess(r, ['promote', id, '--branch', 'agent/x'], { env: USER_IDENTITY });
    assert.is(res.code, 4, res.stderr);
    assert.match(res.stderr, 'a.txt');
    assert.match(res.stderr, '--include-uncommitted');
    assert.is(r.gitRaw(['rev-parse', '-q', '--verify', 'refs/heads/agent/x']).status, 1, 'no branch');
  } finally {
    r.cleanup();
  }
});

test('a session is named by its --name wherever an id is accepted; unknown and ambiguous names are clear errors', async () => {
  const r = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const wt = await worktreeSession(r, 'n1', 'login');
    writeIn(wt, 'a.txt', 'agent\n');
    await snapIn(r, 'n1', wt);
    const log = await cliProcess(r, ['log', '--session', 'login']);
    assert.is(log.code, 0, log.stderr);
    const applied = await cliProcess(r, ['apply', 'login']);
    assert.is(applied.code, 0, applied.stderr);
    assert.is(r.read('a.txt').toString(), 'agent\n');
    const unknown = await cliProcess(r, ['apply', 'no such name']);
    assert.is(unknown.code, 1, unknown.stderr);
    assert.match(unknown.stderr, /invalid session id "no such name": .*no session has that name/);
    const unknownId = await cliProcess(r, ['promote', 'nosuch', '-b', 'x']);
    assert.is(unknownId.code, 1, unknownId.stderr);
    assert.match(unknownId.stderr, /no session nosuch .*no session has that id or name/);
    await worktreeSession(r, 'n2', 'login');
    const ambiguous = await cliProcess(r, ['discard', 'login']);
    assert.is(ambiguous.code, 1, ambiguous.stderr);
    assert.match(ambiguous.stderr, /"login" names 2 sessions: n1, n2|"login" names 2 sessions: n2, n1/);
    assert.ok(fs.existsSync(wt), 'nothing discarded');
    const undoByName = await cliProcess(r, ['status', '--session', 'n1']);
    assert.is(undoByName.code, 0, undoByName.stderr);
  } finally {
    r.cleanup();
  }
});

test('apply --undo takes the last apply back, refusing (exit 3, nothing written) paths changed since; --force leaves those', async () => {
  const r = tempRepo({ files: { 'a.txt': 'one\n', 'b.txt': 'bee\n', 'c.txt': 'sea\n' } });
  try {
    const wt = await worktreeSession(r, 'u1');
    writeIn(wt, 'a.txt', 'agent a\n');
    writeIn(wt, 'b.txt', 'agent b\n');
    writeIn(wt, 'new.txt', 'new\n');
    fs.rmSync(path.join(wt, 'c.txt'));
    await snapIn(r, 'u1', wt);
    const nothing = await cliProcess(r, ['apply', '--undo']);
    assert.is(nothing.code, 1, nothing.stderr);
    assert.match(nothing.stderr, 'no apply');
    assert.is((await cliProcess(r, ['apply', 'u1'])).code, 0);
    // Written since the apply: the user's.
    r.write('b.txt', 'user edit after apply\n');
    const refused = await cliProcess(r, ['apply', '--undo']);
    assert.is(refused.code, 3, refused.stderr);
    assert.match(refused.stderr, 'b.txt');
    assert.is(r.read('a.txt').toString(), 'agent a\n', 'nothing written');
    const forced = await cliProcess(r, ['apply', '--undo', '--force']);
    assert.is(forced.code, 0, forced.stderr);
    assert.is(r.read('a.txt').toString(), 'one\n');
    assert.is(r.read('c.txt').toString(), 'sea\n');
    assert.not.ok(r.exists('new.txt'));
    assert.is(r.read('b.txt').toString(), 'user edit after apply\n', 'the later write stays');
    assert.match(forced.stdout + forced.stderr, 'b.txt');
    const again = await cliProcess(r, ['apply', '--undo']);
    assert.is(again.code, 1, again.stderr);
    assert.match(again.stderr, 'already undone');
  } finally {
    r.cleanup();
  }
});

test.run();
