// git/ (above base/): git processes (this file is the only place one starts),
// plumbing, in-process objects, index files, long-lived git processes, the
// opened repository (repo.ts), git config → Settings (config.ts) and the data
// shapes every layer above shares (types.ts). Knows git and where agentsnap's
// state dir is; must not import sessions, journals or snapshots.
//
// The single door to git. Every git process agentsnap starts goes through
// runGit(), which builds a clean environment so nothing inherited from a
// surrounding git hook or agent (GIT_INDEX_FILE, GIT_DIR, ...) can redirect
// agentsnap into the user's index or another repository.
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import fs from 'node:fs';
import { errors } from '../base/errors.js';
// Names that are not UTF-8 (see base/names.ts): kept here too, where git's output is split.
export { decodeName, fsPath, hasRawBytes, pathBytes, pathsInput, splitNul } from '../base/names.js';

/** Variables from the caller's environment that are safe to pass on to git. */
const KEPT_GIT_VARS = new Set([
  'GIT_CONFIG_GLOBAL',
  'GIT_CONFIG_SYSTEM',
  'GIT_CONFIG_NOSYSTEM',
  'GIT_EXEC_PATH',
  'GIT_CEILING_DIRECTORIES',
  'GIT_DISCOVERY_ACROSS_FILESYSTEM',
  'GIT_SSH',
  'GIT_SSH_COMMAND',
  'GIT_SSH_VARIANT',
  'GIT_ASKPASS',
  'GIT_TERMINAL_PROMPT',
  'GIT_TRACE',
  'GIT_TRACE2',
  'GIT_TRACE2_EVENT',
  'GIT_TRACE2_PERF',
  'GIT_TRACE_PERFORMANCE',
  'GIT_HTTP_USER_AGENT',
  'GIT_SSL_NO_VERIFY',
  'GIT_SSL_CAINFO',
]);

/** The fixed identity every agentsnap commit carries (see hooks: exact recognition). */
export const AGENTSNAP_NAME = 'agentsnap';
export const AGENTSNAP_EMAIL = 'agentsnap@agentsnap.invalid';

/** A copy of `base` with every git-redirecting variable removed. */
export function cleanGitEnv(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(base)) {
    if (value === undefined) continue;
    if (key.startsWith('GIT_') && !KEPT_GIT_VARS.has(key)) continue;
    env[key] = value;
  }
  // Never take optional locks: a read-only command must not refresh (rewrite) the user's index.
  env.GIT_OPTIONAL_LOCKS = '0';
  env.GIT_TERMINAL_PROMPT = '0';
  // Messages agentsnap recognises are English; paths are bytes either way.
  env.LC_ALL = 'C';
  env.LANGUAGE = 'C';
  return env;
}

export interface GitOptions {
  /** Working directory for the process. */
  cwd: string;
  /** Environment to start from: already cleaned by the caller (see GitContext). */
  env: NodeJS.ProcessEnv;
  /** Extra variables on top of env (e.g. GIT_INDEX_FILE for the private index). */
  extraEnv?: Record<string, string>;
  /** Data written to stdin. */
  input?: string | Buffer;
  /** Exit codes that are not failures (besides 0). */
  okCodes?: number[];
}

export interface GitResult {
  code: number;
  stdout: Buffer;
  stderr: string;
}

/** Listeners told of every git process agentsnap starts (tests count them: "nothing changed" must start none). */
const spawnListeners = new Set<(args: string[], cwd: string) => void>();

/** Calls `listener` with the arguments of every git process started from now on; returns the unsubscribe function. */
export function onGitSpawn(listener: (args: string[], cwd: string) => void): () => void {
  spawnListeners.add(listener);
  return () => spawnListeners.delete(listener);
}

function notifySpawn(args: string[], cwd: string): void {
  for (const l of spawnListeners) l(args, cwd);
}

/**
 * Starts a long-lived git process (cat-file --batch, check-ignore --stdin)
 * with the same clean environment as runGit; the caller talks to its stdio
 * and must end it (stdin.end() or kill()).
 */
export function spawnGit(args: string[], opts: Omit<GitOptions, 'input' | 'okCodes'>): ChildProcessWithoutNullStreams {
  const env = opts.extraEnv ? { ...opts.env, ...opts.extraEnv } : opts.env;
  notifySpawn(args, opts.cwd);
  return spawn('git', args, { cwd: opts.cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
}

/** Why git could not be started: ENOENT is also what a missing working directory gives (a name that is not UTF-8 turned into U+FFFD, say). */
function spawnFailure(e: NodeJS.ErrnoException, cwd: string): Error {
  if (e.code === 'ENOENT' && !fs.existsSync(cwd)) {
    return errors.gitFailed(
      `could not start git: its directory ${cwd} does not exist${cwd.includes('\uFFFD') ? ' (its name is not UTF-8)' : ''}`,
      { cause: e, data: { cwd } },
    );
  }
  if (e.code === 'ENOENT')
    return errors.gitMissing('git was not found on PATH.', { hint: 'Install git 2.30 or newer and make sure `git` is on PATH.' });
  return errors.gitFailed(`could not start git: ${e.message}`, { cause: e });
}

/** Runs git and collects its output; throws GitFailed on unexpected exit codes. */
export function runGit(args: string[], opts: GitOptions): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    const env = opts.extraEnv ? { ...opts.env, ...opts.extraEnv } : opts.env;
    notifySpawn(args, opts.cwd);
    const child = spawn('git', args, { cwd: opts.cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => err.push(d));
    child.on('error', (e: NodeJS.ErrnoException) => reject(spawnFailure(e, opts.cwd)));
    child.stdin.on('error', () => {
      /* git may exit before reading all input; its exit code tells what happened */
    });
    child.on('close', (code, signal) => {
      const stdout = Buffer.concat(out);
      const stderr = Buffer.concat(err).toString('utf8');
      const exit = code ?? 128;
      if (exit === 0 || opts.okCodes?.includes(exit)) {
        resolve({ code: exit, stdout, stderr });
        return;
      }
      const first = stderr.trim().split('\n').filter(Boolean).slice(-3).join(' / ');
      reject(
        errors.gitFailed(`git ${subcommand(args)} failed${signal ? ` (${signal})` : ''}: ${first || `exit ${exit}`}`, {
          data: { args, exitCode: exit, stderr },
        }),
      );
    });
    if (opts.input !== undefined) child.stdin.end(opts.input);
    else child.stdin.end();
  });
}

/** The git command of an argument list, past `-c key=value` and other leading options. */
function subcommand(args: string[]): string {
  for (let i = 0; i < args.length; i++) {
    const a = args[i] ?? '';
    if (a === '-c' || a === '-C') i++;
    else if (!a.startsWith('-')) return a;
  }
  return args[0] ?? '';
}

/**
 * Runs git synchronously with its stdout going straight into an open file
 * descriptor (restoring a large blob without buffering it in Node).
 */
export function runGitToFdSync(args: string[], opts: Pick<GitOptions, 'cwd' | 'env'>, fd: number): void {
  notifySpawn(args, opts.cwd);
  const res = spawnSync('git', args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', fd, 'pipe'], maxBuffer: 16 * 1024 * 1024 });
  if (res.error) {
    throw spawnFailure(res.error as NodeJS.ErrnoException, opts.cwd);
  }
  if (res.status !== 0) {
    const stderr = res.stderr?.toString('utf8') ?? '';
    throw errors.gitFailed(`git ${args[0] ?? ''} failed: ${stderr.trim().split('\n').slice(-1)[0] || `exit ${res.status ?? res.signal}`}`, {
      data: { args, exitCode: res.status, stderr },
    });
  }
}

/** Runs git synchronously and returns its stdout (small outputs: a config listing); throws GitFailed like runGit. */
export function runGitSync(args: string[], opts: GitOptions): GitResult {
  const env = opts.extraEnv ? { ...opts.env, ...opts.extraEnv } : opts.env;
  notifySpawn(args, opts.cwd);
  const res = spawnSync('git', args, { cwd: opts.cwd, env, input: opts.input, maxBuffer: 64 * 1024 * 1024 });
  if (res.error) {
    throw spawnFailure(res.error as NodeJS.ErrnoException, opts.cwd);
  }
  const code = res.status ?? 128;
  const stderr = res.stderr?.toString('utf8') ?? '';
  if (code !== 0 && !opts.okCodes?.includes(code)) {
    throw errors.gitFailed(`git ${subcommand(args)} failed: ${stderr.trim().split('\n').slice(-1)[0] || `exit ${code}`}`, {
      data: { args, exitCode: code, stderr },
    });
  }
  return { code, stdout: res.stdout, stderr };
}

/** Splits paths into groups whose command-line size stays well under ARG_MAX. */
export function* argChunks(paths: string[], maxBytes = 64 * 1024): Generator<string[]> {
  let chunk: string[] = [];
  let bytes = 0;
  for (const p of paths) {
    const len = Buffer.byteLength(p) + 1;
    if (chunk.length > 0 && bytes + len > maxBytes) {
      yield chunk;
      chunk = [];
      bytes = 0;
    }
    chunk.push(p);
    bytes += len;
  }
  if (chunk.length > 0) yield chunk;
}
