// The incremental engine (src/snapshot/incremental.ts) against the full scan, for its example tests: each
// snapshot the engine takes must equal a full scan of the same moment on a fresh throwaway index (tree,
// skipped set, changed list).
import * as assert from 'uvu/assert';
import type { TempRepo } from './helpers.js';
import type { Repo } from '../../src/git/repo.js';
import type { Settings } from '../../src/settings/settings.js';
import { snapshotTree } from '../../src/snapshot/snapshot.js';
import { removeTempIndex, tempIndex } from '../../src/snapshot/snapshot-now.js';
import type { IncrementalResult, IncrementalSnapshotter } from '../../src/snapshot/incremental.js';

export interface EngineCtx {
  t: TempRepo;
  repo: Repo;
  settings: Settings;
  engine: IncrementalSnapshotter;
}

/** What a full scan on a fresh throwaway index says about the worktree now. */
export async function fullScanNow(c: EngineCtx, parentTree: string | null, settings: Settings = c.settings) {
  const idx = tempIndex(c.repo, 'reference');
  try {
    return await snapshotTree(c.repo, { indexFile: idx, settings, parentTree });
  } finally {
    removeTempIndex(idx);
  }
}

const skippedSet = (s: { path: string; reason: string; size?: number }[]) => s.map((x) => `${x.reason}:${x.size ?? ''}:${x.path}`).sort();

/** Takes the engine's snapshot and asserts it equals the full scan's. */
export async function checkEngine(
  c: EngineCtx,
  parentTree: string | null,
  label: string,
  settings: Settings = c.settings,
): Promise<IncrementalResult> {
  let got: IncrementalResult;
  try {
    got = await c.engine.snapshot({ settings, parentTree });
  } catch (e) {
    throw new Error(`${label}: the engine failed (${c.engine.stats.lastFullReason}): ${(e as Error).message}`);
  }
  let want: Awaited<ReturnType<typeof fullScanNow>>;
  try {
    want = await fullScanNow(c, parentTree, settings);
  } catch (e) {
    throw new Error(`${label}: the full scan failed: ${(e as Error).message}`);
  }
  if (got.tree !== want.tree) {
    const diff = c.t.gitRaw(['diff-tree', '-r', '--name-status', want.tree, got.tree]).stdout;
    assert.unreachable(`${label}: tree differs from the full scan (${got.mode}; last full: ${c.engine.stats.lastFullReason}):\n${diff}`);
  }
  assert.equal(skippedSet(got.skipped), skippedSet(want.skipped), `${label}: skipped differs (${got.mode})`);
  assert.equal(got.changed, want.changed, `${label}: changed differs`);
  return got;
}
