// Issue 29 (4): recorded text never controls a terminal. A session recorded OSC 52 clipboard writes, OSC 0
// title changes, ESC[2J, C1 controls, a bare \r and a file name with newlines (test/support/hostile-text.ts);
// every command that prints it shows it escaped (base/printable.ts), with --no-pager, PAGER=cat and
// AGENTSNAP_PAGER=cat, on a pipe and on a real pseudo-terminal; --json stays exact.
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BIN, USER_IDENTITY, cli, cliProcess, runProcess, tempRepo, type TempRepo } from '../support/helpers.js';
import { shellQuote } from '../../src/base/shell.js';
import { fenceOf, printableLine, printableName, printableText } from '../../src/base/printable.js';
import {
  EVIL_CONTENT,
  EVIL_NAME,
  EVIL_NAME_SHOWN,
  HOSTILE,
  TITLE as TITLE_RAW,
  controlsIn,
  controlsOutsideColours,
  recordHostileSession,
  type HostileSession,
} from '../support/hostile-text.js';

/** How HOSTILE's pieces read once escaped. */
const SHOWN = {
  osc52: '\\u001b]52;c;cm0gLXJmIC8K\\u0007',
  title: '\\u001b]0;pwned\\u0007',
  clear: '\\u001b[2J',
  c1: '\\u009b31m',
  cr: 'bare\\rforged',
};

/** The three ways a user turns the pager off: none of them may let a control through. */
const NO_PAGER: { name: string; args: string[]; env: Record<string, string> }[] = [
  { name: '--no-pager', args: ['--no-pager'], env: {} },
  { name: 'PAGER=cat', args: [], env: { PAGER: 'cat' } },
  { name: 'AGENTSNAP_PAGER=cat', args: [], env: { AGENTSNAP_PAGER: 'cat', PAGER: 'less' } },
];

let repo: TempRepo;
let s: HostileSession;

test.before(async () => {
  repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  s = await recordHostileSession(repo);
});

test.after(() => repo.cleanup());

/** Runs `agentsnap <args>` in-process under each way of turning the pager off; stdout and stderr of each, with no control character in them. */
async function printed(
  args: string[],
  opts: { code?: number; env?: Record<string, string>; repo?: TempRepo; variants?: typeof NO_PAGER } = {},
): Promise<string> {
  let last = '';
  for (const v of opts.variants ?? NO_PAGER) {
    const r = await cli(opts.repo ?? repo, [...v.args, ...args], { env: { NO_COLOR: '1', ...v.env, ...(opts.env ?? {}) } });
    assert.is(r.code, opts.code ?? 0, `${args.join(' ')} (${v.name}): ${r.stderr}`);
    const both = r.stdout + r.stderr;
    assert.equal(controlsIn(both), [], `${args.join(' ')} (${v.name}) printed control characters:\n${JSON.stringify(both).slice(0, 2000)}`);
    last = both;
  }
  return last;
}

/** No printed line begins with what the file name tried to forge. */
function noForgedLine(text: string): void {
  for (const line of text.split('\n')) {
    assert.not.match(line, /^\s*3 {2}Bash/, `forged line: ${line}`);
    assert.not.match(line, /^undo with force/, `forged line: ${line}`);
  }
}

test('log: the file name, tool name, message and command escaped; no forged line', async () => {
  const out = await printed(['log', '--session', s.id]);
  assert.ok(out.includes(EVIL_NAME_SHOWN), out);
  assert.ok(out.includes(`Tool${SHOWN.title}`), out);
  assert.ok(out.includes(SHOWN.osc52), out);
  noForgedLine(out);
});

test('show: the diff (file name and contents) and the header escaped, also coloured on a terminal', async () => {
  const out = await printed(['show', String(s.bash), '--session', s.id]);
  for (const piece of Object.values(SHOWN)) assert.ok(out.includes(piece), `${piece} missing:\n${out}`);
  assert.ok(out.includes('+two out '), out);
  noForgedLine(out);
  const coloured = await cli(repo, ['show', String(s.bash), '--session', s.id], { env: { FORCE_COLOR: '1', NO_COLOR: '' } });
  assert.is(coloured.code, 0, coloured.stderr);
  assert.match(coloured.stdout, '\x1b[32m+two out', 'added lines coloured green');
  assert.equal(controlsOutsideColours(coloured.stdout), []);
  assert.ok(coloured.stdout.includes(SHOWN.clear), 'the recorded ESC[2J shown escaped, not run');
  const stat = await printed(['show', String(s.bash), '--stat', '--session', s.id]);
  assert.ok(stat.includes('check passed'), stat);
  noForgedLine(stat);
});

test('diff: file names and contents escaped', async () => {
  const out = await printed(['diff', '0', '--session', s.id]);
  assert.ok(out.includes(SHOWN.osc52) && out.includes(SHOWN.c1) && out.includes(SHOWN.cr), out);
  noForgedLine(out);
});

test('replay: prompt, assistant text, command, output, tool name and file names escaped; --format jsonl exact', async () => {
  const out = await printed(['replay', '--session', s.id]);
  for (const piece of Object.values(SHOWN)) assert.ok(out.includes(piece), `${piece} missing:\n${out}`);
  assert.ok(out.includes(`Please out ${SHOWN.osc52}`), 'the user prompt');
  assert.ok(out.includes(`Sure out ${SHOWN.osc52}`), 'the assistant text');
  assert.ok(out.includes(`Step ${s.oddTool}: "Tool${SHOWN.title}"`), out);
  noForgedLine(out);
  const jsonl = await cli(repo, ['replay', '--session', s.id, '--format', 'jsonl']);
  const step = jsonl.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { type: string; step?: number; output?: { stdout?: string } })
    .find((e) => e.type === 'step' && e.step === s.bash);
  assert.is(step?.output?.stdout, HOSTILE, 'jsonl keeps the recorded bytes');
});

test('status, sessions, undo --dry-run and restore --dry-run: names escaped', async () => {
  const status = await printed(['status', '--session', s.id]);
  assert.ok(status.includes(`Tool${SHOWN.title}`), status);
  await printed(['sessions']);
  const undo = await printed(['undo', String(s.bash), '--dry-run', '--session', s.id]);
  assert.ok(undo.includes(EVIL_NAME_SHOWN), undo);
  noForgedLine(undo);
  const restore = await printed(['restore', String(s.bash), '--dry-run', '--session', s.id, '--', EVIL_NAME]);
  assert.ok(restore.includes(EVIL_NAME_SHOWN), restore);
  noForgedLine(restore);
});

test("an undo refused over the user's edit of the hostile file: the refusal names it escaped, on one line (exit 3)", async () => {
  const file = path.join(repo.dir, EVIL_NAME);
  fs.writeFileSync(file, `user ${HOSTILE}\n`);
  try {
    const out = await printed(['undo', String(s.bash), '--session', s.id], { code: 3 });
    assert.ok(out.includes(EVIL_NAME_SHOWN), out);
    noForgedLine(out);
    assert.is(fs.readFileSync(file, 'utf8'), `user ${HOSTILE}\n`, 'nothing changed');
  } finally {
    fs.writeFileSync(file, EVIL_CONTENT);
  }
});

test('blame and why: the line text, the prompt and the input escaped', async () => {
  const blame = await printed(['blame', 'a.txt', '--session', s.id]);
  assert.ok(blame.includes(`two out ${SHOWN.osc52}`), blame);
  const why = await printed(['why', 'a.txt:1', '--session', s.id]);
  assert.ok(why.includes(SHOWN.osc52), why);
  assert.match(why, 'the user had asked: ');
  const json = await cli(repo, ['why', 'a.txt:1', '--session', s.id, '--json']);
  assert.is((JSON.parse(json.stdout) as { text: string }).text, `two ${HOSTILE}`, '--json keeps the bytes');
});

test("check and bisect: the check's output and the first bad step's diff escaped", async () => {
  const script = path.join(repo.base, 'check.sh');
  // Fails once a.txt holds "two": step 2 is the first bad one. Its output is hostile.
  fs.writeFileSync(script, `printf '%s\\n' ${shellQuote(HOSTILE)}\nif grep -q two a.txt; then exit 1; fi\n`);
  const check = await printed(['check', '--run', `sh ${shellQuote(script)}`, '--session', s.id], { code: 1 });
  assert.ok(check.includes(SHOWN.osc52) && check.includes(SHOWN.cr), check);
  const bisect = await printed(['bisect', '--run', `sh ${shellQuote(script)}`, '--session', s.id]);
  assert.match(bisect, `first bad step: ${s.bash}`);
  assert.ok(bisect.includes(SHOWN.osc52), bisect);
  noForgedLine(bisect);
});

test('revert: the report names the hostile file escaped', async () => {
  const out = await printed(['revert', String(s.bash), '--dry-run', '--session', s.id]);
  assert.ok(out.includes(EVIL_NAME_SHOWN), out);
  noForgedLine(out);
});

test('a session worktree with a hostile name and file: sessions, apply, apply --undo and promote print them escaped', async () => {
  const other = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const agent = path.join(other.base, 'agent.sh');
    const body = [
      'cd "$AGENTSNAP_WORKTREE"',
      'step=$(node "$AGENTSNAP_BIN" snap --phase pre --tool Write -q)',
      'printf \'%s\\n\' "$EVIL_CONTENT" > "$EVIL_NAME"',
      'node "$AGENTSNAP_BIN" snap --phase post --step "$step" -q >/dev/null',
    ];
    fs.writeFileSync(agent, `#!/bin/sh\n${body.join('\n')}\n`, { mode: 0o755 });
    const name = `try${TITLE_RAW}\n3  Bash  [done]`;
    const wrap = await cliProcess(other, ['wrap', '--worktree', '--name', name, '--', agent], {
      env: { EVIL_NAME, EVIL_CONTENT, AGENTSNAP_BIN: BIN },
    });
    assert.is(wrap.code, 0, wrap.stderr);
    assert.equal(controlsIn(wrap.stderr), [], wrap.stderr);
    const id = /session (\S+) ended/.exec(wrap.stderr)?.[1] ?? '';
    const opts = { repo: other };
    const sessions = await printed(['sessions'], opts);
    assert.ok(sessions.includes('"try\\u001b]0;pwned\\u0007\\n3  Bash  [done]"'), sessions);
    noForgedLine(sessions);
    // apply changes the worktree: once per way of turning the pager off, taken back between.
    for (const [i, v] of NO_PAGER.entries()) {
      const apply = await printed(['apply', id], { ...opts, variants: [v] });
      assert.ok(apply.includes('check passed'), apply);
      noForgedLine(apply);
      noForgedLine(await printed(['apply', '--undo'], { ...opts, variants: [v] }));
      const promote = await printed(['promote', id, '--branch', `from-agent-${i}`], { ...opts, variants: [v], env: USER_IDENTITY });
      assert.ok(promote.includes('check passed'), promote);
      noForgedLine(promote);
    }
  } finally {
    other.cleanup();
  }
});

const hasScript = spawnSync('script', ['--version'], { encoding: 'utf8' }).stdout?.includes('util-linux') ?? false;
if (!hasScript) console.log('escapes: the terminal test skipped, `script` from util-linux is not installed');

/** What reached a real pseudo-terminal (`script`), stdout and stderr, with the exit code. */
async function onTerminal(args: string[], env: Record<string, string>): Promise<{ code: number; terminal: string }> {
  const cmd = `${[process.execPath, BIN, ...args].map(shellQuote).join(' ')}; echo "exit=$?"`;
  const r = await runProcess('script', ['-qec', cmd, '/dev/null'], {
    cwd: repo.dir,
    env: { ...repo.env, NO_COLOR: '', ...env },
    input: null,
  });
  assert.is(r.code, 0, r.stderr);
  const code = Number(/exit=(\d+)\s*$/.exec(r.stdout)?.[1] ?? 'NaN');
  return { code, terminal: r.stdout.replace(/exit=\d+\s*$/, '') };
}

test('on a terminal, coloured, with --no-pager, PAGER=cat and AGENTSNAP_PAGER=cat: log, show, diff and replay send no recorded control to it', async () => {
  if (!hasScript) return;
  for (const args of [['log'], ['show', String(s.bash)], ['diff', '0'], ['replay']]) {
    for (const v of NO_PAGER) {
      const r = await onTerminal([...v.args, ...args, '--session', s.id], v.env);
      assert.is(r.code, 0, r.terminal);
      assert.equal(controlsOutsideColours(r.terminal), [], `${args[0]} (${v.name}):\n${JSON.stringify(r.terminal).slice(0, 2000)}`);
      assert.ok(r.terminal.includes(args[0] === 'log' ? EVIL_NAME_SHOWN : SHOWN.osc52), `${args[0]} (${v.name}) shows the escaped form`);
    }
  }
});

test('undo and redo done for real (last: they change the worktree): their reports name the hostile file escaped', async () => {
  const [a, b, c] = NO_PAGER as [(typeof NO_PAGER)[0], (typeof NO_PAGER)[0], (typeof NO_PAGER)[0]];
  const undo = await printed(['undo', String(s.bash), '--session', s.id], { variants: [a] });
  assert.ok(undo.includes(EVIL_NAME_SHOWN), undo);
  assert.not.ok(fs.existsSync(path.join(repo.dir, EVIL_NAME)), 'undone');
  const redo = await printed(['redo', '--session', s.id], { variants: [b] });
  assert.ok(redo.includes(EVIL_NAME_SHOWN), redo);
  assert.is(fs.readFileSync(path.join(repo.dir, EVIL_NAME), 'utf8'), EVIL_CONTENT, 'redone');
  const again = await printed(['undo', String(s.bash), '--session', s.id], { variants: [c] });
  for (const text of [undo, redo, again]) noForgedLine(text);
});

test("the one escaping (base/printable.ts): names quoted, lines and texts escaped in JSON's spelling; CRLF and tabs kept in text; fences the text cannot close", () => {
  assert.is(printableName('src/app.ts'), 'src/app.ts');
  assert.is(printableName('a\nb\x9b\u202e'), '"a\\nb\\u009b\\u202e"');
  assert.is(printableLine('a\tb\r\n'), 'a\\tb\\r\\n');
  assert.is(printableText('a\tb\r\nc\rd\x1b[2J\u2028'), 'a\tb\r\nc\\rd\\u001b[2J\\u2028');
  assert.is(fenceOf('x\n````\ny'), '`````\nx\n````\ny\n`````');
  assert.is(fenceOf('plain\n'), '```\nplain\n```');
});

test.run();
