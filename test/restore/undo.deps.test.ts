// Issue 33 part 2 ("Always"), the library side: which files are dependency manifests and lockfiles, and the
// command (and directory) that brings what they install in line (src/deps/deps.ts, the one table); an undo's
// result names them (`deps`); `syncDeps` runs them after the restore, with the caller's PATH, and reports a
// missing program or a failing command without undoing the restore. Through the executable:
// test/cli/cli-deps.test.ts.
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { dependencyEcosystem, dependencyFiles, depsToSync } from '../../src/deps/deps.js';
import { undo } from '../../src/api/undo.js';
import { onPath } from '../../src/base/shell.js';
import { step, tempRepo } from '../support/helpers.js';

/** `depsToSync` over a worktree that holds exactly `present` after the operation. */
function sync(changed: string[], present: string[]) {
  const has = new Set(present);
  return depsToSync(changed, (p) => has.has(p)).map((e) => ({ dir: e.dir, files: e.files, command: e.command }));
}

test('deps table: manifests and lockfiles of every ecosystem, by base name in any directory; other files are none', () => {
  const yes = [
    'package.json',
    'web/package-lock.json',
    'npm-shrinkwrap.json',
    'a/b/pnpm-lock.yaml',
    'yarn.lock',
    'bun.lockb',
    'bun.lock',
    'requirements.txt',
    'py/requirements-dev.txt',
    'pyproject.toml',
    'uv.lock',
    'poetry.lock',
    'Pipfile',
    'Pipfile.lock',
    'Cargo.toml',
    'crates/x/Cargo.lock',
    'go.mod',
    'svc/go.sum',
  ];
  for (const f of yes) assert.ok(dependencyEcosystem(f) !== null, f);
  // A package's own files inside what a package manager installed are not a project's (agentsnap.environment snapshots them).
  const no = [
    'package.json.bak',
    'src/package.ts',
    'requirements.md',
    'docs/requirements.txt.orig',
    'gomod',
    'Cargo.toml~',
    'yarn.lock/x',
    'node_modules/tiny/package.json',
    'web/node_modules/@s/x/package.json',
    '.venv/lib/python3.11/site-packages/x/pyproject.toml',
  ];
  for (const f of no) assert.is(dependencyEcosystem(f), null, f);
  assert.equal(dependencyFiles(['a.js', 'web/package.json', 'README.md', 'go.sum']), ['web/package.json', 'go.sum']);
});

test('deps table: the command from the lockfile beside the manifest, or the nearest one above it (a workspace member), or the manifest', () => {
  assert.equal(sync(['web/package-lock.json'], ['web/package.json', 'web/package-lock.json']), [
    { dir: 'web', files: ['web/package-lock.json'], command: ['npm', 'ci'] },
  ]);
  // One command for the manifest and its lockfile; the workspace member's manifest runs at the workspace's lockfile.
  assert.equal(sync(['pnpm-lock.yaml', 'packages/x/package.json'], ['package.json', 'pnpm-lock.yaml', 'packages/x/package.json']), [
    { dir: '.', files: ['pnpm-lock.yaml', 'packages/x/package.json'], command: ['pnpm', 'install', '--frozen-lockfile'] },
  ]);
  assert.equal(sync(['yarn.lock'], ['package.json', 'yarn.lock'])[0]?.command, ['yarn', 'install', '--frozen-lockfile']);
  assert.equal(sync(['bun.lockb'], ['package.json', 'bun.lockb'])[0]?.command, ['bun', 'install']);
  assert.equal(sync(['package.json'], ['package.json', 'npm-shrinkwrap.json'])[0]?.command, ['npm', 'ci']);
  // No lockfile anywhere (an undo took the agent's first `npm install` back): install from package.json, writing no lockfile.
  assert.equal(sync(['package.json', 'package-lock.json'], ['package.json']), [
    { dir: '.', files: ['package.json', 'package-lock.json'], command: ['npm', 'install', '--no-package-lock'] },
  ]);
  assert.equal(sync(['pyproject.toml', 'uv.lock'], ['pyproject.toml', 'uv.lock'])[0]?.command, ['uv', 'sync']);
  assert.equal(sync(['poetry.lock'], ['pyproject.toml', 'poetry.lock'])[0]?.command, ['poetry', 'install']);
  assert.equal(sync(['Pipfile.lock'], ['Pipfile', 'Pipfile.lock'])[0]?.command, ['pipenv', 'sync']);
  assert.equal(sync(['pkg/pyproject.toml'], ['uv.lock', 'pyproject.toml', 'pkg/pyproject.toml']), [
    { dir: '.', files: ['pkg/pyproject.toml'], command: ['uv', 'sync'] },
  ]);
  // Each requirements file is its own `pip install -r`, in its directory.
  assert.equal(sync(['py/requirements.txt', 'py/requirements-dev.txt'], ['py/requirements.txt', 'py/requirements-dev.txt']), [
    { dir: 'py', files: ['py/requirements.txt'], command: ['pip', 'install', '-r', 'requirements.txt'] },
    { dir: 'py', files: ['py/requirements-dev.txt'], command: ['pip', 'install', '-r', 'requirements-dev.txt'] },
  ]);
  assert.equal(sync(['Cargo.lock'], ['Cargo.toml', 'Cargo.lock'])[0]?.command, ['cargo', 'fetch']);
  assert.equal(sync(['svc/go.sum'], ['svc/go.mod', 'svc/go.sum']), [
    { dir: 'svc', files: ['svc/go.sum'], command: ['go', 'mod', 'download'] },
  ]);
  // The manifest gone with the operation (a project the agent had created): nothing to run there.
  assert.equal(sync(['new/package.json', 'new/package-lock.json'], []), [
    { dir: 'new', files: ['new/package.json', 'new/package-lock.json'], command: null },
  ]);
  assert.equal(sync(['src/a.ts', 'README.md'], ['src/a.ts']), []);
});

/** A stub program on PATH that writes its cwd and argv (one a line) to `<base>/<name>.calls` and exits `code`. */
function stub(base: string, name: string, code: number): string {
  const bin = path.join(base, 'stub-bin');
  fs.mkdirSync(bin, { recursive: true });
  const file = path.join(bin, name);
  fs.writeFileSync(
    file,
    `#!/bin/sh\n{ pwd; for a in "$@"; do printf '%s\\n' "$a"; done; } >> '${path.join(base, `${name}.calls`)}'\necho "stub ${name} says hello"\nexit ${code}\n`,
  );
  fs.chmodSync(file, 0o755);
  return bin;
}

test('undo with syncDeps: the command runs in its directory with the caller PATH after the files are back; a failing one is reported, the undo stays done', async () => {
  const repo = tempRepo({
    files: { 'web/package.json': '{"name":"web"}\n', 'web/package-lock.json': '{"lockfileVersion":3}\n', 'a.txt': 'a\n' },
  });
  try {
    await step(repo, () => {
      repo.write('web/package-lock.json', '{"lockfileVersion":3,"x":1}\n');
      repo.write('a.txt', 'b\n');
    });
    const bin = stub(repo.base, 'npm', 3);
    const env = { ...repo.env, PATH: `${bin}${path.delimiter}${repo.env.PATH ?? ''}` };
    const started: string[] = [];
    const output: Buffer[] = [];
    const res = await undo({
      cwd: repo.dir,
      env,
      syncDeps: true,
      depsListener: { start: (e) => started.push(`${e.dir} ${e.command.join(' ')}`), output: (c) => output.push(Buffer.from(c)) },
    });
    assert.equal(res.files?.deps, [
      { dir: 'web', files: ['web/package-lock.json'], ecosystem: 'node', command: ['npm', 'ci'], installed: 'node_modules' },
    ]);
    assert.equal(res.depsSync, [{ dir: 'web', command: ['npm', 'ci'], ran: true, exitCode: 3, signal: null, error: 'npm exited with 3' }]);
    assert.equal(started, ['web npm ci']);
    assert.is(Buffer.concat(output).toString(), 'stub npm says hello\n');
    // It ran after the restore, in web/, with the argv as given (no shell).
    assert.is(fs.readFileSync(path.join(repo.base, 'npm.calls'), 'utf8'), `${path.join(repo.dir, 'web')}\nci\n`);
    assert.is(repo.read('web/package-lock.json').toString(), '{"lockfileVersion":3}\n');
    assert.is(repo.read('a.txt').toString(), 'a\n');
  } finally {
    repo.cleanup();
  }
});

test('undo with syncDeps: a package manager not on PATH is reported (ran: false), nothing thrown; a dry run runs nothing', async () => {
  const repo = tempRepo({ files: { 'go.mod': 'module x\n', 'go.sum': '' } });
  try {
    await step(repo, () => repo.write('go.sum', 'x v1 h1:abc\n'));
    // A PATH with git alone on it (agentsnap needs it), no go.
    const empty = path.join(repo.base, 'git-only-bin');
    fs.mkdirSync(empty);
    fs.symlinkSync(onPath('git', process.env) as string, path.join(empty, 'git'));
    const dry = await undo({ cwd: repo.dir, env: { ...repo.env, PATH: empty }, syncDeps: true, dryRun: true });
    assert.is(dry.depsSync, null);
    assert.equal(
      dry.files?.deps.map((e) => e.command),
      [['go', 'mod', 'download']],
    );
    const res = await undo({ cwd: repo.dir, env: { ...repo.env, PATH: empty }, syncDeps: true });
    assert.equal(res.depsSync, [
      { dir: '.', command: ['go', 'mod', 'download'], ran: false, exitCode: null, signal: null, error: 'go is not on PATH' },
    ]);
    assert.is(repo.read('go.sum').toString(), '');
  } finally {
    repo.cleanup();
  }
});

test.run();
