// A wrapper's snapshot taken by this worktree's running background server
// (issue 19): a server whose file watcher has been up since before the session
// knows what changed, so the session's baseline and final snapshot cost what a
// hooked call costs instead of a look at the whole worktree each. The request
// goes over the server's channel (server.ts): a claimed slot, the options in
// `in.<slot>`, the line "<slot> <pid> tree"; the reply is the snapshot as JSON.
// Any doubt (no server, another git environment or other settings, a server
// without its engine, one that dies or answers anything else) gives null, and
// the caller takes the snapshot itself: the server only ever saves time.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Settings, SnapshotTreeOptions, TreeSnapshotResult } from '../git/types.js';
import type { Repo, RepoAccel } from '../git/repo.js';
import { withLock } from '../base/lock.js';
import { snapshotTree } from '../snapshot/snapshot.js';
import { contentLockFile } from '../session/locks.js';
import { serverInfo, SLOTS } from './server.js';

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
  return !!r && typeof r.tree === 'string' && /^[0-9a-f]{40}([0-9a-f]{24})?$/.test(r.tree) && Array.isArray(r.skipped) && Array.isArray(r.changed);
}

/**
 * Asks the background server of `repo`'s worktree for a snapshot; null when
 * none runs (or a wrapper hosts it), or it cannot vouch for the result.
 */
export async function snapshotByServer(repo: Pick<Repo, 'stateDir' | 'gitDir' | 'commonDir' | 'worktree'>, req: { parentTree: string | null; settings: Settings }): Promise<TreeSnapshotResult | null> {
  if (process.platform !== 'linux') return null;
  const info = serverInfo(repo);
  if (!info || info.hosted) return null;
  const run = info.runDir;
  let claim: string | null = null;
  let reply = -1;
  try {
    let slot = -1;
    for (let n = 0; n < SLOTS && slot < 0; n++) {
      try {
        fs.writeFileSync(path.join(run, `claim.${n}`), `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
        slot = n;
      } catch {
        /* taken */
      }
    }
    if (slot < 0) return null;
    claim = path.join(run, `claim.${slot}`);
    const body: TreeRequest = { v: 1, worktree: repo.worktree, parentTree: req.parentTree, settings: settingsKey(req.settings) };
    fs.writeFileSync(path.join(run, `in.${slot}`), JSON.stringify(body), { mode: 0o600 });
    // As bin/server-client.js: read-write first (never waits), then read-only, then drop ours, so that the
    // server's own write end is the only one left and its death reads as end of file.
    const slotFile = path.join(run, `slot.${slot}`);
    const ours = fs.openSync(slotFile, fs.constants.O_RDWR);
    reply = fs.openSync(slotFile, fs.constants.O_RDONLY);
    fs.closeSync(ours);
    const reqFd = fs.openSync(path.join(run, 'req'), fs.constants.O_RDWR);
    try {
      fs.writeSync(reqFd, `${slot} ${process.pid} tree\n`);
    } finally {
      fs.closeSync(reqFd);
    }
    const line = await readReplyLine(reply, `${process.pid} `);
    if (line === null) return null;
    // Answered: the server removes the claim after the payload (a next call must not take this slot before that).
    claim = null;
    const [kind, code, out] = line.split(' ');
    if (kind !== 'exit' || code !== '0' || !out || out === '-') return null;
    const res: unknown = JSON.parse(Buffer.from(out, 'base64').toString('utf8'));
    return isTreeResult(res) ? res : null;
  } catch {
    return null;
  } finally {
    if (reply >= 0) fs.closeSync(reply);
    if (claim) fs.rmSync(claim, { force: true });
  }
}

/**
 * Reads the reply meant for this process from its slot: blocking reads on a
 * pool thread (a FIFO has no readiness event in node:fs). End of file (the
 * server went away) gives null.
 */
async function readReplyLine(fd: number, prefix: string): Promise<string | null> {
  const buf = Buffer.alloc(64 * 1024);
  let text = '';
  for (;;) {
    const nl = text.indexOf('\n');
    if (nl >= 0) {
      const line = text.slice(0, nl);
      text = text.slice(nl + 1);
      if (line.startsWith(prefix)) return line.slice(prefix.length);
      continue; // a reply meant for a client killed before it read it
    }
    const n = await new Promise<number>((resolve, reject) => fs.read(fd, buf, 0, buf.length, null, (e, got) => (e ? reject(e) : resolve(got))));
    if (n === 0) return null;
    text += buf.toString('latin1', 0, n);
  }
}

/**
 * The snapshot accelerator of a wrapper whose worktree has a background
 * server: the server's snapshot where it gives one, else the wrapper's own
 * full scan under the content lock (the server takes that lock itself).
 */
export function serverSnapshotAccel(repo: Repo): Pick<RepoAccel, 'snapshot' | 'snapshotTakesContentLock'> {
  return {
    snapshotTakesContentLock: true,
    snapshot: async (o: SnapshotTreeOptions): Promise<TreeSnapshotResult> =>
      (await snapshotByServer(repo, { parentTree: o.parentTree, settings: o.settings })) ??
      withLock(contentLockFile(repo), { timeoutMs: o.settings.lockTimeoutMs, purpose: 'snapshot' }, () => snapshotTree(repo, o)),
  };
}
