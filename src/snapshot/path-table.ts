// What the incremental engine knows of each file path, one compact entry per
// directory instead of a JS string and a hash-table slot per path (issue 19:
// at 1M files a Set of the tracked paths and a Map of the stat records, each
// keyed by its own copy of every path, were ~200 MB of the warm server's
// heap). Per directory: its file names (each a short string), a flag byte and
// a stat record (a double) per name, names sorted (binary search) with an
// unsorted tail of recent additions merged in when it grows.
//
// Flags: tracked (in the user's index as last read), recorded (a stat record
// is held). A name with neither is dropped at the next merge.

const TRACKED = 1;
const RECORDED = 2;
/** Seen by the index read in progress (see beginIndexRead). */
const SEEN = 4;

class DirFiles {
  names: string[] = [];
  flags = new Uint8Array(4);
  recs = new Float64Array(4);
  /** names[0, sorted) are in order; names[sorted, names.length) are a tail of additions. */
  sorted = 0;

  find(name: string): number {
    let lo = 0;
    let hi = this.sorted;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const m = this.names[mid] as string;
      if (m < name) lo = mid + 1;
      else if (m > name) hi = mid;
      else return mid;
    }
    for (let i = this.sorted; i < this.names.length; i++) if (this.names[i] === name) return i;
    return -1;
  }

  /** The slot of name, added (flags 0) when absent. */
  slot(name: string): number {
    const at = this.find(name);
    if (at >= 0) return at;
    if (this.names.length - this.sorted >= Math.max(16, this.sorted >>> 3)) this.merge();
    const n = this.names.length;
    if (n === this.flags.length) {
      const flags = new Uint8Array(n * 2);
      flags.set(this.flags);
      this.flags = flags;
      const recs = new Float64Array(n * 2);
      recs.set(this.recs);
      this.recs = recs;
    }
    // In order (an index or a listing read in order): it extends the sorted part.
    const last = this.names[n - 1];
    if (this.sorted === n && (last === undefined || last < name)) this.sorted = n + 1;
    this.names.push(name);
    this.flags[n] = 0;
    this.recs[n] = 0;
    return n;
  }

  /** Sorts the tail into the rest and drops names that are neither tracked nor recorded. */
  merge(): void {
    const order: number[] = [];
    for (let i = 0; i < this.names.length; i++) if (this.flags[i] !== 0) order.push(i);
    if (this.sorted < this.names.length) {
      order.sort((a, b) => {
        const x = this.names[a] as string;
        const y = this.names[b] as string;
        return x < y ? -1 : x > y ? 1 : 0;
      });
    }
    const n = order.length;
    const cap = Math.max(4, n);
    const names = new Array<string>(n);
    const flags = new Uint8Array(cap);
    const recs = new Float64Array(cap);
    for (let k = 0; k < n; k++) {
      const i = order[k] as number;
      names[k] = this.names[i] as string;
      flags[k] = this.flags[i] as number;
      recs[k] = this.recs[i] as number;
    }
    this.names = names;
    this.flags = flags;
    this.recs = recs;
    this.sorted = n;
  }
}

/**
 * A copy of s that holds no reference to a longer string: V8 keeps a slice
 * (of a path, of git's listing) as a view on its parent, which would keep
 * every full path alive behind each name.
 */
function own(s: string): string {
  // latin1 and utf16le give back every code unit (lone surrogates of raw-byte names included).
  return /^[\x00-\xff]*$/.test(s) ? Buffer.from(s, 'latin1').toString('latin1') : Buffer.from(s, 'utf16le').toString('utf16le');
}

function split(p: string): [string, string] {
  const i = p.lastIndexOf('/');
  return i < 0 ? ['', p] : [p.slice(0, i), p.slice(i + 1)];
}

function join(dir: string, name: string): string {
  return dir === '' ? name : `${dir}/${name}`;
}

export class PathTable {
  private readonly byDir = new Map<string, DirFiles>();
  private records = 0;

  private entry(p: string, create: false): [DirFiles, number] | null;
  private entry(p: string, create: true): [DirFiles, number];
  private entry(p: string, create: boolean): [DirFiles, number] | null {
    const [dir, name] = split(p);
    return create ? this.add(dir, name, true) : this.lookup(dir, name);
  }

  private lookup(dir: string, name: string): [DirFiles, number] | null {
    const d = this.byDir.get(dir);
    const i = d ? d.find(name) : -1;
    return i < 0 ? null : [d as DirFiles, i];
  }

  /** The slot of dir/name, added when absent (`copy`: the strings may be slices, keep copies). */
  private add(dir: string, name: string, copy: boolean): [DirFiles, number] {
    let d = this.byDir.get(dir);
    if (!d) {
      d = new DirFiles();
      this.byDir.set(copy ? own(dir) : dir, d);
    }
    let i = d.find(name);
    if (i < 0) i = d.slot(copy ? own(name) : name);
    return [d, i];
  }

  /** Whether p is tracked in the user's index as last read. */
  isTracked(p: string): boolean {
    const e = this.entry(p, false);
    return e !== null && ((e[0].flags[e[1]] as number) & TRACKED) !== 0;
  }

  /** The stat record of p, if one is held. */
  record(p: string): number | undefined {
    const e = this.entry(p, false);
    if (!e || !((e[0].flags[e[1]] as number) & RECORDED)) return undefined;
    return e[0].recs[e[1]];
  }

  setRecord(p: string, rec: number): void {
    const [d, i] = this.entry(p, true);
    if (!((d.flags[i] as number) & RECORDED)) this.records++;
    d.flags[i] = (d.flags[i] as number) | RECORDED;
    d.recs[i] = rec;
  }

  deleteRecord(p: string): void {
    const e = this.entry(p, false);
    if (!e || !((e[0].flags[e[1]] as number) & RECORDED)) return;
    e[0].flags[e[1]] = (e[0].flags[e[1]] as number) & ~RECORDED;
    this.records--;
  }

  /** Drops every record (names no longer tracked go too). */
  clearRecords(): void {
    for (const [dir, d] of this.byDir) {
      for (let i = 0; i < d.names.length; i++) d.flags[i] = (d.flags[i] as number) & ~RECORDED;
      d.merge();
      if (d.names.length === 0) this.byDir.delete(dir);
    }
    this.records = 0;
  }

  get recordCount(): number {
    return this.records;
  }

  /**
   * The recorded paths, directory by directory (a sweep: it yields between
   * chunks, and nothing but the sweep changes the table meanwhile — snapshots
   * wait for it).
   */
  *recordedPaths(): Generator<string> {
    for (const [dir, d] of [...this.byDir]) {
      for (let i = 0; i < d.names.length; i++) if ((d.flags[i] as number) & RECORDED) yield join(dir, d.names[i] as string);
    }
  }

  /**
   * A new read of the user's index: call `tracked` for each of its paths,
   * then `endIndexRead`, which untracks the rest. `tracked` tells whether
   * the path was untracked before (its tracked-ness changed).
   */
  beginIndexRead(): void {
    for (const d of this.byDir.values()) for (let i = 0; i < d.names.length; i++) d.flags[i] = (d.flags[i] as number) & ~SEEN;
  }

  /** Marks p tracked (seen by this read); true when it was not tracked before. */
  tracked(p: string): boolean {
    const [dir, name] = split(p);
    return this.trackedAt(dir, name, true);
  }

  /** tracked() of dir/name (`copy` false: both strings are fresh, not slices of a longer one). */
  trackedAt(dir: string, name: string, copy = false): boolean {
    const [d, i] = this.add(dir, name, copy);
    const f = d.flags[i] as number;
    d.flags[i] = f | TRACKED | SEEN;
    return (f & TRACKED) === 0;
  }

  /**
   * Untracks every path this read did not see; calls `untracked` with each.
   * Returns every directory holding a tracked path ('' included).
   */
  endIndexRead(untracked: ((p: string) => void) | null): Set<string> {
    const dirs = new Set<string>(['']);
    for (const [dir, d] of [...this.byDir]) {
      let any = false;
      for (let i = 0; i < d.names.length; i++) {
        const f = d.flags[i] as number;
        if (f & TRACKED && !(f & SEEN)) {
          d.flags[i] = f & ~TRACKED;
          untracked?.(join(dir, d.names[i] as string));
        } else if (f & TRACKED) any = true;
      }
      if (d.sorted < d.names.length) d.merge();
      if (d.names.length === 0) {
        this.byDir.delete(dir);
        continue;
      }
      if (any) for (let a = dir; !dirs.has(a); a = split(a)[0]) dirs.add(a);
    }
    return dirs;
  }
}
