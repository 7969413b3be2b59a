// The single door to git. Every git process agentsnap starts goes through
// runGit(), which builds a clean environment so nothing inherited from a
// surrounding git hook or agent (GIT_INDEX_FILE, GIT_DIR, ...) can redirect
// agentsnap into the user's index or another repository.
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { isUtf8 } from 'node:buffer';
import fs from 'node:fs';
import { errors } from '../errors.js';

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
    return errors.gitFailed(`could not start git: its directory ${cwd} does not exist${cwd.includes('\uFFFD') ? ' (its name is not UTF-8)' : ''}`, { cause: e, data: { cwd } });
  }
  if (e.code === 'ENOENT') return errors.gitMissing('git was not found on PATH.', { hint: 'Install git 2.30 or newer and make sure `git` is on PATH.' });
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
    throw errors.gitFailed(`git ${subcommand(args)} failed: ${stderr.trim().split('\n').slice(-1)[0] || `exit ${code}`}`, { data: { args, exitCode: code, stderr } });
  }
  return { code, stdout: res.stdout, stderr };
}

/**
 * Splits NUL-terminated git output into strings. A name that is not UTF-8 keeps
 * its bytes: each byte that is not part of a UTF-8 sequence becomes a lone
 * surrogate U+DC80..U+DCFF (Python's "surrogateescape"), so two such names stay
 * distinct, `hasRawBytes` tells them, and `pathBytes` gives git (or fs, through
 * `fsPath`) the exact name back. Plain JS string handling (JSON included) keeps them.
 */
export function splitNul(buf: Buffer): string[] {
  if (buf.length === 0) return [];
  if (isUtf8(buf)) {
    const parts = buf.toString('utf8').split('\0');
    if (parts[parts.length - 1] === '') parts.pop();
    return parts;
  }
  const parts: string[] = [];
  let start = 0;
  while (start < buf.length) {
    let end = buf.indexOf(0, start);
    if (end < 0) end = buf.length;
    parts.push(decodeName(buf.subarray(start, end)));
    start = end + 1;
  }
  return parts;
}

/** A name's bytes as a string: UTF-8, with every other byte as a lone surrogate (see splitNul). */
export function decodeName(bytes: Buffer): string {
  if (isUtf8(bytes)) return bytes.toString('utf8');
  let out = '';
  let i = 0;
  while (i < bytes.length) {
    const n = utf8SequenceLength(bytes, i);
    if (n > 0) {
      out += bytes.toString('utf8', i, i + n);
      i += n;
    } else {
      out += String.fromCharCode(0xdc00 + (bytes[i] ?? 0));
      i += 1;
    }
  }
  return out;
}

/** The length of the well-formed UTF-8 sequence at bytes[i], or 0. */
function utf8SequenceLength(bytes: Buffer, i: number): number {
  const b = bytes[i] ?? 0;
  const n = b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
  if (n === 0 || i + n > bytes.length) return 0;
  return isUtf8(bytes.subarray(i, i + n)) ? n : 0;
}

/** A lone surrogate U+DC80..U+DCFF: a byte of a name that is not UTF-8 (splitNul). */
const RAW_BYTE = /(?<![\uD800-\uDBFF])[\uDC80-\uDCFF]/;

/** Cheap first test (instant on V8's one-byte strings, i.e. every Latin-1/ASCII name); RAW_BYTE's look-behind is slow. */
const MAYBE_RAW = /[\uDC80-\uDCFF]/;

/** Whether a name from splitNul holds bytes that are not UTF-8 (Node's fs and argv would write U+FFFD for them). */
export function hasRawBytes(s: string): boolean {
  return MAYBE_RAW.test(s) && RAW_BYTE.test(s);
}

/** The exact bytes of a name from splitNul. */
export function pathBytes(s: string): Buffer {
  if (!hasRawBytes(s)) return Buffer.from(s, 'utf8');
  const parts: Buffer[] = [];
  for (const ch of s) {
    const c = ch.charCodeAt(0);
    if (ch.length === 1 && c >= 0xdc80 && c <= 0xdcff) parts.push(Buffer.from([c - 0xdc00]));
    else parts.push(Buffer.from(ch, 'utf8'));
  }
  return Buffer.concat(parts);
}

/** A path for Node's fs calls: the string itself, or its exact bytes when it holds bytes that are not UTF-8. */
export function fsPath(s: string): string | Buffer {
  return hasRawBytes(s) ? pathBytes(s) : s;
}

/** Paths as git's stdin wants them (each followed by `sep`, with `prefix`), keeping bytes that are not UTF-8. */
export function pathsInput(paths: string[], sep = '\0', prefix = ''): string | Buffer {
  const joined = prefix === '' ? paths.join(sep) + sep : paths.map((p) => `${prefix}${p}${sep}`).join('');
  if (!hasRawBytes(joined)) return joined;
  const s = Buffer.from(sep, 'utf8');
  const pre = Buffer.from(prefix, 'utf8');
  return Buffer.concat(paths.flatMap((p) => [pre, pathBytes(p), s]));
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
