// Small git functions, one plumbing call each, over Repo.git().
import fs from 'node:fs';
import path from 'node:path';
import type { Repo } from './repo.js';
import { AGENTSNAP_EMAIL, AGENTSNAP_NAME, fsPath, pathsInput, splitNul } from './run.js';
import { clearStaleGitLock } from '../base/lock.js';
import { errors } from '../base/errors.js';

const EMPTY_TREES = {
  sha1: '4b825dc642cb6eb9a060e54bf8d69288fbee4904',
  sha256: '6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321',
} as const;

/** The id of the empty tree in the repository's object format (git knows it without the object existing). */
export function emptyTree(repo: Pick<Repo, 'objectFormat'>): string {
  return EMPTY_TREES[repo.objectFormat];
}

/** The null object id (update-index's "remove this entry") in the repository's object format: 40 or 64 zeros. */
export function nullOid(repo: Pick<Repo, 'objectFormat'>): string {
  return '0'.repeat(repo.objectFormat === 'sha256' ? 64 : 40);
}

export { SNAPSHOT_GIT_CONFIG } from './status-args.js';
import { SNAPSHOT_GIT_CONFIG } from './status-args.js';
import type { ChangedPath, CommitSpec, RefUpdate } from './types.js';
import { stateLayout } from '../base/state-dir.js';
export type { CommitSpec, RefUpdate } from './types.js';

/**
 * The environment of a git command on a private index: that index, never
 * split (core.splitIndex=false, as a `-c` would set it; cleanGitEnv drops any
 * GIT_CONFIG_COUNT of the caller's). A copy of a split user index is read and
 * then written whole: no shared index file of agentsnap's in the user's .git,
 * and the walks that keep git's racy reference (snapshot.ts) can read it.
 */
export function indexEnv(indexFile: string): Record<string, string> {
  return { GIT_INDEX_FILE: indexFile, GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'core.splitIndex', GIT_CONFIG_VALUE_0: 'false' };
}

/** A path git could not read while it listed or compared the worktree, and why (it says so on stderr only, and exits 0). */
export interface UnreadPath {
  path: string;
  reason: 'unreadable' | 'path-too-long';
  /** Whether it is a directory git could not list (else a tracked path it could not lstat). */
  dir: boolean;
}

/**
 * What git reported on stderr as not read: "could not open directory"
 * (an untracked listing leaves the directory out) and `<path>: <error>` for
 * a tracked path it could not lstat (diff-files and status then call it
 * unchanged). git cuts a message at 4 KiB: a cut directory message is a path
 * that long, named by its last whole directory.
 */
export function unreadFromStderr(stderr: string): UnreadPath[] {
  const out = new Map<string, UnreadPath>();
  for (const line of stderr.split('\n')) {
    const dirMsg = /^warning: could not open directory '(.*)$/.exec(line);
    if (dirMsg) {
      const rest = dirMsg[1] ?? '';
      const whole = /^(.*)\/': (.+)$/.exec(rest);
      let dir: string;
      let reason: UnreadPath['reason'];
      if (whole) {
        dir = whole[1] ?? '';
        reason = /too long/i.test(whole[2] ?? '') ? 'path-too-long' : 'unreadable';
      } else {
        dir = rest.slice(0, Math.max(0, rest.lastIndexOf('/')));
        reason = 'path-too-long';
      }
      if (dir) out.set(dir, { path: dir, reason, dir: true });
      continue;
    }
    if (/^(warning|error|fatal|hint): /.test(line)) continue;
    const fileMsg = /^(.+): (Permission denied|File name too long|Input\/output error|Operation not permitted)$/.exec(line);
    if (fileMsg?.[1] && !out.has(fileMsg[1]))
      out.set(fileMsg[1], { path: fileMsg[1], reason: fileMsg[2] === 'File name too long' ? 'path-too-long' : 'unreadable', dir: false });
  }
  return [...out.values()];
}

/** Untracked, non-ignored paths relative to the worktree (nested repositories end with "/"), and the directories git could not list. */
export async function listUntracked(repo: Repo, indexFile: string): Promise<{ paths: string[]; unread: UnreadPath[] }> {
  const res = await repo.git([...SNAPSHOT_GIT_CONFIG, 'ls-files', '-z', '--others', '--exclude-standard'], {
    extraEnv: indexEnv(indexFile),
  });
  return { paths: splitNul(res.stdout), unread: unreadFromStderr(res.stderr) };
}

/**
 * What the user's own index says of one directory: the paths it tracks below
 * it, and the untracked ones git lists there (ignore rules applied). Asked for
 * a directory holding a `.git` that the private index shows as a nested
 * repository: where the user's index tracks paths below it, git reads it as a
 * plain directory of the superproject (its `.git` left out), and so must the
 * snapshot.
 */
export async function userIndexBelow(repo: Repo, dir: string): Promise<{ tracked: string[]; others: string[] }> {
  const spec = `:(literal)${dir}/`;
  const tracked = splitNul((await repo.git(['ls-files', '-z', '--', spec])).stdout);
  if (tracked.length === 0) return { tracked, others: [] };
  const others = await repo.git([...SNAPSHOT_GIT_CONFIG, 'ls-files', '-z', '--others', '--exclude-standard', '--', spec]);
  return { tracked, others: splitNul(others.stdout) };
}

/**
 * Updates every entry of the index from the worktree (modifications,
 * deletions, mode changes), like `add --update`, and returns the paths it
 * re-read: every stat-dirty entry, including ones whose content git's
 * filters map to the same blob (a line-ending-only change), which the
 * snapshot must re-hash without filters.
 * Also returns the tracked paths git could not lstat (left as they are in
 * the index: the caller decides).
 */
export async function addTracked(repo: Repo, indexFile: string): Promise<{ reread: string[]; unread: UnreadPath[] }> {
  const dirty = await repo.git([...SNAPSHOT_GIT_CONFIG, 'diff-files', '-z', '--name-only', '--ignore-submodules=dirty'], {
    extraEnv: indexEnv(indexFile),
  });
  const unread = unreadFromStderr(dirty.stderr);
  return { reread: await updateTracked(repo, indexFile, [...new Set(splitNul(dirty.stdout))]), unread };
}

/** Re-reads these tracked paths into the index (the paths of addTracked, or a list already taken). */
export async function updateTracked(repo: Repo, indexFile: string, paths: string[]): Promise<string[]> {
  // update-index refuses a path whose directory became a symlink ("beyond a
  // symbolic link"): such an entry is gone, as `add --update` would say.
  const linked = new Map<string, boolean>();
  // Nor can it hold a FIFO, socket or device (update-index: "unsupported file type", fatal): such a
  // tracked path is gone as a file (it holds no bytes to keep), so the snapshot records it deleted.
  const gone = paths.filter((p) => behindSymlink(repo.worktree, p, linked) || specialFile(repo.worktree, p));
  const update = gone.length > 0 ? paths.filter((p) => !gone.includes(p)) : paths;
  if (gone.length > 0) await removePaths(repo, indexFile, gone);
  if (update.length > 0) {
    // --index-version 4: see addPaths.
    await repo.git([...SNAPSHOT_GIT_CONFIG, 'update-index', '--index-version', '4', '--remove', '-z', '--stdin'], {
      extraEnv: indexEnv(indexFile),
      input: pathsInput(update),
    });
  }
  return paths;
}

/** Whether rel is on disk as something git cannot add: neither file, symlink nor directory (a FIFO, a socket, a device). */
export function specialFile(worktree: string, rel: string): boolean {
  try {
    const st = fs.lstatSync(fsPath(path.join(worktree, rel)));
    return !st.isFile() && !st.isSymbolicLink() && !st.isDirectory();
  } catch {
    return false; // gone meanwhile: nothing special there
  }
}

/** Whether a leading directory of `rel` is a symlink (cached per directory): git cannot hold such a path. */
export function behindSymlink(worktree: string, rel: string, cache: Map<string, boolean>): boolean {
  let dir = '';
  for (const part of rel.split('/').slice(0, -1)) {
    dir = dir ? `${dir}/${part}` : part;
    let isLink = cache.get(dir);
    if (isLink === undefined) {
      try {
        isLink = fs.lstatSync(fsPath(path.join(worktree, dir))).isSymbolicLink();
      } catch {
        isLink = false; // not there: not a symlink
      }
      cache.set(dir, isLink);
    }
    if (isLink) return true;
  }
  return false;
}

/**
 * Adds exactly these paths (literal, NUL-separated, no pathspec magic).
 * --replace drops entries in the way of one (`d/x` when `d` is now a file or
 * symlink): they are gone from the disk, but git's scan of tracked files may
 * not say so (lstat of `d/x` through a symlink loop fails with ELOOP, which
 * it reports as neither changed nor deleted).
 */
export async function addPaths(repo: Repo, indexFile: string, paths: string[]): Promise<void> {
  if (paths.length === 0) return;
  // --index-version 4 (path prefix compression) makes the private index ~30%
  // smaller, so each later read and write of it is faster (~40 ms per
  // snapshot at 100k files); a no-op once the index is version 4.
  await repo.git([...SNAPSHOT_GIT_CONFIG, 'update-index', '--index-version', '4', '--add', '--remove', '--replace', '-z', '--stdin'], {
    extraEnv: indexEnv(indexFile),
    input: pathsInput(paths),
  });
}

/** How an index differs from a commit's tree, by path: present only in the index, or only in the tree. */
export interface IndexVsTree {
  /** In the index but not in the tree (and unmerged paths, which are in the index either way). */
  extra: Set<string>;
  /** In the tree but not in the index. */
  missing: Set<string>;
}

/**
 * Compares an index (the private one, or the worktree's own when null) with
 * a commit (or the empty tree). Cheap: no worktree access, and unchanged
 * subtrees are skipped through the index's cache tree. Never writes the index.
 */
export async function indexVsTree(repo: Repo, indexFile: string | null, treeish: string): Promise<IndexVsTree> {
  const res = await repo.git(
    ['diff-index', '--ignore-submodules=none', '--cached', '-z', '--name-status', '--no-renames', treeish, '--'],
    indexFile ? { extraEnv: indexEnv(indexFile) } : {},
  );
  return nameStatusByPath(splitNul(res.stdout));
}

function nameStatusByPath(tokens: string[]): IndexVsTree {
  const out: IndexVsTree = { extra: new Set(), missing: new Set() };
  for (let i = 0; i + 1 < tokens.length; i += 2) {
    const status = tokens[i];
    const p = tokens[i + 1] ?? '';
    if (status === 'A' || status === 'U') out.extra.add(p);
    else if (status === 'D') out.missing.add(p);
  }
  return out;
}

/**
 * How commit or tree `index` differs from `treeish` by path, in the shape of
 * indexVsTree: for an index known to hold exactly the entries of `index`
 * (the tree it last wrote), without reading it. Two trees that share most
 * subtrees compare in a few ms.
 */
export async function treeVsTree(repo: Repo, index: string, treeish: string): Promise<IndexVsTree> {
  const res = await repo.git(['diff-tree', '--ignore-submodules=none', '-r', '-z', '--name-status', '--no-renames', treeish, index], {
    extraEnv: indexEnv(stateLayout.noIndexFile(repo)), // see diffTrees
  });
  return nameStatusByPath(splitNul(res.stdout));
}

/** Of `paths`, those the user's ignore rules (.gitignore, info/exclude, core.excludesFile) match. */
export async function ignoredPaths(repo: Repo, paths: string[], opts: { readIndex?: boolean } = {}): Promise<Set<string>> {
  if (paths.length === 0) return new Set();
  // check-ignore reads pathspecs (GIT_LITERAL_PATHSPECS is refused): "./" keeps a name starting
  // with ":" a plain path (":x" would be the pathspec "x"); git answers with the name as asked.
  // readIndex: read the user's index, so a path it tracks is never reported (a snapshot records
  // tracked files whatever the rules say).
  const args = ['check-ignore', '-z', '--stdin', ...(opts.readIndex ? [] : ['--no-index'])];
  const res = await repo.git(args, { input: pathsInput(paths, '\0', './'), okCodes: [1] });
  return new Set(splitNul(res.stdout).map((p) => (p.startsWith('./') ? p.slice(2) : p)));
}

/**
 * Of `paths`, those the user's index tracks (stage 0 or a conflict): one
 * `cat-file --batch-check` of `:<path>` (index) names, read from stdin, so
 * any bytes pass (ls-files takes no pathspecs from stdin in git 2.39). A name
 * holding a newline cannot be asked and counts as tracked (never left out).
 */
export async function trackedPaths(repo: Repo, paths: string[]): Promise<Set<string>> {
  const out = new Set<string>(paths.filter((p) => p.includes('\n')));
  const ask = paths.filter((p) => !p.includes('\n'));
  if (ask.length === 0) return out;
  for (const stage of ['0', '2']) {
    const left = ask.filter((p) => !out.has(p));
    if (left.length === 0) break;
    const res = await repo.git(['cat-file', '--batch-check=%(objectname)'], { input: pathsInput(left, '\n', `:${stage}:`) });
    const lines = res.stdout.toString('utf8').split('\n');
    left.forEach((p, i) => {
      if (!/ missing$/.test(lines[i] ?? ' missing')) out.add(p);
    });
  }
  return out;
}

/** Removes exactly these paths from the index (the files stay on disk). */
export async function removePaths(repo: Repo, indexFile: string, paths: string[]): Promise<void> {
  if (paths.length === 0) return;
  await repo.git(['update-index', '--force-remove', '-z', '--stdin'], { extraEnv: indexEnv(indexFile), input: pathsInput(paths) });
}

export async function writeTree(repo: Repo, indexFile: string): Promise<string> {
  const res = await repo.git(['write-tree'], { extraEnv: indexEnv(indexFile) });
  return res.stdout.toString('utf8').trim();
}

/** Writes a commit with agentsnap's fixed identity; never signed. */
export async function commitTree(repo: Repo, spec: CommitSpec): Promise<string> {
  const args = ['commit-tree', '--no-gpg-sign', spec.tree];
  for (const p of spec.parents) args.push('-p', p);
  args.push('-F', '-');
  const res = await repo.git(args, {
    input: spec.message,
    extraEnv: {
      GIT_AUTHOR_NAME: AGENTSNAP_NAME,
      GIT_AUTHOR_EMAIL: AGENTSNAP_EMAIL,
      GIT_COMMITTER_NAME: AGENTSNAP_NAME,
      GIT_COMMITTER_EMAIL: AGENTSNAP_EMAIL,
    },
  });
  return res.stdout.toString('utf8').trim();
}

/** All-or-nothing ref transaction (`update-ref --stdin` with start/prepare/commit). */
export async function updateRefs(repo: Repo, updates: RefUpdate[]): Promise<void> {
  if (updates.length === 0) return;
  const lines = ['start'];
  for (const u of updates) lines.push(u.value === null ? `delete ${u.ref}` : `update ${u.ref} ${u.value}`);
  lines.push('prepare', 'commit', '');
  // A git killed while updating refs (a crash of the agentsnap that ran it) leaves its ref locks
  // behind; git never removes them. A lock of one of agentsnap's refs (or packed-refs) that no
  // process holds is removed and the update tried again. git stops at the first lock in its way,
  // so each attempt can report the next one: one attempt per ref, plus packed-refs, at most.
  for (let attempt = 0; ; attempt++) {
    try {
      await repo.git(['update-ref', '--stdin'], { input: lines.join('\n') });
      return;
    } catch (e) {
      const stderr = String((e as { data?: { stderr?: string } }).data?.stderr ?? '');
      const locks = [...stderr.matchAll(/Unable to create '([^']+\.lock)': File exists/g)].map((m) => m[1] ?? '');
      if (locks.length === 0 || attempt > updates.length) throw e;
      const stale = locks.filter((f) => /\/refs\/agent(snap)?\/|\/packed-refs\.lock$/.test(f));
      let removed = false;
      for (const f of stale) if (await clearStaleGitLock(f)) removed = true;
      if (!removed) {
        // Name the lock (git's own message ends in advice and cuts the path off in one line).
        throw errors.busy(
          `updating agentsnap's refs failed: ${locks.join(', ')} is in the way${stale.length ? ' (still held by a running git)' : ''}.`,
          {
            hint: 'Wait for the other git command to finish and try again; if none runs, remove that lock file.',
            data: { locks, stderr },
          },
        );
      }
    }
  }
}

/** Resolves `rev` to a commit id, or null when it does not exist. */
export async function resolveCommit(repo: Repo, rev: string): Promise<string | null> {
  const res = await repo.git(['rev-parse', '-q', '--verify', '--end-of-options', `${rev}^{commit}`], { okCodes: [1, 128] });
  return res.code === 0 ? res.stdout.toString('utf8').trim() : null;
}

export interface RefEntry {
  ref: string;
  oid: string;
}

export async function listRefs(repo: Repo, prefix: string): Promise<RefEntry[]> {
  const res = await repo.git(['for-each-ref', '--format=%(objectname) %(refname)', prefix]);
  return res.stdout
    .toString('utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const sp = line.indexOf(' ');
      return { oid: line.slice(0, sp), ref: line.slice(sp + 1) };
    });
}

/** Changed paths between two trees, with line counts (null for binary files). */
export async function diffTrees(repo: Repo, from: string, to: string): Promise<ChangedPath[]> {
  if (from === to) return [];
  // diff-tree reads the index although comparing two trees needs none (20 ms
  // for the user's 11 MB index at 100k files): point it at one that does not
  // exist. .gitattributes (binary or not, for --numstat) then come from the
  // worktree, which is what the snapshot holds.
  const res = await repo.git(['diff-tree', '--ignore-submodules=none', '-r', '-z', '--no-renames', '--raw', '--numstat', from, to], {
    extraEnv: indexEnv(stateLayout.noIndexFile(repo)),
  });
  const tokens = splitNul(res.stdout);
  const byPath = new Map<string, ChangedPath>();
  const order: ChangedPath[] = [];
  let i = 0;
  while (i < tokens.length) {
    const tok = tokens[i] ?? '';
    const raw = /^:(\d{6}) (\d{6}) [0-9a-f]+ [0-9a-f]+ ([AMDT])$/.exec(tok);
    if (raw) {
      const p = tokens[i + 1] ?? '';
      const entry: ChangedPath = { path: p, change: raw[3] as ChangedPath['change'], added: null, deleted: null };
      byPath.set(p, entry);
      order.push(entry);
      i += 2;
      continue;
    }
    const num = /^(\d+|-)\t(\d+|-)\t([\s\S]*)$/.exec(tok);
    if (num) {
      const entry = byPath.get(num[3] ?? '');
      if (entry) {
        entry.added = num[1] === '-' ? null : Number(num[1]);
        entry.deleted = num[2] === '-' ? null : Number(num[2]);
      }
    }
    i += 1;
  }
  return order;
}

/** Tree id of a commit. */
export async function treeOf(repo: Repo, commit: string): Promise<string> {
  const res = await repo.git(['rev-parse', '--verify', '--end-of-options', `${commit}^{tree}`]);
  return res.stdout.toString('utf8').trim();
}

/**
 * The user's HEAD commit, read from the ref files directly (cheaper than a git
 * process on the per-tool-call path); falls back to git for other ref backends.
 * Returns null for an unborn branch.
 */
export async function readHead(repo: Repo): Promise<{ commit: string | null; branch: string | null }> {
  try {
    const head = fs.readFileSync(path.join(repo.gitDir, 'HEAD'), 'utf8').trim();
    if (/^[0-9a-f]{40,64}$/.test(head)) return { commit: head, branch: null };
    const m = /^ref: (refs\/.+)$/.exec(head);
    if (m?.[1] && !fs.existsSync(path.join(repo.commonDir, 'reftable'))) {
      const ref = m[1];
      const branch = ref.startsWith('refs/heads/') ? ref.slice('refs/heads/'.length) : ref;
      const loose = readLooseRef(repo, ref);
      if (loose !== undefined) return { commit: loose, branch };
      return { commit: readPackedRef(repo.commonDir, ref), branch };
    }
  } catch {
    /* fall through to git */
  }
  const res = await repo.git(['rev-parse', '-q', '--verify', 'HEAD'], { okCodes: [1, 128] });
  const sym = await repo.git(['symbolic-ref', '-q', '--short', 'HEAD'], { okCodes: [1, 128] });
  return {
    commit: res.code === 0 ? res.stdout.toString('utf8').trim() : null,
    branch: sym.code === 0 ? sym.stdout.toString('utf8').trim() : null,
  };
}

/**
 * A ref's value from the ref files (loose, then packed-refs), null when it does not exist: no git process, for the
 * per-step path. Other ref backends ask git.
 */
export async function readRefValue(repo: Repo, ref: string): Promise<string | null> {
  if (!fs.existsSync(path.join(repo.commonDir, 'reftable'))) return readLooseRef(repo, ref) ?? readPackedRef(repo.commonDir, ref);
  const res = await repo.git(['rev-parse', '-q', '--verify', '--end-of-options', ref], { okCodes: [1, 128] });
  return res.code === 0 ? res.stdout.toString('utf8').trim() : null;
}

function readLooseRef(repo: Repo, ref: string): string | undefined {
  for (const dir of [repo.commonDir, repo.gitDir]) {
    try {
      const v = fs.readFileSync(path.join(dir, ref), 'utf8').trim();
      if (/^[0-9a-f]{40,64}$/.test(v)) return v;
      const m = /^ref: (refs\/.+)$/.exec(v);
      if (m?.[1]) return readLooseRef(repo, m[1]) ?? readPackedRef(repo.commonDir, m[1]) ?? undefined;
    } catch {
      /* not here */
    }
  }
  return undefined;
}

function readPackedRef(commonDir: string, ref: string): string | null {
  let text: string;
  try {
    text = fs.readFileSync(path.join(commonDir, 'packed-refs'), 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e; // no packed-refs: the ref is not packed
    return null;
  }
  for (const line of text.split('\n')) {
    if (line.endsWith(` ${ref}`) && /^[0-9a-f]{40,64} /.test(line)) return line.slice(0, line.indexOf(' '));
  }
  return null;
}
