// Reads the paths of a git index file (versions 2, 3 and 4) without a git
// process and without holding git's text listing of 100k entries in memory
// (`ls-files -s` output, its string and its split copies cost ~50 MB at
// 100k files). The file is read in chunks of INDEX_CHUNK bytes, never whole.
// Returns null for what it does not read (split index, unknown version or a
// malformed file): the caller then asks git.
import fs from 'node:fs';
import type { ObjectFormat } from './repo.js';

export interface IndexPaths {
  paths: string[];
  /** Why this index cannot be followed by path alone (gitlinks, conflicts, flagged entries), or null. */
  unsupported: string | null;
}

const GITLINK = 0o160000;

export function readIndexPaths(file: string, format: ObjectFormat): IndexPaths | null {
  let paths: string[] = [];
  const res = walkIndex(
    file,
    format,
    (count) => (paths = new Array<string>(count)),
    (i, bytes, start, end) => {
      paths[i] = bytes.toString('utf8', start, end);
    },
  );
  return res && { paths, unsupported: res.unsupported };
}

/**
 * Calls `onName` with each entry's name as bytes (bytes[start, end), valid
 * only during the call) in index order, reading the file in chunks (no buffer
 * of the whole file, no array of every path); null for what it does not read
 * (possibly after some calls: the caller asks git then).
 */
export function forEachIndexName(
  file: string,
  format: ObjectFormat,
  onName: (bytes: Buffer, start: number, end: number) => void,
  chunk = INDEX_CHUNK,
): { unsupported: string | null } | null {
  const res = walkIndex(
    file,
    format,
    () => undefined,
    (_i, bytes, start, end) => onName(bytes, start, end),
    chunk,
  );
  return res && { unsupported: res.unsupported };
}

export interface IndexFacts {
  /** As IndexPaths.unsupported, and intent-to-add entries (write-tree leaves them out). */
  unsupported: string | null;
  /** Whether a .gitattributes file is among the entries. */
  attributesFiles: boolean;
}

const ATTRIBUTES = Buffer.from('.gitattributes');

/** What the in-process snapshot path must know of an index, without a string per entry (~10x faster at 100k). */
export function readIndexFacts(file: string, format: ObjectFormat): IndexFacts | null {
  let attributesFiles = false;
  const res = walkIndex(
    file,
    format,
    () => undefined,
    (_i, bytes, start, end) => {
      if (attributesFiles || end - start < ATTRIBUTES.length) return;
      const from = end - ATTRIBUTES.length;
      for (let k = 0; k < ATTRIBUTES.length; k++) if (bytes[from + k] !== ATTRIBUTES[k]) return;
      attributesFiles = from === start || bytes[from - 1] === 0x2f;
    },
  );
  return (
    res && {
      unsupported: res.unsupported ?? (res.intentToAdd !== null ? `intent-to-add entry in the index: ${res.intentToAdd}` : null),
      attributesFiles,
    }
  );
}

/**
 * The oldest mtime (whole seconds, as git compares them) among the entries of
 * `file` whose stat data differs from the same entry's in `base`, when `file`
 * holds base's entries in the same order with stat data refreshed by git
 * (a copy of it git's status wrote back); Infinity when none differs; null
 * when the two hold different numbers of entries or either is not read.
 */
export function oldestRefreshedMtime(file: string, format: ObjectFormat, base: string): number | null {
  const WORDS = 10; // 40 bytes of stat data: ctime, mtime, dev, ino, mode, uid, gid, size
  let baseStats = new Uint32Array(0);
  let baseCount = -1;
  // Read word by word (no native call per entry: see walkIndexFd).
  const a = walkIndex(
    base,
    format,
    (count) => ((baseCount = count), (baseStats = new Uint32Array(count * WORDS))),
    (i, _b, _s, _e, _f, _x, st, at) => {
      for (let k = 0; k < WORDS; k++) baseStats[i * WORDS + k] = st.readUInt32BE(at + 4 * k);
    },
  );
  if (!a) return null;
  let count = -1;
  let oldest = Infinity;
  const b = walkIndex(
    file,
    format,
    (c) => (count = c),
    (i, _b, _s, _e, _f, _x, st, at) => {
      if (i >= baseCount) return;
      let k = 0;
      while (k < WORDS && baseStats[i * WORDS + k] === st.readUInt32BE(at + 4 * k)) k++;
      if (k === WORDS) return;
      const mtime = st.readUInt32BE(at + 8);
      if (mtime < oldest) oldest = mtime;
    },
  );
  if (!b || count !== baseCount) return null;
  return oldest;
}

/**
 * The oldest mtime (whole seconds) among the entries of `file` whose recorded
 * ctime is not older than `ctimeSince` (whole seconds); Infinity when there
 * is none; null when the file is not read. One walk, no second index.
 */
export function oldestRecentMtime(file: string, format: ObjectFormat, ctimeSince: number): number | null {
  let oldest = Infinity;
  const res = walkIndex(
    file,
    format,
    () => undefined,
    (_i, _b, _s, _e, _f, _x, st, at) => {
      if (st.readUInt32BE(at) < ctimeSince) return;
      const mtime = st.readUInt32BE(at + 8);
      if (mtime < oldest) oldest = mtime;
    },
  );
  return res ? oldest : null;
}

/**
 * The oldest mtime (whole seconds) among the entries of `file` whose stat
 * data differs from the entry of the same name in `base`, or that `base`
 * does not hold, for indexes that hold different entries (a session's own
 * private index against the user's); both are in git's order (name bytes).
 * Infinity when there is none; null when either is not read. Two walks; the
 * base's names are kept in one buffer while the second runs.
 */
export function oldestUnlikeMtime(file: string, format: ObjectFormat, base: string): number | null {
  const WORDS = 10; // 40 bytes of stat data: ctime, mtime, dev, ino, mode, uid, gid, size
  let stats = new Uint32Array(0);
  let ends = new Uint32Array(0);
  let names = Buffer.alloc(0);
  let used = 0;
  let n = 0;
  const a = walkIndex(
    base,
    format,
    (count) => (
      (stats = new Uint32Array(count * WORDS)), (ends = new Uint32Array(count)), (names = Buffer.allocUnsafe(Math.max(64, count * 32)))
    ),
    (i, b, s, e, _f, _x, st, at) => {
      const len = e - s;
      if (used + len > names.length) {
        const grown = Buffer.allocUnsafe(Math.max(used + len, names.length * 2));
        names.copy(grown, 0, 0, used);
        names = grown;
      }
      for (let k = s; k < e; k++) names[used++] = b[k]!; // no native call per entry
      ends[i] = used;
      for (let k = 0; k < WORDS; k++) stats[i * WORDS + k] = st.readUInt32BE(at + 4 * k);
      n = i + 1;
    },
  );
  if (!a) return null;
  let j = 0;
  let oldest = Infinity;
  const res = walkIndex(
    file,
    format,
    () => undefined,
    (_i, b, s, e, _f, _x, st, at) => {
      // Both in name order: move on in base to the first name not below this one.
      let cmp = 1;
      while (j < n) {
        // Compared byte by byte here (a native compare per entry costs more than the bytes of a path).
        const from = j === 0 ? 0 : ends[j - 1]!;
        const to = ends[j]!;
        let x = from;
        let y = s;
        while (x < to && y < e && names[x] === b[y]) x++, y++;
        cmp = x < to && y < e ? names[x]! - b[y]! : to - x - (e - y);
        if (cmp >= 0) break; // base name >= this name
        j++;
      }
      if (j < n && cmp === 0) {
        let k = 0;
        while (k < WORDS && stats[j * WORDS + k] === st.readUInt32BE(at + 4 * k)) k++;
        if (k === WORDS) return;
      }
      const mtime = st.readUInt32BE(at + 8);
      if (mtime < oldest) oldest = mtime;
    },
  );
  return res ? oldest : null;
}

/**
 * A window on an open file, read in chunks by position: an index of 1M
 * entries (~140 MB) is walked without holding it (issue 19: the warm
 * server's peak).
 */
class FileWindow {
  buf: Buffer;
  /** File offset of buf[0]. */
  start = 0;
  /** Valid bytes in buf. */
  len = 0;
  constructor(
    private readonly fd: number,
    readonly size: number,
    chunk: number,
  ) {
    this.buf = Buffer.allocUnsafe(Math.max(64, Math.min(size, chunk)));
  }

  /** Makes bytes [p, p + n) of the file readable at buf[p - start]; false past the end of the file. */
  ensure(p: number, n: number): boolean {
    if (p >= this.start && p + n <= this.start + this.len) return true;
    if (p + n > this.size) return false;
    let keep = 0;
    const target = n > this.buf.length ? Buffer.allocUnsafe(Math.max(n, this.buf.length * 2)) : this.buf;
    if (p >= this.start && p < this.start + this.len) {
      keep = this.start + this.len - p;
      this.buf.copy(target, 0, p - this.start, this.start + this.len);
    }
    this.buf = target;
    this.start = p;
    this.len = keep;
    while (this.len < this.buf.length && this.start + this.len < this.size) {
      const got = fs.readSync(this.fd, this.buf, this.len, this.buf.length - this.len, this.start + this.len);
      if (got === 0) break;
      this.len += got;
    }
    return p + n <= this.start + this.len;
  }
}

/** Bytes of the index read at a time. */
const INDEX_CHUNK = 1 << 20;

/** Calls `onEntry` with each entry's name (bytes[start, end), valid only during the call); null for what it does not read. */
function walkIndex(
  file: string,
  format: ObjectFormat,
  onCount: (count: number) => void,
  onEntry: (i: number, bytes: Buffer, start: number, end: number, flags: number, extended: number, stat: Buffer, statAt: number) => void,
  chunk = INDEX_CHUNK,
): { unsupported: string | null; intentToAdd: string | null; sparse: boolean } | null {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { unsupported: null, intentToAdd: null, sparse: false };
    return null;
  }
  try {
    return walkIndexFd(fd, format === 'sha256' ? 32 : 20, onCount, onEntry, chunk);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === undefined) throw e;
    return null; // unreadable midway: the caller asks git
  } finally {
    fs.closeSync(fd);
  }
}

// biome-ignore lint/complexity/noExcessiveLinesPerFunction: one hot loop over the index format's fields in file order; a helper per field is a call per entry, most of a cold walk's cost (see the comments inside).
function walkIndexFd(
  fd: number,
  /** Bytes of an object id: the file does not say (20 in sha1, 32 in sha256), its repository's object format does. */
  hashLen: number,
  onCount: (count: number) => void,
  onEntry: (i: number, bytes: Buffer, start: number, end: number, flags: number, extended: number, stat: Buffer, statAt: number) => void,
  chunk: number,
): { unsupported: string | null; intentToAdd: string | null; sparse: boolean } | null {
  const w = new FileWindow(fd, fs.fstatSync(fd).size, chunk);
  if (!w.ensure(0, 12) || w.buf.toString('latin1', 0, 4) !== 'DIRC') return null;
  const version = w.buf.readUInt32BE(4);
  if (version < 2 || version > 4) return null;
  const count = w.buf.readUInt32BE(8);
  onCount(count);
  let unsupported: string | null = null;
  let intentToAdd: string | null = null;
  let at = 12; // a file offset
  // Version 4 names are rebuilt in one growing buffer.
  let prev = Buffer.alloc(version === 4 ? 4096 : 0);
  let prevLen = 0;
  for (let i = 0; i < count; i++) {
    // Offsets below are from `at` (the entry's file offset); o is where `at` sits in the window.
    if (!w.ensure(at, 42 + hashLen)) return null;
    let o = at - w.start;
    // Bytes, not readUInt32BE/readUInt16BE: a call each per entry is most of a cold walk.
    const b0 = w.buf;
    const mode = ((b0[o + 24]! << 24) | (b0[o + 25]! << 16) | (b0[o + 26]! << 8) | b0[o + 27]!) >>> 0;
    const flags = (b0[o + 40 + hashLen]! << 8) | b0[o + 41 + hashLen]!;
    let p = 42 + hashLen;
    let extended = 0;
    if (flags & 0x4000) {
      if (version < 3) return null;
      if (!w.ensure(at, p + 2)) return null;
      o = at - w.start;
      extended = w.buf.readUInt16BE(o + p);
      p += 2;
    }
    let strip = 0;
    if (version === 4) {
      // Prefix compression: a varint of bytes to drop from the previous path, then the rest.
      const need = Math.min(p + 16, w.size - at);
      if (need <= p || !w.ensure(at, need)) return null;
      o = at - w.start;
      let c = w.buf[o + p++] as number;
      strip = c & 127;
      while (c & 128) {
        if (p >= need) return null;
        c = w.buf[o + p++] as number;
        strip = ((strip + 1) << 7) | (c & 127);
      }
    }
    // The name's length is in the flags (below 0xfff; v4 stores only what follows the kept prefix): no scan
    // for its NUL, which cost a third of a cold walk (a CLI process walks interpreted). A longer one is scanned.
    const nameLen = flags & 0xfff;
    let q: number;
    if (nameLen !== 0xfff) {
      q = p + nameLen - (version === 4 ? prevLen - strip : 0);
      if (q < p || !w.ensure(at, q + 1)) return null;
      o = at - w.start;
      if (w.buf[o + q] !== 0) return null; // not the length its flags say: malformed
    } else {
      // The name ends at a NUL: scan, reading on (the entry kept in the window) until it is found.
      q = p;
      for (;;) {
        const b = w.buf;
        const end = w.len - o;
        while (q < end && b[o + q] !== 0) q++; // a loop, not indexOf: no native call per entry
        if (q < end) break;
        const want = Math.min(q + 4096, w.size - at);
        if (want <= q || !w.ensure(at, want)) return null;
        o = at - w.start;
      }
    }
    const buf = w.buf;
    let nameBuf: Buffer;
    let nameStart: number;
    let nameEnd: number;
    if (version === 4) {
      if (strip > prevLen) return null;
      const keep = prevLen - strip;
      const len = keep + (q - p);
      if (len > prev.length) {
        const grown = Buffer.alloc(Math.max(len, prev.length * 2));
        prev.copy(grown, 0, 0, keep);
        prev = grown;
      }
      for (let k = o + p, d = keep; k < o + q; k++, d++) prev[d] = buf[k] as number;
      prevLen = len;
      nameBuf = prev;
      nameStart = 0;
      nameEnd = len;
      at = at + q + 1;
    } else {
      nameBuf = buf;
      nameStart = o + p;
      nameEnd = o + q;
      at = at + ((q + 8) & ~7);
    }
    // No path is empty: a split index's entries that replace shared ones may have no name (they are
    // known by position). Stop before the caller takes one for the root (it asks git then).
    if (nameEnd === nameStart) return null;
    onEntry(i, nameBuf, nameStart, nameEnd, flags, extended, buf, o); // stat data: buf[o, o + 40)
    if (extended & 0x2000 && intentToAdd === null) intentToAdd = nameBuf.toString('utf8', nameStart, nameEnd);
    // No closure or string per entry: this loop runs cold (interpreted) in a short-lived CLI process.
    if (unsupported === null && ((flags >> 12) & 3 || mode === GITLINK || flags & 0x8000 || extended & 0x4000)) {
      const p = nameBuf.toString('utf8', nameStart, nameEnd);
      if ((flags >> 12) & 3) unsupported = `unmerged index entry: ${p}`;
      else if (mode === GITLINK) unsupported = `gitlink (submodule) in the index: ${p}`;
      else if (flags & 0x8000) unsupported = `assume-unchanged entry in the index: ${p}`;
      else unsupported = `skip-worktree entry in the index (sparse checkout): ${p}`;
    }
  }
  // Extensions: a split index keeps its entries in another file.
  let sparse = false;
  while (at + 8 <= w.size - hashLen) {
    if (!w.ensure(at, 8)) return null;
    const o = at - w.start;
    const sig = w.buf.toString('latin1', o, o + 4);
    const size = w.buf.readUInt32BE(o + 4);
    if (sig === 'link') return null;
    if (sig === 'sdir') {
      unsupported ??= 'sparse index';
      sparse = true;
    }
    at += 8 + size;
  }
  return { unsupported, intentToAdd, sparse };
}

export interface IndexFlags {
  /** Names (raw bytes) of entries flagged skip-worktree (`git update-index --skip-worktree`, or outside a sparse checkout's patterns). */
  skipWorktree: Buffer[];
  /** Names (raw bytes) of entries flagged assume-unchanged (`git update-index --assume-unchanged`). */
  assumeUnchanged: Buffer[];
}

/**
 * The entries whose flags make git skip the worktree file (a snapshot must
 * read it anyway); null for what this does not read (split or sparse index:
 * ask git).
 */
export function readIndexFlags(file: string, format: ObjectFormat): IndexFlags | null {
  const out: IndexFlags = { skipWorktree: [], assumeUnchanged: [] };
  const res = walkIndex(
    file,
    format,
    () => undefined,
    (_i, bytes, start, end, flags, extended) => {
      if (flags & 0x8000) out.assumeUnchanged.push(Buffer.from(bytes.subarray(start, end)));
      if (extended & 0x4000) out.skipWorktree.push(Buffer.from(bytes.subarray(start, end)));
    },
  );
  return res && !res.sparse ? out : null;
}
