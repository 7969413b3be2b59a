// An apply killed after its safety ref was written and before its journal
// event: the safety commit (written before the first write) names the session,
// the target worktree (its summary line) and the tree the apply was writing
// (`Agentsnap-Apply-Result`). The next apply of that session into that
// worktree completes it and journals one event for both: its undo point is the
// worktree as it was before the killed apply on the paths the killed apply
// wrote (`undoTree`), so `apply --undo` takes the whole apply back, not only
// what the second run wrote (which, after a kill once everything was written,
// is nothing: the apply then reported "nothing to apply" and journaled none).
import type { Repo } from '../git/repo.js';
import { nullOid } from '../git/plumbing.js';
import { splitNul } from '../git/run.js';
import { readJournal } from '../session/journal.js';
import { sessionPaths } from '../session/session.js';
import { restoreAsideOf } from '../base/fsutil.js';
import { treeWithEntries } from './killed-asides.js';

export const APPLY_RESULT_TRAILER = 'Agentsnap-Apply-Result';

export interface InterruptedApply {
  ref: string;
  commit: string;
  /** The target worktree before the killed apply (its safety snapshot's tree). */
  tree: string;
  /** What the killed apply was writing. */
  result: string;
}

/**
 * Safety refs of applies of session id whose safety message starts with
 * `summaryLine` (the same session into the same worktree) that no
 * `session.apply` event names (as its safetyRef, or in `completes`), oldest
 * first. Safety commits without the result trailer (older versions) are not
 * taken: what they were writing is not known.
 */
export async function interruptedApplies(repo: Repo, id: string, summaryLine: string): Promise<InterruptedApply[]> {
  const journaled = new Set<string>();
  for (const e of readJournal(sessionPaths(repo, id).journal).events) {
    if (e.type !== 'session.apply') continue;
    journaled.add(e.safetyRef);
    for (const r of e.completes ?? []) journaled.add(r);
  }
  const res = await repo.git([
    'for-each-ref',
    '--sort=committerdate',
    `--format=%(refname)%00%(objectname)%00%(tree)%00%(subject)%00%(trailers:key=${APPLY_RESULT_TRAILER},valueonly,separator=%x2C)%00`,
    'refs/agentsnap/safety/',
  ]);
  const f = splitNul(res.stdout);
  const out: InterruptedApply[] = [];
  for (let i = 0; i + 4 < f.length; i += 5) {
    const [ref, commit, tree, subject, result] = f.slice(i, i + 5).map((x) => x.replace(/^\n+/, '').trim()) as [
      string,
      string,
      string,
      string,
      string,
    ];
    if (journaled.has(ref) || subject !== summaryLine || !/^[0-9a-f]{40,64}$/.test(result)) continue;
    out.push({ ref, commit, tree, result });
  }
  return out;
}

/** Paths and entries of `git diff-tree -r --raw a b`: the entry in a (null: absent). */
async function rawDiff(repo: Repo, a: string, b: string): Promise<Map<string, { mode: string; oid: string } | null>> {
  const tokens = splitNul((await repo.git(['diff-tree', '--ignore-submodules=none', '-r', '-z', '--no-renames', '--raw', a, b])).stdout);
  const out = new Map<string, { mode: string; oid: string } | null>();
  for (let i = 0; i + 1 < tokens.length; i += 2) {
    const m = /^:(\d{6}) \d{6} ([0-9a-f]+) [0-9a-f]+ \w+$/.exec(tokens[i] ?? '');
    if (m) out.set(tokens[i + 1] ?? '', m[1] === '000000' ? null : { mode: m[1]!, oid: m[2]! });
  }
  return out;
}

/**
 * The worktree before the killed applies, as far as they wrote: `ours` (this
 * worktree now, asides back at their paths) with each path a killed apply
 * changed and that still holds what it wrote put back to what it held before
 * that apply (newest first, so a path two killed runs wrote goes back to
 * before the first). Returns that tree and every path they planned (undoPaths
 * keeps those where it differs from the result).
 */
export async function beforeInterrupted(repo: Repo, ours: string, killed: InterruptedApply[]): Promise<{ tree: string; paths: string[] }> {
  let tree = ours;
  const paths = new Set<string>();
  for (const k of [...killed].reverse()) {
    const planned = await rawDiff(repo, k.tree, k.result);
    if (planned.size === 0) continue;
    const differs = await rawDiff(repo, k.result, tree);
    const removals: string[] = [];
    const additions: string[] = [];
    for (const [p, was] of planned) {
      if (restoreAsideOf(p) !== null) continue;
      // Every path it planned: one it did not write (set aside when it was killed, say) may differ now too.
      paths.add(p);
      if (differs.has(p)) continue;
      if (was === null) removals.push(`0 ${nullOid(repo)}\t${p}`);
      else additions.push(`${was.mode} ${was.oid}\t${p}`);
    }
    if (removals.length + additions.length > 0) tree = await treeWithEntries(repo, tree, [...removals, ...additions], 'apply');
  }
  return { tree, paths: [...paths] };
}

/** Of these paths, those whose undo writes (result holds them) and those it deletes; paths where undoTree and result agree need nothing. */
export async function undoPaths(
  repo: Repo,
  undoTree: string,
  result: string,
  paths: string[],
): Promise<{ written: string[]; deleted: string[] }> {
  const out = { written: [] as string[], deleted: [] as string[] };
  if (paths.length === 0) return out;
  const want = new Set(paths);
  const tokens = splitNul(
    (await repo.git(['diff-tree', '--ignore-submodules=none', '-r', '-z', '--no-renames', '--raw', undoTree, result])).stdout,
  );
  for (let i = 0; i + 1 < tokens.length; i += 2) {
    const p = tokens[i + 1] ?? '';
    if (!want.has(p)) continue;
    (/^:\d{6} 000000 /.test(tokens[i] ?? '') ? out.deleted : out.written).push(p);
  }
  return out;
}
