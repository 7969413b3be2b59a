// What the benchmark measures. A scenario produces rows; each row compares
// an agentsnap figure with a baseline sampled in the same interleaved loop.
// Later issues add scenarios here (tool calls through hooks, undo, disk
// growth, peer baselines) and append them to SCENARIOS.
import fs from 'node:fs';
import path from 'node:path';
import {
  agentsnapCmd,
  interleave,
  median,
  peakRssMiB,
  timed,
  type BenchEnv,
  type Cmd,
  type Subject,
} from './measure.js';
import { removeAgentsnapState, type BenchRepo } from './repos.js';

export interface Target {
  /** Highest acceptable ratio to the baseline. */
  maxRatio: number;
  /** The issue that sets the target (shown next to it). */
  issue: number;
  /** Sizes the target applies to. */
  sizes: number[];
}

export interface Row {
  size: number;
  what: string;
  agentsnapMs: number;
  baseline: string;
  baselineMs: number;
  ratio: number;
  samples: number;
  target: Target | null;
  /** Peak memory of the agentsnap process, MiB. */
  maxRssMiB: number | null;
}

export interface ScenarioContext {
  repo: BenchRepo;
  env: BenchEnv;
  runs: number;
  log: (s: string) => void;
}

export interface Scenario {
  id: string;
  run(ctx: ScenarioContext): Row[];
}

/** Appends a unique line to the edit target, so the next snapshot sees exactly one changed file. */
function editOneFile(repo: BenchRepo, tag: string): void {
  fs.writeFileSync(path.join(repo.dir, repo.editFile), `${repo.editOriginal}// edited by the bench: ${tag} ${process.hrtime.bigint()}\n`);
}

/**
 * The raw git sequence agentsnap replaces, with a warm private index (the
 * same index file reused across samples, seeded from the repository's own
 * index like agentsnap seeds its own): add -A, write-tree, commit-tree,
 * update-ref. Git's default configuration, as a script would run it.
 */
export function rawGitSubject(ctx: ScenarioContext, name = 'raw git'): Subject {
  const { repo, env } = ctx;
  const indexFile = path.join(env.base, `raw-index-${repo.size}`);
  if (!fs.existsSync(indexFile)) fs.copyFileSync(path.join(repo.dir, '.git', 'index'), indexFile);
  const gitEnv = { ...env.env, GIT_INDEX_FILE: indexFile };
  const cmd = (args: string[]): Cmd => ({ file: 'git', args, cwd: repo.dir, env: gitEnv });
  let parent: string | null = null;
  return {
    name,
    prepare: (i) => editOneFile(repo, `raw ${i}`),
    run: () => {
      // One timed span over the four processes; each needs the previous one's output.
      const t0 = process.hrtime.bigint();
      timed([cmd(['add', '-A'])]);
      const tree = timed([cmd(['write-tree'])]).stdout.trim();
      const parents = parent ? ['-p', parent] : [];
      const commit = timed([cmd(['commit-tree', tree, ...parents, '-m', 'raw snapshot'])]).stdout.trim();
      timed([cmd(['update-ref', 'refs/bench/raw', commit])]);
      parent = commit;
      return Number(process.hrtime.bigint() - t0) / 1e6;
    },
  };
}

function row(ctx: ScenarioContext, what: string, a: number[], b: number[], baseline: string, target: Target | null, rss: number | null): Row {
  const agentsnapMs = median(a);
  const baselineMs = median(b);
  return {
    size: ctx.repo.size,
    what,
    agentsnapMs,
    baseline,
    baselineMs,
    ratio: agentsnapMs / baselineMs,
    samples: a.length,
    target: target && target.sizes.includes(ctx.repo.size) ? target : null,
    maxRssMiB: rss,
  };
}

/** `agentsnap snap` in a repository with no session yet: starts one (baseline) and takes the checkpoint. */
export const firstSnapshot: Scenario = {
  id: 'first',
  run(ctx) {
    const { repo, env } = ctx;
    const snap = agentsnapCmd(env, repo.dir, ['snap', '-q']);
    const fresh = (i: number) => {
      removeAgentsnapState(repo, env);
      editOneFile(repo, `first ${i}`);
    };
    const runs = Math.max(1, Math.min(ctx.runs, 5));
    ctx.log(`  first snapshot of a new session (${runs} runs)`);
    const samples = interleave(
      [{ name: 'agentsnap', prepare: fresh, run: () => timed([snap]).ms }, rawGitSubject(ctx)],
      runs,
    );
    fresh(-1);
    const rss = peakRssMiB(env, snap);
    return [
      row(ctx, 'snap: first of a new session', samples.get('agentsnap') ?? [], samples.get('raw git') ?? [], 'raw git (warm)', { maxRatio: 1, issue: 7, sizes: [100_000] }, rss),
    ];
  },
};

/** `agentsnap snap` (a checkpoint step) in a running session after one file changed. */
export const checkpointOneFile: Scenario = {
  id: 'checkpoint',
  run(ctx) {
    const { repo, env } = ctx;
    const snap = agentsnapCmd(env, repo.dir, ['snap', '-q']);
    ctx.log(`  snap after one changed file (${ctx.runs} runs)`);
    const samples = interleave(
      [{ name: 'agentsnap', prepare: (i) => editOneFile(repo, `checkpoint ${i}`), run: () => timed([snap]).ms }, rawGitSubject(ctx)],
      ctx.runs,
    );
    editOneFile(repo, 'rss');
    const rss = peakRssMiB(env, snap);
    return [
      row(ctx, 'snap: one file changed', samples.get('agentsnap') ?? [], samples.get('raw git') ?? [], 'raw git (warm)', { maxRatio: 1.3, issue: 2, sizes: [100_000] }, rss),
    ];
  },
};

export const SCENARIOS: Scenario[] = [firstSnapshot, checkpointOneFile];

/** Node's own start-up and agentsnap's CLI load (`--version`), for reading the small sizes. */
export function startupReference(env: BenchEnv, runs: number): { nodeMs: number; versionMs: number } {
  const node: Cmd = { file: process.execPath, args: ['-e', '0'], cwd: env.base, env: env.env };
  const version = agentsnapCmd(env, env.base, ['--version']);
  const samples = interleave(
    [
      { name: 'node', run: () => timed([node]).ms },
      { name: 'version', run: () => timed([version]).ms },
    ],
    runs,
  );
  return { nodeMs: median(samples.get('node') ?? []), versionMs: median(samples.get('version') ?? []) };
}
