// A wrapper's snapshot taken by this worktree's running background server
// (issue 19): a server whose file watcher has been up since before the session
// knows what changed, so the session's baseline and final snapshot cost what a
// hooked call costs instead of a look at the whole worktree each. The request
// goes over the server's channel (channel.ts): the record `tree` with the
// options as its payload; the reply is the snapshot as JSON.
// Any doubt (no server, another git environment or other settings, a server
// without its engine, one that dies or answers anything else) gives null, and
// the caller takes the snapshot itself: the server only ever saves time.
import crypto from 'node:crypto';
import type { Settings } from '../settings/settings.js';
import type { TreeSnapshotResult } from '../snapshot/snapshot.js';
import type { Repo } from '../git/repo.js';
import { snapshotTree } from '../snapshot/snapshot.js';
import { underContentLock, type Snapshotter } from '../snapshot/snapshotter.js';
import { serverInfo } from './server.js';
import { callServer, replyBytes, trustedServerPid } from './channel.js';

/** What the wrapper asks for (the payload of a tree call). */
export interface TreeRequest {
  v: 1;
  /** The worktree the wrapper snapshots (the server compares it with its own, as real paths). */
  worktree: string;
  parentTree: string | null;
  /** settingsKey of the wrapper's settings: a server reading other settings declines. */
  settings: string;
}

/** A digest of everything in the settings that decides a snapshot (regular expressions and git config included). */
export function settingsKey(settings: Settings): string {
  const json = JSON.stringify(settings, (_k, v: unknown) => (v instanceof RegExp ? String(v) : v instanceof Map ? [...v.entries()] : v));
  return crypto.createHash('sha256').update(json).digest('hex');
}

/** Whether `value` has the shape of a snapshot result (the server is ours, but its reply is bytes on a FIFO). */
function isTreeResult(value: unknown): value is TreeSnapshotResult {
  const r = value as Partial<TreeSnapshotResult> | null;
  return (
    !!r &&
    typeof r.tree === 'string' &&
    /^[0-9a-f]{40}([0-9a-f]{24})?$/.test(r.tree) &&
    Array.isArray(r.skipped) &&
    Array.isArray(r.changed)
  );
}

/**
 * Asks the background server of `repo`'s worktree for a snapshot; null when
 * none runs (or a wrapper hosts it, or its run dir fails the trust check), or it cannot vouch for the result.
 */
export async function snapshotByServer(
  repo: Pick<Repo, 'stateDir' | 'gitDir' | 'commonDir' | 'worktree'>,
  req: { parentTree: string | null; settings: Settings },
): Promise<TreeSnapshotResult | null> {
  if (process.platform !== 'linux') return null;
  const info = serverInfo(repo);
  if (!info || info.hosted) return null;
  // git opened this repository already (its own ownership check): the trust check starts at the git dir.
  if (trustedServerPid({ top: null, dotGit: null, gitDir: repo.gitDir, commonDir: repo.commonDir, run: info.runDir }) !== info.pid)
    return null;
  const body: TreeRequest = { v: 1, worktree: repo.worktree, parentTree: req.parentTree, settings: settingsKey(req.settings) };
  const reply = await callServer(info.runDir, ['tree'], JSON.stringify(body));
  if (!reply || reply.kind !== 'exit' || reply.fields[0] !== '0') return null;
  try {
    const res: unknown = JSON.parse(replyBytes(reply.fields[1])?.toString('utf8') ?? '');
    return isTreeResult(res) ? res : null;
  } catch {
    return null; // a garbled reply: the caller snapshots itself (a full scan)
  }
}

/**
 * The snapshotter of a wrapper whose worktree has a background server: the server's snapshot where it gives one
 * (the server takes the worktree content lock itself), else the wrapper's own full scan.
 */
export function serverSnapshotter(repo: Repo): Snapshotter {
  return {
    snapshot: async (o, lock) =>
      (await snapshotByServer(repo, { parentTree: o.parentTree, settings: o.settings })) ??
      underContentLock(lock, o.indexFile, () => snapshotTree(repo, { ...o, donors: [] })),
  };
}
