// How cost grows with the repository's size: after a run over several sizes,
// a small table (each main figure per size, and its growth from the smallest
// size to the largest), an ASCII plot of the per-call figures (sizes and
// times both log-scaled), and the scale targets of issue 19 with ✓/✗. Pure
// functions of the rows, so test/project/bench-growth.test.ts checks them.
import { shortCount } from './args.js';

/** What growth.ts reads of a bench row (bench/scenarios.ts `Row`). */
export interface GrowthInput {
  size: number;
  layout?: string;
  what: string;
  agentsnapMs: number;
  baselineMs: number;
  ratio: number;
  target: { maxRatio: number; issue: number } | null;
  serverRssMiB: number | null;
  serverWatches?: number | null;
}

export interface Series {
  name: string;
  /** One character marking it in the plot. */
  marker: string;
  unit: 'ms' | 'MiB' | 'watches';
  /** Value by size. */
  points: Map<number, number>;
  /** Drawn in the plot (false: the table only, to keep the plot readable). */
  plot: boolean;
}

/** The rows of the growth table, found by their `what` (agentsnap's figure, or the row's baseline). */
export const GROWTH_FIGURES: { what: string; name: string; marker: string; baseline?: boolean; tableOnly?: boolean }[] = [
  { what: 'snap: first of a new session', name: 'first snapshot (cold)', marker: 'F' },
  { what: 'tool call: read-only', name: 'read-only call (Read: no hook)', marker: 'r', tableOnly: true },
  { what: 'tool call: read-only Bash (`ls`)', name: 'read-only call (Bash `ls`)', marker: 'R' },
  { what: 'tool call: edits one file', name: 'one-file edit', marker: 'E' },
  { what: 'tool call: creates 100 files', name: '100 new files', marker: 'C' },
  { what: 'undo: 10 files differ', name: 'undo of 10 files', marker: 'U' },
  { what: 'undo: 100 files differ', name: 'undo of 100 files', marker: 'H', tableOnly: true },
  { what: 'session fixed cost: `wrap -- true` (agent idle)', name: 'session fixed cost', marker: 'S' },
  { what: 'tool call: edits one file', name: 'raw git snapshot (baseline)', marker: 'g', baseline: true },
  {
    what: 'session fixed cost: `wrap -- true` (agent idle)',
    name: 'node start-up + git status',
    marker: 'n',
    baseline: true,
    tableOnly: true,
  },
];

/** Sizes of the file-count repositories in the rows (a 100k-directory repository is not on that axis). */
function sizesOf(rows: GrowthInput[]): number[] {
  return [...new Set(rows.filter((r) => r.layout !== 'dirs').map((r) => r.size))].sort((a, b) => a - b);
}

export function growthSeries(rows: GrowthInput[]): Series[] {
  const onAxis = rows.filter((r) => r.layout !== 'dirs');
  const out: Series[] = [];
  for (const f of GROWTH_FIGURES) {
    const points = new Map<number, number>();
    for (const r of onAxis) if (r.what === f.what) points.set(r.size, f.baseline ? r.baselineMs : r.agentsnapMs);
    if (points.size) out.push({ name: f.name, marker: f.marker, unit: 'ms', points, plot: !f.tableOnly });
  }
  const maxBy = (pick: (r: GrowthInput) => number | null | undefined) => {
    const points = new Map<number, number>();
    for (const r of onAxis) {
      const v = pick(r);
      if (v === null || v === undefined || !Number.isFinite(v)) continue;
      points.set(r.size, Math.max(points.get(r.size) ?? 0, v));
    }
    return points;
  };
  const rss = maxBy((r) => r.serverRssMiB);
  if (rss.size) out.push({ name: 'server RSS (peak over the rows)', marker: 'M', unit: 'MiB', points: rss, plot: false });
  const watches = maxBy((r) => r.serverWatches);
  if (watches.size) out.push({ name: 'server inotify watches', marker: 'W', unit: 'watches', points: watches, plot: false });
  return out;
}

function fmtValue(v: number | undefined, unit: Series['unit']): string {
  if (v === undefined || !Number.isFinite(v)) return '-';
  if (unit === 'MiB') return `${v.toFixed(0)} MiB`;
  if (unit === 'watches') return v.toLocaleString('en-US');
  if (v >= 1000) return `${(v / 1000).toFixed(v >= 10_000 ? 1 : 2)} s`;
  return v < 10 ? `${v.toFixed(1)} ms` : `${v.toFixed(0)} ms`;
}

function pad(s: string, w: number, right: boolean): string {
  const n = Math.max(0, w - [...s].length);
  return right ? ' '.repeat(n) + s : s + ' '.repeat(n);
}

/** The growth table: one line per figure, one column per size, then smallest → largest as a factor. Empty below 2 sizes. */
export function formatGrowthTable(series: Series[]): string {
  const sizes = [...new Set(series.flatMap((s) => [...s.points.keys()]))].sort((a, b) => a - b);
  if (sizes.length < 2) return '';
  const head = ['figure', ...sizes.map((n) => `${shortCount(n)} files`), 'growth'];
  const body = series.map((s) => {
    const have = sizes.filter((n) => s.points.has(n));
    const first = have[0];
    const last = have[have.length - 1];
    const a = first === undefined ? undefined : s.points.get(first);
    const b = last === undefined ? undefined : s.points.get(last);
    const growth =
      first !== undefined && last !== undefined && first !== last && a !== undefined && b !== undefined && a >= (s.unit === 'ms' ? 1 : 1e-9)
        ? `×${(b / a).toFixed(b / a >= 10 ? 0 : 1)} for ×${(last / first).toFixed(0)} files`
        : '';
    return [s.name, ...sizes.map((n) => fmtValue(s.points.get(n), s.unit)), growth];
  });
  const widths = head.map((h, i) => Math.max([...h].length, ...body.map((b) => [...(b[i] ?? '')].length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => pad(c, widths[i] ?? 0, i > 0 && i < cells.length - 1))
      .join('  ')
      .trimEnd();
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)].join('\n');
}

const log10 = Math.log10;

function fmtAxisMs(v: number): string {
  if (v >= 1000) return `${+(v / 1000).toPrecision(3)} s`;
  return `${+v.toPrecision(3)} ms`;
}

/**
 * An ASCII plot of the `ms` series: sizes on x and times on y, both on log
 * scales (decades marked on y), each series its marker at its sizes joined
 * by dots; `*` where two markers fall on one cell. Series with `plot: false`
 * stay in the table only. Empty below 2 sizes.
 */
export function asciiPlot(series: Series[], opts: { width?: number; height?: number } = {}): string {
  const plotted = series.filter((s) => s.plot && s.unit === 'ms' && [...s.points.values()].some((v) => v > 0));
  const sizes = [...new Set(plotted.flatMap((s) => [...s.points.keys()]))].sort((a, b) => a - b);
  if (sizes.length < 2) return '';
  const width = Math.max(20, opts.width ?? 64);
  const height = Math.max(5, opts.height ?? 16);
  const values = plotted.flatMap((s) => [...s.points.values()].filter((v) => v > 0));
  const yLo = 10 ** Math.floor(log10(Math.min(...values)));
  let yHi = 10 ** Math.ceil(log10(Math.max(...values)));
  if (yHi <= yLo) yHi = yLo * 10;
  const xLo = log10(sizes[0] as number);
  const xHi = log10(sizes[sizes.length - 1] as number);
  const col = (size: number) => Math.round(((log10(size) - xLo) / (xHi - xLo)) * (width - 1));
  const rowOf = (v: number) => Math.round(((log10(v) - log10(yLo)) / (log10(yHi) - log10(yLo))) * (height - 1));
  const grid: string[][] = Array.from({ length: height }, () => Array.from({ length: width }, () => ' '));
  const set = (x: number, y: number, ch: string, strong: boolean) => {
    const cellRow = grid[height - 1 - y];
    if (!cellRow || x < 0 || x >= width) return;
    const cur = cellRow[x] ?? ' ';
    if (!strong) {
      if (cur === ' ') cellRow[x] = ch;
      return;
    }
    cellRow[x] = cur === ' ' || cur === '.' || cur === ch ? ch : '*';
  };
  // Lines first (in log-log space), markers on top.
  for (const s of plotted) {
    const pts = [...s.points].filter(([, v]) => v > 0).sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < pts.length; i++) {
      const [s0, v0] = pts[i - 1] as [number, number];
      const [s1, v1] = pts[i] as [number, number];
      const x0 = col(s0);
      const x1 = col(s1);
      for (let x = x0 + 1; x < x1; x++) {
        const t = (x - x0) / (x1 - x0);
        set(x, Math.round(rowOf(v0) + t * (rowOf(v1) - rowOf(v0))), '.', false);
      }
    }
  }
  for (const s of plotted) for (const [size, v] of s.points) if (v > 0) set(col(size), rowOf(v), s.marker, true);
  const labels = new Map<number, string>();
  for (let d = log10(yLo); d <= log10(yHi) + 1e-9; d++) labels.set(rowOf(10 ** d), fmtAxisMs(10 ** d));
  const lw = Math.max(...[...labels.values()].map((l) => l.length));
  const lines: string[] = [];
  for (let y = height - 1; y >= 0; y--)
    lines.push(`${pad(labels.get(y) ?? '', lw, true)} |${(grid[height - 1 - y] ?? []).join('').trimEnd()}`);
  const axis = Array.from({ length: width }, () => '-');
  for (const n of sizes) axis[col(n)] = '+';
  lines.push(`${' '.repeat(lw)} +${axis.join('')}`);
  let ticks = '';
  for (const n of sizes) {
    const label = shortCount(n);
    const at = Math.max(ticks.length === 0 ? 0 : ticks.length + 1, col(n) - Math.floor(label.length / 2));
    ticks = `${ticks}${' '.repeat(Math.max(0, at - ticks.length))}${label}`;
  }
  lines.push(`${' '.repeat(lw + 2)}${ticks}   files (log scale)`);
  const legend = plotted.map((s) => `${s.marker} ${s.name}`);
  lines.push('');
  for (let i = 0; i < legend.length; i += 4) lines.push(`${' '.repeat(lw + 2)}${legend.slice(i, i + 4).join('   ')}`);
  return lines.join('\n');
}

/** Issue 19: a one-file edit's per-call cost at N ≥ 500k files at most this times its cost at 100k. */
export const FLAT_EDIT_MAX = 1.5;
/** Issue 19: the server's peak memory at 1M files under this. */
export const SERVER_RSS_MAX_MIB = 300;

/** Issue 19's scale targets, one line each with ✓/✗ (nothing for a target whose rows this run has not got). */
export function targetSummary(rows: GrowthInput[]): string[] {
  const onAxis = rows.filter((r) => r.layout !== 'dirs');
  const fmt = (n: number) => n.toLocaleString('en-US');
  const out: string[] = [];
  const edit = (size: number) => onAxis.find((r) => r.size === size && r.what === 'tool call: edits one file');
  const base = edit(100_000);
  for (const size of sizesOf(onAxis).filter((n) => n > 100_000)) {
    const big = edit(size);
    if (!big) continue;
    if (!base) {
      out.push(`one-file edit per call flat from 100k (#19): ${fmt(size)} files measured, 100,000 not in this run: no ratio`);
      continue;
    }
    const ratio = big.agentsnapMs / base.agentsnapMs;
    out.push(
      `one-file edit per call flat from 100k (#19): ${fmtValue(big.agentsnapMs, 'ms')} at ${fmt(size)} files / ${fmtValue(base.agentsnapMs, 'ms')} at 100,000 = ${ratio.toFixed(2)}× (≤ ${FLAT_EDIT_MAX}×) ${ratio <= FLAT_EDIT_MAX ? '✓' : '✗'}`,
    );
  }
  for (const size of sizesOf(onAxis).filter((n) => n >= 1_000_000)) {
    const rss = onAxis.filter((r) => r.size === size && r.serverRssMiB !== null).map((r) => r.serverRssMiB as number);
    if (!rss.length) continue;
    const peak = Math.max(...rss);
    out.push(
      `server RSS at ${fmt(size)} files (#19): peak ${peak.toFixed(0)} MiB over ${rss.length} rows (< ${SERVER_RSS_MAX_MIB} MiB) ${peak < SERVER_RSS_MAX_MIB ? '✓' : '✗'}`,
    );
  }
  const fixed = onAxis.filter((r) => r.what.startsWith('session fixed cost: ') && r.target);
  if (fixed.length) {
    const cells = fixed.map((r) => `${shortCount(r.size)} ${r.ratio.toFixed(2)}× ${r.ratio <= (r.target?.maxRatio ?? 1) ? '✓' : '✗'}`);
    out.push(`session fixed cost ≤ node start-up + git status (#19): ${cells.join(', ')}`);
  }
  return out;
}
