// What goes into a snapshot: every tracked path as it is on disk, untracked
// files that are not ignored, minus secrets, oversized files and excludes.
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cli, refsUnder, sessionOf, step, tempRepo, treeFiles, worktreeFiles, type TempRepo } from '../support/helpers.js';
import { entryAt, journalEvents, snapJson } from '../support/snap-helpers.js';

test('names with spaces, unicode and newlines are snapshotted exactly', async () => {
  const repo = tempRepo({ files: { 'with space.txt': 'a\n', 'ünï cødé/日本.txt': 'b\n', 'line\nbreak.txt': 'c\n' } });
  try {
    const base = await snapJson(repo);
    repo.write('with space.txt', 'a2\n');
    repo.write('new dir/another name.md', 'd\n');
    repo.write('émoji 🎉.txt', 'e\n');
    repo.write('new\nline\nuntracked', 'f\n');
    repo.write('tab\there', 'g\n');
    repo.write('quote"s and \\backslash', 'h\n');
    repo.rm('line\nbreak.txt');
    const s = await snapJson(repo, ['--session', base.session]);
    assert.equal(treeFiles(repo, s.commit), worktreeFiles(repo));
    assert.ok(s.changed.some((c) => c.path === 'new\nline\nuntracked' && c.change === 'A'));
    assert.ok(s.changed.some((c) => c.path === 'line\nbreak.txt' && c.change === 'D'));
    assert.ok(s.changed.some((c) => c.path === 'with space.txt' && c.change === 'M'));
  } finally {
    repo.cleanup();
  }
});

test('symlinks stay symlinks, the executable bit is kept, deletions are recorded', async () => {
  const repo = tempRepo({ files: { 'run.sh': 'echo hi\n', 'gone.txt': 'bye\n', 'dir/keep.txt': 'k\n', 'target.txt': 't\n' } });
  try {
    const base = await snapJson(repo);
    fs.symlinkSync('target.txt', path.join(repo.dir, 'link'));
    fs.symlinkSync('does/not/exist', path.join(repo.dir, 'dangling'));
    fs.symlinkSync('dir', path.join(repo.dir, 'dirlink'));
    fs.chmodSync(path.join(repo.dir, 'run.sh'), 0o755);
    repo.write('new-tool', '#!/bin/sh\n', 0o755);
    repo.rm('gone.txt');
    const s = await snapJson(repo, ['--session', base.session]);
    assert.equal(treeFiles(repo, s.commit), worktreeFiles(repo));
    assert.is(entryAt(repo, s.commit, 'link')?.mode, '120000');
    assert.is(entryAt(repo, s.commit, 'dangling')?.mode, '120000');
    assert.is(entryAt(repo, s.commit, 'dirlink')?.mode, '120000');
    assert.is(entryAt(repo, s.commit, 'run.sh')?.mode, '100755');
    assert.is(entryAt(repo, s.commit, 'new-tool')?.mode, '100755');
    assert.is(entryAt(repo, s.commit, 'gone.txt'), null);
    assert.ok(s.changed.some((c) => c.path === 'gone.txt' && c.change === 'D'));

    // An untracked file that was snapshotted and then deleted drops out too; a symlink that becomes a file changes type.
    repo.rm('new-tool');
    repo.rm('link');
    repo.write('link', 'now a file\n');
    fs.chmodSync(path.join(repo.dir, 'run.sh'), 0o644);
    const s2 = await snapJson(repo, ['--session', base.session]);
    assert.equal(treeFiles(repo, s2.commit), worktreeFiles(repo));
    assert.is(entryAt(repo, s2.commit, 'new-tool'), null);
    assert.ok(s2.changed.some((c) => c.path === 'link' && c.change === 'T'));
    assert.is(entryAt(repo, s2.commit, 'link')?.mode, '100644');
    assert.is(entryAt(repo, s2.commit, 'run.sh')?.mode, '100644');
  } finally {
    repo.cleanup();
  }
});

test('a file that becomes a directory and a directory that becomes a file', async () => {
  const repo = tempRepo({ files: { x: 'file\n', 'd/inner.txt': 'i\n', 'keep.txt': 'k\n' } });
  try {
    const s1 = await snapJson(repo);
    repo.rm('x');
    repo.write('x/now-inside.txt', 'n\n');
    repo.rm('d');
    repo.write('d', 'now a file\n');
    const s2 = await snapJson(repo, ['--session', s1.session]);
    assert.equal(treeFiles(repo, s2.commit), worktreeFiles(repo));
    // And back, for paths only agentsnap tracks.
    repo.rm('x');
    repo.write('x', 'file again\n');
    repo.rm('d');
    repo.write('d/again.txt', 'a\n');
    const s3 = await snapJson(repo, ['--session', s1.session]);
    assert.equal(treeFiles(repo, s3.commit), worktreeFiles(repo));
  } finally {
    repo.cleanup();
  }
});

test('a directory replaced by a symlink to a directory: the symlink is recorded, nothing behind it', async () => {
  const repo = tempRepo({ files: { 'dir/x': 'inside\n', 'keep.txt': 'k\n' } });
  try {
    const outside = path.join(repo.base, 'outside');
    fs.mkdirSync(outside);
    fs.writeFileSync(path.join(outside, 'x'), 'outside file\n');
    repo.write('untracked-dir/y', 'y\n');
    const s1 = await snapJson(repo);
    repo.rm('dir');
    fs.symlinkSync(outside, path.join(repo.dir, 'dir'));
    repo.rm('untracked-dir');
    fs.symlinkSync(outside, path.join(repo.dir, 'untracked-dir'));
    const s2 = await snapJson(repo, ['--session', s1.session]);
    assert.equal(treeFiles(repo, s2.commit), worktreeFiles(repo));
    assert.is(entryAt(repo, s2.commit, 'dir')?.mode, '120000');
    assert.is(entryAt(repo, s2.commit, 'dir/x'), null);
    assert.is(entryAt(repo, s2.commit, 'untracked-dir')?.mode, '120000');
    // The user's index still has dir/x: it is not taken from behind the link either.
    repo.write('keep.txt', 'k2\n');
    const s3 = await snapJson(repo, ['--session', s1.session]);
    assert.equal(treeFiles(repo, s3.commit), worktreeFiles(repo));
    // A real directory again: dir/x comes back.
    repo.rm('dir');
    repo.write('dir/x', 'back\n');
    const s4 = await snapJson(repo, ['--session', s1.session]);
    assert.equal(treeFiles(repo, s4.commit), worktreeFiles(repo));
  } finally {
    repo.cleanup();
  }
});

for (const [name, replace] of [
  ['a symlink to itself (dangling)', (repo: TempRepo) => fs.symlinkSync('src', path.join(repo.dir, 'src'))],
  ['a symlink to another directory', (repo: TempRepo) => fs.symlinkSync('other', path.join(repo.dir, 'src'))],
  ['a file', (repo: TempRepo) => repo.write('src', 'now a file\n')],
] as const) {
  test(`a tracked directory replaced by ${name}: recorded as on disk, undo and redo restore the bytes`, async () => {
    const repo = tempRepo({
      files: { 'src/a.ts': 'export const a = 1;\n', 'src/deep/b.ts': 'b\n', 'other/o.txt': 'o\n', 'file.txt': 'f\n' },
    });
    try {
      const before = worktreeFiles(repo);
      await step(repo, () => {
        repo.rm('src');
        replace(repo);
        // And a tracked file replaced by a directory.
        repo.rm('file.txt');
        repo.write('file.txt/inside.txt', 'i\n');
      });
      const after = worktreeFiles(repo);
      const head = refsUnder(repo, 'refs/agentsnap/sessions/').get(`refs/agentsnap/sessions/${sessionOf(repo)}/head`)!;
      assert.equal(treeFiles(repo, head), after);
      assert.is(entryAt(repo, head, 'src/a.ts'), null);
      assert.is(entryAt(repo, head, 'file.txt')?.type, 'tree');
      // A later snapshot of the same state (the private index now holds it) agrees.
      const again = await snapJson(repo);
      assert.equal(treeFiles(repo, again.commit), after);
      assert.equal(again.changed, []);
      let res = await cli(repo, ['undo', '1']);
      assert.is(res.code, 0, res.stdout + res.stderr);
      assert.equal(worktreeFiles(repo), before);
      res = await cli(repo, ['redo']);
      assert.is(res.code, 0, res.stdout + res.stderr);
      assert.equal(worktreeFiles(repo), after);
      res = await cli(repo, ['undo', '1']);
      assert.is(res.code, 0, res.stdout + res.stderr);
      assert.equal(worktreeFiles(repo), before);
    } finally {
      repo.cleanup();
    }
  });
}

test('a dangling symlink the user adds mid-session is snapshotted', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n', '.gitignore': 'link\n' } });
  try {
    const s1 = await snapJson(repo);
    fs.symlinkSync('missing-target', path.join(repo.dir, 'link'));
    repo.git(['add', '-f', 'link']);
    const s2 = await snapJson(repo, ['--session', s1.session]);
    assert.is(entryAt(repo, s2.commit, 'link')?.mode, '120000');
  } finally {
    repo.cleanup();
  }
});

test('.gitignore, .git/info/exclude and core.excludesFile are honoured', async () => {
  const repo = tempRepo({ files: { '.gitignore': '*.log\nbuild/\n' } });
  try {
    repo.write('app.log', 'log\n');
    repo.write('build/out.js', 'x\n');
    repo.write('.git/info/exclude', 'local-only.txt\n');
    repo.write('local-only.txt', 'x\n');
    const globalIgnore = path.join(repo.home, 'global-ignore');
    fs.writeFileSync(globalIgnore, '*.swp\n');
    repo.git(['config', 'core.excludesFile', globalIgnore]);
    repo.write('file.swp', 'x\n');
    repo.write('kept.txt', 'kept\n');
    const s = await snapJson(repo);
    const files = [...treeFiles(repo, s.commit).keys()].sort();
    assert.equal(files, ['.gitignore', 'kept.txt']);
    // Ignored files are not "skipped": git ignores them by the user's own rules.
    assert.equal(s.skipped, []);
  } finally {
    repo.cleanup();
  }
});

test('a tracked file matching .gitignore is still snapshotted', async () => {
  const repo = tempRepo({ files: { '.gitignore': '*.lock\n' } });
  try {
    repo.write('deps.lock', 'v1\n');
    repo.git(['add', '-f', 'deps.lock']);
    repo.git(['commit', '-q', '-m', 'force-add']);
    repo.write('deps.lock', 'v2\n');
    const s = await snapJson(repo);
    assert.is(treeFiles(repo, s.commit).get('deps.lock')?.content.toString(), 'v2\n');
  } finally {
    repo.cleanup();
  }
});

test('an untracked file that becomes ignored drops out of later snapshots', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    repo.write('scratch.tmp', 'scratch\n');
    repo.write('cache/data.bin', 'cache\n');
    const s1 = await snapJson(repo);
    assert.ok(treeFiles(repo, s1.commit).has('scratch.tmp'));
    assert.ok(treeFiles(repo, s1.commit).has('cache/data.bin'));
    repo.write('.gitignore', '*.tmp\ncache/\n');
    const s2 = await snapJson(repo, ['--session', s1.session]);
    const files = [...treeFiles(repo, s2.commit).keys()].sort();
    assert.equal(files, ['.gitignore', 'a.txt']);
    assert.ok(s2.changed.some((c) => c.path === 'scratch.tmp' && c.change === 'D'));
    // And it comes back when the rule goes away.
    repo.rm('.gitignore');
    const s3 = await snapJson(repo, ['--session', s1.session]);
    assert.equal([...treeFiles(repo, s3.commit).keys()].sort(), ['a.txt', 'cache/data.bin', 'scratch.tmp']);
  } finally {
    repo.cleanup();
  }
});

test('a file tracked in the user index stays in snapshots even when it matches .gitignore later', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n', 'config.local': 'c\n' } });
  try {
    const s1 = await snapJson(repo);
    repo.write('.gitignore', 'config.local\n');
    repo.write('config.local', 'c2\n');
    const s2 = await snapJson(repo, ['--session', s1.session]);
    assert.is(treeFiles(repo, s2.commit).get('config.local')?.content.toString(), 'c2\n');
  } finally {
    repo.cleanup();
  }
});

test('a file the user force-adds mid-session despite .gitignore is snapshotted', async () => {
  const repo = tempRepo({ files: { '.gitignore': '*.gen\n' } });
  try {
    repo.write('schema.gen', 'v1\n');
    const s1 = await snapJson(repo);
    assert.is(entryAt(repo, s1.commit, 'schema.gen'), null);
    repo.git(['add', '-f', 'schema.gen']);
    const s2 = await snapJson(repo, ['--session', s1.session]);
    assert.is(treeFiles(repo, s2.commit).get('schema.gen')?.content.toString(), 'v1\n');
  } finally {
    repo.cleanup();
  }
});

test('an untracked file is re-checked every time: growing past the cap, a new exclude, or untracking a secret drops it', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n', '.env': 'A=1\n' } });
  try {
    repo.git(['config', 'agentsnap.maxFileSize', '100']);
    repo.write('growing.log', 'x\n');
    repo.write('out/report.html', '<p>\n');
    const s1 = await snapJson(repo);
    assert.ok(entryAt(repo, s1.commit, 'growing.log'));
    assert.ok(entryAt(repo, s1.commit, '.env'));
    repo.write('growing.log', Buffer.alloc(200, 0x78));
    repo.git(['config', '--add', 'agentsnap.exclude', 'out/**']);
    repo.git(['rm', '-q', '--cached', '.env']);
    const s2 = await snapJson(repo, ['--session', s1.session]);
    assert.equal([...treeFiles(repo, s2.commit).keys()].sort(), ['a.txt']);
    assert.equal(s2.skipped.map((x) => `${x.path}:${x.reason}`).sort(), [
      '.env:secret',
      'growing.log:too-large',
      'out/report.html:excluded',
    ]);
    // Back under the cap: back in.
    repo.write('growing.log', 'small\n');
    const s3 = await snapJson(repo, ['--session', s1.session]);
    assert.is(treeFiles(repo, s3.commit).get('growing.log')?.content.toString(), 'small\n');
  } finally {
    repo.cleanup();
  }
});

test('secret-looking untracked files are skipped, listed in the output and the journal', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const secrets = ['.env', '.env.local', 'certs/server.pem', 'tls.key', 'id_rsa', 'id_ed25519', 'sub/dir/.env', '.npmrc'];
    for (const s of secrets) repo.write(s, 'SECRET=1\n');
    repo.write('.env.example', 'SECRET=\n');
    repo.write('id_rsa.pub', 'ssh-rsa AAA\n');
    repo.write('environment.ts', 'export {}\n');
    const res = await cli(repo, ['snap']);
    assert.is(res.code, 0, res.stderr);
    for (const s of secrets) assert.ok(res.stderr.includes(`${s} (looks like a secret)`), `${s} not listed: ${res.stderr}`);
    const session = /session (\S+) step/.exec(res.stderr)?.[1] ?? '';
    const commit = repo.git(['rev-parse', `refs/agent/${session}/1`]).trim();
    const files = [...treeFiles(repo, commit).keys()].sort();
    assert.equal(files, ['.env.example', 'a.txt', 'environment.ts', 'id_rsa.pub']);
    const ev = journalEvents(repo, session).find((e) => e.type === 'step.checkpoint') as { skipped: { path: string; reason: string }[] };
    assert.equal(ev.skipped.map((s) => s.path).sort(), [...secrets].sort());
    assert.ok(ev.skipped.every((s) => s.reason === 'secret'));
    const start = journalEvents(repo, session).find((e) => e.type === 'session.start') as { skipped: { path: string }[] };
    assert.is(start.skipped.length, secrets.length);
    // log shows them too.
    const log = await cli(repo, ['log']);
    assert.match(log.stdout, /not snapshotted: .*\.env \(looks like a secret\)/);
  } finally {
    repo.cleanup();
  }
});

test('a committed .env is tracked, so it is snapshotted; agentsnap.excludeSecrets=false keeps untracked ones', async () => {
  const repo = tempRepo({ files: { '.env': 'A=1\n' } });
  try {
    repo.write('.env', 'A=2\n');
    repo.write('key.pem', 'k\n');
    const s1 = await snapJson(repo);
    assert.is(treeFiles(repo, s1.commit).get('.env')?.content.toString(), 'A=2\n');
    assert.equal(
      s1.skipped.map((s) => s.path),
      ['key.pem'],
    );
    repo.git(['config', 'agentsnap.excludeSecrets', 'false']);
    const s2 = await snapJson(repo, ['--session', s1.session]);
    assert.ok(treeFiles(repo, s2.commit).has('key.pem'));
    assert.equal(s2.skipped, []);
  } finally {
    repo.cleanup();
  }
});

test('untracked files over the size cap are skipped and listed; tracked large files are kept', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const big = Buffer.alloc(10 * 1024 * 1024 + 1, 0x61);
    repo.write('big.bin', big);
    repo.write('exact.bin', Buffer.alloc(10 * 1024 * 1024, 0x62));
    const res = await cli(repo, ['snap']);
    assert.is(res.code, 0, res.stderr);
    assert.match(res.stderr, /big\.bin \(over the size cap, 10 MiB\)/);
    const session = /session (\S+) step/.exec(res.stderr)?.[1] ?? '';
    const commit = repo.git(['rev-parse', `refs/agent/${session}/1`]).trim();
    assert.is(entryAt(repo, commit, 'big.bin'), null);
    assert.ok(entryAt(repo, commit, 'exact.bin'));
    const ev = journalEvents(repo, session).find((e) => e.type === 'step.checkpoint') as {
      skipped: { path: string; reason: string; size: number }[];
    };
    assert.equal(ev.skipped, [{ path: 'big.bin', reason: 'too-large', size: big.length }]);

    repo.git(['config', 'agentsnap.maxFileSize', '1k']);
    repo.write('small.txt', Buffer.alloc(1024, 0x63));
    repo.write('medium.txt', Buffer.alloc(1025, 0x63));
    repo.write('a.txt', Buffer.alloc(4096, 0x64)); // tracked: never capped
    const s = await snapJson(repo, ['--session', session]);
    assert.ok(entryAt(repo, s.commit, 'small.txt'));
    assert.is(entryAt(repo, s.commit, 'medium.txt'), null);
    assert.is(treeFiles(repo, s.commit).get('a.txt')?.content.length, 4096);
    // exact.bin was snapshotted under the old cap; untracked files are checked against the cap every time.
    assert.is(entryAt(repo, s.commit, 'exact.bin'), null);
    assert.equal(s.skipped.map((x) => x.path).sort(), ['big.bin', 'exact.bin', 'medium.txt']);
  } finally {
    repo.cleanup();
  }
});

test('agentsnap.exclude globs leave untracked files out and list them', async () => {
  const repo = tempRepo({ files: { 'keep.txt': 'k\n', 'tracked.out': 'tracked\n' } });
  try {
    repo.git(['config', '--add', 'agentsnap.exclude', '*.out']);
    repo.git(['config', '--add', 'agentsnap.exclude', 'tmp/**']);
    repo.write('result.out', 'x\n');
    repo.write('deep/result.out', 'x\n');
    repo.write('tmp/a/b.txt', 'x\n');
    repo.write('tracked.out', 'changed\n');
    const s = await snapJson(repo);
    const files = [...treeFiles(repo, s.commit).keys()].sort();
    assert.ok(!files.includes('result.out'));
    assert.ok(!files.includes('deep/result.out'), 'a glob without a slash matches at any depth, as in .gitignore');
    assert.ok(!files.includes('tmp/a/b.txt'));
    assert.ok(files.includes('tracked.out'), 'tracked files are never excluded');
    assert.ok(s.skipped.some((x) => x.path === 'result.out' && x.reason === 'excluded'));
    assert.ok(s.skipped.some((x) => x.path === 'tmp/a/b.txt' && x.reason === 'excluded'));
  } finally {
    repo.cleanup();
  }
});

test('the checked-in .agentsnap.json sets excludes and the size cap, and is data only', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    repo.write(
      '.agentsnap.json',
      JSON.stringify({ exclude: ['**/*.cache'], maxFileSize: 100, command: 'touch PWNED', hooks: { pre: 'touch PWNED' } }),
    );
    repo.write('x/y.cache', 'c\n');
    repo.write('big.txt', Buffer.alloc(101, 0x61));
    repo.write('fine.txt', Buffer.alloc(100, 0x61));
    const s = await snapJson(repo);
    const files = [...treeFiles(repo, s.commit).keys()].sort();
    assert.equal(files, ['.agentsnap.json', 'a.txt', 'fine.txt']);
    assert.equal(s.skipped.map((x) => `${x.path}:${x.reason}`).sort(), ['big.txt:too-large', 'x/y.cache:excluded']);
    assert.not.ok(repo.exists('PWNED'));
    // git config wins over the project file for the size cap.
    repo.git(['config', 'agentsnap.maxFileSize', '1m']);
    const s2 = await snapJson(repo, ['--session', s.session]);
    assert.ok(entryAt(repo, s2.commit, 'big.txt'));
  } finally {
    repo.cleanup();
  }
});

test('an invalid .agentsnap.json or config value is a user error naming the key', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    repo.write('.agentsnap.json', '{ not json');
    const r1 = await cli(repo, ['snap']);
    assert.is(r1.code, 1);
    assert.match(r1.stderr, /\.agentsnap\.json is not valid JSON/);
    repo.rm('.agentsnap.json');
    repo.git(['config', 'agentsnap.maxFileSize', 'lots']);
    const r2 = await cli(repo, ['snap']);
    assert.is(r2.code, 1);
    assert.match(r2.stderr, /agentsnap\.maxFileSize = "lots" is not a size/);
    assert.is(repo.git(['for-each-ref', 'refs/agent/']), '');
  } finally {
    repo.cleanup();
  }
});

test.run();
