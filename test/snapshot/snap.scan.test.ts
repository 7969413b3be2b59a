// The worktree scan behind every snapshot (status through the private index's
// untracked cache, then one update-index): whatever happens to the worktree
// between snapshots, each snapshot holds exactly the files on disk.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { cli, indexBytes, tempRepo, treeFiles, worktreeFiles, type TempRepo } from '../support/helpers.js';

function snap(repo: TempRepo): Promise<{ session: string; step: number; commit: string }> {
  return cli(repo, ['snap', '--json']).then((res) => {
    assert.is(res.code, 0, res.stdout + res.stderr);
    return JSON.parse(res.stdout) as { session: string; step: number; commit: string };
  });
}

/** The snapshot must hold exactly the worktree's files (minus `skip`), with modes and bytes. */
function assertSnapshotIsWorktree(repo: TempRepo, commit: string, skip: (rel: string) => boolean, label: string): void {
  const tree = treeFiles(repo, commit);
  const disk = worktreeFiles(repo, skip);
  assert.equal([...tree.keys()].sort(), [...disk.keys()].sort(), `${label}: paths`);
  for (const [p, f] of disk) {
    const t = tree.get(p);
    assert.is(t?.mode, f.mode, `${label}: mode of ${p}`);
    assert.ok(t?.content.equals(f.content), `${label}: content of ${p}`);
  }
}

test('every kind of worktree change between snapshots lands in the next snapshot', async () => {
  const repo = tempRepo({
    files: {
      '.gitignore': 'build/\n*.tmp\n',
      'a.txt': 'a\n',
      'src/lib/one.ts': 'one\n',
      'src/lib/two.ts': 'two\n',
      'src/keep.ts': 'keep\n',
      'gone/x.txt': 'x\n',
      'becomes-dir': 'file\n',
      'dir-becomes-file/inner.txt': 'inner\n',
    },
  });
  try {
    // What .gitignore leaves out of snapshots (the .gitignore step changes it).
    let skip = (rel: string) => rel === 'build' || rel.endsWith('.tmp');
    const before = indexBytes(repo);
    let res = await snap(repo);
    assertSnapshotIsWorktree(repo, res.commit, skip, 'baseline');

    const steps: [string, () => void][] = [
      ['modify a tracked file', () => repo.write('a.txt', 'a changed\n')],
      ['delete a tracked file', () => repo.rm('src/lib/two.ts')],
      ['new file in an existing directory', () => repo.write('src/lib/three.ts', 'three\n')],
      ['new file in the same directory again', () => repo.write('src/lib/four.ts', 'four\n')],
      ['new file deep in new directories', () => repo.write('new/deep/er/file.md', '# deep\n')],
      [
        'ignored files only',
        () => {
          repo.write('build/out.js', 'out\n');
          repo.write('src/scratch.tmp', 'tmp\n');
        },
      ],
      [
        'a .gitignore change un-ignores a file',
        () => {
          repo.write('.gitignore', 'build/\n');
          skip = (rel) => rel === 'build';
        },
      ],
      [
        'a file becomes a directory',
        () => {
          repo.rm('becomes-dir');
          repo.write('becomes-dir/now.txt', 'now a dir\n');
        },
      ],
      [
        'a directory becomes a file',
        () => {
          repo.rm('dir-becomes-file');
          repo.write('dir-becomes-file', 'now a file\n');
        },
      ],
      ['the executable bit', () => fs.chmodSync(path.join(repo.dir, 'src/keep.ts'), 0o755)],
      ['a symlink', () => fs.symlinkSync('a.txt', path.join(repo.dir, 'link-to-a'))],
      ['a rename', () => fs.renameSync(path.join(repo.dir, 'src/lib/one.ts'), path.join(repo.dir, 'src/one-moved.ts'))],
      ['a whole directory deleted', () => repo.rm('gone')],
      [
        'names with spaces, unicode and a newline',
        () => {
          repo.write('with space/é ü.txt', 'unicode\n');
          repo.write('new\nline.txt', 'newline\n');
          repo.write('a.txt', 'a changed again\n');
        },
      ],
      [
        'a file added where one was just deleted, same snapshot',
        () => {
          repo.rm('src/lib/three.ts');
          repo.write('src/lib/three.ts/child.txt', 'child\n');
        },
      ],
      ['nothing at all', () => {}],
    ];
    for (const [label, change] of steps) {
      change();
      res = await snap(repo);
      assertSnapshotIsWorktree(repo, res.commit, skip, label);
    }
    assert.equal(indexBytes(repo), before, "the user's index is never written");
  } finally {
    repo.cleanup();
  }
});

test('files created right after a snapshot, in directories it just scanned, are not missed', async () => {
  const repo = tempRepo({ files: { 'd/a.txt': 'a\n', 'e/b.txt': 'b\n' } });
  try {
    await snap(repo);
    for (let i = 0; i < 5; i++) {
      // No pause: the directory's mtime may fall into the same clock tick as the last scan.
      repo.write(`d/new-${i}.txt`, `${i}\n`);
      repo.write(`e/f${i}/x.txt`, `${i}\n`);
      const res = await snap(repo);
      assertSnapshotIsWorktree(repo, res.commit, () => false, `round ${i}`);
    }
  } finally {
    repo.cleanup();
  }
});

test('a private index seeded in the middle of a merge conflict records the worktree', async () => {
  const repo = tempRepo({ files: { 'f.txt': 'base\n', 'other.txt': 'o\n' } });
  try {
    repo.git(['checkout', '-q', '-b', 'side']);
    repo.write('f.txt', 'side\n');
    repo.git(['commit', '-q', '-am', 'side']);
    repo.git(['checkout', '-q', 'main']);
    repo.write('f.txt', 'main\n');
    repo.git(['commit', '-q', '-am', 'main']);
    assert.is(repo.gitRaw(['merge', '-q', 'side']).status, 1, 'the merge conflicts');
    assert.ok(repo.git(['ls-files', '-u']).length > 0, 'the user index has unmerged entries');
    const before = indexBytes(repo);
    const res = await snap(repo);
    assertSnapshotIsWorktree(repo, res.commit, () => false, 'mid-merge');
    assert.match(treeFiles(repo, res.commit).get('f.txt')?.content.toString() ?? '', /<<<<<<<[\s\S]*>>>>>>>/);
    assert.equal(indexBytes(repo), before);
  } finally {
    repo.cleanup();
  }
});

test('a tracked nested repository that moved to a new commit is recorded at that commit', async () => {
  const repo = tempRepo({ files: { 'top.txt': 'top\n' } });
  try {
    const sub = path.join(repo.dir, 'sub');
    fs.mkdirSync(sub);
    const inSub = (args: string[]) => repo.git(args, { cwd: sub });
    inSub(['init', '-q', '-b', 'main']);
    fs.writeFileSync(path.join(sub, 's.txt'), 's1\n');
    inSub(['add', '-A']);
    inSub(['commit', '-q', '-m', 's1']);
    repo.git(['add', 'sub']);
    repo.git(['commit', '-q', '-m', 'add sub as gitlink']);
    await snap(repo);
    fs.writeFileSync(path.join(sub, 's.txt'), 's2\n');
    inSub(['commit', '-q', '-am', 's2']);
    const head = inSub(['rev-parse', 'HEAD']).trim();
    const res = await snap(repo);
    const entry = repo.git(['ls-tree', res.commit, 'sub']);
    assert.match(entry, new RegExp(`^160000 commit ${head}\tsub`));
  } finally {
    repo.cleanup();
  }
});

test('a snap that starts a session scans the worktree once: its baseline and checkpoint are one instant', async () => {
  const repo = tempRepo({ files: { '.gitignore': 'build/\n', 'a.txt': 'a\n', 'src/b.ts': 'b\n' } });
  try {
    fs.writeFileSync(path.join(repo.dir, 'a.txt'), 'a, edited\n');
    fs.writeFileSync(path.join(repo.dir, 'new.txt'), 'untracked\n');
    fs.mkdirSync(path.join(repo.dir, 'build'));
    fs.writeFileSync(path.join(repo.dir, 'build', 'out.js'), 'ignored\n');
    // Every git process agentsnap starts reports itself here (agentsnap passes GIT_TRACE2_EVENT on).
    const trace = path.join(repo.base, 'trace2.jsonl');
    const res = await cli(repo, ['snap', '--json'], { env: { GIT_TRACE2_EVENT: trace } });
    assert.is(res.code, 0, res.stdout + res.stderr);
    const first = JSON.parse(res.stdout) as { session: string; step: number; commit: string; startedSession: boolean; changed: unknown[] };
    assert.ok(first.startedSession);
    assert.is(first.step, 1);
    assert.equal(first.changed, []);
    const tree = (rev: string) => repo.git(['rev-parse', `${rev}^{tree}`]).trim();
    assert.is(tree(`refs/agent/${first.session}/1`), tree(`refs/agent/${first.session}/0`));
    assertSnapshotIsWorktree(repo, first.commit, (rel) => rel.startsWith('build/'), 'first snap');
    const scans = fs
      .readFileSync(trace, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { event: string; argv?: string[] })
      .filter((e) => e.event === 'start' && (e.argv?.includes('status') || (e.argv?.includes('ls-files') && e.argv.includes('--others'))));
    assert.is(scans.length, 1, 'one listing of the worktree');
    // The next snapshot starts from what that scan left (the untracked cache) and sees exactly what changed.
    fs.writeFileSync(path.join(repo.dir, 'src', 'b.ts'), 'b, edited\n');
    fs.writeFileSync(path.join(repo.dir, 'src', 'c.ts'), 'c\n');
    const next = await snap(repo);
    assert.is(next.step, 2);
    assertSnapshotIsWorktree(repo, next.commit, (rel) => rel.startsWith('build/'), 'next snap');
    const changed = repo
      .git(['diff-tree', '-r', '--name-only', '--no-commit-id', `refs/agent/${first.session}/1`, `refs/agent/${first.session}/2`])
      .split('\n')
      .filter(Boolean);
    assert.equal(changed.sort(), ['src/b.ts', 'src/c.ts']);
  } finally {
    repo.cleanup();
  }
});

test.run();
