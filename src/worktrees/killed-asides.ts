// What `apply` merges as "this worktree" when a restore into it was killed
// while a path was set aside (src/restore/restore.ts: "Replacing one path
// without losing a write that raced with the restore"). The snapshot records
// such an aside like any file (its writer is gone), and the path it came from
// is empty (killed between the rename aside and the install, or during a
// deletion). Merged as it is, git's rename detection takes the aside for a
// rename of that path: the session's edit of it landed in the aside and the
// path stayed empty, and apply said it succeeded (a deletion: a rename/delete
// conflict, refused). So the merge sees each aside as what it stands for.
import path from 'node:path';
import type { Repo } from '../git/repo.js';
import { indexEnv, nullOid, writeTree } from '../git/plumbing.js';
import { splitNul } from '../git/run.js';
import { restoreAsideOf } from '../base/fsutil.js';
import { removeTempIndex, tempIndex } from '../snapshot/snapshot-now.js';

/** `tree` with these `update-index --index-info` lines applied (mode 0: removed), through a throwaway index. */
export async function treeWithEntries(repo: Repo, tree: string, lines: string[], purpose: string): Promise<string> {
  const idx = tempIndex(repo, purpose);
  try {
    await repo.git(['read-tree', tree], { extraEnv: indexEnv(idx) });
    await repo.git(['update-index', '-z', '--index-info'], { extraEnv: indexEnv(idx), input: lines.join('\0') + '\0' });
    return await writeTree(repo, idx);
  } finally {
    removeTempIndex(idx);
  }
}

/** The entries (mode, oid) of these paths in tree; a directory is listed as its tree. */
async function entries(repo: Repo, tree: string, paths: string[]): Promise<Map<string, { mode: string; oid: string }>> {
  const out = new Map<string, { mode: string; oid: string }>();
  if (paths.length === 0) return out;
  const res = await repo.git(['ls-tree', '-z', '--full-tree', tree, '--', ...paths]);
  for (const rec of splitNul(res.stdout)) {
    const m = /^(\d{6}) \w+ ([0-9a-f]+)\t(.*)$/s.exec(rec);
    if (m) out.set(m[3]!, { mode: m[1]!, oid: m[2]! });
  }
  return out;
}

/** Names in directory dir of tree (the root: '.'). */
async function namesIn(repo: Repo, tree: string, dir: string): Promise<string[]> {
  const res = await repo.git(['ls-tree', '-z', '--name-only', '--full-tree', dir === '.' ? tree : `${tree}:${dir}`], { okCodes: [128] });
  return res.code === 0 ? splitNul(res.stdout) : [];
}

/**
 * `ours` (this worktree's safety snapshot) as the merge should see it: each
 * restore aside it added since `base` stands for the entry it was set aside
 * from, back at that path where ours has nothing there, or dropped where ours
 * has something (the killed restore had installed the new version). An aside
 * whose path cannot be told (its name was cut at 40 characters and several
 * names fit) stays as it is. Nothing is lost: the safety commit holds ours
 * itself, asides included, and the plan (ours → merge) removes them from disk.
 */
export async function oursWithAsidesBack(repo: Repo, base: string, ours: string, theirs: string): Promise<string> {
  if (base === ours) return ours;
  const added = await repo.git([
    'diff-tree',
    '--ignore-submodules=none',
    '-r',
    '-z',
    '--no-renames',
    '--name-only',
    '--diff-filter=A',
    base,
    ours,
  ]);
  const asides = splitNul(added.stdout).filter((p) => restoreAsideOf(p) !== null);
  if (asides.length === 0) return ours;
  const from = new Map<string, string>();
  for (const aside of asides) {
    const { base: name, cut } = restoreAsideOf(aside)!;
    const dir = path.posix.dirname(aside);
    const at = (n: string) => (dir === '.' ? n : `${dir}/${n}`);
    if (!cut) {
      from.set(aside, at(name));
      continue;
    }
    const fits = new Set<string>();
    for (const tree of [base, ours, theirs]) {
      for (const n of await namesIn(repo, tree, dir)) if (n.startsWith(name) && restoreAsideOf(n) === null) fits.add(n);
    }
    if (fits.size === 1) from.set(aside, at([...fits][0]!));
  }
  if (from.size === 0) return ours;
  const have = await entries(repo, ours, [...from.keys(), ...new Set(from.values())]);
  const lines: string[] = [];
  const putBack = new Set<string>();
  for (const [aside, p] of [...from].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const entry = have.get(aside);
    if (!entry) continue;
    lines.push(`0 ${nullOid(repo)}\t${aside}`);
    if (!have.has(p) && !putBack.has(p)) {
      lines.push(`${entry.mode} ${entry.oid}\t${p}`);
      putBack.add(p);
    }
  }
  return lines.length === 0 ? ours : treeWithEntries(repo, ours, lines, 'apply');
}
