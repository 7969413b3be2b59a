// In-process loose-object writing for sha1 and sha256 repositories: what `git
// hash-object -w` / `mktree` / `commit-tree` would write, without starting a
// git process. Used by the incremental snapshot engine on the per-tool-call
// path; wherever writing in-process would not be exactly what git does
// (shared repositories, fsync settings, unknown extensions), objectStore()
// says null and callers use git.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import type { ObjectFormat, Repo } from './repo.js';
import { lastValue, parseConfigList, type GitConfig } from './config.js';
import { AGENTSNAP_EMAIL, AGENTSNAP_NAME, runGitSync } from './run.js';
import { testPoint } from '../base/test-point.js';

export type ObjectType = 'blob' | 'tree' | 'commit';

export interface ObjectStore {
  /** Writes the object (unless its loose file exists) and returns its id. */
  write(type: ObjectType, body: Buffer): string;
  /** The id the object would have, without writing it. */
  hash(type: ObjectType, body: Buffer): string;
  readonly objectsDir: string;
  /** The repository's: the hash of an object and the width of the ids in a tree's body. */
  readonly objectFormat: ObjectFormat;
}

export function objectHeader(type: ObjectType, length: number): Buffer {
  return Buffer.from(`${type} ${length}\0`, 'latin1');
}

export function hashObject(type: ObjectType, body: Buffer, format: ObjectFormat): string {
  return crypto.createHash(format).update(objectHeader(type, body.length)).update(body).digest('hex');
}

/** Bytes of an object id in a tree's body: 20 in sha1, 32 in sha256. */
export function oidBytes(format: ObjectFormat): number {
  return format === 'sha256' ? 32 : 20;
}

function readConfigSync(repo: Repo): GitConfig {
  const res = runGitSync(['config', '-z', '--list'], { cwd: repo.worktree, env: { ...repo.env, GIT_DIR: repo.gitDir }, okCodes: [1] });
  return parseConfigList(res.stdout);
}

/** Extensions that do not change how loose objects are written. */
const HARMLESS_EXTENSIONS = new Set([
  'extensions.worktreeconfig',
  'extensions.objectformat',
  'extensions.preciousobjects',
  'extensions.partialclone',
  'extensions.noop',
]);

/**
 * An in-process writer for the repository's loose objects, or null when git
 * would do something this writer does not: another object format, shared
 * permissions, fsync of object files, an unknown repository extension.
 * `cfg` is the effective git config when the caller has it (else read once).
 */
export function objectStore(repo: Repo, cfg?: GitConfig): ObjectStore | null {
  const config = cfg ?? readConfigSync(repo);
  if (lastValue(config, 'core.sharedrepository') !== undefined) return null;
  if (lastValue(config, 'core.fsyncobjectfiles') !== undefined || lastValue(config, 'core.fsync') !== undefined) return null;
  for (const key of config.keys()) if (key.startsWith('extensions.') && !HARMLESS_EXTENSIONS.has(key)) return null;
  const objectsDir = path.join(repo.commonDir, 'objects');
  if (!fs.existsSync(objectsDir)) return null;
  // git's default for loose objects is Z_BEST_SPEED (core.looseCompression, else core.compression).
  const levelText = lastValue(config, 'core.loosecompression') ?? lastValue(config, 'core.compression');
  let level = levelText === undefined ? 1 : Number(levelText);
  if (!Number.isInteger(level) || level < -1 || level > 9) level = 1;
  return new LooseObjectStore(objectsDir, level, repo.objectFormat, repo);
}

class LooseObjectStore implements ObjectStore {
  constructor(
    readonly objectsDir: string,
    private readonly level: number,
    readonly objectFormat: ObjectFormat,
    private readonly repo: Pick<Repo, 'callerEnv' | 'worktree'>,
  ) {}

  hash(type: ObjectType, body: Buffer): string {
    return hashObject(type, body, this.objectFormat);
  }

  write(type: ObjectType, body: Buffer): string {
    const header = objectHeader(type, body.length);
    const oid = crypto.createHash(this.objectFormat).update(header).update(body).digest('hex');
    const dir = path.join(this.objectsDir, oid.slice(0, 2));
    const file = path.join(dir, oid.slice(2));
    if (fs.existsSync(file)) return oid;
    const data = zlib.deflateSync(Buffer.concat([header, body]), { level: this.level });
    // git's own temp name (tmp_obj_*), so anything that cleans up after git cleans up after this too.
    const tmp = path.join(dir, `tmp_obj_${process.pid}_${crypto.randomBytes(4).toString('hex')}`);
    try {
      const fd = this.createTemp(dir, tmp);
      try {
        // A short write (the disk filling up) is not an error by itself: write the rest, which then fails.
        for (let off = 0; off < data.length; ) off += fs.writeSync(fd, data, off, data.length - off);
      } finally {
        fs.closeSync(fd);
      }
      fs.renameSync(tmp, file);
    } catch (e) {
      try {
        fs.unlinkSync(tmp);
      } catch {
        /* never created, or already renamed */
      }
      throw e;
    }
    return oid;
  }

  /**
   * Creates the temp file in the fan-out directory, making that again when it is gone: another process's
   * `git prune` or `prune-packed` removes an empty objects/xx at any moment (git's create_tmpfile does the same).
   */
  private createTemp(dir: string, tmp: string): number {
    for (let attempt = 0; ; attempt++) {
      fs.mkdirSync(dir, { recursive: true });
      if (attempt === 0) testPoint('object-write.before-open', this.repo.callerEnv, this.repo.worktree);
      try {
        return fs.openSync(tmp, 'wx', 0o444);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= 3) throw e;
      }
    }
  }
}

export interface TreeEntry {
  mode: string;
  name: string;
  oid: string;
}

const ASCII = /^[\x00-\x7f]*$/;

/** git's tree order: byte order of the UTF-8 names, a directory compared as if its name ended with '/'. */
function compareKeys(a: string, b: string): number {
  // For ASCII, JavaScript's UTF-16 order is the byte order (and much cheaper than Buffers).
  if (ASCII.test(a) && ASCII.test(b)) return a < b ? -1 : a > b ? 1 : 0;
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** A tree object's body. Modes are written the way git writes them (40000, not 040000). */
export function encodeTree(entries: TreeEntry[]): Buffer {
  const sorted = entries
    .map((e) => ({ e, key: e.mode === '40000' || e.mode === '040000' ? `${e.name}/` : e.name }))
    .sort((a, b) => compareKeys(a.key, b.key));
  const parts: Buffer[] = [];
  for (const { e } of sorted) {
    const mode = e.mode === '040000' ? '40000' : e.mode;
    parts.push(Buffer.from(`${mode} `, 'latin1'), Buffer.from(e.name, 'utf8'), Buffer.from([0]), Buffer.from(e.oid, 'hex'));
  }
  return Buffer.concat(parts);
}

/** Entries of a tree object's body (modes as git stores them: 40000 for trees) in a repository of `format`. */
export function parseTree(body: Buffer, format: ObjectFormat): TreeEntry[] {
  const out: TreeEntry[] = [];
  const width = oidBytes(format);
  let i = 0;
  while (i < body.length) {
    const sp = body.indexOf(0x20, i);
    const nul = body.indexOf(0, sp);
    if (sp < 0 || nul < 0 || nul + 1 + width > body.length) throw new Error('corrupt tree object');
    out.push({
      mode: body.toString('latin1', i, sp),
      name: body.toString('utf8', sp + 1, nul),
      oid: body.toString('hex', nul + 1, nul + 1 + width),
    });
    i = nul + 1 + width;
  }
  return out;
}

export interface Signature {
  /** Seconds since the epoch. */
  time: number;
  /** Offset as git writes it: +0000, -0130. */
  tz: string;
  name?: string;
  email?: string;
}

export interface CommitFields {
  tree: string;
  parents: string[];
  author: Signature;
  committer: Signature;
  message: string;
}

function signatureLine(kind: 'author' | 'committer', s: Signature): string {
  return `${kind} ${s.name ?? AGENTSNAP_NAME} <${s.email ?? AGENTSNAP_EMAIL}> ${s.time} ${s.tz}\n`;
}

/** A commit object's body as `git commit-tree` writes it with agentsnap's identity (never signed). */
export function encodeCommit(c: CommitFields): Buffer {
  let head = `tree ${c.tree}\n`;
  for (const p of c.parents) head += `parent ${p}\n`;
  head += signatureLine('author', c.author) + signatureLine('committer', c.committer) + '\n';
  return Buffer.concat([Buffer.from(head, 'utf8'), Buffer.from(c.message, 'utf8')]);
}
