// `agentsnap bisect` over a session of 64 steps (issue 17): how many runs of the
// command it takes (about log2(64) plus the two ends) and what it costs against
// the raw git sequence a user would run by hand for the same states: one
// `git worktree add`, then per state a forced checkout, `git clean -fd` and the
// command, and `git worktree remove`. Measured in the same run, interleaved.
import fs from 'node:fs';
import path from 'node:path';
import { agentsnapCmd, git, interleave, median, run, timed, type Cmd } from './measure.js';
import { removeAgentsnapState } from './repos.js';
import { timeRow, type Row, type Scenario, type ScenarioContext } from './scenarios.js';
import { stopServer } from './server.js';

const STEPS = 64;
const BREAKS = 41;
const DIR = 'bench-bisect';
const CHECK = `test ! -e ${DIR}/bug`;

export const bisectScenario: Scenario = {
  id: 'bisect',
  async run(ctx: ScenarioContext): Promise<Row[]> {
    const { repo, env } = ctx;
    if (repo.size > 10_000 && !ctx.explicit.has('bisect')) return [];
    stopServer(env, repo.dir);
    removeAgentsnapState(repo, env);
    const dir = path.join(repo.dir, DIR);
    const snap = (args: string[]) => run(agentsnapCmd(env, repo.dir, ['snap', ...args, '-q'], { AGENTSNAP_SERVER: 'off' }));
    try {
      ctx.log(`  bisect: recording a session of ${STEPS} steps (untimed)`);
      fs.mkdirSync(dir, { recursive: true });
      for (let i = 1; i <= STEPS; i++) {
        snap(['--phase', 'pre', '--tool', 'Bash']);
        fs.writeFileSync(path.join(dir, `step-${i}.txt`), `${i}\n`);
        if (i === BREAKS) fs.writeFileSync(path.join(dir, 'bug'), 'bug\n');
        snap(['--phase', 'post', '--step', String(i), '--tool', 'Bash']);
      }
      const log = JSON.parse(run(agentsnapCmd(env, repo.dir, ['log', '--json']))) as { step: number; pre: string; post: string }[];
      const states = [0, ...log.map((r) => r.step)];
      // The baseline's state is step 1's pre (the same tree).
      const commitOf = (n: number) => (n === 0 ? log[0]?.pre : log.find((r) => r.step === n)?.post) as string;
      let runsTaken = 0;
      let firstBad: number | null = null;
      // A new command text per sample (a comment): bisect reuses recorded results of the same command.
      const bisect = (i: number): Cmd => agentsnapCmd(env, repo.dir, ['bisect', '--run', `${CHECK} # sample ${i}`, '--json']);
      // The states git bisect would visit for the same search (the ends, then halving), checked by hand.
      const visits: number[] = [STEPS, 0];
      for (let lo = 0, hi = STEPS; hi - lo > 1; ) {
        const mid = states[Math.floor((lo + hi) / 2)] as number;
        visits.push(mid);
        if (mid >= BREAKS) hi = mid;
        else lo = mid;
      }
      const raw: Cmd[] = [];
      const wt = path.join(env.base, 'bisect-by-hand');
      raw.push({ file: 'git', args: ['worktree', 'add', '-q', '--detach', wt, commitOf(STEPS)], cwd: repo.dir, env: env.env });
      for (const n of visits) {
        raw.push({ file: 'git', args: ['checkout', '-q', '--detach', '-f', commitOf(n)], cwd: wt, env: env.env });
        raw.push({ file: 'git', args: ['clean', '-q', '-f', '-d'], cwd: wt, env: env.env });
        raw.push({ file: '/bin/sh', args: ['-c', `${CHECK} || true`], cwd: wt, env: env.env });
      }
      raw.push({ file: 'git', args: ['worktree', 'remove', '--force', wt], cwd: repo.dir, env: env.env });
      const runs = Math.max(1, Math.min(ctx.runs, 3));
      ctx.log(`  bisect over ${STEPS} steps (${runs} runs)`);
      const samples = await interleave(
        [
          {
            name: 'agentsnap',
            run: (i) => {
              const r = timed([bisect(i)]);
              const out = JSON.parse(r.stdout) as { firstBad: number | null; results: unknown[] };
              runsTaken = out.results.length;
              firstBad = out.firstBad;
              return r.ms;
            },
          },
          { name: 'raw git', run: () => timed(raw).ms },
        ],
        runs,
      );
      if (firstBad !== BREAKS) throw new Error(`bisect named step ${firstBad}, not ${BREAKS}`);
      const a = median(samples.get('agentsnap') ?? []);
      const b = median(samples.get('raw git') ?? []);
      return [
        timeRow(ctx, {
          what: `bisect over ${STEPS} steps`,
          agentsnapMs: a,
          baseline: 'raw git by hand',
          baselineMs: b,
          samples: (samples.get('agentsnap') ?? []).length,
          target: { maxRatio: 2, issue: 17, sizes: [1000, 10_000] },
          notes: [
            `bisect ran the command ${runsTaken} times (log2(${STEPS}) = ${Math.log2(STEPS)}, plus the two ends); by hand: ${visits.length} states, one worktree`,
          ],
        }),
      ];
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
      git(env, repo.dir, ['worktree', 'prune']);
      removeAgentsnapState(repo, env);
    }
  },
};
