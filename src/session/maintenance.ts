// Keeps agentsnap's own objects packed: every snapshot writes a few loose
// objects (a commit, changed trees and blobs), and loose objects cost a disk
// block each. Every PACK_EVERY snapshots the objects reachable from the
// session's head but not from the head packed last time are written into one
// pack, and loose copies of packed objects are removed (as `git repack -d`
// does). Those packs are listed in `<state>/packs.json` and merged in a
// geometric progression (as `git repack --geometric=2`, but only over that
// list), so their number grows with the log of agentsnap's objects. Nothing
// else of the user's repository is touched: no other pack is read for
// writing or deleted, and nothing is pruned.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Repo } from '../git/repo.js';
import { acquireLock } from '../base/lock.js';
import { lockFileIn, readStateFile, replaceStateFile, stateLayout } from '../base/state-dir.js';
import { exists, unlinkQuiet } from '../base/fsutil.js';
import { readHead } from '../git/plumbing.js';
import { errors } from '../base/errors.js';
import { packageRoot } from '../base/package-root.js';
import { precomputeDonorOldest } from '../snapshot/snapshot.js';
import { sessionPaths } from './refs.js';
import { loadState, writeState } from './state.js';

export const PACK_EVERY = 50;
/** Merging starts once agentsnap has this many packs of its own. */
export const MERGE_AT = 4;
/** Each pack left after a merge is at least this many times the size of all smaller ones together. */
const GEOMETRIC_FACTOR = 2;

interface PackState {
  unpacked: number;
  packedHead: string | null;
  session: { head: string };
}

interface Paths {
  state: string;
}

/**
 * `<state>/packs.json`: the packs agentsnap wrote (`pack-<hash>`, in
 * objects/pack), and `retired` ones, merged into a pack listed in `packs`,
 * whose deletion a killed maintenance may not have finished.
 */
interface PackList {
  packs: string[];
  retired: string[];
}

function packDir(repo: Repo): string {
  return path.join(repo.commonDir, 'objects', 'pack');
}

function packListFile(repo: Repo): string {
  return stateLayout.packsJson(repo);
}

export function readPackList(repo: Repo): PackList {
  try {
    const raw = JSON.parse(readStateFile(packListFile(repo))?.toString('utf8') ?? '{}') as Partial<PackList>;
    const names = (v: unknown) =>
      Array.isArray(v) ? v.filter((n): n is string => typeof n === 'string' && /^pack-[0-9a-f]{40,64}$/.test(n)) : [];
    return { packs: names(raw.packs), retired: names(raw.retired) };
  } catch {
    return { packs: [], retired: [] }; /* torn or foreign (a link): the packs stay, unlisted, and are never merged */
  }
}

function writePackList(repo: Repo, list: PackList): void {
  replaceStateFile(packListFile(repo), JSON.stringify(list));
}

/** The name pack-objects printed (its hash) as `pack-<hash>`, or null when it wrote no pack. */
function packName(stdout: Buffer): string | null {
  const hash = stdout.toString('utf8').trim();
  return /^[0-9a-f]{40,64}$/.test(hash) ? `pack-${hash}` : null;
}

/**
 * Packs the objects of `head` not reachable from `since`, records the pack
 * and merges agentsnap's packs when there are enough. Under a repository-wide
 * lock (sessions pack independently); busy means another one is at it: the
 * objects stay loose until next time.
 */
export async function packObjects(repo: Repo, head: string, since: string | null, opts: { lockTimeoutMs?: number } = {}): Promise<void> {
  const dir = packDir(repo);
  // A repository removed meanwhile (the pack of an ended session runs in the background) is not made again.
  if (!exists(path.dirname(dir)) || !exists(repo.stateDir))
    throw errors.internal(`${repo.commonDir} is gone.`, { data: { commonDir: repo.commonDir } });
  fs.mkdirSync(dir, { recursive: true });
  const lock = await acquireLock(lockFileIn(repo, 'packs.lock'), { timeoutMs: opts.lockTimeoutMs ?? 2000, purpose: 'pack' });
  try {
    const objects = await ownObjects(repo, head, since);
    // --incremental leaves out objects that are already packed; --local those of alternates.
    const res = objects
      ? await repo.git(['-c', 'pack.writeBitmaps=false', 'pack-objects', '-q', '--incremental', '--local', path.join(dir, 'pack')], {
          input: objects,
        })
      : null;
    const name = res ? packName(res.stdout) : null;
    // A kill before this line leaves the new pack unlisted: valid, never merged.
    if (name) {
      const list = readPackList(repo);
      if (!list.packs.includes(name)) writePackList(repo, { ...list, packs: [...list.packs, name] });
    }
    // Even when nothing new was packed: a snapshot since the last pack may have written loose again what a pack holds
    // (the warm engine reads a racy file again and writes its blob and trees; issue 7's disk figure: 99 such objects).
    await repo.git(['prune-packed', '-q']);
    // The new objects are packed whatever happens to the merge.
    await mergeOwnPacks(repo).catch(() => {}); // the new objects are packed whatever happens to the merge: a failed one leaves more packs, nothing lost
  } finally {
    lock.release();
  }
}

/**
 * The objects of `head` not reachable from `since` that are agentsnap's to
 * pack, as pack-objects reads them (`<oid> <path>` lines; empty: none): the
 * user's index (its blobs and cached trees) and HEAD's tree are left out.
 * A snapshot holds the user's files, and in a repository whose objects are
 * loose (a fresh `git add` of 100k files) packing those is the user's gc's
 * work, not agentsnap's: it took seconds at a session's end. What stays
 * loose of them is what was loose before agentsnap came.
 */
async function ownObjects(repo: Repo, head: string, since: string | null): Promise<string> {
  const args = ['rev-list', '--objects', head];
  if (since) args.push(`^${since}`);
  args.push('--not', '--indexed-objects');
  const userHead = (await readHead(repo)).commit;
  if (userHead) args.push(`${userHead}^{tree}`);
  return (await repo.git(args)).stdout.toString('utf8');
}

/** Removes a pack's files, the index first: without it git no longer sees the pack. */
function deletePack(dir: string, name: string): void {
  for (const ext of ['.idx', '.pack', '.rev', '.bitmap', '.mtimes']) unlinkQuiet(path.join(dir, name + ext));
}

/** How many of the smallest packs (sizes ascending) to merge so the rest, with the result, is a geometric progression (git repack --geometric's split). */
export function geometricSplit(sizes: number[], factor = GEOMETRIC_FACTOR): number {
  let i = sizes.length - 1;
  for (; i > 0; i--) if (sizes[i]! < factor * sizes[i - 1]!) break;
  let split = i > 0 ? i + 1 : 0;
  let total = 0;
  for (let j = 0; j < split; j++) total += sizes[j]!;
  while (split < sizes.length && sizes[split]! < factor * total) total += sizes[split++]!;
  return split;
}

/**
 * Merges the smallest of agentsnap's packs into one. The new pack is complete
 * (pack-objects renames it into place, index last) before the list names it
 * and the merged ones are retired; they are deleted only then. A kill at any
 * point leaves every object in a complete pack: at worst a `tmp_pack_*` (gc
 * removes it), an unlisted duplicate pack, or retired packs this finishes
 * deleting next time. Packs with a `.keep` or `.promisor` file, and every
 * pack when a multi-pack-index exists (it would name a deleted pack), are
 * left as they are. Needs `pack-objects --stdin-packs` (git 2.32); with an
 * older git the packs stay as they are.
 */
export async function mergeOwnPacks(repo: Repo): Promise<void> {
  const dir = packDir(repo);
  const list = readPackList(repo);
  for (const name of list.retired) if (!list.packs.includes(name)) deletePack(dir, name);
  const sized: { name: string; size: number }[] = [];
  const kept: string[] = [];
  for (const name of list.packs) {
    let size: number;
    try {
      size = fs.statSync(path.join(dir, `${name}.pack`)).size;
      fs.statSync(path.join(dir, `${name}.idx`));
    } catch {
      continue; // removed by the user's own gc (its objects are in the user's packs now)
    }
    if (exists(path.join(dir, `${name}.keep`)) || exists(path.join(dir, `${name}.promisor`))) kept.push(name);
    else sized.push({ name, size });
  }
  sized.sort((a, b) => a.size - b.size || a.name.localeCompare(b.name));
  const split = sized.length >= MERGE_AT && !exists(path.join(dir, 'multi-pack-index')) ? geometricSplit(sized.map((p) => p.size)) : 0;
  const tidy: PackList = { packs: [...kept, ...sized.map((p) => p.name)], retired: [] };
  if (split < 2) {
    if (tidy.packs.length !== list.packs.length || list.retired.length > 0) writePackList(repo, tidy);
    return;
  }
  const merge = sized.slice(0, split).map((p) => p.name);
  let name: string | null;
  try {
    const res = await repo.git(['-c', 'pack.writeBitmaps=false', 'pack-objects', '-q', '--stdin-packs', path.join(dir, 'pack')], {
      input: merge.map((n) => `${n}.pack\n`).join(''),
    });
    name = packName(res.stdout);
  } catch {
    name = null; // an older git (no --stdin-packs), or it failed: the packs stay
  }
  if (!name) {
    if (tidy.packs.length !== list.packs.length || list.retired.length > 0) writePackList(repo, tidy);
    return;
  }
  // The same objects give the same pack name: a merge that reproduces one of its inputs keeps it.
  const retired = merge.filter((n) => n !== name);
  const packs = [
    ...kept,
    name,
    ...sized
      .slice(split)
      .map((p) => p.name)
      .filter((n) => n !== name),
  ];
  writePackList(repo, { packs, retired });
  for (const n of retired) deletePack(dir, n);
  writePackList(repo, { packs, retired: [] });
}

/** Packs this session's new objects when enough snapshots have accumulated (or when forced, e.g. at session end). */
export async function maybeMaintain(repo: Repo, paths: Paths, state: PackState, force = false): Promise<void> {
  if (state.unpacked === 0) return;
  if (!force && state.unpacked < PACK_EVERY) return;
  try {
    await packObjects(repo, state.session.head, state.packedHead);
  } catch {
    // Packing is an optimisation: a failure (or another session packing) leaves loose objects, never damage. Try again next time.
    return;
  }
  state.unpacked = 0;
  state.packedHead = state.session.head;
  try {
    const cur = JSON.parse(readStateFile(paths.state)?.toString('utf8') ?? 'null') as Record<string, unknown> | null;
    if (!cur) return; /* no cache to correct: it is folded from the journal when next read */
    cur.unpacked = 0;
    cur.packedHead = state.packedHead;
    replaceStateFile(paths.state, JSON.stringify(cur));
  } catch {
    /* the cache is rebuilt when missing */
  }
}

/**
 * Packs the ended session `id`'s objects in a detached process at low
 * priority (src/runtime/maintain-main.ts) and returns at once: the end of a
 * session is the user's time (their shell waits for `wrap` to exit), and a
 * pack of a session that snapshotted 100k new files takes seconds. A failure
 * to start leaves the objects loose for the next maintenance.
 */
export function maintainInBackground(repo: Repo, id: string): void {
  // tsc's module, whether this code runs from it, from the bundled CLI or from src/ (tests).
  const entry = path.join(packageRoot(), 'dist', 'runtime', 'maintain-main.js');
  try {
    const child = spawn(process.execPath, [entry, id], { cwd: repo.worktree, env: repo.callerEnv, detached: true, stdio: 'ignore' });
    child.on('error', () => undefined);
    if (child.pid) {
      try {
        os.setPriority(child.pid, 10);
      } catch {
        /* as it is */
      }
    }
    child.unref();
  } catch {
    /* stays loose */
  }
}

/** Another maintenance (a session's every-50 pack, another end) may hold the pack lock: wait for it, nobody waits on this. */
const PACK_LOCK_WAIT_MS = 10 * 60_000;

/**
 * The maintenance after a session ended (in maintain-main.ts's detached
 * process, or in the warm server that ended it): what the next session's
 * baseline needs from its private index, then a pack of its objects. Never
 * fails: what it could not pack stays loose for the next maintenance.
 */
export async function maintainEndedSession(repo: Repo, id: string): Promise<void> {
  const p = sessionPaths(repo, id);
  // For the next session's baseline (adoptDonor), off its start; no lock: what it records is keyed by both files.
  precomputeDonorOldest(repo, p.index);
  // Read under the session lock, packed without it (an undo right after the session must not wait for the pack).
  const lockOpts = { timeoutMs: PACK_LOCK_WAIT_MS, purpose: 'pack (after the session)' };
  let lock = await acquireLock(p.lock, lockOpts);
  let head: string;
  let since: string | null;
  try {
    const state = await loadState(repo, id);
    if (state.unpacked === 0) return;
    head = state.session.head;
    since = state.packedHead;
  } finally {
    lock.release();
  }
  await packObjects(repo, head, since, { lockTimeoutMs: PACK_LOCK_WAIT_MS });
  lock = await acquireLock(p.lock, lockOpts);
  try {
    const state = await loadState(repo, id);
    // Everything reachable from `head` is packed now; snapshots taken since (an undo after the end) are not.
    if (state.session.head === head) state.unpacked = 0;
    state.packedHead = head;
    writeState(p.state, state);
  } finally {
    lock.release();
  }
}
