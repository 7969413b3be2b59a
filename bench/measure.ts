// Measurement primitives: a hermetic environment, timed processes, peak
// memory of a Node process, and interleaved sampling so that every subject
// compared in one row shares the machine's noise.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const BIN = path.join(ROOT, 'bin', 'agentsnap.js');
const RSS_PROBE = path.join(ROOT, 'bench', 'rss-probe.mjs');

export interface BenchEnv {
  /** Temp directory holding HOME; removed by dispose(). */
  base: string;
  env: NodeJS.ProcessEnv;
  dispose(): void;
}

/** Hermetic git: no global or system config, HOME in a temp dir, nothing inherited from GIT_* or AGENTSNAP_* (but AGENTSNAP_SERVER). */
export function benchEnv(): BenchEnv {
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'agentsnap-bench-')));
  const home = path.join(base, 'home');
  fs.mkdirSync(home);
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    // AGENTSNAP_SERVER=off passes through, to compare the hooks with and without the warm server;
    // AGENTSNAP_SERVER_TRACE too (the server's log then says what each snapshot did and waited for).
    if (
      k.startsWith('GIT_') ||
      (k.startsWith('AGENTSNAP_') && k !== 'AGENTSNAP_SERVER' && k !== 'AGENTSNAP_SERVER_TRACE') ||
      k === 'NODE_OPTIONS'
    )
      continue;
    env[k] = v;
  }
  Object.assign(env, {
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, '.config'),
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_CONFIG_SYSTEM: '/dev/null',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_AUTHOR_NAME: 'Bench User',
    GIT_AUTHOR_EMAIL: 'bench@example.com',
    GIT_COMMITTER_NAME: 'Bench User',
    GIT_COMMITTER_EMAIL: 'bench@example.com',
    GIT_AUTHOR_DATE: '2024-01-01T00:00:00Z',
    GIT_COMMITTER_DATE: '2024-01-01T00:00:00Z',
    NO_COLOR: '1',
    LC_ALL: 'C',
  });
  return { base, env, dispose: () => fs.rmSync(base, { recursive: true, force: true }) };
}

export interface Cmd {
  file: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  input?: string;
  /** Kill the command after this long and fail (hook commands: Claude Code's own timeout). */
  timeoutMs?: number;
}

/** Thrown when the bench is interrupted (Ctrl-C, SIGTERM, or a child killed by a signal): cleanup runs, no figures. */
export class Interrupted extends Error {
  constructor(why: string) {
    super(`interrupted: ${why}`);
  }
}

let interruptedBy: string | null = null;

/** Records a signal; the run stops at the next sample boundary (see `checkpoint`). */
export function markInterrupted(signal: string): void {
  interruptedBy = signal;
}

/**
 * Lets pending signal handlers run (every child is spawned synchronously, so
 * Node only sees a SIGTERM between samples) and stops the run if one came.
 */
export async function checkpoint(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  if (interruptedBy) throw new Interrupted(interruptedBy);
}

function exec(cmd: Cmd): { stdout: string; stderr: string } {
  const r = spawnSync(cmd.file, cmd.args, {
    cwd: cmd.cwd,
    env: cmd.env,
    input: cmd.input ?? '',
    encoding: 'utf8',
    maxBuffer: 512 * 1024 * 1024,
    // With a timeout the command gets its own process group, so a timeout kills whatever it started too.
    ...(cmd.timeoutMs ? { timeout: cmd.timeoutMs, killSignal: 'SIGKILL' as const, detached: true } : {}),
  });
  if (r.error && (r.error as NodeJS.ErrnoException).code === 'ETIMEDOUT') {
    try {
      process.kill(-r.pid, 'SIGKILL');
    } catch {
      /* the group is gone */
    }
    throw new Error(`${path.basename(cmd.file)} ${cmd.args.join(' ')} did not finish within ${(cmd.timeoutMs ?? 0) / 1000} s: killed`);
  }
  if (r.error) throw r.error;
  // Ctrl-C reaches the whole process group: a child killed by it ends the run.
  if (r.signal) throw new Interrupted(`${path.basename(cmd.file)} ${cmd.args.slice(0, 3).join(' ')} killed by ${r.signal}`);
  if (r.status !== 0) {
    throw new Error(`${path.basename(cmd.file)} ${cmd.args.join(' ')} failed (exit ${r.status}): ${r.stderr.trim()}`);
  }
  return { stdout: r.stdout, stderr: r.stderr };
}

/** Runs a command untimed (setup) and returns its stdout; throws on a non-zero exit. */
export function run(cmd: Cmd): string {
  return exec(cmd).stdout;
}

/** Runs git untimed (setup) and returns its stdout. */
export function git(env: BenchEnv, cwd: string, args: string[], input?: string): string {
  return exec({ file: 'git', args, cwd, env: env.env, ...(input !== undefined ? { input } : {}) }).stdout;
}

/** Runs the commands one after the other and returns the wall time in ms; the last command's stdout and all stderr too. */
export function timed(cmds: Cmd[]): { ms: number; stdout: string; stderr: string } {
  let stdout = '';
  let stderr = '';
  const t0 = process.hrtime.bigint();
  for (const c of cmds) {
    const r = exec(c);
    stdout = r.stdout;
    stderr += r.stderr;
  }
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, stdout, stderr };
}

/** A command that runs the real agentsnap CLI as its own Node process. */
export function agentsnapCmd(env: BenchEnv, cwd: string, args: string[], extraEnv: Record<string, string> = {}): Cmd {
  return { file: process.execPath, args: [BIN, ...args], cwd, env: { ...env.env, ...extraEnv } };
}

/**
 * Peak memory (max RSS, in MiB) of a Node process running `cmd`, taken by a
 * preloaded probe that reports process.resourceUsage() at exit. Run outside
 * the timed samples, so the probe costs no measured time.
 */
export function peakRssMiB(env: BenchEnv, cmd: Cmd): number {
  const out = path.join(env.base, `rss-${process.pid}-${Date.now()}`);
  exec({ ...cmd, args: ['--import', pathToFileUrl(RSS_PROBE), ...cmd.args], env: { ...cmd.env, AGENTSNAP_BENCH_RSS_FILE: out } });
  const kib = Number(fs.readFileSync(out, 'utf8'));
  fs.rmSync(out, { force: true });
  return kib / 1024;
}

/**
 * Peak memory (MiB) of every Node process a command starts, whatever starts
 * it (a hook command run through /bin/sh): the probe is preloaded through
 * NODE_OPTIONS and each process writes its own figure. Null when the command
 * started no Node process. Untimed.
 */
export function peakRssOfNodeChildren(cmd: Cmd): { maxMiB: number | null; processes: number } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentsnap-bench-rss-'));
  try {
    exec({ ...cmd, env: { ...cmd.env, NODE_OPTIONS: `--import ${pathToFileUrl(RSS_PROBE)}`, AGENTSNAP_BENCH_RSS_DIR: dir } });
    const figures = fs.readdirSync(dir).map((f) => Number(fs.readFileSync(path.join(dir, f), 'utf8')) / 1024);
    return { maxMiB: figures.length ? Math.max(...figures) : null, processes: figures.length };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function pathToFileUrl(p: string): string {
  return new URL(`file://${p}`).href;
}

export function median(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** One thing measured in a row: `prepare` runs untimed before each sample, `run` returns the sample in ms. */
export interface Subject {
  name: string;
  prepare?: (i: number) => void;
  run: (i: number) => number | Promise<number>;
  /** How many timed samples this subject takes at most (asked each round, so it can follow its warm-up). */
  maxRuns?: () => number;
}

/**
 * Samples every subject `runs` times after `warmup` untimed rounds,
 * interleaved and in a rotating order (A B C, B C A, ...), so drift and
 * background load hit all of them alike. Returns samples by subject name.
 */
export async function interleave(subjects: Subject[], runs: number, warmup = 1): Promise<Map<string, number[]>> {
  const samples = new Map<string, number[]>(subjects.map((s) => [s.name, []]));
  for (let round = -warmup; round < runs; round++) {
    const k = ((round % subjects.length) + subjects.length) % subjects.length;
    const order = [...subjects.slice(k), ...subjects.slice(0, k)];
    for (const s of order) {
      if (round >= 0 && s.maxRuns && round >= s.maxRuns()) continue;
      await checkpoint();
      s.prepare?.(round);
      const ms = await s.run(round);
      if (round >= 0) samples.get(s.name)?.push(ms);
    }
  }
  return samples;
}
