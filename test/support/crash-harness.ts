// The crash harness (test/safety/crash.test.ts): runs an agentsnap command as its own
// process group, SIGKILLs it at a seeded random moment, and checks what a
// crash must never break. Two kinds of kill, as a real crash leaves them:
// the whole group (git children die too and may leave git lock files), or
// only agentsnap's node process (its git children run on, orphaned; the
// harness waits for them as the next command would meet them).
//
// Standalone: `AGENTSNAP_CRASH_TRIALS=500 npm test -- crash` (trials per
// operation), `AGENTSNAP_CRASH_SEED=<n>` to replay one run.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { BIN, type CliResult, type TempRepo } from './helpers.js';
import { readJournal } from '../../src/session/journal.js';

/** mulberry32: a small seeded generator, so a failing run can be replayed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface KillOutcome {
  /** Whether the process was still running when the kill came (else it finished first). */
  killed: boolean;
  mode: 'group' | 'process';
  delayMs: number;
  result: CliResult | null;
}

/** Processes (not zombies) whose process group is pgid (Linux /proc). */
function groupMembers(pgid: number): number[] {
  const out: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue;
    }
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // rest[0] = state, rest[2] = pgrp
    if (rest[0] !== 'Z' && Number(rest[2]) === pgid) out.push(Number(name));
  }
  return out;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until no live process is left in the group (orphaned git children finish on their own). */
export async function waitForGroup(pgid: number, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (groupMembers(pgid).length > 0) {
    if (Date.now() > deadline) {
      try {
        process.kill(-pgid, 'SIGKILL');
      } catch {
        /* gone */
      }
      throw new Error(`processes of group ${pgid} still running after ${timeoutMs} ms`);
    }
    await sleep(10);
  }
}

/** Runs `agentsnap args` in its own process group and SIGKILLs it after delayMs. */
export function runAndKill(
  repo: Pick<TempRepo, 'dir' | 'env'>,
  args: string[],
  opts: { cwd?: string; delayMs: number; mode: 'group' | 'process' },
): Promise<KillOutcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: opts.cwd ?? repo.dir,
      env: repo.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => err.push(d));
    let killed = false;
    let exited = false;
    const timer = setTimeout(() => {
      if (exited) return;
      killed = true;
      try {
        process.kill(opts.mode === 'group' ? -child.pid! : child.pid!, 'SIGKILL');
      } catch {
        /* it just finished */
      }
    }, opts.delayMs);
    child.on('error', reject);
    child.on('exit', () => {
      exited = true;
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const pgid = child.pid!;
      waitForGroup(pgid).then(
        () =>
          resolve({
            killed: killed && signal === 'SIGKILL',
            mode: opts.mode,
            delayMs: opts.delayMs,
            result:
              signal === 'SIGKILL'
                ? null
                : { code: code ?? 128, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') },
          }),
        reject,
      );
    });
  });
}

// ---------------------------------------------------------------------------
// What a crash must never break

function hashOf(format: 'sha1' | 'sha256', parts: Buffer[]): string {
  const h = createHash(format);
  for (const p of parts) h.update(p);
  return h.digest('hex');
}

/** The git tree id of a set of files (as worktreeFiles returns them) in a repository of `format`, computed without writing anything. */
export function treeOid(files: Map<string, { mode: string; content: Buffer }>, format: 'sha1' | 'sha256' = 'sha1'): string {
  interface Dir {
    files: Map<string, { mode: string; oid: string }>;
    dirs: Map<string, Dir>;
  }
  const root: Dir = { files: new Map(), dirs: new Map() };
  for (const [rel, f] of files) {
    const parts = rel.split('/');
    let d = root;
    for (const part of parts.slice(0, -1)) {
      let next = d.dirs.get(part);
      if (!next) d.dirs.set(part, (next = { files: new Map(), dirs: new Map() }));
      d = next;
    }
    const oid = hashOf(format, [Buffer.from(`blob ${f.content.length}\0`), f.content]);
    d.files.set(parts[parts.length - 1]!, { mode: f.mode, oid });
  }
  const write = (d: Dir): string => {
    const entries: { name: string; key: string; mode: string; oid: string }[] = [];
    for (const [name, f] of d.files) entries.push({ name, key: name, mode: f.mode, oid: f.oid });
    for (const [name, sub] of d.dirs) entries.push({ name, key: `${name}/`, mode: '40000', oid: write(sub) });
    entries.sort((a, b) => Buffer.compare(Buffer.from(a.key), Buffer.from(b.key)));
    const body = Buffer.concat(entries.map((e) => Buffer.concat([Buffer.from(`${e.mode} ${e.name}\0`), Buffer.from(e.oid, 'hex')])));
    return hashOf(format, [Buffer.from(`tree ${body.length}\0`), body]);
  };
  return write(root);
}

function git(repo: TempRepo, args: string[]): { status: number; stdout: string; stderr: string } {
  const r = spawnSync('git', args, { cwd: repo.dir, env: repo.env, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  return { status: r.status ?? 128, stdout: r.stdout, stderr: r.stderr };
}

/** Commits reachable from agentsnap's refs. */
export function agentCommits(repo: TempRepo): Set<string> {
  const r = git(repo, ['rev-list', '--glob=refs/agent', '--glob=refs/agentsnap']);
  if (r.status !== 0) throw new Error(`rev-list failed: ${r.stderr}`);
  return new Set(r.stdout.split('\n').filter(Boolean));
}

/** Trees of every commit reachable from agentsnap's refs. */
export function agentTrees(repo: TempRepo): Set<string> {
  const r = git(repo, ['log', '--format=%T', '--glob=refs/agent', '--glob=refs/agentsnap']);
  if (r.status !== 0) throw new Error(`log failed: ${r.stderr}`);
  return new Set(r.stdout.split('\n').filter(Boolean));
}

/** Problems right after a kill: fsck, refs, journals, git lock files agentsnap's git may leave. Empty when healthy. */
export function integrityProblems(repo: TempRepo): string[] {
  const problems: string[] = [];
  const fsck = git(repo, ['fsck', '--no-progress', '--no-dangling']);
  if (fsck.status !== 0 || /error|missing|broken|corrupt|bad /i.test(fsck.stdout + fsck.stderr)) {
    problems.push(`git fsck: exit ${fsck.status}: ${(fsck.stdout + fsck.stderr).trim().slice(0, 500)}`);
  }
  const refs = git(repo, ['for-each-ref', '--format=%(objecttype) %(refname)', 'refs/agent', 'refs/agentsnap']);
  for (const line of refs.stdout.split('\n').filter(Boolean)) {
    if (!line.startsWith('commit ')) problems.push(`ref is not a commit: ${line}`);
  }
  const sessions = path.join(repo.dir, '.git', 'agentsnap', 'sessions');
  for (const id of fs.existsSync(sessions) ? fs.readdirSync(sessions) : []) {
    const j = path.join(sessions, id, 'journal.jsonl');
    if (!fs.existsSync(j)) continue;
    const read = readJournal(j);
    if (read.corruptLines.length > 0) problems.push(`journal of ${id}: corrupt lines ${read.corruptLines.join(', ')}`);
  }
  return problems;
}

/** git lock files still present (after the next command ran, none may be left). */
export function gitLockFiles(repo: TempRepo): string[] {
  const gitDir = path.join(repo.dir, '.git');
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
      const abs = path.join(dir, name);
      const st = fs.lstatSync(abs);
      if (st.isDirectory()) walk(abs);
      else if (name.endsWith('.lock')) out.push(path.relative(gitDir, abs));
    }
  };
  walk(path.join(gitDir, 'refs'));
  for (const f of ['index.lock', 'packed-refs.lock', 'config.lock', 'HEAD.lock']) if (fs.existsSync(path.join(gitDir, f))) out.push(f);
  const sessions = path.join(gitDir, 'agentsnap', 'sessions');
  for (const id of fs.existsSync(sessions) ? fs.readdirSync(sessions) : []) {
    if (fs.existsSync(path.join(sessions, id, 'index.lock'))) out.push(`agentsnap/sessions/${id}/index.lock`);
  }
  return out;
}

/** Whether a session's journal ends in a torn line. */
export function tornTail(repo: TempRepo, id: string): boolean {
  return readJournal(path.join(repo.dir, '.git', 'agentsnap', 'sessions', id, 'journal.jsonl')).tornTail;
}
