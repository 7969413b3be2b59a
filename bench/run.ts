// `npm run bench`: agentsnap against the raw git sequence it replaces, on
// synthetic repositories of 1k, 10k and 100k files, every figure measured in
// this one run. Prints targets with ✓/✗ but never fails on them: speed is
// reported here, not asserted in tests.
//
//   npm run bench                          # 1k, 10k, 100k files
//   npm run bench -- --sizes 1000,10000    # quick run
//   npm run bench -- --runs 5 --json       # fewer samples, machine-readable rows
//   npm run bench -- --sizes 100000 --profile   # where one snap's time goes (git calls)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { spawnSync } from 'node:child_process';
import { benchEnv, ROOT } from './measure.js';
import { benchRepo, resetRepo } from './repos.js';
import { SCENARIOS, startupReference, type Row } from './scenarios.js';
import { formatTable } from './table.js';
import { profileSnap } from './profile.js';

const USAGE = `usage: npm run bench -- [--sizes 1000,10000,100000] [--runs N] [--only ID,...] [--json] [--profile]

  --sizes    repository sizes in files (default 1000,10000,100000); generated once, cached in .bench/
  --runs     timed samples per figure, median reported (default 9; the first-snapshot row uses at most 5)
  --only     scenarios to run (${SCENARIOS.map((s) => s.id).join(', ')})
  --json     print the rows as JSON instead of the table
  --profile  also print, per size, each git process of one \`agentsnap snap\` (GIT_TRACE2_EVENT)`;

function main(): void {
  const { values } = parseArgs({
    options: {
      sizes: { type: 'string', default: '1000,10000,100000' },
      runs: { type: 'string', default: '9' },
      only: { type: 'string' },
      json: { type: 'boolean', default: false },
      profile: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const sizes = values.sizes.split(',').map((s) => Number(s.replace(/[_k]/gi, (m) => (m.toLowerCase() === 'k' ? '000' : ''))));
  const runs = Number(values.runs);
  if (sizes.some((n) => !Number.isInteger(n) || n < 10) || !Number.isInteger(runs) || runs < 1) {
    process.stderr.write(`${USAGE}\n`);
    process.exitCode = 2;
    return;
  }
  const only = values.only ? new Set(values.only.split(',')) : null;
  const scenarios = SCENARIOS.filter((s) => !only || only.has(s.id));

  const log = (s: string) => process.stderr.write(`${s}\n`);
  const cacheDir = path.join(ROOT, '.bench');
  fs.mkdirSync(cacheDir, { recursive: true });
  const env = benchEnv();
  try {
    const gitVersion = spawnSync('git', ['version'], { encoding: 'utf8', env: env.env }).stdout.trim();
    const loadBefore = os.loadavg();
    const startup = startupReference(env, runs);
    const rows: Row[] = [];
    const profiles: string[] = [];
    for (const size of sizes) {
      const repo = benchRepo(cacheDir, size, env, log);
      resetRepo(repo, env, log);
      log(`${size} files:`);
      for (const sc of scenarios) rows.push(...sc.run({ repo, env, runs, log }));
      if (values.profile) profiles.push(profileSnap(repo, env));
    }
    if (values.json) {
      process.stdout.write(`${JSON.stringify({ git: gitVersion, node: process.version, cpus: os.cpus().length, runs, loadBefore, loadAfter: os.loadavg(), startup, rows }, null, 2)}\n`);
      return;
    }
    const load = (l: number[]) => l.map((x) => x.toFixed(1)).join(' ');
    const header = `agentsnap bench: ${gitVersion}, node ${process.version}, ${os.cpus().length} cores, ${os.platform()}; median of ${runs} interleaved runs; load average ${load(loadBefore)} before, ${load(os.loadavg())} after`;
    process.stdout.write(`\n${header}\n\n${formatTable(rows)}\n`);
    process.stdout.write(
      `\nreference: node start-up ${startup.nodeMs.toFixed(0)} ms, \`agentsnap --version\` ${startup.versionMs.toFixed(0)} ms (both included in every agentsnap figure)\n`,
    );
    for (const p of profiles) process.stdout.write(`\n${p}\n`);
  } finally {
    env.dispose();
  }
}

main();
