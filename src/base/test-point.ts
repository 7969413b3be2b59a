// Named points where a test makes something happen deterministically, between
// two steps of agentsnap that a real race could separate (a `git gc --prune=now`
// after a snapshot wrote its objects and before anything refers to them).
// AGENTSNAP_TEST_POINT=<name> and AGENTSNAP_TEST_POINT_RUN=<shell command>: when
// the process reaches that point, the command runs (in `cwd`, the repository's
// worktree: tests call the CLI in-process) to its end first. Unset (always,
// outside tests), a point costs one environment lookup.
import { spawnSync } from 'node:child_process';

export function testPoint(name: string, env: NodeJS.ProcessEnv, cwd: string): void {
  if (env.AGENTSNAP_TEST_POINT !== name) return;
  const command = env.AGENTSNAP_TEST_POINT_RUN;
  if (!command) return;
  spawnSync('/bin/sh', ['-c', command], { cwd, env, stdio: 'ignore' });
}
