// A session's first snapshot spends most of its time in one `git status` of
// the whole worktree (~0.3 s at 100k files), and a Node process that has
// just started spends ~0.1 s loading the CLI before it gets there. So the
// executable (bin/agentsnap.js) starts that status first, for `snap` and a
// pre-tool hook on the Node path, on the user's own index without taking
// its lock. The snapshot takes the output only where it would have run the
// very same command on a fresh, byte-identical copy of that index (same
// repository, the user's index unchanged since, the same arguments:
// takeStatusPrefetch); anything else kills it unused. Imports only small
// modules: it runs before the CLI is loaded.
import fs from 'node:fs';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { cleanGitEnv } from '../git/run.js';
import { snapshotStatusArgs } from '../git/status-args.js';
import { statKey } from '../base/fsutil.js';

interface StatusPrefetch {
  gitDir: string;
  worktree: string;
  /** statKey of the user's index when the status started. */
  indexKey: string;
  args: string;
  child: ChildProcess;
  /** The status output, or null if git failed. */
  stdout: Promise<Buffer | null>;
}

// One process, one prefetch: the executable's and the CLI bundle's copies of this module share it.
const KEY = Symbol.for('agentsnap.statusPrefetch');
type Holder = { [KEY]?: StatusPrefetch };

function realpath(p: string): string | null {
  try {
    return fs.realpathSync(p);
  } catch {
    return null; /* gone: no match, the prefetch is not taken (an optimisation only) */
  }
}

/** The worktree around `cwd` and its git dir, found as git finds them (a `.git` directory or `gitdir:` file). */
function findRepo(cwd: string): { worktree: string; gitDir: string } | null {
  let dir = cwd;
  for (;;) {
    const dotGit = path.join(dir, '.git');
    const st = fs.statSync(dotGit, { throwIfNoEntry: false });
    if (st?.isDirectory()) return { worktree: dir, gitDir: dotGit };
    if (st?.isFile()) {
      const m = /^gitdir: (.*)$/m.exec(fs.readFileSync(dotGit, 'utf8'));
      return m?.[1] ? { worktree: dir, gitDir: path.resolve(dir, m[1].trim()) } : null;
    }
    const up = path.dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
}

/** Starts the status (see above); does nothing where it could not be used or the environment points git elsewhere. */
export function startStatusPrefetch(cwd: string, env: NodeJS.ProcessEnv): void {
  try {
    // Switched off, the server's absence writes the index back: the status then builds git's untracked cache, which this one cannot.
    if (/^(0|off|false|no)$/i.test(env.AGENTSNAP_SERVER ?? '') || process.platform !== 'linux') return;
    if (env.GIT_DIR || env.GIT_WORK_TREE || env.GIT_INDEX_FILE || env.GIT_COMMON_DIR || env.AGENTSNAP_WORKTREE) return;
    const found = findRepo(cwd);
    const gitDir = found && realpath(found.gitDir);
    const worktree = found && realpath(found.worktree);
    if (!gitDir || !worktree) return;
    const index = path.join(gitDir, 'index');
    if (!fs.existsSync(index)) return;
    const indexKey = statKey(index);
    const args = snapshotStatusArgs(false);
    // As Repo.git() runs git: the cleaned environment (no optional locks: the user's index is not written), GIT_DIR and GIT_WORK_TREE bound.
    const child = spawn('git', args, {
      cwd: worktree,
      env: { ...cleanGitEnv(env), GIT_DIR: gitDir, GIT_WORK_TREE: worktree },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const chunks: Buffer[] = [];
    let warned = false;
    child.stdout?.on('data', (d: Buffer) => chunks.push(d));
    // Anything on stderr (a directory git could not read, which it reports nowhere else): the snapshot runs its own status.
    child.stderr?.on('data', () => (warned = true));
    const stdout = new Promise<Buffer | null>((resolve) => {
      child.on('error', () => resolve(null));
      child.on('close', (code) => resolve(code === 0 && !warned ? Buffer.concat(chunks) : null));
    });
    (globalThis as Holder)[KEY] = { gitDir, worktree, indexKey, args: args.join('\0'), child, stdout };
  } catch {
    /* an optimisation only */
  }
}

/**
 * The prefetched output of `args` for this repository when the user's index
 * still has `userIndexKey` (it was seeded from that version); null when
 * there is none or it does not fit (then it is killed). Taken once.
 */
export function takeStatusPrefetch(
  repo: { gitDir: string; worktree: string },
  userIndexKey: string,
  args: string[],
): Promise<Buffer | null> | null {
  const holder = globalThis as Holder;
  const p = holder[KEY];
  if (!p) return null;
  delete holder[KEY];
  const fits =
    p.gitDir === realpath(repo.gitDir) &&
    p.worktree === realpath(repo.worktree) &&
    p.indexKey === userIndexKey &&
    p.args === args.join('\0');
  if (fits && statKey(path.join(p.gitDir, 'index')) === userIndexKey) return p.stdout;
  p.child.kill();
  return null;
}

/** Kills a prefetch nothing took (a command that took another path). */
export function dropStatusPrefetch(): void {
  const holder = globalThis as Holder;
  holder[KEY]?.child.kill();
  delete holder[KEY];
}
