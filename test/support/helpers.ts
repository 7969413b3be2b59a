// Test helpers: real git in temporary repositories with a hermetic
// environment (no global or system git config, HOME inside the temp dir).
// No process.chdir and no shared global state: every helper takes its paths.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Writable } from 'node:stream';
import { run } from '../../src/cli/main.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BIN = path.join(ROOT, 'bin', 'agentsnap.js');

/** A hermetic environment for git and agentsnap rooted at `home`. */
export function hermeticEnv(home: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('GIT_') || k.startsWith('AGENTSNAP_')) continue;
    env[k] = v;
  }
  return {
    ...env,
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, '.config'),
    // Shadow repositories (src/git/shadow.ts) are kept in the test's home, never the user's.
    XDG_STATE_HOME: path.join(home, '.local', 'state'),
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_CONFIG_SYSTEM: '/dev/null',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_AUTHOR_DATE: '',
    NO_COLOR: '1',
    // No background servers unless a test asks for one (test/server/server.test.ts).
    AGENTSNAP_SERVER: 'off',
    // And, where a test turns the server on, no wrapper leaves one behind it (test/wrap/wrap-served.test.ts does).
    AGENTSNAP_SERVER_AFTER_WRAP: '0',
    ...extra,
  };
}

export interface TempRepo {
  /** The temp directory holding home and the repository. */
  base: string;
  /** The worktree. */
  dir: string;
  home: string;
  env: NodeJS.ProcessEnv;
  /** The object format the repository was created in (see TempRepoOptions.objectFormat). */
  objectFormat: 'sha1' | 'sha256';
  /** Runs git in the repo (or `cwd`), throws on failure, returns stdout. */
  git(args: string[], opts?: { cwd?: string; input?: string; env?: Record<string, string> }): string;
  /** Like git() but returns the whole result. */
  gitRaw(
    args: string[],
    opts?: { cwd?: string; input?: string; env?: Record<string, string> },
  ): { status: number; stdout: string; stderr: string };
  write(rel: string, content: string | Buffer, mode?: number): void;
  read(rel: string): Buffer;
  exists(rel: string): boolean;
  rm(rel: string): void;
  cleanup(): void;
}

/** A user identity for the repository's own commits (agentsnap needs none). */
export const USER_IDENTITY = {
  GIT_AUTHOR_NAME: 'Test User',
  GIT_AUTHOR_EMAIL: 'user@example.com',
  GIT_COMMITTER_NAME: 'Test User',
  GIT_COMMITTER_EMAIL: 'user@example.com',
};

export interface TempRepoOptions {
  /** Create an initial commit with these files. */
  files?: Record<string, string>;
  /** Skip `git init` (for tests of non-repositories). */
  noInit?: boolean;
  /** The repository's object format; default AGENTSNAP_TEST_OBJECT_FORMAT, else git's (sha1). */
  objectFormat?: 'sha1' | 'sha256';
}

/** The object format tests create repositories in: AGENTSNAP_TEST_OBJECT_FORMAT=sha256 runs a test file against sha256 repositories. */
export function testObjectFormat(): 'sha1' | 'sha256' {
  return process.env.AGENTSNAP_TEST_OBJECT_FORMAT === 'sha256' ? 'sha256' : 'sha1';
}

/** Temp dirs of this process not cleaned up yet: removed when the run is interrupted (SIGINT, SIGTERM, SIGHUP). */
const liveTempDirs = new Set<string>();
let signalCleanup = false;

/** Kills (SIGKILL) the processes whose working directory is under `dir` and waits, bounded, until they are gone (Linux /proc; elsewhere nothing). */
export function stopProcessesIn(dir: string): void {
  let pids: number[] = [];
  try {
    pids = fs
      .readdirSync('/proc')
      .filter((n) => /^\d+$/.test(n))
      .map(Number)
      .filter((pid) => {
        if (pid === process.pid) return false;
        try {
          const cwd = fs.readlinkSync(`/proc/${pid}/cwd`);
          return cwd === dir || cwd.startsWith(`${dir}/`);
        } catch {
          return false;
        }
      });
  } catch {
    return;
  }
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  const gone = (pid: number) => {
    try {
      return /^\S+ \(.*\) [ZX] /.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
    } catch {
      return true;
    }
  };
  const until = Date.now() + 10_000;
  while (pids.some((p) => !gone(p)) && Date.now() < until) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
}

/** Registers a temp dir to remove if the test process is stopped by a signal before its own cleanup. */
export function removeOnSignal(dir: string): () => void {
  liveTempDirs.add(dir);
  if (!signalCleanup) {
    signalCleanup = true;
    for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
      process.once(sig, () => {
        for (const d of liveTempDirs) fs.rmSync(d, { recursive: true, force: true });
        liveTempDirs.clear();
        // Our handler is gone (once): the signal's default action ends the process as it would have.
        process.kill(process.pid, sig);
      });
    }
  }
  return () => {
    liveTempDirs.delete(dir);
  };
}

export function tempRepo(opts: TempRepoOptions = {}): TempRepo {
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'agentsnap-test-')));
  const forget = removeOnSignal(base);
  const home = path.join(base, 'home');
  const dir = path.join(base, 'repo');
  fs.mkdirSync(home);
  fs.mkdirSync(dir);
  const objectFormat = opts.objectFormat ?? testObjectFormat();
  // A repository the test itself creates with `git init` (a nested one, a clone's target) gets the same format.
  const env = hermeticEnv(home, objectFormat === 'sha256' ? { GIT_DEFAULT_HASH: 'sha256' } : {});
  const gitRaw: TempRepo['gitRaw'] = (args, o = {}) => {
    const r = spawnSync('git', args, {
      cwd: o.cwd ?? dir,
      env: { ...env, ...USER_IDENTITY, ...(o.env ?? {}) },
      input: o.input,
      encoding: 'utf8',
      maxBuffer: 256 * 1024 * 1024,
    });
    return { status: r.status ?? 128, stdout: r.stdout, stderr: r.stderr };
  };
  const git: TempRepo['git'] = (args, o) => {
    const r = gitRaw(args, o);
    if (r.status !== 0) throw new Error(`git ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
    return r.stdout;
  };
  const repo: TempRepo = {
    base,
    dir,
    home,
    env,
    objectFormat,
    git,
    gitRaw,
    write(rel, content, mode) {
      const abs = path.join(dir, rel);
      fs.mkdirSync(path.dirname(abs), { recursive: true });
      fs.writeFileSync(abs, content);
      if (mode !== undefined) fs.chmodSync(abs, mode);
    },
    read: (rel) => fs.readFileSync(path.join(dir, rel)),
    exists: (rel) => {
      try {
        fs.lstatSync(path.join(dir, rel));
        return true;
      } catch {
        return false;
      }
    },
    rm: (rel) => fs.rmSync(path.join(dir, rel), { recursive: true, force: true }),
    cleanup: () => {
      // A detached process agentsnap started (the end-of-session pack, a background check) may still be writing
      // into the repository: it is stopped first (its directory is in there), then rmSync retries what it finds
      // not empty (bounded, with a growing delay).
      stopProcessesIn(base);
      fs.rmSync(base, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 });
      forget();
    },
  };
  if (!opts.noInit) {
    git(['init', '-q', '-b', 'main', `--object-format=${objectFormat}`]);
    if (opts.files) {
      for (const [rel, content] of Object.entries(opts.files)) repo.write(rel, content);
      git(['add', '-A']);
      git(['commit', '-q', '-m', 'initial']);
    }
  }
  return repo;
}

class Sink extends Writable {
  chunks: Buffer[] = [];
  isTTY = false;
  override _write(chunk: Buffer | string, _enc: BufferEncoding, cb: () => void): void {
    this.chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
    cb();
  }
  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI in-process (fast); cwd and env are passed in, never taken from the process. */
export async function cli(
  repo: Pick<TempRepo, 'dir' | 'env'>,
  args: string[],
  opts: { cwd?: string; env?: Record<string, string> } = {},
): Promise<CliResult> {
  const stdout = new Sink();
  const stderr = new Sink();
  const code = await run(args, { stdout, stderr, env: { ...repo.env, ...(opts.env ?? {}) }, cwd: opts.cwd ?? repo.dir });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

/** Runs the built executable as a separate process (for concurrency and end-to-end tests). */
export function cliProcess(
  repo: Pick<TempRepo, 'dir' | 'env'>,
  args: string[],
  opts: {
    cwd?: string;
    env?: Record<string, string>;
    input?: string /** SIGTERM after this long (tests that run real agents). */;
    timeoutMs?: number;
  } = {},
): Promise<CliResult> {
  return runProcess(process.execPath, [BIN, ...args], {
    cwd: opts.cwd ?? repo.dir,
    env: { ...repo.env, ...(opts.env ?? {}) },
    input: opts.input ?? '',
    ...(opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}),
  });
}

/**
 * A PATH on which `agentsnap` and `agentsnap-hook` are this checkout's, as a
 * global install puts them (the hooks `init` writes call them from PATH).
 */
export function agentsnapOnPath(base: string): string {
  const binDir = path.join(base, 'bin');
  fs.mkdirSync(binDir, { recursive: true });
  fs.symlinkSync(BIN, path.join(binDir, 'agentsnap'));
  fs.symlinkSync(path.join(path.dirname(BIN), 'agentsnap-hook'), path.join(binDir, 'agentsnap-hook'));
  return `${binDir}${path.delimiter}${process.env.PATH ?? ''}`;
}

/** Runs any program asynchronously (a server in this very process may have to answer it), collecting its output. */
export function runProcess(
  file: string,
  args: string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv; input?: string | null; timeoutMs?: number },
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      cwd: opts.cwd,
      env: opts.env,
      stdio: [opts.input === null ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      ...(opts.timeoutMs ? { timeout: opts.timeoutMs } : {}),
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout?.on('data', (d: Buffer) => out.push(d));
    child.stderr?.on('data', (d: Buffer) => err.push(d));
    child.on('error', reject);
    child.on('close', (code) =>
      resolve({ code: code ?? 128, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') }),
    );
    // A program may exit without reading its input (a hook client that falls back to a stand-in): no EPIPE crash.
    child.stdin?.on('error', () => {});
    child.stdin?.end(opts.input ?? '');
  });
}

/** Bytes of the user's index (to assert it is never changed). */
export function indexBytes(repo: TempRepo): Buffer | null {
  const gitDir = repo.git(['rev-parse', '--absolute-git-dir']).trim();
  try {
    return fs.readFileSync(path.join(gitDir, 'index'));
  } catch {
    return null;
  }
}

/** The files of a snapshot commit: path -> { mode, content }. */
export function treeFiles(repo: TempRepo, commit: string): Map<string, { mode: string; content: Buffer }> {
  const out = new Map<string, { mode: string; content: Buffer }>();
  const ls = repo.git(['ls-tree', '-r', '-z', commit]);
  for (const rec of ls.split('\0').filter(Boolean)) {
    const tab = rec.indexOf('\t');
    const [mode, type, oid] = rec.slice(0, tab).split(' ');
    const p = rec.slice(tab + 1);
    let content = Buffer.alloc(0);
    if (type === 'blob') {
      const r = spawnSync('git', ['cat-file', 'blob', oid ?? ''], { cwd: repo.dir, env: repo.env });
      content = r.stdout;
    } else {
      content = Buffer.from(oid ?? '');
    }
    out.set(p, { mode: mode ?? '', content });
  }
  return out;
}

/** Files in the worktree as a snapshot would hold them, for comparison with treeFiles (ignores .git). */
export function worktreeFiles(
  repo: TempRepo,
  skip: (rel: string) => boolean = () => false,
): Map<string, { mode: string; content: Buffer }> {
  const out = new Map<string, { mode: string; content: Buffer }>();
  const walk = (rel: string) => {
    for (const name of fs.readdirSync(path.join(repo.dir, rel))) {
      const r = rel ? `${rel}/${name}` : name;
      if (r === '.git' || skip(r)) continue;
      const st = fs.lstatSync(path.join(repo.dir, r));
      if (st.isDirectory()) walk(r);
      else if (st.isSymbolicLink()) out.set(r, { mode: '120000', content: Buffer.from(fs.readlinkSync(path.join(repo.dir, r))) });
      else out.set(r, { mode: st.mode & 0o100 ? '100755' : '100644', content: fs.readFileSync(path.join(repo.dir, r)) });
    }
  };
  walk('');
  return out;
}

export function refsUnder(repo: TempRepo, prefix: string): Map<string, string> {
  const out = new Map<string, string>();
  const text = repo.git(['for-each-ref', '--format=%(refname) %(objectname)', prefix]);
  for (const line of text.split('\n').filter(Boolean)) {
    const [ref, oid] = line.split(' ');
    if (ref && oid) out.set(ref, oid);
  }
  return out;
}

/** The id of the repository's only session (tests that start exactly one). */
export function sessionOf(repo: TempRepo): string {
  return [...refsUnder(repo, 'refs/agent/').keys()][0]!.split('/')[2]!;
}

/** One tool call through the CLI: pre snapshot, the change, post snapshot. Returns the step number. */
export async function step(repo: TempRepo, change: () => void, tool = 'Bash'): Promise<number> {
  const pre = await cli(repo, ['snap', '--phase', 'pre', '--tool', tool, '-q']);
  if (pre.code !== 0) throw new Error(`snap --phase pre exited ${pre.code}: ${pre.stderr}`);
  change();
  const post = await cli(repo, ['snap', '--phase', 'post', '-q']);
  if (post.code !== 0) throw new Error(`snap --phase post exited ${post.code}: ${post.stderr}`);
  return Number(pre.stdout.trim());
}

/**
 * Waits until the clock is past `ms` (epoch milliseconds): a condition on the clock, not a race with work, for
 * tests that need a file's timestamps behind a snapshot's start or outside a racy margin.
 */
export async function untilClockPast(ms: number): Promise<void> {
  while (Date.now() <= ms) await new Promise((r) => setTimeout(r, Math.max(1, Math.min(50, ms + 1 - Date.now()))));
}
