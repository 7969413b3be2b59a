import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cli, indexBytes, refsUnder, tempRepo, treeFiles, type TempRepo } from '../support/helpers.js';
import { openRepo } from '../../src/git/repo.js';
import { startWorktreeSession } from '../../src/worktrees/worktree.js';
import { loadSession, wrapperOwner } from '../../src/session/session.js';
import { maybeAutoGc } from '../../src/worktrees/gc.js';
import { currentOwner } from '../../src/base/lock.js';

async function worktreeSession(r: TempRepo, id: string, opts: { owner?: boolean } = {}): Promise<string> {
  const repo = await openRepo(r.dir, { env: r.env });
  const res = await startWorktreeSession(repo, { session: id, ...(opts.owner ? { owner: wrapperOwner() } : {}) });
  return res.meta.path;
}

function writeIn(dir: string, rel: string, content: string): void {
  fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
  fs.writeFileSync(path.join(dir, rel), content);
}

async function snapIn(r: TempRepo, id: string, wt: string): Promise<void> {
  const res = await cli(r, ['snap', '--session', id, '-m', 'work'], { cwd: wt });
  assert.is(res.code, 0, res.stderr);
}

test('apply merges the session net change into the current worktree, after a safety snapshot', async () => {
  const r = tempRepo({ files: { 'a.txt': 'l1\nl2\nl3\nl4\nl5\n', 'b.txt': 'b\n', 'del.txt': 'd\n' } });
  try {
    const wt = await worktreeSession(r, 's1');
    writeIn(wt, 'a.txt', 'l1\nl2\nl3\nl4\nagent\n');
    writeIn(wt, 'new/agent.txt', 'from agent\n');
    fs.rmSync(path.join(wt, 'del.txt'));
    await snapIn(r, 's1', wt);
    // Meanwhile the user edits another part of a.txt.
    r.write('a.txt', 'user\nl2\nl3\nl4\nl5\n');
    const idx = indexBytes(r);
    const res = await cli(r, ['apply', 's1', '--json']);
    assert.is(res.code, 0, res.stderr);
    const out = JSON.parse(res.stdout) as { safetyRef: string; safety: string; written: string[]; deleted: string[] };
    assert.is(r.read('a.txt').toString(), 'user\nl2\nl3\nl4\nagent\n');
    assert.is(r.read('new/agent.txt').toString(), 'from agent\n');
    assert.not.ok(r.exists('del.txt'));
    assert.equal(out.deleted, ['del.txt']);
    assert.equal(indexBytes(r), idx, 'the index is not touched');
    // The safety snapshot holds the worktree as it was before apply.
    assert.is(refsUnder(r, 'refs/agentsnap/safety/').get(out.safetyRef), out.safety);
    const before = treeFiles(r, out.safety);
    assert.is(before.get('a.txt')?.content.toString(), 'user\nl2\nl3\nl4\nl5\n');
    assert.ok(before.has('del.txt'));
    assert.match(r.git(['log', '-1', '--format=%an %B', out.safety]), 'Agentsnap-Kind: safety');
    const s = loadSession(await openRepo(r.dir, { env: r.env }), 's1');
    assert.ok(s.extraEvents.some((e) => e.type === 'session.apply'));
  } finally {
    r.cleanup();
  }
});

test('apply clears the safety-ref lock a killed apply left (its ref name is never used again), not one a live git holds', async () => {
  const r = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const wt = await worktreeSession(r, 's1');
    writeIn(wt, 'a.txt', 'agent\n');
    await snapIn(r, 's1', wt);
    const dir = path.join(r.dir, '.git', 'refs', 'agentsnap', 'safety');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'killed-apply.lock'), '');
    const held = path.join(dir, 'running-git.lock');
    fs.writeFileSync(held, '');
    const fd = fs.openSync(held, 'r');
    try {
      const res = await cli(r, ['apply', 's1']);
      assert.is(res.code, 0, res.stderr);
      assert.is(r.read('a.txt').toString(), 'agent\n');
      assert.not.ok(fs.existsSync(path.join(dir, 'killed-apply.lock')), 'the stale lock is gone');
      assert.ok(fs.existsSync(held), 'a held lock stays');
    } finally {
      fs.closeSync(fd);
    }
  } finally {
    r.cleanup();
  }
});

test('apply refuses conflicts with the list and writes nothing; --force-conflicts writes markers', async () => {
  const r = tempRepo({ files: { 'a.txt': 'base\n', 'b.txt': 'b\n' } });
  try {
    const wt = await worktreeSession(r, 's2');
    writeIn(wt, 'a.txt', 'agent\n');
    writeIn(wt, 'b.txt', 'agent b\n');
    await snapIn(r, 's2', wt);
    r.write('a.txt', 'user\n');
    const res = await cli(r, ['apply', 's2']);
    assert.is(res.code, 4, res.stderr);
    assert.match(res.stderr, 'a.txt');
    assert.is(r.read('a.txt').toString(), 'user\n');
    assert.is(r.read('b.txt').toString(), 'b\n', 'nothing half applied');
    assert.is(refsUnder(r, 'refs/agentsnap/safety/').size, 0);
    const forced = await cli(r, ['apply', 's2', '--force-conflicts']);
    assert.is(forced.code, 0, forced.stderr);
    assert.match(r.read('a.txt').toString(), /<<<<<<<[\s\S]*user[\s\S]*agent/);
    assert.is(r.read('b.txt').toString(), 'agent b\n');
    assert.is(refsUnder(r, 'refs/agentsnap/safety/').size, 1);
  } finally {
    r.cleanup();
  }
});

test('apply never writes through a symlink out of the worktree', async () => {
  const r = tempRepo({ files: { 'a.txt': 'a\n' } });
  const outside = fs.mkdtempSync(path.join(r.base, 'outside-'));
  try {
    const wt = await worktreeSession(r, 's3');
    writeIn(wt, 'dir/file.txt', 'agent\n');
    await snapIn(r, 's3', wt);
    fs.symlinkSync(outside, path.join(r.dir, 'dir'));
    const res = await cli(r, ['apply', 's3']);
    assert.ok(res.code === 3 || res.code === 4, `${res.code} ${res.stderr}`);
    assert.equal(fs.readdirSync(outside), []);
  } finally {
    r.cleanup();
  }
});

test('promote creates a branch with one ordinary commit by the user on the session base', async () => {
  const r = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const base = r.git(['rev-parse', 'HEAD']).trim();
    const wt = await worktreeSession(r, 'p1');
    writeIn(wt, 'a.txt', 'promoted\n');
    await snapIn(r, 'p1', wt);
    r.git(['commit', '-q', '--allow-empty', '-m', 'user moved on']);
    // No identity configured: a clear refusal.
    r.git(['config', 'user.useConfigOnly', 'true']);
    const noId = await cli(r, ['promote', 'p1', '--branch', 'agent/p1'], { env: { EMAIL: '' } });
    assert.is(noId.code, 1, noId.stderr);
    assert.match(noId.stderr, 'identity');
    assert.is(r.gitRaw(['rev-parse', '-q', '--verify', 'refs/heads/agent/p1']).status, 1);
    r.git(['config', 'user.name', 'Jane Dev']);
    r.git(['config', 'user.email', 'jane@example.com']);
    const res = await cli(r, ['promote', 'p1', '--branch', 'agent/p1', '-m', 'Add the promoted change', '--json']);
    assert.is(res.code, 0, res.stderr);
    const out = JSON.parse(res.stdout) as { commit: string };
    assert.is(r.git(['rev-parse', 'agent/p1']).trim(), out.commit);
    assert.is(r.git(['rev-parse', 'agent/p1^']).trim(), base);
    assert.is(
      r.git(['log', '-1', '--format=%an <%ae>|%cn|%B', 'agent/p1']).trim(),
      'Jane Dev <jane@example.com>|Jane Dev|Add the promoted change',
    );
    assert.is(r.git(['show', 'agent/p1:a.txt']), 'promoted\n');
    assert.is(r.git(['symbolic-ref', 'HEAD']).trim(), 'refs/heads/main', 'the user stays on their branch');
    const again = await cli(r, ['promote', 'p1', '--branch', 'agent/p1']);
    assert.is(again.code, 3, again.stderr);
    const forced = await cli(r, ['promote', 'p1', '--branch', 'agent/p1', '--force']);
    assert.is(forced.code, 0, forced.stderr);
  } finally {
    r.cleanup();
  }
});

test('discard takes a final snapshot, removes the worktree and its metadata; refs stay until gc; --purge drops them', async () => {
  const r = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const wt = await worktreeSession(r, 'd1');
    writeIn(wt, 'late.txt', 'written after the last snapshot\n');
    const res = await cli(r, ['discard', 'd1', '--json']);
    assert.is(res.code, 0, res.stderr);
    const out = JSON.parse(res.stdout) as { finalCommit: string | null; worktreeRemoved: string };
    assert.ok(out.finalCommit);
    assert.is(
      treeFiles(r, refsUnder(r, 'refs/agentsnap/sessions/d1/').get('refs/agentsnap/sessions/d1/head') ?? '')
        .get('late.txt')
        ?.content.toString(),
      'written after the last snapshot\n',
    );
    assert.not.ok(fs.existsSync(wt));
    assert.not.match(r.git(['worktree', 'list']), wt);
    assert.not.ok(fs.existsSync(path.join(r.dir, '.git', 'worktrees', 'd1')));
    assert.not.ok(fs.existsSync(path.join(r.dir, '.git', 'agentsnap', 'sessions', 'd1', 'index')));
    const list = JSON.parse((await cli(r, ['sessions', '--json'])).stdout) as { id: string; status: string }[];
    assert.is(list.find((s) => s.id === 'd1')?.status, 'discarded');
    assert.ok(refsUnder(r, 'refs/agent/d1/').size > 0, 'refs stay until gc');
    assert.is((await cli(r, ['log', '--session', 'd1'])).code, 0);

    const wtD2 = await worktreeSession(r, 'd2');
    // From inside the worktree being discarded.
    const purge = await cli(r, ['discard', 'd2', '--purge'], { cwd: wtD2 });
    assert.is(purge.code, 0, purge.stderr);
    assert.is(refsUnder(r, 'refs/agent/d2/').size, 0);
    assert.is(refsUnder(r, 'refs/agentsnap/sessions/d2/').size, 0);
    assert.not.ok(fs.existsSync(path.join(r.dir, '.git', 'agentsnap', 'sessions', 'd2')));
    assert.not.ok(fs.existsSync(wtD2));
    assert.not.ok(fs.existsSync(path.join(r.dir, '.git', 'worktrees', 'd2')));
  } finally {
    r.cleanup();
  }
});

test('discard refuses a running session (exit 3) unless --force, and refuses to lose left-out files', async () => {
  const r = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const wt = await worktreeSession(r, 'run1', { owner: true });
    const res = await cli(r, ['discard', 'run1']);
    assert.is(res.code, 3, res.stderr);
    assert.ok(fs.existsSync(wt));
    const wt2 = await worktreeSession(r, 'sec1');
    writeIn(wt2, 'id_rsa', 'private key\n');
    const lost = await cli(r, ['discard', 'sec1']);
    assert.is(lost.code, 3, lost.stderr);
    assert.match(lost.stderr, 'id_rsa');
    assert.ok(fs.existsSync(path.join(wt2, 'id_rsa')));
    const wt3 = await worktreeSession(r, 'broken1');
    fs.rmSync(path.join(wt3, '.git'));
    const broken = await cli(r, ['discard', 'broken1']);
    assert.is(broken.code, 3, broken.stderr);
    assert.ok(fs.existsSync(path.join(wt3, 'a.txt')), 'no final snapshot, nothing removed');
    const forced = await cli(r, ['discard', 'run1', '--force']);
    assert.is(forced.code, 0, forced.stderr);
    assert.not.ok(fs.existsSync(wt));
  } finally {
    r.cleanup();
  }
});

test('sessions shows worktree, liveness, steps, files changed and disk use', async () => {
  const r = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const wt = await worktreeSession(r, 'v1');
    writeIn(wt, 'x.txt', 'x\n');
    writeIn(wt, 'y.txt', 'y\n');
    await snapIn(r, 'v1', wt);
    assert.is((await cli(r, ['snap', '--session', 'main1'])).code, 1, 'unknown session');
    assert.is((await cli(r, ['snap'])).code, 0);
    const res = await cli(r, ['sessions', '--json']);
    assert.is(res.code, 0, res.stderr);
    const list = JSON.parse(res.stdout) as {
      id: string;
      worktree: string;
      worktreeKind: string;
      running: boolean;
      steps: number;
      filesChanged: number;
      diskUse: { worktree: number | null; state: number };
    }[];
    const v1 = list.find((s) => s.id === 'v1');
    assert.ok(v1);
    assert.is(v1?.worktreeKind, 'agentsnap');
    assert.is(v1?.worktree, wt);
    assert.is(v1?.steps, 1);
    assert.is(v1?.filesChanged, 2);
    assert.is(v1?.running, false);
    assert.ok((v1?.diskUse.worktree ?? 0) > 0 && (v1?.diskUse.state ?? 0) > 0);
    const main = list.find((s) => s.id !== 'v1');
    assert.is(main?.worktreeKind, 'main');
    assert.is(main?.diskUse.worktree, null);
    const text = await cli(r, ['sessions']);
    assert.match(text.stdout, 'main worktree');
    // The row of v1 (SESSION NAME STATUS STEPS FILES CHANGED …): 1 step, 2 files changed.
    assert.match(text.stdout, /^v1\s.*\s(?:running|ended)\s+1\s+2\s/m);
  } finally {
    r.cleanup();
  }
});

test('gc drops discarded and old sessions with their worktrees, refs and files; keeps recent ones; --dry-run changes nothing', async () => {
  const r = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    await worktreeSession(r, 'g1');
    const wt2 = await worktreeSession(r, 'g2');
    writeIn(wt2, 'w.txt', 'w\n');
    await snapIn(r, 'g2', wt2);
    assert.is((await cli(r, ['discard', 'g1'])).code, 0);
    const stray = path.join(r.dir, '.git', 'agentsnap', 'sessions', 'g2', 'state.json.tmp-999999');
    fs.writeFileSync(stray, '{}');
    const old = new Date(Date.now() - 2 * 3600 * 1000);
    fs.utimesSync(stray, old, old);

    const tmpPack = path.join(r.dir, '.git', 'objects', 'pack', 'tmp_pack_abc123');
    fs.mkdirSync(path.dirname(tmpPack), { recursive: true });
    fs.writeFileSync(tmpPack, 'partial');
    const twoDays = new Date(Date.now() - 2 * 24 * 3600 * 1000);
    fs.utimesSync(tmpPack, twoDays, twoDays);

    const dry = await cli(r, ['gc', '--dry-run', '--json']);
    assert.is(dry.code, 0, dry.stderr);
    const dryOut = JSON.parse(dry.stdout) as { removedSessions: string[] };
    assert.equal(dryOut.removedSessions, ['g1']);
    assert.ok(refsUnder(r, 'refs/agent/g1/').size > 0, 'dry run keeps refs');

    const res = await cli(r, ['gc', '--json']);
    assert.is(res.code, 0, res.stderr);
    const out = JSON.parse(res.stdout) as { removedSessions: string[]; before: number; after: number };
    assert.equal(out.removedSessions, ['g1']);
    assert.ok(out.after <= out.before);
    assert.is(refsUnder(r, 'refs/agent/g1/').size, 0);
    assert.is(refsUnder(r, 'refs/agentsnap/sessions/g1/').size, 0);
    assert.not.ok(fs.existsSync(path.join(r.dir, '.git', 'agentsnap', 'sessions', 'g1')));
    assert.not.ok(fs.existsSync(stray));
    assert.not.ok(fs.existsSync(tmpPack), 'a leaked temporary pack is removed');
    assert.ok(fs.existsSync(wt2));

    // g2 is recent (and has no wrapper, so may be in use): kept. With a zero retention it is old enough...
    const zero = await cli(r, ['gc', '--older-than', '0', '--json']);
    assert.equal((JSON.parse(zero.stdout) as { removedSessions: string[] }).removedSessions, []);
  } finally {
    r.cleanup();
  }
});

test('gc keeps an old session whose worktree has work its snapshots lack; gc --all removes everything agentsnap made', async () => {
  const r = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const wt = await worktreeSession(r, 'k1');
    // Seen from 20 days later, it is past the 14-day retention.
    const repo = await openRepo(r.dir, { env: r.env });
    writeIn(wt, 'unsaved.txt', 'not in any snapshot\n');
    const future = Date.now() + 20 * 24 * 3600 * 1000;
    const { gc } = await import('../../src/worktrees/gc.js');
    const kept = await gc(repo, { now: future });
    assert.equal(kept.removedSessions, []);
    assert.is(kept.kept[0]?.session, 'k1');
    assert.ok(fs.existsSync(path.join(wt, 'unsaved.txt')));

    const refused = await cli(r, ['gc', '--all']);
    assert.is(refused.code, 3, refused.stderr);
    assert.is((await cli(r, ['snap', '--session', 'k1'], { cwd: wt })).code, 0);
    r.git(['update-ref', 'refs/agentsnap/safety/zzz', 'HEAD']);
    const all = await gc(repo, { all: true, force: true });
    assert.ok(all.removedSessions.includes('k1'));
    assert.is(refsUnder(r, 'refs/agent/').size, 0);
    assert.is(refsUnder(r, 'refs/agentsnap/').size, 0);
    assert.not.ok(fs.existsSync(path.join(r.dir, '.git', 'agentsnap')));
    assert.is(
      r
        .git(['worktree', 'list', '--porcelain'])
        .split('\n')
        .filter((l) => l.startsWith('worktree ')).length,
      1,
    );
  } finally {
    r.cleanup();
  }
});

test('gc removes the server run dirs of removed worktrees, never one whose server runs or whose worktree is there', async () => {
  const r = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const runRoot = path.join(r.dir, '.git', 'agentsnap', 'run');
    const dead = { pid: 4194303 + 1000, start: null, host: os.hostname(), since: new Date().toISOString(), purpose: 'server' };
    const runDir = (name: string, owner: object) => {
      const dir = path.join(runRoot, `wt-${name}`);
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, 'server.lock'), JSON.stringify(owner));
      fs.writeFileSync(path.join(dir, 'pid'), `${(owner as { pid: number }).pid}\n`);
      fs.writeFileSync(path.join(dir, 'server.log'), 'log\n');
      spawnSync('mkfifo', [path.join(dir, 'req')]);
      return dir;
    };
    for (const name of ['removed', 'deleted-by-hand', 'alive', 'removed-live-server'])
      r.git(['worktree', 'add', '-q', '--detach', path.join(r.base, name)]);
    const removed = runDir('removed', dead);
    const byHand = runDir('deleted-by-hand', dead);
    const alive = runDir('alive', dead);
    const liveServer = runDir('removed-live-server', currentOwner('server'));
    const main = path.join(runRoot, 'main');
    fs.mkdirSync(main, { recursive: true });
    r.git(['worktree', 'remove', path.join(r.base, 'removed')]);
    r.git(['worktree', 'remove', path.join(r.base, 'removed-live-server')]);
    fs.rmSync(path.join(r.base, 'deleted-by-hand'), { recursive: true });

    const dry = await cli(r, ['gc', '--dry-run', '--json']);
    assert.is(dry.code, 0, dry.stderr);
    assert.equal((JSON.parse(dry.stdout) as { removedFiles: string[] }).removedFiles.sort(), [byHand, removed].sort());
    assert.ok(fs.existsSync(removed) && fs.existsSync(byHand), 'a dry run removes nothing');

    const res = await cli(r, ['gc', '--json']);
    assert.is(res.code, 0, res.stderr);
    assert.equal((JSON.parse(res.stdout) as { removedFiles: string[] }).removedFiles.sort(), [byHand, removed].sort());
    assert.not.ok(fs.existsSync(removed));
    assert.not.ok(fs.existsSync(byHand));
    assert.ok(fs.existsSync(path.join(alive, 'server.log')), 'the run dir of a worktree that is there stays');
    assert.ok(fs.existsSync(path.join(liveServer, 'pid')), 'a running server keeps its run dir');
    assert.ok(fs.existsSync(main));
  } finally {
    r.cleanup();
  }
});

test('automatic retention runs at most once per agentsnap.gcAuto interval', async () => {
  const r = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const repo = await openRepo(r.dir, { env: r.env });
    fs.mkdirSync(repo.stateDir, { recursive: true });
    const first = await maybeAutoGc(repo);
    assert.ok(first, 'first call runs');
    assert.is(await maybeAutoGc(repo), null, 'then it waits a day');
    assert.ok(await maybeAutoGc(repo, { now: Date.now() + 2 * 24 * 3600 * 1000 }));
    r.git(['config', 'agentsnap.gcAuto', 'never']);
    assert.is(await maybeAutoGc(repo, { now: Date.now() + 10 * 24 * 3600 * 1000 }), null);
  } finally {
    r.cleanup();
  }
});

test('promote under core.fileMode=false commits what git would: the modes git has, new files 100644 (snapshots keep the disk x bit for undo)', async () => {
  const r = tempRepo({ files: { 'a.txt': 'a\n', 'run.sh': 'echo\n' } });
  try {
    r.git(['update-index', '--chmod=+x', 'run.sh']);
    r.git(['commit', '-q', '-m', 'run.sh executable']);
    r.git(['config', 'core.fileMode', 'false']);
    r.git(['config', 'user.name', 'Jane Dev']);
    r.git(['config', 'user.email', 'jane@example.com']);
    const wt = await worktreeSession(r, 'm1');
    // A filesystem without modes: every file shows its x bit set, or none.
    fs.chmodSync(path.join(wt, 'a.txt'), 0o755);
    fs.chmodSync(path.join(wt, 'run.sh'), 0o644);
    writeIn(wt, 'a.txt', 'changed\n');
    writeIn(wt, 'new.txt', 'new\n');
    fs.chmodSync(path.join(wt, 'new.txt'), 0o755);
    await snapIn(r, 'm1', wt);
    const res = await cli(r, ['promote', 'm1', '--branch', 'agent/m1']);
    assert.is(res.code, 0, res.stderr);
    const modes = r
      .git(['ls-tree', '-r', 'agent/m1'])
      .trim()
      .split('\n')
      .map((l) => `${l.split(' ')[0]} ${l.split('\t')[1]}`);
    assert.equal(modes, ['100644 a.txt', '100644 new.txt', '100755 run.sh']);
    assert.is(r.git(['show', 'agent/m1:a.txt']), 'changed\n');
  } finally {
    r.cleanup();
  }
});

test('promote under core.symlinks=false keeps the 120000 mode git has for a link stored as a plain file (snapshots record the plain file for undo)', async () => {
  const r = tempRepo({ files: { 'a.txt': 'a\n', t: 'target\n' } });
  try {
    fs.symlinkSync('t', path.join(r.dir, 'link'));
    fs.symlinkSync('t', path.join(r.dir, 'kept'));
    r.git(['add', 'link', 'kept']);
    r.git(['commit', '-q', '-m', 'links']);
    r.git(['config', 'core.symlinks', 'false']);
    r.git(['config', 'user.name', 'Jane Dev']);
    r.git(['config', 'user.email', 'jane@example.com']);
    const wt = await worktreeSession(r, 'l1');
    // What git checks out on a filesystem without symlinks: plain files holding the link text.
    for (const name of ['link', 'kept']) {
      fs.rmSync(path.join(wt, name));
      writeIn(wt, name, 't');
    }
    writeIn(wt, 'link', 'a.txt'); // the agent points the link elsewhere, as git on such a filesystem would see it
    writeIn(wt, 'a.txt', 'changed\n');
    fs.symlinkSync('a.txt', path.join(wt, 'new-link')); // a real symlink the agent made
    await snapIn(r, 'l1', wt);
    const res = await cli(r, ['promote', 'l1', '--branch', 'agent/l1']);
    assert.is(res.code, 0, res.stderr);
    const modes = r
      .git(['ls-tree', '-r', 'agent/l1'])
      .trim()
      .split('\n')
      .map((l) => `${l.split(' ')[0]} ${l.split('\t')[1]}`);
    assert.equal(modes, ['100644 a.txt', '120000 kept', '120000 link', '120000 new-link', '100644 t']);
    assert.is(r.git(['show', 'agent/l1:link']), 'a.txt');
    assert.is(r.git(['diff', '--name-status', 'main', 'agent/l1']), 'M\ta.txt\nM\tlink\nA\tnew-link\n');
  } finally {
    r.cleanup();
  }
});

test.run();
