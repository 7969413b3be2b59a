// What the incremental engine knows of each file path, one compact entry per
// directory instead of a JS string and a hash-table slot per path (issue 19:
// at 1M files a Set of the tracked paths and a Map of the stat records, each
// keyed by its own copy of every path, were ~230 MB of the warm server's
// heap; this is 39 MB). Per directory: its file names sorted in one string
// (binary search), a stat record and a flag word per name in one
// Float64Array, and an unsorted tail of recent additions merged in when it
// grows.
//
// Flags: tracked (in the user's index as last read), recorded (a stat record
// is held). A name with neither is dropped at the next merge.

const TRACKED = 1;
const RECORDED = 2;
/** Seen by the index read in progress (see beginIndexRead). */
const SEEN = 4;

const NO_DATA = new Float64Array(0);

/** Tail lengths searched name by name; a longer tail is looked up through a Map. */
const TAIL_SCAN = 16;

let comparisons = 0;

/** Names compared with others so far (binary searches, merges, tail look-ups): how tests bound the work per path. */
export function nameComparisons(): number {
  return comparisons;
}

/** name vs joined[s, e), in code units (the order of JS's `<` on strings). */
function compareAt(name: string, joined: string, s: number, e: number): number {
  comparisons++;
  const n = Math.min(name.length, e - s);
  for (let k = 0; k < n; k++) {
    const d = name.charCodeAt(k) - joined.charCodeAt(s + k);
    if (d !== 0) return d;
  }
  return name.length - (e - s);
}

/**
 * The files of one directory. Sorted names in one string (each followed by
 * '/', which no name holds), a word per name (its start << 3 | its flags)
 * and a record per name; additions go to a small unsorted tail,
 * merged in when it grows. ~27 bytes a file, against ~100 for a path string
 * in a Set and another in a Map.
 */
class DirFiles {
  joined = '';
  /** Slot i < count: its record at data[i], its start << 3 | flags at data[count + i] (one typed array a directory). */
  data: Float64Array = NO_DATA;
  /** Names in joined (slots 0..count-1); slot count + k is tail entry k. */
  count = 0;
  tailNames: string[] | null = null;
  tailFlags: number[] | null = null;
  tailRecs: number[] | null = null;
  /**
   * The tail's names to their positions once it is longer than TAIL_SCAN: the tail grows to 1/8 of
   * the sorted part, and a scan of it per look-up made filling a directory quadratic (100k files in
   * one directory: 12.7 s for the first index read).
   */
  tailAt: Map<string, number> | null = null;
  /** Bumped when slots move (a merge): a cursor on this directory starts it over. */
  version = 0;

  get size(): number {
    return this.count + (this.tailNames?.length ?? 0);
  }

  private end(i: number): number {
    return (i + 1 < this.count ? (this.data[this.count + i + 1] as number) >>> 3 : this.joined.length) - 1;
  }

  nameAt(i: number): string {
    if (i >= this.count) return (this.tailNames as string[])[i - this.count] as string;
    return this.joined.slice((this.data[this.count + i] as number) >>> 3, this.end(i));
  }

  flagsAt(i: number): number {
    return i < this.count ? (this.data[this.count + i] as number) & 7 : ((this.tailFlags as number[])[i - this.count] as number);
  }

  setFlags(i: number, f: number): void {
    if (i < this.count) this.data[this.count + i] = ((this.data[this.count + i] as number) & ~7) | f;
    else (this.tailFlags as number[])[i - this.count] = f;
  }

  recAt(i: number): number {
    return i < this.count ? (this.data[i] as number) : ((this.tailRecs as number[])[i - this.count] as number);
  }

  setRec(i: number, r: number): void {
    if (i < this.count) this.data[i] = r;
    else (this.tailRecs as number[])[i - this.count] = r;
  }

  find(name: string): number {
    let lo = 0;
    let hi = this.count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const c = compareAt(name, this.joined, (this.data[this.count + mid] as number) >>> 3, this.end(mid));
      if (c > 0) lo = mid + 1;
      else if (c < 0) hi = mid;
      else return mid;
    }
    const tail = this.tailNames;
    if (!tail) return -1;
    if (this.tailAt) {
      comparisons++;
      const k = this.tailAt.get(name);
      return k === undefined ? -1 : this.count + k;
    }
    for (let k = 0; k < tail.length; k++) {
      comparisons++;
      if (tail[k] === name) return this.count + k;
    }
    return -1;
  }

  /** The slot of name, added (flags 0) when absent; the caller sets its flags before the next call. */
  slot(name: string): number {
    const at = this.find(name);
    if (at >= 0) return at;
    if (this.tailNames && this.tailNames.length >= Math.max(16, this.count >>> 3)) this.merge();
    if (!this.tailNames) {
      this.tailNames = [];
      this.tailFlags = [];
      this.tailRecs = [];
    }
    if (!this.tailAt && this.tailNames.length >= TAIL_SCAN) this.tailAt = new Map(this.tailNames.map((n, k) => [n, k]));
    this.tailAt?.set(name, this.tailNames.length);
    this.tailNames.push(name);
    (this.tailFlags as number[]).push(0);
    (this.tailRecs as number[]).push(0);
    return this.size - 1;
  }

  /** Sorts the tail into the rest and drops names that are neither tracked nor recorded. */
  merge(): void {
    const tail = this.tailNames ?? [];
    const order = tail.map((_, k) => k).filter((k) => ((this.tailFlags as number[])[k] as number) !== 0);
    order.sort((a, b) => {
      const x = tail[a] as string;
      const y = tail[b] as string;
      return x < y ? -1 : x > y ? 1 : 0;
    });
    const names: string[] = [];
    const flags: number[] = [];
    const recs: number[] = [];
    let k = 0;
    const takeTail = () => {
      const t = order[k++] as number;
      names.push(tail[t] as string);
      flags.push((this.tailFlags as number[])[t] as number);
      recs.push((this.tailRecs as number[])[t] as number);
    };
    for (let i = 0; i < this.count; i++) {
      const f = (this.data[this.count + i] as number) & 7;
      if (f === 0) continue;
      const s = (this.data[this.count + i] as number) >>> 3;
      const e = this.end(i);
      while (k < order.length && compareAt(tail[order[k] as number] as string, this.joined, s, e) < 0) takeTail();
      names.push(this.joined.slice(s, e));
      flags.push(f);
      recs.push(this.data[i] as number);
    }
    while (k < order.length) takeTail();
    const n = names.length;
    const data = n ? new Float64Array(2 * n) : NO_DATA;
    let at = 0;
    for (let i = 0; i < n; i++) {
      data[i] = recs[i] as number;
      data[n + i] = at * 8 + (flags[i] as number);
      at += (names[i] as string).length + 1;
    }
    this.data = data;
    this.joined = n ? `${names.join('/')}/` : '';
    this.count = n;
    this.version++;
    this.tailNames = null;
    this.tailFlags = null;
    this.tailRecs = null;
    this.tailAt = null;
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
    return e !== null && (e[0].flagsAt(e[1]) & TRACKED) !== 0;
  }

  /** The stat record of p, if one is held. */
  record(p: string): number | undefined {
    const e = this.entry(p, false);
    if (!e || !(e[0].flagsAt(e[1]) & RECORDED)) return undefined;
    return e[0].recAt(e[1]);
  }

  /** The record of p if one is held; else rec becomes its record (and undefined is returned). */
  recordOrSet(p: string, rec: number): number | undefined {
    const [d, i] = this.entry(p, true);
    const f = d.flagsAt(i);
    if (f & RECORDED) return d.recAt(i);
    this.records++;
    d.setFlags(i, f | RECORDED);
    d.setRec(i, rec);
    return undefined;
  }

  setRecord(p: string, rec: number): void {
    const [d, i] = this.entry(p, true);
    const f = d.flagsAt(i);
    if (!(f & RECORDED)) this.records++;
    d.setFlags(i, f | RECORDED);
    d.setRec(i, rec);
  }

  deleteRecord(p: string): void {
    const e = this.entry(p, false);
    if (!e || !(e[0].flagsAt(e[1]) & RECORDED)) return;
    e[0].setFlags(e[1], e[0].flagsAt(e[1]) & ~RECORDED);
    this.records--;
  }

  /** Drops every record (names no longer tracked go too). */
  clearRecords(): void {
    for (const [dir, d] of this.byDir) {
      for (let i = 0; i < d.size; i++) d.setFlags(i, d.flagsAt(i) & ~RECORDED);
      d.merge();
      if (d.size === 0) this.byDir.delete(dir);
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
      for (let i = 0; i < d.size; i++) if (d.flagsAt(i) & RECORDED) yield join(dir, d.nameAt(i));
    }
  }

  /**
   * The recorded paths from now on, directory by directory, as a sweep takes
   * them: it can stop and go on later while snapshots change the table.
   * Directories added since it began are left out (their records are newer
   * than the sweep); in a directory whose slots moved meanwhile (a merge), the
   * names it held when the cursor entered it are gone through on from where it
   * stopped, by name (names added since are newer than the sweep too).
   */
  recordCursor(): { next(): string | null; fill(): Promise<void>; close(): void } {
    const dirs = [...this.byDir.keys()];
    let di = 0;
    // The directory being gone through as it was when the cursor entered it: its names string, its slots'
    // starts and its tail (append-only until a merge, which makes new ones and leaves these as they are).
    let d: DirFiles | null = null;
    let version = 0;
    let joined = '';
    let data: Float64Array = NO_DATA;
    let count = 0;
    let tail: string[] | null = null;
    let tailLen = 0;
    let ni = 0;
    return {
      next: () => {
        while (di < dirs.length) {
          const dir = dirs[di] as string;
          if (d === null) {
            const entered = this.byDir.get(dir);
            if (!entered) {
              di++;
              continue;
            }
            d = entered;
            version = entered.version;
            joined = entered.joined;
            data = entered.data;
            count = entered.count;
            tail = entered.tailNames;
            tailLen = tail?.length ?? 0;
            ni = 0;
          }
          while (ni < count + tailLen) {
            const i = ni++;
            const now = this.byDir.get(dir);
            if (!now) break; // no record left in it
            if (now === d && now.version === version) {
              // Slots unmoved: slot i is the same name.
              if (now.flagsAt(i) & RECORDED) return join(dir, now.nameAt(i));
              continue;
            }
            // Slots moved (a merge) since the cursor entered: by name, so that a directory merged at every
            // stop is still gone through once (names added since have records newer than the sweep).
            let name: string;
            if (i < count) {
              const s = (data[count + i] as number) >>> 3;
              const e = (i + 1 < count ? (data[count + i + 1] as number) >>> 3 : joined.length) - 1;
              name = joined.slice(s, e);
            } else name = (tail as string[])[i - count] as string;
            const at = now.find(name);
            if (at >= 0 && now.flagsAt(at) & RECORDED) return join(dir, name);
          }
          di++;
          d = null;
          tail = null;
          data = NO_DATA;
          joined = '';
        }
        return null;
      },
      fill: () => Promise.resolve(),
      close: () => {
        di = dirs.length;
        d = null;
        tail = null;
        data = NO_DATA;
        joined = '';
      },
    };
  }

  /**
   * A new read of the user's index: call `tracked` for each of its paths,
   * then `endIndexRead`, which untracks the rest. `tracked` tells whether
   * the path was untracked before (its tracked-ness changed).
   */
  beginIndexRead(): void {
    for (const d of this.byDir.values()) for (let i = 0; i < d.size; i++) d.setFlags(i, d.flagsAt(i) & ~SEEN);
  }

  /** Marks p tracked (seen by this read); true when it was not tracked before. */
  tracked(p: string): boolean {
    const [dir, name] = split(p);
    return this.trackedAt(dir, name, true);
  }

  /** tracked() of dir/name (`copy` false: both strings are fresh, not slices of a longer one). */
  trackedAt(dir: string, name: string, copy = false): boolean {
    const [d, i] = this.add(dir, name, copy);
    const f = d.flagsAt(i);
    d.setFlags(i, f | TRACKED | SEEN);
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
      for (let i = 0; i < d.size; i++) {
        const f = d.flagsAt(i);
        if (f & TRACKED && !(f & SEEN)) {
          d.setFlags(i, f & ~TRACKED);
          untracked?.(join(dir, d.nameAt(i)));
        } else if (f & TRACKED) any = true;
      }
      if (d.tailNames) d.merge();
      if (d.size === 0) {
        this.byDir.delete(dir);
        continue;
      }
      if (any) for (let a = dir; !dirs.has(a); a = split(a)[0]) dirs.add(a);
    }
    return dirs;
  }
}
