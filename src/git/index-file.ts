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
  let buf: Buffer;
  try {
    buf = fs.readFileSync(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { paths: [], unsupported: null };
    return null;
  }
  if (buf.length < 12 || buf.toString('latin1', 0, 4) !== 'DIRC') return null;
  const version = buf.readUInt32BE(4);
  if (version < 2 || version > 4) return null;
  const count = buf.readUInt32BE(8);
  const hashLen = 20; // sha1 repositories only (callers check the object format)
  const paths: string[] = new Array(count);
  let unsupported: string | null = null;
  let at = 12;
  let prev: Buffer = Buffer.alloc(0);
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
    let name: Buffer;
    if (version === 4) {
      // Prefix compression: a varint of bytes to drop from the previous path, then the rest.
      let c = buf[pathAt++] as number;
      let strip = c & 127;
      while (c & 128) {
        c = buf[pathAt++] as number;
        strip = ((strip + 1) << 7) | (c & 127);
      }
      const nul = buf.indexOf(0, pathAt);
      if (nul < 0 || strip > prev.length) return null;
      name = Buffer.concat([prev.subarray(0, prev.length - strip), buf.subarray(pathAt, nul)]);
      at = nul + 1;
    } else {
      const nul = buf.indexOf(0, pathAt);
      if (nul < 0) return null;
      name = buf.subarray(pathAt, nul);
      at = at + ((pathAt - at + name.length + 8) & ~7);
    }
    prev = name;
    const p = name.toString('utf8');
    paths[i] = p;
    if (unsupported === null) {
      if ((flags >> 12) & 3) unsupported = `unmerged index entry: ${p}`;
      else if (mode === GITLINK) unsupported = `gitlink (submodule) in the index: ${p}`;
      else if (flags & 0x8000) unsupported = `assume-unchanged entry in the index: ${p}`;
      else if (extended & 0x4000) unsupported = `skip-worktree entry in the index (sparse checkout): ${p}`;
      else if (extended & 0x2000) unsupported = `intent-to-add entry in the index: ${p}`;
    }
  }
  // Extensions: a split index keeps its entries in another file.
  while (at + 8 <= buf.length - hashLen) {
    const sig = buf.toString('latin1', at, at + 4);
    const size = buf.readUInt32BE(at + 4);
    if (sig === 'link') return null;
    if (sig === 'sdir') unsupported ??= 'sparse index';
    at += 8 + size;
  }
  return { paths, unsupported };
}
