// What agentsnap's git hooks (`agentsnap hooks install`) add to the user's own git commands when no agent
// session is involved (issue 32 item 11): `git commit` of one file, and a rebase of 20 commits (git runs no hook of
// the default install for a commit it replays, and reference-transaction, installed only with `--strict`, about
// ten times). Throwaway clones of the bench repository (objects shared): with the hooks, with `--strict`, without
// hooks, and with hooks of the same names that only exit; the same commands interleaved in all. The hooks' own
// checks run in full; no Node process starts (test/git/hooks-cost.test.ts counts them).
import fs from 'node:fs';
import path from 'node:path';
import { agentsnapCmd, git, interleave, median, run, timed, type Cmd } from './measure.js';
import { HOOK_NAMES, STRICT_HOOKS } from '../src/install/git-hooks.js';
import { timeRow, type Row, type Scenario, type ScenarioContext, type Target } from './scenarios.js';

const REBASED = 20;
const COMMIT_TARGET: Target = { maxRatio: Number.POSITIVE_INFINITY, maxAddedMs: 30, issue: 32, sizes: [10, 1000] };
const REBASE_TARGET: Target = { maxRatio: 1.5, issue: 32, sizes: [10, 1000] };

/** A clone sharing the bench repository's objects, with `feature` (REBASED one-line commits) and `onto` to rebase it on. */
function clone(ctx: ScenarioContext, name: string): string {
  const { repo, env } = ctx;
  const dir = path.join(env.base, `git-hooks-${name}-${repo.key}`);
  fs.rmSync(dir, { recursive: true, force: true });
  git(env, env.base, ['clone', '-q', '--shared', repo.dir, dir]);
  for (const [k, v] of [
    ['maintenance.auto', 'false'],
    ['gc.auto', '0'],
  ])
    git(env, dir, ['config', k as string, v as string]);
  const file = path.join(dir, repo.editFile);
  git(env, dir, ['checkout', '-q', '-b', 'onto']);
  fs.writeFileSync(path.join(dir, 'git-hooks-onto.txt'), 'onto\n');
  git(env, dir, ['add', 'git-hooks-onto.txt']);
  git(env, dir, ['commit', '-q', '-m', 'onto']);
  git(env, dir, ['checkout', '-q', '-b', 'feature', 'HEAD~1']);
  for (let i = 1; i <= REBASED; i++) {
    fs.appendFileSync(file, `// feature ${i}\n`);
    git(env, dir, ['commit', '-q', '-am', `feature ${i}`]);
  }
  git(env, dir, ['branch', 'feature-start']);
  git(env, dir, ['checkout', '-q', '-b', 'commits', 'onto']);
  return dir;
}

export const gitHooksScenario: Scenario = {
  id: 'git-hooks',
  async run(ctx: ScenarioContext): Promise<Row[]> {
    const { repo, env } = ctx;
    if (repo.size > 10_000 && !ctx.explicit.has('git-hooks')) return [];
    const withHooks = clone(ctx, 'with');
    const strictHooks = clone(ctx, 'strict');
    const without = clone(ctx, 'without');
    const emptyHooks = clone(ctx, 'empty');
    const clones = [withHooks, strictHooks, without, emptyHooks];
    try {
      run(agentsnapCmd(env, withHooks, ['hooks', 'install']));
      run(agentsnapCmd(env, strictHooks, ['hooks', 'install', '--strict']));
      // The floor of any git hook: the names `hooks install` installs, each `exit 0` (git still forks and execs sh for each).
      for (const name of HOOK_NAMES.filter((n) => !STRICT_HOOKS.includes(n)))
        fs.writeFileSync(path.join(emptyHooks, '.git', 'hooks', name), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
      const gitCmd = (cwd: string, args: string[]): Cmd => ({ file: 'git', args, cwd, env: env.env });
      const commit = (dir: string, name: string) => ({
        name,
        prepare: (i: number) => {
          fs.appendFileSync(path.join(dir, 'git-hooks-onto.txt'), `${i}\n`);
          git(env, dir, ['add', 'git-hooks-onto.txt']);
        },
        run: () => timed([gitCmd(dir, ['commit', '-q', '-m', 'one file'])]).ms,
      });
      const rebase = (dir: string, name: string) => ({
        name,
        prepare: () => {
          git(env, dir, ['checkout', '-q', '-B', 'feature', 'feature-start']);
        },
        run: () => {
          const ms = timed([gitCmd(dir, ['rebase', '-q', 'onto'])]).ms;
          const n = git(env, dir, ['rev-list', '--count', 'onto..HEAD']).trim();
          if (n !== String(REBASED)) throw new Error(`the rebase left ${n} commits on onto, not ${REBASED}`);
          return ms;
        },
      });
      ctx.log(`  git hooks: git commit of one file, a rebase of ${REBASED} commits, with and without agentsnap's hooks`);
      for (const dir of clones) git(env, dir, ['checkout', '-q', 'commits']);
      const commits = await interleave(
        [commit(withHooks, 'hooks'), commit(strictHooks, 'strict'), commit(without, 'git'), commit(emptyHooks, 'empty')],
        ctx.runs,
      );
      const rebases = await interleave(
        [rebase(withHooks, 'hooks'), rebase(strictHooks, 'strict'), rebase(without, 'git'), rebase(emptyHooks, 'empty')],
        ctx.runs,
      );
      const figure = (samples: Map<string, number[]>, what: string, baseline: string, target: Target, notes: string[]) => {
        const a = median(samples.get('hooks') ?? []);
        const b = median(samples.get('git') ?? []);
        return timeRow(ctx, {
          what,
          agentsnapMs: a,
          baseline,
          baselineMs: b,
          samples: (samples.get('hooks') ?? []).length,
          target,
          notes,
        });
      };
      const floor = (samples: Map<string, number[]>, r: Row) => {
        const e = median(samples.get('empty') ?? []);
        const strict = median(samples.get('strict') ?? []);
        return `hooks of the same names that only \`exit 0\` (the floor of any git hook): ${e.toFixed(1)} ms, ${(e / r.baselineMs).toFixed(2)}×; with \`--strict\` (reference-transaction too): ${strict.toFixed(1)} ms, ${(strict / r.baselineMs).toFixed(2)}×`;
      };
      const commitRow = figure(commits, 'git commit (one file), git hooks installed', 'git commit without the hooks', COMMIT_TARGET, []);
      commitRow.notes.push(
        `added ${(commitRow.agentsnapMs - commitRow.baselineMs).toFixed(1)} ms per commit (no agent session; target +≤30 ms)`,
      );
      const rebaseRow = figure(
        rebases,
        `git rebase of ${REBASED} commits, git hooks installed`,
        'git rebase without the hooks',
        REBASE_TARGET,
        [],
      );
      rebaseRow.notes.push(`${rebaseRow.ratio.toFixed(2)}× the rebase without the hooks (no agent session; target ≤1.5×)`);
      commitRow.notes.push(floor(commits, commitRow));
      rebaseRow.notes.push(floor(rebases, rebaseRow));
      return [commitRow, rebaseRow];
    } finally {
      for (const dir of clones) fs.rmSync(dir, { recursive: true, force: true });
    }
  },
};
