// The warm server when inotify watches run out, with a real lowered limit:
// the server runs in a child user namespace whose own
// /proc/sys/user/max_inotify_watches (or max_inotify_instances) is set low
// before it starts, so the host's limits are never touched. What the user
// observes: every snapshot equals the worktree (changes in directories the
// server could not watch are recorded), `server status`/`status`/`doctor`
// say the watcher is degraded with the command that raises the limit, the
// server log says it once, no hook or snap prints it, and the watches it did
// get are given back (counted in /proc/<pid>/fdinfo).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { BIN, runProcess, tempRepo, treeFiles, worktreeFiles, type CliResult, type TempRepo } from '../support/helpers.js';
import { runDirOf } from '../../src/server/server.js';

/** Whether this machine lets us make a user namespace and set its inotify limits (root, unshare, kernel ≥ 4.9). */
function namespacesWork(): string | null {
  const r = spawnSync(
    'unshare',
    ['-U', '-r', '--', '/bin/sh', '-c', 'echo 7 > /proc/sys/user/max_inotify_watches && cat /proc/sys/user/max_inotify_watches'],
    { encoding: 'utf8' },
  );
  if (r.error) return `unshare is not available (${r.error.message})`;
  if (r.status !== 0 || r.stdout.trim() !== '7')
    return `cannot set a user namespace's max_inotify_watches (${r.stderr.trim() || r.status})`;
  return null;
}
const skipWhy = namespacesWork();
if (skipWhy) console.log(`server.inotify: skipped: ${skipWhy}`);
const nsTest = skipWhy ? test.skip : test;

const serverEnv = { AGENTSNAP_SERVER: 'on' };

/**
 * A child user namespace with the given inotify limits, kept alive by a
 * `sleep` of ours; every agentsnap process of a test runs in it through
 * nsenter (the server reads its clients' /proc/<pid>/environ: only a
 * process in its own namespace lets it).
 */
interface Ns {
  pid: number;
  /** `agentsnap <args>` in the namespace. */
  run(args: string[]): Promise<CliResult>;
  close(): void;
}

async function userNamespace(repo: TempRepo, limits: { watches?: number; instances?: number }): Promise<Ns> {
  const sets = [
    limits.watches !== undefined ? `echo ${limits.watches} > /proc/sys/user/max_inotify_watches` : '',
    limits.instances !== undefined ? `echo ${limits.instances} > /proc/sys/user/max_inotify_instances` : '',
  ].filter(Boolean);
  const keeper = spawn('unshare', ['-U', '-r', '--', '/bin/sh', '-c', `${sets.join(' && ')} && echo ready && exec sleep 100000`], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    keeper.stdout.on('data', (d: Buffer) => (d.toString().includes('ready') ? resolve() : undefined));
    keeper.on('exit', (code) => reject(new Error(`the namespace keeper exited (${code})`)));
  });
  const pid = keeper.pid as number;
  return {
    pid,
    run: (args) =>
      runProcess('nsenter', ['-t', String(pid), '-U', '--', process.execPath, BIN, ...args], {
        cwd: repo.dir,
        env: { ...repo.env, ...serverEnv },
      }),
    close: () => void keeper.kill(),
  };
}

/** `agentsnap server start` in the namespace (the server it spawns stays in it). */
async function startServerIn(ns: Ns): Promise<number> {
  const res = await ns.run(['server', 'start', '--json']);
  assert.is(res.code, 0, `server start: ${res.stdout}${res.stderr}`);
  return (JSON.parse(res.stdout) as { pid: number }).pid;
}

interface WatcherJson {
  state: string;
  watches: number;
  reason: string | null;
  code: string | null;
  hint: string | null;
  fullScans: number;
  incremental: number;
  lastFullScanMs: number | null;
}
interface ServerJson {
  running: boolean;
  pid: number | null;
  watches: number | null;
  watcher: WatcherJson | null;
}

async function serverStatus(ns: Ns): Promise<ServerJson> {
  const res = await ns.run(['server', 'status', '--json']);
  assert.is(res.code, 0, res.stderr);
  return JSON.parse(res.stdout) as ServerJson;
}

/** Polls `server status` until `ok` holds (generous bound: only makes a slow run slower). */
async function statusUntil(ns: Ns, ok: (s: ServerJson) => boolean, what: string): Promise<ServerJson> {
  const deadline = Date.now() + 60_000;
  let last = await serverStatus(ns);
  while (!ok(last)) {
    if (Date.now() > deadline) assert.unreachable(`${what}: last status ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 50));
    last = await serverStatus(ns);
  }
  return last;
}

/** inotify watches the process holds, as the kernel lists them. */
function inotifyWatchesOf(pid: number): number {
  let n = 0;
  for (const fd of fs.readdirSync(`/proc/${pid}/fdinfo`)) {
    let text = '';
    try {
      text = fs.readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8');
    } catch {
      continue;
    }
    n += text.split('\n').filter((l) => l.startsWith('inotify wd:')).length;
  }
  return n;
}

/** A repository with `dirs` directories of one file each, committed. */
function manyDirs(dirs: number): TempRepo {
  const repo = tempRepo();
  for (let i = 0; i < dirs; i++) repo.write(`d${String(i).padStart(2, '0')}/f.txt`, `file ${i}\n`);
  repo.git(['add', '-A']);
  repo.git(['commit', '-qm', 'init']);
  return repo;
}

/** `snap` through the Node shim (which hands it to the server); its JSON; asserts it printed no warning. */
async function snap(ns: Ns, args: string[]): Promise<{ commit: string; step: number }> {
  const res = await ns.run(['snap', '--json', ...args]);
  assert.is(res.code, 0, `snap ${args.join(' ')}: ${res.stdout}${res.stderr}`);
  assert.is(res.stderr, '', 'no message on a call');
  return JSON.parse(res.stdout) as { commit: string; step: number };
}

/** The snapshot holds exactly what the worktree holds (a full scan's result: nothing here is ignored). */
function assertSnapshotIsWorktree(repo: TempRepo, commit: string, what: string): void {
  const tree = treeFiles(repo, commit);
  const disk = worktreeFiles(repo);
  assert.equal([...tree.keys()].sort(), [...disk.keys()].sort(), `${what}: paths`);
  for (const [p, f] of disk) assert.ok(tree.get(p)?.content.equals(f.content), `${what}: bytes of ${p}`);
}

async function stopServer(ns: Ns | null): Promise<void> {
  if (!ns) return;
  await ns.run(['server', 'stop']);
  ns.close();
}

nsTest(
  'inotify: watches run out (limit 20, 50 directories): every snapshot equals the worktree, status and doctor say so with the command that raises the limit, once, and the watches are given back',
  async () => {
    const repo = manyDirs(50);
    let ns: Ns | null = null;
    try {
      ns = await userNamespace(repo, { watches: 20 });
      const pid = await startServerIn(ns);
      const degraded = await statusUntil(ns, (s) => s.watcher?.state === 'degraded', 'the watcher degrades');
      assert.is(degraded.pid, pid);
      assert.is(degraded.watcher?.code, 'ENOSPC');
      assert.match(degraded.watcher?.reason ?? '', /inotify watches/);
      assert.match(degraded.watcher?.hint ?? '', /sudo sysctl fs\.inotify\.max_user_watches=524288/);
      assert.match(degraded.watcher?.hint ?? '', /\/etc\/sysctl\.d\//);
      // The watches it obtained before the limit are given back (other programs of this user need them).
      assert.is(degraded.watches, 0);
      assert.is(inotifyWatchesOf(pid), 0);

      // Changes everywhere, above all in directories past the first 20 (never watched).
      await snap(ns, ['--phase', 'pre', '--tool', 'Bash']);
      repo.write('d45/f.txt', 'changed in an unwatched directory\n');
      repo.write('d49/new.txt', 'new\n');
      repo.write('d50/x/y.txt', 'a new directory\n');
      repo.rm('d30/f.txt');
      repo.write('d00/f.txt', 'changed at the top\n');
      const post = await snap(ns, ['--phase', 'post']);
      assertSnapshotIsWorktree(repo, post.commit, 'first call');
      for (let round = 0; round < 3; round++) {
        await snap(ns, ['--phase', 'pre', '--tool', 'Bash']);
        repo.write(`d4${round}/f.txt`, `round ${round}\n`);
        repo.write(`d50/x/r${round}.txt`, `round ${round}\n`);
        const p = await snap(ns, ['--phase', 'post']);
        assertSnapshotIsWorktree(repo, p.commit, `round ${round}`);
      }
      // The snapshots went through the server's engine, each a full scan (the cost, measured).
      const after = await statusUntil(ns, (s) => (s.watcher?.fullScans ?? 0) >= 8, 'eight full scans reported');
      assert.is(after.watcher?.incremental, 0);
      assert.ok(typeof after.watcher?.lastFullScanMs === 'number');
      assert.is(inotifyWatchesOf(pid), 0);

      // Text: server status, status and doctor name it and the fix.
      const text = await ns.run(['server', 'status']);
      assert.match(text.stdout, /watcher: degraded/);
      assert.match(text.stdout, /sudo sysctl fs\.inotify\.max_user_watches=524288/);
      const st = await ns.run(['status', '--json']);
      assert.is(st.code, 0, st.stderr);
      const sj = JSON.parse(st.stdout) as { watcher: WatcherJson | null };
      assert.is(sj.watcher?.state, 'degraded');
      assert.match(sj.watcher?.hint ?? '', /max_user_watches=524288/);
      const stText = await ns.run(['status']);
      assert.is(stText.stdout.split('watcher: degraded').length - 1, 1, stText.stdout);
      assert.match(stText.stdout, /sudo sysctl fs\.inotify\.max_user_watches=524288/);
      const doc = await ns.run(['doctor', '--json']);
      const dj = JSON.parse(doc.stdout) as { checks: { check: string; status: string; message: string; fix?: string }[] };
      const w = dj.checks.filter((c) => c.check === 'watcher');
      assert.is(w.length, 1, doc.stdout);
      assert.is(w[0]?.status, 'problem');
      assert.match(w[0]?.fix ?? '', /sudo sysctl fs\.inotify\.max_user_watches=524288/);
      const docText = await ns.run(['doctor']);
      assert.is(docText.stdout.split('max_user_watches=524288').length - 1 >= 1, true, docText.stdout);

      // The server's log says it once, however many calls came.
      const log = fs.readFileSync(
        path.join(
          runDirOf({
            stateDir: path.join(repo.dir, '.git', 'agentsnap'),
            gitDir: path.join(repo.dir, '.git'),
            commonDir: path.join(repo.dir, '.git'),
          }),
          'server.log',
        ),
        'utf8',
      );
      assert.is(log.split('inotify watches').length - 1, 1, log);
    } finally {
      await stopServer(ns);
      repo.cleanup();
    }
  },
);

nsTest(
  'inotify: below the limit the server reports the watches it holds (as the kernel counts them) and snapshots incrementally',
  async () => {
    const repo = manyDirs(50);
    let ns: Ns | null = null;
    try {
      ns = await userNamespace(repo, { watches: 500 });
      const pid = await startServerIn(ns);
      const s = await statusUntil(ns, (x) => x.watcher?.state === 'watching' && (x.watches ?? 0) > 0, 'the watcher is up');
      // 50 directories, the top one and the sync cookies' directory.
      assert.is(s.watches, 52);
      assert.is(s.watcher?.watches, 52);
      assert.is(inotifyWatchesOf(pid), 52);
      assert.is(s.watcher?.hint, null);
      await snap(ns, ['--phase', 'pre', '--tool', 'Bash']);
      repo.write('d10/f.txt', 'changed\n');
      const post = await snap(ns, ['--phase', 'post']);
      assertSnapshotIsWorktree(repo, post.commit, 'watched');
      await statusUntil(ns, (x) => (x.watcher?.incremental ?? 0) >= 1, 'an incremental snapshot');
      const st = await ns.run(['status']);
      assert.not.match(st.stdout, /watcher/);
      const doc = await ns.run(['doctor', '--json']);
      const w = (JSON.parse(doc.stdout) as { checks: { check: string; status: string }[] }).checks.find((c) => c.check === 'watcher');
      assert.is(w?.status, 'ok');
    } finally {
      await stopServer(ns);
      repo.cleanup();
    }
  },
);

nsTest(
  'inotify: watches that run out while the server runs (new directories past the limit): the snapshot still holds them, then full scans',
  async () => {
    const repo = manyDirs(50);
    let ns: Ns | null = null;
    try {
      ns = await userNamespace(repo, { watches: 60 });
      const pid = await startServerIn(ns);
      await statusUntil(ns, (x) => x.watcher?.state === 'watching' && x.watches === 52, 'the watcher is up');
      await snap(ns, ['--phase', 'pre', '--tool', 'Bash']);
      for (let i = 0; i < 20; i++) repo.write(`n${i}/g.txt`, `new ${i}\n`);
      repo.write('d20/f.txt', 'changed too\n');
      const post = await snap(ns, ['--phase', 'post']);
      assertSnapshotIsWorktree(repo, post.commit, 'the call that ran out');
      const s = await statusUntil(ns, (x) => x.watcher?.state === 'degraded', 'the watcher degrades');
      assert.is(s.watcher?.code, 'ENOSPC');
      assert.is(s.watches, 0);
      assert.is(inotifyWatchesOf(pid), 0);
      await snap(ns, ['--phase', 'pre', '--tool', 'Bash']);
      repo.write('n19/g.txt', 'changed in a directory never watched\n');
      repo.rm('n3');
      const next = await snap(ns, ['--phase', 'post']);
      assertSnapshotIsWorktree(repo, next.commit, 'after');
    } finally {
      await stopServer(ns);
      repo.cleanup();
    }
  },
);

nsTest("inotify: two worktrees' servers share the limit: the first keeps watching, the second degrades and holds nothing", async () => {
  const first = manyDirs(30);
  const second = manyDirs(30);
  let ns: Ns | null = null;
  let ns2: Ns | null = null;
  try {
    ns = await userNamespace(first, { watches: 50 });
    // The same namespace (same limit, same user), run from the second worktree.
    const keeper = ns.pid;
    ns2 = {
      pid: keeper,
      run: (args) =>
        runProcess('nsenter', ['-t', String(keeper), '-U', '--', process.execPath, BIN, ...args], {
          cwd: second.dir,
          env: { ...second.env, ...serverEnv },
        }),
      close: () => undefined,
    };
    const pid1 = await startServerIn(ns);
    await statusUntil(ns, (x) => x.watches === 32, 'the first server watches');
    const pid2 = await startServerIn(ns2);
    const s2 = await statusUntil(ns2, (x) => x.watcher?.state === 'degraded', 'the second server degrades');
    assert.is(s2.watcher?.code, 'ENOSPC');
    assert.is(inotifyWatchesOf(pid2), 0);
    assert.is(inotifyWatchesOf(pid1), 32);
    const s1 = await serverStatus(ns);
    assert.is(s1.watcher?.state, 'watching');
    await snap(ns2, ['--phase', 'pre', '--tool', 'Bash']);
    second.write('d29/f.txt', 'changed\n');
    const post = await snap(ns2, ['--phase', 'post']);
    assertSnapshotIsWorktree(second, post.commit, 'the degraded server');
    await snap(ns, ['--phase', 'pre', '--tool', 'Bash']);
    first.write('d29/f.txt', 'changed\n');
    const post1 = await snap(ns, ['--phase', 'post']);
    assertSnapshotIsWorktree(first, post1.commit, 'the watching server');
    await statusUntil(ns, (x) => (x.watcher?.incremental ?? 0) >= 1, 'the first server snapshots incrementally');
  } finally {
    if (ns2) await ns2.run(['server', 'stop']);
    await stopServer(ns);
    first.cleanup();
    second.cleanup();
  }
});

nsTest('inotify: no inotify instance left (EMFILE): degraded with the instances limit named, snapshots equal the worktree', async () => {
  const repo = manyDirs(10);
  let ns: Ns | null = null;
  try {
    ns = await userNamespace(repo, { instances: 0 });
    await startServerIn(ns);
    const s = await statusUntil(ns, (x) => x.watcher?.state === 'degraded', 'the watcher degrades');
    assert.is(s.watcher?.code, 'EMFILE');
    assert.match(s.watcher?.hint ?? '', /sudo sysctl fs\.inotify\.max_user_instances=/);
    await snap(ns, ['--phase', 'pre', '--tool', 'Bash']);
    repo.write('d05/f.txt', 'changed\n');
    const post = await snap(ns, ['--phase', 'post']);
    assertSnapshotIsWorktree(repo, post.commit, 'EMFILE');
  } finally {
    await stopServer(ns);
    repo.cleanup();
  }
});

nsTest(
  "inotify: a wrapper's server (hosted) degrades the same way: its snapshots equal the worktree, `server status` says why",
  async () => {
    const repo = manyDirs(50);
    let ns: Ns | null = null;
    try {
      ns = await userNamespace(repo, { watches: 20 });
      const out = path.join(repo.base, 'out');
      fs.mkdirSync(out);
      const node = `"${process.execPath}" "${BIN}"`;
      // The agent: makes a call (a wrapper's engine starts at the first one), waits (bounded poll) for the engine to
      // report, edits an unwatched directory, snaps, reports.
      const script = [
        `${node} snap -m first > /dev/null`,
        `i=0; until ${node} server status --json > "${out}/status.json" && grep -q '"degraded"' "${out}/status.json"; do i=$((i+1)); [ $i -gt 600 ] && exit 9; sleep 0.1; done`,
        'echo changed > d47/f.txt',
        'mkdir -p d60 && echo new > d60/g.txt',
        `${node} snap -m edits --json > "${out}/snap.json"`,
        // The snap was the server's (its engine counts it).
        `i=0; until ${node} server status --json > "${out}/after.json" && grep -Eq '"fullScans": [1-9]' "${out}/after.json"; do i=$((i+1)); [ $i -gt 600 ] && exit 8; sleep 0.1; done`,
      ].join(' && ');
      const res = await ns.run(['wrap', '--', '/bin/sh', '-c', script]);
      assert.is(res.code, 0, `wrap: ${res.stdout}${res.stderr}`);
      assert.not.match(res.stderr, /inotify/, 'nothing printed on the way');
      const st = JSON.parse(fs.readFileSync(path.join(out, 'status.json'), 'utf8')) as ServerJson & { hosted: boolean };
      assert.is(st.hosted, true);
      assert.is(st.watcher?.code, 'ENOSPC');
      assert.is(st.watches, 0);
      assert.match(st.watcher?.hint ?? '', /max_user_watches=524288/);
      const snapped = JSON.parse(fs.readFileSync(path.join(out, 'snap.json'), 'utf8')) as { commit: string };
      assertSnapshotIsWorktree(repo, snapped.commit, 'the snap inside the wrapper');
      const heads = repo.git(['for-each-ref', '--format=%(objectname)', 'refs/agentsnap/sessions/*/head']).trim().split('\n');
      assert.is(heads.length, 1);
      const head = heads[0] ?? '';
      assertSnapshotIsWorktree(repo, head, 'the final snapshot');
    } finally {
      ns?.close();
      repo.cleanup();
    }
  },
);

test.run();
