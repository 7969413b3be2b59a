// What peers do per tool call, as baselines sampled in the same interleaved
// loop as agentsnap and raw git:
// - Claude Code's own checkpoints: copy each file the call is about to write
//   into a backup directory first (in-process; a new file has nothing to copy).
// - Cline and Gemini CLI: a shadow repository, its own git dir outside the
//   project with core.worktree pointed at it, `git add -A` + `git commit`.
// - isomorphic-git: the same snapshot in-process (what a Node tool without git
//   would do): statusMatrix, add/remove of what differs from its index, commit.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { git, timed, type BenchEnv, type Cmd, type Subject } from './measure.js';
import type { Change } from './changes.js';
import type { BenchRepo } from './repos.js';

export const BACKUP = 'backup copy';
export const SHADOW = 'shadow repo';
export const ISOGIT = 'isomorphic-git';

/** Claude Code's file-history checkpoint: a copy of each file before the tool writes it; nothing for a file that does not exist yet. */
export function backupSubject(repo: BenchRepo, env: BenchEnv, change: Change): Subject {
  const dir = path.join(env.base, `file-history-${repo.size}`);
  fs.mkdirSync(dir, { recursive: true });
  let version = 0;
  return {
    name: BACKUP,
    prepare: () => change.prepare(BACKUP),
    run: (i) => {
      const t0 = process.hrtime.bigint();
      version++;
      for (const rel of change.targets(BACKUP, i)) {
        const abs = path.join(repo.dir, rel);
        const name = `${crypto.createHash('sha256').update(abs).digest('hex').slice(0, 16)}@v${version}`;
        try {
          fs.copyFileSync(abs, path.join(dir, name));
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e; // a new file: Claude Code records "did not exist"
        }
      }
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      change.apply(BACKUP, i);
      return ms;
    },
  };
}

/**
 * A warm shadow repository: its own git dir in the bench's temp dir,
 * core.worktree = the repository. Seeded once from the repository (a copy of
 * its index, its objects as alternates) so the bench need not write every
 * file as a loose object first; from then on each sample is exactly the
 * peers' per-call work: `git add -A`, `git commit --allow-empty --no-verify`.
 */
export function shadowSubject(repo: BenchRepo, env: BenchEnv, change: Change): Subject {
  const gitDir = path.join(env.base, `shadow-${repo.size}.git`);
  const cmd = (args: string[]): Cmd => ({ file: 'git', args: [`--git-dir=${gitDir}`, ...args], cwd: repo.dir, env: env.env });
  // Seeded afresh for each row: the repository's store (its alternate) may have been pruned since.
  fs.rmSync(gitDir, { recursive: true, force: true });
  {
    git(env, env.base, ['init', '-q', '--bare', gitDir]);
    git(env, env.base, [`--git-dir=${gitDir}`, 'config', 'core.bare', 'false']);
    git(env, env.base, [`--git-dir=${gitDir}`, 'config', 'core.worktree', repo.dir]);
    fs.writeFileSync(path.join(gitDir, 'objects', 'info', 'alternates'), `${path.join(repo.dir, '.git', 'objects')}\n`);
    fs.copyFileSync(path.join(repo.dir, '.git', 'index'), path.join(gitDir, 'index'));
  }
  const snapshot = () => timed([cmd(['add', '-A']), cmd(['commit', '-q', '--allow-empty', '--no-verify', '-m', 'checkpoint'])]).ms;
  snapshot(); // warm: the shadow's first commit
  return {
    name: SHADOW,
    prepare: (i) => {
      change.prepare(SHADOW);
      change.apply(SHADOW, i);
    },
    run: snapshot,
  };
}

/** Above these, a warm-up isomorphic-git sample means few runs (said in the output and the table). */
export const ISOGIT_SLOW_MS = 3000;
export const ISOGIT_SLOW_RUNS = 3;
export const ISOGIT_VERY_SLOW_MS = 15_000;

/** A warm isomorphic-git in a child process (bench/isogit-worker.ts); ends with the bench. */
let lastWorker: ChildProcess | null = null;

function isogitWorker(init: { dir: string; gitdir: string }): { run(): Promise<number> } {
  // One at a time: each holds a whole index and its caches.
  lastWorker?.kill();
  const child = fork(fileURLToPath(new URL('./isogit-worker.ts', import.meta.url)), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  lastWorker = child;
  // Unreferenced between requests so the bench can exit; referenced while one is pending.
  const channel = (child as unknown as { channel?: { ref(): void; unref(): void } }).channel;
  child.unref();
  channel?.unref();
  let pending: { resolve: (m: { ms?: number; error?: string }) => void; reject: (e: Error) => void } | null = null;
  child.on('message', (m) => {
    const p = pending;
    pending = null;
    channel?.unref();
    p?.resolve(m as { ms?: number; error?: string });
  });
  child.on('exit', () => {
    const p = pending;
    pending = null;
    p?.reject(new Error('the isomorphic-git worker exited'));
  });
  const ask = (msg: object) =>
    new Promise<{ ms?: number; error?: string }>((resolve, reject) => {
      pending = { resolve, reject };
      channel?.ref();
      child.send(msg);
    });
  const ready = ask({ op: 'init', init });
  return {
    async run() {
      await ready;
      const res = await ask({ op: 'run' });
      if (res.error !== undefined || res.ms === undefined) throw new Error(`isomorphic-git failed: ${res.error ?? 'no answer'}`);
      return res.ms;
    },
  };
}

/**
 * isomorphic-git, in-process in a warm worker process of its own, on the real file system: its
 * own git dir (in the temp dir) whose objects/ is a link to the repository's
 * object store and whose index starts as a copy of the repository's, kept
 * warm across samples (one cache object, the index refreshed by the walk).
 */
export function isogitSubject(repo: BenchRepo, env: BenchEnv, change: Change, log: (s: string) => void): Subject {
  const gitdir = path.join(env.base, `isogit-${repo.size}.git`);
  // Seeded afresh for each row: its commits live only in the repository's store, which may have been pruned since.
  fs.rmSync(gitdir, { recursive: true, force: true });
  {
    fs.mkdirSync(path.join(gitdir, 'refs', 'heads'), { recursive: true });
    fs.symlinkSync(path.join(repo.dir, '.git', 'objects'), path.join(gitdir, 'objects'));
    fs.writeFileSync(path.join(gitdir, 'HEAD'), 'ref: refs/heads/main\n');
    fs.writeFileSync(path.join(gitdir, 'config'), '[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n');
    fs.writeFileSync(path.join(gitdir, 'refs', 'heads', 'main'), `${git(env, repo.dir, ['rev-parse', 'HEAD']).trim()}\n`);
    fs.copyFileSync(path.join(repo.dir, '.git', 'index'), path.join(gitdir, 'index'));
  }
  const worker = isogitWorker({ dir: repo.dir, gitdir });
  let limit = Infinity;
  return {
    name: ISOGIT,
    prepare: (i) => {
      change.prepare(ISOGIT);
      change.apply(ISOGIT, i);
    },
    maxRuns: () => limit,
    run: async (i) => {
      const ms = await worker.run();
      if (i < 0 && ms > ISOGIT_SLOW_MS && limit === Infinity) {
        limit = ms > ISOGIT_VERY_SLOW_MS ? 1 : ISOGIT_SLOW_RUNS;
        log(`    isomorphic-git's warm-up sample took ${(ms / 1000).toFixed(1)} s: ${limit} timed run${limit > 1 ? 's' : ''} of it here`);
      }
      return ms;
    },
  };
}
