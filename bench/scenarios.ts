// What the benchmark measures. A scenario produces rows; each row compares
// an agentsnap figure with a baseline sampled in the same interleaved loop.
// Later issues add scenarios here (tool calls through hooks, undo, disk
// growth, peer baselines) and append them to SCENARIOS.
import fs from 'node:fs';
import path from 'node:path';
import {
  agentsnapCmd,
  git,
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

/** Claude Code's hook payload for one tool call (what it writes on the hook's stdin). */
function claudePayload(repo: BenchRepo, event: 'PreToolUse' | 'PostToolUse', call: number, edit: boolean): string {
  const toolUseId = `toolu_bench_${process.pid}_${call}`;
  const file = path.join(repo.dir, repo.editFile);
  const toolInput = edit
    ? { file_path: file, old_string: '// edited', new_string: `// edited by the bench ${call}` }
    : { file_path: file };
  return JSON.stringify({
    session_id: `bench-${repo.size}-${edit ? 'edit' : 'read'}`,
    transcript_path: '',
    cwd: repo.dir,
    permission_mode: 'default',
    hook_event_name: event,
    tool_name: edit ? 'Edit' : 'Read',
    tool_input: toolInput,
    tool_use_id: toolUseId,
    ...(event === 'PostToolUse'
      ? { tool_response: edit ? { filePath: file, oldString: '// edited', newString: `// edited by the bench ${call}`, structuredPatch: [] } : { type: 'text', file: { filePath: file, content: repo.editOriginal.slice(0, 2000), numLines: 40, startLine: 1, totalLines: 40 } } }
      : {}),
  });
}

/**
 * One tool call as the agent pays for it: the real `agentsnap hook claude
 * PreToolUse` and `PostToolUse` processes, end to end, with Claude Code's JSON
 * payloads on stdin (outside a wrapper, as `agentsnap init claude` sets it up).
 * The tool's own work (the edit) happens between them and is not timed.
 */
function toolCallScenario(id: string, what: string, edit: boolean, target: Target): Scenario {
  return {
    id,
    run(ctx) {
      const { repo, env } = ctx;
      removeAgentsnapState(repo, env);
      const hook = (event: 'PreToolUse' | 'PostToolUse', call: number): Cmd => ({
        ...agentsnapCmd(env, repo.dir, ['hook', 'claude', event]),
        input: claudePayload(repo, event, call, edit),
      });
      const runs = Math.max(1, Math.min(ctx.runs, 7));
      ctx.log(`  ${what} (${runs} runs)`);
      const samples = interleave(
        [
          {
            name: 'agentsnap',
            // The session's first call takes its baseline: warm it up untimed.
            run: (i) => {
              const pre = timed([hook('PreToolUse', i)]).ms;
              if (edit) editOneFile(repo, `hook ${i}`);
              return pre + timed([hook('PostToolUse', i)]).ms;
            },
          },
          rawGitSubject(ctx),
        ],
        runs,
      );
      const rss = peakRssMiB(env, hook('PreToolUse', 999_999));
      peakRssMiB(env, hook('PostToolUse', 999_999));
      return [row(ctx, what, samples.get('agentsnap') ?? [], samples.get('raw git') ?? [], 'raw git (warm)', target, rss)];
    },
  };
}

export const toolCallReadOnly = toolCallScenario('hook-read', 'tool call: read-only (pre+post hook)', false, { maxRatio: 0.1, issue: 7, sizes: [10_000, 100_000] });
export const toolCallEdit = toolCallScenario('hook-edit', 'tool call: edits one file (pre+post hook)', true, { maxRatio: 0.5, issue: 7, sizes: [100_000] });

/** Writes new content into `count` tracked files spread over the repository (the same files every time). */
function editManyFiles(repo: BenchRepo, env: BenchEnv, count: number, tag: string): string[] {
  const files = git(env, repo.dir, ['ls-files', '-z', '--', '*.ts']).split('\0').filter(Boolean);
  const step = Math.max(1, Math.floor(files.length / count));
  const picked = files.filter((_, i) => i % step === 0).slice(0, count);
  for (const rel of picked) fs.appendFileSync(path.join(repo.dir, rel), `// ${tag}\n`);
  return picked;
}

/**
 * `agentsnap undo` of a step that changed `count` files: the safety snapshot
 * plus the restore. Each sample first records a new step (untimed `snap`
 * after editing the files), then undoes it.
 */
function undoScenario(count: number): Scenario {
  return {
    id: count === 10 ? 'undo' : `undo${count}`,
    run(ctx) {
      const { repo, env } = ctx;
      removeAgentsnapState(repo, env);
      const snap = agentsnapCmd(env, repo.dir, ['snap', '-q']);
      const undo = agentsnapCmd(env, repo.dir, ['undo', '--json']);
      timed([snap]); // the session and its baseline
      const runs = Math.max(1, Math.min(ctx.runs, 5));
      const what = `undo: ${count} files differ`;
      ctx.log(`  ${what} (${runs} runs)`);
      const record = (i: number) => {
        editManyFiles(repo, env, count, `undo ${count} ${i} ${process.hrtime.bigint()}`);
        timed([snap]);
      };
      const samples = interleave([{ name: 'agentsnap', prepare: record, run: () => timed([undo]).ms }, rawGitSubject(ctx)], runs);
      record(-1);
      const rss = peakRssMiB(env, undo);
      // Leave the worktree as committed for the next scenario.
      git(env, repo.dir, ['checkout', '-q', '--', '.']);
      return [row(ctx, what, samples.get('agentsnap') ?? [], samples.get('raw git') ?? [], 'raw git (warm)', null, rss)];
    },
  };
}

export const undoTen = undoScenario(10);
export const undoHundred = undoScenario(100);

export const SCENARIOS: Scenario[] = [firstSnapshot, checkpointOneFile, toolCallReadOnly, toolCallEdit, undoTen, undoHundred];

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
