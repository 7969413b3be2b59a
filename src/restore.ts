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
// - Applying the same plan twice is harmless (roll-forward after a crash).
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { errors } from './errors.js';
import type { PlannedChange, TreeEntry } from './journal.js';
import type { Repo } from './repo.js';
import { indexEnv, ZERO_OID } from './git/plumbing.js';
import { runGitToFdSync, splitNul } from './git/run.js';
import { hashRaw, keepPrivate } from './snapshot.js';
import { restoreTempName, unlinkQuiet } from './fsutil.js';
import { clearStaleGitLock } from './lock.js';

export const GITLINK = '160000';
export const SYMLINK = '120000';

/** Planned changes between two trees (diff-tree -r, no renames), optionally limited to paths (a directory covers what is below it). */
export async function planChanges(repo: Repo, fromTree: string, toTree: string, paths?: string[]): Promise<PlannedChange[]> {
  if (fromTree === toTree) return [];
  const args = ['diff-tree', '-r', '-z', '--no-renames', '--raw', fromTree, toTree];
  if (paths && paths.length > 0) args.push('--', ...paths);
  const res = await repo.git(args, { extraEnv: { GIT_LITERAL_PATHSPECS: '1' } });
  const tokens = splitNul(res.stdout);
  const out: PlannedChange[] = [];
  for (let i = 0; i + 1 < tokens.length; i += 2) {
    const m = /^:(\d{6}) (\d{6}) ([0-9a-f]+) ([0-9a-f]+) [A-Z]\d*$/.exec(tokens[i] ?? '');
    if (!m) throw errors.internal(`unexpected diff-tree output: ${JSON.stringify(tokens[i])}`);
    const entry = (mode: string, oid: string): TreeEntry | null => (mode === '000000' ? null : { mode, oid });
    out.push({ path: tokens[i + 1] ?? '', from: entry(m[1] ?? '', m[3] ?? ''), to: entry(m[2] ?? '', m[4] ?? '') });
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
}

export const NESTED_REPO_REASON = 'nested repository: left alone';

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
}

export interface RestoreResult {
  /** Paths now matching the target (changed by this call or already matching). */
  applied: PlannedChange[];
  /** Paths left as they were (nested repositories included). */
  left: LeftPath[];
  /** Of `left`: nested repositories (gitlinks), never written. */
  nested: string[];
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

/** A path with an empty, `.`, `..` or `.git` component (a crafted tree) is never written. */
function unsafePath(rel: string): boolean {
  return rel.split('/').some((part) => part === '' || part === '.' || part === '..' || part.toLowerCase() === '.git');
}

/** Files (anything but directories) below a directory of the worktree, not following symlinks. */
function filesBelow(worktree: string, rel: string): string[] {
  const out: string[] = [];
  const walk = (r: string) => {
    for (const name of fs.readdirSync(path.join(worktree, r))) {
      const child = `${r}/${name}`;
      if (fs.lstatSync(path.join(worktree, child)).isDirectory()) walk(child);
      else out.push(child);
    }
  };
  walk(rel);
  return out;
}

async function classify(repo: Repo, plan: PlannedChange[], blobs: Map<string, Buffer | LargeBlob>, opts: RestoreOptions): Promise<Map<string, Disk>> {
  const found = new Map<string, Found>();
  const planned = new Map<string, PlannedChange>();
  // A path that cannot even be lstat-ed (a directory on the way not readable, a path too long) is left: nothing is known of it.
  const unreadable = new Map<string, string>();
  for (const c of plan) {
    planned.set(c.path, c);
    if (unsafePath(c.path)) continue;
    try {
      found.set(c.path, inspect(repo.worktree, c.path));
    } catch (e) {
      unreadable.set(c.path, (e as NodeJS.ErrnoException).code ?? 'error');
    }
  }
  // Hash the regular files on disk that a plan entry expects to be regular files, in one git call.
  const toHash = opts.freshCheckout
    ? []
    : plan.filter((c) => found.get(c.path)?.kind === 'file' && [c.from, c.to].some((e) => e && e.mode !== SYMLINK && e.mode !== GITLINK)).map((c) => c.path);
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
    } else if (c.from === null) out.set(c.path, { is: 'other', reason: 'a file not in the snapshot (ignored or skipped) is in the way' });
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
export async function prepareRestore(repo: Repo, plan: PlannedChange[], opts: RestoreOptions = {}): Promise<PreparedRestore> {
  const nested = gitlinkPaths(plan);
  const left: LeftPath[] = nested.map((p) => ({ path: p, reason: NESTED_REPO_REASON }));
  const work = plan.filter((c) => !nested.includes(c.path));
  const symlinkOids = work.flatMap((c) => [c.from, c.to]).filter((e): e is TreeEntry => !!e && e.mode === SYMLINK).map((e) => e.oid);
  const blobs = await readBlobs(repo, [...symlinkOids, ...work.filter((c) => c.to && c.to.mode !== SYMLINK).map((c) => c.to!.oid)]);
  const disk = await classify(repo, work, blobs, opts);
  const todo: PlannedChange[] = [];
  const already: PlannedChange[] = [];
  const problems: LeftPath[] = [];
  for (const c of work) {
    const d = disk.get(c.path);
    if (!d || d.is === 'other') problems.push({ path: c.path, reason: d?.is === 'other' ? d.reason : 'unknown' });
    else if (d.is === 'to') already.push(c);
    else todo.push(c);
  }
  if (problems.length > 0 && opts.ifNotExpected === 'refuse') {
    const list = problems.slice(0, 10).map((l) => `${l.path} (${l.reason})`).join(', ');
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

function writeEntry(repo: Repo, rel: string, entry: TreeEntry, content: Buffer | LargeBlob): void {
  const worktree = repo.worktree;
  const abs = path.join(worktree, rel);
  const dir = path.dirname(abs);
  const tmp = tempName(dir, path.basename(abs));
  try {
    if (entry.mode === SYMLINK) {
      if (!Buffer.isBuffer(content)) throw errors.internal(`symlink ${rel} has a ${content.size}-byte target.`);
      fs.symlinkSync(content, tmp);
    } else {
      const exec = entry.mode === '100755';
      // Keep the permissions of a file being replaced (but its x bits from the snapshot); new files get the umask.
      let keep: number | null = null;
      try {
        const st = fs.lstatSync(abs);
        if (st.isFile()) keep = st.mode & 0o7777;
      } catch {
        /* new file */
      }
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
    }
    fs.renameSync(tmp, abs);
  } catch (e) {
    unlinkQuiet(tmp);
    throw e;
  }
}

/** Streams a large blob from git straight into an open file: Node never holds its bytes. */
function writeBlobToFdSync(repo: Repo, blob: LargeBlob, fd: number): void {
  runGitToFdSync(['cat-file', 'blob', blob.oid], { cwd: repo.worktree, env: { ...repo.env, GIT_DIR: repo.gitDir, GIT_WORK_TREE: repo.worktree } }, fd);
  const written = fs.fstatSync(fd).size;
  if (written !== blob.size) {
    throw errors.internal(`writing object ${blob.oid} gave ${written} of ${blob.size} bytes.`, { data: { oid: blob.oid } });
  }
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

function errno(e: unknown): string {
  return (e as NodeJS.ErrnoException).code ?? (e instanceof Error ? e.message : String(e));
}

/**
 * Writes a prepared plan: deletions first (deepest first), then the
 * directories they emptied, then the files. A path that cannot be changed
 * (an I/O error, something that appeared meanwhile) is left and reported; the
 * rest completes.
 */
export function writeRestore(repo: Repo, prepared: PreparedRestore, opts: RestoreOptions = {}): RestoreResult {
  const left = [...prepared.left];
  const applied = [...prepared.already];
  const { todo, blobs } = prepared;
  let changes = 0;
  const tick = () => {
    changes++;
    if (opts.interruptAfter !== undefined && changes >= opts.interruptAfter) {
      throw errors.internal(`interrupted after ${changes} changes (test)`, { data: { interrupted: true } });
    }
  };

  // 1. Deletions, deepest first.
  const deletions = todo.filter((c) => c.to === null).sort((a, b) => b.path.split('/').length - a.path.split('/').length);
  for (const c of deletions) {
    try {
      fs.unlinkSync(path.join(repo.worktree, c.path));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') {
        left.push({ path: c.path, reason: `could not delete it (${errno(e)})` });
        continue;
      }
    }
    applied.push(c);
    tick();
  }
  // 2. Directories that became empty.
  pruneEmptyDirs(repo.worktree, deletions.map((c) => c.path));
  // 3. Writes. A type change from symlink to file (or back) is a rename over the old entry.
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
    let now = inspect(repo.worktree, c.path);
    if (now.kind === 'dir' && filesBelow(repo.worktree, c.path).length === 0) {
      // Only empty directories are left below it (checked just now): they give way.
      fs.rmSync(path.join(repo.worktree, c.path), { recursive: true });
      now = inspect(repo.worktree, c.path);
    }
    if (now.kind === 'dir' || now.kind === 'other') {
      left.push({ path: c.path, reason: 'a directory with files not in the snapshot is in the way' });
      continue;
    }
    const content = blobs.get(to.oid);
    if (!content) throw errors.internal(`object ${to.oid} for ${c.path} is missing.`, { data: { path: c.path, oid: to.oid } });
    try {
      writeEntry(repo, c.path, to, content);
    } catch (e) {
      left.push({ path: c.path, reason: `could not write it (${errno(e)})` });
      continue;
    }
    applied.push(c);
    tick();
  }
  applied.sort((a, b) => (a.path < b.path ? -1 : 1));
  left.sort((a, b) => (a.path < b.path ? -1 : 1));
  return { applied, left, nested: prepared.nested };
}

/** Makes the worktree match `to` on every planned path whose disk state is still `from` (or already `to`). */
export async function applyPlan(repo: Repo, plan: PlannedChange[], opts: RestoreOptions = {}): Promise<RestoreResult> {
  return writeRestore(repo, await prepareRestore(repo, plan, opts), opts);
}

/**
 * Brings the private index in line with what was applied, with exact object
 * ids (no stat data, so the next snapshot re-reads those files), and returns
 * the resulting tree. Removals go first so a path can change between file
 * and directory.
 */
export async function recordApplied(repo: Repo, indexFile: string, applied: PlannedChange[]): Promise<string> {
  const lines: string[] = [];
  for (const c of applied) if (c.to === null || (c.from && changeLetter(c) === 'T')) lines.push(`0 ${ZERO_OID}\t${c.path}`);
  for (const c of applied) if (c.to !== null) lines.push(`${c.to.mode} ${c.to.oid}\t${c.path}`);
  // Completing an interrupted operation writes the index before any snapshot has: a git killed
  // with that operation may have left the index's lock (the caller holds the session lock).
  await clearStaleGitLock(`${indexFile}.lock`);
  if (lines.length > 0) {
    await repo.git(['update-index', '-z', '--index-info'], { extraEnv: indexEnv(indexFile), input: lines.join('\0') + '\0' });
  }
  const res = await repo.git(['write-tree'], { extraEnv: indexEnv(indexFile) });
  keepPrivate(indexFile);
  return res.stdout.toString('utf8').trim();
}
