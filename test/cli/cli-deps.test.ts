// Issue 33 part 2 ("Always"), through the executable: a step whose call ran a real `npm install` of a local
// tarball (no network: npm offline, its cache in the temp dir) is marked "dependencies changed" in log and show
// (text and --json); undo names `npm ci` and web/ (the dry run too) and leaves node_modules alone; with
// --sync-deps it runs the real npm ci there after the restore, so node_modules matches the lockfile again.
// A failing package manager (a stub npm first on PATH) and a missing one (pnpm) exit 6 with the restore done.
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { onPath } from '../../src/base/shell.js';
import { cliProcess, step, tempRepo, type CliResult, type TempRepo } from '../support/helpers.js';
import { npmEnv, runNpm } from '../support/npm.js';

function ok(r: CliResult, what: string): CliResult {
  assert.is(r.code, 0, `${what}: ${r.stdout}${r.stderr}`);
  return r;
}

function npm(repo: TempRepo, cwd: string, args: string[]): void {
  const r = runNpm(repo, cwd, args);
  assert.is(r.status, 0, `npm ${args.join(' ')}: ${r.out}`);
}

const PACKAGE_JSON = '{"name":"web","version":"1.0.0","private":true}\n';

/**
 * web/ with package.json and its (empty) lockfile committed, node_modules ignored; step 1 runs `npm install` of
 * the tarball tiny-1.0.0.tgz (package.json, package-lock.json and node_modules/tiny change), step 2 edits app.js.
 */
async function npmProject(repo: TempRepo): Promise<{ lock: Buffer }> {
  const tiny = path.join(repo.base, 'tiny');
  fs.mkdirSync(tiny);
  fs.writeFileSync(path.join(tiny, 'package.json'), '{"name":"tiny","version":"1.0.0","main":"index.js"}\n');
  fs.writeFileSync(path.join(tiny, 'index.js'), 'module.exports = 42;\n');
  npm(repo, tiny, ['pack', '--silent']);
  npm(repo, path.join(repo.dir, 'web'), ['install']);
  repo.git(['add', '-A']);
  repo.git(['commit', '-q', '-m', 'lockfile']);
  const lock = repo.read('web/package-lock.json');
  await step(repo, () => npm(repo, path.join(repo.dir, 'web'), ['install', path.join(tiny, 'tiny-1.0.0.tgz')]));
  await step(repo, () => repo.write('web/app.js', 'broken(\n'), 'Edit');
  assert.ok(repo.exists('web/node_modules/tiny/index.js'), 'npm installed tiny');
  return { lock };
}

test('a real npm install: log and show mark the step; undo names `npm ci` in web/ (dry run too); --sync-deps runs it and node_modules matches again', async () => {
  const repo = tempRepo({ files: { 'web/package.json': PACKAGE_JSON, 'web/app.js': 'ok();\n', '.gitignore': 'node_modules\n' } });
  try {
    const { lock } = await npmProject(repo);
    const env = npmEnv(repo);
    const log = ok(await cliProcess(repo, ['log'], { env }), 'log').stdout;
    assert.match(log, /^\s+1\s+Bash\s+done\s.*dependencies changed$/m, log);
    assert.match(log, /^\s+2\s+Edit\s+done\s/m, log);
    assert.not.match(log.split('\n').find((l) => /^\s+2\s+Edit/.test(l)) ?? '', /dependencies/);
    const rows = JSON.parse(ok(await cliProcess(repo, ['log', '--json'], { env }), 'log --json').stdout) as { depsChanged: string[] }[];
    assert.equal(
      rows.map((r) => r.depsChanged),
      [['web/package-lock.json', 'web/package.json'], []],
    );
    const show = ok(await cliProcess(repo, ['show', '1', '--stat'], { env }), 'show 1').stdout;
    assert.ok(
      show.includes(
        'dependencies changed: web/package-lock.json, web/package.json (what they install is not snapshotted: an undo of this step says what to run)\n',
      ),
      show,
    );
    const shown = JSON.parse(ok(await cliProcess(repo, ['show', '2', '--json'], { env }), 'show 2 --json').stdout) as {
      depsChanged: string[];
    };
    assert.equal(shown.depsChanged, []);

    // The dry runs say what would run and run nothing.
    const dry = ok(await cliProcess(repo, ['undo', '1', '--dry-run'], { env }), 'undo --dry-run');
    assert.ok(
      dry.stderr.includes(
        'agentsnap: package-lock.json, package.json would change: then run `npm ci` (in web/) so node_modules matches, or add --sync-deps\n',
      ),
      dry.stderr,
    );
    const drySync = ok(await cliProcess(repo, ['undo', '1', '--dry-run', '--sync-deps'], { env }), 'undo --dry-run --sync-deps');
    assert.ok(
      drySync.stderr.includes('agentsnap: package-lock.json, package.json would change: --sync-deps would run `npm ci` in web/\n'),
      drySync.stderr,
    );
    assert.ok(repo.exists('web/node_modules/tiny'), 'a dry run runs nothing');
    assert.not.equal(repo.read('web/package-lock.json'), lock);

    // Without --sync-deps: the files are back, node_modules is as the agent left it, and the undo says what to run.
    const undo = ok(await cliProcess(repo, ['undo', '1'], { env }), 'undo 1');
    assert.ok(
      undo.stderr.includes(
        'agentsnap: package-lock.json, package.json changed: run `npm ci` (in web/) so node_modules matches (--sync-deps runs it)\n',
      ),
      undo.stderr,
    );
    assert.equal(repo.read('web/package-lock.json'), lock);
    assert.ok(repo.exists('web/node_modules/tiny'), 'node_modules untouched without --sync-deps');

    // redo, then undo --sync-deps: the real npm ci in web/ takes tiny out of node_modules.
    ok(await cliProcess(repo, ['redo'], { env }), 'redo');
    const synced = ok(await cliProcess(repo, ['undo', '1', '--sync-deps'], { env }), 'undo 1 --sync-deps');
    assert.ok(synced.stderr.includes('agentsnap: package-lock.json, package.json changed: running `npm ci` in web/\n'), synced.stderr);
    assert.ok(synced.stderr.includes('agentsnap: `npm ci` in web/ done (exit 0)\n'), synced.stderr);
    assert.equal(repo.read('web/package-lock.json'), lock);
    assert.is(repo.read('web/package.json').toString(), PACKAGE_JSON);
    assert.not.ok(repo.exists('web/node_modules/tiny'), 'npm ci removed what the lockfile does not hold');
    assert.is(repo.git(['status', '--porcelain']), '', 'npm ci wrote no file of the worktree');

    // redo --sync-deps --json: stdout is the JSON alone (npm's output went to stderr), tiny is installed again.
    const redo = ok(await cliProcess(repo, ['redo', '--sync-deps', '--json'], { env }), 'redo --sync-deps --json');
    const res = JSON.parse(redo.stdout) as { deps: unknown; depsSync: unknown };
    assert.equal(res.deps, [
      {
        dir: 'web',
        files: ['web/package-lock.json', 'web/package.json'],
        ecosystem: 'node',
        command: ['npm', 'ci'],
        installed: 'node_modules',
      },
    ]);
    assert.equal(res.depsSync, [{ dir: 'web', command: ['npm', 'ci'], ran: true, exitCode: 0, signal: null, error: null }]);
    assert.ok(repo.exists('web/node_modules/tiny/index.js'), 'npm ci installed tiny again');
  } finally {
    repo.cleanup();
  }
});

/** A stub `npm` first on PATH: records its cwd and arguments, prints a line, exits 3. */
function failingNpm(repo: TempRepo): Record<string, string> {
  const bin = path.join(repo.base, 'stub-bin');
  fs.mkdirSync(bin);
  fs.writeFileSync(
    path.join(bin, 'npm'),
    `#!/bin/sh\n{ pwd; printf '%s\\n' "$@"; } >> '${path.join(repo.base, 'npm.calls')}'\necho 'npm ERR! stub failure' >&2\nexit 3\n`,
  );
  fs.chmodSync(path.join(bin, 'npm'), 0o755);
  return { PATH: `${bin}${path.delimiter}${repo.env.PATH ?? ''}` };
}

test('--sync-deps with a failing package manager: exit 6, its output and a clear message on stderr, the restore done (undo, restore, op undo, --json)', async () => {
  const repo = tempRepo({ files: { 'package.json': '{"name":"x"}\n', 'package-lock.json': 'v1\n', 'a.txt': 'a\n' } });
  try {
    await step(repo, () => {
      repo.write('package-lock.json', 'v2\n');
      repo.write('a.txt', 'b\n');
    });
    const env = failingNpm(repo);
    const r = await cliProcess(repo, ['undo', '--sync-deps'], { env });
    assert.is(r.code, 6, r.stderr);
    assert.ok(r.stdout.startsWith('undo 1 (operation 1): the worktree is back to before step 1\n'), r.stdout);
    assert.ok(r.stderr.includes('npm ERR! stub failure\n'), 'its output passed through');
    assert.ok(
      r.stderr.includes(
        'agentsnap: `npm ci` in ./ failed: npm exited with 3. The undo itself is done; node_modules may not match package-lock.json: see its output above, fix it and run `npm ci` there again (exit 6).\n',
      ),
      r.stderr,
    );
    assert.is(repo.read('package-lock.json').toString(), 'v1\n');
    assert.is(repo.read('a.txt').toString(), 'a\n');
    assert.is(fs.readFileSync(path.join(repo.base, 'npm.calls'), 'utf8'), `${repo.dir}\nci\n`);

    // op undo of that undo: the lockfile moves again, the same command, the same exit.
    const op = await cliProcess(repo, ['op', 'undo', '--sync-deps', '--json'], { env });
    assert.is(op.code, 6, op.stderr);
    const res = JSON.parse(op.stdout) as { files: { deps: { command: string[] }[] }; depsSync: { exitCode: number; error: string }[] };
    assert.equal(res.files.deps[0]?.command, ['npm', 'ci']);
    assert.equal(
      res.depsSync.map((s) => [s.exitCode, s.error]),
      [[3, 'npm exited with 3']],
    );
    assert.is(repo.read('package-lock.json').toString(), 'v2\n');

    // restore of the lockfile alone, without --sync-deps: exit 0, the command named.
    const restore = ok(await cliProcess(repo, ['restore', '1', '--', 'package-lock.json'], { env }), 'restore');
    assert.ok(
      restore.stderr.includes('agentsnap: package-lock.json changed: run `npm ci` (in ./) so node_modules matches (--sync-deps runs it)\n'),
      restore.stderr,
    );
    assert.is(fs.readFileSync(path.join(repo.base, 'npm.calls'), 'utf8'), `${repo.dir}\nci\n${repo.dir}\nci\n`, 'run twice in all');
  } finally {
    repo.cleanup();
  }
});

test('--sync-deps with the package manager missing from PATH: exit 6, what to install, the revert done; a step without dependency files runs nothing', async () => {
  const repo = tempRepo({ files: { 'package.json': '{"name":"x"}\n', 'pnpm-lock.yaml': 'lockfileVersion: 1\n', 'a.txt': 'a\n' } });
  try {
    await step(repo, () => repo.write('pnpm-lock.yaml', 'lockfileVersion: 2\n'));
    await step(repo, () => repo.write('a.txt', 'b\n'));
    // git alone on PATH (agentsnap needs it): no pnpm.
    const bin = path.join(repo.base, 'git-only-bin');
    fs.mkdirSync(bin);
    fs.symlinkSync(onPath('git', process.env) as string, path.join(bin, 'git'));
    const env = { PATH: bin };
    const plain = ok(await cliProcess(repo, ['revert', '2', '--sync-deps'], { env }), 'revert 2');
    assert.not.match(plain.stderr, /running|could not run/, 'nothing to run for a.txt');
    const r = await cliProcess(repo, ['revert', '1', '--sync-deps'], { env });
    assert.is(r.code, 6, r.stderr);
    assert.ok(
      r.stderr.includes(
        'agentsnap: could not run `pnpm install --frozen-lockfile` in ./: pnpm is not on PATH. The revert itself is done; install pnpm and run `pnpm install --frozen-lockfile` there so node_modules matches (exit 6).\n',
      ),
      r.stderr,
    );
    assert.is(repo.read('pnpm-lock.yaml').toString(), 'lockfileVersion: 1\n');
  } finally {
    repo.cleanup();
  }
});

test('undo of a project the agent created: its manifest is gone, nothing to run (nor with --sync-deps), and undo says what may be left', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    await step(repo, () => {
      repo.write('new/package.json', '{"name":"new"}\n');
      repo.write('new/package-lock.json', '{}\n');
    });
    const r = ok(await cliProcess(repo, ['undo', '--sync-deps']), 'undo --sync-deps');
    assert.ok(
      r.stderr.includes(
        'agentsnap: package-lock.json, package.json are gone (in new/): nothing to install there; node_modules there may be left over\n',
      ),
      r.stderr,
    );
    assert.not.match(r.stderr, /running/);
    assert.not.ok(repo.exists('new'));
  } finally {
    repo.cleanup();
  }
});

test.run();
