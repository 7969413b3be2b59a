// Issue 32, items 12–14, through the executable (bin/agentsnap.js in its own process): doctor's verdict right after
// the README's set-up, uninstalling without a trace (`gc --all`), and `git log --all` without agent snapshots.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { cliProcess, refsUnder, ROOT, tempRepo, USER_IDENTITY, type TempRepo } from '../support/helpers.js';

interface DoctorReport {
  healthy: boolean;
  problems: number;
  checks: { check: string; status: string; class: string; message: string; fix?: string; setup?: string }[];
}

function stateDir(repo: TempRepo): string {
  return path.join(repo.dir, '.git', 'agentsnap');
}

/** Every local config entry that is agentsnap's: its section, notes.rewriteRef of its notes, the alias `init` sets. */
function agentsnapConfig(repo: TempRepo): string[] {
  const res = repo.gitRaw(['config', '--local', '--list']);
  return res.stdout.split('\n').filter((l) => {
    const [key = '', value = ''] = [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)];
    return /agentsnap/i.test(key) || /refs\/(agent|notes\/agentsnap)/.test(value);
  });
}

test('doctor right after the README set-up (a session, no git hooks): exit 0, the hooks as optional set-up with their benefit', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    assert.is((await cliProcess(repo, ['snap', '-q'])).code, 0);
    const res = await cliProcess(repo, ['doctor']);
    assert.is(res.code, 0, res.stdout + res.stderr);
    assert.not.match(res.stdout, /problem/);
    assert.match(res.stdout, /optional +the git hooks are not installed/);
    assert.match(
      res.stdout,
      'they refuse a commit, merge or push that would put an agent snapshot into your history (`--strict`: a branch set to one too)',
    );
    assert.match(res.stdout, 'to set up: agentsnap hooks install');
    assert.match(res.stdout, /healthy/);

    const json = await cliProcess(repo, ['doctor', '--json']);
    assert.is(json.code, 0);
    const report = JSON.parse(json.stdout) as DoctorReport;
    assert.ok(report.healthy);
    for (const c of report.checks) assert.ok(c.class === 'required' || c.class === 'optional', `${c.check}: ${c.class}`);
    const hooks = report.checks.find((c) => c.check === 'hooks');
    assert.is(hooks?.status, 'info');
    assert.is(hooks?.class, 'optional');
    assert.is(hooks?.setup, 'agentsnap hooks install');
    assert.is(report.checks.find((c) => c.check === 'git')?.class, 'required');
  } finally {
    repo.cleanup();
  }
});

test('doctor: what is broken is a problem (exit 1): a step ref gone, and git hooks installed but one replaced', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const { session } = JSON.parse((await cliProcess(repo, ['snap', '--json'])).stdout) as { session: string };
    repo.git(['update-ref', '-d', `refs/agent/${session}/0`]);
    const res = await cliProcess(repo, ['doctor']);
    assert.is(res.code, 1, res.stdout);
    assert.match(res.stdout, `session ${session}: 1 ref(s) disagree with its journal`);
    assert.match(res.stdout, '1 problem found');

    assert.is((await cliProcess(repo, ['doctor', '--fix'])).code, 0);
    assert.is((await cliProcess(repo, ['hooks', 'install'])).code, 0);
    // Another tool (husky on `npm install`) writes its own pre-commit over agentsnap's: the protection set up is gone.
    fs.writeFileSync(path.join(repo.dir, '.git', 'hooks', 'pre-commit'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    const replaced = await cliProcess(repo, ['doctor', '--json']);
    assert.is(replaced.code, 1, replaced.stdout);
    const hooks = (JSON.parse(replaced.stdout) as DoctorReport).checks.find((c) => c.check === 'hooks');
    assert.is(hooks?.status, 'problem');
    assert.is(hooks?.fix, 'agentsnap hooks install');
  } finally {
    repo.cleanup();
  }
});

test('gc --all --dry-run with a session that never ended: exit 0, what would be refused and why, the rest as a sentence; the real run refuses', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const { session } = JSON.parse((await cliProcess(repo, ['snap', '--json', '-m', 'save point'])).stdout) as { session: string };
    const refsBefore = refsUnder(repo, 'refs/');
    const dry = await cliProcess(repo, ['gc', '--all', '--dry-run']);
    assert.is(dry.code, 0, dry.stdout + dry.stderr);
    assert.match(dry.stdout, `would refuse: 1 session may still be in use (${session})`);
    assert.match(dry.stdout, 'gc --all --force');
    assert.match(dry.stdout, /would remove 1 session, \d+ refs and the state directory [^;]*agentsnap; disk use/);
    assert.not.match(dry.stdout, /\(s\)/);
    assert.equal(refsUnder(repo, 'refs/'), refsBefore);

    const dryJson = JSON.parse((await cliProcess(repo, ['gc', '--all', '--dry-run', '--json'])).stdout) as {
      refused: { session: string; reason: string }[];
    };
    assert.equal(
      dryJson.refused.map((r) => r.session),
      [session],
    );

    const real = await cliProcess(repo, ['gc', '--all']);
    assert.is(real.code, 3, real.stdout + real.stderr);
    assert.equal(refsUnder(repo, 'refs/'), refsBefore);
  } finally {
    repo.cleanup();
  }
});

/** The README's remedy for agent snapshots in history views: its first `git log … --all` in a code span. */
function readmeLogCommand(): string {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const command = /`(git log [^`]*--all)`/.exec(readme.replace(/`git log --all`/g, ''))?.[1];
  assert.ok(command, 'the README shows a `git log … --all` command');
  return command as string;
}

test("the README's `git log --all` remedy after two sessions shows the user's commits only; `init` sets `git log-all`, `init --remove` takes it out", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    for (const text of ['two\n', 'three\n']) {
      assert.is((await cliProcess(repo, ['wrap', '--', 'sh', '-c', `printf '${text}' > a.txt`])).code, 0);
    }
    repo.git(['add', '-A']);
    repo.git(['commit', '-q', '-m', 'mine']);
    repo.git(['notes', '--ref', 'refs/notes/agentsnap', 'add', '-m', '{"v":1,"files":{}}', 'HEAD']);
    const mine = repo.git(['rev-list', 'HEAD']).trim().split('\n').sort();
    assert.ok(refsUnder(repo, 'refs/agent/').size > 0);
    const all = repo.git(['log', '--all', '--format=%H']).trim().split('\n');
    assert.ok(all.length > mine.length + 2, 'plain `git log --all` shows the snapshots');

    const command = readmeLogCommand();
    const sh = spawnSync('sh', ['-c', `${command} --format=%H`], {
      cwd: repo.dir,
      env: { ...repo.env, ...USER_IDENTITY },
      encoding: 'utf8',
    });
    assert.is(sh.status, 0, sh.stderr);
    assert.equal(sh.stdout.trim().split('\n').sort(), mine, command);

    // `init` sets the same as a git alias in this repository; `init --remove` takes out exactly that.
    const configBefore = fs.readFileSync(path.join(repo.dir, '.git', 'config'));
    assert.is((await cliProcess(repo, ['init', 'claude'])).code, 0);
    const alias = repo.gitRaw(['log-all', '--format=%H']);
    assert.is(alias.status, 0, alias.stderr);
    assert.equal(alias.stdout.trim().split('\n').sort(), mine);
    assert.is((await cliProcess(repo, ['init', 'codex'])).code, 0);
    assert.is((await cliProcess(repo, ['init', '--remove', 'claude'])).code, 0);
    assert.is(repo.gitRaw(['log-all', '--format=%H']).status, 0, 'codex still set up: the alias stays');
    assert.is((await cliProcess(repo, ['init', '--remove', 'codex'])).code, 0);
    assert.equal(fs.readFileSync(path.join(repo.dir, '.git', 'config')), configBefore);

    // An alias of that name of the user's own is left as it is, by init and by init --remove.
    repo.git(['config', 'alias.log-all', 'log --all --oneline']);
    const own = await cliProcess(repo, ['init', 'claude']);
    assert.match(own.stderr, 'alias.log-all');
    assert.is((await cliProcess(repo, ['init', '--remove', 'claude'])).code, 0);
    assert.is(repo.git(['config', 'alias.log-all']).trim(), 'log --all --oneline');
  } finally {
    repo.cleanup();
  }
});

test('uninstalling as the README says leaves no trace: no agentsnap ref (notes too), config key or state directory', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const bare = path.join(repo.base, 'backup.git');
    repo.git(['init', '-q', '--bare', bare]);
    assert.is((await cliProcess(repo, ['init', 'claude'])).code, 0);
    assert.is((await cliProcess(repo, ['hooks', 'install'])).code, 0);
    assert.is((await cliProcess(repo, ['remote', 'add', 'backup', bare])).code, 0);
    assert.is((await cliProcess(repo, ['wrap', '--', 'sh', '-c', 'echo two > a.txt'])).code, 0);
    repo.git(['add', '-A']);
    repo.git(['commit', '-q', '-m', 'mine']);
    repo.git(['notes', '--ref', 'refs/notes/agentsnap', 'add', '-f', '-m', '{"v":1,"files":{}}', 'HEAD']);
    assert.ok(agentsnapConfig(repo).length > 0);

    // The README's Uninstall section, in its order.
    assert.is((await cliProcess(repo, ['init', '--remove', 'claude'])).code, 0);
    assert.is((await cliProcess(repo, ['hooks', 'uninstall'])).code, 0);
    const dry = await cliProcess(repo, ['gc', '--all', '--dry-run']);
    assert.is(dry.code, 0, dry.stdout + dry.stderr);
    assert.match(dry.stdout, 'refs/notes/agentsnap');
    assert.match(dry.stdout, 'agentsnap.backupRemote');
    const gc = await cliProcess(repo, ['gc', '--all']);
    assert.is(gc.code, 0, gc.stdout + gc.stderr);
    assert.match(gc.stdout, /^removed 1 session, \d+ refs, 1 config entry and the state directory /m);

    assert.equal([...refsUnder(repo, 'refs/agent/').keys()], []);
    assert.equal([...refsUnder(repo, 'refs/agentsnap/').keys()], []);
    assert.equal([...refsUnder(repo, 'refs/notes/agentsnap').keys()], []);
    assert.equal(agentsnapConfig(repo), []);
    assert.not.ok(fs.existsSync(stateDir(repo)));
    assert.is(repo.git(['remote']).trim(), 'backup', "the git remote itself is the user's: it stays");
    assert.is(repo.read('a.txt').toString(), 'two\n');
  } finally {
    repo.cleanup();
  }
});

test('gc --all before hooks uninstall and init --remove: names what it leaves and the command for each; the notes setting the hooks need stays', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    assert.is((await cliProcess(repo, ['init', 'claude'])).code, 0);
    assert.is((await cliProcess(repo, ['hooks', 'install'])).code, 0);
    assert.is((await cliProcess(repo, ['wrap', '--', 'sh', '-c', 'echo two > a.txt'])).code, 0);
    const gc = await cliProcess(repo, ['gc', '--all']);
    assert.is(gc.code, 0, gc.stdout + gc.stderr);
    assert.match(gc.stdout, /^left: agentsnap's git hooks in .*: `agentsnap hooks uninstall` takes them out$/m);
    assert.match(gc.stdout, /^left: claude's agentsnap hooks: `agentsnap init --remove claude` takes them out$/m);
    assert.match(gc.stdout, /^removed 1 session, \d+ refs, 1 config entry and the state directory /m, gc.stdout);
    assert.is(repo.git(['config', '--get-all', 'notes.rewriteRef']).trim(), 'refs/notes/agentsnap*');
    assert.not.ok(repo.gitRaw(['config', 'alias.log-all']).status === 0, "init's alias went with the rest");
    assert.equal([...refsUnder(repo, 'refs/agent/').keys()], []);
    assert.not.ok(fs.existsSync(stateDir(repo)));
  } finally {
    repo.cleanup();
  }
});

test.run();
