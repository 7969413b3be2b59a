// The git options every snapshot command runs with, and the one status
// command a snapshot lists the worktree with. A module of its own (no other
// imports) so the executable can start that status before it loads the CLI
// (src/status-prefetch.ts) with exactly the arguments the snapshot uses.
/** Options that keep git from transforming content, running user programs, or printing advice. */
export const SNAPSHOT_GIT_CONFIG = [
  '-c', 'core.autocrlf=false',
  '-c', 'core.safecrlf=false',
  '-c', 'core.fsmonitor=false',
  // The executable bit as on disk, whatever the user's core.fileMode: a restore writes back what was recorded.
  '-c', 'core.fileMode=true',
  '-c', 'advice.addEmbeddedRepo=false',
  '-c', 'advice.addIgnoredFile=false',
  '-c', 'gc.auto=0',
  '-c', 'maintenance.auto=false',
];

/**
 * `git status -uall` as a snapshot runs it on its index (see
 * statusWithUntrackedCache): with git's untracked cache only where the index
 * is written back (`writeBack`), which is where the cache is kept.
 */
export function snapshotStatusArgs(writeBack: boolean): string[] {
  return [
    ...SNAPSHOT_GIT_CONFIG,
    // Built only where it is written back (~30 ms of a cold status at 100k files otherwise).
    '-c', `core.untrackedCache=${writeBack}`,
    // The cache keeps the flags it was built with: those of -uall.
    '-c', 'status.showUntrackedFiles=all',
    'status', '--porcelain=v2', '-z', '--untracked-files=all', '--no-renames', '--ignore-submodules=dirty',
  ];
}
