// Property-style test: random sequences of edits, creations, deletions,
// renames, chmods, symlink and file/directory changes over many steps. Undo to
// every step gives a worktree equal, byte for byte, to what was on disk before
// that step; redo returns through every state; the user's index never changes.
// Seeded, bounded for CI; AGENTSNAP_PROPERTY_RUNS=<n> runs more sequences.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { indexBytes, tempRepo, worktreeFiles, type TempRepo } from '../support/helpers.js';
import { seededRandom } from '../support/crash-harness.js';
import { redo, snap, undo } from '../../src/index.js';

const POOL = ['a.txt', 'b.txt', 'dir/c.txt', 'dir/sub/d.bin', 'e', 'e/inner', 'x y.txt', 'dir2', 'dir2/f', 'ünï.txt'];
const LINK_TARGETS = ['a.txt', 'dir', '../outside', 'missing', 'dir/sub/d.bin'];

function lexists(abs: string): fs.Stats | null {
  try {
    return fs.lstatSync(abs);
  } catch {
    return null;
  }
}

/** Makes every parent of rel a real directory (removing files or symlinks in the way). */
function makeParents(repo: TempRepo, rel: string): void {
  const parts = rel.split('/');
  let cur = repo.dir;
  for (const part of parts.slice(0, -1)) {
    cur = path.join(cur, part);
    const st = lexists(cur);
    if (st && !st.isDirectory()) fs.rmSync(cur);
    if (!lexists(cur)) fs.mkdirSync(cur);
  }
  const st = lexists(path.join(repo.dir, rel));
  if (st?.isDirectory()) fs.rmSync(path.join(repo.dir, rel), { recursive: true });
}

function existing(repo: TempRepo): string[] {
  return [...worktreeFiles(repo, (r) => r === 'ignored').keys()].filter((p) => p !== '.gitignore');
}

function randomEdit(repo: TempRepo, rnd: () => number): string {
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const bytes = () => Buffer.from(Array.from({ length: Math.floor(rnd() * 40) }, () => pick([0x61, 0x62, 0x0a, 0x0d, 0x00, 0xff, 0x20])));
  const files = existing(repo);
  const kind = pick(['write', 'write', 'create', 'delete', 'rename', 'chmod', 'symlink', 'symlink']);
  if ((kind === 'delete' || kind === 'rename' || kind === 'chmod') && files.length === 0) return 'noop';
  switch (kind) {
    case 'write':
    case 'create': {
      const rel = kind === 'write' && files.length > 0 && rnd() < 0.6 ? pick(files) : pick(POOL);
      makeParents(repo, rel);
      const abs = path.join(repo.dir, rel);
      if (lexists(abs)?.isSymbolicLink()) fs.rmSync(abs);
      fs.writeFileSync(abs, bytes());
      return `${kind} ${rel}`;
    }
    case 'delete': {
      const rel = pick(files);
      fs.rmSync(path.join(repo.dir, rel));
      return `delete ${rel}`;
    }
    case 'rename': {
      const from = pick(files);
      const to = pick(POOL);
      if (to === from || to.startsWith(`${from}/`) || from.startsWith(`${to}/`)) return 'noop';
      const content = lexists(path.join(repo.dir, from))?.isSymbolicLink() ? null : fs.readFileSync(path.join(repo.dir, from));
      if (content === null) return 'noop';
      fs.rmSync(path.join(repo.dir, from));
      makeParents(repo, to);
      const abs = path.join(repo.dir, to);
      if (lexists(abs)) fs.rmSync(abs);
      fs.writeFileSync(abs, content);
      return `rename ${from} ${to}`;
    }
    case 'chmod': {
      const rel = pick(files);
      const abs = path.join(repo.dir, rel);
      const st = fs.lstatSync(abs);
      if (!st.isFile()) return 'noop';
      fs.chmodSync(abs, st.mode & 0o100 ? 0o644 : 0o755);
      return `chmod ${rel}`;
    }
    default: {
      const rel = pick(POOL);
      makeParents(repo, rel);
      const abs = path.join(repo.dir, rel);
      if (lexists(abs)) fs.rmSync(abs);
      fs.symlinkSync(pick(LINK_TARGETS), abs);
      return `symlink ${rel}`;
    }
  }
}

const RUNS = Number(process.env.AGENTSNAP_PROPERTY_RUNS ?? 2);
const STEPS = 7;

for (let run = 0; run < RUNS; run++) {
  const seed = 1000 + run;
  test(`random edits over ${STEPS} steps (seed ${seed}): undo to every step, redo back, index untouched`, async () => {
    const repo = tempRepo({ files: { 'a.txt': 'a\n', 'dir/c.txt': 'c\n', '.gitignore': 'ignored/\n' } });
    fs.mkdirSync(path.join(repo.base, 'outside'));
    repo.write('ignored/keep.txt', 'ignored\n');
    repo.write('a.txt', 'staged\n');
    repo.git(['add', 'a.txt']); // the user has something staged: it must stay staged
    const rnd = seededRandom(seed);
    const opts = { cwd: repo.dir, env: repo.env };
    try {
      const index = indexBytes(repo);
      const before: Map<string, { mode: string; content: Buffer }>[] = [];
      const log: string[] = [];
      for (let s = 1; s <= STEPS; s++) {
        before.push(worktreeFiles(repo));
        await snap({ ...opts, phase: 'pre', tool: 'Bash' });
        const n = 1 + Math.floor(rnd() * 4);
        for (let i = 0; i < n; i++) log.push(`step ${s}: ${randomEdit(repo, rnd)}`);
        await snap({ ...opts, phase: 'post' });
      }
      const final = worktreeFiles(repo);
      const why = () => log.join('\n');
      // Walk back: bare undo, STEPS times.
      for (let k = STEPS; k >= 1; k--) {
        const r = await undo(opts);
        assert.is(r.files?.target.step, k, why());
        assert.equal(r.files?.left, [], why());
        assert.equal(worktreeFiles(repo), before[k - 1], `undo ${k}\n${why()}`);
      }
      // And forward again: every redo returns to the state before the matching undo.
      for (let k = 2; k <= STEPS + 1; k++) {
        await redo(opts);
        assert.equal(worktreeFiles(repo), k <= STEPS ? before[k - 1] : final, `redo to ${k}\n${why()}`);
      }
      // Jumping straight to a random step works too, and redo comes back.
      const target = 1 + Math.floor(rnd() * STEPS);
      await undo({ ...opts, step: target });
      assert.equal(worktreeFiles(repo), before[target - 1], `undo ${target}\n${why()}`);
      await redo(opts);
      assert.equal(worktreeFiles(repo), final);
      assert.equal(indexBytes(repo), index, 'the user index is unchanged');
      assert.is(repo.read('ignored/keep.txt').toString(), 'ignored\n');
      assert.equal(fs.readdirSync(path.join(repo.base, 'outside')), []);
    } finally {
      repo.cleanup();
    }
  });
}

test.run();
