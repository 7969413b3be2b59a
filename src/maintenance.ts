// Keeps agentsnap's own objects packed: every snapshot writes a few loose
// objects (a commit, changed trees and blobs), and loose objects cost a disk
// block each. Every PACK_EVERY snapshots the objects reachable from the
// session's head but not from the head packed last time are written into one
// pack, and loose copies of packed objects are removed (as `git repack -d`
// does). Nothing else of the user's repository is touched.
import fs from 'node:fs';
import path from 'node:path';
import type { Repo } from './repo.js';

export const PACK_EVERY = 50;

interface PackState {
  unpacked: number;
  packedHead: string | null;
  session: { head: string };
}

interface Paths {
  state: string;
}

export async function packObjects(repo: Repo, head: string, since: string | null): Promise<void> {
  const packBase = path.join(repo.commonDir, 'objects', 'pack', 'pack');
  fs.mkdirSync(path.dirname(packBase), { recursive: true });
  const revs = since ? `${head}\n^${since}\n` : `${head}\n`;
  // --incremental leaves out objects that are already packed; --local those of alternates.
  await repo.git(['-c', 'pack.writeBitmaps=false', 'pack-objects', '-q', '--revs', '--incremental', '--local', packBase], { input: revs });
  await repo.git(['prune-packed', '-q']);
}

/** Packs this session's new objects when enough snapshots have accumulated (or when forced, e.g. at session end). */
export async function maybeMaintain(repo: Repo, paths: Paths, state: PackState, force = false): Promise<void> {
  if (state.unpacked === 0) return;
  if (!force && state.unpacked < PACK_EVERY) return;
  try {
    await packObjects(repo, state.session.head, state.packedHead);
  } catch {
    // Packing is an optimisation: a failure leaves loose objects, never damage. Try again next time.
    return;
  }
  state.unpacked = 0;
  state.packedHead = state.session.head;
  try {
    const cur = JSON.parse(fs.readFileSync(paths.state, 'utf8')) as Record<string, unknown>;
    cur.unpacked = 0;
    cur.packedHead = state.packedHead;
    const tmp = `${paths.state}.tmp-${process.pid}`;
    fs.writeFileSync(tmp, JSON.stringify(cur), { mode: 0o600 });
    fs.renameSync(tmp, paths.state);
  } catch {
    /* the cache is rebuilt when missing */
  }
}
