// Files of a worktree that some process maps shared and writable right now.
// A write through such a mapping raises no inotify event (inotify(7)), so
// the incremental engine reads these files at every snapshot that finds them
// mapped, and at the one after. Read from /proc/<pid>/maps of the processes
// this user may read (its own; every process for root); processes in another
// pid or mount namespace, or of another user, are not seen.
import fs from 'node:fs';

const MAPS_CHUNK = 1 << 16;

export class MappedFiles {
  private readonly prefix: Buffer;
  private buf = Buffer.alloc(MAPS_CHUNK * 4);

  /** `worktreeReal`: the worktree's real path (maps show resolved paths). */
  constructor(private readonly worktreeReal: string) {
    this.prefix = Buffer.from(`${worktreeReal}/`, 'utf8');
  }

  /** Paths (relative, posix) of worktree files mapped writable and shared by a process now; never throws. */
  scan(): Set<string> {
    const out = new Set<string>();
    if (process.platform !== 'linux') return out;
    let pids: string[];
    try {
      pids = fs.readdirSync('/proc');
    } catch {
      return out; /* no procfs mounted: nothing can be told, the stat sweeps still run */
    }
    const uid = typeof process.getuid === 'function' ? process.getuid() : -1;
    for (const pid of pids) {
      const c = pid.charCodeAt(0);
      if (c < 48 || c > 57 || Number(pid) === process.pid) continue;
      const n = this.read(`/proc/${pid}/maps`, uid);
      if (n > 0) this.parse(n, out);
    }
    return out;
  }

  /** Reads one maps file into this.buf; its length, or 0 (gone, not ours, unreadable, no worktree path in it). */
  private read(file: string, uid: number): number {
    let fd: number;
    try {
      fd = fs.openSync(file, 'r');
    } catch {
      return 0; /* the process exited, or is another user's (see the doc comment) */
    }
    try {
      if (uid > 0 && fs.fstatSync(fd).uid !== uid) return 0;
      let n = 0;
      for (;;) {
        if (this.buf.length - n < MAPS_CHUNK) {
          const bigger = Buffer.alloc(this.buf.length * 2);
          this.buf.copy(bigger, 0, 0, n);
          this.buf = bigger;
        }
        const got = fs.readSync(fd, this.buf, n, this.buf.length - n, null);
        if (got <= 0) break;
        n += got;
      }
      return this.buf.subarray(0, n).indexOf(this.prefix) >= 0 ? n : 0;
    } catch {
      return 0; // the process exited meanwhile, or its maps may not be read
    } finally {
      fs.closeSync(fd);
    }
  }

  /** Lines `start-end perms offset dev inode path`: shared writable mappings ('?w?s') of worktree files. */
  private parse(n: number, out: Set<string>): void {
    const text = this.buf.toString('utf8', 0, n);
    const prefix = `${this.worktreeReal}/`;
    let at = 0;
    while (at < text.length) {
      let end = text.indexOf('\n', at);
      if (end < 0) end = text.length;
      const sp = text.indexOf(' ', at);
      if (sp > 0 && sp + 4 < end && text[sp + 2] === 'w' && text[sp + 4] === 's') {
        const slash = text.indexOf('/', sp);
        if (slash > 0 && slash < end && text.startsWith(prefix, slash)) {
          // The kernel escapes a newline in a path as \012.
          const rel = text.slice(slash + prefix.length, end).replace(/\\012/g, '\n');
          if (rel !== '' && !`/${rel}`.includes('/.git/')) out.add(rel);
        }
      }
      at = end + 1;
    }
  }
}
