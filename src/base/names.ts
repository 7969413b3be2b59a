// Names that are not UTF-8 by their bytes, as git and the filesystem give
// them: one string form for the whole program (each stray byte a lone
// surrogate, Python's surrogateescape) and the ways back to the exact bytes
// for git's stdin and for node:fs. Knows neither git nor agentsnap.
import { isUtf8 } from 'node:buffer';

/**
 * Splits NUL-terminated git output into strings. A name that is not UTF-8 keeps
 * its bytes: each byte that is not part of a UTF-8 sequence becomes a lone
 * surrogate U+DC80..U+DCFF (Python's "surrogateescape"), so two such names stay
 * distinct, `hasRawBytes` tells them, and `pathBytes` gives git (or fs, through
 * `fsPath`) the exact name back. Plain JS string handling (JSON included) keeps them.
 */
export function splitNul(buf: Buffer): string[] {
  if (buf.length === 0) return [];
  if (isUtf8(buf)) {
    const parts = buf.toString('utf8').split('\0');
    if (parts[parts.length - 1] === '') parts.pop();
    return parts;
  }
  const parts: string[] = [];
  let start = 0;
  while (start < buf.length) {
    let end = buf.indexOf(0, start);
    if (end < 0) end = buf.length;
    parts.push(decodeName(buf.subarray(start, end)));
    start = end + 1;
  }
  return parts;
}

/** A name's bytes as a string: UTF-8, with every other byte as a lone surrogate (see splitNul). */
export function decodeName(bytes: Buffer): string {
  if (isUtf8(bytes)) return bytes.toString('utf8');
  let out = '';
  let i = 0;
  while (i < bytes.length) {
    const n = utf8SequenceLength(bytes, i);
    if (n > 0) {
      out += bytes.toString('utf8', i, i + n);
      i += n;
    } else {
      out += String.fromCharCode(0xdc00 + (bytes[i] ?? 0));
      i += 1;
    }
  }
  return out;
}

/** The length of the well-formed UTF-8 sequence at bytes[i], or 0. */
function utf8SequenceLength(bytes: Buffer, i: number): number {
  const b = bytes[i] ?? 0;
  const n = b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
  if (n === 0 || i + n > bytes.length) return 0;
  return isUtf8(bytes.subarray(i, i + n)) ? n : 0;
}

/** A lone surrogate U+DC80..U+DCFF: a byte of a name that is not UTF-8 (splitNul). */
const RAW_BYTE = /(?<![\uD800-\uDBFF])[\uDC80-\uDCFF]/;

/** Cheap first test (instant on V8's one-byte strings, i.e. every Latin-1/ASCII name); RAW_BYTE's look-behind is slow. */
const MAYBE_RAW = /[\uDC80-\uDCFF]/;

/** Whether a name from splitNul holds bytes that are not UTF-8 (Node's fs and argv would write U+FFFD for them). */
export function hasRawBytes(s: string): boolean {
  return MAYBE_RAW.test(s) && RAW_BYTE.test(s);
}

/** The exact bytes of a name from splitNul. */
export function pathBytes(s: string): Buffer {
  if (!hasRawBytes(s)) return Buffer.from(s, 'utf8');
  const parts: Buffer[] = [];
  for (const ch of s) {
    const c = ch.charCodeAt(0);
    if (ch.length === 1 && c >= 0xdc80 && c <= 0xdcff) parts.push(Buffer.from([c - 0xdc00]));
    else parts.push(Buffer.from(ch, 'utf8'));
  }
  return Buffer.concat(parts);
}

/** A path for Node's fs calls: the string itself, or its exact bytes when it holds bytes that are not UTF-8. */
export function fsPath(s: string): string | Buffer {
  return hasRawBytes(s) ? pathBytes(s) : s;
}

/** Paths as git's stdin wants them (each followed by `sep`, with `prefix`), keeping bytes that are not UTF-8. */
export function pathsInput(paths: string[], sep = '\0', prefix = ''): string | Buffer {
  const joined = prefix === '' ? paths.join(sep) + sep : paths.map((p) => `${prefix}${p}${sep}`).join('');
  if (!hasRawBytes(joined)) return joined;
  const s = Buffer.from(sep, 'utf8');
  const pre = Buffer.from(prefix, 'utf8');
  return Buffer.concat(paths.flatMap((p) => [pre, pathBytes(p), s]));
}
