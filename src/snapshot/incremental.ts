// Over 500 lines on purpose: every reason to fall back to a full scan sits
// next to the fast path it guards.
//
// The incremental snapshot engine of a warm per-worktree process: a watcher
// says which paths can have changed since the last snapshot, and only those
// are read and written into the tree (blobs and the trees on their paths,
// in-process). It returns exactly what snapshotTree (a full scan) returns
// for the worktree at that moment; whenever it cannot prove that, it takes
// the full scan (through a private index of its own) and starts again from
// its result. DEVELOPING.md ("Incremental snapshots") says what it trusts;
// every fallback is below, at the fast path it guards.
import fs from 'node:fs';
import path from 'node:path';
import type { Repo } from '../git/repo.js';
import { errors } from '../base/errors.js';
import type { ChangedPath, SkippedFile } from '../git/types.js';
import { lastValue, readGitConfig, type GitConfig } from '../git/config.js';
import { PROJECT_FILE, WORKTREE_EXCLUDE_FILE, type Settings } from '../settings/settings.js';
import { discardPrivateIndex, snapshotTree, untrackedClassifier, type Classifier, type TreeSnapshotResult } from './snapshot.js';
import { diffTrees } from '../git/plumbing.js';
import { decodeName, fsPath, hasRawBytes, spawnGit, splitNul } from '../git/run.js';
import { isUtf8 } from 'node:buffer';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { ObjectReader } from '../git/cat-file.js';
import { IgnoreChecker } from '../git/check-ignore.js';
import { objectStore, type ObjectStore } from '../git/objects.js';
import { blobOf, TreeEditor, unsupportedConfig } from './tree-editor.js';
import { WorktreeWatcher, type WatcherOptions } from './watcher.js';
import { forEachIndexName } from '../git/index-file.js';
import { PathTable } from './path-table.js';
import { directoryAt, skipRestoreTemp, statKey } from '../base/fsutil.js';
import { MappedFiles } from './mapped-files.js';

export interface IncrementalOptions {
  /** A directory of the engine's own (0700): its private index and the watcher's sync cookies. */
  runDir: string;
  settings: Settings;
  /** Dirty paths (after the user's index is folded in) above which a full scan is cheaper. */
  maxDirtyPaths?: number;
  /** Files read under dirty directories above which a full scan is taken instead. */
  maxWalkFiles?: number;
  /** Files above this size are hashed by git (streamed) rather than read into memory. */
  largeFileBytes?: number;
  /** Passed to the watcher (tests simulate overflows and failed watches). */
  watcher?: Pick<WatcherOptions, 'burstThreshold' | 'syncTimeoutMs' | 'beforeWatch'>;
  /** Stat sweeps on their own in idle time (the server; default off: sweep() only). */
  idleSweeps?: boolean;
  /**
   * A stat whose mtime or ctime is this close to the moment it was taken is
   * racy (a later write may keep the same timestamps): the file is read
   * again at the next snapshot. Default RACY_MS.
   */
  racyMs?: number;
}

/** What one stat sweep did (tests and logs). */
export interface SweepResult {
  /** Files lstat'ed. */
  files: number;
  /** Files the next snapshot reads again: stat changed, racy, or mapped shared-writable now. */
  dirty: number;
  ms: number;
  /**
   * A snapshot asked while it ran: it stopped at its next turn and the next
   * sweep goes on from there (files, dirty and ms count the sweep so far).
   */
  interrupted: boolean;
}

export type IncrementalResult = TreeSnapshotResult & { mode: 'incremental' | 'full' };

/** Why the last snapshot was full (tests and logs). */
export interface EngineStats {
  incremental: number;
  full: number;
  lastFullReason: string | null;
  sweeps: number;
  lastSweep: SweepResult | null;
  /** How long the last snapshot waited for a sweep in progress (ms). */
  lastWaitMs: number;
  /** How long the last full scan took (ms), or null before the first. */
  lastFullMs: number | null;
}

/** What the engine's watcher holds and whether it gave up (the server publishes it for status and doctor). */
export interface WatchState {
  /** inotify watches held now. */
  watches: number;
  /** Set once the watcher gave up: from then on every snapshot is a full scan. */
  degraded: {
    reason: string;
    /** ENOSPC (no inotify watch left) or EMFILE (no inotify instance); null for other reasons (a remote filesystem…). */
    code: 'ENOSPC' | 'EMFILE' | null;
    /** Directories that were watched when the kernel said no (ENOSPC/EMFILE). */
    watchedBefore: number | null;
    since: string;
  } | null;
}

const DEFAULT_MAX_DIRTY = 3000; // measured at 100k files: ~0.4 ms a scattered path vs ~1.5 s a full scan
const DEFAULT_MAX_WALK = 10000; // ~0.15 ms a file in a new directory
const MAX_CACHED_DIRS = 2000;
/** Above the coarsest timestamp step of a local filesystem taken here (FAT: 2 s; the kernel's clock: a jiffy). */
const RACY_MS = 2500;
/**
 * The first idle sweep this long after a snapshot: the post of a quick tool
 * mostly comes within it, the next call after a post mostly comes after the
 * sweep (0.6-1.2 s at 100k files); a call during a sweep waits for it. Then
 * every max(MIN, 8 x its duration), doubling while no snapshot comes, up to MAX.
 */
const SWEEP_DELAY_MS = 250;
const SWEEP_MIN_GAP_MS = 2000;
const SWEEP_MAX_GAP_MS = 60_000;
/** With idle sweeps: the /proc maps check also runs this often on its own (2-5 ms at ~100 processes). */
const MAPS_EVERY_MS = 1000;
/** lstat calls between turns of the event loop during a sweep (calls keep being read meanwhile). */
const SWEEP_CHUNK = 2000;

/**
 * What a file's stat says about its bytes: a 53-bit hash of inode, size,
 * mtime, ctime, link count and mode (a number: strings for 100k files cost
 * ~30 MB of heap and ~80 MB of peak RSS; a changed stat hashes the same with
 * a chance of 2^-53).
 */
function statRecord(st: fs.Stats): number {
  // No array per call (a sweep makes 1M of them).
  hashA = 0x811c9dc5;
  hashB = 0x9747b28c;
  mixStat(st.ino);
  mixStat(st.size);
  mixStat(st.mtimeMs);
  mixStat(st.ctimeMs);
  mixStat(st.nlink);
  mixStat(st.mode);
  return (hashA >>> 0) * 2097152 + (hashB >>> 11);
}

let hashA = 0;
let hashB = 0;

function mixStat(x: number): void {
  const lo = (x % 4294967296) | 0;
  const hi = (x / 4294967296) | 0;
  const frac = ((x % 1) * 1e6) | 0; // sub-millisecond part of the times
  let a = hashA;
  let b = hashB;
  a = Math.imul(a ^ lo, 0x01000193);
  a = Math.imul(a ^ hi, 0x01000193);
  a = Math.imul(a ^ frac, 0x01000193);
  b = Math.imul(b ^ frac, 0x5bd1e995);
  b = Math.imul(b ^ lo, 0x5bd1e995);
  b = Math.imul(b ^ hi, 0x5bd1e995);
  b ^= b >>> 15;
  hashA = a;
  hashB = b;
}

function lstatOrNull(file: string | Buffer): fs.Stats | null {
  try {
    return fs.lstatSync(file, { throwIfNoEntry: false }) ?? null;
  } catch {
    return null; // not there: null, as for a missing file
  }
}

function settingsKey(s: Settings): string {
  // The environment directories too: a session's (`wrap --environment`) come with its settings, no config file changes.
  return JSON.stringify([s.exclude, s.maxFileSize, s.excludeSecrets, s.environment]);
}

function expandHome(p: string, env: NodeJS.ProcessEnv): string {
  if (p === '~' || p.startsWith('~/')) return path.join(env.HOME ?? '', p.slice(1));
  return p;
}

function isUnder(rel: string, dir: string): boolean {
  return dir === '' || rel === dir || rel.startsWith(`${dir}/`);
}

/** The user's index as last read; which paths it tracks is in the engine's PathTable. */
interface UserIndex {
  key: string;
  /** Every directory holding a tracked path ('' included). */
  dirs: Set<string>;
  /** Why the index cannot be followed incrementally (gitlinks, conflicts, skip-worktree…), or null. */
  unsupported: string | null;
}

export class IncrementalSnapshotter {
  readonly stats: EngineStats = {
    incremental: 0,
    full: 0,
    lastFullReason: null,
    sweeps: 0,
    lastSweep: null,
    lastWaitMs: 0,
    lastFullMs: null,
  };
  private readonly reader: ObjectReader;
  private checker: IgnoreChecker;
  private store: ObjectStore | null = null;
  /** The tree of the last snapshot; null before the first (or after a failed) one. */
  private base: { tree: string; skipped: Map<string, SkippedFile>; settings: string } | null = null;
  /** The last tree, read lazily; past MAX_CACHED_DIRS directories read it starts over (bounded memory). */
  private tree: TreeEditor | null = null;
  private index: UserIndex | null = null;
  /** Stat keys of everything besides the worktree's files that decides the tree (config, ignore files). */
  private keys = '';
  private keyFiles: string[] = [];
  /** Configuration under which every snapshot is a full scan, or null. */
  private configUnsupported: string | null = null;
  /** Ignored directories holding no tracked file: not watched. */
  private skipDirs = new Set<string>();
  /** The environment directories the skipped directories and the ignore checker were made for (agentsnap.environment). */
  private environment: string[] = [];
  /** The next full scan restarts the watcher (ignore rules or the tracked set moved what is watched). */
  private rewatch = false;
  /** The last full scan saw a nested repository (a gitlink in the private index): the next starts from the user's index. */
  private sawNested = false;
  /** Set when watching failed again right after a restart, or the kernel had no inotify watch left: full scans only, watches released. */
  private watcherGaveUp: string | null = null;
  private gaveUp: WatchState['degraded'] = null;
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;
  // What inotify does not report (writes through a shared mmap, or through a
  // hard link from outside the worktree) is found by stat: see DEVELOPING.md
  // ("Writes no event reports").
  /**
   * Per path: whether the user's index tracks it, and the lstat of each file of the last tree (and each
   * skipped file), taken before its bytes were read (its record).
   */
  private readonly table = new PathTable();
  /** Files with more than one link as last seen: lstat'ed again at every snapshot. */
  private linked = new Set<string>();
  /** Read by the next snapshot whatever the watcher says: changed at a sweep, racy, mapped. */
  private pending = new Set<string>();
  /** Mapped shared-writable at the last snapshot: read again by the next one (the mapping may have written since). */
  private mappedLast = new Set<string>();
  /** Start of the last full scan while its files have no records yet (the next sweep takes them). */
  private baselineSince: number | null = null;
  /** When the running snapshot began (before its watcher sync): the reference for racy stats. */
  private snapStart = 0;
  private readonly mapped: MappedFiles | null;
  private sweepTimer: NodeJS.Timeout | null = null;
  private mapsTimer: NodeJS.Timeout | null = null;
  private idleSweepsDone = 0;
  /** Snapshots queued and not begun: a sweep stops at its next turn for them. */
  private snapshotsWaiting = 0;
  /** A sweep a snapshot stopped, resumed by the next one unless a full scan came between (its records are new). */
  private sweepCursor: { fullScans: number; source: SweepSource; since: number | null; res: SweepResult } | null = null;

  private constructor(
    readonly repo: Repo,
    private readonly opts: IncrementalOptions,
    private watcher: WorktreeWatcher,
  ) {
    this.reader = new ObjectReader(repo);
    this.checker = new IgnoreChecker(repo);
    let real: string | null = null;
    try {
      real = fs.realpathSync(repo.worktree);
    } catch {
      /* checked by the first snapshot */
    }
    this.mapped = real && process.platform === 'linux' ? new MappedFiles(real) : null;
    if (opts.idleSweeps && this.mapped) {
      this.mapsTimer = setInterval(() => this.checkMappings(), MAPS_EVERY_MS);
      this.mapsTimer.unref();
    }
  }

  /**
   * Files mapped shared-writable now are read by the next snapshot (the
   * mapping may write before it and be gone by then). Runs every second with
   * idle sweeps; tests call it.
   */
  checkMappings(): void {
    if (this.closed || !this.base || this.watcherGaveUp) return;
    for (const p of this.mapped?.scan() ?? []) this.pending.add(p);
  }

  get indexFile(): string {
    return path.join(this.opts.runDir, 'index');
  }

  /** Starts watching the worktree; the first snapshot is a full scan. */
  static async open(repo: Repo, opts: IncrementalOptions): Promise<IncrementalSnapshotter> {
    const runDir = path.resolve(opts.runDir);
    const inside = (dir: string) => {
      const rel = path.relative(dir, runDir);
      return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
    };
    if (inside(repo.worktree) && !inside(repo.gitDir) && !inside(repo.commonDir)) {
      // Its cookie files would be worktree files in the snapshots.
      throw errors.internal(`the incremental engine's run dir ${runDir} is inside the worktree.`, {
        hint: 'Put it under the git dir.',
        data: { runDir },
      });
    }
    fs.mkdirSync(opts.runDir, { recursive: true, mode: 0o700 });
    const engine = new IncrementalSnapshotter(repo, opts, null as unknown as WorktreeWatcher);
    engine.store = objectStore(repo);
    engine.index = await engine.readUserIndex(null);
    engine.skipDirs = await engine.ignoredDirs(engine.index);
    engine.watcher = await WorktreeWatcher.start(repo, {
      runDir: opts.runDir,
      skipDir: (rel) => engine.skipDirs.has(rel),
      ...opts.watcher,
    });
    // No inotify resources: no point waiting for the first snapshot to find out again.
    if (engine.watcher.exhausted) engine.giveUpWatching();
    return engine;
  }

  /** The watches held and whether the engine gave up watching (full scans only). */
  watchState(): WatchState {
    return { watches: this.watcherGaveUp ? 0 : this.watcher.inotifyWatches, degraded: this.gaveUp };
  }

  /**
   * Full scans from now on, every watch given back: the watcher cannot be had
   * (no inotify watches or instance left, or lost again right after a
   * restart). A full scan is what a snapshot without the server costs, and
   * equals it by construction.
   */
  private giveUpWatching(): void {
    const ex = this.watcher.exhausted;
    const reasons = this.watcher.take().reasons;
    const reason = ex ? ex.message : reasons.slice(0, 3).join(', ') + (reasons.length > 3 ? ', …' : '');
    this.watcherGaveUp = `no watcher (${reason})`;
    this.gaveUp = { reason, code: ex?.code ?? null, watchedBefore: ex?.watched ?? null, since: new Date().toISOString() };
    this.watcher.close();
    // Nothing to vouch for between full scans: no maps check, no sweep.
    if (this.mapsTimer) clearInterval(this.mapsTimer);
    this.mapsTimer = null;
    this.pending.clear();
    this.mappedLast.clear();
  }

  /** The worktree's tree now, with what was left out and what changed since parentTree. */
  snapshot(opts: { settings: Settings; parentTree: string | null }): Promise<IncrementalResult> {
    // Waits for a sweep in progress (the queue): what it finds is read by this snapshot.
    // One not begun yet waits for the next idle time.
    if (this.sweepTimer) clearTimeout(this.sweepTimer);
    this.sweepTimer = null;
    const called = performance.now();
    // A sweep in progress stops at its next turn (within SWEEP_CHUNK lstat calls) instead of finishing first.
    this.snapshotsWaiting++;
    const run = this.queue.then(() => {
      this.snapshotsWaiting--;
      this.stats.lastWaitMs = performance.now() - called;
      return this.snapshotNow(opts);
    });
    this.queue = run.catch(() => undefined); // the caller gets this failure through `run`: the queue only keeps the order
    void this.queue.then(() => {
      this.idleSweepsDone = 0;
      this.armSweep();
    });
    return run;
  }

  /**
   * lstats every file of the last snapshot and compares with what was
   * recorded when its bytes were read; a difference (or a racy stat, or a
   * shared writable mapping now) makes the next snapshot read the file
   * again. After a full scan it takes the records first. Resolves when done,
   * or when a snapshot asked meanwhile (`interrupted`: the snapshot reads what
   * it found so far, and the next sweep goes on from where it stopped; what it
   * has not reached yet is as after the previous sweep: the window of
   * DEVELOPING.md, "Writes no event reports", which stays bounded by sweeps
   * being resumed, not restarted).
   */
  sweep(): Promise<SweepResult> {
    const run = this.queue.then(() => this.sweepNow());
    this.queue = run.catch(() => undefined); // the caller gets this failure through `run`: the queue only keeps the order
    return run;
  }

  private armSweep(): void {
    if (!this.opts.idleSweeps || this.closed) return;
    if (this.sweepTimer) clearTimeout(this.sweepTimer);
    const last = this.stats.lastSweep?.ms ?? 0;
    const gap =
      this.idleSweepsDone === 0
        ? SWEEP_DELAY_MS
        : Math.min(SWEEP_MAX_GAP_MS, Math.max(SWEEP_MIN_GAP_MS, 8 * last) * 2 ** (this.idleSweepsDone - 1));
    this.sweepTimer = setTimeout(() => {
      this.sweepTimer = null;
      void this.sweep().then(
        (res) => {
          if (res.interrupted) return; // the snapshot that stopped it arms the next one
          this.idleSweepsDone++;
          this.armSweep();
        },
        () => undefined,
      );
    }, gap);
    this.sweepTimer.unref();
  }

  private async sweepNow(): Promise<SweepResult> {
    let started = performance.now();
    // Nothing to vouch for: no snapshot yet, or every snapshot is a full scan anyway.
    if (this.closed || !this.base || this.configUnsupported || this.watcherGaveUp || !this.store)
      return { files: 0, dirty: 0, ms: 0, interrupted: false };
    let cur = this.sweepCursor;
    // A full scan since the stopped sweep took the records again: start over.
    if (!cur || cur.fullScans !== this.stats.full) {
      cur?.source.close();
      const since = this.baselineSince;
      // After a full scan: the files of its tree, streamed from git (at 1M files its listing is ~50 MB, and as
      // strings far more), then the skipped files; else the records, directory by directory.
      const source: SweepSource =
        since !== null
          ? new BaselineSource(new TreeListing(this.repo, this.base.tree), [...this.base.skipped.keys()])
          : this.table.recordCursor();
      cur = { fullScans: this.stats.full, source, since, res: { files: 0, dirty: 0, ms: 0, interrupted: false } };
    }
    this.sweepCursor = cur;
    const { source, since, res } = cur;
    const mark = (p: string) => {
      if (!this.pending.has(p)) res.dirty++;
      this.pending.add(p);
    };
    const check = (p: string) => {
      const st = lstatOrNull(fsPath(path.join(this.repo.worktree, p)));
      res.files++;
      if (st?.isDirectory()) return; // a gitlink (nested repositories mean full scans anyway)
      if (st?.isFile() && st.nlink > 1) this.linked.add(p);
      const now = st ? statRecord(st) : null;
      // After a full scan, a file without a record takes this one (one lookup for both).
      const rec = since !== null && now !== null ? this.table.recordOrSet(p, now) : this.table.record(p);
      if (rec === undefined) {
        // Read by the full scan that began at `since`: changed after that (racy), it is read again.
        if (since !== null && st && this.racy(st, since)) mark(p);
      } else if (now === null || now !== rec) {
        mark(p);
      }
    };
    const stop = (): SweepResult => {
      res.ms += performance.now() - started;
      return { ...res, interrupted: true };
    };
    // A turn of the event loop every SWEEP_CHUNK lstat calls (calls keep being read meanwhile); a snapshot
    // asked stops the sweep there, and the next sweep goes on from the same place in the same source.
    let n = 0;
    try {
      for (;;) {
        if (n === SWEEP_CHUNK) {
          n = 0;
          res.ms += performance.now() - started;
          await new Promise((r) => setImmediate(r));
          started = performance.now();
          if (this.closed) return stop();
        }
        if (n === 0 && this.snapshotsWaiting > 0) return stop();
        const p = source.next();
        if (p === null) break;
        if (p === undefined) {
          await source.fill();
          if (this.closed) return stop();
          continue;
        }
        check(p);
        n++;
      }
    } catch (e) {
      source.close();
      this.sweepCursor = null;
      throw e;
    }
    source.close();
    for (const p of this.mapped?.scan() ?? []) mark(p);
    if (this.baselineSince === since) this.baselineSince = null;
    this.sweepCursor = null;
    res.ms += performance.now() - started;
    this.stats.sweeps++;
    this.stats.lastSweep = res;
    return { ...res };
  }

  /** Whether a later write to this file could leave its stat as it is (a timestamp within racyMs of `at`). */
  private racy(st: fs.Stats, at: number): boolean {
    const slack = this.opts.racyMs ?? RACY_MS;
    return Math.max(st.mtimeMs, st.ctimeMs) >= at - slack;
  }

  /** Paths changed without an event the watcher could see: sweep findings, shared writable mappings, hard-linked files whose stat moved. */
  private addUnreported(dirty: Set<string>): void {
    for (const p of this.pending) dirty.add(p);
    this.pending.clear();
    const mapped = this.mapped?.scan() ?? new Set<string>();
    for (const p of mapped) dirty.add(p);
    for (const p of this.mappedLast) dirty.add(p);
    this.mappedLast = mapped;
    for (const p of this.linked) {
      const st = lstatOrNull(fsPath(path.join(this.repo.worktree, p)));
      const rec = this.table.record(p);
      if (!st || rec === undefined || statRecord(st) !== rec) dirty.add(p);
      if (!st?.isFile() || st.nlink < 2) this.linked.delete(p);
    }
  }

  /** Records the stat of files the full scan that began at `at` just read (racy ones are read again next time). */
  private recordAfterFull(paths: Iterable<string>, at: number): void {
    for (const p of paths) {
      const st = lstatOrNull(fsPath(path.join(this.repo.worktree, p)));
      if (!st || st.isDirectory()) continue;
      this.table.setRecord(p, statRecord(st));
      if (this.racy(st, at)) this.pending.add(p);
    }
  }

  private async snapshotNow(opts: { settings: Settings; parentTree: string | null }): Promise<IncrementalResult> {
    if (this.closed) throw errors.internal('the incremental snapshotter is closed.');
    this.snapStart = Date.now();
    // Every change made before this call is in what take() returns; changes
    // after it stay dirty for the next call (also during a full scan).
    await this.watcher.sync();
    const taken = this.watcher.take();
    // Given up: the snapshot is a full scan, which reads everything (no maps scan for it).
    if (!this.watcherGaveUp) this.addUnreported(taken.paths);
    const why = await this.whyFull(taken.trustworthy ? null : `watcher: ${taken.reasons.join(', ')}`, opts.settings, taken.paths);
    if (why === null) {
      try {
        const res = await this.incremental(taken.paths, opts.settings, opts.parentTree);
        if (typeof res !== 'string') {
          this.stats.incremental++;
          return res;
        }
        return await this.full(opts, res, taken.paths);
      } catch (e) {
        return await this.full(opts, `incremental path failed: ${(e as Error).message}`, taken.paths);
      }
    }
    return this.full(opts, why, taken.paths);
  }

  /** The reason a full scan is needed before looking at the dirty paths, or null. */
  private async whyFull(watcherLoss: string | null, settings: Settings, dirty: Set<string>): Promise<string | null> {
    if (!this.base || !this.index) return 'no previous snapshot';
    if (this.watcherGaveUp) return this.watcherGaveUp;
    if (watcherLoss) return watcherLoss;
    if (this.configUnsupported) return this.configUnsupported;
    if (!this.store) return 'objects cannot be written in-process';
    if (!this.tree) return 'no previous snapshot';
    if (await this.pruned(this.base.tree)) return "the last snapshot's tree was deleted by git's prune";
    if (settingsKey(settings) !== this.base.settings) return 'settings changed';
    if (this.currentKeys() !== this.keys) {
      this.rewatch = true;
      return 'git config or ignore files changed';
    }
    if (this.watcher.nestedRepos.size > 0) return 'nested repository in the worktree';
    // One not there yet is fine: nothing is below it, for the full scan either.
    const notDir = settings.environment.find((d) => directoryAt(this.repo.worktree, d) === 'other');
    // Below an environment directory that is a symlink or a file the full scan lists nothing (git's pathspec `d/`).
    if (notDir !== undefined) return `environment directory ${notDir} is not a directory`;
    const idxKey = statKey(path.join(this.repo.gitDir, 'index'));
    if (idxKey !== this.index.key) {
      // Read in place: paths whose tracked-ness changed are dirty (no second copy of the tracked set).
      let fresh: UserIndex;
      try {
        fresh = await this.readUserIndex(dirty);
      } catch (e) {
        // The table may hold part of this read, and the paths it found changed go with this snapshot:
        // the next one must not trust it (a full scan reads the index again).
        this.index = null;
        throw e;
      }
      this.index = fresh;
      if (fresh.unsupported) return fresh.unsupported;
      // One in a directory that is not watched means restarting the watcher.
      for (const p of dirty) {
        for (const skip of this.skipDirs) {
          if (isUnder(p, skip) && this.table.isTracked(p)) {
            this.rewatch = true;
            return 'a path in an unwatched directory became tracked';
          }
        }
      }
    }
    if (this.index.unsupported) return this.index.unsupported;
    return null;
  }

  /**
   * Whether the last tree is gone: the user's git prune deleted it (no ref named it), and with it, maybe, the blobs
   * and trees the engine reuses by id. A tree still there is whole (a prune keeps or deletes a tree with what it
   * names), so one lookup per snapshot covers every cached id: a stat of its loose file, else one read.
   */
  private async pruned(tree: string): Promise<boolean> {
    const store = this.store;
    if (store && fs.existsSync(path.join(store.objectsDir, tree.slice(0, 2), tree.slice(2)))) return false;
    try {
      await this.reader.read(tree);
      return false;
    } catch (e) {
      return / is missing$/.test((e as Error).message);
    }
  }

  private async full(
    opts: { settings: Settings; parentTree: string | null },
    reason: string,
    dirty: Set<string>,
  ): Promise<IncrementalResult> {
    // The unwatched (ignored) directories were decided before the watcher
    // started: an ignore file changed in between, or among the paths not
    // looked at (an early fallback), may have made one of them matter.
    for (const p of dirty) if (p === '.gitignore' || p.endsWith('/.gitignore')) this.rewatch = true;
    if (this.stats.full === 0) this.rewatch = true;
    this.stats.full++;
    this.stats.lastFullReason = reason;
    this.base = null;
    this.tree = null;
    // Read everything the incremental path will compare against *before* the
    // scan, so a change during the scan shows as a difference next time.
    const cfg = await readGitConfig(this.repo);
    this.configUnsupported = this.unsupportedConfig(cfg);
    this.keyFiles = this.keyFilesOf(cfg);
    const keys = this.currentKeys();
    if (keys !== this.keys) this.rewatch = true;
    this.keys = keys;
    this.store = this.configUnsupported ? null : objectStore(this.repo, cfg);
    if (!this.index || this.index.key !== statKey(path.join(this.repo.gitDir, 'index'))) {
      this.index = await this.readUserIndex(null);
    }
    // An unwatched directory that now holds a tracked file must be watched.
    for (const d of this.skipDirs) if (this.index.dirs.has(d)) this.rewatch = true;
    // The environment directories (agentsnap.environment) are watched and walked whatever the rules say, as the
    // full scan lists them: a change of them changes what is skipped.
    if (opts.settings.environment.join('\0') !== this.environment.join('\0')) {
      this.environment = [...opts.settings.environment];
      this.rewatch = true;
    }
    await this.checker.close();
    this.checker = new IgnoreChecker(this.repo, keptForEnvironment(this.environment));
    if (this.watcherGaveUp) {
      // Full scans only.
    } else if (this.watcher.exhausted) {
      // The kernel had no inotify watch (or instance) left: a restart would take the watches other
      // programs need and fail again. Every watch is given back already; full scans from now on.
      this.giveUpWatching();
    } else if (this.watcher.needsRestart) {
      // Events were lost: directories may be unwatched or watched under an old path.
      this.rewatch = false;
      this.skipDirs = await this.ignoredDirs(this.index);
      await this.watcher.restart();
      if (this.watcher.needsRestart) {
        // Lost again right away: the watches cannot be had (no inotify watches left, a directory
        // that cannot be watched, another platform). Give them back; every snapshot is a full scan.
        this.giveUpWatching();
      }
    } else if (this.rewatch) {
      // Nothing lost, but what is skipped may have changed.
      this.rewatch = false;
      this.skipDirs = await this.ignoredDirs(this.index);
      this.watcher.rewatch();
    }
    // Records are taken again for what this scan reads: the hard-linked files now (they are checked at
    // every snapshot), the rest by the next sweep.
    this.sweepCursor?.source.close(); // a stopped sweep starts over after this scan
    this.sweepCursor = null;
    this.table.clearRecords();
    this.pending.clear();
    this.baselineSince = this.snapStart;
    const scanStart = performance.now();
    // A nested repository is a gitlink in the private index, and once its .git is gone `git add -A` keeps that
    // gitlink and never adds the files now there (a full scan from the user's index does): while one is in the
    // worktree, and at the first scan after, the scan starts from a fresh copy of the user's index.
    const nested = this.watcher.nestedRepos.size > 0 || [...dirty].some((p) => p.split('/').includes('.git'));
    if (nested || this.sawNested) discardPrivateIndex(this.indexFile);
    this.sawNested = nested;
    let res: TreeSnapshotResult;
    try {
      res = await snapshotTree(this.repo, {
        indexFile: this.indexFile,
        settings: opts.settings,
        parentTree: opts.parentTree,
        untrackedCache: true,
      });
    } catch (e) {
      // The private index may hold what made the scan fail (a copy of a user's index git could not read):
      // the next full scan seeds a fresh copy instead of failing on it forever.
      discardPrivateIndex(this.indexFile);
      throw e;
    }
    this.stats.lastFullMs = performance.now() - scanStart;
    this.base = { tree: res.tree, skipped: new Map(res.skipped.map((s) => [s.path, s])), settings: settingsKey(opts.settings) };
    this.recordAfterFull(this.linked, this.snapStart);
    if (this.store) this.tree = new TreeEditor(this.reader, this.store, res.tree);
    return { ...res, mode: 'full' };
  }

  private unsupportedConfig(cfg: GitConfig): string | null {
    const why = unsupportedConfig(cfg);
    if (why) return why;
    if (process.platform !== 'linux') return `no exact watcher on ${process.platform}`;
    return null;
  }

  /** Files whose change can change the tree without any worktree file changing. */
  private keyFilesOf(cfg: GitConfig): string[] {
    const env = this.repo.env;
    const home = env.HOME ?? '';
    const xdg = env.XDG_CONFIG_HOME || path.join(home, '.config');
    const files = [
      path.join(this.repo.commonDir, 'config'),
      path.join(this.repo.gitDir, 'config.worktree'),
      path.join(this.repo.commonDir, 'info', 'exclude'),
      path.join(this.repo.gitDir, WORKTREE_EXCLUDE_FILE),
      path.join(this.repo.worktree, PROJECT_FILE),
      env.GIT_CONFIG_GLOBAL ?? path.join(home, '.gitconfig'),
      path.join(xdg, 'git', 'config'),
      env.GIT_CONFIG_NOSYSTEM ? '' : (env.GIT_CONFIG_SYSTEM ?? '/etc/gitconfig'),
    ];
    const excludesFile = lastValue(cfg, 'core.excludesfile');
    files.push(excludesFile ? path.resolve(this.repo.worktree, expandHome(excludesFile, env)) : path.join(xdg, 'git', 'ignore'));
    return files.filter(Boolean);
  }

  private currentKeys(): string {
    return this.keyFiles.map(statKey).join('|');
  }

  /**
   * Reads the user's index into the table (in place: no second copy of 1M paths); each path whose
   * tracked-ness changed since the last read is added to `changed`.
   */
  private async readUserIndex(changed: Set<string> | null): Promise<UserIndex> {
    const file = path.join(this.repo.gitDir, 'index');
    const key = statKey(file);
    const table = this.table;
    const onPath = (p: string) => {
      if (table.tracked(p)) changed?.add(p);
    };
    // Directory and name decoded apart (a '/' never splits a UTF-8 sequence): no full path per entry,
    // and the directory's string kept while entries of the same directory follow.
    let lastDirBytes = Buffer.alloc(256);
    let lastDirLen = -1;
    let lastDir = '';
    const onName = (bytes: Buffer, start: number, end: number) => {
      let slash = end - 1;
      while (slash >= start && bytes[slash] !== 0x2f) slash--;
      const len = slash < start ? 0 : slash - start;
      if (len !== lastDirLen || bytes.compare(lastDirBytes, 0, len, start, start + len) !== 0) {
        if (len > lastDirBytes.length) lastDirBytes = Buffer.alloc(len * 2);
        bytes.copy(lastDirBytes, 0, start, start + len);
        lastDirLen = len;
        lastDir = len === 0 ? '' : bytes.toString('utf8', start, slash);
      }
      const dir = lastDir;
      const name = bytes.toString('utf8', slash + 1, end);
      if (table.trackedAt(dir, name)) changed?.add(dir === '' ? name : `${dir}/${name}`);
    };
    table.beginIndexRead();
    // In-process for sha1 repositories (the common case: no process, read in chunks); else git.
    const parsed = this.store ? forEachIndexName(file, this.repo.objectFormat, onName) : null;
    let unsupported: string | null = parsed ? parsed.unsupported : null;
    if (!parsed) {
      if (this.store) table.beginIndexRead(); // a read given up midway: start over
      const res = await this.repo.git(['ls-files', '-s', '-v', '-z']);
      for (const rec of splitNul(res.stdout)) {
        const tab = rec.indexOf('\t');
        const [tag, mode, , stage] = rec.slice(0, tab).split(' ');
        const p = rec.slice(tab + 1);
        if (tag !== 'H') unsupported ??= `index entry flagged ${tag} (assume-unchanged, skip-worktree…): ${p}`;
        if (stage !== '0') unsupported ??= `unmerged index entry: ${p}`;
        if (mode === '160000') unsupported ??= `gitlink (submodule) in the index: ${p}`;
        onPath(p);
      }
    }
    const dirs = table.endIndexRead(changed ? (p) => changed.add(p) : null);
    return { key, dirs, unsupported };
  }

  /**
   * Ignored directories holding no tracked file: nothing in them can be in a
   * snapshot while the ignore rules stay. `ls-files -o -i --directory` also
   * names directories that merely hold only ignored files so far (a new file
   * there may not be ignored): only those git ignores as directories count.
   */
  private async ignoredDirs(index: UserIndex): Promise<Set<string>> {
    const res = await this.repo.git([
      'ls-files',
      '-z',
      '--others',
      '--ignored',
      '--exclude-standard',
      '--directory',
      '--no-empty-directory',
    ]);
    const kept = keptForEnvironment(this.environment);
    const candidates = splitNul(res.stdout)
      .filter((p) => p.endsWith('/'))
      .map((p) => p.slice(0, -1))
      .filter((d) => !index.dirs.has(d) && !kept(d));
    const checker = new IgnoreChecker(this.repo);
    try {
      return await checker.ignored(candidates);
    } finally {
      await checker.close();
    }
  }

  // ---- the incremental path ----

  /** The incremental snapshot, or the reason it cannot be taken (→ full scan). */
  private async incremental(dirty: Set<string>, settings: Settings, parentTree: string | null): Promise<IncrementalResult | string> {
    const base = this.base as NonNullable<typeof this.base>;
    const index = this.index as UserIndex;
    const store = this.store as ObjectStore;
    const tree = this.tree as TreeEditor;
    if (dirty.size > (this.opts.maxDirtyPaths ?? DEFAULT_MAX_DIRTY)) return `${dirty.size} changed paths`;
    for (const p of dirty) {
      const parts = p.split('/');
      if (parts.includes('.git')) return `nested repository at ${p}`;
      const name = parts[parts.length - 1] as string;
      if (name === '.gitignore') {
        this.rewatch = true;
        return `ignore file changed: ${p}`;
      }
      if (p === PROJECT_FILE) return `${PROJECT_FILE} changed`;
    }
    if (dirty.size === 0) return this.result(base.tree, parentTree, base.skipped);

    const classify = untrackedClassifier(settings);
    const walk = new Walk(
      this.repo.worktree,
      index,
      this.table,
      this.checker,
      classify,
      this.opts.maxWalkFiles ?? DEFAULT_MAX_WALK,
      this.skipDirs,
      this.linked,
    );
    // Ancestors first: a dirty directory covers everything below it.
    const sorted = [...dirty].sort((a, b) => a.length - b.length);
    const covered: string[] = [];
    for (const p of sorted) {
      if (covered.some((d) => isUnder(p, d))) continue;
      const outcome = await walk.visit(p);
      if (outcome === 'dir' || outcome === 'absent') covered.push(p);
      else if (outcome !== 'file') return outcome;
    }
    await walk.finish();
    // Apply: everything at and below each visited path is replaced by what the disk holds.
    const skipped = new Map(base.skipped);
    for (const p of walk.replaced) {
      await tree.remove(p);
      for (const s of skipped.keys()) if (isUnder(s, p)) skipped.delete(s);
    }
    for (const s of walk.skipped) skipped.set(s.path, s);
    const pending = walk.files.map(async (f) => ({
      rel: f.rel,
      leaf: await blobOf(this.repo, store, f.rel, f.symlink, this.opts.largeFileBytes),
    }));
    for (const { rel, leaf } of await Promise.all(pending)) {
      if (typeof leaf === 'string') return leaf;
      if (leaf) await tree.set(rel, leaf);
    }
    const written = tree.write();
    this.base = { tree: written, skipped, settings: base.settings };
    // The stat each file had before it was read: what sweeps compare with.
    for (const p of walk.replaced) this.table.deleteRecord(p);
    for (const f of [...walk.files, ...walk.skippedStats]) {
      this.table.setRecord(f.rel, statRecord(f.st));
      if (this.racy(f.st, this.snapStart)) this.pending.add(f.rel);
    }
    if (tree.loadedDirs > MAX_CACHED_DIRS) this.tree = new TreeEditor(this.reader, store, written);
    return this.result(written, parentTree, skipped);
  }

  private async result(tree: string, parentTree: string | null, skipped: Map<string, SkippedFile>): Promise<IncrementalResult> {
    const changed: ChangedPath[] = parentTree && parentTree !== tree ? await diffTrees(this.repo, parentTree, tree) : [];
    return { tree, skipped: [...skipped.values()], seeded: false, changed, mode: 'incremental' };
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.sweepTimer) clearTimeout(this.sweepTimer);
    if (this.mapsTimer) clearInterval(this.mapsTimer);
    await this.queue.catch(() => undefined); // its caller had it: closing only waits for the queue to drain
    this.sweepCursor?.source.close();
    this.sweepCursor = null;
    this.watcher.close();
    await Promise.all([this.reader.close(), this.checker.close()]);
  }
}

interface FoundFile {
  rel: string;
  symlink: boolean;
  /** Its lstat, taken before its bytes are read. */
  st: fs.Stats;
}

/**
 * What the disk holds at and below a set of dirty paths: files to record,
 * untracked files skipped, and the paths whose tree entries get replaced.
 */
class Walk {
  readonly files: FoundFile[] = [];
  readonly skipped: SkippedFile[] = [];
  readonly replaced: string[] = [];
  /** The skipped files with their lstat. */
  readonly skippedStats: FoundFile[] = [];
  private count = 0;
  private readonly dirCache = new Map<string, boolean>();

  constructor(
    private readonly worktree: string,
    private readonly index: UserIndex,
    private readonly table: PathTable,
    private readonly checker: IgnoreChecker,
    private readonly classify: Classifier,
    private readonly maxFiles: number,
    private readonly skipDirs: Set<string>,
    private readonly linked: Set<string>,
  ) {}

  /** Whether every leading directory of rel is a real directory (not a symlink, not a file). */
  private parentsAreDirs(rel: string): boolean {
    let dir = '';
    for (const part of rel.split('/').slice(0, -1)) {
      dir = dir ? `${dir}/${part}` : part;
      let ok = this.dirCache.get(dir);
      if (ok === undefined) {
        try {
          ok = fs.lstatSync(path.join(this.worktree, dir)).isDirectory();
        } catch {
          ok = false; // not there: not a directory
        }
        this.dirCache.set(dir, ok);
      }
      if (!ok) return false;
    }
    return true;
  }

  /** Reads one dirty path; 'dir' when it is a directory (walked whole), or the reason for a full scan. */
  async visit(rel: string): Promise<'file' | 'dir' | 'absent' | string> {
    // A name that is not UTF-8 (from a tree or the index, see splitNul): lstat of the string would say it is gone.
    if (hasRawBytes(rel)) return `${rel}: a file name that is not UTF-8`;
    if (!this.parentsAreDirs(rel)) {
      // Not a file of the worktree: its nearest changed parent has its own event.
      this.replaced.push(rel);
      return 'absent';
    }
    let st: fs.Stats;
    try {
      st = fs.lstatSync(path.join(this.worktree, rel));
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') {
        this.replaced.push(rel);
        return 'absent';
      }
      return `cannot stat ${rel} (${code})`;
    }
    this.replaced.push(rel);
    if (st.isDirectory()) {
      // An untracked directory git ignores (created since the watch began) holds nothing to record.
      if (!this.index.dirs.has(rel) && (this.skipDirs.has(rel) || (await this.checker.isIgnored(rel)))) return 'dir';
      const why = await this.walkDir(rel);
      return why ?? 'dir';
    }
    const why = await this.consider(rel, st);
    return why ?? 'file';
  }

  private async walkDir(rel: string): Promise<string | null> {
    const stack = [rel];
    while (stack.length > 0) {
      const dir = stack.pop() as string;
      let entries: fs.Dirent[];
      try {
        entries = fs.readdirSync(path.join(this.worktree, dir), { withFileTypes: true });
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'ENOTDIR') continue; // gone meanwhile: its event comes
        return `cannot read ${dir} (${code})`;
      }
      if (entries.some((e) => e.name === '.git')) return `nested repository at ${dir}`;
      if (entries.some((e) => e.name.includes('\uFFFD'))) return `a file name that is not UTF-8 in ${dir}`;
      const subdirs: string[] = [];
      for (const ent of entries) {
        const child = `${dir}/${ent.name}`;
        if (ent.isDirectory()) {
          subdirs.push(child);
          continue;
        }
        let st: fs.Stats;
        try {
          st = fs.lstatSync(path.join(this.worktree, child));
        } catch (e) {
          const code = (e as NodeJS.ErrnoException).code;
          if (code === 'ENOENT') continue;
          return `cannot stat ${child} (${code})`;
        }
        if (st.isDirectory()) {
          subdirs.push(child);
          continue;
        }
        const why = await this.consider(child, st);
        if (why) return why;
      }
      // An untracked directory git ignores holds nothing but what the user tracks in it.
      const untrackedDirs = subdirs.filter((d) => !this.index.dirs.has(d));
      const ignored = untrackedDirs.length > 0 ? await this.checker.ignored(untrackedDirs) : new Set<string>();
      for (const d of subdirs) {
        if (ignored.has(d) || this.skipDirs.has(d)) {
          if (this.index.dirs.has(d)) return `ignored directory ${d} holds tracked files`;
          continue;
        }
        stack.push(d);
      }
    }
    return null;
  }

  /** A file or symlink on disk: tracked → recorded; untracked → recorded unless ignored or skipped. */
  private async consider(rel: string, st: fs.Stats): Promise<string | null> {
    if (++this.count > this.maxFiles) return `more than ${this.maxFiles} files under changed directories`;
    const symlink = st.isSymbolicLink();
    if (!symlink && !st.isFile()) {
      if (this.table.isTracked(rel)) return `tracked path ${rel} is neither a file nor a symlink`;
      return null; // git lists no sockets or fifos
    }
    // A file with another link changes when written through that one, and the
    // event names the other path (maybe outside the watched tree): never trusted.
    if (!symlink && st.nlink > 1) {
      this.linked.add(rel);
      return `${rel} has ${st.nlink} hard links`;
    }
    if (rel.includes('\uFFFD') || hasRawBytes(rel)) return `${rel}: a file name that is not UTF-8`;
    if (this.table.isTracked(rel)) {
      this.files.push({ rel, symlink, st });
      return null;
    }
    if (skipRestoreTemp(this.worktree, rel)) return null;
    // Asked of git in one batch at the end (finish): one round trip, not one per file.
    this.untracked.push({ rel, size: st.size, symlink, st });
    return null;
  }

  private readonly untracked: { rel: string; size: number; symlink: boolean; st: fs.Stats }[] = [];

  /** Classifies the untracked files found: ignored ones are left out, the rest recorded or skipped. */
  async finish(): Promise<void> {
    const ignored = await this.checker.ignored(this.untracked.map((u) => u.rel));
    for (const u of this.untracked) {
      if (ignored.has(u.rel)) continue;
      const reason = this.classify(u.rel, u.size);
      if (reason) {
        this.skipped.push({ path: u.rel, reason, size: u.size });
        this.skippedStats.push({ rel: u.rel, symlink: u.symlink, st: u.st });
      } else this.files.push({ rel: u.rel, symlink: u.symlink, st: u.st });
    }
  }
}

/**
 * The file paths of a tree (`ls-tree -r --name-only`), streamed: `onPath`
 * gets each name, decoded only then (no array of a chunk's names outlives a
 * scavenge), and `between` runs after each chunk of git's output (git waits
 * meanwhile; false stops it). A listing of 1M paths is never held.
 */
/** Where a sweep takes its paths; it can stop and go on later. */
interface SweepSource {
  /** The next path; undefined when more must be read first (fill), null at the end. */
  next(): string | null | undefined;
  fill(): Promise<void>;
  close(): void;
}

/**
 * The file paths of a tree (`ls-tree -r --name-only`), streamed: each name is
 * decoded only when asked for, and git waits (its pipe full) while the sweep
 * lstats or stops for a snapshot. A listing of 1M paths is never held.
 */
class TreeListing {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly chunks: AsyncIterator<Buffer>;
  private readonly exit: Promise<number | Error>;
  private readonly args: string[];
  private stderr = '';
  // Git's chunks are copied into one buffer kept for the whole listing: a chunk kept while its ~1000 paths
  // are lstat'ed outlives scavenges, and promoted chunks piled up (+50 MB external at 1M files).
  private work = Buffer.allocUnsafe(1 << 17);
  private have = 0;
  /** The next name starts here; names end at NULs up to `end` (the last complete one). */
  private at = 0;
  private end = -1;
  private utf8 = true;
  private done = false;

  constructor(repo: Repo, tree: string) {
    this.args = ['ls-tree', '-r', '-z', '--name-only', '--full-tree', tree];
    this.child = spawnGit(this.args, { cwd: repo.worktree, env: { ...repo.env, GIT_DIR: repo.gitDir, GIT_WORK_TREE: repo.worktree } });
    this.child.stdin.end();
    this.child.stderr.on('data', (d: Buffer) => {
      if (this.stderr.length < 4096) this.stderr += d.toString('utf8');
    });
    this.exit = new Promise((resolve) => {
      this.child.on('error', (e) => resolve(e));
      this.child.on('close', (code) => resolve(code ?? 128));
    });
    this.chunks = (this.child.stdout as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  }

  next(): string | null | undefined {
    if (this.at <= this.end) {
      const nul = this.work.indexOf(0, this.at);
      // As splitNul decodes (a name that is not UTF-8 keeps its bytes as lone surrogates).
      const p = this.utf8 ? this.work.toString('utf8', this.at, nul) : decodeName(this.work.subarray(this.at, nul));
      this.at = nul + 1;
      return p;
    }
    return this.done ? null : undefined;
  }

  async fill(): Promise<void> {
    this.work.copy(this.work, 0, this.at, this.have);
    this.have -= this.at;
    this.at = 0;
    this.end = -1;
    for (;;) {
      const r = await this.chunks.next();
      if (r.done) {
        this.done = true;
        const code = await this.exit;
        if (code instanceof Error) throw errors.gitFailed(`could not start git: ${code.message}`, { cause: code });
        if (code !== 0 || this.have > 0) {
          throw errors.gitFailed(`git ls-tree failed: ${this.stderr.trim().split('\n').slice(-1)[0] || `exit ${code}`}`, {
            data: { args: this.args, exitCode: code, stderr: this.stderr },
          });
        }
        return;
      }
      const chunk = r.value;
      if (this.have + chunk.length > this.work.length) {
        const grown = Buffer.allocUnsafe(Math.max(2 * this.work.length, this.have + chunk.length));
        this.work.copy(grown, 0, 0, this.have);
        this.work = grown;
      }
      chunk.copy(this.work, this.have);
      this.have += chunk.length;
      const last = this.work.lastIndexOf(0, this.have - 1);
      if (last >= 0) {
        this.end = last;
        this.utf8 = isUtf8(this.work.subarray(0, last + 1));
        return;
      }
    }
  }

  /** Stops git when it has not listed everything (a sweep started over, the engine closed). */
  close(): void {
    if (this.done) return;
    this.done = true;
    this.at = 0;
    this.end = -1;
    this.child.kill();
    void this.chunks.return?.().catch(() => undefined); // closing the stream of a killed child: nothing left to read
  }
}

/** The first sweep after a full scan: the files of its tree, then the skipped files. */
class BaselineSource implements SweepSource {
  private i = 0;
  constructor(
    private readonly listing: TreeListing,
    private readonly skipped: string[],
  ) {}

  next(): string | null | undefined {
    const p = this.listing.next();
    if (p !== null) return p;
    return this.i < this.skipped.length ? (this.skipped[this.i++] as string) : null;
  }

  fill(): Promise<void> {
    return this.listing.fill();
  }

  close(): void {
    this.listing.close();
  }
}

/**
 * The paths the engine takes as not ignored, as the full scan does (listEnvironment): an environment directory,
 * everything below it, and the directories above it (walked into; the files in them are asked of git as usual).
 */
function keptForEnvironment(dirs: readonly string[]): (rel: string) => boolean {
  if (dirs.length === 0) return () => false;
  return (rel) => dirs.some((d) => rel === d || rel.startsWith(`${d}/`) || d.startsWith(`${rel}/`));
}
