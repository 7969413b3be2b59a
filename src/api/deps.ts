// `--sync-deps` for the API's operations (undo, redo, restore, revert: ./undo.ts; op undo: ./op.ts): after an
// operation is done, the package manager's command for each dependency file it moved (src/deps/). Not exported by
// the library: its functions take `syncDeps` and `depsListener`.
import type { Repo } from '../git/repo.js';
import type { OperationResult } from '../restore/undo.js';
import { syncDeps, type DepsSyncListener, type DepsSyncOutcome } from '../deps/sync.js';

/** `--sync-deps`: the commands for what the operation `r` moved, run; null when not asked for (or a dry run). */
export async function runDepsSync(
  repo: Repo,
  r: OperationResult | null,
  opts: { syncDeps?: boolean | undefined; depsListener?: DepsSyncListener | undefined; env?: NodeJS.ProcessEnv | undefined },
): Promise<DepsSyncOutcome[] | null> {
  if (!opts.syncDeps || !r || r.dryRun) return null;
  return syncDeps(repo.worktree, r.deps, opts.env ?? process.env, opts.depsListener);
}
