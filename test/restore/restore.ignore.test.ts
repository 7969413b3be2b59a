// A change of ignore rules must never become a deletion (issue 13, item 2):
// a path absent from the target snapshot because it was ignored there is kept
// by undo, redo, revert and apply, and reported as kept.
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cli, indexBytes, sessionOf, tempRepo, step, type TempRepo } from '../support/helpers.js';
import { openRepo } from '../../src/git/repo.js';
import { startWorktreeSession } from '../../src/worktrees/worktree.js';
import { onGitSpawn } from '../../src/git/run.js';
import { undo } from '../../src/api/undo.js';
import { CTIME_MARGIN_MS } from '../../src/restore/ignored-at-target.js';

interface OpJson {
  changes: { path: string; change: string }[];
  left: { path: string; reason: string }[];
}

async function op(repo: TempRepo, args: string[]): Promise<OpJson> {
  const res = await cli(repo, [...args, '--json']);
  assert.is(res.code, 0, `${args.join(' ')}: ${res.stdout} ${res.stderr}`);
  // undo answers {files, chat}; redo, restore and revert the operation itself.
  const parsed = JSON.parse(res.stdout) as OpJson & { files?: OpJson };
  return parsed.files ?? parsed;
}

const keptReason = /ignored at the target: kept/;

function assertKept(out: OpJson, paths: string[]): void {
  for (const p of paths) {
    const l = out.left.find((x) => x.path === p);
    assert.ok(l, `${p} is reported as left: ${JSON.stringify(out.left)}`);
    assert.match(l!.reason, keptReason);
    assert.not.ok(
      out.changes.some((c) => c.path === p),
      `${p} is not among the changes`,
    );
  }
}

test('undo after the agent dropped the rule that ignored local.db keeps local.db (and says so)', async () => {
  const repo = tempRepo({ files: { '.gitignore': '*.db\n', 'a.txt': 'a\n' } });
  try {
    repo.write('local.db', 'the user database\n');
    await step(repo, () => {
      repo.write('.gitignore', 'node_modules/\n');
      repo.write('agent.txt', 'by the agent\n');
    });
    const idx = indexBytes(repo);
    const res = await cli(repo, ['undo']);
    assert.is(res.code, 0, res.stderr);
    assert.is(repo.read('local.db').toString(), 'the user database\n');
    assert.is(repo.read('.gitignore').toString(), '*.db\n');
    assert.not.ok(repo.exists('agent.txt'), 'what the agent created is still deleted');
    assert.match(res.stdout, /! local\.db\s+left as it is: ignored at the target: kept/);
    assert.not.match(res.stdout, /D local\.db/);
    assert.equal(indexBytes(repo), idx);
  } finally {
    repo.cleanup();
  }
});

test('undo --dry-run says local.db would be kept, not deleted', async () => {
  const repo = tempRepo({ files: { '.gitignore': '*.db\n' } });
  try {
    repo.write('local.db', 'db\n');
    await step(repo, () => repo.write('.gitignore', ''));
    const out = await op(repo, ['undo', '--dry-run']);
    assertKept(out, ['local.db']);
    assert.ok(out.changes.some((c) => c.path === '.gitignore'));
    assert.is(repo.read('local.db').toString(), 'db\n');
  } finally {
    repo.cleanup();
  }
});

test('redo after the agent added a rule that ignores a user file keeps the file', async () => {
  const repo = tempRepo({ files: { '.gitignore': '', 'a.txt': 'a\n' } });
  try {
    repo.write('notes.txt', 'my untracked notes\n');
    await step(repo, () => {
      repo.write('.gitignore', 'notes.txt\n');
      repo.write('a.txt', 'agent\n');
    });
    await op(repo, ['undo']);
    assert.is(repo.read('.gitignore').toString(), '');
    assert.is(repo.read('notes.txt').toString(), 'my untracked notes\n');
    const out = await op(repo, ['redo']);
    assert.is(repo.read('.gitignore').toString(), 'notes.txt\n');
    assert.is(repo.read('a.txt').toString(), 'agent\n');
    assert.is(repo.read('notes.txt').toString(), 'my untracked notes\n');
    assertKept(out, ['notes.txt']);
  } finally {
    repo.cleanup();
  }
});

test('revert of a step that dropped an ignore rule keeps the ignored file', async () => {
  const repo = tempRepo({ files: { '.gitignore': '*.db\n', 'a.txt': 'a\n' } });
  try {
    repo.write('local.db', 'db\n');
    await step(repo, () => repo.write('.gitignore', '*.tmp\n'));
    await step(repo, () => repo.write('a.txt', 'later\n'));
    const out = await op(repo, ['revert', '1']);
    assert.is(repo.read('.gitignore').toString(), '*.db\n');
    assert.is(repo.read('a.txt').toString(), 'later\n', 'the later step stays');
    assert.is(repo.read('local.db').toString(), 'db\n');
    assertKept(out, ['local.db']);
  } finally {
    repo.cleanup();
  }
});

test('a nested .gitignore: undo of its rewrite keeps what it ignored', async () => {
  const repo = tempRepo({ files: { 'sub/.gitignore': '*.cache\n', 'sub/code.js': 'x\n' } });
  try {
    repo.write('sub/data.cache', 'cached\n');
    repo.write('sub/deep/more.cache', 'more\n');
    await step(repo, () => {
      repo.write('sub/.gitignore', '');
      repo.write('sub/agent.cache', 'agent\n');
    });
    const out = await op(repo, ['undo']);
    assert.is(repo.read('sub/data.cache').toString(), 'cached\n');
    assert.is(repo.read('sub/deep/more.cache').toString(), 'more\n');
    assert.is(repo.read('sub/.gitignore').toString(), '*.cache\n');
    // The agent's own file was not there before the step, yet the rules at the target ignore it
    // too: kept, the safe way (nothing that might be the user's is deleted).
    assertKept(out, ['sub/agent.cache', 'sub/data.cache', 'sub/deep/more.cache']);
  } finally {
    repo.cleanup();
  }
});

test('a rule that ignores a whole directory (build/): undo keeps every file below it', async () => {
  const repo = tempRepo({ files: { '.gitignore': 'build/\n', 'src/main.c': 'int main;\n' } });
  try {
    repo.write('build/out.o', 'obj\n');
    repo.write('build/deep/lib.a', 'lib\n');
    await step(repo, () => repo.write('.gitignore', ''));
    const out = await op(repo, ['undo']);
    assert.is(repo.read('build/out.o').toString(), 'obj\n');
    assert.is(repo.read('build/deep/lib.a').toString(), 'lib\n');
    assertKept(out, ['build/deep/lib.a', 'build/out.o']);
  } finally {
    repo.cleanup();
  }
});

test('negations hold: a file the target rules re-include (!keep.log) is deleted, the ignored one kept', async () => {
  const repo = tempRepo({ files: { '.gitignore': '*.log\n!keep.log\n' } });
  try {
    repo.write('debug.log', 'user log\n');
    await step(repo, () => {
      repo.write('.gitignore', '');
      repo.write('keep.log', 'created by the agent\n');
    });
    const out = await op(repo, ['undo']);
    assert.is(repo.read('debug.log').toString(), 'user log\n');
    assert.not.ok(repo.exists('keep.log'), 'not ignored at the target: the agent made it, undo deletes it');
    assertKept(out, ['debug.log']);
    assert.ok(out.changes.some((c) => c.path === 'keep.log' && c.change === 'D'));
  } finally {
    repo.cleanup();
  }
});

test('info/exclude rules count at the target: un-ignored by a .gitignore negation, undo keeps the file', async () => {
  const repo = tempRepo({ files: { '.gitignore': '' } });
  try {
    fs.appendFileSync(path.join(repo.dir, '.git', 'info', 'exclude'), 'secret.env\n');
    repo.write('secret.env', 'TOKEN=1\n');
    await step(repo, () => repo.write('.gitignore', '!secret.env\n'));
    const out = await op(repo, ['undo']);
    assert.is(repo.read('secret.env').toString(), 'TOKEN=1\n');
    assertKept(out, ['secret.env']);
  } finally {
    repo.cleanup();
  }
});

test('an undo interrupted half way and completed later still keeps the ignored file', async () => {
  const repo = tempRepo({ files: { '.gitignore': '*.db\n' } });
  try {
    repo.write('local.db', 'db\n');
    await step(repo, () => {
      repo.write('.gitignore', '');
      repo.write('a.txt', 'agent\n');
      repo.write('b.txt', 'agent\n');
    });
    let interrupted = false;
    await undo({ cwd: repo.dir, env: repo.env, step: 1, interruptAfter: 1 }).catch(() => (interrupted = true));
    assert.ok(interrupted);
    assert.is(repo.read('local.db').toString(), 'db\n');
    const res = await cli(repo, ['undo', '1']);
    assert.is(res.code, 0, res.stderr);
    assert.match(res.stderr, /completed interrupted operation 1/);
    assert.is(repo.read('local.db').toString(), 'db\n');
    assert.is(repo.read('.gitignore').toString(), '*.db\n');
    assert.not.ok(repo.exists('a.txt') || repo.exists('b.txt'));
  } finally {
    repo.cleanup();
  }
});

/** Waits until the file's ctime is old enough to prove it predates a snapshot taken now (see CTIME_MARGIN_MS). */
async function untilOlder(abs: string): Promise<void> {
  const ctime = fs.lstatSync(abs).ctimeMs;
  // Commit times are whole seconds: one more second, and some slack.
  while (Date.now() - ctime < CTIME_MARGIN_MS + 1500) await new Promise((r) => setTimeout(r, 100));
}

test('the agent drops the rule from .git/info/exclude: undo keeps the file it left out (and still undoes a directory move)', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n', 'docs/guide.md': 'guide\n' } });
  try {
    const exclude = path.join(repo.dir, '.git', 'info', 'exclude');
    fs.appendFileSync(exclude, 'local.db\n');
    repo.write('local.db', 'the user database\n');
    repo.write('docs/draft.md', 'untracked draft\n');
    await untilOlder(path.join(repo.dir, 'docs', 'draft.md'));
    await step(repo, () => {
      fs.writeFileSync(exclude, '');
      repo.write('agent.txt', 'agent\n');
      // Renaming a directory keeps its files' ctime: the moved copies are still deleted.
      fs.renameSync(path.join(repo.dir, 'docs'), path.join(repo.dir, 'manual'));
    });
    const out = await op(repo, ['undo']);
    assert.is(repo.read('local.db').toString(), 'the user database\n');
    const l = out.left.find((x) => x.path === 'local.db');
    assert.match(l?.reason ?? '', /unchanged since before the target snapshot, which does not have it \(left out there\?\): kept/);
    assert.not.ok(repo.exists('agent.txt'));
    assert.not.ok(repo.exists('manual'), JSON.stringify(out));
    assert.is(repo.read('docs/draft.md').toString(), 'untracked draft\n');
    assert.is(repo.read('docs/guide.md').toString(), 'guide\n');
    assert.equal(
      out.left.map((x) => x.path),
      ['local.db'],
    );
  } finally {
    repo.cleanup();
  }
});

test('odd names (a leading colon, spaces, glob characters, non-ASCII) are asked about literally', async () => {
  const repo = tempRepo({ files: { '.gitignore': '*.db\n', 'a.txt': 'a\n' } });
  try {
    const names = [':colon.db', 'sp ace.db', 'glob*[1].db', 'ünï.db', 'dir with space/x?.db'];
    for (const n of names) repo.write(n, `${n}\n`);
    await step(repo, () => {
      repo.write('.gitignore', '');
      repo.write(':agent.txt', 'agent\n');
    });
    const out = await op(repo, ['undo']);
    for (const n of names) assert.is(repo.read(n).toString(), `${n}\n`, n);
    assertKept(out, names);
    assert.not.ok(repo.exists(':agent.txt'));
  } finally {
    repo.cleanup();
  }
});

test('undo in a session worktree (a linked worktree) keeps what its rules ignored', async () => {
  const r = tempRepo({ files: { '.gitignore': '*.db\n', 'a.txt': 'a\n' } });
  try {
    const repo = await openRepo(r.dir, { env: r.env });
    const wt = (await startWorktreeSession(repo, { session: 'igw' })).meta.path;
    fs.writeFileSync(path.join(wt, 'local.db'), 'db in the session worktree\n');
    const snap = async (phase: string) =>
      assert.is((await cli(r, ['snap', '--session', 'igw', '--phase', phase, '-q'], { cwd: wt })).code, 0);
    await snap('pre');
    fs.writeFileSync(path.join(wt, '.gitignore'), '');
    await snap('post');
    const res = await cli(r, ['undo', '--session', 'igw', '--json'], { cwd: wt });
    assert.is(res.code, 0, res.stdout + res.stderr);
    assert.is(fs.readFileSync(path.join(wt, 'local.db'), 'utf8'), 'db in the session worktree\n');
    assert.is(fs.readFileSync(path.join(wt, '.gitignore'), 'utf8'), '*.db\n');
    assert.match(res.stdout, keptReason);
  } finally {
    r.cleanup();
  }
});

// The rules alone decide (check-ignore --no-index): the user's index now is not the target's.
// Here the path was tracked and deleted by the step, so redo could delete it; but a path that
// is absent from the target and ignored there may just as well be an ignored file the agent
// force-added (next test), and which one cannot be told. Keeping it and saying so is the safe
// side (the user deletes it by hand); deleting an ignored file that may be the user's is not.
test('redo keeps a force-added file the rules ignore that the step deleted, and reports it (the rules alone decide)', async () => {
  const repo = tempRepo({ files: { '.gitignore': 'vendor/\n' } });
  try {
    repo.write('vendor/lib.js', 'lib\n');
    repo.git(['add', '-f', 'vendor/lib.js']);
    repo.git(['commit', '-q', '-m', 'vendored']);
    await step(repo, () => repo.rm('vendor/lib.js'));
    await op(repo, ['undo']);
    assert.is(repo.read('vendor/lib.js').toString(), 'lib\n');
    const out = await op(repo, ['redo']);
    assert.is(repo.read('vendor/lib.js').toString(), 'lib\n');
    assertKept(out, ['vendor/lib.js']);
  } finally {
    repo.cleanup();
  }
});

// Regression (found by adversarial testing, test/restore/undo.attack.test.ts): check-ignore read the
// user's index as it is now, where the agent's `git add -f` made the log tracked, so it was not
// "ignored at the target" and, written seconds ago (no ctime proof), it was deleted.
test('undo of a step that ran `git add -f` on an ignored log keeps the log on disk', async () => {
  const repo = tempRepo({ files: { '.gitignore': '*.log\n', 'a.txt': 'a\n' } });
  try {
    repo.write('debug.log', 'the user log\n');
    await step(repo, () => {
      fs.appendFileSync(path.join(repo.dir, 'debug.log'), 'a line the dev server wrote meanwhile\n');
      repo.git(['add', '-f', 'debug.log']);
      repo.write('a.txt', 'by the agent\n');
    });
    const out = await op(repo, ['undo']);
    assert.is(repo.read('a.txt').toString(), 'a\n');
    assert.is(repo.read('debug.log').toString(), 'the user log\na line the dev server wrote meanwhile\n');
    assertKept(out, ['debug.log']);
  } finally {
    repo.cleanup();
  }
});

test('apply of a session whose only change is a new ignore rule keeps the untracked notes.local here', async () => {
  const r = tempRepo({ files: { '.gitignore': '', 'a.txt': 'a\n' } });
  try {
    r.write('notes.local', 'my notes\n');
    const repo = await openRepo(r.dir, { env: r.env });
    const wt = (await startWorktreeSession(repo, { session: 'ig1' })).meta.path;
    assert.ok(fs.existsSync(path.join(wt, 'notes.local')), 'the session worktree starts from the worktree as it is');
    fs.writeFileSync(path.join(wt, '.gitignore'), '*.local\n');
    assert.is((await cli(r, ['snap', '--session', 'ig1', '-m', 'ignore'], { cwd: wt })).code, 0);
    const res = await cli(r, ['apply', 'ig1', '--json']);
    assert.is(res.code, 0, res.stdout + res.stderr);
    const out = JSON.parse(res.stdout) as { written: string[]; deleted: string[]; left: { path: string; reason: string }[] };
    assert.is(r.read('.gitignore').toString(), '*.local\n');
    assert.is(r.read('notes.local').toString(), 'my notes\n');
    assert.equal(out.deleted, []);
    assert.ok(
      out.left.some((l) => l.path === 'notes.local' && keptReason.test(l.reason)),
      JSON.stringify(out.left),
    );
    const text = await cli(r, ['apply', 'ig1']);
    assert.is(text.code, 0, text.stderr);
  } finally {
    r.cleanup();
  }
});

test('apply in text form says the ignored file was kept', async () => {
  const r = tempRepo({ files: { '.gitignore': '', 'a.txt': 'a\n' } });
  try {
    r.write('notes.local', 'my notes\n');
    const repo = await openRepo(r.dir, { env: r.env });
    const wt = (await startWorktreeSession(repo, { session: 'ig2' })).meta.path;
    fs.writeFileSync(path.join(wt, '.gitignore'), '*.local\n');
    assert.is((await cli(r, ['snap', '--session', 'ig2', '-m', 'ignore'], { cwd: wt })).code, 0);
    const res = await cli(r, ['apply', 'ig2']);
    assert.is(res.code, 0, res.stderr);
    assert.match(res.stdout, /! notes\.local\s+left as it is: ignored at the target: kept/);
    assert.is(r.read('notes.local').toString(), 'my notes\n');
  } finally {
    r.cleanup();
  }
});

test('cost: no git process for the target rules unless the plan deletes a path; one check-ignore when it does', async () => {
  const repo = tempRepo({ files: { '.gitignore': '*.db\n', 'a.txt': 'a\n' } });
  try {
    await step(repo, () => repo.write('a.txt', 'b\n'));
    // The target rules are checked in a temp dir under the state dir (snapshots run their own check-ignore).
    const tmp = path.join(repo.dir, '.git', 'agentsnap', 'tmp');
    const seen: string[][] = [];
    const off = onGitSpawn((args, cwd) => {
      if (cwd.startsWith(tmp)) seen.push(args);
    });
    try {
      await op(repo, ['undo']);
    } finally {
      off();
    }
    assert.equal(seen, [], 'a plan without deletions asks nothing');
    await step(repo, () => repo.write('new.txt', 'n\n'));
    seen.length = 0;
    const off2 = onGitSpawn((args, cwd) => {
      if (cwd.startsWith(tmp)) seen.push(args);
    });
    try {
      await op(repo, ['undo']);
    } finally {
      off2();
    }
    assert.is(seen.length, 1, JSON.stringify(seen));
    assert.ok(seen[0]!.includes('check-ignore'));
    assert.not.ok(repo.exists('new.txt'));
  } finally {
    repo.cleanup();
  }
});

test('undo to a state with a file that an exclude rule added since ignores, on disk as the target has it: the result snapshot does not hold it (found by the generative test)', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    repo.write('b.txt', 'untracked b\n');
    const snap = await cli(repo, ['snap', '--json']);
    assert.is(snap.code, 0, snap.stderr);
    const id = (JSON.parse(snap.stdout) as { session: string }).session;
    fs.appendFileSync(path.join(repo.dir, '.git', 'info', 'exclude'), '*.txt\n');
    const res = await cli(repo, ['undo', '--force', '1']);
    assert.is(res.code, 0, res.stderr);
    assert.is(repo.read('b.txt').toString(), 'untracked b\n');
    // The operation's result is the worktree as a scan of it holds it: b.txt is ignored now.
    const head = repo.git(['rev-parse', `refs/agentsnap/sessions/${id}/head`]).trim();
    assert.is(repo.gitRaw(['cat-file', '-e', `${head}:b.txt`]).status, 128, 'b.txt is not in the result');
    const next = await cli(repo, ['snap', '--json']);
    assert.is(next.code, 0, next.stderr);
    assert.equal((JSON.parse(next.stdout) as { changed: unknown[] }).changed, [], 'the next snapshot sees no change');
  } finally {
    repo.cleanup();
  }
});

test('restore of a .gitignore the agent deleted: the result snapshot leaves the ignored local.db out again, and a redo right after an undo of a new ignore rule needs no --force (found by the generative and adversarial tests)', async () => {
  const repo = tempRepo({ files: { '.gitignore': '*.db\n', 'a.txt': 'a\n' } });
  try {
    repo.write('local.db', 'the user db\n');
    await step(repo, () => repo.rm('.gitignore'));
    const id = sessionOf(repo);
    const res = await cli(repo, ['restore', '1', '--', '.gitignore']);
    assert.is(res.code, 0, res.stderr);
    const head = repo.git(['rev-parse', `refs/agentsnap/sessions/${id}/head`]).trim();
    assert.is(repo.gitRaw(['cat-file', '-e', `${head}:local.db`]).status, 128, 'local.db is ignored again: not in the result');
    assert.is(repo.gitRaw(['cat-file', '-e', `${head}:.gitignore`]).status, 0);
    // An agent step that adds an ignore rule for its own output; undo, then redo at once.
    await step(repo, () => {
      repo.write('.gitignore', '*.db\nbuild/\n');
      repo.write('build/out.o', 'object\n');
    });
    const undone = await cli(repo, ['undo']);
    assert.is(undone.code, 0, undone.stderr);
    assert.ok(repo.exists('build/out.o'), 'ignored at the target: kept');
    const redone = await cli(repo, ['redo']);
    assert.is(redone.code, 0, `redo needs no --force: ${redone.stderr}`);
    assert.is(repo.read('.gitignore').toString(), '*.db\nbuild/\n');
    assert.is(repo.read('local.db').toString(), 'the user db\n');
  } finally {
    repo.cleanup();
  }
});

test('undo that writes back a file an exclude rule added since ignores: the result snapshot does not hold it; a tracked file the rules match stays in it (found by the generative test)', async () => {
  const repo = tempRepo({ files: { '.gitignore': '*.log\n', 'a.txt': 'a\n' } });
  try {
    repo.write('tracked.log', 'tracked although ignored\n');
    repo.git(['add', '-f', 'tracked.log']);
    repo.git(['commit', '-qm', 'tracked.log']);
    repo.write('b.txt', 'untracked b\n');
    await step(repo, () => {
      fs.renameSync(path.join(repo.dir, 'b.txt'), path.join(repo.dir, 'moved.bin'));
      repo.rm('tracked.log');
    });
    const id = sessionOf(repo);
    fs.appendFileSync(path.join(repo.dir, '.git', 'info', 'exclude'), '*.txt\n');
    const res = await cli(repo, ['undo', '--force', '1']);
    assert.is(res.code, 0, res.stderr);
    assert.is(repo.read('b.txt').toString(), 'untracked b\n');
    assert.is(repo.read('tracked.log').toString(), 'tracked although ignored\n');
    const head = repo.git(['rev-parse', `refs/agentsnap/sessions/${id}/head`]).trim();
    assert.is(repo.gitRaw(['cat-file', '-e', `${head}:b.txt`]).status, 128, 'b.txt is ignored now: not in the result');
    assert.is(repo.gitRaw(['cat-file', '-e', `${head}:tracked.log`]).status, 0, 'a tracked file is in it whatever the rules');
    const next = await cli(repo, ['snap', '--json']);
    assert.equal((JSON.parse(next.stdout) as { changed: unknown[] }).changed, [], 'the next snapshot sees no change');
  } finally {
    repo.cleanup();
  }
});

test('undo that writes back a tracked file over the size cap keeps it in the result snapshot (tracked files are never skipped)', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    repo.write('big.dat', 'x'.repeat(4096));
    repo.git(['add', 'big.dat']);
    repo.git(['commit', '-qm', 'big']);
    repo.git(['config', 'agentsnap.maxFileSize', '1k']);
    await step(repo, () => repo.rm('big.dat'));
    const id = sessionOf(repo);
    const res = await cli(repo, ['undo']);
    assert.is(res.code, 0, res.stderr);
    assert.is(repo.read('big.dat').length, 4096);
    const head = repo.git(['rev-parse', `refs/agentsnap/sessions/${id}/head`]).trim();
    assert.is(repo.gitRaw(['cat-file', '-e', `${head}:big.dat`]).status, 0, 'big.dat is in the result');
  } finally {
    repo.cleanup();
  }
});

test.run();
