// `npm run bench`: agentsnap against the raw git sequence it replaces and
// what peers do per tool call, on synthetic repositories of 1k, 10k and 100k
// files (and, asked for, 500k, 1M and one of 100k directories), every figure
// measured in this one run. Prints targets with ✓/✗ but
// never fails on them: speed is reported here, not asserted in tests.
//
//   npm run bench                          # 1k, 10k, 100k files
//   npm run bench -- --sizes 1000,10000    # quick run
//   npm run bench -- --runs 5 --json       # fewer samples, machine-readable rows
//   npm run bench -- --sizes 100000 --only hook-edit,disk
//   npm run bench -- --sizes 100000 --profile   # where one snap's time goes (git calls)
//   npm run bench -- --sizes 100k,500k,1m,dirs100k --runs 3   # monorepo scale (issue 19)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { spawnSync } from 'node:child_process';
import { benchEnv, Interrupted, markInterrupted, ROOT } from './measure.js';
import { benchRepo, diskFree, resetRepo } from './repos.js';
import { CLASSIC_MAX, parseSizes, type RepoSpec } from './args.js';
import { asciiPlot, formatGrowthTable, growthSeries, targetSummary } from './growth.js';
import { SCENARIOS as PER_CALL_SCENARIOS, startupReference, withServer, type Row } from './scenarios.js';
import { claudeEditSession, claudeReadSession } from './claude-session.js';
import { bisectScenario } from './bisect.js';
import { gitHooksScenario } from './git-hooks.js';
import { environmentScenario } from './environment.js';
import { formatDiskTable, formatTable } from './table.js';
import { profileSnap } from './profile.js';
import { maxUserWatches, serverStatus, stopAllServers, stopServer } from './server.js';
import type { DiskResult } from './disk.js';

// The per-call scenarios, whole sessions of the real Claude Code, bisect over a session, the user's git commands with git hooks.
const SCENARIOS = [...PER_CALL_SCENARIOS, claudeReadSession, claudeEditSession, bisectScenario, gitHooksScenario, environmentScenario];

const USAGE = `usage: npm run bench -- [--sizes 1000,10000,100000] [--runs N] [--only ID,...] [--disk-steps N] [--json] [--profile] [--no-isogit]

  --sizes       repository sizes in files (default 1000,10000,100000; 10k, 500k, 1m understood); generated once, cached in .bench/;
                above 100k the large generator (~20 files per directory, a few deep trees); dirs100k: 100k directories of 2 files
  --runs        timed samples per figure, median reported (default 9; tool calls use at most 7, first snapshot and undo at most 5)
  --only        scenarios to run (${SCENARIOS.map((s) => s.id).join(', ')})
  --disk-steps  one-file steps of the disk scenario (default 1000; a tenth, extrapolated, when hook calls are slow)
  --json        print the rows as JSON instead of the tables
  --profile     also print, per size, each git process of one \`agentsnap snap\` (GIT_TRACE2_EVENT)
  --no-isogit   leave isomorphic-git out of the tool calls' peers (it is never run above 100k files)`;

// biome-ignore lint/complexity/noExcessiveLinesPerFunction: the bench's command line as one script: options, then each size and scenario in the order of the report.
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      sizes: { type: 'string', default: '1000,10000,100000' },
      runs: { type: 'string', default: '9' },
      only: { type: 'string' },
      'disk-steps': { type: 'string', default: '1000' },
      json: { type: 'boolean', default: false },
      profile: { type: 'boolean', default: false },
      'no-isogit': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  let specs: RepoSpec[];
  try {
    specs = parseSizes(values.sizes);
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n${USAGE}\n`);
    process.exitCode = 2;
    return;
  }
  const runs = Number(values.runs);
  const diskSteps = Number(values['disk-steps']);
  const only = values.only ? new Set(values.only.split(',')) : null;
  const unknown = only ? [...only].filter((id) => !SCENARIOS.some((s) => s.id === id)) : [];
  if (!Number.isInteger(runs) || runs < 1 || !Number.isInteger(diskSteps) || diskSteps < 1 || unknown.length) {
    if (unknown.length) process.stderr.write(`unknown scenario: ${unknown.join(', ')}\n`);
    process.stderr.write(`${USAGE}\n`);
    process.exitCode = 2;
    return;
  }
  const scenarios = SCENARIOS.filter((s) => !only || only.has(s.id));

  const log = (s: string) => process.stderr.write(`${s}\n`);
  const cacheDir = path.join(ROOT, '.bench');
  fs.mkdirSync(cacheDir, { recursive: true });
  const env = benchEnv();
  // No process outlives the bench: a signal stops the run at the next sample, then servers are stopped.
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(sig, () => markInterrupted(sig));
  process.on('exit', () => stopAllServers(log));
  let report: ((stoppedBy: string | null) => void) | null = null;
  try {
    const gitVersion = spawnSync('git', ['version'], { encoding: 'utf8', env: env.env }).stdout.trim();
    const loadBefore = os.loadavg();
    const t0 = Date.now();
    log(`disk: ${diskFree(cacheDir)} (${cacheDir}); fs.inotify.max_user_watches ${maxUserWatches() ?? 'unknown'}`);
    const startup = await startupReference(env, runs);
    const rows: Row[] = [];
    const disk: DiskResult[] = [];
    const profiles: string[] = [];
    const took: string[] = [];
    // What the run measured so far: at its end, or when a signal stopped it between samples.
    report = (stoppedBy: string | null) => {
      const series = growthSeries(rows);
      const summary = targetSummary(rows);
      const server = process.env.AGENTSNAP_SERVER ? `AGENTSNAP_SERVER=${process.env.AGENTSNAP_SERVER}` : null;
      if (values.json) {
        process.stdout.write(
          `${JSON.stringify({ git: gitVersion, node: process.version, cpus: os.cpus().length, runs, loadBefore, loadAfter: os.loadavg(), server, startup, rows, disk, growth: series.map((s) => ({ ...s, points: Object.fromEntries(s.points) })), targets: summary }, null, 2)}\n`,
        );
        return;
      }
      const load = (l: number[]) => l.map((x) => x.toFixed(1)).join(' ');
      const header = `${stoppedBy ? `bench ${stoppedBy}: the rows measured until then\n` : ''}agentsnap bench: ${gitVersion}, node ${process.version}, ${os.cpus().length} cores, ${os.platform()}${server ? `, ${server}` : ''}; median of ${runs} interleaved runs; load average ${load(loadBefore)} before, ${load(os.loadavg())} after`;
      process.stdout.write(`\n${header}\n\n${formatTable(rows)}\n`);
      if (disk.length) process.stdout.write(`\n${formatDiskTable(disk)}\n`);
      process.stdout.write(
        `\nreference: node start-up ${startup.nodeMs.toFixed(0)} ms, \`agentsnap --version\` ${startup.versionMs.toFixed(0)} ms (each agentsnap Node process pays both); ` +
          `two empty hook commands (\`sh -c 'cat > /dev/null'\`, the floor of any tool call through hooks) ${startup.emptyHooksMs.toFixed(1)} ms\n`,
      );
      const growth = formatGrowthTable(series);
      if (growth)
        process.stdout.write(
          `\ngrowth with the repository's size (median per figure; 100k-directory repositories left out)\n\n${growth}\n\n${asciiPlot(series)}\n`,
        );
      if (summary.length) process.stdout.write(`\nscale targets (#19):\n${summary.map((l) => `  ${l}`).join('\n')}\n`);
      process.stdout.write(
        `\nrun time: ${((Date.now() - t0) / 1000).toFixed(0)} s (${took.join(', ')}; repositories generated in this run included); fs.inotify.max_user_watches ${maxUserWatches() ?? 'unknown'}\n`,
      );
      for (const p of profiles) process.stdout.write(`\n${p}\n`);
    };
    for (const spec of specs) {
      const t1 = Date.now();
      const repo = await benchRepo(cacheDir, spec, env, log);
      stopServer(env, repo.dir);
      resetRepo(repo, env, log);
      log(`${repo.label} files${repo.dirs !== null ? ` in ${repo.dirs} directories` : ''}:`);
      for (const sc of scenarios) {
        // 1,000 one-file steps and their du at 1M files: only when asked for.
        if (sc.id === 'disk' && repo.size > CLASSIC_MAX && !only?.has('disk')) {
          log(`  disk growth: not run above ${CLASSIC_MAX} files unless named in --only`);
          continue;
        }
        const ctx = { repo, env, runs, log, diskSteps, explicit: only ?? new Set<string>(), isogit: !values['no-isogit'] };
        try {
          const out = await sc.run(ctx);
          // A server the scenario's CLI calls started (\`snap\` starts one for the next call): its pid and peak memory.
          const status = serverStatus(env, repo.dir);
          for (const r of out) {
            if (r.kind === 'disk') disk.push(r);
            else {
              if (!r.server && status.running) withServer(r, status);
              rows.push(r);
            }
          }
        } finally {
          const warning = stopServer(env, repo.dir);
          if (warning) log(`warning: ${warning}`);
        }
      }
      if (values.profile) profiles.push(profileSnap(repo, env));
      took.push(`${repo.label}${repo.layout === 'dirs' ? '' : ' files'} ${((Date.now() - t1) / 1000).toFixed(0)} s`);
    }
    report(null);
  } catch (e) {
    if (e instanceof Interrupted) {
      report?.(e.message);
      log(`bench ${e.message}; servers stopped${report ? ', the rows measured until then printed' : ', no figures'}`);
      process.exitCode = 130;
      return;
    }
    log(`bench failed: ${(e as Error).message}; servers stopped`);
    if (process.env.AGENTSNAP_DEBUG === '1') log((e as Error).stack ?? '');
    process.exitCode = 1;
  } finally {
    stopAllServers(log);
    env.dispose();
  }
}

await main();
