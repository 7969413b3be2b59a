// The real npm in tests, offline: no network, no audit or fund requests, its cache inside the test's temp dir
// (packages come from local tarballs; see test/cli/cli-deps.test.ts and test/cli/environment.test.ts).
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import type { TempRepo } from './helpers.js';

export function npmEnv(repo: TempRepo): Record<string, string> {
  return {
    npm_config_offline: 'true',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
    npm_config_loglevel: 'error',
    npm_config_cache: path.join(repo.base, 'npm-cache'),
  };
}

/** `npm <args>` in `cwd`: its exit status and what it printed. */
export function runNpm(repo: TempRepo, cwd: string, args: string[]): { status: number | null; out: string } {
  const r = spawnSync('npm', args, { cwd, env: { ...repo.env, ...npmEnv(repo) }, encoding: 'utf8' });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}
