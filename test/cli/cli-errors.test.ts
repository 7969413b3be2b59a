// Every failure: one clear message (and a hint), a documented exit code, no
// stack trace unless AGENTSNAP_DEBUG=1, and nothing half-created.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROOT, cli, cliProcess, tempRepo, type CliResult, type TempRepo } from '../support/helpers.js';
import { gitCommonDir, jsonError, snapJson, startNamedSession } from '../support/snap-helpers.js';

/** A failure as a user sees it: exit code, `agentsnap: <message>` and at most a hint line, no stack. */
function assertCleanFailure(r: CliResult, exit: number, message: RegExp): void {
  assert.is(r.code, exit, `exit ${r.code}: ${r.stderr}`);
  const lines = r.stderr.trimEnd().split('\n');
  assert.ok(lines.length >= 1 && lines.length <= 2, `one or two lines: ${r.stderr}`);
  assert.match(lines[0] ?? '', /^agentsnap: /);
  assert.match(r.stderr, message);
  assert.not.match(r.stderr, /\n\s+at /, 'no stack trace');
  assert.is(r.stdout, '');
}

async function withRepo(fn: (repo: TempRepo) => Promise<void>, files: Record<string, string> = { 'a.txt': 'a\n' }): Promise<void> {
  const repo = tempRepo({ files });
  try {
    await fn(repo);
  } finally {
    repo.cleanup();
  }
}

test('outside a repository', async () => {
  const repo = tempRepo({ noInit: true });
  try {
    // Shadow repositories off: `snap` would keep one for the directory (test/git/shadow.test.ts).
    const env = { GIT_CEILING_DIRECTORIES: repo.base, AGENTSNAP_SHADOWS: 'off' };
    assertCleanFailure(await cli(repo, ['snap'], { env }), 1, /not a git repository/);
    assertCleanFailure(await cli(repo, ['log'], { env }), 1, /not a git repository/);
    const j = await cli(repo, ['snap', '--json'], { env });
    assert.is(j.code, 1);
    const e = jsonError(j);
    assert.is(e.code, 'NotARepository');
    assert.is(e.exitCode, 1);
    assert.type(e.message, 'string');
    assert.type(e.hint, 'string');
    assert.type(e.data, 'object');
    assert.is(j.stderr, '');
  } finally {
    repo.cleanup();
  }
});

test('a bare repository, and inside .git', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const bare = path.join(repo.base, 'bare.git');
    repo.git(['init', '-q', '--bare', bare]);
    assertCleanFailure(await cli(repo, ['snap'], { cwd: bare }), 1, /bare repository/);
    assert.is(jsonError(await cli(repo, ['snap', '--json'], { cwd: bare })).code, 'BareRepository');
    assert.not.ok(fs.existsSync(path.join(bare, 'agentsnap')));
    assertCleanFailure(await cli(repo, ['snap'], { cwd: path.join(repo.dir, '.git') }), 1, /inside a git directory/);
    assertCleanFailure(await cli(repo, ['snap'], { cwd: path.join(repo.dir, '.git', 'refs') }), 1, /inside a git directory/);
    assert.not.ok(fs.existsSync(path.join(repo.dir, '.git', 'agentsnap')));
  } finally {
    repo.cleanup();
  }
});

test('invalid session ids are refused with InvalidSessionId and nothing is created', () =>
  withRepo(async (repo) => {
    const bad = ['../heads/main', 'a..b', 'x.lock', '.hidden', 'a'.repeat(65), 'has space', 'a/b', '-x', 'semi;colon', 'tab\t', 'ü'];
    for (const id of bad) {
      for (const args of [
        ['snap', `--session=${id}`],
        ['log', `--session=${id}`],
      ]) {
        const r = await cli(repo, args);
        assertCleanFailure(r, 1, /invalid session id/);
      }
      const j = await cli(repo, ['snap', '--json', `--session=${id}`]);
      assert.is(jsonError(j).code, 'InvalidSessionId', id);
      const viaEnv = await cli(repo, ['snap'], { env: { AGENTSNAP_SESSION: id } });
      assertCleanFailure(viaEnv, 1, /invalid session id/);
    }
    assert.is(repo.git(['for-each-ref']).trim().split('\n').length, 1, 'only the branch');
    assert.not.ok(fs.existsSync(path.join(gitCommonDir(repo), 'agentsnap', 'sessions')));
    // 64 characters is fine.
    await startNamedSession(repo, 'a'.repeat(64));
    const ok = await snapJson(repo, ['--session', 'a'.repeat(64)]);
    assert.is(ok.session.length, 64);
  }));

test('unknown session, no session yet, step out of range', () =>
  withRepo(async (repo) => {
    assertCleanFailure(await cli(repo, ['log']), 1, /no agentsnap session in this worktree/);
    assert.is(jsonError(await cli(repo, ['log', '--json'])).code, 'NoSession');
    await snapJson(repo);
    assertCleanFailure(await cli(repo, ['log', '--session', 'nope']), 1, /no session nope/);
    assertCleanFailure(await cli(repo, ['snap', '--session', 'nope']), 1, /no session nope/);
    assertCleanFailure(await cli(repo, ['snap'], { env: { AGENTSNAP_SESSION: 'nope' } }), 1, /no session nope/);
    assert.not.ok(fs.existsSync(path.join(gitCommonDir(repo), 'agentsnap', 'sessions', 'nope')), 'nothing created for an unknown session');
    assertCleanFailure(await cli(repo, ['show', '1'], { env: { AGENTSNAP_SESSION: 'nope' } }), 1, /no session nope/);
    assert.is(jsonError(await cli(repo, ['show', '1', '--session', 'nope', '--json'])).code, 'UnknownSession');
    assertCleanFailure(await cli(repo, ['show', '99']), 1, /has no step 99 \(steps are 1 to 1\)/);
    assert.is(jsonError(await cli(repo, ['show', '99', '--json'])).code, 'StepOutOfRange');
    assertCleanFailure(await cli(repo, ['diff', '99']), 1, /has no step 99/);
    assertCleanFailure(await cli(repo, ['diff', '0', '7']), 1, /has no step 7/);
    assertCleanFailure(await cli(repo, ['snap', '--phase', 'post', '--step', '99']), 1, /has no step 99/);
  }));

test('--phase post with no open step, with several open, and closing a closed step', () =>
  withRepo(async (repo) => {
    await snapJson(repo);
    assertCleanFailure(await cli(repo, ['snap', '--phase', 'post']), 1, /no open step to close/);
    assert.is(jsonError(await cli(repo, ['snap', '--phase', 'post', '--json'])).code, 'NoOpenStep');
    assertCleanFailure(await cli(repo, ['snap', '--phase', 'post', '--step', '1']), 1, /step 1 of session \S+ is not open/);
    await snapJson(repo, ['--phase', 'pre']);
    await snapJson(repo, ['--phase', 'pre']);
    const r = await cli(repo, ['snap', '--phase', 'post']);
    assertCleanFailure(r, 1, /has 2 open steps \(2, 3\)/);
    assert.match(r.stderr, /--step N/);
    const j = jsonError(await cli(repo, ['snap', '--phase', 'post', '--json']));
    assert.is(j.code, 'AmbiguousOpenStep');
    assert.equal(j.data.open, [2, 3]);
    const closed = await snapJson(repo, ['--phase', 'post', '--step', '3']);
    assert.is(closed.step, 3);
    const last = await snapJson(repo, ['--phase', 'post']);
    assert.is(last.step, 2);
  }));

test('usage errors exit 2: unknown command, unknown flag, bad values', () =>
  withRepo(async (repo) => {
    const bogus = await cli(repo, ['bogus']);
    assertCleanFailure(bogus, 2, /unknown command: bogus/i);
    const close = await cli(repo, ['snp']);
    assertCleanFailure(close, 2, /unknown command: snp/i);
    assert.match(close.stderr, /snap/, 'suggests the close command');
    assertCleanFailure(await cli(repo, ['snap', '--bogus']), 2, /bogus/);
    assertCleanFailure(await cli(repo, ['snap', '--phase', 'middle']), 2, /middle/);
    assertCleanFailure(await cli(repo, ['snap', '--step', '2']), 2, /--step goes with --phase post/);
    assertCleanFailure(await cli(repo, ['show']), 2, /show needs a step number/);
    assertCleanFailure(await cli(repo, ['show', 'abc']), 2, /"abc" is not a step number/);
    assertCleanFailure(await cli(repo, ['zzzzzz']), 2, /^agentsnap: unknown command: zzzzzz\n/);
    assertCleanFailure(await cli(repo, ['diff', 'x']), 2, /"x" is not a step/);
    assertCleanFailure(await cli(repo, ['log', '--last', '-1']), 2, /--last/);
    const j = await cli(repo, ['bogus', '--json']);
    assert.is(j.code, 2);
    assert.is(jsonError(j).code, 'Usage');
    assert.not.ok(fs.existsSync(path.join(gitCommonDir(repo), 'agentsnap', 'sessions')));
  }));

test('--help on every command shows an example; --version', () =>
  withRepo(async (repo) => {
    for (const cmd of ['snap', 'sessions', 'log', 'show', 'diff']) {
      const r = await cli(repo, [cmd, '--help']);
      assert.is(r.code, 0, r.stderr);
      assert.match(r.stdout, /Examples:/, `${cmd} --help has an example`);
    }
    const top = await cli(repo, ['--help']);
    assert.is(top.code, 0);
    assert.match(top.stdout, /snap/);
    const v = await cli(repo, ['--version']);
    assert.is(v.code, 0);
    assert.match(v.stdout, /^\d+\.\d+\.\d+/);
  }));

test('git missing from PATH: GitMissing, exit 1, one message', () =>
  withRepo(async (repo) => {
    const env = { PATH: path.join(repo.base, 'empty-bin') };
    const r = await cli(repo, ['snap'], { env });
    assertCleanFailure(r, 1, /git was not found on PATH/);
    assert.is(jsonError(await cli(repo, ['log', '--json'], { env })).code, 'GitMissing');
    const p = await cliProcess(repo, ['snap'], { env });
    assertCleanFailure(p, 1, /git was not found on PATH/);
  }));

test('git too old: GitTooOld names the minimum version, nothing created', () =>
  withRepo(async (repo) => {
    const realGit = spawnSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).stdout.trim();
    const bin = path.join(repo.base, 'old-git-bin');
    fs.mkdirSync(bin);
    fs.writeFileSync(
      path.join(bin, 'git'),
      `#!/bin/sh\nif [ "$1" = version ]; then echo "git version 2.20.1"; exit 0; fi\nexec ${realGit} "$@"\n`,
      { mode: 0o755 },
    );
    const env = { PATH: `${bin}:${process.env.PATH ?? ''}` };
    const r = await cli(repo, ['snap'], { env });
    assertCleanFailure(r, 1, /git 2\.20\.1 is too old: agentsnap needs git 2\.30\.0 or newer/);
    assert.is(jsonError(await cli(repo, ['snap', '--json'], { env })).code, 'GitTooOld');
    assert.is(repo.git(['for-each-ref', 'refs/agent/']), '');
    // wrap asks for the version beside its other start-up work: still refused before any session state or the agent.
    const marker = path.join(repo.base, 'agent-ran');
    const w = await cliProcess(repo, ['wrap', '-q', '--', 'touch', marker], { env: { ...env, AGENTSNAP_SERVER: 'on' } });
    assertCleanFailure(w, 1, /could not take the baseline snapshot: git 2\.20\.1 is too old: agentsnap needs git 2\.30\.0 or newer/);
    assert.not.ok(fs.existsSync(marker), 'the agent did not run');
    const sessions = path.join(gitCommonDir(repo), 'agentsnap', 'sessions');
    assert.equal(fs.existsSync(sessions) ? fs.readdirSync(sessions) : [], []);
    assert.is(repo.git(['for-each-ref', 'refs/agent/', 'refs/agentsnap/']), '');
  }));

test('AGENTSNAP_DEBUG=1 adds the stack trace', () =>
  withRepo(async (repo) => {
    const r = await cli(repo, ['show', '5'], { env: { AGENTSNAP_DEBUG: '1' } });
    assert.is(r.code, 1);
    assert.match(r.stderr, /\n\s+at /);
  }));

test('an internal error is exit 70 with a one-line message (subprocess)', () =>
  withRepo(async (repo) => {
    await snapJson(repo);
    // A journal whose step refers to a commit that does not exist: diff fails inside git.
    const session = (JSON.parse((await cli(repo, ['sessions', '--json'])).stdout) as { id: string }[])[0]?.id ?? '';
    const journal = path.join(gitCommonDir(repo), 'agentsnap', 'sessions', session, 'journal.jsonl');
    const text = fs
      .readFileSync(journal, 'utf8')
      .replace(/"commit":"([0-9a-f]{40}|[0-9a-f]{64})"/, (_m, oid: string) => `"commit":"${'1'.repeat(oid.length)}"`);
    fs.writeFileSync(journal, text);
    const r = await cliProcess(repo, ['show', '1']);
    assert.is(r.code, 70, r.stderr);
    assert.not.match(r.stderr, /\n\s+at /);
    assert.ok(r.stderr.trimEnd().split('\n').length <= 2, r.stderr);
  }));

test("the executable (the bundled CLI) prints what the unbundled CLI module prints: help in the user's language, usage errors, version", () =>
  withRepo(async (repo) => {
    // The same main() from tsc's module, in a process of its own like the executable (yargs reads the locale from the process).
    const mainModule = pathToFileURL(path.join(ROOT, 'dist', 'cli', 'main.js')).href;
    const unbundled = (args: string[], env: Record<string, string>) => {
      const r = spawnSync(
        process.execPath,
        ['--input-type=module', '-e', `const m = await import(${JSON.stringify(mainModule)}); await m.main();`, '--', 'agentsnap', ...args],
        {
          cwd: repo.dir,
          env: { ...repo.env, ...env },
          encoding: 'utf8',
        },
      );
      return { code: r.status ?? 128, stdout: r.stdout, stderr: r.stderr };
    };
    const cases: { args: string[]; env?: Record<string, string> }[] = [
      { args: ['snap', '--help'], env: { LC_ALL: 'de_DE.UTF-8' } },
      { args: ['--help'] },
      { args: ['frobnicate'] },
      { args: ['snap', '--phase', 'middle'] },
      { args: ['log', '--last', 'x', '--json'] },
      { args: ['--version'] },
    ];
    for (const c of cases) {
      const executable = await cliProcess(repo, c.args, c.env ? { env: c.env } : {});
      assert.equal(executable, unbundled(c.args, c.env ?? {}), c.args.join(' '));
    }
    assert.match(
      (await cliProcess(repo, ['snap', '--help'], { env: { LC_ALL: 'de_DE.UTF-8' } })).stdout,
      /Optionen:/,
      "yargs' own words come from its locales",
    );
  }));

test.run();
