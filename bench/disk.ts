// Disk growth after N one-file steps through the hook commands (issue 7):
// the object store's size before and after (du, apparent and block size;
// `git count-objects -v`), after the session ended through Claude Code's
// SessionEnd hook (agentsnap's maintenance packs its objects then), compared
// with a reference: the zlib-compressed size of every distinct blob and tree
// the session added (objects reachable from its refs and not from HEAD: the
// changed blobs and the trees on their paths). Also: nothing stray is left
// in objects/ (tmp_obj_*, *.pack.tmp, …) and no *.lock in the refs.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { checkpoint, git, type BenchEnv } from './measure.js';
import { endClaudeSession, installClaudeHooks, recordedSteps, toolCall, type HookSetup } from './hooks.js';
import { serverStatus, stopServer, vmHwmMiB, type ServerInfo } from './server.js';
import { removeAgentsnapState, type BenchRepo } from './repos.js';

/** One hook call slower than this: 1/10 of the steps, extrapolated (issue 7's brief). */
export const DISK_SLOW_CALL_MS = 200;
/** Projected wall time of the steps above which 1/10 of them are run and extrapolated, so a default run stays short. */
export const DISK_BUDGET_MS = 150_000;
/** At this size and above, slow hook calls skip the scenario unless it was asked for with --only. */
const DISK_SKIP_SIZE = 100_000;
export const DISK_TARGET_RATIO = 2;

export interface StoreSize {
  apparentBytes: number;
  blockBytes: number;
  countObjects: Record<string, number>;
}

export interface DiskResult {
  kind: 'disk';
  size: number;
  /** Steps asked for (--disk-steps). */
  requestedSteps: number;
  /** Steps actually run; figures marked extrapolated are scaled by requestedSteps / steps. */
  steps: number;
  /** Why fewer steps ran (or why the scenario was skipped); null when all ran. */
  reduced: string | null;
  skipped: boolean;
  /** Mean wall time of one hook call (pre or post) of the session's second tool call, ms. */
  callMs: number;
  /** Wall time of all steps, ms. */
  stepsMs: number;
  before: StoreSize | null;
  after: StoreSize | null;
  /** Measured growth (not extrapolated). */
  growthApparentBytes: number;
  growthBlockBytes: number;
  /** Compressed size of the distinct blobs and trees the session added (not extrapolated). */
  reference: { blobs: number; blobBytes: number; trees: number; treeBytes: number; commits: number; commitBytes: number; bytes: number };
  /** growthBlockBytes / reference.bytes. */
  ratio: number;
  /** Files in objects/ after the run that git does not put there and that were not there before. */
  stray: string[];
  /** *.lock files in the refs after the run. */
  locks: string[];
  server: ServerInfo | null;
  serverRssMiB: number | null;
}

const OBJECT_FILE =
  /^(?:[0-9a-f]{2}\/[0-9a-f]{38}|pack\/pack-[0-9a-f]{40}\.(?:pack|idx|rev|bitmap|keep|mtimes|promisor)|info\/(?:packs|alternates|commit-graph|commit-graphs\/.+))$/;

function walk(dir: string, rel = ''): string[] {
  let out: string[] = [];
  for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) out = out.concat(walk(dir, r));
    else out.push(r);
  }
  return out;
}

function du(dir: string, apparent: boolean): number {
  const r = spawnSync('du', ['-s', '-B1', ...(apparent ? ['--apparent-size'] : []), dir], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`du ${dir} failed: ${r.stderr}`);
  return Number(r.stdout.split(/\s/)[0]);
}

export function storeSize(env: BenchEnv, repo: BenchRepo): StoreSize {
  const objects = path.join(repo.dir, '.git', 'objects');
  const countObjects = Object.fromEntries(
    git(env, repo.dir, ['count-objects', '-v'])
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        const [k = '', v = ''] = l.split(': ');
        return [k, Number(v)];
      }),
  );
  return { apparentBytes: du(objects, true), blockBytes: du(objects, false), countObjects };
}

/** Compressed size of the objects reachable from `tips` and not from HEAD, by type (zlib, as git stores a loose object). */
export function referenceSize(env: BenchEnv, repo: BenchRepo, tips: string[]): DiskResult['reference'] {
  const ref = { blobs: 0, blobBytes: 0, trees: 0, treeBytes: 0, commits: 0, commitBytes: 0, bytes: 0 };
  if (!tips.length) return ref;
  // HEAD's tree too: the session's baseline is a root commit, so HEAD as a commit alone would exclude none of its objects.
  const oids = git(env, repo.dir, ['rev-list', '--objects', '--stdin', '--not', 'HEAD', 'HEAD^{tree}'], `${tips.join('\n')}\n`)
    .split('\n')
    .map((l) => l.slice(0, 40))
    .filter((l) => /^[0-9a-f]{40}$/.test(l));
  const r = spawnSync('git', ['cat-file', '--batch'], { cwd: repo.dir, env: env.env, input: `${oids.join('\n')}\n`, maxBuffer: 1 << 30 });
  if (r.status !== 0) throw new Error(`git cat-file --batch failed: ${r.stderr.toString()}`);
  const out = r.stdout;
  let at = 0;
  while (at < out.length) {
    const nl = out.indexOf(0x0a, at);
    const [, type = '', sizeText = '0'] = out.subarray(at, nl).toString().split(' ');
    const size = Number(sizeText);
    const body = out.subarray(nl + 1, nl + 1 + size);
    at = nl + 1 + size + 1;
    const bytes = zlib.deflateSync(Buffer.concat([Buffer.from(`${type} ${size}\0`), body])).length;
    if (type === 'blob') ref.blobs++, (ref.blobBytes += bytes);
    else if (type === 'tree') ref.trees++, (ref.treeBytes += bytes);
    else if (type === 'commit') ref.commits++, (ref.commitBytes += bytes);
  }
  ref.bytes = ref.blobBytes + ref.treeBytes;
  return ref;
}

function lockFiles(repo: BenchRepo): string[] {
  const gitDir = path.join(repo.dir, '.git');
  const locks = walk(gitDir, 'refs').filter((f) => f.endsWith('.lock'));
  if (fs.existsSync(path.join(gitDir, 'packed-refs.lock'))) locks.push('packed-refs.lock');
  return locks;
}

/** Tracked files to edit, one per step, spread over the repository (each step a different file while there are enough). */
function stepFiles(env: BenchEnv, repo: BenchRepo): string[] {
  return git(env, repo.dir, ['ls-files', '-z'])
    .split('\0')
    .filter((f) => f && f.includes('/') && !f.startsWith('.'));
}

export interface DiskOptions {
  steps: number;
  /** The scenario was named in --only: run it even where it is slow. */
  explicit: boolean;
  log: (s: string) => void;
}

// biome-ignore lint/complexity/noExcessiveLinesPerFunction: one measured run read top to bottom: set-up, N steps, then each size measured in the order the report prints it.
export async function diskGrowth(repo: BenchRepo, env: BenchEnv, opts: DiskOptions): Promise<DiskResult> {
  stopServer(env, repo.dir);
  removeAgentsnapState(repo, env);
  const setup: HookSetup = installClaudeHooks(repo, env, 'Edit');
  const sessionId = `bench-disk-${repo.size}-${process.pid}`;
  const files = stepFiles(env, repo);
  const originals = new Map<string, string>();
  const edit = (n: number) => {
    const rel = files[(n * 7919) % files.length] as string;
    const abs = path.join(repo.dir, rel);
    const text = fs.readFileSync(abs, 'utf8');
    if (!originals.has(rel)) originals.set(rel, text);
    fs.writeFileSync(abs, `${text}// step ${n} ${process.hrtime.bigint()}\n`);
    return rel;
  };
  const step = (n: number) => {
    const rel = files[(n * 7919) % files.length] as string;
    const file = path.join(repo.dir, rel);
    return toolCall(
      setup,
      {
        sessionId,
        tool: 'Edit',
        input: { file_path: file, old_string: '}', new_string: '}' },
        response: { filePath: file, structuredPatch: [] },
      },
      () => edit(n),
    );
  };
  const result: DiskResult = {
    kind: 'disk',
    size: repo.size,
    requestedSteps: Math.max(2, opts.steps),
    steps: 0,
    reduced: null,
    skipped: false,
    callMs: 0,
    stepsMs: 0,
    before: null,
    after: null,
    growthApparentBytes: 0,
    growthBlockBytes: 0,
    reference: { blobs: 0, blobBytes: 0, trees: 0, treeBytes: 0, commits: 0, commitBytes: 0, bytes: 0 },
    ratio: NaN,
    stray: [],
    locks: [],
    server: null,
    serverRssMiB: null,
  };
  try {
    // A clean store first: loose objects earlier rows wrote (raw git, isomorphic-git, old sessions) may equal objects of
    // this session, and agentsnap's packing would then remove them and hide its own growth.
    const benchRefs = git(env, repo.dir, ['for-each-ref', '--format=delete %(refname)', 'refs/bench/']);
    if (benchRefs) git(env, repo.dir, ['update-ref', '--stdin'], benchRefs);
    git(env, repo.dir, ['prune', '--expire=now']);
    git(env, repo.dir, ['prune-packed']);
    const before = storeSize(env, repo);
    const filesBefore = new Set(walk(path.join(repo.dir, '.git', 'objects')));
    // The session's first call takes its baseline (and may start a server); the second one is a warm call. Both count as steps.
    step(0);
    result.callMs = step(1).ms / 2;
    result.server = serverStatus(env, repo.dir);
    let steps = Math.max(2, opts.steps); // the two warm-up calls are steps too
    if (result.callMs > DISK_SLOW_CALL_MS) {
      if (repo.size >= DISK_SKIP_SIZE && !opts.explicit) {
        result.skipped = true;
        result.reduced = `one hook call took ${result.callMs.toFixed(0)} ms (> ${DISK_SLOW_CALL_MS} ms): skipped at this size; \`--only disk\` runs it`;
        opts.log(`  disk growth: ${result.reduced}`);
        return result;
      }
      steps = Math.max(2, Math.round(result.requestedSteps / 10));
      result.reduced = `one hook call took ${result.callMs.toFixed(0)} ms (> ${DISK_SLOW_CALL_MS} ms)`;
    } else if (2 * result.callMs * result.requestedSteps > DISK_BUDGET_MS) {
      steps = Math.max(2, Math.round(result.requestedSteps / 10));
      result.reduced = `${result.requestedSteps} steps would take ~${((2 * result.callMs * result.requestedSteps) / 1000).toFixed(0)} s (budget ${DISK_BUDGET_MS / 1000} s)`;
    }
    opts.log(
      `  disk growth: ${steps} one-file steps through the hooks${result.reduced ? ` (${result.reduced}; extrapolated to ${result.requestedSteps})` : ''}`,
    );
    const t0 = process.hrtime.bigint();
    for (let n = 2; n < steps; n++) {
      await checkpoint();
      const r = step(n);
      if (r.stderr.trim()) opts.log(`    hook said: ${r.stderr.trim().split('\n')[0]}`);
      if (n % 100 === 0) opts.log(`    ${n} steps`);
    }
    result.stepsMs = Number(process.hrtime.bigint() - t0) / 1e6;
    result.steps = steps;
    const recorded = recordedSteps(env, repo);
    if (recorded.steps !== steps)
      throw new Error(`the hooks recorded ${recorded.steps} steps for ${steps} tool calls: the hook commands failed`);
    endClaudeSession(setup, sessionId);
    const status = serverStatus(env, repo.dir);
    if (status.pid) result.serverRssMiB = vmHwmMiB(status.pid);
    const warning = stopServer(env, repo.dir);
    if (warning) opts.log(`  warning: ${warning}`);
    const after = storeSize(env, repo);
    result.before = before;
    result.after = after;
    result.growthApparentBytes = after.apparentBytes - before.apparentBytes;
    result.growthBlockBytes = after.blockBytes - before.blockBytes;
    const tips = git(env, repo.dir, ['for-each-ref', '--format=%(objectname)', 'refs/agent/', 'refs/agentsnap/'])
      .split('\n')
      .filter(Boolean);
    result.reference = referenceSize(env, repo, tips);
    result.ratio = result.growthBlockBytes / result.reference.bytes;
    result.stray = walk(path.join(repo.dir, '.git', 'objects')).filter((f) => !OBJECT_FILE.test(f) && !filesBefore.has(f));
    result.locks = lockFiles(repo);
    return result;
  } finally {
    for (const [rel, text] of originals) fs.writeFileSync(path.join(repo.dir, rel), text);
    stopServer(env, repo.dir);
  }
}
