// Sessions and steps: concurrency, the chain of snapshots, and that nothing
// the user owns (index, HEAD, branches, stash, config) is ever touched.
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cli, cliProcess, indexBytes, refsUnder, tempRepo, type TempRepo } from '../support/helpers.js';
import {
  assertFsckClean,
  gitCommonDir,
  journalEvents,
  leftovers,
  looseObjects,
  snapJson,
  startNamedSession,
} from '../support/snap-helpers.js';

function stepRefs(repo: TempRepo, session: string): Map<number, string> {
  const out = new Map<number, string>();
  for (const [ref, oid] of refsUnder(repo, `refs/agent/${session}/`)) out.set(Number(ref.slice(ref.lastIndexOf('/') + 1)), oid);
  return out;
}

function assertRefsAreCommits(repo: TempRepo, refs: Iterable<string>): void {
  for (const oid of refs) assert.is(repo.git(['cat-file', '-t', oid]).trim(), 'commit');
}

/** Everything the user owns, as bytes/strings, to compare before and after. */
function userState(repo: TempRepo): Record<string, unknown> {
  const gitDir = path.join(repo.dir, '.git');
  const read = (rel: string) => {
    try {
      return fs.readFileSync(path.join(gitDir, rel), 'utf8');
    } catch {
      return null;
    }
  };
  return {
    index: indexBytes(repo),
    HEAD: read('HEAD'),
    config: read('config'),
    refs: repo.git(['for-each-ref', '--format=%(refname) %(objectname)', 'refs/heads', 'refs/tags', 'refs/stash', 'refs/remotes']),
    stash: repo.gitRaw(['stash', 'list']).stdout,
    hooks: fs.readdirSync(path.join(gitDir, 'hooks')).sort(),
    packedRefs: read('packed-refs'),
    logsHead: read('logs/HEAD'),
  };
}

test('8 concurrent snaps (no session yet): all succeed, one session, contiguous unique steps, refs point at commits', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const before = userState(repo);
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => {
        repo.write(`f${i}.txt`, `${i}\n`);
        return cliProcess(repo, ['snap', '--json', '--tool', `t${i}`]);
      }),
    );
    for (const r of results) assert.is(r.code, 0, r.stderr + r.stdout);
    const outs = results.map((r) => JSON.parse(r.stdout) as { session: string; step: number; commit: string });
    const sessions = new Set(outs.map((o) => o.session));
    assert.is(sessions.size, 1, `several sessions: ${[...sessions].join(' ')}`);
    const session = outs[0]?.session ?? '';
    assert.equal(
      outs.map((o) => o.step).sort((a, b) => a - b),
      [1, 2, 3, 4, 5, 6, 7, 8],
    );
    const refs = stepRefs(repo, session);
    assert.equal(
      [...refs.keys()].sort((a, b) => a - b),
      [0, 1, 2, 3, 4, 5, 6, 7, 8],
    );
    for (const o of outs) assert.is(refs.get(o.step), o.commit);
    assertRefsAreCommits(repo, refs.values());
    // One chain: each step's first parent is the previous step.
    for (let n = 1; n <= 8; n++) assert.is(repo.git(['rev-parse', `refs/agent/${session}/${n}^`]).trim(), refs.get(n - 1));
    assert.is(repo.git(['rev-parse', `refs/agentsnap/sessions/${session}/head`]).trim(), refs.get(8));
    assert.equal(userState(repo), before);
    assertFsckClean(repo);
    assert.equal(leftovers(repo), []);
    const list = JSON.parse((await cli(repo, ['sessions', '--json'])).stdout) as unknown[];
    assert.is(list.length, 1);
  } finally {
    repo.cleanup();
  }
});

test('8 concurrent snaps with --session: all succeed, steps unique and contiguous', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    await startNamedSession(repo, 'shared-1');
    const results = await Promise.all(Array.from({ length: 8 }, () => cliProcess(repo, ['snap', '--json', '--session', 'shared-1'])));
    for (const r of results) assert.is(r.code, 0, r.stderr + r.stdout);
    const outs = results.map((r) => JSON.parse(r.stdout) as { step: number; session: string; startedSession: boolean });
    assert.ok(outs.every((o) => o.session === 'shared-1' && !o.startedSession));
    assert.equal(
      outs.map((o) => o.step).sort((a, b) => a - b),
      [1, 2, 3, 4, 5, 6, 7, 8],
    );
    assert.equal(journalEvents(repo, 'shared-1').filter((e) => e.type === 'session.start').length, 1);
    // AGENTSNAP_SESSION names the session the same way.
    const viaEnv = await snapJson(repo, [], { env: { AGENTSNAP_SESSION: 'shared-1' } });
    assert.is(viaEnv.step, 9);
    assert.is(stepRefs(repo, 'shared-1').size, 10);
    assertRefsAreCommits(repo, stepRefs(repo, 'shared-1').values());
    assert.equal(leftovers(repo), []);
  } finally {
    repo.cleanup();
  }
});

test('two concurrent starts of one session id: one wins, one start event', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const results = await Promise.allSettled([
      startNamedSession(repo, 'dup'),
      startNamedSession(repo, 'dup'),
      startNamedSession(repo, 'dup'),
    ]);
    assert.is(results.filter((r) => r.status === 'fulfilled').length, 1);
    for (const r of results) if (r.status === 'rejected') assert.match(String((r.reason as Error).message), /session dup already exists/);
    assert.equal(
      journalEvents(repo, 'dup').map((e) => e.type),
      ['session.start'],
    );
  } finally {
    repo.cleanup();
  }
});

test('concurrent --phase pre then --phase post --step N pairs: every step closed, post parents its pre', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    await startNamedSession(repo, 'pairs');
    const base = await snapJson(repo, ['--session', 'pairs']);
    const pairs = await Promise.all(
      Array.from({ length: 4 }, async (_, i) => {
        const pre = await cliProcess(repo, ['snap', '--phase', 'pre', '--session', 'pairs', '--tool', `tool${i}`]);
        assert.is(pre.code, 0, pre.stderr);
        const step = Number(pre.stdout.trim());
        repo.write(`out${i}.txt`, `${i}\n`);
        const post = await cliProcess(repo, ['snap', '--phase', 'post', '--session', 'pairs', '--step', String(step), '--json']);
        assert.is(post.code, 0, post.stderr);
        return { step, post: JSON.parse(post.stdout) as { commit: string; step: number } };
      }),
    );
    assert.equal(
      pairs.map((p) => p.step).sort((a, b) => a - b),
      [2, 3, 4, 5],
    );
    const log = JSON.parse((await cli(repo, ['log', '--json', '--session', 'pairs'])).stdout) as {
      step: number;
      kind: string;
      status: string;
      pre: string;
      post: string;
      tool: string;
    }[];
    assert.equal(
      log.map((s) => s.step),
      [1, 2, 3, 4, 5],
    );
    for (const st of log) {
      assert.is(st.status, 'done');
      if (st.kind === 'checkpoint') continue;
      assert.is(repo.git(['rev-parse', `${st.post}^1`]).trim(), st.pre, `step ${st.step}: first parent is the pre-snapshot`);
      assert.is(repo.git(['rev-parse', `refs/agent/pairs/${st.step}`]).trim(), st.post);
    }
    // The chain tip reaches every snapshot.
    const reachable = repo.git(['rev-list', `refs/agentsnap/sessions/pairs/head`]).split('\n').filter(Boolean);
    for (const st of log) assert.ok(reachable.includes(st.post) && reachable.includes(st.pre));
    assert.ok(reachable.includes(base.commit));
    assertFsckClean(repo);
    assert.equal(leftovers(repo), []);
  } finally {
    repo.cleanup();
  }
});

test('pre/post: the ref moves from pre to post; diff step^..step is what the call did; statuses', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const pre = await snapJson(repo, ['--phase', 'pre', '--tool', 'Edit']);
    assert.is(pre.step, 1);
    assert.is(pre.phase, 'pre');
    assert.is(repo.git(['rev-parse', `refs/agent/${pre.session}/1`]).trim(), pre.commit);
    repo.write('a.txt', 'edited\n');
    const post = await snapJson(repo, ['--phase', 'post']);
    assert.is(post.step, 1);
    assert.is(repo.git(['rev-parse', `refs/agent/${pre.session}/1`]).trim(), post.commit);
    assert.is(repo.git(['diff', '--name-only', `refs/agent/${pre.session}/1^`, `refs/agent/${pre.session}/1`]).trim(), 'a.txt');
    const msg = repo.git(['log', '-1', '--format=%B', post.commit]);
    assert.match(msg, new RegExp(`Agentsnap-Session: ${pre.session}`));
    assert.match(msg, /Agentsnap-Step: 1/);
    assert.match(msg, /Agentsnap-Phase: post/);
    assert.match(msg, /Agentsnap-Tool: Edit/);
    assert.match(msg, /Agentsnap-Head: [0-9a-f]{40}/);
    const failed = await cli(repo, ['snap', '--phase', 'pre', '--tool', 'Bash']);
    assert.is(failed.stdout.trim(), '2');
    await snapJson(repo, ['--phase', 'post', '--status', 'failed']);
    const log = JSON.parse((await cli(repo, ['log', '--json'])).stdout) as { step: number; status: string }[];
    assert.equal(
      log.map((s) => `${s.step}:${s.status}`),
      ['1:done', '2:failed'],
    );
    // The baseline is a root commit.
    assert.is(
      repo
        .git(['rev-list', '--parents', '-1', `refs/agent/${pre.session}/0`])
        .trim()
        .split(' ').length,
      1,
    );
  } finally {
    repo.cleanup();
  }
});

test('nothing the user owns changes across every command; fsck clean; no leftovers', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n', 'b.txt': 'b\n' } });
  try {
    repo.write('a.txt', 'stashed\n');
    repo.git(['stash', '-q']);
    repo.git(['tag', 'v1']);
    repo.write('a.txt', 'staged\n');
    repo.git(['add', 'a.txt']);
    repo.write('a.txt', 'unstaged\n');
    repo.write('untracked.txt', 'u\n');
    // Make the index stat-dirty so any refresh would rewrite it.
    fs.utimesSync(path.join(repo.dir, 'b.txt'), new Date(), new Date(Date.now() + 5000));
    const before = userState(repo);
    const commands = [
      ['snap'],
      ['snap', '--phase', 'pre', '--tool', 'x'],
      ['snap', '--phase', 'post'],
      ['sessions'],
      ['sessions', '--json'],
      ['log'],
      ['log', '--json', '--', 'a.txt'],
      ['show', '1'],
      ['diff', '0'],
      ['diff', '0', '2'],
      ['diff', '1:pre', '2', '--stat'],
    ];
    for (const args of commands) {
      const r = await cli(repo, args);
      assert.is(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(userState(repo), before, `${args.join(' ')} changed user state`);
      assert.equal(leftovers(repo), [], `${args.join(' ')} left files behind`);
    }
    assertFsckClean(repo);
  } finally {
    repo.cleanup();
  }
});

test('when nothing changed between two snapshots, no new blobs or trees are written', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n', 'dir/b.txt': 'b\n', '.gitattributes': '*.txt text=auto\n' } });
  try {
    repo.write('untracked.txt', 'u\r\n');
    repo.write('dir/new.bin', Buffer.from([0, 1, 2, 3]));
    const s1 = await snapJson(repo);
    const before = looseObjects(repo);
    const s2 = await snapJson(repo, ['--session', s1.session]);
    assert.is(s2.tree, s1.tree);
    const added = [...looseObjects(repo)].filter((o) => !before.has(o));
    assert.equal(added, [s2.commit], 'only the new commit object');
    const s3 = await snapJson(repo, ['--phase', 'pre', '--session', s1.session]);
    const s4 = await snapJson(repo, ['--phase', 'post', '--session', s1.session]);
    const added2 = [...looseObjects(repo)].filter((o) => !before.has(o)).sort();
    assert.equal(added2, [s2.commit, s3.commit, s4.commit].sort());
    const counts = repo.git(['count-objects', '-v']);
    assert.match(counts, /count: \d+/);
  } finally {
    repo.cleanup();
  }
});

test('a snap with no open session starts one; the journal records start, steps and skipped files; mode 0600', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const res = await cli(repo, ['snap']);
    assert.is(res.code, 0, res.stderr);
    assert.match(res.stderr, /started session (\S+) \(baseline refs\/agent\/\S+\/0\)/);
    const session = /started session (\S+)/.exec(res.stderr)?.[1] ?? '';
    assert.match(session, /^[0-9a-z]{8}-[0-9a-z]{4}$/);
    const file = path.join(gitCommonDir(repo), 'agentsnap', 'sessions', session, 'journal.jsonl');
    assert.is(fs.statSync(file).mode & 0o777, 0o600);
    const events = journalEvents(repo, session);
    assert.equal(
      events.map((e) => e.type),
      ['session.start', 'step.checkpoint'],
    );
    for (const e of events) {
      assert.is(e.v, 1);
      assert.is(e.session, session);
      assert.type(e.time, 'string');
    }
    const indexFile = path.join(gitCommonDir(repo), 'agentsnap', 'sessions', session, 'index');
    assert.ok(fs.existsSync(indexFile));
    // Generated ids sort by creation time.
    await new Promise((r) => setTimeout(r, 5));
    await startNamedSession(repo, 'zzz-manual');
    const other = await snapJson(repo, ['--session', 'zzz-manual']);
    assert.is(other.session, 'zzz-manual');
    const ids = (JSON.parse((await cli(repo, ['sessions', '--json'])).stdout) as { id: string }[]).map((s) => s.id);
    assert.ok(ids.includes(session) && ids.includes('zzz-manual'));
  } finally {
    repo.cleanup();
  }
});

test('an unreadable file fails the snapshot naming it; no partial tree, no step', async () => {
  if (process.getuid?.() === 0) return; // root reads everything
  const repo = tempRepo({ files: { 'a.txt': 'a\n', 'locked.txt': 'l\n' } });
  try {
    const s1 = await snapJson(repo);
    repo.write('locked.txt', 'changed\n');
    fs.chmodSync(path.join(repo.dir, 'locked.txt'), 0o000);
    repo.write('new-locked.txt', 'x\n', 0o000);
    const r = await cli(repo, ['snap', '--session', s1.session]);
    assert.is(r.code, 1, r.stderr);
    assert.match(r.stderr, /locked\.txt/);
    assert.not.match(r.stderr, /\n\s+at /);
    assert.is(stepRefs(repo, s1.session).size, 2);
    fs.chmodSync(path.join(repo.dir, 'locked.txt'), 0o644);
    fs.chmodSync(path.join(repo.dir, 'new-locked.txt'), 0o644);
    const s2 = await snapJson(repo, ['--session', s1.session]);
    assert.is(s2.step, 2);
    assert.equal(leftovers(repo), []);
  } finally {
    repo.cleanup();
  }
});

test.run();
