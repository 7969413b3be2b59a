// Issue 14: show, diff, log and replay page their output on a terminal the way
// git does ($AGENTSNAP_PAGER, then $PAGER, then less with LESS=FRX), and never
// when piped or with --no-pager. Run through the built executable inside a
// real pseudo-terminal (`script` from util-linux), with a pager that is a small
// script writing what it receives to a file.
import fs from 'node:fs';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BIN, cliProcess, runProcess, tempRepo, type TempRepo } from '../support/helpers.js';
import { shellQuote } from '../../src/base/shell.js';

const hasScript = spawnSync('script', ['--version'], { encoding: 'utf8' }).stdout?.includes('util-linux') ?? false;
if (!hasScript) console.log('cli-pager: skipped, `script` from util-linux is not installed (needed for a pseudo-terminal)');

/** Runs `agentsnap <args>` with stdout and stderr on a pseudo-terminal; what reached the terminal, and the exit code. */
async function onTerminal(repo: TempRepo, args: string[], env: Record<string, string> = {}): Promise<{ code: number; terminal: string }> {
  const cmd = `${[process.execPath, BIN, ...args].map(shellQuote).join(' ')}; echo "exit=$?"`;
  const r = await runProcess('script', ['-qec', cmd, '/dev/null'], { cwd: repo.dir, env: { ...repo.env, ...env }, input: null });
  assert.is(r.code, 0, r.stderr);
  const terminal = r.stdout.replace(/\r/g, '');
  const code = Number(/exit=(\d+)\s*$/.exec(terminal)?.[1] ?? 'NaN');
  return { code, terminal: terminal.replace(/exit=\d+\s*$/, '') };
}

/** A pager script that writes its input to `<base>/<name>.out` and its LESS/LV to `<name>.env`. */
function recordingPager(repo: TempRepo, name: string): { cmd: string; out: string; env: string } {
  const out = path.join(repo.base, `${name}.out`);
  const envFile = path.join(repo.base, `${name}.env`);
  const file = path.join(repo.base, `${name}.sh`);
  fs.writeFileSync(file, `#!/bin/sh\nprintf 'LESS=%s LV=%s\\n' "$LESS" "$LV" > ${shellQuote(envFile)}\ncat > ${shellQuote(out)}\n`, {
    mode: 0o755,
  });
  return { cmd: file, out, env: envFile };
}

/** A session whose step 2 writes a big file (more than a pipe holds) and step 3 a small one. */
async function session(repo: TempRepo): Promise<void> {
  for (const [args, change] of [
    [['snap', '-m', 'start'], () => {}],
    [
      ['snap', '--phase', 'pre', '--tool', 'Bash'],
      () => repo.write('big.txt', `${Array.from({ length: 40000 }, (_, i) => `line ${i}`).join('\n')}\n`),
    ],
    [['snap', '--phase', 'post'], () => {}],
    [['snap', '--phase', 'pre', '--tool', 'Edit'], () => repo.write('a.txt', 'a2\n')],
    [['snap', '--phase', 'post'], () => {}],
  ] as [string[], () => void][]) {
    const r = await cliProcess(repo, args);
    assert.is(r.code, 0, r.stderr);
    change();
  }
}

test('show, diff, log and replay on a terminal go through $AGENTSNAP_PAGER (LESS=FRX, LV=-c when unset), notes included; not with --no-pager', async () => {
  if (!hasScript) return;
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    await session(repo);
    for (const args of [['log'], ['show', '3'], ['diff', '2', '3'], ['replay']]) {
      const pager = recordingPager(repo, args[0]!);
      const r = await onTerminal(repo, args, { AGENTSNAP_PAGER: pager.cmd, PAGER: '/bin/false', NO_COLOR: '' });
      assert.is(r.code, 0, r.terminal);
      const paged = fs.readFileSync(pager.out, 'utf8');
      assert.match(paged, args[0] === 'replay' ? /Edit/ : /a\.txt/, `${args[0]} paged`);
      assert.match(paged, /session \S+ \(most recent in this worktree\)/, 'stderr on the terminal goes to the pager too, as git does');
      assert.not.match(r.terminal, /a\.txt|most recent/, `${args[0]}: nothing printed around the pager`);
      assert.is(fs.readFileSync(pager.env, 'utf8'), 'LESS=FRX LV=-c\n');
    }
    // The colours a terminal gets, in the pager too (less -R shows them).
    assert.match(fs.readFileSync(path.join(repo.base, 'show.out'), 'utf8'), /\x1b\[3\dm/);

    const unpaged = recordingPager(repo, 'unpaged');
    const plain = await onTerminal(repo, ['--no-pager', 'log'], { AGENTSNAP_PAGER: unpaged.cmd });
    assert.is(plain.code, 0);
    assert.match(plain.terminal, /Edit/);
    assert.not.ok(fs.existsSync(unpaged.out), '--no-pager: no pager');
    const after = await onTerminal(repo, ['show', '3', '--no-pager'], { AGENTSNAP_PAGER: unpaged.cmd });
    assert.match(after.terminal, /\+a2/);
    assert.not.ok(fs.existsSync(unpaged.out), '--no-pager after the command too');
  } finally {
    repo.cleanup();
  }
});

test('bisect on a terminal goes through the pager too (issue 32 item 7): its report, the first bad step with its stat', async () => {
  if (!hasScript) return;
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    await session(repo);
    const pager = recordingPager(repo, 'bisect');
    const r = await onTerminal(repo, ['bisect', '--run', 'test ! -e big.txt'], { AGENTSNAP_PAGER: pager.cmd, NO_COLOR: '' });
    assert.is(r.code, 0, r.terminal);
    const paged = fs.readFileSync(pager.out, 'utf8');
    assert.match(paged, /first bad step: 2 {2}Bash/);
    assert.match(paged, /big\.txt \| 40000 /, paged);
    assert.not.match(paged, 'line 39999', 'a stat, not the 40,000-line diff');
    assert.not.match(r.terminal, /first bad step/, 'nothing printed around the pager');
  } finally {
    repo.cleanup();
  }
});

test('pager choice: $PAGER when $AGENTSNAP_PAGER is unset, the user LESS kept, none for "" or cat, none when piped, not for other commands', async () => {
  if (!hasScript) return;
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    await session(repo);
    const viaPager = recordingPager(repo, 'viapager');
    const r = await onTerminal(repo, ['log'], { PAGER: viaPager.cmd, LESS: '-R' });
    assert.is(r.code, 0, r.terminal);
    assert.match(fs.readFileSync(viaPager.out, 'utf8'), /Edit/);
    assert.is(fs.readFileSync(viaPager.env, 'utf8'), 'LESS=-R LV=-c\n');
    for (const none of ['', 'cat']) {
      const direct = await onTerminal(repo, ['log'], { AGENTSNAP_PAGER: none, PAGER: viaPager.cmd });
      assert.match(direct.terminal, /Edit/, `AGENTSNAP_PAGER=${JSON.stringify(none)}: printed as is`);
    }
    const piped = recordingPager(repo, 'piped');
    const p = await cliProcess(repo, ['log'], { env: { AGENTSNAP_PAGER: piped.cmd } });
    assert.match(p.stdout, /Edit/);
    assert.not.ok(fs.existsSync(piped.out), 'piped: no pager');
    const other = recordingPager(repo, 'other');
    const status = await onTerminal(repo, ['sessions'], { AGENTSNAP_PAGER: other.cmd });
    assert.is(status.code, 0);
    assert.not.ok(fs.existsSync(other.out), 'sessions is not paged');
  } finally {
    repo.cleanup();
  }
});

test('a pager that is missing means plain output; a pager quit before the end (EPIPE) is no error', async () => {
  if (!hasScript) return;
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    await session(repo);
    const missing = await onTerminal(repo, ['show', '3'], { AGENTSNAP_PAGER: path.join(repo.base, 'no-such-pager') });
    assert.is(missing.code, 0, missing.terminal);
    assert.match(missing.terminal, /\+a2/);
    // The user quits at once: the pager reads one line of a diff far bigger than a pipe holds, then exits.
    const quitter = path.join(repo.base, 'quit.sh');
    fs.writeFileSync(quitter, '#!/bin/sh\nhead -n 1 > /dev/null\nexit 0\n', { mode: 0o755 });
    for (const args of [['show', '2'], ['diff', '0'], ['replay']]) {
      const q = await onTerminal(repo, args, { AGENTSNAP_PAGER: quitter });
      assert.is(q.code, 0, `${args.join(' ')}: ${q.terminal}`);
      assert.not.match(q.terminal, /EPIPE|Error|agentsnap:/, q.terminal);
    }
  } finally {
    repo.cleanup();
  }
});

test('piped into a reader that stops early (`| head`): no EPIPE stack, the command ends normally', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    await session(repo);
    for (const args of [['show', '2'], ['log'], ['replay']]) {
      const child = spawn(process.execPath, [BIN, ...args], { cwd: repo.dir, env: repo.env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      // The reader goes away after its first chunk, as `head -n 1` does.
      child.stdout.once('data', () => child.stdout.destroy());
      const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
      assert.is(code, 0, `${args.join(' ')}: ${stderr}`);
      assert.not.match(stderr, /EPIPE|Error|at /, stderr);
    }
  } finally {
    repo.cleanup();
  }
});

test.run();
