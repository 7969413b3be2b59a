// What the benchmark measures. A scenario produces rows; each row compares
// an agentsnap figure with the raw git baseline (and, for tool calls, the
// peers' baselines) sampled in the same interleaved loop. The disk scenario
// produces a disk row instead (bench/disk.ts).
import fs from 'node:fs';
import path from 'node:path';
import {
  agentsnapCmd,
  git,
  interleave,
  median,
  peakRssMiB,
  peakRssOfNodeChildren,
  timed,
  type BenchEnv,
  type Cmd,
  type Subject,
} from './measure.js';
import { removeAgentsnapState, type BenchRepo } from './repos.js';
import { CREATE_COUNT, makeChange, spreadPick, type Change, type ChangeKind } from './changes.js';
import { claudePayload, hookCmds, installClaudeHooks, recordedSteps, toolCall, type ToolCallSpec } from './hooks.js';
import { BACKUP, backupSubject, ISOGIT, isogitSubject, SHADOW, shadowSubject } from './peers.js';
import { serverStatus, serverWatches, stopServer, vmHwmMiB, waitServerQuiet, type ServerInfo } from './server.js';
import { CLASSIC_MAX, type Layout } from './args.js';
import { diskGrowth, type DiskResult } from './disk.js';

export interface Target {
  /** Highest acceptable ratio to the baseline. */
  maxRatio: number;
  /** And at most this median, ms. */
  maxMs?: number;
  /** And at most this many ms more than the baseline's median (a fixed cost, such as git hooks'). */
  maxAddedMs?: number;
  /** The issue that sets the target (shown next to it). */
  issue: number;
  /** Sizes the target applies to. */
  sizes: number[];
}

export interface PeerFigure {
  /** Median, ms. */
  ms: number;
  samples: number;
}

export interface Row {
  kind: 'time';
  size: number;
  what: string;
  agentsnapMs: number;
  baseline: string;
  baselineMs: number;
  ratio: number;
  samples: number;
  target: Target | null;
  /** Peak memory of the agentsnap CLI/hook Node processes, MiB (null: the hook commands started none). */
  maxRssMiB: number | null;
  /** Peer baselines sampled in the same loop (tool-call rows): backup copy, shadow repo, isomorphic-git. */
  peers: Record<string, PeerFigure>;
  /** The warm agentsnap server at the end of the row, when this agentsnap has one. */
  server: ServerInfo | null;
  /** Its peak memory (VmHWM), MiB. */
  serverRssMiB: number | null;
  /** Inotify watches it held at the end of the row, and where the figure comes from (its status, or /proc/<pid>/fdinfo). */
  serverWatches: number | null;
  watchesFrom: 'status' | 'fdinfo' | null;
  /** The repository as the tables print it (`1,000,000`, `100k dirs`). */
  label: string;
  /** The repository's layout (bench/args.ts): the growth table follows the file-count ones only. */
  layout: Layout;
  notes: string[];
}

/** Fills a row's server columns from a status taken at its end: pid, peak memory, inotify watches. */
export function withServer(r: Row, status: ServerInfo): void {
  r.server = status.supported ? status : null;
  r.serverRssMiB = status.pid ? vmHwmMiB(status.pid) : null;
  const w = status.running ? serverWatches(status) : null;
  r.serverWatches = w?.watches ?? null;
  r.watchesFrom = w?.from ?? null;
}

export interface ScenarioContext {
  repo: BenchRepo;
  env: BenchEnv;
  runs: number;
  log: (s: string) => void;
  /** Steps of the disk scenario (default 1000). */
  diskSteps: number;
  /** Scenarios named in --only (they run even where slow). */
  explicit: Set<string>;
  /** isomorphic-git among the tool calls' peers (`--no-isogit` leaves it out: minutes a sample at 100k on a busy machine). */
  isogit: boolean;
}

export interface Scenario {
  id: string;
  run(ctx: ScenarioContext): Promise<(Row | DiskResult)[]>;
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
export function rawGitSubject(ctx: ScenarioContext, change: Change | null = null, name = 'raw git'): Subject {
  const { repo, env } = ctx;
  const indexFile = path.join(env.base, `raw-index-${repo.size}`);
  if (!fs.existsSync(indexFile)) fs.copyFileSync(path.join(repo.dir, '.git', 'index'), indexFile);
  const gitEnv = { ...env.env, GIT_INDEX_FILE: indexFile };
  const cmd = (args: string[]): Cmd => ({ file: 'git', args, cwd: repo.dir, env: gitEnv });
  let parent: string | null = null;
  return {
    name,
    prepare: (i) => {
      if (!change) return editOneFile(repo, `raw ${i}`);
      change.prepare(name);
      change.apply(name, i);
    },
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

function row(
  ctx: ScenarioContext,
  what: string,
  a: number[],
  b: number[],
  baseline: string,
  target: Target | null,
  rss: number | null,
): Row {
  return timeRow(ctx, { what, agentsnapMs: median(a), baseline, baselineMs: median(b), samples: a.length, target, maxRssMiB: rss });
}

/** A time row from figures already reduced (a scenario that times something other than one sample per run). */
export function timeRow(
  ctx: ScenarioContext,
  f: {
    what: string;
    agentsnapMs: number;
    baseline: string;
    baselineMs: number;
    samples: number;
    target: Target | null;
    maxRssMiB?: number | null;
    notes?: string[];
  },
): Row {
  return {
    kind: 'time',
    size: ctx.repo.size,
    what: f.what,
    agentsnapMs: f.agentsnapMs,
    baseline: f.baseline,
    baselineMs: f.baselineMs,
    ratio: f.agentsnapMs / f.baselineMs,
    samples: f.samples,
    target: f.target && f.target.sizes.includes(ctx.repo.size) ? f.target : null,
    maxRssMiB: f.maxRssMiB ?? null,
    peers: {},
    server: null,
    serverRssMiB: null,
    serverWatches: null,
    watchesFrom: null,
    label: ctx.repo.label,
    layout: ctx.repo.layout,
    notes: f.notes ?? [],
  };
}

/** `agentsnap snap` in a repository with no session yet: starts one (baseline) and takes the checkpoint. */
export const firstSnapshot: Scenario = {
  id: 'first',
  async run(ctx) {
    const { repo, env } = ctx;
    const snap = agentsnapCmd(env, repo.dir, ['snap', '-q']);
    const fresh = (i: number) => {
      // A new session in a worktree with no server yet (its state dir, where a server runs from, is removed).
      stopServer(env, repo.dir);
      removeAgentsnapState(repo, env);
      editOneFile(repo, `first ${i}`);
    };
    const runs = Math.max(1, Math.min(ctx.runs, 5));
    ctx.log(`  first snapshot of a new session (${runs} runs)`);
    const samples = await interleave([{ name: 'agentsnap', prepare: fresh, run: () => timed([snap]).ms }, rawGitSubject(ctx)], runs);
    fresh(-1);
    const rss = peakRssMiB(env, snap);
    return [
      row(
        ctx,
        'snap: first of a new session',
        samples.get('agentsnap') ?? [],
        samples.get('raw git') ?? [],
        'raw git (warm)',
        { maxRatio: 1, issue: 7, sizes: [100_000] },
        rss,
      ),
    ];
  },
};

/** `agentsnap snap` (a checkpoint step) in a running session after one file changed. */
export const checkpointOneFile: Scenario = {
  id: 'checkpoint',
  async run(ctx) {
    const { repo, env } = ctx;
    const snap = agentsnapCmd(env, repo.dir, ['snap', '-q']);
    // Untimed: a session's first snap starts it (and a server), the next is the server's first, a full scan.
    for (let i = 0; i < 2; i++) {
      editOneFile(repo, `checkpoint warm-up ${i}`);
      timed([snap]);
    }
    ctx.log(`  snap after one changed file (${ctx.runs} runs)`);
    const samples = await interleave(
      [{ name: 'agentsnap', prepare: (i) => editOneFile(repo, `checkpoint ${i}`), run: () => timed([snap]).ms }, rawGitSubject(ctx)],
      ctx.runs,
    );
    editOneFile(repo, 'rss');
    const rss = peakRssMiB(env, snap);
    return [
      row(
        ctx,
        'snap: one file changed',
        samples.get('agentsnap') ?? [],
        samples.get('raw git') ?? [],
        'raw git (warm)',
        { maxRatio: 1.3, issue: 2, sizes: [100_000] },
        rss,
      ),
    ];
  },
};

/**
 * One tool call as the agent pays for it: the hook commands `agentsnap init
 * claude` wrote, run through /bin/sh with Claude Code's payloads (see
 * hooks.ts), pre and post end to end with whatever processes they start. The
 * tool's own work between them is not timed. Baselines in the same loop, each
 * handling the same change: raw git, Claude Code's backup copy, a shadow
 * repository, isomorphic-git in-process.
 */
// biome-ignore lint/complexity/noExcessiveLinesPerFunction: the scenario and its timed loop below are one table of peers (agentsnap and each baseline) measured side by side in the same loop.
function toolCallScenario(id: string, what: string, kind: ChangeKind, target: Target | null, readTool: 'Read' | 'Bash' = 'Read'): Scenario {
  return {
    id,
    // biome-ignore lint/complexity/noExcessiveLinesPerFunction: each peer is timed in the same loop over the same change, so that they stay comparable: split, the loop would lose that.
    async run(ctx) {
      const { repo, env } = ctx;
      stopServer(env, repo.dir);
      removeAgentsnapState(repo, env);
      const tool = kind === 'none' ? readTool : kind === 'edit' ? 'Edit' : 'Bash';
      const setup = installClaudeHooks(repo, env, tool);
      const change = makeChange(kind, env, repo);
      const sessionId = `bench-${repo.size}-${id}-${process.pid}`;
      const spec = (i: number): ToolCallSpec => {
        const target = change.targets('agentsnap', i)[0];
        const file = target ? path.join(repo.dir, target) : path.join(repo.dir, repo.editFile);
        if (kind === 'none' && tool === 'Bash') {
          return {
            sessionId,
            tool: 'Bash',
            input: { command: 'ls', description: 'List files' },
            response: { stdout: 'src\n', stderr: '', interrupted: false, isImage: false },
          };
        }
        if (kind === 'none') {
          return {
            sessionId,
            tool: 'Read',
            input: { file_path: file },
            response: {
              type: 'text',
              file: { filePath: file, content: repo.editOriginal.slice(0, 2000), numLines: 40, startLine: 1, totalLines: 40 },
            },
          };
        }
        if (kind === 'edit') {
          return {
            sessionId,
            tool: 'Edit',
            input: { file_path: file, old_string: '// edited', new_string: `// edited ${i}` },
            response: { filePath: file, oldString: '// edited', newString: `// edited ${i}`, structuredPatch: [] },
          };
        }
        const command = `node scripts/scaffold.js --count ${CREATE_COUNT} --out bench-created/${i}`;
        return {
          sessionId,
          tool: 'Bash',
          input: { command, description: `Create ${CREATE_COUNT} files` },
          response: { stdout: '', stderr: '', interrupted: false, isImage: false },
        };
      };
      const messages = new Set<string>();
      const r0notes: string[] = [];
      let calls = 0;
      let notPost = 0;
      const call = (i: number) => {
        change.prepare('agentsnap');
        const r = toolCall(setup, spec(i), () => change.apply('agentsnap', i));
        calls++;
        for (const line of r.stderr.split('\n')) if (line.trim()) messages.add(line.trim());
        return r.ms;
      };
      try {
        // The session's first call takes its baseline (and may start a server): warm up untimed.
        const warmMs = call(-2);
        const server = serverStatus(env, repo.dir);
        ctx.log(
          `  ${what}: warm-up call ${warmMs.toFixed(0)} ms; ${server.supported ? (server.running ? `server running, pid ${server.pid}` : 'no server running') : 'this agentsnap has no server command'}`,
        );
        const runs = Math.max(1, Math.min(ctx.runs, 7));
        const large = repo.size > CLASSIC_MAX;
        if (large) r0notes.push(`isomorphic-git not run above ${CLASSIC_MAX.toLocaleString('en-US')} files; shadow repo: at most 3 runs`);
        else if (!ctx.isogit) r0notes.push('isomorphic-git not run (--no-isogit)');
        ctx.log(`  ${what} (${runs} runs)`);
        const samples = await interleave(
          [
            {
              name: 'agentsnap',
              run: (i) => {
                const ms = call(i);
                // Untimed: the post snapshot must be recorded by the time the hook returned.
                if (setup.hooked && !recordedSteps(env, repo).lastIsPost) notPost++;
                return ms;
              },
            },
            rawGitSubject(ctx, change),
            backupSubject(repo, env, change),
            // Above 100k files a shadow-repo sample takes seconds: 3 of them say enough.
            large ? { ...shadowSubject(repo, env, change), maxRuns: () => 3 } : shadowSubject(repo, env, change),
            // isomorphic-git takes ~25 s a sample at 100k and holds the whole index in memory: not run above.
            ...(large || !ctx.isogit ? [] : [isogitSubject(repo, env, change, ctx.log)]),
          ],
          runs,
        );
        const recorded = recordedSteps(env, repo);
        // An unhooked tool (Read) records nothing here: agentsnap journals it from Claude Code's transcript at the next hook.
        if (!setup.hooked) r0notes.push(`${tool} runs no hook (init's matcher leaves it out): agentsnap journals it from the transcript`);
        if (recorded.steps !== (setup.hooked ? calls : 0)) {
          throw new Error(
            `the hooks recorded ${recorded.steps} steps for ${calls} tool calls: the hook commands failed${messages.size ? `: ${[...messages][0]}` : ''}`,
          );
        }
        // Memory, untimed: every Node process one more call's hook commands start, and the server's peak so far.
        change.prepare('agentsnap');
        const id = `toolu_bench_rss_${process.pid}`;
        const rssCmds = [...hookCmds(setup, 'PreToolUse', claudePayload(setup, spec(999_999), 'PreToolUse', id))];
        let hookRss: number | null = null;
        for (const c of rssCmds) hookRss = maxOf(hookRss, peakRssOfNodeChildren(c).maxMiB);
        change.apply('agentsnap', 999_999);
        for (const c of hookCmds(setup, 'PostToolUse', claudePayload(setup, spec(999_999), 'PostToolUse', id)))
          hookRss = maxOf(hookRss, peakRssOfNodeChildren(c).maxMiB);
        const end = serverStatus(env, repo.dir);
        const r = row(ctx, what, samples.get('agentsnap') ?? [], samples.get('raw git') ?? [], 'raw git (warm)', target, hookRss);
        for (const name of [BACKUP, SHADOW, ISOGIT]) {
          const xs = samples.get(name) ?? [];
          if (xs.length) r.peers[name] = { ms: median(xs), samples: xs.length };
        }
        withServer(r, end);
        r.notes.push(...r0notes);
        if (notPost) r.notes.push(`${notPost} of ${runs + 1} post hooks returned before their snapshot was recorded`);
        for (const m of [...messages].slice(0, 3)) r.notes.push(`hook said: ${m}`);
        return [r];
      } finally {
        change.cleanup();
        const warning = stopServer(env, repo.dir);
        if (warning) ctx.log(`  warning: ${warning}`);
      }
    },
  };
}

function maxOf(a: number | null, b: number | null): number | null {
  return a === null ? b : b === null ? a : Math.max(a, b);
}

export const toolCallReadOnly = toolCallScenario('hook-read', 'tool call: read-only', 'none', {
  maxRatio: 0.1,
  issue: 7,
  sizes: [10_000, 100_000],
});
export const toolCallEdit = toolCallScenario('hook-edit', 'tool call: edits one file', 'edit', {
  maxRatio: 0.5,
  maxMs: 100,
  issue: 7,
  sizes: [100_000],
});
// Untargeted: what a read-only call costs when it goes through the hooks (Bash is always hooked: it can change files).
export const toolCallReadOnlyBash = toolCallScenario('hook-read-bash', 'tool call: read-only Bash (`ls`)', 'none', null, 'Bash');
export const toolCallCreate = toolCallScenario('hook-create', `tool call: creates ${CREATE_COUNT} files`, 'create', null);

/** Writes new content into `count` tracked files spread over the repository (the same files every time). */
const manyFiles = new Map<string, string[]>();

function editManyFiles(repo: BenchRepo, env: BenchEnv, count: number, tag: string): string[] {
  // Listed once per repository and count (one ls-files of 1M paths costs a second).
  const key = `${repo.dir}\0${count}`;
  const picked = manyFiles.get(key) ?? spreadPick(git(env, repo.dir, ['ls-files', '-z', '--', '*.ts']), count, count, 'first', () => true);
  manyFiles.set(key, picked);
  for (const rel of picked) fs.appendFileSync(path.join(repo.dir, rel), `// ${tag}\n`);
  return picked;
}

/**
 * `agentsnap undo` of a step that changed `count` files: the safety snapshot
 * plus the restore. Each sample first records a new agent step (untimed
 * `snap --phase pre`, the edits, `snap --phase post`), then undoes it.
 */
function undoScenario(count: number): Scenario {
  return {
    id: count === 10 ? 'undo' : `undo${count}`,
    async run(ctx) {
      const { repo, env } = ctx;
      removeAgentsnapState(repo, env);
      const snap = agentsnapCmd(env, repo.dir, ['snap', '-q']);
      // The step is the agent's (a pre and a post around the edits): a checkpoint (`snap`) is the
      // user's own change, which undo takes back only with --force.
      const pre = agentsnapCmd(env, repo.dir, ['snap', '--phase', 'pre', '--tool', 'Bash', '-q']);
      const post = agentsnapCmd(env, repo.dir, ['snap', '--phase', 'post', '-q']);
      const undo = agentsnapCmd(env, repo.dir, ['undo', '--json']);
      timed([snap]); // the session and its baseline
      const runs = Math.max(1, Math.min(ctx.runs, 5));
      const what = `undo: ${count} files differ`;
      ctx.log(`  ${what} (${runs} runs)`);
      const record = (i: number) => {
        timed([pre]);
        editManyFiles(repo, env, count, `undo ${count} ${i} ${process.hrtime.bigint()}`);
        timed([post]);
      };
      const samples = await interleave([{ name: 'agentsnap', prepare: record, run: () => timed([undo]).ms }, rawGitSubject(ctx)], runs);
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

/** Disk growth after `--disk-steps` one-file steps through the hooks (bench/disk.ts). */
export const diskScenario: Scenario = {
  id: 'disk',
  async run(ctx) {
    return [await diskGrowth(ctx.repo, ctx.env, { steps: ctx.diskSteps, explicit: ctx.explicit.has('disk'), log: ctx.log })];
  },
};

/**
 * The first snapshot of a new session where agentsnap's server already runs
 * in the worktree (an earlier session, or `agentsnap server start`): a new
 * Claude Code session's first PreToolUse hook, which starts the agentsnap
 * session (its baseline) and takes the call's pre snapshot. One file changed
 * before each, like the cold row.
 */
export const firstSnapshotWarm: Scenario = {
  id: 'first-warm',
  async run(ctx) {
    const { repo, env } = ctx;
    stopServer(env, repo.dir);
    removeAgentsnapState(repo, env);
    // An Edit: a hooked tool (Read runs no hook since init leaves read-only tools out of the matcher).
    const setup = installClaudeHooks(repo, env, 'Edit');
    if (!setup.hooked) throw new Error('first-warm: the hooks init wrote do not match Edit; nothing would be measured');
    const file = path.join(repo.dir, repo.editFile);
    const spec = (sessionId: string): ToolCallSpec => ({
      sessionId,
      tool: 'Edit',
      input: { file_path: file, old_string: '// edited', new_string: '// edited again' },
      response: { filePath: file },
    });
    const first = (i: number) =>
      timed(
        hookCmds(
          setup,
          'PreToolUse',
          claudePayload(setup, spec(`bench-first-${process.pid}-${i}`), 'PreToolUse', `toolu_first_${process.pid}_${i}`),
        ),
      );
    try {
      // An earlier session starts the server; give its watcher time to come up (untimed).
      const warm = first(-2);
      for (let k = 0; k < 3; k++) first(-3 - k);
      const server = serverStatus(env, repo.dir);
      ctx.log(
        `  first snapshot, server warm: warm-up ${warm.ms.toFixed(0)} ms; ${server.running ? `server running, pid ${server.pid}` : 'no server running'}`,
      );
      const runs = Math.max(1, Math.min(ctx.runs, 7));
      const samples = await interleave(
        [{ name: 'agentsnap', prepare: (i) => editOneFile(repo, `first-warm ${i}`), run: (i) => first(i).ms }, rawGitSubject(ctx)],
        runs,
      );
      const end = serverStatus(env, repo.dir);
      const r = row(
        ctx,
        'first snapshot of a new session, server warm (first pre hook)',
        samples.get('agentsnap') ?? [],
        samples.get('raw git') ?? [],
        'raw git (warm)',
        { maxRatio: 1, issue: 7, sizes: [100_000] },
        null,
      );
      withServer(r, end);
      return [r];
    } finally {
      stopServer(env, repo.dir);
      removeAgentsnapState(repo, env);
      git(env, repo.dir, ['checkout', '-q', '--', '.']);
    }
  },
};

/** Issue 19: a session's fixed cost ≤ Node start-up + one `git status`, at these sizes. */
const FIXED_TARGET: Target = { maxRatio: 1, issue: 19, sizes: [10_000, 100_000, 1_000_000] };
export const FIXED_BASELINE = 'node start-up + git status';

/**
 * The fixed cost of a session (issue 19): `agentsnap wrap -- true`, an agent
 * that does nothing, start to end (session start, its hooks' set-up, the
 * session's end with its maintenance), against Node's start-up plus one
 * `git status` of the same repository, sampled in the same loop. Two rows:
 * repeated sessions (earlier sessions' state kept, as a user running short
 * sessions one after the other has it), and the first session in the
 * repository (agentsnap's state removed before each sample), untargeted.
 */
export const sessionFixedCost: Scenario = {
  id: 'fixed',
  async run(ctx) {
    const { repo, env } = ctx;
    stopServer(env, repo.dir);
    removeAgentsnapState(repo, env);
    const wrapCmd = agentsnapCmd(env, repo.dir, ['wrap', '-q', '--', 'true']);
    const node: Cmd = { file: process.execPath, args: ['-e', '0'], cwd: repo.dir, env: env.env };
    const status: Cmd = { file: 'git', args: ['status'], cwd: repo.dir, env: env.env };
    // Each wrap leaves (or keeps) a background server for the next session (agentsnap.serverAfterWrap): no sample
    // of either subject is taken while it still sets up its watches or sweeps the worktree.
    const settle = () => {
      if (!waitServerQuiet(env, repo.dir)) ctx.log('  (the background server did not settle within 180 s)');
    };
    const baseline: Subject = { name: FIXED_BASELINE, prepare: settle, run: () => timed([node]).ms + timed([status]).ms };
    const rows: Row[] = [];
    const measure = async (what: string, runs: number, prepare: (i: number) => void, target: Target | null) => {
      ctx.log(`  ${what} (${runs} runs)`);
      const samples = await interleave([{ name: 'agentsnap', prepare, run: () => timed([wrapCmd]).ms }, baseline], runs);
      prepare?.(-1);
      const rss = peakRssMiB(env, wrapCmd);
      const r = row(ctx, what, samples.get('agentsnap') ?? [], samples.get(FIXED_BASELINE) ?? [], FIXED_BASELINE, target, rss);
      rows.push(r);
    };
    try {
      timed([wrapCmd]); // untimed: the first session in the repository
      await measure('session fixed cost: `wrap -- true` (agent idle)', Math.max(1, Math.min(ctx.runs, 7)), settle, FIXED_TARGET);
      const fresh = () => {
        stopServer(env, repo.dir);
        removeAgentsnapState(repo, env);
      };
      await measure('session fixed cost, first session in the repository', Math.max(1, Math.min(ctx.runs, 3)), fresh, null);
      return rows;
    } finally {
      stopServer(env, repo.dir);
      removeAgentsnapState(repo, env);
    }
  },
};

export const SCENARIOS: Scenario[] = [
  firstSnapshot,
  firstSnapshotWarm,
  checkpointOneFile,
  toolCallReadOnly,
  toolCallReadOnlyBash,
  toolCallEdit,
  toolCallCreate,
  undoTen,
  undoHundred,
  sessionFixedCost,
  diskScenario,
];

/** Node's own start-up and agentsnap's CLI load (`--version`), for reading the small sizes. */
export async function startupReference(env: BenchEnv, runs: number): Promise<{ nodeMs: number; versionMs: number; emptyHooksMs: number }> {
  const node: Cmd = { file: process.execPath, args: ['-e', '0'], cwd: env.base, env: env.env };
  const version = agentsnapCmd(env, env.base, ['--version']);
  // The least any hook-based tool call can cost: two hook commands that only read their payload.
  const empty: Cmd = {
    file: '/bin/sh',
    args: ['-c', 'cat > /dev/null'],
    cwd: env.base,
    env: env.env,
    input: JSON.stringify({ hook_event_name: 'PreToolUse', tool_name: 'Read', tool_input: { file_path: 'x' } }),
  };
  const samples = await interleave(
    [
      { name: 'node', run: () => timed([node]).ms },
      { name: 'version', run: () => timed([version]).ms },
      { name: 'empty', run: () => timed([empty]).ms + timed([empty]).ms },
    ],
    runs,
  );
  return {
    nodeMs: median(samples.get('node') ?? []),
    versionMs: median(samples.get('version') ?? []),
    emptyHooksMs: median(samples.get('empty') ?? []),
  };
}
