// The git options every snapshot command runs with, and the one status
// command a snapshot lists the worktree with. A module of its own (no other
// imports) so the executable can start that status before it loads the CLI
// (src/snapshot/status-prefetch.ts) with exactly the arguments the snapshot uses.
/** Options that keep git from transforming content, running user programs, or printing advice. */
export const SNAPSHOT_GIT_CONFIG = [
  '-c',
  'core.autocrlf=false',
  '-c',
  'core.safecrlf=false',
  '-c',
  'core.fsmonitor=false',
  // The executable bit as on disk, whatever the user's core.fileMode: a restore writes back what was recorded.
  '-c',
  'core.fileMode=true',
  // What is on disk, whatever the user's core.symlinks: under symlinks=false git keeps the 120000 mode of a
  // tracked symlink for the plain file in its place, and a restore would then expect a symlink there.
  '-c',
  'core.symlinks=true',
  '-c',
  'advice.addEmbeddedRepo=false',
  '-c',
  'advice.addIgnoredFile=false',
  '-c',
  'gc.auto=0',
  '-c',
  'maintenance.auto=false',
];

/**
 * The options a snapshot adds for this repository's config (see
 * snapshotOverrides in snapshot.ts): every filter driver switched off (the
 * snapshot keeps raw bytes, hashed with --no-filters where attributes apply,
 * so a clean filter only costs time, and a required one that cannot run,
 * git-lfs missing, failed every snapshot), and core.ignoreCase=false where
 * the user's true is not the filesystem's (a name differing from a tracked
 * one only in case would count as tracked and be in no snapshot), with
 * git's untracked cache off: a cache the user's git built under
 * ignoreCase=true left such names out, and git would trust it (it does not
 * record the case rule it was built with); an index written under
 * core.untrackedCache=false drops it. These go after a command's own `-c`
 * options, so they win.
 * A driver whose name holds "=" cannot be named in a `-c` key: left as it is.
 */
export function snapshotConfigOverrides(filterDrivers: readonly string[], caseSensitiveIgnoreCase: boolean): string[] {
  const out: string[] = [];
  for (const name of filterDrivers) {
    if (name.includes('=') || name.includes('\n')) continue;
    // An empty clean/process command is no filter; not required, git then takes the bytes as they are.
    out.push('-c', `filter.${name}.clean=`, '-c', `filter.${name}.process=`, '-c', `filter.${name}.required=false`);
  }
  if (caseSensitiveIgnoreCase) out.push('-c', 'core.ignoreCase=false', '-c', 'core.untrackedCache=false');
  return out;
}

/**
 * `git status -uall` as a snapshot runs it on its index (see
 * statusWithUntrackedCache): with git's untracked cache only where the index
 * is written back (`writeBack`), which is where the cache is kept.
 */
export function snapshotStatusArgs(writeBack: boolean): string[] {
  return [
    ...SNAPSHOT_GIT_CONFIG,
    // Built only where it is written back (~30 ms of a cold status at 100k files otherwise).
    '-c',
    `core.untrackedCache=${writeBack}`,
    // The cache keeps the flags it was built with: those of -uall.
    '-c',
    'status.showUntrackedFiles=all',
    'status',
    '--porcelain=v2',
    '-z',
    '--untracked-files=all',
    '--no-renames',
    '--ignore-submodules=dirty',
  ];
}
