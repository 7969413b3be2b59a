// Writes the difference between two trees into a worktree, byte for byte:
// blobs come from `git cat-file` (no smudge filters, no eol conversion, unlike
// checkout-index), files are replaced by rename (never written through an
// existing symlink), and nothing is written below a symlink or outside the
// worktree. Everything that could make the write fail half-way is checked
// before the first change. The index is never touched.
//
// The undo engine (restore) needs the same primitives; the two are meant to be
// unified into one module.
import fs from 'node:fs';
import path from 'node:path';
import { errors } from './errors.js';
import type { Repo } from './repo.js';
import { splitNul } from './git/run.js';

export interface TreeChange {
  path: string;
  /** '000000' when the path does not exist on that side. */
  oldMode: string;
  newMode: string;
  oldOid: string;
  newOid: string;
}

const ABSENT = '000000';

/** Every path that differs between two trees (recursive, no rename detection). */
export async function treeDelta(repo: Repo, from: string, to: string): Promise<TreeChange[]> {
  if (from === to) return [];
  const res = await repo.git(['diff-tree', '-r', '-z', '--no-renames', '--raw', from, to]);
  const tokens = splitNul(res.stdout);
  const out: TreeChange[] = [];
  for (let i = 0; i + 1 < tokens.length; i += 2) {
    const m = /^:(\d{6}) (\d{6}) ([0-9a-f]+) ([0-9a-f]+) [A-Z]\d*$/.exec(tokens[i] ?? '');
    if (!m) continue;
    out.push({ path: tokens[i + 1] ?? '', oldMode: m[1] ?? ABSENT, newMode: m[2] ?? ABSENT, oldOid: m[3] ?? '', newOid: m[4] ?? '' });
  }
  return out;
}

/** Reads blobs through one `git cat-file --batch`: oid -> exact bytes. */
export async function readBlobs(repo: Repo, oids: string[]): Promise<Map<string, Buffer>> {
  const unique = [...new Set(oids)];
  const out = new Map<string, Buffer>();
  if (unique.length === 0) return out;
  const res = await repo.git(['cat-file', '--batch'], { input: unique.join('\n') + '\n' });
  const buf = res.stdout;
  let pos = 0;
  for (const oid of unique) {
    const nl = buf.indexOf(0x0a, pos);
    if (nl === -1) break;
    const header = buf.subarray(pos, nl).toString('utf8').split(' ');
    if (header[1] === 'missing' || header.length < 3) {
      throw errors.internal(`object ${oid} is missing from the repository.`, { data: { oid } });
    }
    const size = Number(header[2]);
    out.set(oid, buf.subarray(nl + 1, nl + 1 + size));
    pos = nl + 1 + size + 1;
  }
  return out;
}

function lstatOrNull(p: string): fs.Stats | null {
  try {
    return fs.lstatSync(p);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT' || (e as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
    throw e;
  }
}

function isFileMode(mode: string): boolean {
  return mode === '100644' || mode === '100755' || mode === '120000';
}

export interface MaterializeResult {
  written: string[];
  /** Of `written`, the paths that did not exist before. */
  created: string[];
  deleted: string[];
  /** Submodule entries (gitlinks): their content is another repository's and is not written. */
  skipped: string[];
}

/** Files below `dir` (relative to the worktree), not following symlinks. */
function filesBelow(worktree: string, rel: string): string[] {
  const out: string[] = [];
  const walk = (r: string) => {
    for (const name of fs.readdirSync(path.join(worktree, r))) {
      const child = `${r}/${name}`;
      const st = fs.lstatSync(path.join(worktree, child));
      if (st.isDirectory()) walk(child);
      else out.push(child);
    }
  };
  walk(rel);
  return out;
}

/**
 * Makes the worktree go from tree `from` to tree `to` for the paths in
 * `changes`. Throws Refused, before changing anything, when a path would have
 * to be written below a symlink or a file that stays, or over a directory
 * holding files that are not part of the change.
 */
export async function materialize(repo: Repo, changes: TreeChange[]): Promise<MaterializeResult> {
  const root = repo.worktree;
  const result: MaterializeResult = { written: [], created: [], deleted: [], skipped: [] };
  const removals = new Set<string>();
  const writes: TreeChange[] = [];
  for (const c of changes) {
    if (c.path.split('/').some((part) => part === '' || part === '.' || part === '..' || part === '.git')) {
      throw errors.refused(`refusing to write ${JSON.stringify(c.path)}: not a safe path inside the worktree.`, { data: { path: c.path } });
    }
    if (c.oldMode !== ABSENT && isFileMode(c.oldMode)) removals.add(c.path);
    if (c.newMode === ABSENT) continue;
    if (!isFileMode(c.newMode)) {
      result.skipped.push(c.path);
      continue;
    }
    writes.push(c);
  }

  // Check everything first: nothing is half applied.
  const problems: string[] = [];
  for (const c of writes) {
    const parts = c.path.split('/');
    for (let i = 1; i < parts.length; i++) {
      const anc = parts.slice(0, i).join('/');
      const st = lstatOrNull(path.join(root, anc));
      if (!st) break; // created below
      if (st.isDirectory()) continue;
      if (!removals.has(anc)) problems.push(`${c.path} (${anc} is a ${st.isSymbolicLink() ? 'symlink' : 'file'})`);
      break;
    }
    const st = lstatOrNull(path.join(root, c.path));
    if (st?.isDirectory()) {
      const stays = filesBelow(root, c.path).filter((f) => !removals.has(f));
      if (stays.length > 0) problems.push(`${c.path} (a directory with ${stays.length} other file(s) is in the way)`);
    }
  }
  if (problems.length > 0) {
    throw errors.refused(`cannot write ${problems.length} path(s) safely: ${problems.slice(0, 5).join(', ')}${problems.length > 5 ? ', …' : ''}.`, {
      hint: 'Move the paths in the way aside and try again. Nothing was changed.',
      data: { problems },
    });
  }
  const blobs = await readBlobs(repo, writes.map((c) => c.newOid));

  // Removals first (deepest first), so a file can become a directory and back.
  // Paths that are rewritten are replaced by rename below, never left missing in between.
  const rewritten = new Set(writes.map((w) => w.path));
  const sortedRemovals = [...removals].filter((p) => !rewritten.has(p)).sort((a, b) => b.split('/').length - a.split('/').length);
  for (const rel of sortedRemovals) {
    const abs = path.join(root, rel);
    const st = lstatOrNull(abs);
    if (st && !st.isDirectory()) {
      fs.unlinkSync(abs);
      result.deleted.push(rel);
    }
    pruneEmptyDirs(root, path.dirname(rel));
  }
  for (const c of writes) {
    const abs = path.join(root, c.path);
    fs.mkdirSync(path.dirname(abs), { recursive: true });
    const existing = lstatOrNull(abs);
    if (existing?.isDirectory()) fs.rmSync(abs, { recursive: true });
    if (!existing || existing.isDirectory()) result.created.push(c.path);
    const data = blobs.get(c.newOid);
    if (!data) throw errors.internal(`object ${c.newOid} for ${c.path} could not be read.`);
    const tmp = path.join(path.dirname(abs), `.${path.basename(abs)}.agentsnap-tmp-${process.pid}`);
    try {
      if (c.newMode === '120000') fs.symlinkSync(data.toString('utf8'), tmp);
      else {
        // Mode at creation goes through the umask, the way git checks files out.
        fs.writeFileSync(tmp, data, { mode: c.newMode === '100755' ? 0o777 : 0o666, flag: 'wx' });
      }
      fs.renameSync(tmp, abs);
    } catch (e) {
      try {
        fs.unlinkSync(tmp);
      } catch {
        /* not created */
      }
      throw e;
    }
    result.written.push(c.path);
  }
  return result;
}

/** Removes empty directories from `relDir` up to (not including) the worktree root. */
export function pruneEmptyDirs(root: string, relDir: string): void {
  let rel = relDir;
  while (rel && rel !== '.' && rel !== '/') {
    try {
      fs.rmdirSync(path.join(root, rel));
    } catch {
      return; // not empty, or gone
    }
    rel = path.dirname(rel);
  }
}
