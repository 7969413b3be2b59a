// restore/ (above session/): everything that writes files into a worktree —
// this engine, the operations undo/redo/restore/revert (undo.ts), what a
// target keeps (ignored-at-target.ts), the conversation rewind. Must not touch
// the user's branches or index, nor import the server, worktrees or the API.
//
// Over 500 lines on purpose: the check before the first write and the write
// phase's compare-and-replace must agree path by path (asides, links, kept
// versions, parents swapped for symlinks); split, each half would lose the
// other's invariants from view.
//
// The restore engine: makes a worktree match a target tree on a planned set
// of paths, and nothing else. The one implementation behind undo, redo,
// restore and revert, `apply`, and filling a new session worktree.
//
// - The plan is diff-tree between a snapshot of the worktree as it is (undo's
//   and apply's safety snapshot, or the commit a fresh worktree checked out)
//   and the target, so the work grows with the number of differing paths, not
//   with the size of the repository.
// - Bytes come from `git cat-file --batch`, never from checkout-index (which
//   would apply smudge and eol filters): what was snapshotted is what returns.
// - Everything is checked before the first write (prepareRestore): a path is
//   only changed when the disk still holds what the snapshot holds (or
//   already holds the target). Anything else (a concurrent write, an ignored
//   or skipped file in the way, a directory with other files, a symlink or
//   file in place of a parent directory, an unsafe path) is either left and
//   reported (undo: the rest completes) or makes the whole restore refuse
//   before anything is written (apply, new worktrees).
// - Each file is written to a temp file in its directory and renamed into
//   place; symlinks are created as symlinks; files that leave are removed and
//   directories left empty by that are removed too.
// - Nothing is written outside the worktree: every parent component is
//   lstat-ed and only real directories are walked through; a symlink in the
//   way is never followed. Nested repositories (gitlinks) are never touched,
//   and files a snapshot skipped are never deleted (withoutSkipped).
// - Files the target snapshot left out are never deleted either: ignored under
//   the target's rules, or on disk unchanged since before the target snapshot
//   (keptAtTarget, src/restore/ignored-at-target.ts); they are left and reported.
// - Applying the same plan twice is harmless (roll-forward after a crash).
import * as fs from '../base/fs-bytes.js'; // names that are not UTF-8 by their bytes (see fs-bytes.ts)
import path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { errors } from '../base/errors.js';
import type { PlannedChange, TreeEntry } from '../session/journal.js';
import type { Repo } from '../git/repo.js';
import { commitTree, indexEnv, nullOid } from '../git/plumbing.js';
import { hasRawBytes, runGitSync, runGitToFdSync, splitNul } from '../git/run.js';
import { hashRaw, keepingRacyReference, keepPrivate, stdinPathSafe } from '../snapshot/snapshot.js';
import {
  readdirOrEmpty,
  restoreAsideName,
  restoreAsideWriterGone,
  restoreKeptName,
  restoreTempName,
  unlinkQuiet,
  unsafePath,
  caseSensitiveFs,
} from '../base/fsutil.js';
import { clearStaleGitLock } from '../base/lock.js';
import { keptAtTarget, type RestoreTarget } from './ignored-at-target.js';

export const GITLINK = '160000';
export const SYMLINK = '120000';

/** Whether `name` is one of `paths` or below one (a literal pathspec's match). */
export function underAnyPath(name: string, paths: string[]): boolean {
  return paths.some((p) => name === p || name.startsWith(`${p}/`));
}

/** Planned changes between two trees (diff-tree -r, no renames), optionally limited to paths (a directory covers what is below it). */
export async function planChanges(repo: Repo, fromTree: string, toTree: string, paths?: string[]): Promise<PlannedChange[]> {
  if (fromTree === toTree) return [];
  const args = ['diff-tree', '--ignore-submodules=none', '-r', '-z', '--no-renames', '--raw', fromTree, toTree];
  // A name that is not UTF-8 cannot be passed in argv (it would reach git with U+FFFD for its bytes): then the
  // whole diff is read and the paths are matched here, as a literal pathspec matches.
  const inJs = !!paths && paths.some(hasRawBytes);
  if (paths && paths.length > 0 && !inJs) args.push('--', ...paths);
  const res = await repo.git(args, { extraEnv: { GIT_LITERAL_PATHSPECS: '1' } });
  const tokens = splitNul(res.stdout);
  const out: PlannedChange[] = [];
  for (let i = 0; i + 1 < tokens.length; i += 2) {
    const m = /^:(\d{6}) (\d{6}) ([0-9a-f]+) ([0-9a-f]+) [A-Z]\d*$/.exec(tokens[i] ?? '');
    if (!m) throw errors.internal(`unexpected diff-tree output: ${JSON.stringify(tokens[i])}`);
    const entry = (mode: string, oid: string): TreeEntry | null => (mode === '000000' ? null : { mode, oid });
    const name = tokens[i + 1] ?? '';
    if (inJs && !underAnyPath(name, paths)) continue;
    out.push({ path: name, from: entry(m[1] ?? '', m[3] ?? ''), to: entry(m[2] ?? '', m[4] ?? '') });
  }
  return out;
}

/** The change a planned path makes, as a letter: A created, D deleted, M modified, T type changed. */
export function changeLetter(c: Pick<PlannedChange, 'from' | 'to'>): 'A' | 'D' | 'M' | 'T' {
  if (!c.from) return 'A';
  if (!c.to) return 'D';
  const kind = (m: string) => (m === SYMLINK ? 'l' : m === GITLINK ? 'g' : 'f');
  return kind(c.from.mode) === kind(c.to.mode) ? 'M' : 'T';
}

/** A blob too large to hold in memory: written by streaming it from git (see writeEntry). */
export interface LargeBlob {
  oid: string;
  size: number;
}

/** Blobs above this size are streamed from git to the file instead of read into memory. */
export const LARGE_BLOB_BYTES = 8 * 1024 * 1024;
/** At most this many bytes of small blobs are read by one git process. */
const BATCH_BYTES = 64 * 1024 * 1024;

/**
 * Reads blobs with `git cat-file --batch`: exact bytes, no filters. Blobs
 * over LARGE_BLOB_BYTES are only sized here (a restore of a multi-gigabyte
 * file must not need that much memory).
 */
export async function readBlobs(repo: Repo, oids: string[]): Promise<Map<string, Buffer | LargeBlob>> {
  const out = new Map<string, Buffer | LargeBlob>();
  const unique = [...new Set(oids)];
  if (unique.length === 0) return out;
  const sizes = await repo.git(['cat-file', '--batch-check'], { input: unique.join('\n') + '\n' });
  const small: { oid: string; size: number }[] = [];
  const lines = sizes.stdout.toString('utf8').split('\n');
  unique.forEach((oid, i) => {
    const m = /^([0-9a-f]+) (\w+) (\d+)$/.exec(lines[i] ?? '');
    if (!m) throw errors.internal(`object ${oid} is missing from the repository (${lines[i] ?? ''}).`, { data: { oid } });
    const size = Number(m[3]);
    if (size > LARGE_BLOB_BYTES) out.set(oid, { oid, size });
    else small.push({ oid, size });
  });
  // Batches keep one git process from buffering an unbounded amount.
  let i = 0;
  while (i < small.length) {
    const chunk: string[] = [];
    let bytes = 0;
    while (i < small.length && (chunk.length === 0 || bytes + small[i]!.size <= BATCH_BYTES)) {
      chunk.push(small[i]!.oid);
      bytes += small[i]!.size;
      i++;
    }
    const res = await repo.git(['cat-file', '--batch'], { input: chunk.join('\n') + '\n' });
    const buf = res.stdout;
    let pos = 0;
    for (const oid of chunk) {
      const nl = buf.indexOf(0x0a, pos);
      const header = buf.subarray(pos, nl).toString('utf8');
      const m = /^([0-9a-f]+) (\w+) (\d+)$/.exec(header);
      if (!m) throw errors.internal(`object ${oid} is missing from the repository (${header}).`, { data: { oid } });
      const size = Number(m[3]);
      out.set(oid, buf.subarray(nl + 1, nl + 1 + size));
      pos = nl + 1 + size + 1;
    }
  }
  return out;
}

/** What is at a worktree path, found without following any symlink on the way. */
type Found =
  | { kind: 'absent' }
  | { kind: 'blocked'; at: string; what: string }
  | { kind: 'file'; exec: boolean; mode: number }
  | { kind: 'symlink' }
  | { kind: 'dir' }
  | { kind: 'other' };

function describeStat(st: fs.Stats): string {
  if (st.isSymbolicLink()) return 'a symlink';
  if (st.isFile()) return 'a file';
  return 'not a directory';
}

/** lstat of every parent component, then of the path itself. */
export function inspect(worktree: string, rel: string): Found {
  const parts = rel.split('/');
  let cur = worktree;
  for (let i = 0; i < parts.length - 1; i++) {
    cur = path.join(cur, parts[i] ?? '');
    let st: fs.Stats;
    try {
      st = fs.lstatSync(cur);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return { kind: 'absent' };
      throw e;
    }
    if (!st.isDirectory()) return { kind: 'blocked', at: parts.slice(0, i + 1).join('/'), what: describeStat(st) };
  }
  let st: fs.Stats;
  try {
    st = fs.lstatSync(path.join(worktree, rel));
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return { kind: 'absent' };
    throw e;
  }
  if (st.isSymbolicLink()) return { kind: 'symlink' };
  if (st.isFile()) return { kind: 'file', exec: (st.mode & 0o100) !== 0, mode: st.mode & 0o7777 };
  if (st.isDirectory()) return { kind: 'dir' };
  return { kind: 'other' };
}

/** A path an operation did not change; the operation still completes (see op.done `left`). */
export interface LeftPath {
  path: string;
  reason: string;
  /**
   * The object holding the version the restore found there instead of what
   * it expected (a write that raced with it): kept on disk, and stored.
   */
  oid?: string;
}

export const NESTED_REPO_REASON = 'nested repository: left alone';
/** A planned creation that finds a file the plan's `from` snapshot does not hold (the caller may know why: undo.ts). */
export const UNSNAPSHOTTED_IN_THE_WAY = 'a file not in the snapshot (ignored or skipped) is in the way';
/** A nested repository the target has and the disk does not: it is not brought back (not "left as it is"). */
export const NESTED_REPO_GONE_PREFIX = 'nested repository: not restored';

/**
 * The plan's nested repositories (gitlinks), never written, each with an
 * honest reason: one still on disk is left alone; one the target has that is
 * gone from the disk (the agent deleted it) is not restored, because a
 * snapshot holds only its commit id, none of its files.
 */
export function nestedLeft(worktree: string, plan: PlannedChange[]): LeftPath[] {
  return plan
    .filter((c) => c.from?.mode === GITLINK || c.to?.mode === GITLINK)
    .map((c) => {
      if (c.to?.mode === GITLINK && !unsafePath(c.path)) {
        let kind: Found['kind'] | 'unknown';
        try {
          kind = inspect(worktree, c.path).kind;
        } catch {
          kind = 'unknown'; /* unreadable: not known to be a directory, so the gitlink is left as it is */
        }
        if (kind !== 'dir' && kind !== 'unknown') {
          return {
            path: c.path,
            reason: `${NESTED_REPO_GONE_PREFIX} (agentsnap records only its commit id ${c.to.oid.slice(0, 12)}; its own files are not in the snapshot)`,
          };
        }
      }
      return { path: c.path, reason: NESTED_REPO_REASON };
    });
}

export interface RestoreOptions {
  /**
   * What happens to a path whose disk state is neither side of the plan:
   * 'leave' (default; undo and friends) leaves it, reports it and completes
   * the rest; 'refuse' throws Conflict before anything is written.
   */
  ifNotExpected?: 'leave' | 'refuse';
  /**
   * The worktree was just checked out from the plan's `from` tree by git, whose
   * checkout may have applied eol or smudge filters: a file or symlink there
   * counts as `from` whatever its bytes.
   */
  freshCheckout?: boolean;
  /** Test seam: throw after this many paths were changed (simulates a crash half way). */
  interruptAfter?: number;
  /** Test seam: called right before a path is replaced or deleted, long after the plan was checked (a write here races with the restore). */
  beforeReplace?: (rel: string) => void;
  /** Test seam: called after what was at the path was set aside and compared, before the new entry is installed or the old one dropped. */
  afterCheck?: (rel: string) => void;
}

/** Options of planning a restore: RestoreOptions and the whole target tree. */
export interface PrepareOptions extends RestoreOptions {
  /**
   * The tree the plan leads to (all of it, also when the plan covers some
   * paths only) and the snapshot it comes from: they decide which planned
   * deletions are files left out there, which are kept (ignored-at-target.ts).
   */
  target: RestoreTarget;
}

export interface RestoreResult {
  /** Paths now matching the target (changed by this call or already matching). */
  applied: PlannedChange[];
  /** Paths left as they were (nested repositories included). */
  left: LeftPath[];
  /** Of `left`: nested repositories (gitlinks), never written. */
  nested: string[];
  /**
   * Of `applied`: the paths the plan's `from` (the safety snapshot) lacked and
   * the target has, now on disk as the target has them (written, or found in
   * place). The caller drops those a scan would leave out now (ignored since,
   * skipped) before recordApplied, or the result would hold what no scan holds.
   */
  added: string[];
  /**
   * The versions kept (their ids are also in `left`): the caller makes them
   * reachable (keptCommit, referenced from the operation's commits), then
   * calls releaseKept.
   */
  kept: KeptVersion[];
  /** Asides to remove once the kept versions are reachable (releaseKept). */
  release: string[];
}

/** A plan checked against the disk, nothing written yet. */
export interface PreparedRestore {
  /** Paths to change. */
  todo: PlannedChange[];
  /** Paths already as the target has them. */
  already: PlannedChange[];
  left: LeftPath[];
  nested: string[];
  blobs: Map<string, Buffer | LargeBlob>;
}

/** State of a planned path on disk: matches `from`, matches `to`, or neither (why). */
type Disk = { is: 'from' } | { is: 'to' } | { is: 'other'; reason: string };

/**
 * Files (anything but directories) below a directory of the worktree, not following symlinks. A directory
 * that cannot be listed, or an entry that cannot be lstat-ed, is listed itself: what it holds is unknown,
 * so it counts as something the snapshot does not have (a snapshot lists it as skipped, unreadable).
 */
function filesBelow(worktree: string, rel: string): string[] {
  const out: string[] = [];
  const walk = (r: string) => {
    let names: string[];
    try {
      names = fs.readdirSync(path.join(worktree, r));
    } catch {
      out.push(r); /* unreadable or gone: reported as the directory itself, never walked blind */
      return;
    }
    for (const name of names) {
      const child = `${r}/${name}`;
      let dir: boolean;
      try {
        dir = fs.lstatSync(path.join(worktree, child)).isDirectory();
      } catch {
        dir = false; /* gone meanwhile: reported as the path it was */
      }
      if (dir) walk(child);
      else out.push(child);
    }
  };
  walk(rel);
  return out;
}

async function classify(
  repo: Repo,
  plan: PlannedChange[],
  blobs: Map<string, Buffer | LargeBlob>,
  opts: RestoreOptions,
): Promise<Map<string, Disk>> {
  const found = new Map<string, Found>();
  const planned = new Map<string, PlannedChange>();
  // A path that cannot even be lstat-ed (a directory on the way not readable, a path too long) is left: nothing is known of it.
  const unreadable = new Map<string, string>();
  const foldsCase = !caseSensitiveFs(repo);
  for (const c of plan) {
    planned.set(c.path, c);
    if (unsafePath(c.path, foldsCase)) continue;
    try {
      found.set(c.path, inspect(repo.worktree, c.path));
    } catch (e) {
      unreadable.set(c.path, (e as NodeJS.ErrnoException).code ?? 'error');
    }
  }
  // Hash the regular files on disk that a plan entry expects to be regular files, in one git call.
  const toHash = opts.freshCheckout
    ? []
    : plan
        .filter((c) => found.get(c.path)?.kind === 'file' && [c.from, c.to].some((e) => e && e.mode !== SYMLINK && e.mode !== GITLINK))
        .map((c) => c.path);
  // A file this process cannot read (chmod 000, and not root) cannot be compared, nor kept as an object if it
  // were replaced: it is left as it is, like one that cannot be lstat-ed (one hash-object over it would fail them all).
  for (let i = toHash.length - 1; i >= 0; i--) {
    const rel = toHash[i] as string;
    try {
      fs.accessSync(path.join(repo.worktree, rel), fs.constants.R_OK);
    } catch (e) {
      // Only a refusal: anything else (a name this check cannot spell, a file gone meanwhile) is left to the hash.
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'EACCES' && code !== 'EPERM') continue;
      unreadable.set(rel, code);
      toHash.splice(i, 1);
    }
  }
  const hashes = new Map<string, string>();
  if (toHash.length > 0) {
    const oids = await hashRaw(repo, toHash);
    toHash.forEach((p, i) => hashes.set(p, oids[i] ?? ''));
  }
  const matches = (rel: string, f: Found, e: TreeEntry | null): boolean => {
    if (e === null) return f.kind === 'absent';
    if (e.mode === SYMLINK) {
      if (f.kind !== 'symlink') return false;
      const target = fs.readlinkSync(path.join(repo.worktree, rel), { encoding: 'buffer' });
      const want = blobs.get(e.oid);
      return Buffer.isBuffer(want) && want.equals(target);
    }
    if (f.kind !== 'file') return false;
    return f.exec === (e.mode === '100755') && hashes.get(rel) === e.oid;
  };
  // A directory may give way to a file when everything below it is a planned deletion.
  const deleted = (rel: string) => {
    const c = planned.get(rel);
    return !!c && c.from !== null && c.to === null;
  };
  const out = new Map<string, Disk>();
  for (const c of plan) {
    const f = found.get(c.path);
    if (unreadable.has(c.path)) out.set(c.path, { is: 'other', reason: `cannot be read (${unreadable.get(c.path)}); left as it is` });
    else if (!f) out.set(c.path, { is: 'other', reason: 'not a safe path inside the worktree' });
    else if (opts.freshCheckout && c.from !== null && (f.kind === 'file' || f.kind === 'symlink')) out.set(c.path, { is: 'from' });
    else if (matches(c.path, f, c.from)) out.set(c.path, { is: 'from' });
    else if (matches(c.path, f, c.to)) out.set(c.path, { is: 'to' });
    else if (f.kind === 'blocked') {
      // A parent that the plan itself removes (a file or symlink becoming a directory) is fine:
      // the write phase checks the parents again after the deletions.
      if (c.from === null && planned.get(f.at)?.from) out.set(c.path, { is: 'from' });
      else out.set(c.path, { is: 'other', reason: `${f.at} is ${f.what} not in the snapshot; it was not followed` });
    } else if (c.from === null && f.kind === 'dir') {
      // A directory becoming a file: its snapshotted contents go first, then the empty directories.
      const stays = filesBelow(repo.worktree, c.path).filter((x) => !deleted(x));
      if (stays.length === 0) out.set(c.path, { is: 'from' });
      else out.set(c.path, { is: 'other', reason: `a directory with ${stays.length} file(s) not in the snapshot is in the way` });
    } else if (c.from === null) out.set(c.path, { is: 'other', reason: UNSNAPSHOTTED_IN_THE_WAY });
    else out.set(c.path, { is: 'other', reason: 'changed while the operation ran' });
  }
  return out;
}

/** Plan entries the engine never touches: nested repositories (gitlinks). */
export function gitlinkPaths(plan: PlannedChange[]): string[] {
  return plan.filter((c) => c.from?.mode === GITLINK || c.to?.mode === GITLINK).map((c) => c.path);
}

/**
 * The plan without deletions of files a snapshot skipped (secrets, size cap, excludes): they are kept, never deleted.
 * A skipped directory (one git could not read, or whose paths were too long) keeps everything below it.
 */
export function withoutSkipped(plan: PlannedChange[], skipped: Iterable<string>): { plan: PlannedChange[]; kept: string[] } {
  const skip = new Set(skipped);
  if (skip.size === 0) return { plan, kept: [] };
  const under = (p: string) => {
    for (let i = p.lastIndexOf('/'); i > 0; i = p.lastIndexOf('/', i - 1)) if (skip.has(p.slice(0, i))) return true;
    return false;
  };
  const drop = (c: PlannedChange) => c.to === null && (skip.has(c.path) || under(c.path));
  return { plan: plan.filter((c) => !drop(c)), kept: plan.filter((c) => drop(c) && c.from !== null).map((c) => c.path) };
}

/**
 * Checks a plan against the disk without writing anything: which paths to
 * change, which already match, which are left (and why). With
 * ifNotExpected 'refuse', throws Conflict when any path would be left.
 */
export async function prepareRestore(repo: Repo, plan: PlannedChange[], opts: PrepareOptions): Promise<PreparedRestore> {
  const nested = gitlinkPaths(plan);
  const left: LeftPath[] = nestedLeft(repo.worktree, plan);
  let work = plan.filter((c) => !nested.includes(c.path));
  // A path absent from the target because the target snapshot left it out (ignored there, say) is
  // never deleted: kept and reported (not a problem: apply goes ahead). One already gone is as the
  // target has it.
  const goneAlready: PlannedChange[] = [];
  const kept = await keptAtTarget(repo, work, opts.target);
  if (kept.size > 0) {
    const foldsCase = !caseSensitiveFs(repo);
    for (const c of work) {
      const reason = kept.get(c.path);
      if (reason === undefined) continue;
      if (!unsafePath(c.path, foldsCase) && inspect(repo.worktree, c.path).kind === 'absent') goneAlready.push(c);
      else left.push({ path: c.path, reason });
    }
    work = work.filter((c) => !kept.has(c.path));
  }
  const symlinkOids = work
    .flatMap((c) => [c.from, c.to])
    .filter((e): e is TreeEntry => !!e && e.mode === SYMLINK)
    .map((e) => e.oid);
  const blobs = await readBlobs(repo, [...symlinkOids, ...work.filter((c) => c.to && c.to.mode !== SYMLINK).map((c) => c.to!.oid)]);
  const disk = await classify(repo, work, blobs, opts);
  const todo: PlannedChange[] = [];
  const already: PlannedChange[] = [...goneAlready];
  const problems: LeftPath[] = [];
  for (const c of work) {
    const d = disk.get(c.path);
    if (!d || d.is === 'other') problems.push({ path: c.path, reason: d?.is === 'other' ? d.reason : 'unknown' });
    else if (d.is === 'to') already.push(c);
    else todo.push(c);
  }
  if (problems.length > 0 && opts.ifNotExpected === 'refuse') {
    const list = problems
      .slice(0, 10)
      .map((l) => `${l.path} (${l.reason})`)
      .join(', ');
    throw errors.conflict(`${problems.length} path(s) cannot be written safely: ${list}${problems.length > 10 ? ', …' : ''}.`, {
      hint: 'Nothing was changed. Move the paths in the way aside (or wait for whatever changes them) and try again.',
      data: { paths: problems },
    });
  }
  return { todo, already, left: [...left, ...problems], nested, blobs };
}
function tempName(dir: string, base: string): string {
  return path.join(dir, restoreTempName(base, process.pid, randomBytes(4).toString('hex')));
}

/** Creates the parent directories of rel, walking only through real directories. Returns the blocker, if any. */
function ensureParents(worktree: string, rel: string): string | null {
  const parts = rel.split('/');
  let cur = worktree;
  for (let i = 0; i < parts.length - 1; i++) {
    cur = path.join(cur, parts[i] ?? '');
    let st: fs.Stats | null = null;
    try {
      st = fs.lstatSync(cur);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    if (st === null) {
      fs.mkdirSync(cur);
      continue;
    }
    if (!st.isDirectory()) return `${parts.slice(0, i + 1).join('/')} is ${describeStat(st)} not in the snapshot; it was not followed`;
  }
  return null;
}

/**
 * Writes a file entry's bytes to a new temp file beside abs (nothing is
 * replaced yet) and returns its path. Keeps the permissions of the file there
 * now (but the x bits from the snapshot); new files get the umask.
 */
function writeTemp(repo: Repo, abs: string, entry: TreeEntry, content: Buffer | LargeBlob): string {
  const tmp = tempName(path.dirname(abs), path.basename(abs));
  const exec = entry.mode === '100755';
  let keep: number | null = null;
  try {
    const st = fs.lstatSync(abs);
    // The file's own permission bits are kept (a user's chmod 600 stays), unless its owner cannot
    // read it: the snapshot read these bytes, so that mode (an agent's chmod 000) came later, and the
    // exec bits derived from no read bits would leave the target's 100755 unreachable.
    if (st.isFile() && (st.mode & 0o400) !== 0) keep = st.mode & 0o7777;
  } catch {
    /* new file */
  }
  try {
    const fd = fs.openSync(tmp, 'wx', exec ? 0o777 : 0o666);
    try {
      if (Buffer.isBuffer(content)) {
        let off = 0;
        while (off < content.length) off += fs.writeSync(fd, content, off, content.length - off);
      } else {
        writeBlobToFdSync(repo, content, fd);
      }
      if (keep !== null) fs.fchmodSync(fd, exec ? keep | ((keep & 0o444) >> 2) : keep & ~0o111);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  } catch (e) {
    unlinkQuiet(tmp);
    throw e;
  }
  return tmp;
}

/** Streams a large blob from git straight into an open file: Node never holds its bytes. */
function writeBlobToFdSync(repo: Repo, blob: LargeBlob, fd: number): void {
  runGitToFdSync(['cat-file', 'blob', blob.oid], gitSyncOptions(repo), fd);
  const written = fs.fstatSync(fd).size;
  if (written !== blob.size) {
    throw errors.internal(`writing object ${blob.oid} gave ${written} of ${blob.size} bytes.`, { data: { oid: blob.oid } });
  }
}

function gitSyncOptions(repo: Repo) {
  return { cwd: repo.worktree, env: { ...repo.env, GIT_DIR: repo.gitDir, GIT_WORK_TREE: repo.worktree } };
}

/** Removes dir and its parents while they are empty, never the worktree itself. */
function pruneEmptyDirs(worktree: string, rels: Iterable<string>): void {
  const dirs = new Set<string>();
  for (const rel of rels) {
    let d = path.posix.dirname(rel);
    while (d !== '.' && d !== '') {
      dirs.add(d);
      d = path.posix.dirname(d);
    }
  }
  // Deepest first, so a parent is tried after its children.
  for (const d of [...dirs].sort((a, b) => b.split('/').length - a.split('/').length || (a < b ? 1 : -1))) {
    const found = inspect(worktree, d);
    if (found.kind !== 'dir') continue;
    try {
      fs.rmdirSync(path.join(worktree, d));
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST' && code !== 'ENOENT') throw e;
    }
  }
}

/**
 * Removes a directory that holds only empty directories, deepest first, with
 * rmdir (which fails on anything a concurrent writer put there meanwhile:
 * never a recursive delete). False when something else was in it.
 */
function removeEmptyTree(abs: string): boolean {
  let names: string[];
  try {
    names = fs.readdirSync(abs);
  } catch {
    return false; // unreadable since the check (chmod 000): what it holds is unknown, so it stays
  }
  for (const name of names) {
    const child = path.join(abs, name);
    let dir = false;
    try {
      dir = fs.lstatSync(child).isDirectory();
    } catch {
      // gone (or not searchable): not known to be an empty directory
    }
    if (!dir || !removeEmptyTree(child)) return false;
  }
  try {
    fs.rmdirSync(abs);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOTEMPTY' || code === 'EEXIST') return false;
    if (code !== 'ENOENT') throw e;
  }
  return true;
}

function errno(e: unknown): string {
  return (e as NodeJS.ErrnoException).code ?? (e instanceof Error ? e.message : String(e));
}

function isCode(e: unknown, ...codes: string[]): boolean {
  return codes.includes((e as NodeJS.ErrnoException).code ?? '');
}

// ---------------------------------------------------------------------------
// Replacing one path without losing a write that raced with the restore.
//
// The plan was checked against the disk once (prepareRestore), but writing an
// 800-file plan takes a second or more, and an editor's save or a still
// running agent's write can land in between. So each path is checked again at
// the moment it is replaced:
//   1. what is at the path is renamed aside (`restoreAsideName`): atomic, it
//      captures whatever is there, and nothing can be written to the path's
//      old entry through its name from then on;
//   2. the aside is compared with the entry the plan expected (kind, x bit,
//      blob id of the bytes, or the link text);
//   3. when it differs, it is put back under the path's name with link(2)
//      (which fails with EEXIST instead of replacing what a writer may have
//      created meanwhile), its bytes are stored as an object (one git call
//      for all of them at the end) and it is reported in `left` with that id;
//   4. otherwise the new entry is installed with link(2) (symlinks with
//      symlink(2)): no replace either, so a file created at the path while it
//      was empty is kept and reported;
//   5. before the aside is dropped, its stat data is compared with what step 2
//      saw: a process that kept the file open wrote into the aside inode after
//      the check, so those bytes are kept (visible file + object) instead.
//   6. after the install (for a deletion: before the aside is dropped), the
//      parents are lstat-ed once more: Node has no openat(2), so the rename
//      and link(2) resolve them again, and a parent swapped for a symlink
//      since the check took them wherever it points. Then the new entry is
//      unlinked there (only if it is still agentsnap's inode) and the aside
//      goes back under its own name in its own directory; the path is left.
// Deletions do 1-3, 6 and 5. What is left (README, Guarantees): a process that
// holds the file open and writes into it after step 5's stat (microseconds
// before the unlink), or a same-size write that lands in the same timestamp
// tick as step 2's read, writes into a file no name points to, exactly as it
// would after any editor's save by rename. A parent swapped for a symlink and
// back again between two of the lstat walks (the one before step 1 and step
// 6) goes unseen: the restored file, or a deletion's aside, is then under its
// name in the directory the symlink pointed to. The path is missing for the
// moment between 1 and 4; a SIGKILL there leaves the entry in the aside, which
// the next run of the plan puts back (recoverAsides) and snapshots otherwise
// record like any file (fsutil's skipRestoreTemp never deletes an aside).
// ---------------------------------------------------------------------------

/** Hard-link-less filesystems (FAT, some FUSE and SMB mounts) and directories: link(2) refuses with one of these. */
const NO_LINK = ['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'EXDEV', 'EMLINK', 'ENOSYS', 'EISDIR'];

function eexist(dst: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`EEXIST: file already exists, ${dst}`), { code: 'EEXIST' });
}

/**
 * Gives the entry at src the name dst as well, unless something is at dst
 * (EEXIST). Returns whether src is still there (linked) or was moved (a
 * filesystem without hard links, a directory: checked, then renamed, a window
 * of one system call). Symlinks are re-created from their text (link(2) may
 * follow them on some systems).
 */
function linkNoReplace(src: string, dst: string): 'linked' | 'moved' {
  const st = fs.lstatSync(src);
  if (st.isSymbolicLink()) {
    fs.symlinkSync(fs.readlinkSync(src, { encoding: 'buffer' }), dst);
    return 'linked';
  }
  try {
    fs.linkSync(src, dst);
    return 'linked';
  } catch (e) {
    if (!isCode(e, ...NO_LINK)) throw e;
  }
  try {
    fs.lstatSync(dst);
    throw eexist(dst);
  } catch (e) {
    if (!isCode(e, 'ENOENT')) throw e;
  }
  fs.renameSync(src, dst);
  return 'moved';
}

/** Moves src to dst unless something is at dst (EEXIST). */
function moveNoReplace(src: string, dst: string): void {
  if (linkNoReplace(src, dst) === 'linked') fs.unlinkSync(src);
}

/** Identifies one version of an inode: any write changes it (size, mtime or ctime). */
function inodeKey(st: fs.BigIntStats): string {
  return [st.dev, st.ino, st.size, st.mtimeNs, st.ctimeNs, st.mode].join(':');
}

function lstatKey(abs: string): string | null {
  try {
    return inodeKey(fs.lstatSync(abs, { bigint: true }));
  } catch {
    return null; /* nothing there (or not reachable): no key, which matches no expected one */
  }
}

/** The blob id of an open file's bytes (sha1 or sha256 like `like`), or null when its size changed while read. */
function blobIdOfFd(fd: number, size: number, like: string): string | null {
  const hash = createHash(like.length === 64 ? 'sha256' : 'sha1');
  hash.update(`blob ${size}\0`);
  const buf = Buffer.allocUnsafe(Math.min(Math.max(size, 1), 1 << 20));
  let off = 0;
  while (off < size) {
    const n = fs.readSync(fd, buf, 0, Math.min(buf.length, size - off), off);
    if (n === 0) return null;
    hash.update(buf.subarray(0, n));
    off += n;
  }
  if (fs.readSync(fd, buf, 0, 1, off) !== 0) return null;
  return hash.digest('hex');
}

/**
 * Whether the entry at abs (not followed) is exactly `e`, and the stat key
 * the comparison saw. `fresh`: a fresh checkout's file or symlink counts as
 * `e` whatever its bytes (filters).
 */
function holds(
  abs: string,
  e: TreeEntry | null,
  blobs: Map<string, Buffer | LargeBlob>,
  fresh: boolean,
): { same: boolean; key: string | null } {
  const st = fs.lstatSync(abs, { bigint: true });
  const key = inodeKey(st);
  if (e === null) return { same: false, key };
  if (e.mode === SYMLINK) {
    if (!st.isSymbolicLink()) return { same: false, key };
    if (fresh) return { same: true, key };
    const want = blobs.get(e.oid);
    return { same: Buffer.isBuffer(want) && want.equals(fs.readlinkSync(abs, { encoding: 'buffer' })), key };
  }
  if (!st.isFile()) return { same: false, key };
  if (fresh) return { same: true, key };
  if (((st.mode & 0o100n) !== 0n) !== (e.mode === '100755')) return { same: false, key };
  const fd = fs.openSync(abs, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  try {
    const fst = fs.fstatSync(fd, { bigint: true });
    if (fst.ino !== st.ino || fst.dev !== st.dev) return { same: false, key: null };
    return { same: blobIdOfFd(fd, Number(fst.size), e.oid) === e.oid, key: inodeKey(fst) };
  } finally {
    fs.closeSync(fd);
  }
}

/** A version found at a path that is kept: its bytes are stored (storeKept) and its id reported. */
interface Kept {
  /** Where its bytes are: the aside, or a kept file of its own. */
  abs: string;
  /**
   * What becomes of abs once stored: 'second-name' (the version is back at its
   * path, abs is a hard link of it) and 'superseded' (a newer write took the
   * path while it was aside: the writer replaced that version itself) are
   * removed, 'superseded' kept beside the path if it could not be stored;
   * 'keep' (the restore replaced it) stays a visible file.
   */
  after: 'second-name' | 'superseded' | 'keep';
  symlink: boolean;
  /** The report to complete with the object id. */
  report: LeftPath;
}

/** Renames an aside that is the only name of its version to a visible kept file beside the path. */
function keepBeside(aside: string, abs: string): string {
  const kept = path.join(path.dirname(abs), restoreKeptName(path.basename(abs), randomBytes(4).toString('hex')));
  try {
    moveNoReplace(aside, kept);
    return kept;
  } catch {
    return aside; /* the name was taken or the move failed: it stays under its aside name, still kept and reported */
  }
}

function relOf(worktree: string, abs: string): string {
  return path.relative(worktree, abs).split(path.sep).join('/');
}

/** Per-call state of writeRestore shared by the path helpers. */
interface WriteCtx {
  repo: Repo;
  blobs: Map<string, Buffer | LargeBlob>;
  opts: RestoreOptions;
  kept: Kept[];
  left: LeftPath[];
}

/** What happened to one path: applied (maybe with a kept version reported in left), or left with a reason. */
type Outcome = { applied: true } | { applied: false; reason: string };

/** Renames what is at abs aside; null when nothing is there. A directory is never moved. */
function setAside(abs: string): string | 'dir' | null {
  try {
    if (fs.lstatSync(abs).isDirectory()) return 'dir';
  } catch (e) {
    if (isCode(e, 'ENOENT', 'ENOTDIR')) return null;
    throw e;
  }
  const aside = path.join(path.dirname(abs), restoreAsideName(path.basename(abs), process.pid, randomBytes(4).toString('hex')));
  try {
    fs.renameSync(abs, aside);
  } catch (e) {
    if (isCode(e, 'ENOENT', 'ENOTDIR')) return null;
    throw e;
  }
  return aside;
}

/**
 * The aside differs from what the plan expected: it goes back under the
 * path's name (no replace) and its bytes are kept. Returns the reason.
 */
function putBack(ctx: WriteCtx, c: PlannedChange, abs: string, aside: string): string {
  const symlink = fs.lstatSync(aside).isSymbolicLink();
  const what = c.from === null ? 'created during the restore' : 'changed during the restore';
  const report: LeftPath = { path: c.path, reason: '' };
  let back: 'linked' | 'moved' | 'taken';
  try {
    back = linkNoReplace(aside, abs);
  } catch (e) {
    if (!isCode(e, 'EEXIST')) throw e;
    back = 'taken';
  }
  if (back === 'moved') {
    // No second name to store it from: the path itself is stored (it is on disk either way).
    ctx.kept.push({ abs, after: 'keep', symlink, report });
    report.reason = `${what}: kept as it is`;
  } else if (back === 'linked') {
    ctx.kept.push({ abs: aside, after: 'second-name', symlink, report });
    report.reason = `${what}: kept as it is`;
  } else {
    // Until it is stored, the aside's name keeps it: snapshots record an aside whose writer is gone.
    ctx.kept.push({ abs: aside, after: 'superseded', symlink, report });
    report.reason = `${what}, then replaced by a newer write: the newest is on disk, the one it replaced is stored`;
  }
  ctx.left.push(report);
  return report.reason;
}

/**
 * Drops an aside that matched the plan, unless it was written (through a file
 * still open) after it was compared: then it is kept beside the path.
 */
function dropAside(
  ctx: WriteCtx,
  c: PlannedChange,
  abs: string,
  aside: string,
  key: string | null,
  onDisk = 'the restored version is on disk',
): void {
  if (key !== null && lstatKey(aside) === key) {
    fs.unlinkSync(aside);
    return;
  }
  const symlink = fs.lstatSync(aside).isSymbolicLink();
  const kept = keepBeside(aside, abs);
  const report: LeftPath = {
    path: c.path,
    reason: `written through a file still open during the restore: ${onDisk}; what was written is kept in ${relOf(ctx.repo.worktree, kept)}`,
  };
  ctx.kept.push({ abs: kept, after: 'keep', symlink, report });
  ctx.left.push(report);
}

/**
 * Runs what follows setting an aside. Should it fail half way (an I/O error),
 * the aside goes back under the path's name, or is kept beside the path when
 * something took the name: an aside is never left under its own name by a
 * live process.
 */
function withAside(ctx: WriteCtx, c: PlannedChange, abs: string, aside: string, fn: () => Outcome): Outcome {
  try {
    return fn();
  } catch (e) {
    if (lstatKey(aside) !== null) {
      try {
        moveNoReplace(aside, abs);
      } catch {
        dropAside(ctx, c, abs, aside, null, 'what is there now stays'); // the aside cannot go back: it is kept, and dropAside reports it as left
      }
    }
    throw e;
  }
}

/** Compares an aside with what the plan expected; anything unreadable counts as different (it is kept). */
function check(ctx: WriteCtx, c: PlannedChange, aside: string): { same: boolean; key: string | null } {
  try {
    return holds(aside, c.from, ctx.blobs, !!ctx.opts.freshCheckout);
  } catch {
    return { same: false, key: null }; // unreadable: counted as different, so the aside is kept (never lost)
  }
}

/** dev:ino of what is at abs (not followed), or null. */
function inodeOf(abs: string): string | null {
  try {
    const st = fs.lstatSync(abs, { bigint: true });
    return `${st.dev}:${st.ino}`;
  } catch {
    return null; /* nothing there: no inode, which matches none */
  }
}

/**
 * Why rel no longer lies below real directories of the worktree (a parent
 * became a symlink or a file since it was checked), or null. Node has no
 * openat(2): a rename or link(2) resolves the parents again, so what went
 * through such a parent landed wherever it points, and is taken back.
 */
function parentsChanged(worktree: string, rel: string): string | null {
  let now: Found;
  try {
    now = inspect(worktree, rel);
  } catch (e) {
    return `its directory could not be checked again (${errno(e)})`;
  }
  return now.kind === 'blocked' ? `${now.at} became ${now.what} during the restore; it was not followed` : null;
}

/**
 * A rename or install went through a parent that changed (parentsChanged):
 * the entry agentsnap just created at abs (identified by its inode) is
 * removed, and the version it had set aside goes back under its own name in
 * the directory it is in. Returns what became of it, for the report.
 */
function takeBack(abs: string, installed: string | null, aside: string | null): string {
  const out: string[] = [];
  if (installed !== null) {
    if (inodeOf(abs) === installed) {
      try {
        fs.unlinkSync(abs);
        out.push('the restored version was taken back');
      } catch (e) {
        out.push(`the restored version could not be taken back (${errno(e)})`);
      }
    } else out.push('something else took the name meanwhile: it stays');
  }
  if (aside !== null && lstatKey(aside) !== null) {
    try {
      moveNoReplace(aside, abs);
      out.push('what was there is back under its name');
    } catch (e) {
      out.push(`what was there stays beside it as ${path.basename(aside)} (${errno(e)})`);
    }
  }
  return out.join('; ');
}

/** A planned deletion: the file goes only if it is still the one the plan expected. */
function removeEntry(ctx: WriteCtx, c: PlannedChange): Outcome {
  const { repo, opts } = ctx;
  const abs = path.join(repo.worktree, c.path);
  opts.beforeReplace?.(c.path);
  const now = inspect(repo.worktree, c.path);
  if (now.kind === 'absent') return { applied: true };
  if (now.kind === 'blocked') return { applied: false, reason: `${now.at} is ${now.what} not in the snapshot; it was not followed` };
  const aside = setAside(abs);
  if (aside === null) return { applied: true };
  if (aside === 'dir') return { applied: false, reason: 'a directory appeared during the restore: left as it is' };
  return withAside(ctx, c, abs, aside, () => {
    const seen = check(ctx, c, aside);
    opts.afterCheck?.(c.path);
    if (!seen.same) return { applied: false, reason: putBack(ctx, c, abs, aside) };
    // The rename aside resolved the parents again, and the unlink would: a parent that became a
    // symlink took the aside outside the worktree. It goes back under its name there, untouched.
    const moved = parentsChanged(repo.worktree, c.path);
    if (moved) return { applied: false, reason: `${moved}: ${takeBack(abs, null, aside)}` };
    dropAside(ctx, c, abs, aside, seen.key, 'the path was deleted as planned');
    return { applied: true };
  });
}

/** A planned write: installed only where the path still holds what the plan expected (or nothing, for an add). */
function replaceEntry(ctx: WriteCtx, c: PlannedChange, content: Buffer | LargeBlob): Outcome {
  const { repo, opts } = ctx;
  const to = c.to!;
  const abs = path.join(repo.worktree, c.path);
  if (to.mode === SYMLINK && !Buffer.isBuffer(content)) throw errors.internal(`symlink ${c.path} has a ${content.size}-byte target.`);
  const tmp = to.mode === SYMLINK ? null : writeTemp(repo, abs, to, content);
  // The inode agentsnap installs (link(2) keeps it): what takeBack may remove.
  let installed = tmp === null ? null : inodeOf(tmp);
  const install = (): 'done' | 'taken' => {
    try {
      if (tmp === null) {
        fs.symlinkSync(content as Buffer, abs);
        installed = inodeOf(abs);
      } else moveNoReplace(tmp, abs);
      return 'done';
    } catch (e) {
      if (isCode(e, 'EEXIST')) return 'taken';
      throw e;
    }
  };
  // After an install, the parents once more: one swapped for a symlink between the check and the
  // install took the new entry outside the worktree (Node has no openat). It is taken back.
  const escaped = (aside: string | null, done: boolean): Outcome | null => {
    const moved = parentsChanged(repo.worktree, c.path);
    return moved ? { applied: false, reason: `${moved}: ${takeBack(abs, done ? installed : null, aside)}` } : null;
  };
  // Created while the path was empty: that one stays.
  const taken: Outcome = { applied: false, reason: 'created during the restore: kept as it is' };
  try {
    opts.beforeReplace?.(c.path);
    // The parents again, as removeEntry does: writing the temp file took time, and a directory on
    // the way that became a symlink meanwhile would take setAside and the install outside the worktree.
    const now = inspect(repo.worktree, c.path);
    if (now.kind === 'blocked') return { applied: false, reason: `${now.at} is ${now.what} not in the snapshot; it was not followed` };
    const aside = setAside(abs);
    if (aside === 'dir') return { applied: false, reason: 'a directory appeared during the restore: left as it is' };
    if (aside === null) {
      opts.afterCheck?.(c.path);
      if (install() !== 'done') return taken;
      return escaped(null, true) ?? { applied: true };
    }
    return withAside(ctx, c, abs, aside, () => {
      const seen = check(ctx, c, aside);
      opts.afterCheck?.(c.path);
      if (!seen.same) return { applied: false, reason: putBack(ctx, c, abs, aside) };
      // What was aside is what the plan expected (the snapshot holds it): it is dropped either way.
      const done = install();
      const out = escaped(aside, done === 'done');
      if (out) return out;
      dropAside(ctx, c, abs, aside, seen.key, done === 'done' ? 'the restored version is on disk' : 'a file created meanwhile is on disk');
      return done === 'done' ? { applied: true } : taken;
    });
  } finally {
    if (tmp !== null) unlinkQuiet(tmp);
  }
}

/** A version a restore kept (found at a path instead of what the plan expected), stored as a blob. */
export interface KeptVersion {
  path: string;
  /** 100644, 100755 or 120000, as it was found. */
  mode: string;
  oid: string;
}

/**
 * Stores the kept versions as blobs, in one git process (none when nothing
 * was kept), and completes their reports with the object ids. Second names
 * (the version is back at its path) are removed once stored; kept files stay.
 * A superseded aside (its object is the only other copy) is removed only once
 * that object is reachable from a ref: it is returned in `release`
 * (releaseKept), or, when the restore is failing, moved to a visible kept file.
 */
function storeKept(repo: Repo, kept: Kept[], failing: boolean): { stored: KeptVersion[]; release: string[] } {
  const stored: KeptVersion[] = [];
  const release: string[] = [];
  if (kept.length === 0) return { stored, release };
  const oids = new Map<Kept, string>();
  const modes = new Map<Kept, string>();
  for (const k of kept) {
    try {
      modes.set(k, k.symlink ? SYMLINK : (fs.lstatSync(k.abs).mode & 0o100) !== 0 ? '100755' : '100644');
    } catch {
      /* gone: hash-object fails on it below */
    }
  }
  // --stdin-paths is line based (stdinPathSafe) and follows symlinks: those go one by one, through --stdin.
  const batch = kept.filter((k) => !k.symlink && stdinPathSafe(k.abs));
  try {
    if (batch.length > 0) {
      const res = runGitSync(['hash-object', '-w', '--no-filters', '--stdin-paths'], {
        ...gitSyncOptions(repo),
        input: batch.map((k) => k.abs).join('\n') + '\n',
      });
      const lines = res.stdout.toString('utf8').trim().split('\n');
      batch.forEach((k, i) => oids.set(k, lines[i] ?? ''));
    }
    for (const k of kept.filter((x) => !batch.includes(x))) {
      const body = k.symlink ? fs.readlinkSync(k.abs, { encoding: 'buffer' }) : fs.readFileSync(k.abs);
      const res = runGitSync(['hash-object', '-w', '--stdin'], { ...gitSyncOptions(repo), input: body });
      oids.set(k, res.stdout.toString('utf8').trim());
    }
  } catch (e) {
    for (const k of kept) if (!oids.has(k)) k.report.reason += ` (not stored as an object: ${errno(e)})`;
  }
  for (const k of kept) {
    const oid = oids.get(k);
    if (oid) {
      k.report.oid = oid;
      k.report.reason += ` (object ${oid})`;
      stored.push({ path: k.report.path, mode: modes.get(k) ?? '100644', oid });
    }
    if (k.after === 'second-name')
      unlinkQuiet(k.abs); // its version is on disk at the path
    else if (k.after === 'superseded') {
      if (oid && !failing) release.push(k.abs);
      else if (oid) keepBeside(k.abs, path.join(repo.worktree, k.report.path));
      else k.report.reason += `; it is kept in ${relOf(repo.worktree, keepBeside(k.abs, path.join(repo.worktree, k.report.path)))}`;
    }
  }
  return { stored, release };
}

/**
 * Removes what a restore kept only until its versions were reachable: call it
 * once the commit of `keptCommit(result.kept)` is reachable from a ref
 * (journaled and the ref moved). Until then (say the process is killed) those
 * asides stay on disk, where snapshots record them.
 */
export function releaseKept(result: RestoreResult): void {
  for (const abs of result.release) unlinkQuiet(abs);
  result.release = [];
}

/**
 * A commit (no parent) whose tree holds the kept versions at their paths, so
 * that git's gc never prunes them while a ref reaches it; null when nothing
 * was kept. A path that cannot sit in the same tree as an earlier one (a file
 * where another kept path needs a directory) goes under
 * `agentsnap-kept-<n>/<path>`. One git process per directory and one for the
 * commit, only when something was kept.
 */
export async function keptCommit(repo: Repo, kept: KeptVersion[], message: string): Promise<string | null> {
  if (kept.length === 0) return null;
  interface Dir {
    files: Map<string, { mode: string; oid: string }>;
    dirs: Map<string, Dir>;
  }
  const newDir = (): Dir => ({ files: new Map(), dirs: new Map() });
  const root = newDir();
  /** Places rel under dir; false when an entry in the way says otherwise. */
  const place = (dir: Dir, parts: string[], v: KeptVersion): boolean => {
    const [name, ...rest] = parts as [string, ...string[]];
    if (rest.length === 0) {
      const have = dir.files.get(name);
      if (have) return have.oid === v.oid && have.mode === v.mode;
      if (dir.dirs.has(name)) return false;
      dir.files.set(name, { mode: v.mode, oid: v.oid });
      return true;
    }
    if (dir.files.has(name)) return false;
    let sub = dir.dirs.get(name);
    const created = !sub;
    sub ??= newDir();
    if (!place(sub, rest, v)) return false;
    if (created) dir.dirs.set(name, sub);
    return true;
  };
  for (const v of kept) {
    const parts = v.path.split('/');
    for (let n = 0; !place(root, n === 0 ? parts : [`agentsnap-kept-${n}`, ...parts], v); n++);
  }
  const write = async (dir: Dir): Promise<string> => {
    const lines: string[] = [];
    for (const [name, sub] of dir.dirs) lines.push(`040000 tree ${await write(sub)}\t${name}`);
    for (const [name, f] of dir.files) lines.push(`${f.mode} blob ${f.oid}\t${name}`);
    const res = await repo.git(['mktree', '-z'], { input: lines.join('\0') + '\0' });
    return res.stdout.toString('utf8').trim();
  };
  return commitTree(repo, { tree: await write(root), parents: [], message });
}

/**
 * Writes a prepared plan: deletions first (deepest first), then the
 * directories they emptied, then the files. Each path is checked again at the
 * moment it is replaced (see above): whatever is there that the plan did not
 * expect is kept, stored as an object and reported in `left` with its id. A
 * path that cannot be changed (an I/O error, something that appeared
 * meanwhile) is left and reported; the rest completes.
 */
export function writeRestore(repo: Repo, prepared: PreparedRestore, opts: RestoreOptions = {}): RestoreResult {
  const left = [...prepared.left];
  const applied = [...prepared.already];
  const { todo, blobs } = prepared;
  const ctx: WriteCtx = { repo, blobs, opts, kept: [], left };
  let changes = 0;
  const tick = () => {
    changes++;
    if (opts.interruptAfter !== undefined && changes >= opts.interruptAfter) {
      throw errors.internal(`interrupted after ${changes} changes (test)`, { data: { interrupted: true } });
    }
  };
  const outcome = (c: PlannedChange, fn: () => Outcome, verb: string): boolean => {
    let o: Outcome;
    try {
      o = fn();
    } catch (e) {
      o = { applied: false, reason: `could not ${verb} it (${errno(e)})` };
    }
    if (o.applied) applied.push(c);
    else if (!left.some((l) => l.path === c.path)) left.push({ path: c.path, reason: o.reason });
    return o.applied;
  };

  let failing = true;
  let stored: { stored: KeptVersion[]; release: string[] } = { stored: [], release: [] };
  try {
    // 1. Deletions, deepest first.
    const deletions = todo.filter((c) => c.to === null).sort((a, b) => b.path.split('/').length - a.path.split('/').length);
    for (const c of deletions) if (outcome(c, () => removeEntry(ctx, c), 'delete')) tick();
    // 2. Directories that became empty.
    pruneEmptyDirs(
      repo.worktree,
      deletions.map((c) => c.path),
    );
    // 3. Writes. A type change from symlink to file (or back) replaces the old entry.
    for (const c of todo.filter((x) => x.to !== null).sort((a, b) => (a.path < b.path ? -1 : 1))) {
      const to = c.to!;
      let blocker: string | null;
      try {
        blocker = ensureParents(repo.worktree, c.path);
      } catch (e) {
        blocker = `could not create its directory (${errno(e)})`;
      }
      if (blocker) {
        left.push({ path: c.path, reason: blocker });
        continue;
      }
      const now = inspect(repo.worktree, c.path);
      // Only empty directories may be left below it: they give way (rmdir, never a recursive delete).
      if ((now.kind === 'dir' && !removeEmptyTree(path.join(repo.worktree, c.path))) || now.kind === 'other') {
        left.push({ path: c.path, reason: 'a directory with files not in the snapshot is in the way' });
        continue;
      }
      const content = blobs.get(to.oid);
      if (!content) throw errors.internal(`object ${to.oid} for ${c.path} is missing.`, { data: { path: c.path, oid: to.oid } });
      if (outcome(c, () => replaceEntry(ctx, c, content), 'write')) tick();
    }
    failing = false;
  } finally {
    // Also when interrupted: what was kept so far is stored and reported.
    stored = storeKept(repo, ctx.kept, failing);
  }
  applied.sort((a, b) => (a.path < b.path ? -1 : 1));
  left.sort((a, b) => (a.path < b.path ? -1 : 1));
  const added = applied.filter((c) => c.from === null).map((c) => c.path);
  return { applied, left, nested: prepared.nested, added, kept: stored.stored, release: stored.release };
}

/**
 * Asides a killed restore left (fsutil's restoreAsideName, writer gone) next
 * to planned paths: one that holds the entry the plan expected is put back
 * where the path is empty and a write is planned (killed between setting it
 * aside and installing), or dropped (its bytes are the plan's `from`, which
 * the snapshot the plan came from holds). Any other aside stays: it may be a
 * write that raced, and snapshots record it like any file. Only the
 * directories of paths not to change (already as the target, or left) are
 * read, which a restore that was not interrupted rarely has. Returns whether
 * anything was put back (the plan must then be checked again).
 */
function recoverAsides(repo: Repo, plan: PlannedChange[], prepared: PreparedRestore): boolean {
  const byDir = new Map<string, PlannedChange[]>();
  const planned = new Map<string, PlannedChange>();
  for (const c of plan) planned.set(c.path, c);
  const candidates = [...prepared.already.map((c) => c.path), ...prepared.left.map((l) => l.path)];
  for (const rel of new Set(candidates)) {
    const c = planned.get(rel) ?? null;
    if (c === null || c.from === null) continue;
    const dir = path.posix.dirname(rel);
    byDir.set(dir, [...(byDir.get(dir) ?? []), c]);
  }
  let putBack = false;
  for (const [dir, changes] of byDir) {
    const absDir = dir === '.' ? repo.worktree : path.join(repo.worktree, dir);
    for (const name of readdirOrEmpty(absDir)) {
      if (restoreAsideWriterGone(name) !== true) continue;
      const asideAbs = path.join(absDir, name);
      for (const c of changes) {
        const base = path.posix.basename(c.path);
        if (!name.startsWith(`.${base.slice(0, 40)}.agentsnap-aside-`)) continue;
        let same = false;
        try {
          same = holds(asideAbs, c.from, prepared.blobs, false).same;
        } catch {
          /* gone or unreadable: it stays */
        }
        if (!same) continue;
        const abs = path.join(repo.worktree, c.path);
        try {
          if (c.to !== null && inspect(repo.worktree, c.path).kind === 'absent') {
            moveNoReplace(asideAbs, abs);
            putBack = true;
          } else fs.unlinkSync(asideAbs);
        } catch {
          /* it stays: snapshots record it */
        }
        break;
      }
    }
  }
  return putBack;
}

/** Makes the worktree match `to` on every planned path whose disk state is still `from` (or already `to`). */
export async function applyPlan(repo: Repo, plan: PlannedChange[], opts: PrepareOptions): Promise<RestoreResult> {
  return applyPrepared(repo, plan, await prepareRestore(repo, plan, opts), opts);
}

/**
 * Writes a plan prepareRestore checked (the one an operation's dry run
 * prints): asides a killed restore left next to its paths are recovered
 * first, and only then is the plan checked again.
 */
export async function applyPrepared(
  repo: Repo,
  plan: PlannedChange[],
  prepared: PreparedRestore,
  opts: PrepareOptions,
): Promise<RestoreResult> {
  if (!opts.freshCheckout && (prepared.already.length > 0 || prepared.left.length > 0) && recoverAsides(repo, plan, prepared)) {
    prepared = await prepareRestore(repo, plan, opts);
  }
  return writeRestore(repo, prepared, opts);
}

/**
 * Brings the private index in line with what was applied, with exact object
 * ids (no stat data, so the next snapshot re-reads those files), and returns
 * the resulting tree. Removals go first so a path can change between file
 * and directory.
 */
export async function recordApplied(
  repo: Repo,
  indexFile: string,
  applied: PlannedChange[],
  leftOut: Iterable<string> = [],
): Promise<string> {
  const out = new Set(leftOut);
  if (out.size > 0) applied = applied.filter((c) => !out.has(c.path));
  const lines: string[] = [];
  for (const c of applied) if (c.to === null || (c.from && changeLetter(c) === 'T')) lines.push(`0 ${nullOid(repo)}\t${c.path}`);
  for (const c of applied) if (c.to !== null) lines.push(`${c.to.mode} ${c.to.oid}\t${c.path}`);
  // Completing an interrupted operation writes the index before any snapshot has: a git killed
  // with that operation may have left the index's lock (the caller holds the session lock).
  await clearStaleGitLock(`${indexFile}.lock`);
  // The index keeps the racy reference its last snapshot (the operation's safety snapshot) left: the entries that
  // snapshot read are trusted by their stat data from then on otherwise (see snapshotThroughIndex). The entries
  // written here have no stat data (read again by the next snapshot whatever the reference).
  const res = await keepingRacyReference(indexFile, async () => {
    if (lines.length > 0) {
      await repo.git(['update-index', '-z', '--index-info'], { extraEnv: indexEnv(indexFile), input: lines.join('\0') + '\0' });
    }
    return repo.git(['write-tree'], { extraEnv: indexEnv(indexFile) });
  });
  keepPrivate(indexFile);
  return res.stdout.toString('utf8').trim();
}
