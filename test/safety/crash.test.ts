// Crash safety: SIGKILL at seeded random moments during snap, undo, redo,
// apply, discard and gc (see test/support/crash-harness.ts). After each kill:
// git fsck clean, every agentsnap ref a commit, journals readable, the user's
// index byte-identical; then the next command works with no manual repair,
// leaves no git lock file behind, completes what was interrupted, and no
// content that was in the worktree or in any snapshot is gone.
//
// A few trials per operation in the default run (CI); many more with
// `AGENTSNAP_CRASH_TRIALS=500 npm test -- crash`. Replay a run with
// AGENTSNAP_CRASH_SEED=<seed> (printed in every failure).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import {
  cli,
  cliProcess,
  indexBytes,
  refsUnder,
  tempRepo,
  worktreeFiles,
  type CliResult,
  type TempRepo,
  sessionOf,
} from '../support/helpers.js';
import {
  agentCommits,
  agentTrees,
  gitLockFiles,
  integrityProblems,
  runAndKill,
  seededRandom,
  tornTail,
  treeOid,
} from '../support/crash-harness.js';
import { openRepo } from '../../src/git/repo.js';
import { startWorktreeSession } from '../../src/worktrees/worktree.js';

const TRIALS = Number(process.env.AGENTSNAP_CRASH_TRIALS ?? 4);
const SEED = Number(process.env.AGENTSNAP_CRASH_SEED ?? 20240611);
const FILES = 120;

type Files = Map<string, { mode: string; content: Buffer }>;

/** A repository with FILES committed files in a few directories. */
function bigRepo(): TempRepo {
  const files: Record<string, string> = {};
  for (let i = 0; i < FILES; i++) files[`d${i % 6}/f${i}.txt`] = `file ${i}\n`.repeat(20);
  return tempRepo({ files });
}

/** Changes n seeded-random files of dir (edit, create or delete). */
function churn(dir: string, rnd: () => number, n: number, tag: string): void {
  for (let k = 0; k < n; k++) {
    const i = Math.floor(rnd() * FILES);
    const rel = `d${i % 6}/f${i}.txt`;
    const abs = path.join(dir, rel);
    const r = rnd();
    if (r < 0.15 && fs.existsSync(abs)) fs.rmSync(abs);
    else {
      fs.mkdirSync(path.dirname(abs), { recursive: true });
      fs.writeFileSync(abs, `${tag} ${k} ${r}\n`.repeat(1 + Math.floor(r * 50)));
    }
  }
  fs.mkdirSync(path.join(dir, 'new'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'new', `${tag}.txt`), `${tag}\n`);
}

function sameFiles(a: Files, b: Files): boolean {
  return treeOid(a) === treeOid(b);
}

/** The paths on which two file sets differ (for failure messages). */
function diffFiles(a: Files, b: Files): string {
  const out: string[] = [];
  for (const [p, f] of a) if (!b.has(p) || !b.get(p)!.content.equals(f.content) || b.get(p)!.mode !== f.mode) out.push(p);
  for (const p of b.keys()) if (!a.has(p)) out.push(`-${p}`);
  return out.slice(0, 10).join(', ');
}

async function ok(p: Promise<CliResult>, what: string): Promise<CliResult> {
  const r = await p;
  assert.is(r.code, 0, `${what}: ${r.stderr}`);
  return r;
}

interface Trial {
  /** Label for failures: operation, trial, seed, kill mode and delay. */
  label: string;
  /** Duration estimate of an unkilled run, to place the kill inside it. */
  estimateMs: number;
}

/** Kills `args` at a random moment and checks everything that must hold right after. */
async function killAndCheck(repo: TempRepo, args: string[], rnd: () => number, t: Trial, cwd?: string): Promise<string> {
  const mode = rnd() < 0.5 ? 'group' : 'process';
  // Node needs ~100 ms before agentsnap does anything; a few kills land there, most inside the work.
  const delayMs = Math.floor(rnd() * t.estimateMs * 1.1);
  const index = indexBytes(repo);
  const out = await runAndKill(repo, args, { delayMs, mode, ...(cwd ? { cwd } : {}) });
  const label = `${t.label} kill=${mode}@${delayMs}ms${out.killed ? '' : ' (finished first)'}`;
  if (out.result) assert.ok(out.result.code === 0, `${label}: unkilled run failed: ${out.result.stderr}`);
  assert.equal(integrityProblems(repo), [], `${label}: integrity after the kill`);
  assert.ok(index === null ? indexBytes(repo) === null : index.equals(indexBytes(repo)!), `${label}: the user's index changed`);
  assert.not.ok(fs.existsSync(path.join(repo.dir, '.git', 'index.lock')), `${label}: index.lock of the user's index`);
  return label;
}

/** Checks after the next (recovery) command ran. */
function checkAfter(
  repo: TempRepo,
  label: string,
  before: { index: Buffer | null; commits: Set<string>; worktree: Files; wtDir: string },
  session?: string,
): void {
  assert.equal(integrityProblems(repo), [], `${label}: integrity after the next command`);
  assert.equal(gitLockFiles(repo), [], `${label}: git lock files left after the next command`);
  const index = indexBytes(repo);
  assert.ok(before.index === null ? index === null : before.index.equals(index!), `${label}: the user's index changed`);
  if (session) assert.not.ok(tornTail(repo, session), `${label}: the torn journal tail was not repaired`);
  const commits = agentCommits(repo);
  const lost = [...before.commits].filter((c) => !commits.has(c));
  assert.equal(lost, [], `${label}: snapshots no longer reachable from agentsnap's refs`);
  // The worktree as it was before the killed command is still here or in a snapshot.
  const trees = agentTrees(repo);
  const wtNow = fs.existsSync(before.wtDir) ? treeOid(worktreeFiles({ dir: before.wtDir } as TempRepo), repo.objectFormat) : null;
  const want = treeOid(before.worktree, repo.objectFormat);
  assert.ok(wtNow === want || trees.has(want), `${label}: the worktree before the command is neither on disk nor in any snapshot`);
}

function snapshotBefore(repo: TempRepo, wtDir = repo.dir) {
  return { index: indexBytes(repo), commits: agentCommits(repo), worktree: worktreeFiles({ dir: wtDir } as TempRepo), wtDir };
}

/** Runs a command unkilled and returns its duration (the next kill's estimate). */
async function timed(p: () => Promise<CliResult>): Promise<{ r: CliResult; ms: number }> {
  const t0 = Date.now();
  const r = await p();
  return { r, ms: Date.now() - t0 };
}

test(`crash: snap killed at random moments (${TRIALS} trials)`, async () => {
  const repo = bigRepo();
  const rnd = seededRandom(SEED);
  try {
    await ok(cli(repo, ['snap', '-m', 'start']), 'first snap');
    const id = sessionOf(repo);
    let estimateMs = 600;
    for (let i = 0; i < TRIALS; i++) {
      churn(repo.dir, rnd, 20, `snap${i}`);
      const before = snapshotBefore(repo);
      const label = await killAndCheck(repo, ['snap', '-m', `trial ${i}`], rnd, { label: `snap trial ${i} seed ${SEED}`, estimateMs });
      const next = await timed(() => cliProcess(repo, ['snap', '-m', `after ${i}`]));
      assert.is(next.r.code, 0, `${label}: the next snap: ${next.r.stderr}`);
      estimateMs = Math.max(300, next.ms);
      checkAfter(repo, label, before, id);
      // The worktree was not changed by a snapshot, and the latest one holds it.
      assert.ok(sameFiles(worktreeFiles(repo), before.worktree), `${label}: snap changed the worktree`);
      const log = await cli(repo, ['log', '--json']);
      assert.is(log.code, 0, `${label}: log: ${log.stderr}`);
    }
  } finally {
    repo.cleanup();
  }
});

test(`crash: undo and redo killed at random moments are completed by the next run (${TRIALS} trials each)`, async () => {
  const repo = bigRepo();
  const rnd = seededRandom(SEED + 1);
  try {
    await ok(cli(repo, ['snap', '-m', 'start']), 'first snap');
    const id = sessionOf(repo);
    let estimateMs = 800;
    for (let i = 0; i < TRIALS; i++) {
      // One tool call that changes many files; undo it.
      const pre = await ok(cli(repo, ['snap', '--phase', 'pre', '--tool', 'Bash', '-q']), 'pre');
      const step = Number(pre.stdout.trim());
      const beforeCall = worktreeFiles(repo);
      churn(repo.dir, rnd, 40, `undo${i}`);
      await ok(cli(repo, ['snap', '--phase', 'post', '--step', String(step), '-q']), 'post');
      const afterCall = worktreeFiles(repo);

      let before = snapshotBefore(repo);
      let label = await killAndCheck(repo, ['undo', String(step)], rnd, { label: `undo ${step} trial ${i} seed ${SEED + 1}`, estimateMs });
      // Running the same undo again completes the interrupted one (or does it, if the kill came first).
      let next = await timed(() => cliProcess(repo, ['undo', String(step)]));
      assert.ok(
        next.r.code === 0 || /NothingToDo|nothing to undo/i.test(next.r.stderr),
        `${label}: the next undo: ${next.r.code} ${next.r.stderr}`,
      );
      estimateMs = Math.max(400, next.ms);
      checkAfter(repo, label, before, id);
      assert.ok(
        sameFiles(worktreeFiles(repo), beforeCall),
        `${label}: the worktree is not the state before step ${step}: ${diffFiles(worktreeFiles(repo), beforeCall)}; next undo said: ${next.r.stdout} ${next.r.stderr}`,
      );
      const status = JSON.parse((await ok(cli(repo, ['status', '--json']), 'status')).stdout) as { interrupted: number[] };
      assert.equal(status.interrupted, [], `${label}: an operation is still interrupted`);

      before = snapshotBefore(repo);
      label = await killAndCheck(repo, ['redo'], rnd, { label: `redo trial ${i} seed ${SEED + 1}`, estimateMs });
      next = await timed(() => cliProcess(repo, ['redo']));
      assert.ok(next.r.code === 0 || /nothing to redo/i.test(next.r.stderr), `${label}: the next redo: ${next.r.code} ${next.r.stderr}`);
      checkAfter(repo, label, before, id);
      assert.ok(
        sameFiles(worktreeFiles(repo), afterCall),
        `${label}: the worktree is not the state after step ${step}: ${diffFiles(worktreeFiles(repo), afterCall)}; next redo said: ${next.r.stdout} ${next.r.stderr}`,
      );
    }
  } finally {
    repo.cleanup();
  }
});

/** A worktree session (started from the user's worktree as it is) with changes in a snapshot and some not yet snapshotted. */
async function agentSession(repo: TempRepo, id: string, rnd: () => number): Promise<string> {
  const r = await openRepo(repo.dir, { env: repo.env });
  const wt = (await startWorktreeSession(r, { session: id })).meta.path;
  churn(wt, rnd, 15, id);
  await ok(cli(repo, ['snap', '--session', id, '-m', 'agent work'], { cwd: wt }), 'agent snap');
  fs.writeFileSync(path.join(wt, `unsnapshotted-${id}.txt`), `${id}\n`);
  return wt;
}

test(`crash: apply killed at random moments; applying again completes it (${TRIALS} trials)`, async () => {
  const repo = bigRepo();
  const rnd = seededRandom(SEED + 2);
  try {
    let estimateMs = 900;
    for (let i = 0; i < TRIALS; i++) {
      const id = `apply-${i}`;
      const wt = await agentSession(repo, id, rnd);
      await ok(cli(repo, ['snap', '--session', id, '-m', 'more'], { cwd: wt }), 'agent snap');
      const expected = worktreeFiles({ dir: wt } as TempRepo);
      const before = snapshotBefore(repo);
      const label = await killAndCheck(repo, ['apply', id], rnd, { label: `apply trial ${i} seed ${SEED + 2}`, estimateMs });
      const next = await timed(() => cliProcess(repo, ['apply', id]));
      assert.is(next.r.code, 0, `${label}: the next apply: ${next.r.stderr}`);
      estimateMs = Math.max(500, next.ms);
      checkAfter(repo, label, before);
      assert.ok(
        sameFiles(worktreeFiles(repo), expected),
        `${label}: the worktree is not the applied result: ${diffFiles(worktreeFiles(repo), expected)}; next apply said: ${next.r.stdout} ${next.r.stderr}`,
      );
      // The target worktree's state before apply is kept by a safety snapshot (or nothing was written).
      assert.ok(refsUnder(repo, 'refs/agentsnap/safety/').size > 0, `${label}: no safety snapshot`);
    }
  } finally {
    repo.cleanup();
  }
});

test(`crash: discard killed at random moments; discarding again completes it, nothing of the worktree is lost (${TRIALS} trials)`, async () => {
  const repo = bigRepo();
  const rnd = seededRandom(SEED + 3);
  try {
    let estimateMs = 900;
    for (let i = 0; i < TRIALS; i++) {
      const id = `discard-${i}`;
      const wt = await agentSession(repo, id, rnd);
      const before = snapshotBefore(repo, wt);
      const label = await killAndCheck(repo, ['discard', id], rnd, { label: `discard trial ${i} seed ${SEED + 3}`, estimateMs });
      const next = await timed(() => cliProcess(repo, ['discard', id]));
      assert.is(next.r.code, 0, `${label}: the next discard: ${next.r.stderr}`);
      estimateMs = Math.max(500, next.ms);
      checkAfter(repo, label, before, id);
      assert.not.ok(fs.existsSync(wt), `${label}: the worktree is still there`);
      const sessions = JSON.parse((await ok(cli(repo, ['sessions', '--json']), 'sessions')).stdout) as { id: string; status: string }[];
      assert.is(sessions.find((s) => s.id === id)?.status, 'discarded', label);
      assert.not.ok(repo.git(['worktree', 'list', '--porcelain']).includes(wt), `${label}: git still lists the worktree`);
    }
  } finally {
    repo.cleanup();
  }
});

test(`crash: gc killed at random moments; gc again finishes, other sessions intact (${TRIALS} trials)`, async () => {
  const repo = bigRepo();
  const rnd = seededRandom(SEED + 4);
  try {
    await ok(cli(repo, ['snap', '-m', 'kept session']), 'snap');
    const kept = sessionOf(repo);
    let estimateMs = 900;
    for (let i = 0; i < TRIALS; i++) {
      const id = `gc-${i}`;
      await agentSession(repo, id, rnd);
      await ok(cli(repo, ['discard', id]), 'discard');
      churn(repo.dir, rnd, 5, `gc${i}`);
      await ok(cli(repo, ['snap', '-m', `kept ${i}`]), 'snap');
      const dropped = new Set(refsUnder(repo, `refs/agent/${id}/`).values());
      for (const c of repo
        .git(['rev-list', '--glob=refs/agentsnap/sessions/' + id])
        .split('\n')
        .filter(Boolean))
        dropped.add(c);
      const before = snapshotBefore(repo);
      for (const c of before.commits) if (dropped.has(c)) before.commits.delete(c);
      const label = await killAndCheck(repo, ['gc'], rnd, { label: `gc trial ${i} seed ${SEED + 4}`, estimateMs });
      const next = await timed(() => cliProcess(repo, ['gc']));
      assert.is(next.r.code, 0, `${label}: the next gc: ${next.r.stderr}`);
      estimateMs = Math.max(500, next.ms);
      checkAfter(repo, label, before);
      assert.is(
        refsUnder(repo, `refs/agent/${id}/`).size,
        0,
        `${label}: the discarded session's refs are left: ${[...refsUnder(repo, `refs/agent/${id}/`).keys()].join(' ')}; ${fs.readdirSync(path.join(repo.dir, '.git', 'agentsnap', 'sessions')).join(' ')}; gc said ${next.r.stdout} ${next.r.stderr}`,
      );
      assert.not.ok(fs.existsSync(path.join(repo.dir, '.git', 'agentsnap', 'sessions', id)), `${label}: its state is left`);
      const after = await cliProcess(repo, ['snap', '--session', kept, '-m', `after gc ${i}`]);
      assert.is(after.code, 0, `${label}: snap after gc: ${after.stderr}`);
    }
  } finally {
    repo.cleanup();
  }
});

test.run();
