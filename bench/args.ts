// The bench's repository choices, parsed from `--sizes`: pure, so test/ can
// check it without running anything.
//
//   1000, 10_000, 10k       the classic generator (bench/repos.ts) up to 100k files
//   500k, 1m, 1.5m          above 100k files: the large-repository generator (~20 files per directory)
//   dirs100k                a repository of 100k directories (2 files each)

/** How a repository's files are laid out (bench/repos.ts generates each). */
export type Layout = 'classic' | 'wide' | 'dirs';

export interface RepoSpec {
  /** Committed files (about: the classic and wide generators make exactly this many, plus nothing else tracked). */
  size: number;
  layout: Layout;
  /** Directories, for the `dirs` layout. */
  dirs?: number;
  /** Cache key under .bench/ (`repo-<key>`): the size for the classic layout, as before. */
  key: string;
  /** What the tables print in their first column. */
  label: string;
}

/** Sizes up to this use the classic generator, unchanged, so earlier figures stay comparable. */
export const CLASSIC_MAX = 100_000;
/** Files per directory of a `dirsN` repository. */
export const FILES_PER_DIR_OF_DIRS = 2;

/** `1000`, `10_000`, `10k`, `1.5m` → a positive integer, or NaN. */
export function parseCount(s: string): number {
  const m = /^(\d+(?:_\d+)*(?:\.\d+)?)([km]?)$/i.exec(s.trim());
  if (!m) return NaN;
  const base = Number((m[1] ?? '').replace(/_/g, ''));
  const mult = (m[2] ?? '').toLowerCase() === 'm' ? 1_000_000 : (m[2] ?? '').toLowerCase() === 'k' ? 1000 : 1;
  const n = Math.round(base * mult);
  return Number.isInteger(n) && n > 0 ? n : NaN;
}

const fmtInt = (n: number) => n.toLocaleString('en-US');

/** `1k`, `500k`, `1M`, `1.5M`, `1,234`: a size as the growth table and plot print it. */
export function shortCount(n: number): string {
  if (n >= 1_000_000 && n % 100_000 === 0) return `${n / 1_000_000}M`;
  if (n >= 1000 && n % 1000 === 0) return `${n / 1000}k`;
  return fmtInt(n);
}

/** One `--sizes` entry; throws with the reason when it is not one. */
export function parseRepoSpec(s: string): RepoSpec {
  const t = s.trim();
  const dirs = /^dirs(.+)$/i.exec(t);
  if (dirs) {
    const n = parseCount(dirs[1] ?? '');
    if (!Number.isFinite(n) || n < 10) throw new Error(`--sizes: ${t}: dirsN needs a number of directories (≥ 10), e.g. dirs100k`);
    const size = n * FILES_PER_DIR_OF_DIRS;
    return { size, layout: 'dirs', dirs: n, key: `dirs-${n}`, label: `${shortCount(n)} dirs` };
  }
  const n = parseCount(t);
  if (!Number.isFinite(n) || n < 10) throw new Error(`--sizes: ${t}: not a number of files (≥ 10; 10k, 1m and 1_000 are understood)`);
  if (n <= CLASSIC_MAX) return { size: n, layout: 'classic', key: String(n), label: fmtInt(n) };
  return { size: n, layout: 'wide', key: `wide-${n}`, label: fmtInt(n) };
}

/** `--sizes 1000,10k,500k,1m,dirs100k` → the repositories, in the order given, duplicates dropped. */
export function parseSizes(s: string): RepoSpec[] {
  const out: RepoSpec[] = [];
  for (const part of s.split(',')) {
    if (!part.trim()) continue;
    const spec = parseRepoSpec(part);
    if (!out.some((o) => o.key === spec.key)) out.push(spec);
  }
  if (!out.length) throw new Error('--sizes: no size given');
  return out;
}
