// Watches a worktree so the incremental snapshot engine knows which paths can
// differ from its last snapshot. One non-recursive fs.watch per directory:
// libuv shares one inotify instance per loop, so events of all directories
// arrive in the order the kernel queued them, which is what makes sync()'s
// cookie a barrier. (Node 20's recursive fs.watch on Linux misses changes in
// directories created in a burst.)
//
// Honesty rule: whatever can make it miss a change turns `trustworthy` off,
// and the engine then takes a full scan: a watch that could not be added, a
// burst large enough that the kernel queue may have overflowed (libuv drops
// IN_Q_OVERFLOW silently), a cookie that did not arrive, a watcher error, a
// platform other than Linux.
//
// When the kernel says no more watches (ENOSPC: fs.inotify.max_user_watches)
// or no inotify instance (EMFILE: max_user_instances, or the open-file limit),
// it stops trying, gives back every watch it holds (other programs of the
// user share the limit) and says so in `exhausted`: the engine then takes
// full scans only.
import fs from 'node:fs';
import path from 'node:path';

export interface WatcherOptions {
  /** A directory of agentsnap's own (created if missing) that holds sync cookies. */
  runDir: string;
  /** Directories (relative to the worktree) not to watch: ignored ones holding no tracked file. */
  skipDir?: (rel: string) => boolean;
  /**
   * Events in one event-loop turn from which the kernel queue may have
   * overflowed. Default: a quarter of /proc/sys/fs/inotify/max_queued_events.
   */
  burstThreshold?: number;
  /** How long sync() waits for its cookie. */
  syncTimeoutMs?: number;
  /** Tests: called before each directory watch is added; throwing simulates a failed watch. */
  beforeWatch?: (rel: string) => void;
}

/** The kernel refused a watch for want of inotify resources. */
export interface WatchExhaustion {
  /** ENOSPC: no inotify watch left (max_user_watches); EMFILE: no inotify instance (max_user_instances) or no file descriptor. */
  code: 'ENOSPC' | 'EMFILE';
  /** Directories that were watched when it happened. */
  watched: number;
  message: string;
}

/** The errors of fs.watch that mean "no inotify resources left", not "this directory". */
function exhaustionCode(e: unknown): 'ENOSPC' | 'EMFILE' | null {
  const code = (e as NodeJS.ErrnoException).code;
  return code === 'ENOSPC' || code === 'EMFILE' ? code : null;
}

/** Reasons kept at most (a watch that fails in each of 100k directories must not make 100k strings). */
const MAX_REASONS = 20;

export interface TakeResult {
  /** Paths (relative, posix) with an event since the last take. A directory means its whole subtree. */
  paths: Set<string>;
  trustworthy: boolean;
  /** Why not trustworthy (for logs and tests). */
  reasons: string[];
}

function defaultBurstThreshold(): number {
  try {
    const max = Number(fs.readFileSync('/proc/sys/fs/inotify/max_queued_events', 'utf8').trim());
    if (Number.isInteger(max) && max > 0) return Math.max(64, Math.floor(max / 4));
  } catch {
    /* not Linux, or no procfs */
  }
  return 4096;
}

/** statfs magic numbers of filesystems where inotify does not see every change (remote, FUSE, 9p). */
const REMOTE_FS: Record<number, string> = {
  0x6969: 'NFS',
  0xff534d42: 'CIFS',
  0xfe534d42: 'SMB2',
  0x517b: 'SMB',
  0x65735546: 'FUSE',
  0x01021997: '9p',
  0x00c36400: 'CephFS',
  0x47504653: 'GPFS',
  0x0bd00bd0: 'Lustre',
  0x786f4256: 'virtiofs',
};

function remoteFilesystem(dir: string): string | null {
  try {
    const type = Number(fs.statfsSync(dir).type) >>> 0;
    return REMOTE_FS[type] ?? null;
  } catch {
    return 'a filesystem that cannot be identified'; // cannot be told: treated as remote, so the watcher is not trusted (full scans)
  }
}

export class WorktreeWatcher {
  private readonly watches = new Map<string, fs.FSWatcher>();
  private dirty = new Set<string>();
  /** Reasons the next take() is not trustworthy (cleared by take). */
  private lost: string[] = [];
  /** Reasons that stay until restart(): a directory may be unwatched. */
  private broken: string[] = [];
  private turnEvents = 0;
  private turnResetScheduled = false;
  private readonly threshold: number;
  private readonly cookieDir: string;
  private cookieWatch: fs.FSWatcher | null = null;
  private readonly cookieWaiters = new Map<string, () => void>();
  private cookieSeq = 0;
  private closed = false;
  private exhaustedBy: WatchExhaustion | null = null;
  /** Directories holding a `.git` (nested repositories), watched or seen by an event. */
  readonly nestedRepos = new Set<string>();

  private constructor(
    readonly worktree: string,
    private readonly opts: WatcherOptions,
  ) {
    this.threshold = opts.burstThreshold ?? defaultBurstThreshold();
    this.cookieDir = path.join(opts.runDir, 'cookies');
  }

  /** Starts watching every directory of the worktree (except .git and skipped ones). */
  static async start(repo: { readonly worktree: string }, opts: WatcherOptions): Promise<WorktreeWatcher> {
    const w = new WorktreeWatcher(repo.worktree, opts);
    w.startAll();
    return w;
  }

  private startAll(): void {
    if (process.platform !== 'linux') {
      this.loseFor(`no exact watcher on ${process.platform}`);
      return;
    }
    const remote = remoteFilesystem(this.worktree);
    if (remote) {
      this.loseFor(`the worktree is on ${remote}: changes made elsewhere raise no inotify event`);
      return;
    }
    try {
      fs.mkdirSync(this.cookieDir, { recursive: true, mode: 0o700 });
      for (const name of fs.readdirSync(this.cookieDir)) fs.rmSync(path.join(this.cookieDir, name), { force: true, recursive: true });
      this.cookieWatch = fs.watch(this.cookieDir, { persistent: false }, (_type, name) => {
        if (typeof name !== 'string') return;
        const done = this.cookieWaiters.get(name);
        if (done) {
          this.cookieWaiters.delete(name);
          done();
        }
      });
      this.cookieWatch.on('error', () => this.loseFor('cookie watch failed'));
    } catch (e) {
      if (this.exhaust(e)) return;
      this.loseFor(`cannot watch ${this.cookieDir} (${(e as NodeJS.ErrnoException).code ?? e})`);
    }
    this.watchTree('');
  }

  /** Closes every watch and starts over (after a loss that may have left directories unwatched). */
  async restart(): Promise<void> {
    this.closeAll();
    this.broken = [];
    this.exhaustedBy = null;
    this.lost = [];
    this.dirty = new Set();
    this.nestedRepos.clear();
    this.startAll();
  }

  /**
   * After the set of skipped directories changed (ignore rules, tracked
   * files) with nothing lost: watch what is no longer skipped, stop watching
   * what now is. Cheaper than restart() and keeps the watches that are right.
   */
  rewatch(): void {
    if (this.broken.length > 0) return;
    for (const dir of [...this.watches.keys()]) if (dir !== '' && this.opts.skipDir?.(dir)) this.closeBelow(dir);
    const stack = [''];
    while (stack.length > 0) {
      const dir = stack.pop() as string;
      if (!this.watches.has(dir) && !this.watchDir(dir)) continue;
      const children = this.subdirs(dir);
      if (Array.isArray(children)) stack.push(...children);
    }
  }

  /**
   * The directories in `dir` to watch; 'gone' when it is no directory any
   * more (not an error), null when it cannot be read (the watcher is then
   * untrustworthy). Notes nested repositories and names that are not UTF-8.
   */
  private subdirs(dir: string): string[] | 'gone' | null {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(path.join(this.worktree, dir), { withFileTypes: true });
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return 'gone';
      this.loseFor(`cannot read ${dir || '.'} (${code ?? e})`);
      return null;
    }
    const out: string[] = [];
    for (const ent of entries) {
      if (ent.name === '.git') {
        if (dir !== '') this.nestedRepos.add(dir);
        continue;
      }
      if (!ent.isDirectory()) continue;
      if (ent.name.includes('\uFFFD')) {
        this.loseFor(`a directory name that is not UTF-8 in ${dir || '.'}`);
        continue;
      }
      const child = dir ? `${dir}/${ent.name}` : ent.name;
      if (!this.opts.skipDir?.(child)) out.push(child);
    }
    return out;
  }

  /** Whether `rel` (a directory) is being watched. */
  isWatched(rel: string): boolean {
    return this.watches.has(rel);
  }

  /** Stops watching a directory and everything below it (an ignored directory found by the engine). */
  unwatch(rel: string): void {
    this.closeBelow(rel);
  }

  get watchCount(): number {
    return this.watches.size;
  }

  /** The inotify watches held: one per watched directory and the sync cookies' directory. */
  get inotifyWatches(): number {
    return this.watches.size + (this.cookieWatch ? 1 : 0);
  }

  /** Set when the kernel refused a watch for want of inotify resources (every watch is then given back). */
  get exhausted(): WatchExhaustion | null {
    return this.exhaustedBy;
  }

  /** Marks the watcher untrustworthy until restart() (at most MAX_REASONS reasons kept). */
  private loseFor(reason: string): void {
    if (this.broken.length < MAX_REASONS) this.broken.push(reason);
    else if (this.broken.length === MAX_REASONS) this.broken.push('…');
  }

  /**
   * When `e` says the kernel has no inotify resources left: stops watching
   * and gives every watch back (true). Trying the other directories would
   * fail the same way, and holding some makes other programs fail.
   */
  private exhaust(e: unknown): boolean {
    const code = exhaustionCode(e);
    if (!code) return false;
    if (!this.exhaustedBy) {
      const watched = this.watches.size;
      this.exhaustedBy = {
        code,
        watched,
        message:
          code === 'ENOSPC'
            ? `no inotify watches left after ${watched} directories (ENOSPC: the limit fs.inotify.max_user_watches is reached for this user)`
            : `no inotify instance could be created (EMFILE: fs.inotify.max_user_instances reached for this user, or the open-file limit)`,
      };
      this.loseFor(this.exhaustedBy.message);
    }
    this.closeAll();
    return true;
  }

  private watchTree(rel: string): void {
    const stack = [rel];
    while (stack.length > 0 && !this.exhaustedBy) {
      const dir = stack.pop() as string;
      if (!this.watchDir(dir)) continue;
      const children = this.subdirs(dir);
      if (Array.isArray(children)) stack.push(...children);
      else if (children === 'gone') this.closeBelow(dir); // gone again: its parent's event says so
    }
  }

  /** Adds the watch of one directory; false when it is gone or could not be watched. */
  private watchDir(rel: string): boolean {
    if (this.closed || this.exhaustedBy) return false;
    const old = this.watches.get(rel);
    if (old) {
      // Possibly another inode now (a directory moved here): watch by path again.
      old.close();
      this.watches.delete(rel);
    }
    const abs = path.join(this.worktree, rel);
    let w: fs.FSWatcher;
    try {
      this.opts.beforeWatch?.(rel);
      w = fs.watch(abs, { persistent: false }, (type, name) => this.onEvent(rel, type, name));
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return false; // removed meanwhile: its parent's event reports it
      if (this.exhaust(e)) return false;
      this.loseFor(`cannot watch ${rel || '.'} (${code ?? (e as Error).message})`);
      return false;
    }
    w.on('error', (e: NodeJS.ErrnoException) => {
      this.loseFor(`watch of ${rel || '.'} failed (${e.code ?? e.message})`);
    });
    this.watches.set(rel, w);
    return true;
  }

  private closeBelow(rel: string): void {
    // A watched directory's parent is always watched (watchTree goes top-down,
    // closeBelow takes whole subtrees): nothing watched at rel, nothing below.
    if (rel !== '' && !this.watches.has(rel)) return;
    const prefix = rel ? `${rel}/` : '';
    for (const [dir, w] of this.watches) {
      if (dir === rel || dir.startsWith(prefix)) {
        w.close();
        this.watches.delete(dir);
      }
    }
    for (const dir of this.nestedRepos) if (dir === rel || dir.startsWith(prefix)) this.nestedRepos.delete(dir);
  }

  private onEvent(dir: string, type: string, name: string | Buffer | null): void {
    if (++this.turnEvents >= this.threshold) {
      if (!this.broken.includes('event burst')) this.loseFor('event burst');
    }
    if (!this.turnResetScheduled) {
      this.turnResetScheduled = true;
      setImmediate(() => {
        this.turnResetScheduled = false;
        this.turnEvents = 0;
      });
    }
    if (typeof name !== 'string' || name === '') {
      // No name: anything in this directory may have changed.
      if (dir === '') this.lost.push('event without a name at the top');
      else this.dirty.add(dir);
      return;
    }
    if (dir === '' && name === '.git') return; // the repository itself, not the worktree
    if (name.includes('\uFFFD')) {
      // Not UTF-8: the name Node gives is not the file's, so the path cannot be looked at.
      this.lost.push('a file name that is not UTF-8');
      return;
    }
    const rel = dir ? `${dir}/${name}` : name;
    if (name === '.git') {
      this.dirty.add(rel);
      let present = false;
      try {
        fs.lstatSync(path.join(this.worktree, rel));
        present = true;
      } catch {
        /* removed */
      }
      if (present) this.nestedRepos.add(dir);
      else this.nestedRepos.delete(dir);
      return;
    }
    if (!this.watches.has(dir)) {
      this.dirty.add(rel);
      return;
    }
    // Created, deleted, moved in or out, or its attributes changed: make the
    // watches at rel match the disk (a moved directory keeps its inotify
    // watch under the old path in libuv, so it is watched again by path).
    let isDir = false;
    try {
      isDir = fs.lstatSync(path.join(this.worktree, rel)).isDirectory();
    } catch {
      /* gone */
    }
    // A directory's own attributes are not in a snapshot (git keeps no directory modes): an
    // attribute change of a watched directory changes nothing below it. Anything that replaced
    // it came with rename events of its own.
    if (!(type === 'change' && isDir && this.watches.has(rel))) this.dirty.add(rel);
    if (!isDir || this.opts.skipDir?.(rel)) {
      this.closeBelow(rel);
      return;
    }
    if (type === 'rename' || !this.watches.has(rel)) {
      this.closeBelow(rel);
      this.watchTree(rel);
    }
  }

  /**
   * Resolves once every change made before the call has been delivered: a
   * cookie file written into a watched directory of agentsnap's own comes
   * back through the same inotify queue, after everything queued before it.
   */
  async sync(): Promise<void> {
    if (this.broken.length > 0 || !this.cookieWatch) return;
    const name = `c-${process.pid}-${++this.cookieSeq}`;
    const file = path.join(this.cookieDir, name);
    const timeoutMs = this.opts.syncTimeoutMs ?? 2000;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.cookieWaiters.delete(name);
        // Its watch may be gone (the run dir replaced): watch again before trusting events.
        this.loseFor('sync cookie did not arrive');
        resolve();
      }, timeoutMs);
      this.cookieWaiters.set(name, () => {
        clearTimeout(timer);
        resolve();
      });
      try {
        // A fresh 0600 file (O_EXCL: never through a link planted at the name; see src/base/state-dir.ts).
        fs.closeSync(
          fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW, 0o600),
        );
      } catch (e) {
        clearTimeout(timer);
        this.cookieWaiters.delete(name);
        this.loseFor(`cannot write a sync cookie (${(e as NodeJS.ErrnoException).code ?? e})`);
        resolve();
      }
    });
    fs.rmSync(file, { force: true });
  }

  /** The paths with events since the last take, and whether that list can be trusted; resets the list. */
  take(): TakeResult {
    const reasons = [...this.broken, ...this.lost];
    const out: TakeResult = { paths: this.dirty, trustworthy: reasons.length === 0, reasons };
    this.dirty = new Set();
    this.lost = [];
    return out;
  }

  /** Whether a loss left the watcher needing restart() before it can be trusted again. */
  get needsRestart(): boolean {
    return this.broken.length > 0;
  }

  private closeAll(): void {
    for (const w of this.watches.values()) w.close();
    this.watches.clear();
    this.cookieWatch?.close();
    this.cookieWatch = null;
    for (const done of this.cookieWaiters.values()) done();
    this.cookieWaiters.clear();
  }

  close(): void {
    this.closed = true;
    this.closeAll();
  }
}
