// node:fs for paths that may hold names that are not UTF-8. Such a name comes
// from git's output as a string with its stray bytes as lone surrogates
// (splitNul, src/git/run.ts); Node would write U+FFFD for them and name
// another file. These wrappers hand fs the exact bytes instead (a string path
// with no such byte is passed as it is: no cost on ordinary names), and
// readdirSync names a directory's entries the same way. `import * as fs from
// './fs-bytes.js'` in place of node:fs: everything else is node:fs itself.
import realFs from 'node:fs';
import { decodeName, fsPath } from './names.js';

export * from 'node:fs';

type P = realFs.PathLike;
const b = (p: P): P => (typeof p === 'string' ? fsPath(p) : p);

export function lstatSync(p: P): realFs.Stats;
export function lstatSync(p: P, opts: realFs.StatSyncOptions & { bigint: true }): realFs.BigIntStats;
export function lstatSync(p: P, opts?: realFs.StatSyncOptions): realFs.Stats | realFs.BigIntStats | undefined;
export function lstatSync(p: P, opts?: realFs.StatSyncOptions): realFs.Stats | realFs.BigIntStats | undefined {
  return opts === undefined ? realFs.lstatSync(b(p)) : realFs.lstatSync(b(p), opts);
}

export function statSync(p: P): realFs.Stats;
export function statSync(p: P, opts: realFs.StatSyncOptions & { bigint: true }): realFs.BigIntStats;
export function statSync(p: P, opts?: realFs.StatSyncOptions): realFs.Stats | realFs.BigIntStats | undefined;
export function statSync(p: P, opts?: realFs.StatSyncOptions): realFs.Stats | realFs.BigIntStats | undefined {
  return opts === undefined ? realFs.statSync(b(p)) : realFs.statSync(b(p), opts);
}

export const renameSync = (from: P, to: P): void => realFs.renameSync(b(from), b(to));
export const linkSync = (existing: P, created: P): void => realFs.linkSync(b(existing), b(created));
export const unlinkSync = (p: P): void => realFs.unlinkSync(b(p));
export const rmdirSync = (p: P): void => realFs.rmdirSync(b(p));
export const symlinkSync = (target: P, p: P, type?: realFs.symlink.Type | null): void => realFs.symlinkSync(target, b(p), type);
export const openSync = (p: P, flags: realFs.OpenMode = 'r', mode?: realFs.Mode | null): number => realFs.openSync(b(p), flags, mode);
export const existsSync = (p: P): boolean => realFs.existsSync(b(p));

export function mkdirSync(p: P, opts?: realFs.Mode | realFs.MakeDirectoryOptions | null): string | undefined {
  return realFs.mkdirSync(b(p), opts);
}

export function readlinkSync(p: P): string;
export function readlinkSync(p: P, opts: { encoding: 'buffer' }): Buffer;
export function readlinkSync(p: P, opts?: { encoding: 'buffer' }): string | Buffer {
  return opts ? realFs.readlinkSync(b(p), opts) : realFs.readlinkSync(b(p));
}

export function accessSync(p: P, mode?: number): void {
  realFs.accessSync(b(p), mode);
}

export function readFileSync(p: P | number): Buffer {
  return realFs.readFileSync(typeof p === 'number' ? p : b(p));
}

export function writeFileSync(p: P | number, data: string | NodeJS.ArrayBufferView, opts?: realFs.WriteFileOptions): void {
  realFs.writeFileSync(typeof p === 'number' ? p : b(p), data, opts);
}

/** A directory's entry names, each as splitNul would give it. */
export function readdirSync(p: P): string[] {
  return realFs.readdirSync(b(p), { encoding: 'buffer' }).map(decodeName);
}
