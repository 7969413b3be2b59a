// Snapshots outside any session's chain (apply's safety snapshot, a new
// worktree's origin, diff against the worktree, gc's "unsaved work" check),
// taken through a throwaway index so no session's private index moves.
import fs from 'node:fs';
import path from 'node:path';
import type { Repo } from '../git/repo.js';
import type { Settings } from '../settings/settings.js';
import { copyIndexFile, noFlagsMarker, snapshotTree } from './snapshot.js';
import { unlinkQuiet } from '../base/fsutil.js';
import { ensureStateDir, stateLayout } from '../base/state-dir.js';

/** A fresh path for a throwaway index under `<state>/tmp/` (gc removes leftovers of killed commands). */
export function tempIndex(repo: Repo, purpose: string): string {
  const dir = stateLayout.tmpDir(repo);
  ensureStateDir(dir);
  return path.join(dir, `index.${purpose}-${process.pid}-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`);
}

export function removeTempIndex(file: string): void {
  unlinkQuiet(file);
  unlinkQuiet(`${file}.lock`);
  unlinkQuiet(noFlagsMarker(file));
}

export interface SnapshotNowOptions {
  /**
   * An index to start from (a session's private index): its stat data spares
   * re-hashing unchanged files. Without one, snapshotTree seeds from the
   * user's index.
   */
  seedIndex?: string | undefined;
}

/** A snapshot of the worktree as it is now through a throwaway index: the tree, and what it left out. */
export async function snapshotNow(
  repo: Repo,
  settings: Settings,
  purpose: string,
  opts: SnapshotNowOptions = {},
): Promise<{ tree: string; skipped: string[] }> {
  const idx = tempIndex(repo, purpose);
  try {
    if (opts.seedIndex && fs.existsSync(opts.seedIndex)) copyIndexFile(opts.seedIndex, idx);
    const snap = await snapshotTree(repo, { indexFile: idx, settings, parentTree: null });
    return { tree: snap.tree, skipped: snap.skipped.map((s) => s.path) };
  } finally {
    removeTempIndex(idx);
  }
}
