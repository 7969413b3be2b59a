// The bench's tables: plain text, fixed columns, stable for piping. One row
// per size and scenario: agentsnap, the raw git baseline and the ratio, the
// target, then the peers' baselines measured in the same loop, then memory.
import type { Row } from './scenarios.js';
import { DISK_TARGET_RATIO, type DiskResult } from './disk.js';
import { BACKUP, ISOGIT, SHADOW } from './peers.js';

/** Issue 7: any agentsnap process under this at 100k files. */
export const MEMORY_TARGET_MIB = 150;
const MEMORY_TARGET_SIZE = 100_000;
/** Issue 19: the server under this at 1M files (and, the bench says, at 500k: the 1M budget applies from there). */
export const LARGE_MEMORY_TARGET_MIB = 300;
export const LARGE_MEMORY_TARGET_SIZE = 500_000;

/** The memory target of a repository (MiB), null where none applies (below 100k; a 100k-directory repository). */
export function memoryTargetMiB(r: { size: number; layout?: string }): number | null {
  if (r.layout === 'dirs' || r.size < MEMORY_TARGET_SIZE) return null;
  return r.size >= LARGE_MEMORY_TARGET_SIZE ? LARGE_MEMORY_TARGET_MIB : MEMORY_TARGET_MIB;
}

const fmtInt = (n: number) => n.toLocaleString('en-US');
const fmtMs = (n: number) => (Number.isFinite(n) ? `${n < 10 ? n.toFixed(1) : n.toFixed(0)} ms` : '-');
const fmtMiB = (n: number | null) => (n === null ? '-' : `${n.toFixed(0)} MiB`);
const fmtBytes = (n: number) => {
  const a = Math.abs(n);
  const s = a >= 1024 * 1024 ? `${(a / 1024 / 1024).toFixed(2)} MiB` : `${(a / 1024).toFixed(0)} KiB`;
  return n < 0 ? `-${s}` : s;
};

function targetCell(r: Row): string {
  if (!r.target) return '';
  const { maxRatio, maxMs, maxAddedMs } = r.target;
  const ok =
    r.ratio <= maxRatio &&
    (maxMs === undefined || r.agentsnapMs < maxMs) &&
    (maxAddedMs === undefined || r.agentsnapMs - r.baselineMs <= maxAddedMs);
  const parts = [
    ...(Number.isFinite(maxRatio) ? [`≤${maxRatio}x`] : []),
    ...(maxMs !== undefined ? [`<${maxMs}ms`] : []),
    ...(maxAddedMs !== undefined ? [`+≤${maxAddedMs}ms`] : []),
  ];
  return `${parts.join(' ')} (#${r.target.issue}) ${ok ? '✓' : '✗'}`;
}

function peerCell(r: Row, name: string): string {
  const p = r.peers[name];
  if (!p) return '';
  return `${fmtMs(p.ms)}${p.samples < r.samples ? ` (${p.samples} run${p.samples === 1 ? '' : 's'})` : ''}`;
}

function memoryMark(r: { size: number; layout?: string }, mib: number | null): string {
  const target = memoryTargetMiB(r);
  if (mib === null || target === null) return '';
  return mib < target ? ' ✓' : ' ✗';
}

function render(head: string[], body: string[][], right: Set<number>): string {
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

export function formatTable(rows: Row[]): string {
  const head = ['files', 'what', 'agentsnap', 'raw git', 'ratio', 'target', BACKUP, SHADOW, ISOGIT, 'max RSS', 'server RSS', 'watches'];
  const body = rows.map((r) => [
    r.label ?? fmtInt(r.size),
    r.what,
    fmtMs(r.agentsnapMs),
    fmtMs(r.baselineMs),
    `${r.ratio.toFixed(2)}x`,
    targetCell(r),
    peerCell(r, BACKUP),
    peerCell(r, SHADOW),
    peerCell(r, ISOGIT),
    r.maxRssMiB === null ? (r.server?.running ? 'no node' : '') : `${fmtMiB(r.maxRssMiB)}${memoryMark(r, r.maxRssMiB)}`,
    r.serverRssMiB === null ? '' : `${fmtMiB(r.serverRssMiB)}${memoryMark(r, r.serverRssMiB)}`,
    r.serverWatches === null || r.serverWatches === undefined ? '' : `${fmtInt(r.serverWatches)}${r.watchesFrom === 'fdinfo' ? '*' : ''}`,
  ]);
  const notes: string[] = [];
  for (const r of rows) {
    const name = r.label ?? fmtInt(r.size);
    if (r.server?.running) notes.push(`${name} ${r.what}: agentsnap server running (pid ${r.server.pid})`);
    for (const n of r.notes) notes.push(`${name} ${r.what}: ${n}`);
  }
  const legend = [
    `raw git: GIT_INDEX_FILE=<warm private index> git add -A; write-tree; commit-tree; update-ref. ${BACKUP}: Claude Code's checkpoint, a copy of each file`,
    `before it is written (in-process). ${SHADOW}: Cline/Gemini CLI, git add -A + git commit in a warm shadow git dir (core.worktree = the repo).`,
    `${ISOGIT}: statusMatrix + add/remove + commit in-process (a warm worker process), warm index. Every subject of a row handles the same change.`,
    `max RSS: peak of the agentsnap Node processes (CLI, or every Node process the hook commands start); server RSS: the warm server's VmHWM.`,
    `Memory targets: < ${MEMORY_TARGET_MIB} MiB at ${fmtInt(MEMORY_TARGET_SIZE)} files (#7), server < ${LARGE_MEMORY_TARGET_MIB} MiB at 1,000,000 (#19; marked from ${fmtInt(LARGE_MEMORY_TARGET_SIZE)}).`,
    `watches: the server's inotify watches at the end of the row (its status; * = counted from /proc/<pid>/fdinfo, \`inotify wd:\` lines).`,
    `session fixed cost rows: the raw git column is node start-up (\`node -e 0\`) + one \`git status\` of the repository instead; max RSS: the wrapper (it hosts the session's server).`,
  ];
  return [render(head, body, new Set([0, 2, 3, 4, 6, 7, 8, 9, 10, 11])), '', ...legend, ...(notes.length ? ['', ...notes] : [])].join('\n');
}

export function formatDiskTable(results: DiskResult[]): string {
  const head = [
    'files',
    'steps',
    'objects/ before',
    'growth (du)',
    'apparent',
    'reference',
    'ratio',
    'target',
    'loose',
    'packs',
    'stray',
    'locks',
  ];
  const body = results.map((d) => {
    if (d.skipped) return [fmtInt(d.size), 'skipped', '', '', '', '', '', '', '', '', '', ''];
    const scale = d.requestedSteps / d.steps;
    const est = (n: number) => (scale === 1 ? fmtBytes(n) : `${fmtBytes(n)} → ~${fmtBytes(n * scale)}`);
    const c = (s: DiskResult['before'], k: string) => String(s?.countObjects[k] ?? '?');
    return [
      fmtInt(d.size),
      scale === 1 ? String(d.steps) : `${d.steps} (of ${d.requestedSteps})`,
      fmtBytes(d.before?.blockBytes ?? NaN),
      est(d.growthBlockBytes),
      est(d.growthApparentBytes),
      est(d.reference.bytes),
      `${d.ratio.toFixed(2)}x`,
      `≤${DISK_TARGET_RATIO}x (#7) ${d.ratio <= DISK_TARGET_RATIO ? '✓' : '✗'}`,
      `${c(d.before, 'count')} → ${c(d.after, 'count')}`,
      `${c(d.before, 'packs')} → ${c(d.after, 'packs')}`,
      d.stray.length ? `✗ ${d.stray.length}` : '✓ none',
      d.locks.length ? `✗ ${d.locks.length}` : '✓ none',
    ];
  });
  const notes: string[] = [];
  for (const d of results) {
    const n = fmtInt(d.size);
    if (d.reduced)
      notes.push(`${n}: ${d.skipped ? '' : `ran ${d.steps} steps, extrapolated ×${d.requestedSteps / d.steps}: `}${d.reduced}`);
    if (d.skipped) continue;
    notes.push(
      `${n}: one hook call ${fmtMs(d.callMs)} (the session's second call), ${d.steps} steps in ${(d.stepsMs / 1000).toFixed(1)} s; reference = ${d.reference.blobs} blobs ${fmtBytes(d.reference.blobBytes)} + ${d.reference.trees} trees ${fmtBytes(d.reference.treeBytes)} (commits, not in the reference: ${d.reference.commits}, ${fmtBytes(d.reference.commitBytes)})`,
    );
    const co = (s: DiskResult['before']) =>
      s
        ? Object.entries(s.countObjects)
            .map(([k, v]) => `${k} ${v}`)
            .join(', ')
        : '?';
    notes.push(`${n}: git count-objects -v before: ${co(d.before)}`);
    notes.push(`${n}: git count-objects -v after:  ${co(d.after)}`);
    if (d.server?.running)
      notes.push(
        `${n}: agentsnap server running (pid ${d.server.pid})${d.serverRssMiB !== null ? `, peak ${fmtMiB(d.serverRssMiB)}` : ''}`,
      );
    for (const f of d.stray.slice(0, 5)) notes.push(`${n}: stray in objects/: ${f}`);
    for (const f of d.locks.slice(0, 5)) notes.push(`${n}: lock left in .git: ${f}`);
  }
  const title = `disk growth of the object store after one-file tool calls through the hooks, the session ended by its SessionEnd hook (maintenance run);
before: unreachable loose objects of earlier rows pruned; growth = du (block size) of .git/objects, after minus before;
reference = zlib size of the distinct blobs and trees the session added (#7: ≤ ${DISK_TARGET_RATIO}x)`;
  return [title, '', render(head, body, new Set([0, 2, 3, 4, 5, 6])), ...(notes.length ? ['', ...notes] : [])].join('\n');
}
