// The detached process that packs an ended session's objects after `wrap`
// has exited (maintainInBackground in maintenance.ts starts it): `node
// maintain-main.js <session>` in the session's worktree, with the wrapper's
// environment. Only an entry point: nothing imports it. It prints nothing and
// exits 0 whatever happens (packing is an optimisation; what it could not
// pack stays loose for the next maintenance).
import path from 'node:path';
import { assertSessionId } from '../base/ids.js';
import { acquireLock } from '../base/lock.js';
import { openRepo } from '../git/repo.js';
import { precomputeDonorOldest } from '../snapshot/snapshot.js';
import { packObjects } from './maintenance.js';
import { sessionPaths } from './refs.js';
import { loadState, writeState } from './state.js';

/** Another maintenance (a session's every-50 pack, another end) may hold the pack lock: wait for it, nobody waits on this. */
const PACK_LOCK_WAIT_MS = 10 * 60_000;

async function main(): Promise<void> {
  const id = assertSessionId(process.argv[2] ?? '');
  const repo = await openRepo(process.cwd(), { env: process.env });
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

main().catch(() => undefined);

