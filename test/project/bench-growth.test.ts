// The bench's pure parts (issue 19): `--sizes` parsing, the growth table, the
// ASCII plot and the scale targets' lines. The bench itself is slow and never
// runs in the suite; these functions decide what its output says.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseCount, parseSizes, shortCount } from '../../bench/args.js';
import { asciiPlot, formatGrowthTable, growthSeries, targetSummary, type GrowthInput } from '../../bench/growth.js';
import { spreadPick } from '../../bench/changes.js';
import { evenly, filesPerDir, largeDirs } from '../../bench/repos.js';

test('--sizes: plain numbers, _ separators, k and m suffixes, dirsN; classic generator up to 100k', () => {
  assert.is(parseCount('1000'), 1000);
  assert.is(parseCount('10_000'), 10_000);
  assert.is(parseCount('10k'), 10_000);
  assert.is(parseCount('500K'), 500_000);
  assert.is(parseCount('1m'), 1_000_000);
  assert.is(parseCount('1.5M'), 1_500_000);
  assert.ok(Number.isNaN(parseCount('1g')));
  assert.ok(Number.isNaN(parseCount('')));
  assert.ok(Number.isNaN(parseCount('-5')));
  const specs = parseSizes('1000,100k,500k,1m,dirs100k,1000');
  assert.equal(
    specs.map((s) => [s.size, s.layout, s.key, s.label]),
    [
      [1000, 'classic', '1000', '1,000'],
      [100_000, 'classic', '100000', '100,000'],
      [500_000, 'wide', 'wide-500000', '500,000'],
      [1_000_000, 'wide', 'wide-1000000', '1,000,000'],
      [200_000, 'dirs', 'dirs-100000', '100k dirs'],
    ],
  );
  assert.is(specs[4]?.dirs, 100_000);
  assert.throws(() => parseSizes('5'), /≥ 10/);
  assert.throws(() => parseSizes('10x'), /not a number of files/);
  assert.throws(() => parseSizes('dirsx'), /dirsN/);
  assert.is(shortCount(1_000_000), '1M');
  assert.is(shortCount(500_000), '500k');
  assert.is(shortCount(1234), '1,234');
});

test('spreadPick picks what filtering an array of the names would, from the NUL string alone', () => {
  const names = Array.from({ length: 97 }, (_, i) => `d${i % 3}/f${i}.ts`);
  const nul = `${names.join('\0')}\0`;
  const accept = (n: string) => !n.startsWith('d1/');
  const kept = names.filter(accept);
  for (const [count, divisor, phase] of [
    [10, 10, 'first'],
    [8, 9, 'last'],
    [200, 200, 'first'],
  ] as const) {
    const step = Math.max(1, Math.floor(kept.length / divisor));
    const want = phase === 'first' ? 0 : step - 1;
    assert.equal(spreadPick(nul, count, divisor, phase, accept), kept.filter((_, i) => i % step === want).slice(0, count));
  }
});

test('large layouts: unique directories with a few deep trees, files spread as asked (dirsN: at most 2 a directory)', () => {
  let seed = 1;
  const r = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
  const dirs = largeDirs(r, 5000, 4, 18);
  assert.is(dirs.length, 5000);
  assert.is(new Set(dirs).size, 5000);
  assert.ok(Math.max(...dirs.map((d) => d.split('/').length)) >= 18, 'deep trees');
  const counts = filesPerDir(r, dirs.length, 99_997, 10, 30);
  assert.is(
    counts.reduce((a, b) => a + b, 0),
    99_997,
  );
  const even = evenly(100_000, 199_997);
  assert.is(
    even.reduce((a, b) => a + b, 0),
    199_997,
  );
  assert.is(Math.max(...even), 2);
  assert.is(Math.min(...even), 1);
});

const row = (size: number, what: string, agentsnapMs: number, baselineMs = 100, extra: Partial<GrowthInput> = {}): GrowthInput => ({
  size,
  layout: size > 100_000 ? 'wide' : 'classic',
  what,
  agentsnapMs,
  baselineMs,
  ratio: agentsnapMs / baselineMs,
  target: null,
  serverRssMiB: null,
  ...extra,
});

const EDIT = 'tool call: edits one file';
const FIXED = 'session fixed cost: `wrap -- true` (agent idle)';

test('growth table: one column per size, the growth from the smallest to the largest; 100k-directory rows left out', () => {
  const rows = [
    row(1000, EDIT, 30, 20, { serverRssMiB: 60, serverWatches: 70 }),
    row(100_000, EDIT, 60, 500, { serverRssMiB: 100, serverWatches: 6000 }),
    row(1_000_000, EDIT, 66, 5000, { serverRssMiB: 250, serverWatches: 50_000 }),
    row(200_000, EDIT, 999, 1, { layout: 'dirs', serverRssMiB: 999 }),
  ];
  const series = growthSeries(rows);
  assert.equal(
    series.map((s) => s.name),
    ['one-file edit', 'raw git snapshot (baseline)', 'server RSS (peak over the rows)', 'server inotify watches'],
  );
  const table = formatGrowthTable(series);
  const lines = table.split('\n');
  assert.match(lines[0] ?? '', /^figure\s+1k files\s+100k files\s+1M files\s+growth$/);
  assert.match(table, /one-file edit\s+30 ms\s+60 ms\s+66 ms\s+×2\.2 for ×1000 files/);
  assert.match(table, /raw git snapshot \(baseline\)\s+20 ms\s+500 ms\s+5\.00 s\s+×250 for ×1000 files/);
  assert.match(table, /server RSS \(peak over the rows\)\s+60 MiB\s+100 MiB\s+250 MiB/);
  assert.match(table, /server inotify watches\s+70\s+6,000\s+50,000/);
  assert.not.match(table, /999/);
  assert.is(formatGrowthTable(growthSeries([row(1000, EDIT, 30)])), '', 'one size: no table');
});

test('ASCII plot: log-scaled sizes on x with a tick per size, decades on y, a marker per figure', () => {
  const series = growthSeries([row(1000, EDIT, 10, 20), row(10_000, EDIT, 20, 60), row(1_000_000, EDIT, 30, 5000)]);
  const plot = asciiPlot(series, { width: 41, height: 9 });
  const lines = plot.split('\n');
  const axis = lines.find((l) => /\+-/.test(l)) ?? '';
  const start = axis.indexOf('+');
  // 1k, 10k and 1M at 0, 1/3 and 3/3 of the width: log scale.
  assert.equal(
    [...axis.slice(start + 1)].flatMap((c, i) => (c === '+' ? [i] : [])),
    [0, 13, 40],
  );
  assert.match(lines[lines.indexOf(axis) + 1] ?? '', /1k\s+10k\s+1M\s+files \(log scale\)/);
  assert.match(plot, /10 ms \|/);
  assert.match(plot, /10 s \|/);
  // The edit's E at x = 0 on the 10 ms row (the bottom), the raw git g at the top right (5 s, just under 10 s).
  const bottom = lines[8] ?? '';
  assert.is(bottom.slice(bottom.indexOf('|') + 1)[0], 'E');
  assert.match(plot, /E one-file edit {3}g raw git snapshot \(baseline\)/);
  const rowsWithG = lines.filter((l) => /\|.*g/.test(l));
  assert.ok(rowsWithG.length >= 3, 'g at each size');
  assert.is(asciiPlot(growthSeries([row(1000, EDIT, 10)])), '', 'one size: no plot');
});

test('issue 19 targets: edit flat from 100k, server RSS at 1M, session fixed cost; ✓/✗, nothing for what did not run', () => {
  const fixedTarget = { maxRatio: 1, issue: 19 };
  const lines = targetSummary([
    row(100_000, EDIT, 60),
    row(500_000, EDIT, 95),
    row(1_000_000, EDIT, 80, 100, { serverRssMiB: 280 }),
    row(1_000_000, 'undo: 10 files differ', 900, 100, { serverRssMiB: 310 }),
    row(10_000, FIXED, 400, 500, { target: fixedTarget }),
    row(1_000_000, FIXED, 2000, 1000, { target: fixedTarget }),
  ]);
  assert.equal(lines, [
    'one-file edit per call flat from 100k (#19): 95 ms at 500,000 files / 60 ms at 100,000 = 1.58× (≤ 1.5×) ✗',
    'one-file edit per call flat from 100k (#19): 80 ms at 1,000,000 files / 60 ms at 100,000 = 1.33× (≤ 1.5×) ✓',
    'server RSS at 1,000,000 files (#19): peak 310 MiB over 2 rows (< 300 MiB) ✗',
    'session fixed cost ≤ node start-up + git status (#19): 10k 0.80× ✓, 1M 2.00× ✗',
  ]);
  assert.equal(targetSummary([row(1000, EDIT, 30)]), []);
  assert.match(targetSummary([row(1_000_000, EDIT, 30)])[0] ?? '', /100,000 not in this run/);
});

test.run();
