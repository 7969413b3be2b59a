// Adversarial tests of issue 17's check/bisect, blame and commit notes: what a hostile or merely unusual
// repository, environment or configuration does to them. Each failed before its fix.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { agentsnapOnPath, BIN, cli, cliProcess, indexBytes, tempRepo, USER_IDENTITY, type TempRepo } from '../support/helpers.js';
import { journalEvents, recordStep } from '../support/snap-helpers.js';

function checkEvents(repo: TempRepo): Record<string, unknown>[] {
  const id = repo.git(['for-each-ref', '--format=%(refname)', 'refs/agent/']).split('\n')[0]!.split('/')[2]!;
  return journalEvents(repo, id).filter((e) => e.type === 'step.check');
}

test('check: a command the journal redacts (agentsnap.redactPattern, a token in it) is still recognised: reused, and the background runner ends', async () => {
  const repo = tempRepo({ files: { README: 'x\n' } });
  try {
    await recordStep(repo, () => repo.write('a.txt', 'a\n'));
    repo.git(['config', 'agentsnap.redactPattern', 'hunter2']);
    const cmd = 'echo hunter2 >/dev/null; true';
    const first = await cli(repo, ['check', '--run', cmd]);
    assert.is(first.code, 0, first.stderr);
    const again = await cli(repo, ['check', '--run', cmd]);
    assert.match(again.stdout, 'recorded earlier for this state', 'the same command on the same state is not run again');
    // The background runner looked for its command among the journaled (redacted) ones forever, running it and
    // journaling a step.check each time. Bounded only so that the failing version fails instead of hanging.
    repo.git(['config', 'agentsnap.check', cmd]);
    const before = checkEvents(repo).length;
    const auto = await cliProcess(repo, ['check', '--auto'], { timeoutMs: 120_000 });
    assert.is(auto.code, 0, `the runner ended by itself: ${auto.code} ${auto.stderr}`);
    assert.is(checkEvents(repo).length, before, 'nothing new to check: no new step.check');
  } finally {
    repo.cleanup();
  }
});

test("check: a git hook's or shell's GIT_INDEX_FILE / GIT_DIR never lets the check's git commands reach the user's index, HEAD or branch", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    await recordStep(repo, () => repo.write('b.txt', 'b\n'));
    const gitDir = path.join(repo.dir, '.git');
    const index = indexBytes(repo);
    const head = repo.git(['rev-parse', 'main']);
    // As in a pre-commit hook that runs `agentsnap check`: git sets GIT_INDEX_FILE (and, often, GIT_DIR).
    const viaIndex = await cli(repo, ['check', '--fresh', '--run', 'git rm -q --cached a.txt'], {
      env: { GIT_INDEX_FILE: path.join(gitDir, 'index') },
    });
    assert.is(viaIndex.code, 0, viaIndex.stdout + viaIndex.stderr);
    assert.ok(indexBytes(repo)?.equals(index as Buffer), "the user's index is byte for byte as it was");
    const viaDir = await cli(repo, ['check', '--fresh', '--run', 'echo new > n.txt && git add -A && git commit -q -m "made by a check"'], {
      env: { GIT_DIR: gitDir, ...USER_IDENTITY },
    });
    assert.is(viaDir.code, 0, viaDir.stdout + viaDir.stderr);
    assert.is(repo.git(['rev-parse', 'main']), head, "the user's branch did not move");
    assert.ok(indexBytes(repo)?.equals(index as Buffer), "the user's index is byte for byte as it was");
    assert.is(repo.git(['status', '--porcelain']), '?? b.txt\n');
  } finally {
    repo.cleanup();
  }
});

test('blame: a CRLF file (text eol=crlf) changed since the last snapshot keeps its recorded lines and its bytes', async () => {
  const repo = tempRepo();
  try {
    repo.write('.gitattributes', '*.txt text eol=crlf\n');
    repo.write('f.txt', 'one\r\ntwo\r\n');
    repo.git(['add', '-A']);
    repo.git(['commit', '-q', '-m', 'initial']);
    const n = await recordStep(repo, () => repo.write('f.txt', 'one\r\ntwo\r\nthree\r\n'));
    repo.write('f.txt', 'one\r\ntwo\r\nthree\r\nfour\r\n'); // not recorded yet
    const res = await cli(repo, ['blame', 'f.txt', '--json']);
    assert.is(res.code, 0, res.stderr);
    const lines = (JSON.parse(res.stdout) as { lines: { text: string; origin: { kind: string; step?: number } }[] }).lines;
    assert.equal(
      lines.map((l) => [l.text, l.origin.kind, l.origin.step ?? null]),
      [
        ['one\r', 'before-session', null],
        ['two\r', 'before-session', null],
        ['three\r', 'step', n],
        ['four\r', 'not-recorded', null],
      ],
    );
  } finally {
    repo.cleanup();
  }
});

test("blame notes: a note git copied to a rebased commit whose file moved the agent's lines is mapped through the diff, never read as it is; gc writes it afresh", async () => {
  const repo = tempRepo({ files: { 'base.txt': 'b1\nb2\n' } });
  try {
    const env = { PATH: agentsnapOnPath(repo.base) };
    const g = (args: string[]) => {
      const r = spawnSync('git', args, { cwd: repo.dir, env: { ...repo.env, ...USER_IDENTITY, ...env }, encoding: 'utf8' });
      assert.is(r.status, 0, `git ${args.join(' ')}: ${r.stderr}`);
      return r.stdout;
    };
    assert.is((await cli(repo, ['hooks', 'install'], { env })).code, 0);
    const n = await recordStep(repo, () => repo.write('base.txt', 'b1\nb2\nagent1\nagent2\nb3\n'), env);
    g(['commit', '-q', '-am', 'agent']);
    assert.is((await cli(repo, ['hooks', 'note-commit'], { env })).code, 0); // as gc does before it removes the session
    g(['checkout', '-q', '-b', 'side', 'HEAD~1']);
    repo.write('base.txt', 'u0\nb1\nb2\n');
    g(['commit', '-q', '-am', 'side']);
    g(['checkout', '-q', 'main']);
    g(['rebase', '-q', 'side']);
    // git copied the note as it was: lines 3-5, where the rebased file has b2, agent1 and agent2.
    const copied = g(['notes', '--ref=agentsnap', 'show', 'HEAD']);
    assert.match(copied, '"base.txt":[[3,3,', copied);
    const expected = [
      ['u0', 'before-session', null],
      ['b1', 'before-session', null],
      ['b2', 'before-session', null],
      ['agent1', 'committed', n],
      ['agent2', 'committed', n],
      ['b3', 'committed', n],
    ];
    const blameInNewSession = async () => {
      const later = await cliProcess(repo, ['wrap', '--agent', 'generic', '--', 'true'], { env });
      assert.is(later.code, 0, later.stderr);
      const id = /started session (\S+)/.exec(later.stderr)?.[1] as string;
      const blame = await cli(repo, ['blame', 'base.txt', '--session', id, '--json'], { env });
      assert.is(blame.code, 0, blame.stderr);
      const lines = (JSON.parse(blame.stdout) as { lines: { text: string; origin: { kind: string; step?: number } }[] }).lines;
      return lines.map((l) => [l.text, l.origin.kind, l.origin.step ?? null]);
    };
    assert.is((await cli(repo, ['end'], { env })).code, 0);
    assert.equal(await blameInNewSession(), expected);
    const gc = await cli(repo, ['gc', '--older-than', '0', '--json'], { env });
    assert.is(gc.code, 0, gc.stderr);
    assert.is((JSON.parse(gc.stdout) as { notedCommits: number }).notedCommits, 1, 'the copied note is not current: written afresh');
    const note = g(['notes', '--ref=agentsnap', 'show', 'HEAD']).split('\n').filter(Boolean);
    assert.match(note[0] as string, '"base.txt":[[4,3,', 'the fresh note first, the copied one after it');
    assert.equal(await blameInNewSession(), expected, 'once every session is gone');
  } finally {
    repo.cleanup();
  }
});

test('blame: a symlink is blamed as the link it is, never read through (a FIFO or /dev/zero behind it would hang)', async () => {
  const repo = tempRepo({ files: { README: 'x\n' } });
  try {
    fs.writeFileSync(path.join(repo.base, 'outside.txt'), 'secret outside the repository\n');
    await recordStep(repo, () => fs.symlinkSync(path.join(repo.base, 'outside.txt'), path.join(repo.dir, 'link')));
    const res = await cli(repo, ['blame', 'link', '--json']);
    assert.is(res.code, 0, res.stderr);
    const lines = (JSON.parse(res.stdout) as { lines: { text: string; origin: { kind: string } }[] }).lines;
    assert.equal(
      lines.map((l) => [l.text, l.origin.kind]),
      [[path.join(repo.base, 'outside.txt'), 'step']],
    );
    const fifo = spawnSync('mkfifo', [path.join(repo.dir, 'pipe')]);
    if (fifo.status === 0) {
      const p = await cli(repo, ['blame', 'pipe']);
      assert.is(p.code, 2, p.stderr);
      assert.match(p.stderr, 'not a regular file');
    }
  } finally {
    repo.cleanup();
  }
});

function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) [ZX] /.test(stat);
  } catch {
    return false;
  }
}

async function until(what: string, ok: () => boolean): Promise<void> {
  // Generous bound: a loaded machine makes this slower, never wrong.
  for (let i = 0; i < 1200 && !ok(); i++) await new Promise((r) => setTimeout(r, 100));
  assert.ok(ok(), what);
}

function checkWorktrees(repo: TempRepo): string[] {
  return repo
    .git(['worktree', 'list', '--porcelain'])
    .split('\n')
    .filter((l) => l.startsWith('worktree ') && l.includes('check-'));
}

test('check: a command that leaves a process behind holding its output returns when the command ends; the leftover is stopped', async () => {
  const repo = tempRepo({ files: { README: 'x\n' } });
  try {
    await recordStep(repo, () => repo.write('a.txt', 'a\n'));
    const pidFile = path.join(repo.base, 'bg.pid');
    // Bounded only so that the failing version fails instead of hanging for 600 s.
    const res = await cliProcess(repo, ['check', '--run', `sleep 600 & echo $! > '${pidFile}'; echo started`, '--json'], {
      timeoutMs: 120_000,
    });
    assert.is(res.code, 0, res.stdout + res.stderr);
    assert.match(res.stdout, 'started');
    const pid = Number(fs.readFileSync(pidFile, 'utf8'));
    await until(`the leftover sleep ${pid} was stopped`, () => !alive(pid));
    assert.equal(checkWorktrees(repo), []);
  } finally {
    repo.cleanup();
  }
});

test('check: SIGTERM (or Ctrl-C) of agentsnap check midway stops the command and removes the throwaway worktree', async () => {
  const repo = tempRepo({ files: { README: 'x\n' } });
  try {
    await recordStep(repo, () => repo.write('a.txt', 'a\n'));
    const pidFile = path.join(repo.base, 'cmd.pid');
    for (const sig of ['SIGTERM', 'SIGINT'] as const) {
      fs.rmSync(pidFile, { force: true });
      const child = spawn(
        process.execPath,
        [BIN, 'check', '--fresh', '--run', `echo $$ > '${pidFile}'.tmp && mv '${pidFile}'.tmp '${pidFile}' && exec sleep 600`],
        { cwd: repo.dir, env: repo.env, stdio: 'ignore' },
      );
      const ended = new Promise<void>((resolve) => child.on('close', () => resolve()));
      await until('the check command started', () => fs.existsSync(pidFile));
      const pid = Number(fs.readFileSync(pidFile, 'utf8'));
      child.kill(sig);
      await ended;
      await until(`${sig}: the check command ${pid} was stopped`, () => !alive(pid));
      assert.equal(checkWorktrees(repo), [], `${sig}: no worktree left`);
      assert.equal(
        (fs.existsSync(path.join(repo.dir, '.git', 'worktrees')) ? fs.readdirSync(path.join(repo.dir, '.git', 'worktrees')) : []).filter(
          (n) => n.startsWith('check-'),
        ),
        [],
        `${sig}: no .git/worktrees entry left`,
      );
    }
  } finally {
    repo.cleanup();
  }
});

test('check --steps naming no recorded state is an error, not a silent pass of nothing', async () => {
  const repo = tempRepo({ files: { README: 'x\n' } });
  try {
    await recordStep(repo, () => repo.write('a.txt', 'a\n'));
    const res = await cli(repo, ['check', '--steps', '99..100', '--run', 'false']);
    assert.is(res.code, 1, `${res.code} ${res.stdout} ${res.stderr}`);
    assert.match(res.stderr, 'no state after a step in 99..100');
    assert.equal(checkWorktrees(repo), []);
  } finally {
    repo.cleanup();
  }
});

test('hooks install: commit --amend and rebase print no "notes ref refs/notes/agentsnap is invalid" before the first note; uninstall takes the setting out', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const env = { PATH: agentsnapOnPath(repo.base) };
    assert.is((await cli(repo, ['hooks', 'install'], { env })).code, 0);
    const amend = spawnSync('git', ['commit', '-q', '--amend', '-m', 'amended'], {
      cwd: repo.dir,
      env: { ...repo.env, ...USER_IDENTITY, ...env },
      encoding: 'utf8',
    });
    assert.is(amend.status, 0, amend.stderr);
    assert.is(amend.stderr, '', 'nothing on stderr');
    assert.is((await cli(repo, ['hooks', 'uninstall'], { env })).code, 0);
    assert.is(repo.gitRaw(['config', '--get-all', 'notes.rewriteRef']).stdout, '');
  } finally {
    repo.cleanup();
  }
});

test.run();
