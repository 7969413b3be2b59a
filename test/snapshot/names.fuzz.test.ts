// A small seeded fuzz of odd file names (leading quote, trailing CR, newline,
// leading dash, backslash, glob and pathspec characters, tabs, non-ASCII)
// through user edits, `git add`/`rm --cached`/commit, skip-worktree and
// assume-unchanged flags, hard links, and an agent that rewrites files,
// symlinks, directories and .gitignore: the pre snapshot equals the disk, and
// undo gives back every path of it (or reports it left). Four seeds by
// default; AGENTSNAP_ATTACK_SEEDS=N runs seeds 1..N (245 passed here).
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cli, tempRepo, treeFiles, worktreeFiles, type TempRepo } from '../support/helpers.js';

const NAMES = [
  '"q"',
  'c\r',
  'n\nl',
  '-rf',
  'b\\s',
  '*',
  ':x',
  'sp ace',
  'é',
  'd/"q"',
  'd/c\r',
  'd/x',
  'e/f/g',
  '#h',
  '!i',
  'tab\tx',
  '"',
  "'",
  'a"b',
  'd2\r/z',
];
function rnd(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function mutate(r: TempRepo, rand: () => number, agent = false) {
  for (let k = 0; k < 4; k++) {
    const n = NAMES[Math.floor(rand() * NAMES.length)]!;
    const abs = path.join(r.dir, n);
    const op = Math.floor(rand() * (agent ? 7 : 5)) + (!agent && rand() < 0.4 ? 7 : 0);
    try {
      if (op === 0 || op === 1) {
        fs.rmSync(abs, { recursive: true, force: true });
        fs.mkdirSync(path.dirname(abs), { recursive: true });
        fs.writeFileSync(abs, `v${rand()}\r\n`);
      } else if (op === 2) fs.rmSync(abs, { recursive: true, force: true });
      else if (op === 3) {
        if (fs.existsSync(abs) && fs.lstatSync(abs).isFile()) fs.chmodSync(abs, rand() < 0.5 ? 0o755 : 0o644);
      } else if (op === 5)
        fs.writeFileSync(
          path.join(r.dir, '.gitignore'),
          NAMES.filter(() => rand() < 0.3)
            .map((x) => x.replace(/[\\*!#"\s]/g, '?'))
            .join('\n') + '\n',
        );
      else if (op === 6) {
        fs.rmSync(path.join(r.dir, n.split('/')[0]!), { recursive: true, force: true });
        fs.mkdirSync(path.join(r.dir, n), { recursive: true });
        fs.writeFileSync(path.join(r.dir, n, 'inner'), 'x');
      } else if (op === 7) r.gitRaw(['add', '--', n], { env: { GIT_LITERAL_PATHSPECS: '1' } });
      else if (op === 8) {
        const m = NAMES[Math.floor(rand() * NAMES.length)]!;
        if (fs.lstatSync(abs).isFile()) {
          fs.rmSync(path.join(r.dir, m), { recursive: true, force: true });
          fs.mkdirSync(path.dirname(path.join(r.dir, m)), { recursive: true });
          fs.linkSync(abs, path.join(r.dir, m));
        }
      } else if (op === 9) r.gitRaw(['update-index', rand() < 0.5 ? '--skip-worktree' : '--assume-unchanged', '--', n]);
      else if (op === 10) r.gitRaw(['rm', '-q', '--cached', '--', n], { env: { GIT_LITERAL_PATHSPECS: '1' } });
      else if (op === 11) {
        r.gitRaw(['add', '-A']);
        r.gitRaw(['commit', '-q', '-m', 'u']);
      } else {
        fs.rmSync(abs, { recursive: true, force: true });
        fs.mkdirSync(path.dirname(abs), { recursive: true });
        fs.symlinkSync(`t${Math.floor(rand() * 3)}`, abs);
      }
    } catch {
      /* a parent is a file: fine */
    }
  }
}

// Seeds 21 and 31 fail with the ":x" pathspec bug back (ignoredPaths without "./"); odd seeds use `* text=auto`.
const SEEDS = process.env.AGENTSNAP_ATTACK_SEEDS
  ? Array.from({ length: Number(process.env.AGENTSNAP_ATTACK_SEEDS) }, (_, i) => i + 1)
  : [21, 31, 1, 2];

test('odd names through user edits, git add/rm --cached/commit, flags, hard links, agent ignore rules, undo and redo: undo gives back every byte of the pre snapshot', async () => {
  for (const seed of SEEDS) {
    const rand = rnd(seed);
    const r = tempRepo({ files: { '.gitattributes': seed % 2 ? '* text=auto\n' : '', base: 'b\n' } });
    try {
      mutate(r, rand);
      r.git(['add', '-A']);
      r.git(['commit', '-q', '-m', 'c', '--allow-empty']);
      mutate(r, rand);
      const s0 = await cli(r, ['snap', '--json']);
      assert.is(s0.code, 0, s0.stderr);
      const pre = await cli(r, ['snap', '--phase', 'pre', '--tool', 'Bash', '--json']);
      assert.is(pre.code, 0, pre.stderr);
      const preCommit = (JSON.parse(pre.stdout) as { commit: string }).commit;
      const want = worktreeFiles(r);
      const got0 = treeFiles(r, preCommit);
      assert.equal([...got0.keys()].sort(), [...want.keys()].sort(), `seed ${seed}: pre snapshot paths`);
      for (const [k, v] of want)
        assert.ok(
          got0.get(k)?.content.equals(v.content) && got0.get(k)?.mode === v.mode,
          `seed ${seed}: pre snapshot of ${JSON.stringify(k)}`,
        );
      mutate(r, rand, true);
      mutate(r, rand, true);
      const post = await cli(r, ['snap', '--phase', 'post', '--json']);
      assert.is(post.code, 0, post.stderr);
      const ignPost = new Set(r.git(['ls-files', '-z', '-o', '-i', '--exclude-standard']).split('\0'));
      const u = await cli(r, ['undo', '--json']);
      assert.is(u.code, 0, u.stdout + u.stderr);
      const left = (JSON.parse(u.stdout) as { files: { left: { path: string }[] } }).files.left;
      const now = worktreeFiles(r);
      for (const [k, v] of want) {
        if (left.some((l) => l.path === k)) continue;
        assert.ok(
          now.get(k)?.content.equals(v.content) && now.get(k)?.mode === v.mode,
          `seed ${seed}: undo of ${JSON.stringify(k)}; left ${JSON.stringify(left)}`,
        );
      }
      const ign = new Set(r.git(['ls-files', '-z', '-o', '-i', '--exclude-standard']).split('\0'));
      for (const k of now.keys())
        if (!want.has(k) && !ign.has(k) && !ignPost.has(k))
          assert.ok(
            left.some((l) => l.path === k || k.startsWith(l.path + '/')),
            `seed ${seed}: extra ${JSON.stringify(k)} after undo; gitignore ${JSON.stringify(fs.existsSync(path.join(r.dir, '.gitignore')) ? fs.readFileSync(path.join(r.dir, '.gitignore'), 'utf8') : null)} ${u.stdout}`,
          );
      const rd = await cli(r, ['redo', '--json', '--force']);
      assert.is(rd.code, 0, rd.stdout + rd.stderr);
    } finally {
      r.cleanup();
    }
  }
});
test.run();
