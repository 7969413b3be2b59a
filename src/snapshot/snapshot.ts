// snapshot/ (above git/ and base/): the worktree into a tree — this full scan
// and in-process path, the incremental engine with its watcher and sweeps,
// the status prefetch, throwaway-index snapshots. Reads the worktree, writes
// objects and private indexes only: never refs, journals, or a worktree file.
//
// Over 500 lines on purpose: the full scan and the in-process path must give
// the same tree, skipped set and changed list, and share every rule of what a
// snapshot reads (flags, modes, filters, unreadable paths); they are read side
// by side here.
//
// The snapshot engine: the whole worktree (tracked files as they are on disk,
// untracked files that are not ignored) into a git tree, through a private
// index. The user's index, HEAD, refs and config are never read for writing.
import fs from 'node:fs';
import path from 'node:path';
import { copyToFreshStateFile, readStateFile, replaceStateFile } from '../base/state-dir.js';
import picomatch from 'picomatch';
import { errors, isAgentsnapError } from '../base/errors.js';
import { gitBool, lastValue, readGitConfig, type GitConfig } from '../git/config.js';
import { SECRET_ALLOW, SECRET_PATTERNS, environmentMatcher, type Settings } from '../settings/settings.js';
import type { Repo } from '../git/repo.js';
import { SNAPSHOT_GIT_CONFIG, snapshotConfigOverrides, snapshotStatusArgs } from '../git/status-args.js';
import { dropStatusPrefetch, takeStatusPrefetch } from './status-prefetch.js';
import {
  addPaths,
  addTracked,
  behindSymlink,
  diffTrees,
  emptyTree,
  ignoredPaths,
  indexEnv,
  indexVsTree,
  listUntracked,
  readHead,
  removePaths,
  specialFile,
  treeVsTree,
  unreadFromStderr,
  updateTracked,
  writeTree,
  type IndexVsTree,
  type UnreadPath,
  userIndexBelow,
} from '../git/plumbing.js';
import { argChunks, cleanGitEnv, fsPath, hasRawBytes, pathsInput, runGit, splitNul } from '../git/run.js';
import { caseSensitiveFs, directoryAt, formatSize, skipRestoreTemp, statKey, unlinkQuiet } from '../base/fsutil.js';
import { ObjectReader } from '../git/cat-file.js';
import { objectStore } from '../git/objects.js';
import { oldestRecentMtime, oldestRefreshedMtime, oldestUnlikeMtime, readIndexFacts, readIndexFlags } from '../git/index-file.js';
import { blobOf, hashRaw, TreeEditor, unsupportedConfig, type Leaf } from './tree-editor.js';
import { clearStaleGitLock } from '../base/lock.js';
import type { ChangedPath, SkippedFile } from '../git/types.js';

export interface TreeSnapshot {
  tree: string;
  skipped: SkippedFile[];
}

export interface SnapshotOptions {
  /** The private index file; created from the worktree's own index when missing. */
  indexFile: string;
  settings: Settings;
  /** Called with a short description of slow phases (for a progress indicator). */
  onProgress?: (phase: string) => void;
}

export interface SnapshotTreeOptions extends SnapshotOptions {
  /** Tree of the session's previous snapshot, to report what changed since (null for a baseline). */
  parentTree: string | null;
  /**
   * A long-lived index (a session's private one): list untracked files
   * through git's untracked cache where that is exact, and keep what the
   * next snapshot can reuse next to the index (userIndexVsTree,
   * noAttributesMarker). Throwaway indexes leave this off.
   */
  untrackedCache?: boolean;
  /**
   * Whether a new copy of the user's index (the in-process path) is written
   * back with git's untracked cache and refreshed stat data (~0.1 s at 100k
   * files), which only a later Node-path snapshot of this index uses. Off
   * where a server will take the next snapshots (default on).
   */
  warmCopy?: boolean;
  /**
   * Private indexes of this worktree's earlier sessions, newest first: a new
   * index starts as a copy of the first that is still an unwritten copy of
   * the user's index as it is now (with git's untracked cache), instead of a
   * fresh copy of the user's index (see adoptDonor in snapshot.ts). A function: listed only when a new index is
   * seeded (the session's baseline; a snapshotter that keeps no private index never lists them).
   */
  donors?: readonly string[] | (() => readonly string[]);
  /** Dirty paths above which the in-process path leaves the snapshot to git (tests; default MAX_IN_PROCESS_PATHS). */
  maxInProcessPaths?: number;
}

export interface TreeSnapshotResult extends TreeSnapshot {
  /** Whether the private index was created by this call. */
  seeded: boolean;
  /** The earlier session's index this new one was copied from (see SnapshotTreeOptions.donors). */
  adopted?: string;
  /** Why the in-process path (inProcessSnapshot) was tried and not taken (tests, debugging). */
  declined?: string;
  /** Changes against parentTree. */
  changed: ChangedPath[];
}

/**
 * Copies an index file keeping its mtime: git tells "racily clean" entries
 * (files changed in the same second the index was written) by comparing them
 * with the index file's mtime, and a fresh mtime would hide such changes.
 */
export function copyIndexFile(src: string, dst: string): void {
  copyToFreshStateFile(src, dst); // dst is a temp name of ours: never written through a link planted there
  const st = fs.statSync(src);
  fs.utimesSync(dst, st.atime, st.mtime);
}

/** Seeds a new private index from the worktree's own index so the first snapshot re-hashes nothing. */
export function seedPrivateIndex(repo: Repo, indexFile: string): boolean {
  if (fs.existsSync(indexFile)) return false;
  fs.mkdirSync(path.dirname(indexFile), { recursive: true, mode: 0o700 });
  const userIndex = path.join(repo.gitDir, 'index');
  const tmp = `${indexFile}.seed-${process.pid}`;
  try {
    copyIndexFile(userIndex, tmp);
    fs.chmodSync(tmp, 0o600);
    fs.renameSync(tmp, indexFile);
  } catch (e) {
    try {
      fs.unlinkSync(tmp);
    } catch {
      /* nothing to clean */
    }
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    // No index yet (fresh `git init`): git creates the private one on first add.
  }
  return true;
}

export type Classifier = (relPath: string, size: number) => SkippedFile['reason'] | null;

/** Decides which untracked files stay out of snapshots (secrets, excludes, size cap). */
export function untrackedClassifier(settings: Settings): Classifier {
  const opts = { dot: true };
  const isSecret = picomatch(SECRET_PATTERNS, opts);
  const isAllowed = picomatch(SECRET_ALLOW, opts);
  const isExcluded = excludeMatcher(settings.exclude);
  return (rel, size) => {
    if (isExcluded(rel)) return 'excluded';
    if (settings.excludeSecrets && isSecret(rel) && !isAllowed(rel)) return 'secret';
    if (settings.maxFileSize > 0 && size > settings.maxFileSize) return 'too-large';
    return null;
  };
}

/**
 * `agentsnap.exclude` read as .gitignore lines (picomatch globs): a pattern
 * without a slash matches a name at any depth, one with a slash (or a leading
 * `/`) the path from the top; a pattern that matches a directory excludes
 * everything below it (`node_modules`); a trailing `/` matches directories only.
 * Negations (`!x`) are not supported (git's own ignore files have them).
 */
export function excludeMatcher(patterns: string[]): (rel: string) => boolean {
  if (patterns.length === 0) return () => false;
  const opts = { dot: true };
  const anyDepth = (g: string) => (g.includes('/') ? g.replace(/^\/+/, '') : `**/${g}`);
  const all: string[] = [];
  const dirsOnly: string[] = [];
  for (const raw of patterns) {
    const dirOnly = raw.endsWith('/');
    const g = anyDepth(raw.replace(/\/+$/, ''));
    if (!g) continue;
    (dirOnly ? dirsOnly : all).push(g);
  }
  const file = all.length > 0 ? picomatch(all, opts) : () => false;
  const dir = all.length + dirsOnly.length > 0 ? picomatch([...all, ...dirsOnly], opts) : () => false;
  // Directories repeat across files: each one is matched once.
  const dirCache = new Map<string, boolean>();
  const dirExcluded = (d: string): boolean => {
    let hit = dirCache.get(d);
    if (hit === undefined) {
      const slash = d.lastIndexOf('/');
      hit = (slash > 0 && dirExcluded(d.slice(0, slash))) || dir(d);
      if (dirCache.size > 100_000) dirCache.clear();
      dirCache.set(d, hit);
    }
    return hit;
  };
  return (rel) => {
    if (file(rel)) return true;
    const slash = rel.lastIndexOf('/');
    return slash > 0 && dirExcluded(rel.slice(0, slash));
  };
}

function lstatOrNull(abs: string): fs.Stats | null {
  try {
    return fs.lstatSync(fsPath(abs));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT' || (e as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
    throw e;
  }
}

/**
 * What a nested repository is to the superproject: a gitlink when it has a commit of the superproject's object
 * format; else something git cannot record (it says "is a directory - add files inside instead" for the other
 * format), skipped and listed.
 */
async function nestedRepoKind(repo: Repo, dir: string): Promise<'commit' | 'no-commit' | 'other-format'> {
  const res = await runGit(['rev-parse', '--show-object-format', '-q', '--verify', 'HEAD^{commit}'], {
    cwd: dir,
    env: cleanGitEnv(repo.env),
    okCodes: [1, 128],
  });
  const format = res.stdout.toString('utf8').split('\n')[0]?.trim();
  if (format && format !== repo.objectFormat) return 'other-format';
  return res.code === 0 ? 'commit' : 'no-commit';
}

function unreadable(rel: string, e: unknown): never {
  const code = (e as NodeJS.ErrnoException).code ?? 'error';
  throw errors.unreadableFile(`cannot snapshot: ${rel} is not readable (${code}).`, {
    hint: 'Fix its permissions, or exclude it with `git config --add agentsnap.exclude <glob>`. No snapshot was written.',
    data: { path: rel, errno: code },
  });
}

/** Turns git's "cannot read/open file" failures into a message that names the file. */
function explainAddFailure(e: unknown): never {
  if (isAgentsnapError(e) && e.code === 'GitFailed') {
    const stderr = String(e.data.stderr ?? '');
    const m = /(?:open|read|stat)\("?(.+?)"?\): (.+)/.exec(stderr) ?? /unable to (?:index|read|stat) file '?(.+?)'?$/m.exec(stderr);
    if (m?.[1]) {
      throw errors.unreadableFile(`cannot snapshot: ${m[1]} could not be read (${(m[2] ?? 'read error').trim()}).`, {
        hint: 'Fix its permissions, or exclude it with `git config --add agentsnap.exclude <glob>`. No snapshot was written.',
        data: { path: m[1], stderr },
      });
    }
    throw errors.snapshotFailed(`snapshot failed: ${e.message}`, {
      data: e.data,
      hint: 'No snapshot was written. Run with AGENTSNAP_DEBUG=1 for details.',
    });
  }
  throw e;
}

/**
 * Writes the worktree into a tree object and returns it with the list of
 * untracked files left out. Either the whole tree is written or the call
 * throws: a partial tree would make a later undo delete work.
 */
export async function snapshotTree(userRepo: Repo, opts: SnapshotTreeOptions): Promise<TreeSnapshotResult> {
  const { indexFile, settings } = opts;
  // Every git command of this snapshot runs with the repository's overrides (filters off, the filesystem's case rule).
  const cfg = settings.gitConfig ?? (await readGitConfig(userRepo));
  const repo = withOverrides(userRepo, snapshotOverrides(userRepo, cfg));
  // The caller holds the lock that serialises every writer of this index: a lock file left on it is a killed git's.
  await clearStaleGitLock(`${indexFile}.lock`);
  // A private index kept as a copy of the user's index (the in-process path's)
  // is used again while neither index was written since; else it is seeded anew.
  // The user's index key first, and the copy judged against that one key: taken after the check, a rewrite
  // of the user's index in between would be recorded as the key of a copy that holds the old entries.
  const userKey = statKey(path.join(repo.gitDir, 'index'));
  let { state: copy, base: knownBase } = opts.untrackedCache ? userCopyState(indexFile, userKey) : { state: 'none' as const, base: null };
  if (copy === 'stale') discardPrivateIndex(indexFile);
  // A new index continues an earlier session's copy of the user's index where that copy is still exact (adoptDonor).
  const donors =
    opts.untrackedCache && opts.donors && !fs.existsSync(indexFile)
      ? typeof opts.donors === 'function'
        ? opts.donors()
        : opts.donors
      : [];
  const adopted = donors.length > 0 ? adoptDonor(repo, indexFile, donors, userKey) : null;
  if (adopted) {
    ({ state: copy, base: knownBase } = userCopyState(indexFile, userKey));
    fs.rmSync(noFlagsMarker(indexFile), { force: true });
    opts.onProgress?.('indexing the worktree');
  }
  const seeded = !adopted && seedPrivateIndex(repo, indexFile);
  if (seeded) {
    fs.rmSync(noFlagsMarker(indexFile), { force: true }); // a copy of the user's index: its flags are checked again
    opts.onProgress?.('indexing the worktree');
  }
  // A status the executable started is of use only to a fresh copy that is not written back (inProcessSnapshot):
  // any other snapshot stops it now rather than share the machine with it.
  if (!(opts.untrackedCache && seeded && opts.warmCopy === false)) dropStatusPrefetch();
  let declined: string | undefined;
  if (opts.untrackedCache && (seeded || copy === 'valid')) {
    const res = await inProcessSnapshot(repo, opts, userKey, seeded, seeded ? null : knownBase);
    if (typeof res !== 'string') return adopted ? { ...res, seeded: true, adopted: adopted.from } : res;
    declined = res;
    dropStatusPrefetch();
  }
  // From here git writes the index: it becomes the session's own.
  fs.rmSync(userCopyFile(indexFile), { force: true });
  await clearIndexFlags(repo, indexFile);
  // The index holds exactly the user's entries (a copy, maybe refreshed by status): nothing to reconcile.
  const fresh = seeded || copy === 'valid';
  const result = await snapshotThroughIndex(repo, opts, fresh, cfg);
  return {
    ...result,
    seeded: seeded || !!adopted,
    ...(adopted ? { adopted: adopted.from } : {}),
    ...(declined !== undefined ? { declined } : {}),
  };
}

/**
 * A new private index as a copy of an earlier session's private index
 * (`donors`, newest first) instead of the user's: the first donor that is
 * still an unwritten copy of the user's index as it is now — its
 * `index.user-copy` record names this worktree, the user's index's stat key
 * now and the donor's own (so neither file was written since the donor's
 * last in-process snapshot: git replaces an index whole, and anything else
 * that writes one, chmod and utimes included, changes its ctime). Such a
 * copy holds exactly the user's entries (status only refreshed their stat
 * data and wrote git's untracked cache), which is what the donor's own next
 * snapshot would start from (userCopyState 'valid'); the new session's
 * baseline is that snapshot, listed through the untracked cache instead of a
 * cold walk of every directory. The copy gets the donor's mtime set back
 * by RACY_MARGIN_MS (git's racy reference for entries and cached
 * directories: an earlier one makes more of them racy, never fewer; the
 * donor's status wrote it right after reading them) and keeps the donor's
 * base tree. Checked again after the copy: a donor written while it
 * was copied is not taken. Null when none fits (then the user's index seeds it).
 */
function adoptDonor(repo: Repo, indexFile: string, donors: readonly string[], userKey: string): { from: string } | null {
  for (const donor of donors) {
    let rec: { user?: unknown; priv?: unknown; base?: unknown; worktree?: unknown; gitDir?: unknown };
    try {
      rec = JSON.parse(readStateFile(userCopyFile(donor))?.toString('utf8') ?? 'null') as typeof rec;
      if (!rec) continue; // no record: not a donor
    } catch {
      continue; /* a torn or foreign record: not a donor (the user's index seeds it) */
    }
    if (rec.worktree !== repo.worktree || rec.gitDir !== repo.gitDir || rec.user !== userKey || typeof rec.priv !== 'string') continue;
    const before = statKey(donor);
    if (before !== rec.priv) continue;
    fs.mkdirSync(path.dirname(indexFile), { recursive: true, mode: 0o700 });
    const tmp = `${indexFile}.seed-${process.pid}`; // gc removes one a killed process left (strayFiles)
    try {
      copyToFreshStateFile(donor, tmp);
      // Set back RACY_MARGIN_MS: what git read in the last seconds before the donor's status wrote it (a directory
      // changed again within its cached tick, see keepRacyReference) is read again; never less exact, only re-read.
      // And back to the oldest mtime of an entry whose stat data the donor's statuses refreshed (it differs from the
      // user's): git trusts such an entry by its stat data unless its mtime is not older than the index, and a file
      // written again within the second of the ctime a status recorded, same size, its mtime put back (utimes,
      // touch -d, cp -p, rsync -a), keeps that stat data; a fresh copy of the user's index reads it again (its stat
      // data is the user's). Entries the user's own index holds as they are keep git's rule.
      // Worked out after the donor's session ended when it can be (precomputeDonorOldest): the same two files.
      const known = knownOldest(donor, rec.priv, userKey);
      const oldest = known !== undefined ? known : oldestRefreshedMtime(tmp, repo.objectFormat, path.join(repo.gitDir, 'index'));
      if (oldest === null || oldest < 2) {
        // (An index mtime of 0 would switch git's racy checks off.)
        unlinkQuiet(tmp);
        continue;
      }
      const st = fs.statSync(donor);
      fs.utimesSync(tmp, st.atime, new Date(Math.min(st.mtimeMs - RACY_MARGIN_MS, oldest * 1000)));
      if (statKey(donor) !== before || statKey(path.join(repo.gitDir, 'index')) !== userKey) {
        unlinkQuiet(tmp);
        continue;
      }
      fs.renameSync(tmp, indexFile);
    } catch {
      // A donor that went away or changed meanwhile, or a copy that failed: the user's index seeds it instead.
      unlinkQuiet(tmp);
      continue;
    }
    writeUserCopy(indexFile, {
      user: userKey,
      priv: statKey(indexFile),
      base: typeof rec.base === 'string' ? rec.base : null,
      worktree: repo.worktree,
      gitDir: repo.gitDir,
    });
    return { from: donor };
  }
  return null;
}

/** Beside a private index: oldestRefreshedMtime of it against the user's index, with the stat keys of both it is for. */
function oldestFile(indexFile: string): string {
  return `${indexFile}.user-copy.oldest`;
}

/** The recorded oldestRefreshedMtime of `indexFile` and the user's index while their stat keys are `priv` and `user`; undefined when none is. */
function knownOldest(indexFile: string, priv: string, user: string): number | undefined {
  try {
    const rec = JSON.parse(readStateFile(oldestFile(indexFile))?.toString('utf8') ?? 'null') as {
      priv?: unknown;
      user?: unknown;
      oldest?: unknown;
    } | null;
    if (!rec || rec.priv !== priv || rec.user !== user) return undefined;
    if (rec.oldest === 'none') return Infinity;
    return typeof rec.oldest === 'number' && Number.isInteger(rec.oldest) ? rec.oldest : undefined;
  } catch {
    return undefined; /* a torn or foreign cache (not JSON, a link): computed instead */
  }
}

/**
 * Works out, for a private index kept as a copy of the user's index (its
 * `index.user-copy` record still true of both files), what a new session's
 * adoptDonor needs of it, and records it beside it keyed by both stat keys:
 * the walk of both indexes then runs after this session instead of at the
 * start of the next (~0.35 s at 1M files). Run by the end-of-session
 * maintenance, in the background; any write to either file since makes the
 * record unused (the keys differ), never wrong.
 */
export function precomputeDonorOldest(repo: Repo, indexFile: string): void {
  let rec: { user?: unknown; priv?: unknown; worktree?: unknown; gitDir?: unknown };
  try {
    rec = JSON.parse(readStateFile(userCopyFile(indexFile))?.toString('utf8') ?? 'null') as typeof rec;
    if (!rec) return; // no record: not a copy of the user's index
  } catch {
    return; /* a torn or foreign record: nothing to precompute */
  }
  const userIndex = path.join(repo.gitDir, 'index');
  const user = statKey(userIndex);
  if (
    rec.worktree !== repo.worktree ||
    rec.gitDir !== repo.gitDir ||
    rec.user !== user ||
    typeof rec.priv !== 'string' ||
    statKey(indexFile) !== rec.priv
  )
    return;
  if (knownOldest(indexFile, rec.priv, user) !== undefined) return;
  const oldest = oldestRefreshedMtime(indexFile, repo.objectFormat, userIndex);
  // Either file written while they were read: not recorded.
  if (oldest === null || statKey(indexFile) !== rec.priv || statKey(userIndex) !== user) return;
  try {
    replaceStateFile(oldestFile(indexFile), JSON.stringify({ priv: rec.priv, user, oldest: oldest === Infinity ? 'none' : oldest }));
  } catch {
    /* a cache only, written off the session's path: without it the next baseline computes the time itself */
  }
}

function writeUserCopy(
  indexFile: string,
  rec: { user: string; priv: string; base: string | null; worktree: string; gitDir: string },
): void {
  replaceStateFile(userCopyFile(indexFile), JSON.stringify(rec));
}

/**
 * The git options this repository's config needs on top of
 * SNAPSHOT_GIT_CONFIG (see snapshotConfigOverrides): no git process, two
 * lstats only under core.ignoreCase=true.
 */
export function snapshotOverrides(repo: Pick<Repo, 'worktree' | 'gitDir'>, cfg: GitConfig): string[] {
  const drivers = new Set<string>();
  for (const key of cfg.keys()) {
    const m = /^filter\.(.+)\.(clean|process|smudge|required)$/s.exec(key);
    if (m?.[1]) drivers.add(m[1]);
  }
  // As git reads the boolean (2 and 1k are true); a value git rejects: overridden (false on this filesystem) all the same.
  const ignoreCase = gitBool(lastValue(cfg, 'core.ignorecase') ?? 'false') ?? true;
  return snapshotConfigOverrides([...drivers], ignoreCase && caseSensitiveFs(repo));
}

/** The repository with `args` in every git command it runs, after the command's own `-c` options (the same object when there are none). */
function withOverrides(repo: Repo, args: string[]): Repo {
  if (args.length === 0) return repo;
  return {
    ...repo,
    git: (a, o) => {
      let i = 0;
      while (a[i] === '-c') i += 2;
      return repo.git([...a.slice(0, i), ...args, ...a.slice(i)], o);
    },
  };
}

/**
 * Adds to `untracked` every file below the environment directories (agentsnap.environment) that the index does not
 * hold, the ignore rules not applied: what `npm install` or `pip install` left there. A nested repository there is listed as git lists
 * one (`dir/`). A name that is a symlink or a file is the worktree's like any other path (ls-files lists nothing below it).
 */
async function listEnvironment(
  repo: Repo,
  indexFile: string,
  dirs: readonly string[],
  untracked: string[],
  unread: UnreadPath[],
): Promise<void> {
  // One not there (or behind a symlink or a file) holds nothing to list; asked of git, it would warn that it cannot
  // open it, which reads as an unreadable directory.
  const present = dirs.filter((d) => directoryAt(repo.worktree, d) === 'dir');
  if (present.length === 0) return;
  const res = await repo.git([...SNAPSHOT_GIT_CONFIG, 'ls-files', '-z', '--others', '--', ...present.map((d) => `:(literal)${d}/`)], {
    extraEnv: indexEnv(indexFile),
  });
  const listed = new Set(untracked);
  for (const p of splitNul(res.stdout)) if (!listed.has(p)) untracked.push(p);
  unread.push(...unreadFromStderr(res.stderr));
}

/**
 * What the full scan does with each path git listed as untracked: a nested repository becomes a gitlink (or is
 * skipped), a file is added or skipped by `classify`. `untracked` grows while it is read: the paths below a nested
 * repository whose paths the user's index tracks are listed as plain files. Adds to `toAdd` and `skipped`; returns the bytes
 * of the files it added.
 */
async function addUntracked(
  repo: Repo,
  untracked: string[],
  userTracked: Set<string>,
  classify: ReturnType<typeof untrackedClassifier>,
  toAdd: string[],
  skipped: SkippedFile[],
): Promise<{ bytes: number; readAsPlain: boolean }> {
  let bytes = 0;
  let readAsPlain = false;
  for (const rel of untracked) {
    if (userTracked.has(rel)) continue; // tracked by the user: added above, never classified
    const abs = path.join(repo.worktree, rel);
    if (rel.endsWith('/')) {
      // ls-files shows a nested repository as its directory: record it as a gitlink if it has a commit.
      const dir = rel.slice(0, -1);
      // Unless the user's index tracks paths below it (all of them gone from the private index, deleted on disk):
      // git then reads it as a plain directory (its .git left out), and so does the snapshot.
      const below = await userIndexBelow(repo, dir);
      if (below.tracked.length > 0) {
        readAsPlain = true;
        for (const t of below.tracked) {
          if (userTracked.has(t) || !lstatOrNull(path.join(repo.worktree, t))) continue; // gone from disk: gone from the tree
          userTracked.add(t);
          toAdd.push(t);
        }
        untracked.push(...below.others.filter((o) => !userTracked.has(o)));
        continue;
      }
      const kind = await nestedRepoKind(repo, abs);
      if (kind === 'commit') toAdd.push(dir);
      else skipped.push({ path: dir, reason: kind === 'other-format' ? 'nested-repo-other-format' : 'nested-repo-without-commit' });
      continue;
    }
    if (skipRestoreTemp(repo.worktree, rel)) continue;
    let st: fs.Stats;
    try {
      st = fs.lstatSync(fsPath(abs)); // a name that is not UTF-8 by its bytes (see splitNul)
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') continue; // deleted since listed
      // Its directory became unreadable since listed (or a name git's untracked cache still knows): listed, not fatal.
      if (code === 'EACCES' || code === 'EPERM' || code === 'ENAMETOOLONG') {
        skipped.push({ path: rel, reason: code === 'ENAMETOOLONG' ? 'path-too-long' : 'unreadable' });
        continue;
      }
      unreadable(rel, e);
    }
    const reason = classify(rel, st.size);
    if (reason) skipped.push({ path: rel, reason, size: st.size });
    else {
      toAdd.push(rel);
      bytes += st.size;
    }
  }
  return { bytes, readAsPlain };
}

/**
 * What git could not read is never silently left out (issue 13): listed as skipped, so a restore neither deletes
 * nor overwrites it; a tracked file it could not lstat is dropped from the tree rather than stay there with bytes
 * of an earlier read.
 */
function listUnread(
  unread: { path: string; reason: SkippedFile['reason']; dir?: boolean }[],
  skipped: SkippedFile[],
  drop: string[],
): void {
  for (const u of unread) {
    if (!skipped.some((x) => x.path === u.path)) skipped.push({ path: u.path, reason: u.reason });
    if (!u.dir) drop.push(u.path);
  }
}

/**
 * git cannot hold a symlinked .gitmodules: update-index ignores it ("Ignoring path"), leaving the old entry as if
 * nothing changed, and a tree with one fails `git fsck` (gitmodulesSymlink). Left out of the index and `toAdd`, listed.
 */
async function leaveOutSymlinkedGitmodules(repo: Repo, indexFile: string, candidates: string[], toAdd: string[], skipped: SkippedFile[]) {
  const linkedModules = candidates.filter((rel) => symlinkedGitmodules(repo.worktree, rel));
  if (linkedModules.length === 0) return;
  await removePaths(repo, indexFile, linkedModules);
  for (const rel of linkedModules) if (!skipped.some((x) => x.path === rel)) skipped.push({ path: rel, reason: 'gitmodules-symlink' });
  toAdd.splice(0, toAdd.length, ...toAdd.filter((rel) => !linkedModules.includes(rel)));
}

/**
 * The stat data this scan's git commands recorded (status's refresh, update-index, add) is trusted by the next
 * one unless the entry is racy: a file written again in place within the second of the ctime recorded, same size,
 * its mtime put back (utimes, touch -d, cp -p, rsync -a), keeps it, and the next snapshot took the old bytes. The
 * reference goes back to the oldest mtime of such an entry, as in inProcessSnapshot: where git compares ctimes,
 * of every entry whose recorded ctime is within RACY_MARGIN_MS of this scan (one walk); where it does not
 * (core.trustctime=false), of every entry whose stat data is not the user's index's (two walks: the user's
 * index is what a fresh copy would trust). Also for snapshots without the untracked cache (undo's safety
 * snapshot writes the session's index too).
 */
function keepScanRacyReference(
  repo: Repo,
  opts: SnapshotTreeOptions,
  cfg: GitConfig,
  scan: { scanStart: number; racyBefore: number | null; usedStatus: boolean },
): void {
  const { indexFile } = opts;
  const { scanStart, racyBefore, usedStatus } = scan;
  const oldest = recentStatOldest(repo, indexFile, cfg, scanStart);
  const entries = oldest === null || oldest === Infinity ? Infinity : Math.max(oldest, 2) * 1000;
  if (opts.untrackedCache)
    keepRacyReference(
      indexFile,
      Math.min(entries, usedStatus ? scanStart - RACY_MARGIN_MS : Math.min(scanStart - RACY_MARGIN_MS, racyBefore ?? Infinity)),
    );
  else keepRacyReference(indexFile, entries);
}

/**
 * Whether this scan may list through status with the untracked cache (see statusWithUntrackedCache): only where no
 * attribute can make git's refresh call a changed file clean. The marker names the tree it was checked for: anything
 * else that moved the session (undo writes restored entries into this index) falls back to the full scan, which
 * checks again.
 */
function statusScanTrusted(repo: Repo, opts: SnapshotTreeOptions, seeded: boolean): boolean {
  return (
    !!opts.untrackedCache &&
    !seeded &&
    !!opts.parentTree &&
    readMarker(opts.indexFile) === opts.parentTree &&
    !attributesFromConfig(repo, opts.settings)
  );
}

async function snapshotThroughIndex(repo: Repo, opts: SnapshotTreeOptions, seeded: boolean, cfg: GitConfig): Promise<TreeSnapshotResult> {
  const { indexFile, settings } = opts;
  // git's racy reference for the untracked cache this index holds (see keepRacyReference).
  const scanStart = Date.now();
  const racyBefore = opts.untrackedCache ? mtimeMs(indexFile) || null : null;

  // Tracked updates and the untracked listing do not depend on each other.
  // A freshly seeded private index equals the user's, so there is nothing to reconcile.
  // Both indexes are compared with HEAD (small outputs) rather than listed whole.
  const headTree = seeded ? emptyTree(repo) : ((await readHead(repo)).commit ?? emptyTree(repo));
  const noDiff: IndexVsTree = { extra: new Set(), missing: new Set() };
  const fast = statusScanTrusted(repo, opts, seeded);
  // Nothing wrote the index since the snapshot that left the marker (a
  // snapshot killed halfway, or an undo, would have): it holds exactly the
  // parent tree's entries, so that tree stands in for it against HEAD.
  const indexIsParentTree = fast && writtenBefore(indexFile, noAttributesMarker(indexFile));
  // A new session index is checked whole below (every attributed entry
  // re-hashed), which makes status's refresh exact for it too; listing
  // through status builds the untracked cache the next snapshot starts from.
  const usedStatus = fast || (seeded && !!opts.untrackedCache);
  const scan = scanDroppingIgnored(repo, indexFile, () =>
    usedStatus
      ? statusWithUntrackedCache(repo, indexFile).then(async (st) => ({
          untracked: st.untracked,
          reread: await updateTracked(repo, indexFile, st.changed),
          unread: st.unread,
        }))
      : Promise.all([listUntracked(repo, indexFile), addTracked(repo, indexFile)]).then(([u, t]) => ({
          untracked: u.paths,
          reread: t.reread,
          unread: [...u.unread, ...t.unread],
        })),
  );
  // Whether a new index holds .gitattributes files: asked beside the scan (it reads the seed, which the scan does not change).
  const attributesInSeed = seeded ? hasTransformingAttributes(repo, indexFile, settings) : null;
  attributesInSeed?.catch(() => {}); // awaited below; a failure surfaces there
  const [{ untracked, reread, unread }, privateVsHead, userVsHead] = await Promise.all([
    scan.catch(explainAddFailure),
    seeded
      ? noDiff
      : indexIsParentTree && opts.parentTree
        ? treeVsTree(repo, opts.parentTree, headTree)
        : indexVsTree(repo, indexFile, headTree),
    seeded ? noDiff : opts.untrackedCache ? userIndexVsTree(repo, indexFile, headTree) : indexVsTree(repo, null, headTree),
  ]);

  const classify = untrackedClassifier(settings);
  const skipped: SkippedFile[] = [];
  const toAdd: string[] = [];
  await listEnvironment(repo, indexFile, settings.environment, untracked, unread);
  const inEnvironment = environmentMatcher(settings.environment);
  const { drop, tracked, nested } = await reconcileWithUserIndex(repo, privateVsHead, userVsHead, classify, skipped, inEnvironment);
  // Each such nested repository is listed as ls-files lists one (`dir/`), and what git listed inside it goes.
  const insideNested = (rel: string) => nested.some((d) => rel.startsWith(`${d}/`));
  if (nested.length > 0) untracked.splice(0, untracked.length, ...untracked.filter((u) => !insideNested(u)), ...nested.map((d) => `${d}/`));
  listUnread(unread, skipped, drop);
  // A path the user tracks that is a FIFO or socket now cannot be added (see updateTracked): gone as a file.
  for (const rel of tracked) if (specialFile(repo.worktree, rel)) drop.push(rel);
  if (drop.length > 0) await removePaths(repo, indexFile, drop);
  toAdd.push(...tracked.filter((rel) => !drop.includes(rel)));
  const { bytes: untrackedBytes, readAsPlain } = await addUntracked(repo, untracked, new Set(tracked), classify, toAdd, skipped);
  await leaveOutSymlinkedGitmodules(repo, indexFile, [...new Set([...reread, ...toAdd])], toAdd, skipped);
  if (toAdd.length > 0) {
    // A first snapshot that takes long (a shadow repository's: every file is untracked) says how much it reads.
    opts.onProgress?.(`adding ${toAdd.length} files${untrackedBytes > 0 ? ` (${formatSize(untrackedBytes)} untracked)` : ''}`);
    await addPaths(repo, indexFile, toAdd).catch(explainAddFailure);
  }
  // The attributes of what was re-read or added are looked up beside write-tree (check-attr reads no private index).
  const known = new Set([...reread, ...toAdd]);
  const knownTransformed = !seeded && known.size > 0 ? transformedPaths(repo, settings, [...known]) : Promise.resolve([]);
  knownTransformed.catch(() => {}); // awaited below; a failure surfaces there
  let tree = await writeTree(repo, indexFile);
  let changed = opts.parentTree ? await diffTrees(repo, opts.parentTree, tree) : [];

  // Entries git may have transformed on the way in: all of them on a fresh
  // index (the user's index holds filtered blobs), else what git re-read or
  // what changed (a filter can map new bytes to the previous blob).
  const touched = [...new Set([...reread, ...toAdd, ...changed.map((c) => c.path)])];
  // An attributes file that appeared or changed ends the untracked-cache
  // path for this index. If this very snapshot took it, the attributes
  // applied to status's refresh already: every attributed entry is
  // re-checked, as on a fresh index.
  const attributesTouched = touched.some(isAttributesFile);
  if (attributesTouched) fs.rmSync(noAttributesMarker(indexFile), { force: true });
  // Asked at most once per snapshot (an ls-files of the whole index, ~30 ms at 100k files).
  // On a new index: what it was seeded with, or an attributes file this snapshot touched.
  let attributed: Promise<boolean> | undefined;
  const anyAttributes = () =>
    (attributed ??= attributesInSeed
      ? attributesInSeed.then((inSeed) => inSeed || attributesTouched)
      : hasTransformingAttributes(repo, indexFile, settings));
  let suspects: string[];
  if (seeded || (fast && attributesTouched)) {
    suspects = (await anyAttributes()) ? await transformedPaths(repo, settings, await allEntries(repo, indexFile)) : [];
  } else {
    const more = [...new Set(changed.filter((c) => c.change !== 'D' && !known.has(c.path)).map((c) => c.path))];
    suspects = [...(await knownTransformed), ...(more.length > 0 ? await transformedPaths(repo, settings, more) : [])];
  }
  if (suspects.length > 0 && (await keepExactBytes(repo, indexFile, suspects))) {
    tree = await writeTree(repo, indexFile);
    if (opts.parentTree) changed = await diffTrees(repo, opts.parentTree, tree);
  }
  // git's untracked cache can take a directory it could not open for an empty one, and say nothing
  // the next time: the next snapshot lists the worktree without it (no marker), and so on while anything is unreadable.
  const blind = skipped.some((x) => x.reason === 'unreadable' || x.reason === 'path-too-long');
  if (blind) {
    subsumeUnreadBelow(skipped);
    fs.rmSync(noAttributesMarker(indexFile), { force: true });
    await dropUntrackedCache(repo, indexFile);
  } else if (nested.length > 0 || readAsPlain) {
    // A directory this snapshot turned from plain into a nested repository (its paths dropped from this index), or
    // back: git's untracked cache still lists it as it was while the index said otherwise, and a later status
    // trusts that once the directory is past the racy margin (generative seed 19102: d/c.txt and d/n.txt taken
    // from a nested repository every other snapshot). The next status builds the cache anew.
    await dropUntrackedCache(repo, indexFile);
  }
  keepScanRacyReference(repo, opts, cfg, { scanStart, racyBefore, usedStatus });
  if (opts.untrackedCache && !blind && !attributesTouched && (fast || !(await anyAttributes()))) {
    replaceStateFile(noAttributesMarker(indexFile), tree);
  }
  keepPrivate(indexFile);
  return { tree, skipped, seeded, changed };
}

/**
 * git tells a directory changed since the untracked cache listed it by its
 * stat data, and one changed again within the same timestamp tick (second
 * granularity unless git is built with USE_NSEC) by the index file's mtime:
 * a directory whose cached mtime is not older than the index is re-read
 * (racy, as for entries). git does not smudge cached directories when it
 * writes the index, so update-index and write-tree after the status moved
 * that mtime past the tick, and the stale listing was trusted from then on:
 * a new untracked file was missing from every later snapshot, a directory
 * removed was reported as unreadable (issue 13, generative seed 203). The
 * index's mtime is set back to before the scan read the directories (a
 * margin for coarse and 2 s clocks): only recently changed directories and
 * entries are read again by the next status.
 */
const RACY_MARGIN_MS = 3000;

/**
 * The oldest mtime (whole seconds) of an entry of the session's own index a
 * rewrite that keeps its stat data would leave trusted (see snapshotThroughIndex);
 * Infinity when none; null when the index is not read in-process (then as before).
 */
function recentStatOldest(repo: Repo, indexFile: string, cfg: GitConfig, scanStart: number): number | null {
  if (ctimeCompared(cfg)) return oldestRecentMtime(indexFile, repo.objectFormat, Math.floor((scanStart - RACY_MARGIN_MS) / 1000));
  // The user's index not read in-process (split): every entry counts, the next snapshot re-reads each file.
  return (
    oldestUnlikeMtime(indexFile, repo.objectFormat, path.join(repo.gitDir, 'index')) ?? oldestRecentMtime(indexFile, repo.objectFormat, 0)
  );
}

/**
 * Runs `write` (git commands that write the private index without reading
 * files into it: recordApplied's update-index --index-info and write-tree)
 * and sets the index's mtime back to what it was before: git's racy
 * reference the last snapshot left (see snapshotThroughIndex) still holds
 * for the stat data that snapshot recorded, which a new index file's mtime
 * (now) would make trusted.
 */
export async function keepingRacyReference<T>(indexFile: string, write: () => Promise<T>): Promise<T> {
  const before = mtimeMs(indexFile);
  const res = await write();
  if (before >= 2000) keepRacyReference(indexFile, before);
  return res;
}

function keepRacyReference(indexFile: string, notAfterMs: number): void {
  try {
    const st = fs.statSync(indexFile);
    if (st.mtimeMs > notAfterMs) fs.utimesSync(indexFile, st.atime, new Date(notAfterMs));
  } catch (e) {
    // No index yet (an empty worktree); a time that cannot be set would let a racy entry be trusted.
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
}

/**
 * The scan re-reads every stat-dirty entry of the private index before
 * reconcileWithUserIndex drops the entries the user does not track that the
 * rules ignore now, so one of those that could not be read failed every
 * snapshot (a file the session's index held, chmod 000, then ignored:
 * generative seed 203, nocaps). Such a file leaves the private index and the
 * scan runs again; one check-ignore, only on that failure.
 */
async function scanDroppingIgnored<T>(repo: Repo, indexFile: string, run: () => Promise<T>): Promise<T> {
  for (let tries = 0; ; tries++) {
    try {
      return await run();
    } catch (e) {
      let err: unknown = e;
      try {
        explainAddFailure(e);
      } catch (x) {
        err = x;
      }
      const rel = isAgentsnapError(err) && err.code === 'UnreadableFile' ? String(err.data?.path ?? '') : '';
      if (!rel || tries >= 100 || !(await ignoredPaths(repo, [rel], { readIndex: true })).has(rel)) throw err;
      await removePaths(repo, indexFile, [rel]);
    }
  }
}

/** git writes an index with the umask's mode: the private index lists the user's files, so only they may read it. */
export function keepPrivate(indexFile: string): void {
  try {
    fs.chmodSync(indexFile, 0o600);
  } catch (e) {
    // No index yet (an empty worktree); anything else would leave the user's file list readable to others.
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
}

/**
 * The user's index compared with HEAD, remembered next to the private index
 * and reused while the user's index file and HEAD are the ones it was taken
 * from: git replaces the index file on every write (lock file and rename), so
 * inode, size and nanosecond times change with any change of its content.
 * Saves reading the user's whole index on every snapshot (~0.1-0.2 s at 100k).
 */
async function userIndexVsTree(repo: Repo, indexFile: string, headTree: string): Promise<IndexVsTree> {
  const cacheFile = `${indexFile}.user-vs-head`;
  let key: string | null = null;
  try {
    const st = fs.statSync(path.join(repo.gitDir, 'index'), { bigint: true });
    key = [st.dev, st.ino, st.size, st.mtimeNs, st.ctimeNs, headTree].join(' ');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e; // ENOENT: no index yet, nothing to remember
  }
  if (key !== null) {
    try {
      const cached = JSON.parse(readStateFile(cacheFile)?.toString('utf8') ?? 'null') as {
        key: string;
        extra: string[];
        missing: string[];
      } | null;
      if (cached && cached.key === key) return { extra: new Set(cached.extra), missing: new Set(cached.missing) };
    } catch {
      // Missing or unreadable: compute it.
    }
  }
  const res = await indexVsTree(repo, null, headTree);
  if (key !== null) {
    replaceStateFile(cacheFile, JSON.stringify({ key, extra: [...res.extra], missing: [...res.missing] }));
  }
  return res;
}

/**
 * Next to the private index: holds the tree of its last snapshot when that
 * snapshot found no attribute or config that transforms content on the way
 * into git, which is what makes the untracked-cache path
 * (statusWithUntrackedCache) exact for the next one.
 */
function noAttributesMarker(indexFile: string): string {
  return `${indexFile}.no-attributes`;
}

/** Whether file `a` was last written strictly before file `b` (nanoseconds; a coarse clock says no). */
function writtenBefore(a: string, b: string): boolean {
  try {
    return fs.statSync(a, { bigint: true }).mtimeNs < fs.statSync(b, { bigint: true }).mtimeNs;
  } catch {
    return false; /* either gone: not known to be older, so not trusted */
  }
}

function readMarker(indexFile: string): string | null {
  try {
    return readStateFile(noAttributesMarker(indexFile))?.toString('utf8') ?? null;
  } catch {
    return null; /* a foreign marker (a link): as none, attributes are checked */
  }
}

/** Whether rel is a .gitmodules that is a symlink on disk (git refuses to record one). */
function symlinkedGitmodules(worktree: string, rel: string): boolean {
  if (rel !== '.gitmodules' && !rel.endsWith('/.gitmodules')) return false;
  try {
    return fs.lstatSync(fsPath(path.join(worktree, rel))).isSymbolicLink();
  } catch {
    return false; // not there: not a symlink
  }
}

function isAttributesFile(rel: string): boolean {
  return rel === '.gitattributes' || rel.endsWith('/.gitattributes');
}

/** Attribute sources outside the worktree's files (checked on every snapshot: no git process). */
function attributesFromConfig(repo: Repo, settings: Settings): boolean {
  return (
    autocrlfOn(settings) ||
    !!settings.attributesFile ||
    fs.existsSync(path.join(repo.commonDir, 'info', 'attributes')) ||
    defaultAttributesFiles(repo).some((f) => fs.existsSync(f))
  );
}

/**
 * The attributes files git reads without being told to: where core.attributesFile is not set,
 * $XDG_CONFIG_HOME/git/attributes (else $HOME/.config/git/attributes), and the system's
 * (/etc/gitattributes for git built with prefix /usr) unless GIT_ATTR_NOSYSTEM.
 */
function defaultAttributesFiles(repo: Repo): string[] {
  const env = repo.env;
  const out: string[] = [];
  const xdg = env.XDG_CONFIG_HOME ? env.XDG_CONFIG_HOME : env.HOME ? path.join(env.HOME, '.config') : null;
  if (xdg) out.push(path.join(xdg, 'git', 'attributes'));
  const noSystem = (env.GIT_ATTR_NOSYSTEM ?? '').trim().toLowerCase();
  if (!['1', 'true', 'yes', 'on'].includes(noSystem)) out.push('/etc/gitattributes');
  return out;
}

/**
 * One `git status -uall` on the private index: tracked paths whose worktree
 * side differs, and the untracked files listed through git's untracked cache
 * (UNTR), which re-reads only directories whose mtime changed (at 100k files
 * ~40 ms instead of ~0.5 s for `ls-files -o`, which never uses the cache in
 * git 2.39). GIT_OPTIONAL_LOCKS=1 (the index is agentsnap's own) writes the
 * cache and the refreshed stat data back, so the next call starts warm.
 *
 * The refresh calls a stat-dirty file clean when its *filtered* content
 * equals the stored blob. The private index stores raw bytes, so that is
 * exact only where no attribute transforms content; the caller uses this
 * path only then, and re-checks every attributed entry when an attributes
 * file shows up among the changes.
 */
async function statusWithUntrackedCache(
  repo: Repo,
  indexFile: string,
  writeBack = true,
  prefetched: Promise<Buffer | null> | null = null,
): Promise<{ changed: string[]; untracked: string[]; unmerged: boolean; unread: UnreadPath[] }> {
  // The same command the executable may have started already on the identical user's index (status-prefetch.ts;
  // one that printed anything on stderr, such as a directory it could not read, is not taken).
  const early = prefetched ? await prefetched : null;
  const res = early
    ? { stdout: early, stderr: '' }
    : await repo.git(snapshotStatusArgs(writeBack), { extraEnv: { ...indexEnv(indexFile), GIT_OPTIONAL_LOCKS: writeBack ? '1' : '0' } });
  // git's untracked cache records an ignore file it could not read like one that does not exist (a null oid)
  // and, while its directory's stat data stays (a chmod changes only the file's), never reads it again: once
  // readable, its rules were ignored by every later status (issue 13, generative seed 208). Dropped at once,
  // before anything else can fail: the next status builds the cache anew.
  if (writeBack && !early && /^warning: unable to access '/m.test(res.stderr)) await dropUntrackedCache(repo, indexFile);
  const changed: string[] = [];
  const untracked: string[] = [];
  let unmerged = false;
  for (const rec of splitNul(res.stdout)) {
    switch (rec[0]) {
      case '1': // 1 XY sub mH mI mW hH hI path
        if (rec[3] !== '.') changed.push(afterFields(rec, 8));
        break;
      case 'u': // u XY sub m1 m2 m3 mW h1 h2 h3 path: unmerged (index seeded mid-merge)
        changed.push(afterFields(rec, 10));
        unmerged = true;
        break;
      case '?':
        untracked.push(rec.slice(2));
        break;
      default: // no renames asked for; '!' and '#' are not asked for
    }
  }
  return { changed, untracked, unmerged, unread: unreadFromStderr(res.stderr) };
}

/**
 * An unreadable (or too deep) directory stands for everything below it: the
 * paths under it that this index happened to know are dropped from the list,
 * so every index lists the same (restore keeps what is below a skipped
 * directory either way).
 */
function subsumeUnreadBelow(skipped: SkippedFile[]): void {
  const dirs = new Set(skipped.filter((x) => x.reason === 'unreadable' || x.reason === 'path-too-long').map((x) => x.path));
  const below = (p: string) => {
    for (let i = p.lastIndexOf('/'); i > 0; i = p.lastIndexOf('/', i - 1)) if (dirs.has(p.slice(0, i))) return true;
    return false;
  };
  for (let i = skipped.length - 1; i >= 0; i--) if (below(skipped[i]!.path)) skipped.splice(i, 1);
}

/** Removes git's untracked cache from an index (the next status that writes it back builds a new one). */
async function dropUntrackedCache(repo: Repo, indexFile: string): Promise<void> {
  if (!fs.existsSync(indexFile)) return;
  await repo.git(['-c', 'core.untrackedCache=false', 'update-index', '--no-untracked-cache'], { extraEnv: indexEnv(indexFile) });
}

/** The rest of `rec` after its first `n` space-separated fields (paths may contain spaces). */
function afterFields(rec: string, n: number): string {
  let at = 0;
  for (let i = 0; i < n; i++) at = rec.indexOf(' ', at) + 1;
  return rec.slice(at);
}

/**
 * The private index outlives the moment a file was first added, so entries
 * that only agentsnap tracks (untracked files of earlier snapshots) are
 * checked again every time: ignored by now, excluded, over the cap or a
 * secret (e.g. after `git rm --cached`) means they drop out, and a skip is
 * listed. Paths the user tracks but the private index lacks (added or
 * force-added after the session started) are returned to be added. Files the
 * user tracks are never classified.
 */
async function reconcileWithUserIndex(
  repo: Repo,
  priv: IndexVsTree,
  user: IndexVsTree,
  classify: Classifier,
  skipped: SkippedFile[],
  inEnvironment: (rel: string) => boolean,
): Promise<{ drop: string[]; tracked: string[]; nested: string[] }> {
  const linked = new Map<string, boolean>();
  // A file the user tracks that is now a plain directory is gone as a file
  // (its new contents are untracked files); update-index refuses to add a
  // directory that is not a repository.
  const present = (p: string) => {
    const abs = path.join(repo.worktree, p);
    try {
      fs.lstatSync(fsPath(abs));
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      // Not there, or not readable: listed as such (never silently left out).
      if (code !== 'ENOENT' && code !== 'ENOTDIR')
        skipped.push({ path: p, reason: code === 'ENAMETOOLONG' ? 'path-too-long' : 'unreadable' });
      return false;
    }
    return !behindSymlink(repo.worktree, p, linked) && !(isDirectory(abs) && !lexists(path.join(abs, '.git')));
  };
  // Only in the private index: added there and not by the user, or removed by the user (`git rm --cached`) but still there.
  const onlyPrivate = [...priv.extra].filter((p) => !user.extra.has(p)).concat([...user.missing].filter((p) => !priv.missing.has(p)));
  const ours = onlyPrivate.filter((p) => !behindSymlink(repo.worktree, p, linked));
  // Only in the user's index: staged new there, or in HEAD and kept by the user but gone from the private index.
  const onlyUser = [...user.extra].filter((p) => !priv.extra.has(p)).concat([...priv.missing].filter((p) => !user.missing.has(p)));
  const tracked = onlyUser.filter(present);
  if (ours.length === 0) return { drop: [], tracked, nested: [] };
  // An environment directory's files are snapshotted whatever the rules say (agentsnap.environment).
  const ignored = await ignoredPaths(
    repo,
    ours.filter((p) => !inEnvironment(p)),
  );
  const drop: string[] = [];
  // A path only the private index has, below a directory that holds a .git now and where the user's index tracks
  // nothing: git reads that directory as a nested repository (the private index took the path before `git init`).
  const nested = new Set<string>();
  const holdsGit = new Map<string, boolean>();
  const nestedAbove = async (rel: string): Promise<string | null> => {
    for (let i = rel.indexOf('/'); i > 0; i = rel.indexOf('/', i + 1)) {
      const dir = rel.slice(0, i);
      let known = holdsGit.get(dir);
      if (known === undefined) {
        known = lexists(path.join(repo.worktree, dir, '.git')) && (await userIndexBelow(repo, dir)).tracked.length === 0;
        holdsGit.set(dir, known);
      }
      if (known) return dir;
    }
    return null;
  };
  for (const rel of ours) {
    const inNested = await nestedAbove(rel);
    if (inNested !== null) {
      nested.add(inNested);
      drop.push(rel);
      continue;
    }
    if (ignored.has(rel)) {
      drop.push(rel);
      continue;
    }
    let st: fs.Stats;
    try {
      st = fs.lstatSync(fsPath(path.join(repo.worktree, rel)));
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') continue; // deleted: `add --update` already removed it
      // Below a directory this process cannot search (chmod 000, not root): not known, so not recorded (never
      // its old bytes guessed) and listed, as `present` lists a tracked one.
      drop.push(rel);
      const listedAbove = skipped.some((k) => k.reason === 'unreadable' && rel.startsWith(`${k.path}/`));
      if (!listedAbove) skipped.push({ path: rel, reason: code === 'ENAMETOOLONG' ? 'path-too-long' : 'unreadable' });
      continue;
    }
    if (st.isDirectory()) continue; // a nested repository's gitlink
    const reason = classify(rel, st.size);
    if (reason) {
      drop.push(rel);
      skipped.push({ path: rel, reason, size: st.size });
    }
  }
  // A nested repository in a directory the rules leave out is not there for git status (seed 19004): its
  // paths went above, as dropped; it is neither listed nor skipped.
  for (const dir of await ignoredPaths(repo, [...nested])) nested.delete(dir);
  return { drop, tracked, nested: [...nested] };
}

function isDirectory(abs: string): boolean {
  try {
    return fs.lstatSync(fsPath(abs)).isDirectory();
  } catch {
    return false; /* gone, or under a directory that cannot be searched: not known to be a directory */
  }
}

/** Whether anything is at `abs`, a dangling symlink included (fs.existsSync follows links). */
function lexists(abs: string): boolean {
  try {
    fs.lstatSync(fsPath(abs));
    return true;
  } catch {
    return false; /* gone, or not searchable: as absent (the caller's git sees it the same way) */
  }
}

/** Attribute names whose presence means git may change bytes on the way in. */
const TRANSFORMING_ATTRS = ['text', 'eol', 'crlf', 'filter', 'ident', 'working-tree-encoding'];

function autocrlfOn(settings: Settings): boolean {
  return !!settings.autocrlf && !['false', 'no', 'off', '0'].includes(settings.autocrlf.toLowerCase());
}

async function hasTransformingAttributes(repo: Repo, indexFile: string, settings: Settings): Promise<boolean> {
  return (
    attributesFromConfig(repo, settings) ||
    (await repo.git(['ls-files', '-z', '--', ':(glob)**/.gitattributes'], { extraEnv: indexEnv(indexFile) })).stdout.length > 0
  );
}

async function allEntries(repo: Repo, indexFile: string): Promise<string[]> {
  const res = await repo.git(['ls-files', '-z'], { extraEnv: indexEnv(indexFile) });
  return splitNul(res.stdout);
}

/** Of `paths`, those whose attributes (or core.autocrlf) may transform content. */
async function transformedPaths(repo: Repo, settings: Settings, paths: string[]): Promise<string[]> {
  if (paths.length === 0) return [];
  const res = await repo.git(['check-attr', '-z', '--stdin', ...TRANSFORMING_ATTRS], { input: pathsInput(paths) });
  const tokens = splitNul(res.stdout);
  const hit = new Set<string>();
  const auto = autocrlfOn(settings);
  for (let i = 0; i + 2 < tokens.length + 1; i += 3) {
    const p = tokens[i];
    const attr = tokens[i + 1];
    const value = tokens[i + 2];
    if (p === undefined || attr === undefined || value === undefined) break;
    if (value === 'unspecified') {
      if (attr === 'text' && auto) hit.add(p);
      continue;
    }
    if (value === 'unset') continue;
    hit.add(p);
  }
  return paths.filter((p) => hit.has(p));
}

interface IndexEntry {
  mode: string;
  oid: string;
  path: string;
}

async function readEntries(repo: Repo, indexFile: string, paths: string[]): Promise<IndexEntry[]> {
  if (paths.length === 0) return [];
  // ls-files takes no --pathspec-from-file (git 2.39): literal paths as arguments, in chunks under ARG_MAX.
  const records: string[] = [];
  for (const chunk of argChunks(paths)) {
    const res = await repo.git(['ls-files', '-s', '-z', '--', ...chunk], {
      extraEnv: { ...indexEnv(indexFile), GIT_LITERAL_PATHSPECS: '1' },
    });
    records.push(...splitNul(res.stdout));
  }
  const out: IndexEntry[] = [];
  for (const rec of records) {
    const tab = rec.indexOf('\t');
    const [mode, oid, stage] = rec.slice(0, tab).split(' ');
    if (!mode || !oid || stage !== '0') continue;
    out.push({ mode, oid, path: rec.slice(tab + 1) });
  }
  return out;
}

export { hashRaw, stdinPathSafe } from './tree-editor.js';

/**
 * git applies .gitattributes (eol normalisation, clean filters such as LFS,
 * ident, working-tree-encoding) and core.autocrlf when content enters the
 * index. A snapshot holds the bytes as they are on disk, so entries that may
 * have been transformed (`suspects`, from transformedPaths) are re-hashed
 * with --no-filters and replaced where they differ. Returns whether the
 * index changed.
 */
async function keepExactBytes(repo: Repo, indexFile: string, suspects: string[]): Promise<boolean> {
  if (suspects.length === 0) return false;
  const entries = (await readEntries(repo, indexFile, suspects)).filter((e) => e.mode === '100644' || e.mode === '100755');
  if (entries.length === 0) return false;
  let raw: string[];
  try {
    raw = await hashRaw(
      repo,
      entries.map((e) => e.path),
    );
  } catch (e) {
    explainAddFailure(e);
  }
  const hashed = entries.map((e, i) => ({ ...e, raw: raw[i] ?? '' }));
  const fixes = hashed.filter((e) => e.raw && e.raw !== e.oid);
  // git trusts a racily clean entry (file modified in the second the index
  // was written) after comparing its *filtered* content with the stored
  // blob, which here is the raw one: a rewrite the filter maps to the same
  // bytes would go unseen. Re-setting such entries clears their stat data, so
  // the next snapshot reads them again.
  const racySince = Date.now() - RACY_WINDOW_MS;
  const racy = hashed.filter((e) => e.raw === e.oid && mtimeMs(path.join(repo.worktree, e.path)) >= racySince);
  const lines = [...fixes, ...racy].map((e) => `${e.mode} ${e.raw}\t${e.path}`);
  if (lines.length === 0) return false;
  await repo.git(['update-index', '-z', '--index-info'], { extraEnv: indexEnv(indexFile), input: lines.join('\0') + '\0' });
  return fixes.length > 0;
}

/** git compares whole-second mtimes; two seconds cover the index write that follows. */
const RACY_WINDOW_MS = 2000;

function mtimeMs(abs: string): number {
  try {
    return fs.lstatSync(abs).mtimeMs;
  } catch {
    return 0; /* gone or not searchable: no time, so nothing is taken as racily clean by it */
  }
}

/**
 * Next to the private index while it is an unwritten copy of the user's
 * index (only git status's refresh and untracked cache added): the stat keys
 * of both files then, so any other write of either shows.
 */
function userCopyFile(indexFile: string): string {
  return `${indexFile}.user-copy`;
}

/** `base`: the tree of the copy's entries (write-tree's), when the record has it and the copy is valid. */
function userCopyState(indexFile: string, userKey: string): { state: 'valid' | 'stale' | 'none'; base: string | null } {
  let state: { user: string; priv: string; base?: unknown };
  try {
    const parsed = JSON.parse(readStateFile(userCopyFile(indexFile))?.toString('utf8') ?? 'null') as {
      user: string;
      priv: string;
      base?: unknown;
    } | null;
    if (!parsed) return { state: 'none', base: null };
    state = parsed;
  } catch {
    return { state: 'none', base: null }; /* a torn or foreign record: as none (the copy is seeded again) */
  }
  if (state.user !== userKey || state.priv !== statKey(indexFile)) return { state: 'stale', base: null };
  return { state: 'valid', base: typeof state.base === 'string' && /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/.test(state.base) ? state.base : null };
}

/**
 * Whether the tree `oid` is a loose object, whose mtime it then moves to now
 * (as git's write-tree freshens an object it finds): a base tree no commit
 * holds (the snapshot added untracked files to it) is unreachable, and a
 * prune's expiry counts from that mtime. Packed or gone: write-tree instead.
 */
function freshenLoose(objectsDir: string, oid: string): boolean {
  const file = path.join(objectsDir, oid.slice(0, 2), oid.slice(2));
  try {
    const now = new Date();
    fs.utimesSync(file, now, now);
    return true;
  } catch {
    return false; /* not loose (packed, or gone): the caller checks the tree another way */
  }
}

/** HEAD's tree; null on an unborn branch or an unreadable HEAD. */
async function headTree(repo: Repo): Promise<string | null> {
  const res = await repo.git(['rev-parse', '-q', '--verify', 'HEAD^{tree}'], { okCodes: [1, 128] });
  return res.code === 0 ? res.stdout.toString('utf8').trim() : null;
}

/** Removes the private index and what was kept about it, so the next step seeds a fresh copy. */
export function discardPrivateIndex(indexFile: string): void {
  for (const f of [
    indexFile,
    noAttributesMarker(indexFile),
    `${indexFile}.user-vs-head`,
    userCopyFile(indexFile),
    oldestFile(indexFile),
    noFlagsMarker(indexFile),
  ])
    fs.rmSync(f, { force: true });
}

/**
 * Next to a private index once it holds no skip-worktree or assume-unchanged
 * entry (clearIndexFlags): only a copy of the user's index brings them in.
 */
export function noFlagsMarker(indexFile: string): string {
  return `${indexFile}.no-flags`;
}

/**
 * A private index copied from the user's keeps the user's skip-worktree and
 * assume-unchanged flags, under which git never reads those files: a
 * snapshot would record the index's bytes, not the disk's (issue 13). The
 * flags are cleared in the private index only (the user's keeps them), once
 * per copy: an index with the marker has none (~20 ms to read 100k entries
 * otherwise). Entries a sparse checkout left off the disk then read as
 * deleted, which is what is on disk.
 */
async function clearIndexFlags(repo: Repo, indexFile: string): Promise<void> {
  const marker = noFlagsMarker(indexFile);
  if (fs.existsSync(marker) || !fs.existsSync(indexFile)) return;
  let skip: Buffer[];
  let assume: Buffer[];
  const inProcess = readIndexFlags(indexFile, repo.objectFormat);
  // A sparse index (directory entries) is expanded by git: index.sparse=false keeps it full when written.
  const cfg = ['-c', 'index.sparse=false'];
  if (inProcess) ({ skipWorktree: skip, assumeUnchanged: assume } = inProcess);
  else {
    skip = [];
    assume = [];
    const res = await repo.git([...cfg, 'ls-files', '-v', '-z'], { extraEnv: indexEnv(indexFile) });
    for (const rec of splitNul(res.stdout)) {
      const tag = rec.slice(0, 1);
      const name = Buffer.from(rec.slice(2));
      if (tag === 'S' || tag === 's') skip.push(name);
      if (tag !== tag.toUpperCase()) assume.push(name);
    }
  }
  const nul = Buffer.from([0]);
  const input = (names: Buffer[]) => Buffer.concat(names.flatMap((n) => [n, nul]));
  // update-index applies one of the two options per path: one call each.
  if (skip.length > 0)
    await repo.git([...cfg, 'update-index', '--no-skip-worktree', '-z', '--stdin'], { extraEnv: indexEnv(indexFile), input: input(skip) });
  if (assume.length > 0)
    await repo.git([...cfg, 'update-index', '--no-assume-unchanged', '-z', '--stdin'], {
      extraEnv: indexEnv(indexFile),
      input: input(assume),
    });
  replaceStateFile(marker, '');
}

/** Whether git's stat check compares ctimes (core.trustctime, core.checkStat=minimal). */
function ctimeCompared(cfg: GitConfig): boolean {
  // As git reads the boolean: `trustctime =` (empty) and `0k` are false too. A value git rejects fails its commands;
  // counted as not compared here (whichever the walk, the status then fails).
  const trust = lastValue(cfg, 'core.trustctime');
  if (trust !== undefined && gitBool(trust) !== true) return false;
  return (lastValue(cfg, 'core.checkstat') ?? '').toLowerCase() !== 'minimal';
}

/** Dirty paths (changed tracked + untracked) above which git's own update-index and write-tree take over. */
export const MAX_IN_PROCESS_PATHS = 3000;

type InProcessFile = { rel: string; symlink: boolean };

/**
 * What update-index would make of each changed tracked path (removed, or a file to hash), and what the full path
 * does with each untracked file (see snapshotThroughIndex); the reason instead where the in-process path declines.
 */
function inProcessDirtyPaths(
  repo: Repo,
  st: { changed: string[]; untracked: string[] },
  settings: Settings,
): { removed: string[]; files: InProcessFile[]; skipped: SkippedFile[] } | string {
  const removed: string[] = [];
  const files: InProcessFile[] = [];
  const linked = new Map<string, boolean>();
  for (const rel of st.changed) {
    if (behindSymlink(repo.worktree, rel, linked)) {
      removed.push(rel);
      continue;
    }
    let s: fs.Stats;
    try {
      s = fs.lstatSync(path.join(repo.worktree, rel));
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') return `cannot stat ${rel} (${code})`;
      removed.push(rel);
      continue;
    }
    if (s.isDirectory())
      removed.push(rel); // its files are untracked ones
    else if (s.isFile() || s.isSymbolicLink()) files.push({ rel, symlink: s.isSymbolicLink() });
    else return `tracked path ${rel} is neither a file nor a symlink`;
  }
  const classify = untrackedClassifier(settings);
  const skipped: SkippedFile[] = [];
  for (const rel of st.untracked) {
    if (skipRestoreTemp(repo.worktree, rel)) continue;
    let s: fs.Stats;
    try {
      s = fs.lstatSync(path.join(repo.worktree, rel));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue; // deleted since listed
      return `cannot stat ${rel}`;
    }
    if (!s.isFile() && !s.isSymbolicLink()) return `untracked ${rel} is neither a file nor a symlink`;
    const reason = classify(rel, s.size);
    if (reason) skipped.push({ path: rel, reason, size: s.size });
    else files.push({ rel, symlink: s.isSymbolicLink() });
  }
  return { removed, files, skipped };
}

/** `baseTree` with `removed` taken out and `files` hashed in, written in-process; the reason instead where that fails. */
async function inProcessTree(
  repo: Repo,
  store: NonNullable<ReturnType<typeof objectStore>>,
  baseTree: string,
  removed: string[],
  files: InProcessFile[],
): Promise<{ tree: string } | string> {
  const reader = new ObjectReader(repo);
  try {
    const editor = new TreeEditor(reader, store, baseTree);
    for (const rel of removed) await editor.remove(rel);
    const leaves: (Leaf | null | string)[] = [];
    for (const f of files) leaves.push(await blobOf(repo, store, f.rel, f.symlink));
    for (const [i, f] of files.entries()) {
      const leaf = leaves[i];
      if (typeof leaf === 'string') return leaf;
      if (leaf) await editor.set(f.rel, leaf);
    }
    return { tree: editor.write() };
  } catch (e) {
    return `in-process tree failed: ${(e as Error).message}`;
  } finally {
    await reader.close();
  }
}

/**
 * The snapshot of a private index that is a copy of the user's index,
 * written without writing any index: the base tree is `git write-tree` of
 * the copy (cheap while the user's cache-tree is valid), the dirty paths are
 * what `git status` on the copy reports (changed or deleted tracked paths,
 * untracked files), and the tree of those is built in-process on top of the
 * base. The copy is kept (with the untracked cache and stat data status
 * wrote) for the next snapshot. Returns the reason instead wherever the
 * result could differ from git's own path (snapshotThroughIndex): content
 * transforming attributes or config, flagged, unmerged or gitlink entries,
 * nested repositories, names that are not UTF-8, too many dirty paths.
 */
async function inProcessSnapshot(
  repo: Repo,
  opts: SnapshotTreeOptions,
  userKey: string,
  seeded: boolean,
  knownBase: string | null,
): Promise<TreeSnapshotResult | string> {
  const { indexFile, settings } = opts;
  const cfg = settings.gitConfig;
  if (!cfg) return 'git config not known';
  if (settings.environment.length > 0) return 'environment directories (agentsnap.environment)';
  if (attributesFromConfig(repo, settings)) return 'attributes or core.autocrlf from config';
  const why = unsupportedConfig(cfg);
  if (why) return why;
  const store = objectStore(repo, cfg);
  if (!store) return 'objects cannot be written in-process';
  if (!fs.existsSync(indexFile)) return 'no index yet';
  // The copy's entries did not change since the last snapshot wrote down their tree (status writes only stat data and
  // its untracked cache): that tree again, without a write-tree of 100k entries (seconds without a valid cache-tree,
  // as after a fresh `git add` of everything). Else write-tree, which locks the index it reads (as status does): it
  // gets a copy of its own.
  // A known base that is packed is reused when it is HEAD's tree (reachable: nothing to freshen), as when the user's
  // index matches HEAD and HEAD is packed, the common case; asked beside the status (at 1M files the write-tree
  // and its copy of the 140 MB index took ~1.2 s beside a 2.7 s status).
  const copyAndWrite = (): Promise<string> => {
    // Copied now, maybe while the status replaces the file: git replaces an index whole, the entries are the same.
    const baseCopy = `${indexFile}.base-${process.pid}`;
    copyToFreshStateFile(indexFile, baseCopy);
    return writeTree(repo, baseCopy).finally(() => unlinkQuiet(baseCopy));
  };
  const base =
    knownBase === null
      ? copyAndWrite()
      : freshenLoose(store.objectsDir, knownBase)
        ? Promise.resolve(knownBase)
        : headTree(repo).then((tree) => (tree === knownBase ? knownBase : copyAndWrite()));
  const writeBack = !seeded || opts.warmCopy !== false;
  // A fresh copy not written back: the status of the user's index itself, if the executable started it.
  // It ran without this repository's overrides: of those only the filters switched off can be left here
  // (core.ignoreCase declined above), and they change nothing where this path keeps its result (it
  // declines wherever an attributes file or attributes config could name a filter).
  const prefetched = writeBack ? null : takeStatusPrefetch(repo, userKey, snapshotStatusArgs(false));
  // git writes the copy back after its status read the directories and refreshed the entries, a tick later when the
  // status crossed a second: that mtime is no racy reference for what it read (a directory changed again within its
  // cached tick was trusted by every later status of this copy, and of a new session's copy of it). As the full
  // path's (keepRacyReference), it is set back to before the status began, whatever the snapshot then does.
  // And back to the oldest mtime of an entry whose stat data this copy's statuses refreshed (it differs from the
  // user's), as adoptDonor does for a new session: git trusts such an entry by its stat data unless its mtime is not
  // older than the index, and a file written again within the second of the ctime the status recorded, same size,
  // its mtime put back (utimes, touch -d, cp -p, rsync -a), keeps that stat data, so the next snapshot of this
  // session took the old bytes while a fresh copy of the user's index (its stat data the user's) reads the file.
  // Where git compares ctimes, a later write shows by its ctime's second unless the recorded ctime is recent: there,
  // every entry whose recorded ctime is within RACY_MARGIN_MS of the status counts, refreshed or not (one walk of
  // the copy, no second index; a stale user index is not re-read whole at every snapshot). Where git does not
  // (core.trustctime=false, core.checkStat=minimal), every entry whose stat data differs from the user's. Where
  // that cannot be told, the copy is not kept (the next snapshot seeds a new one).
  const statusStart = Date.now();
  const ctimeSince = ctimeCompared(cfg) ? Math.floor((statusStart - RACY_MARGIN_MS) / 1000) : null;
  let keepCopy = true;
  const status = statusWithUntrackedCache(repo, indexFile, writeBack, prefetched).finally(() => {
    if (!writeBack) return;
    const oldest =
      ctimeSince !== null
        ? oldestRecentMtime(indexFile, repo.objectFormat, ctimeSince)
        : oldestRefreshedMtime(indexFile, repo.objectFormat, path.join(repo.gitDir, 'index'));
    // (An index mtime of 0 would switch git's racy checks off.)
    if (oldest === null || oldest < 2) keepCopy = false;
    keepRacyReference(indexFile, Math.min(statusStart - RACY_MARGIN_MS, (oldest ?? Infinity) * 1000));
  });
  const settled = () => Promise.allSettled([base, status]);
  // Read while git runs (git replaces the file whole, so either version has the same entries).
  const facts = readIndexFacts(indexFile, repo.objectFormat);
  const early = !facts
    ? 'index not readable in-process'
    : (facts.unsupported ?? (facts.attributesFiles ? 'attributes files in the index' : null));
  if (early) {
    await settled();
    return early;
  }
  let st: Awaited<typeof status>;
  let baseTree: string;
  try {
    [st, baseTree] = await Promise.all([status, base]);
  } catch (e) {
    await settled();
    return `git failed: ${(e as Error).message}`;
  }
  if (st.unmerged) return 'unmerged entries';
  if (st.unread.length > 0) {
    await dropUntrackedCache(repo, indexFile); // written by this status, blind to what it could not read (see snapshotThroughIndex)
    return `git could not read ${st.unread[0]!.path} (${st.unread[0]!.reason})`;
  }
  if (st.changed.length + st.untracked.length > (opts.maxInProcessPaths ?? MAX_IN_PROCESS_PATHS))
    return `${st.changed.length + st.untracked.length} changed paths`;
  for (const rel of [...st.changed, ...st.untracked]) {
    if (rel.endsWith('/')) return `nested repository at ${rel}`;
    if (rel.includes('\uFFFD') || hasRawBytes(rel)) return `${rel}: a file name that is not UTF-8`;
    if (isAttributesFile(rel)) return `attributes file ${rel}`;
  }

  const dirty = inProcessDirtyPaths(repo, st, settings);
  if (typeof dirty === 'string') return dirty;
  const { removed, files, skipped } = dirty;
  const edited = removed.length > 0 || files.length > 0 ? await inProcessTree(repo, store, baseTree, removed, files) : { tree: baseTree };
  if (typeof edited === 'string') return edited;
  const tree = edited.tree;
  const changed = opts.parentTree ? await diffTrees(repo, opts.parentTree, tree) : [];
  // The marker speaks for an index holding a snapshot's tree, which this one does not.
  fs.rmSync(noAttributesMarker(indexFile), { force: true });
  keepPrivate(indexFile);
  if (keepCopy)
    writeUserCopy(indexFile, { user: userKey, priv: statKey(indexFile), base: baseTree, worktree: repo.worktree, gitDir: repo.gitDir });
  else discardPrivateIndex(indexFile);
  return { tree, skipped, seeded, changed };
}
