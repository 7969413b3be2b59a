// The bench's one table: plain text, fixed columns, stable for piping.
import type { Row } from './scenarios.js';

const fmtInt = (n: number) => n.toLocaleString('en-US');
const fmtMs = (n: number) => (Number.isFinite(n) ? `${n < 10 ? n.toFixed(1) : n.toFixed(0)} ms` : '-');

function targetCell(r: Row): string {
  if (!r.target) return '';
  const ok = r.ratio <= r.target.maxRatio;
  return `≤${r.target.maxRatio}x (#${r.target.issue}) ${ok ? '✓' : '✗'}`;
}

export function formatTable(rows: Row[]): string {
  const head = ['files', 'what', 'agentsnap', 'baseline', 'baseline ms', 'ratio', 'target', 'max RSS'];
  const body = rows.map((r) => [
    fmtInt(r.size),
    r.what,
    fmtMs(r.agentsnapMs),
    r.baseline,
    fmtMs(r.baselineMs),
    `${r.ratio.toFixed(2)}x`,
    targetCell(r),
    r.maxRssMiB === null ? '' : `${r.maxRssMiB.toFixed(0)} MiB`,
  ]);
  const right = new Set([0, 2, 4, 5, 7]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => [...(b[i] ?? '')].length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => {
        const pad = ' '.repeat((widths[i] ?? 0) - [...c].length);
        return right.has(i) ? pad + c : c + pad;
      })
      .join('  ')
      .trimEnd();
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)].join('\n');
}
