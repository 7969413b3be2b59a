// Which planned deletions are files git ignores under the rules in force at
// the target tree. A snapshot leaves ignored files out, so a path can be
// absent from the target only because it was ignored there (the agent
// dropped the rule that ignored it, or added one): deleting it would destroy
// a file the user never gave to agentsnap. Such deletions are taken out of the
// plan and the files kept (issue 13: ignored files are never touched).
//
// git's own matcher answers, with the target's rules: the target tree's
// .gitignore files on the way to each path are written at their paths into a
// temp dir under the state dir, and one `git check-ignore` runs with that dir
// as its worktree. info/exclude and core.excludesFile come from the real
// repository (GIT_DIR). The user's index is *not* read (`--no-index`): it is
// the index as it is now, not at the target, and an agent's `git add -f` of an
// ignored log would make that log count as tracked and be deleted. A snapshot
// records tracked files whatever the rules, so a path absent from the target
// that its rules ignore was either left out there or not on disk then; which
// one cannot be told, and keeping it (reported) is the safe side: a redo of a
// step that deleted a force-added file keeps it instead of deleting it.
// Negations, directory rules (`build/`) and nested .gitignore files are git's
// usual semantics.
//
// Rules outside the tree (an agent editing info/exclude) and anything else a
// snapshot leaves out are not in the target tree. For those, the file itself
// tells: an untracked file whose inode changed last (ctime: any write, chmod,
// rename or link sets it, and no program can set it back) more than
// CTIME_MARGIN_MS before the target snapshot was taken was on disk, as it is,
// when that snapshot scanned the worktree, and is absent from it: it was left
// out, so it is kept. Renaming a directory keeps its files' ctime: a moved
// directory's files are still deleted when the plan writes their very bytes at
// another path (the move undone); one moved in from outside the worktree is
// kept (reported, never deleted: the safe way).
//
// Cost: nothing without deletions; otherwise two git processes (`cat-file
// --batch` for the .gitignore blobs and the target snapshot's commit,
// `check-ignore`) and an lstat per deletion.
import * as fs from '../base/fs-bytes.js'; // names that are not UTF-8 by their bytes (see fs-bytes.ts)
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { PlannedChange } from '../session/journal.js';
import type { Repo } from '../git/repo.js';
import { errors } from '../base/errors.js';
import { pathsInput, runGit, splitNul } from '../git/run.js';
import { SNAPSHOT_GIT_CONFIG } from '../git/status-args.js';
import { caseSensitiveFs, rmQuiet, unsafePath } from '../base/fsutil.js';
import { stateLayout } from '../base/state-dir.js';
import { environmentMatcher } from '../settings/settings.js';

const GITLINK = '160000';

export const IGNORED_AT_TARGET_REASON = 'ignored at the target: kept (ignored files are never deleted)';
/** Honest about what ctime proves: the inode is older than the snapshot (a directory moved in from outside keeps it too). */
export const LEFT_OUT_AT_TARGET_REASON = 'unchanged since before the target snapshot, which does not have it (left out there?): kept';

/**
 * How much older than the target snapshot's commit time (whole seconds) a
 * file's ctime must be to prove it was there at the scan: covers the commit
 * time's truncation, the kernel's coarse file clock and 2-second file-system
 * timestamps. A file created after the snapshot is never that old.
 */
export const CTIME_MARGIN_MS = 3000;

/** The directories (worktree-relative, '' for the top) whose .gitignore applies to rel. */
function ancestors(rel: string): string[] {
  const parts = rel.split('/').slice(0, -1);
  const out = [''];
  for (let i = 1; i <= parts.length; i++) out.push(parts.slice(0, i).join('/'));
  return out;
}

/**
 * The target tree's .gitignore blobs in `dirs` (directories without one are
 * absent) and the committer time (ms) of `snapshot`, in one `cat-file --batch`.
 */
async function readTargetRules(
  repo: Repo,
  tree: string,
  dirs: string[],
  snapshot: string | null,
): Promise<{ rules: Map<string, Buffer>; scannedBefore: number | null; environment: string[] }> {
  const out = new Map<string, Buffer>();
  const names = dirs.map((d) => `${tree}:${d === '' ? '' : `${d}/`}.gitignore`);
  const res = await repo.git(['cat-file', '--batch'], { input: pathsInput([...names, ...(snapshot ? [snapshot] : [])], '\n') });
  const buf = res.stdout;
  let pos = 0;
  let scannedBefore: number | null = null;
  const environment: string[] = [];
  for (let i = 0; i < dirs.length; i++) {
    const nl = buf.indexOf(0x0a, pos);
    if (nl < 0) throw errors.internal(`git cat-file --batch ended early reading ${names[i] ?? ''}.`);
    const header = buf.subarray(pos, nl).toString('utf8');
    pos = nl + 1;
    // Every name ends in ".gitignore", so a header ending in " missing" is git's "not there".
    if (header.endsWith(' missing')) continue;
    const m = /^[0-9a-f]+ (\w+) (\d+)$/.exec(header);
    if (!m) throw errors.internal(`unexpected git cat-file output for ${names[i] ?? ''}: ${JSON.stringify(header)}`);
    const size = Number(m[2]);
    // A directory named .gitignore is no rule file (git skips it too).
    if (m[1] === 'blob') out.set(dirs[i]!, buf.subarray(pos, pos + size));
    pos += size + 1;
  }
  if (snapshot) {
    const nl = buf.indexOf(0x0a, pos);
    const m = /^[0-9a-f]+ commit (\d+)$/.exec(buf.subarray(pos, nl < 0 ? buf.length : nl).toString('utf8'));
    if (m) {
      const body = buf.subarray(nl + 1, nl + 1 + Number(m[1])).toString('utf8');
      const t = /^committer .* (\d+) [+-]\d{4}$/m.exec(body);
      if (t) scannedBefore = Number(t[1]) * 1000;
      for (const e of body.matchAll(/^Agentsnap-Environment: (.+)$/gm)) environment.push(e[1]!);
    }
  }
  return { rules: out, scannedBefore, environment };
}

/** The target of a restore: its whole tree, and the snapshot commit whose scan its absent paths come from. */
export interface RestoreTarget {
  tree: string;
  /** Null when no scan of this worktree made the target (apply's merge, a new worktree's fill). */
  snapshot?: string | null;
}

/** The planned deletions that are to be kept, with why (see the top of the file). */
export async function keptAtTarget(repo: Repo, plan: PlannedChange[], target: RestoreTarget): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const deletions = plan.filter((c) => c.to === null && c.from !== null && c.from.mode !== GITLINK);
  if (deletions.length === 0) return out;
  const ask: PlannedChange[] = [];
  const dirs = new Set<string>();
  const foldsCase = !caseSensitiveFs(repo);
  for (const c of deletions) {
    // A crafted path (`..`, `.git`) is never written anyway (and git would refuse the question).
    if (unsafePath(c.path, foldsCase)) continue;
    // cat-file cannot be asked about a directory whose name holds a newline: kept, the safe way.
    if (path.posix.dirname(c.path).includes('\n')) out.set(c.path, IGNORED_AT_TARGET_REASON);
    else {
      ask.push(c);
      for (const d of ancestors(c.path)) dirs.add(d);
    }
  }
  if (ask.length === 0) return out;
  let scannedBefore: number | null;
  let managed: (rel: string) => boolean;
  try {
    const read = await readTargetRules(repo, target.tree, [...dirs], target.snapshot ?? null);
    scannedBefore = read.scannedBefore;
    // Below an environment directory the target snapshot holds whole (agentsnap.environment), a path it does not
    // have was not there: deleted like any other, whatever the rules say.
    managed = environmentMatcher(read.environment);
    for (const p of await checkIgnore(
      repo,
      read.rules,
      ask.filter((c) => !managed(c.path)).map((c) => c.path),
    ))
      out.set(p, IGNORED_AT_TARGET_REASON);
  } catch (e) {
    // When in doubt, keep: no deletion that might be of an ignored file goes ahead unchecked.
    const why = e instanceof Error ? e.message : String(e);
    for (const c of ask) out.set(c.path, `the ignore rules at the target could not be checked (${why}): kept`);
    return out;
  }
  if (scannedBefore !== null) {
    const written = new Set(plan.flatMap((c) => (c.to ? [c.to.oid] : [])));
    for (const c of ask) {
      if (out.has(c.path) || written.has(c.from!.oid) || managed(c.path)) continue;
      const ctime = ctimeOf(repo.worktree, c.path);
      if (ctime !== null && ctime < scannedBefore - CTIME_MARGIN_MS) out.set(c.path, LEFT_OUT_AT_TARGET_REASON);
    }
  }
  return out;
}

/** ctime (ms) of a worktree path, not following symlinks on the way; null when it is not there as a file or symlink. */
function ctimeOf(worktree: string, rel: string): number | null {
  let dir = worktree;
  const parts = rel.split('/');
  try {
    for (const part of parts.slice(0, -1)) {
      dir = path.join(dir, part);
      if (!fs.lstatSync(dir).isDirectory()) return null;
    }
    const st = fs.lstatSync(path.join(worktree, rel));
    return st.isFile() || st.isSymbolicLink() ? st.ctimeMs : null;
  } catch {
    return null; // not there (or a file in the way of its directory): nothing ignored to keep
  }
}

/** Of `paths`, those git ignores with `rules` (.gitignore contents by directory) in place of the worktree's. */
async function checkIgnore(repo: Repo, rules: Map<string, Buffer>, paths: string[]): Promise<string[]> {
  const tmpRoot = stateLayout.tmpDir(repo);
  fs.mkdirSync(tmpRoot, { recursive: true, mode: 0o700 });
  // gc removes what a killed process leaves in tmp/.
  const tmp = path.join(tmpRoot, `ignore-${process.pid}-${randomBytes(4).toString('hex')}`);
  fs.mkdirSync(tmp, { mode: 0o700 });
  try {
    for (const [dir, content] of rules) {
      fs.mkdirSync(path.join(tmp, dir), { recursive: true });
      fs.writeFileSync(path.join(tmp, dir, '.gitignore'), content, { mode: 0o600 });
    }
    // --no-index: the rules alone answer, whatever the user's index says now (see the top of the file).
    // check-ignore takes pathspecs without magic (no GIT_LITERAL_PATHSPECS): "./" keeps a name
    // starting with ":" a plain path; git answers with the name as asked.
    const res = await runGit([...SNAPSHOT_GIT_CONFIG, 'check-ignore', '-z', '--no-index', '--stdin'], {
      cwd: tmp,
      env: repo.env,
      extraEnv: { GIT_DIR: repo.gitDir, GIT_WORK_TREE: tmp },
      input: pathsInput(paths, '\0', './'),
      okCodes: [1],
    });
    return splitNul(res.stdout).map((p) => (p.startsWith('./') ? p.slice(2) : p));
  } finally {
    rmQuiet(tmp);
  }
}
