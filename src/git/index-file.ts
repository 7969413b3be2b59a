// Reads the paths of a git index file (versions 2, 3 and 4) without a git
// process and without holding git's text listing of 100k entries in memory
// (`ls-files -s` output, its string and its split copies cost ~50 MB at
// 100k files; this costs the file's bytes and the path strings).
// Returns null for what it does not read (split index, unknown version or a
// malformed file): the caller then asks git.
import fs from 'node:fs';

export interface IndexPaths {
  paths: string[];
  /** Why this index cannot be followed by path alone (gitlinks, conflicts, flagged entries), or null. */
  unsupported: string | null;
}

const GITLINK = 0o160000;

export function readIndexPaths(file: string): IndexPaths | null {
  let paths: string[] = [];
  const res = walkIndex(file, (count) => (paths = new Array<string>(count)), (i, bytes, start, end) => {
    paths[i] = bytes.toString('utf8', start, end);
  });
  return res && { paths, unsupported: res.unsupported };
}

export interface IndexFacts {
  /** As IndexPaths.unsupported, and intent-to-add entries (write-tree leaves them out). */
  unsupported: string | null;
  /** Whether a .gitattributes file is among the entries. */
  attributesFiles: boolean;
}

const ATTRIBUTES = Buffer.from('.gitattributes');

/** What the in-process snapshot path must know of an index, without a string per entry (~10x faster at 100k). */
export function readIndexFacts(file: string): IndexFacts | null {
  let attributesFiles = false;
  const res = walkIndex(
    file,
    () => undefined,
    (_i, bytes, start, end) => {
      if (attributesFiles || end - start < ATTRIBUTES.length) return;
      const from = end - ATTRIBUTES.length;
      for (let k = 0; k < ATTRIBUTES.length; k++) if (bytes[from + k] !== ATTRIBUTES[k]) return;
      attributesFiles = from === start || bytes[from - 1] === 0x2f;
    },
  );
  return res && { unsupported: res.unsupported ?? (res.intentToAdd !== null ? `intent-to-add entry in the index: ${res.intentToAdd}` : null), attributesFiles };
}

/** Calls `onEntry` with each entry's name (bytes[start, end), valid only during the call); null for what it does not read. */
function walkIndex(
  file: string,
  onCount: (count: number) => void,
  onEntry: (i: number, bytes: Buffer, start: number, end: number, flags: number, extended: number) => void,
): { unsupported: string | null; intentToAdd: string | null; sparse: boolean } | null {
  let buf: Buffer;
  try {
    buf = fs.readFileSync(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { unsupported: null, intentToAdd: null, sparse: false };
    return null;
  }
  if (buf.length < 12 || buf.toString('latin1', 0, 4) !== 'DIRC') return null;
  const version = buf.readUInt32BE(4);
  if (version < 2 || version > 4) return null;
  const count = buf.readUInt32BE(8);
  onCount(count);
  const hashLen = 20; // sha1 repositories only (callers check the object format)
  let unsupported: string | null = null;
  let intentToAdd: string | null = null;
  let at = 12;
  // Version 4 names are rebuilt in one growing buffer.
  let prev = Buffer.alloc(version === 4 ? 4096 : 0);
  let prevLen = 0;
  for (let i = 0; i < count; i++) {
    if (at + 62 > buf.length) return null;
    const mode = buf.readUInt32BE(at + 24);
    const flags = buf.readUInt16BE(at + 40 + hashLen);
    let pathAt = at + 42 + hashLen;
    let extended = 0;
    if (flags & 0x4000) {
      if (version < 3) return null;
      extended = buf.readUInt16BE(pathAt);
      pathAt += 2;
    }
    let nameBuf: Buffer;
    let nameStart: number;
    let nameEnd: number;
    if (version === 4) {
      // Prefix compression: a varint of bytes to drop from the previous path, then the rest.
      let c = buf[pathAt++] as number;
      let strip = c & 127;
      while (c & 128) {
        c = buf[pathAt++] as number;
        strip = ((strip + 1) << 7) | (c & 127);
      }
      let nul = pathAt;
      while (nul < buf.length && buf[nul] !== 0) nul++; // a loop, not indexOf: no native call per entry
      if (nul >= buf.length || strip > prevLen) return null;
      const keep = prevLen - strip;
      const len = keep + (nul - pathAt);
      if (len > prev.length) {
        const grown = Buffer.alloc(Math.max(len, prev.length * 2));
        prev.copy(grown, 0, 0, keep);
        prev = grown;
      }
      for (let k = pathAt, d = keep; k < nul; k++, d++) prev[d] = buf[k] as number;
      prevLen = len;
      nameBuf = prev;
      nameStart = 0;
      nameEnd = len;
      at = nul + 1;
    } else {
      let nul = pathAt;
      while (nul < buf.length && buf[nul] !== 0) nul++;
      if (nul >= buf.length) return null;
      nameBuf = buf;
      nameStart = pathAt;
      nameEnd = nul;
      at = at + ((pathAt - at + (nul - pathAt) + 8) & ~7);
    }
    onEntry(i, nameBuf, nameStart, nameEnd, flags, extended);
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
  while (at + 8 <= buf.length - hashLen) {
    const sig = buf.toString('latin1', at, at + 4);
    const size = buf.readUInt32BE(at + 4);
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
export function readIndexFlags(file: string): IndexFlags | null {
  const out: IndexFlags = { skipWorktree: [], assumeUnchanged: [] };
  const res = walkIndex(
    file,
    () => undefined,
    (_i, bytes, start, end, flags, extended) => {
      if (flags & 0x8000) out.assumeUnchanged.push(Buffer.from(bytes.subarray(start, end)));
      if (extended & 0x4000) out.skipWorktree.push(Buffer.from(bytes.subarray(start, end)));
    },
  );
  return res && !res.sparse ? out : null;
}
