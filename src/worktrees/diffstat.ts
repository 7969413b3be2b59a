// What apply and promote bring, file by file: lines added and deleted between
// two trees (git's --numstat), for the diffstat the CLI prints.
import type { Repo } from '../git/repo.js';
import { splitNul } from '../git/run.js';

export interface FileStat {
  path: string;
  /** Lines added and deleted; null for a binary file (or a submodule). */
  added: number | null;
  deleted: number | null;
}

/** Per-file line counts from `from` to `to` (one diff-tree); `only` keeps those paths. */
export async function diffStat(repo: Repo, from: string, to: string, only?: Iterable<string>): Promise<FileStat[]> {
  if (from === to) return [];
  const res = await repo.git(['diff-tree', '--ignore-submodules=none', '-r', '-z', '--no-renames', '--numstat', from, to]);
  const keep = only ? new Set(only) : null;
  const out: FileStat[] = [];
  // -z without renames: "<added>\t<deleted>\t<path>" NUL-terminated, "-" for binary.
  for (const rec of splitNul(res.stdout)) {
    const m = /^(\d+|-)\t(\d+|-)\t(.*)$/s.exec(rec);
    if (!m) continue;
    const p = m[3] ?? '';
    if (keep && !keep.has(p)) continue;
    out.push({ path: p, added: m[1] === '-' ? null : Number(m[1]), deleted: m[2] === '-' ? null : Number(m[2]) });
  }
  return out;
}

/** The empty tree of this repository's object format (written: a commit or merge may need it on disk). */
export async function emptyTree(repo: Repo): Promise<string> {
  return (await repo.git(['mktree'], { input: '' })).stdout.toString('utf8').trim();
}
