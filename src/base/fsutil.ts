// Small file-system helpers shared by the modules that manage agentsnap's
// state, worktrees and temporary files. None of them follows a symlink.
import * as fs from './fs-bytes.js'; // names that are not UTF-8 by their bytes
import nodeFs from 'node:fs';
import path from 'node:path';

/** Whether anything (a dangling symlink included) is at p. */
export function exists(p: string): boolean {
  try {
    fs.lstatSync(p);
    return true;
  } catch {
    return false; // nothing there, or not reachable: the answer to the probe is no
  }
}

/** The names in a directory; none when it is missing or unreadable. */
export function readdirOrEmpty(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return []; // missing or unreadable: none, as documented
  }
}

/** Whether p was last modified more than ms before now (false when it is gone). */
export function olderThan(p: string, ms: number, now: number): boolean {
  try {
    return now - fs.lstatSync(p).mtimeMs > ms;
  } catch {
    return false; // gone: not older, as documented
  }
}

/** Removes a file (not a directory) if it is there. */
export function unlinkQuiet(p: string): void {
  try {
    fs.unlinkSync(p);
  } catch {
    /* not there */
  }
}

/** Removes a file or a directory tree, best effort. */
export function rmQuiet(p: string): void {
  try {
    fs.rmSync(p, { recursive: true, force: true });
  } catch {
    /* best effort */
  }
}

/** Disk use in bytes of a file tree (allocated blocks; symlinks are not followed). */
export function diskUse(p: string): number {
  let total = 0;
  const walk = (abs: string) => {
    let st: fs.Stats;
    try {
      st = fs.lstatSync(abs);
    } catch {
      return; // gone meanwhile: nothing to count
    }
    total += st.blocks * 512;
    if (st.isDirectory()) for (const n of readdirOrEmpty(abs)) walk(path.join(abs, n));
  };
  walk(p);
  return total;
}

/**
 * The restore engine writes each file to `.<name>.agentsnap-<pid>-<8 hex>` in
 * its directory and renames it into place. A process killed in between leaves
 * that file behind: it is never user content (its bytes are a snapshot's).
 */
const RESTORE_TEMP_RE = /(?:^|\/)\.[^/]*\.agentsnap-(\d+)-[0-9a-f]{8}$/;

export function restoreTempName(base: string, pid: number, rand: string): string {
  return `.${base.slice(0, 40)}.agentsnap-${pid}-${rand}`;
}

/**
 * Right before the restore engine replaces or deletes a path, it renames what
 * is there to `.<name>.agentsnap-aside-<pid>-<8 hex>` and compares it with what
 * the plan expected (see writeRestore). Unlike a temp file, an aside may hold
 * user content (a write that raced with the restore): a snapshot leaves it out
 * only while its writer lives, and never deletes it; once the writer is gone
 * (killed in that moment) it is recorded like any other file, unless the next
 * restore of the same plan puts it back first (recoverAsides in restore.ts).
 */
const RESTORE_ASIDE_RE = /(?:^|\/)\.[^/]*\.agentsnap-aside-(\d+)-[0-9a-f]{8}$/;

export function restoreAsideName(base: string, pid: number, rand: string): string {
  return `.${base.slice(0, 40)}.agentsnap-aside-${pid}-${rand}`;
}

/**
 * For a restore's aside (see restoreAsideName): the name of the path it was set
 * aside from, cut at 40 characters as restoreAsideName cuts it (`cut`: it may
 * be the start of a longer name). Null for any other name.
 */
export function restoreAsideOf(name: string): { base: string; cut: boolean } | null {
  if (!RESTORE_ASIDE_RE.test(name)) return null;
  const file = name.slice(name.lastIndexOf('/') + 1);
  const base = file.slice(1, file.lastIndexOf('.agentsnap-aside-'));
  return base === '' ? null : { base, cut: base.length >= 40 };
}

/** For a restore's aside (see restoreAsideName): the pid that set it aside. Null for any other name. */
export function restoreAsidePid(name: string): number | null {
  const m = RESTORE_ASIDE_RE.exec(name);
  return m ? Number(m[1]) : null;
}

function pidGone(pid: number): boolean {
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/** Whether the process that set an aside is gone (it was killed while the aside held the path's entry). */
export function restoreAsideWriterGone(name: string): boolean | null {
  const pid = restoreAsidePid(name);
  return pid === null ? null : pidGone(pid);
}

/**
 * Whether `rel` is a restore's temporary file, which snapshots leave out (never
 * user content); one whose writer is gone (killed mid-write) is removed. A
 * restore's aside is left out while its writer lives, and never removed.
 */
export function skipRestoreTemp(worktree: string, rel: string): boolean {
  const aside = restoreAsideWriterGone(rel);
  if (aside !== null) return !aside;
  const gone = restoreTempWriterGone(rel);
  if (gone) unlinkQuiet(path.join(worktree, rel));
  return gone !== null;
}

/** For a restore's temporary file (see restoreTempName): whether its writer is gone. Null for any other path. */
export function restoreTempWriterGone(rel: string): boolean | null {
  const m = RESTORE_TEMP_RE.exec(rel);
  if (!m) return null;
  return pidGone(Number(m[1]));
}

/** Identifies one version of a file: git replaces the files it writes (lock and rename), so any write changes this. */
export function statKey(file: string): string {
  try {
    const st = fs.statSync(file, { bigint: true });
    return [st.dev, st.ino, st.size, st.mtimeNs, st.ctimeNs, st.mode].join(':');
  } catch (e) {
    return `missing:${(e as NodeJS.ErrnoException).code ?? ''}`;
  }
}

/**
 * A version the restore engine found at a path and could not leave there (the
 * path was taken again meanwhile, or it was written through a file still open)
 * is kept beside it as `<name>.agentsnap-kept-<8 hex>`: a visible file, which
 * snapshots record like any other, besides the object the restore reports.
 */
export function restoreKeptName(base: string, rand: string): string {
  return `${base.slice(0, 80)}.agentsnap-kept-${rand}`;
}

/**
 * A path with an empty, `.`, `..` or `.git` component (a crafted tree): a
 * restore never writes it, nor asks git about it. `.GIT`, `.Git`... are
 * `.git` only where the filesystem folds case (`foldsCase`, the safe
 * default); on a case-sensitive one they are a user's own directory, which
 * snapshots record and a restore must bring back (see caseSensitiveFs).
 */
export function unsafePath(rel: string, foldsCase = true): boolean {
  return rel
    .split('/')
    .some((part) => part === '' || part === '.' || part === '..' || part === '.git' || (foldsCase && part.toLowerCase() === '.git'));
}

/**
 * Whether the worktree's filesystem tells names apart by case, asked without
 * writing anything: `.git` (every worktree has one) looked up as `.GIT` is
 * the same inode only where case is folded (a user's own `.GIT` is another
 * one); without a `.git` there, the git dir's `HEAD` as `head`. Unknown
 * counts as case-insensitive (git's own core.ignoreCase is then kept). Asked
 * at the top only: a case-folding directory below a case-sensitive root
 * (ext4 casefold) is not seen.
 */
export function caseSensitiveFs(repo: { worktree: string; gitDir: string }): boolean {
  const probe = (dir: string, name: string, other: string): boolean | null => {
    const a = nodeFs.lstatSync(path.join(dir, name), { bigint: true, throwIfNoEntry: false });
    if (!a) return null;
    const b = nodeFs.lstatSync(path.join(dir, other), { bigint: true, throwIfNoEntry: false });
    return !b || b.ino !== a.ino || b.dev !== a.dev;
  };
  try {
    return probe(repo.worktree, '.git', '.GIT') ?? probe(repo.gitDir, 'HEAD', 'head') ?? false;
  } catch {
    return false; // not readable (EACCES...): as unknown
  }
}

/** The last `limit` bytes of a file, with where they start and the size read; null when it cannot be read. Never throws. */
export function readFileTail(file: string, limit: number): { buf: Buffer; from: number; size: number } | null {
  let fd: number;
  try {
    fd = nodeFs.openSync(file, 'r');
  } catch {
    return null; // cannot be read: null, as documented (never throws)
  }
  try {
    const size = nodeFs.fstatSync(fd).size;
    const from = Math.max(0, size - limit);
    const buf = Buffer.alloc(size - from);
    const got = nodeFs.readSync(fd, buf, 0, buf.length, from);
    return { buf: got === buf.length ? buf : buf.subarray(0, got), from, size: from + got };
  } catch {
    return null; // cannot be read: null, as documented (never throws)
  } finally {
    nodeFs.closeSync(fd);
  }
}

/** 1.5 KiB, 12 MiB: a size as agentsnap prints it. */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = bytes / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

/**
 * What lies at `rel` below `top`, component by component, without following a symlink: a directory all the way
 * ('dir'), a component missing ('absent'), or a symlink, a file or an unreadable component on the way ('other').
 * git lists nothing below a path that is not 'dir'.
 */
export function directoryAt(top: string, rel: string): 'dir' | 'absent' | 'other' {
  let at = top;
  for (const part of rel.split('/')) {
    at = path.join(at, part);
    let st: nodeFs.Stats | undefined;
    try {
      st = nodeFs.lstatSync(at, { throwIfNoEntry: false });
    } catch {
      return 'other'; // ENOTDIR, EACCES: not a directory to list
    }
    if (st === undefined) return 'absent';
    if (!st.isDirectory()) return 'other';
  }
  return 'dir';
}
