// Issue 32, item 15: the command line's conventions, through the built executable. `--color[=<when>]` and
// `--no-color` as git has them, on every command; a usage error names what the user typed, never the
// parser's internal (camelCase) names.
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { COMMANDS } from '../../src/cli/main.js';
import type { CliContext } from '../../src/cli/context.js';
import { cliProcess, refsUnder, runProcess, tempRepo, worktreeFiles, type CliResult, type TempRepo } from '../support/helpers.js';
import { openRepo } from '../../src/git/repo.js';
import { startWorktreeSession } from '../../src/worktrees/worktree.js';
import { gitCommonDir } from '../support/snap-helpers.js';

/** A usage failure as a user sees it: exit 2, `agentsnap: <message>` and a hint line, nothing on stdout. */
function usageMessage(r: CliResult, what: string): string {
  assert.is(r.code, 2, `${what}: exit ${r.code}: ${r.stderr}`);
  assert.is(r.stdout, '', what);
  const lines = r.stderr.trimEnd().split('\n');
  assert.ok(lines.length <= 2, `${what}: one message and a hint: ${r.stderr}`);
  assert.match(lines[0] ?? '', /^agentsnap: /, what);
  return (lines[0] as string).slice('agentsnap: '.length);
}

/** Valid positionals for each command that requires some (the parser's own checks pass, so only the option is wrong). */
const POSITIONALS: Record<string, string[]> = {
  promote: ['some-session'],
  discard: ['some-session'],
  hooks: ['status'],
  remote: ['add', 'backup', 'url'],
  push: ['backup'],
  fetch: ['backup'],
  blame: ['a.txt'],
  why: ['a.txt:1'],
  server: ['status'],
  restore: ['1'],
  revert: ['1'],
  init: ['claude'],
  show: ['1'],
  diff: ['0', '1'],
  hook: ['claude', 'PreToolUse'],
  completion: ['bash'],
  op: ['log'],
};
/** Options a command requires, given so that only the wrong one is wrong. */
const REQUIRED: Record<string, string[]> = { bisect: ['--run', 'true'], promote: ['--branch', 'b'] };
/** Commands whose last positional takes any number of words: no argument is unexpected. */
const VARIADIC = new Set(['wrap', 'restore', 'hooks']);
/** `hook` never goes through the parser: an agent's hook must exit 0 whatever it is given (src/cli/commands/hook.ts). */
const PARSED = COMMANDS.map((c) => c.name).filter((name) => name !== 'hook');

/** Each command's usage line (`restore <step> [paths..]`), read from its definition. */
async function usages(): Promise<Map<string, string>> {
  const ctx = {} as CliContext;
  const out = new Map<string, string>();
  for (const c of COMMANDS) out.set(c.name, String((await c.load())(ctx).command));
  return out;
}

/** Runs `jobs` a few at a time: each is a process of its own, and the machine is shared. */
async function inBatches<T>(jobs: (() => Promise<T>)[], width = 4): Promise<T[]> {
  const results: T[] = [];
  for (let i = 0; i < jobs.length; i += width) results.push(...(await Promise.all(jobs.slice(i, i + width).map((j) => j()))));
  return results;
}

/** A repository with one session of one step (b.txt added), so that `diff` has something to colour. */
async function oneStep(): Promise<TempRepo> {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  for (const args of [['snap', '--phase', 'pre', '--tool', 'Bash'], null, ['snap', '--phase', 'post']]) {
    if (args === null) repo.write('b.txt', 'b\n');
    else assert.is((await cliProcess(repo, args)).code, 0);
  }
  return repo;
}

const ESC = /\x1b\[/;

test('--color, --color=always|never|auto and --no-color as git has them; NO_COLOR and a pipe still mean no colour by default', async () => {
  const repo = await oneStep();
  try {
    const diff = (args: string[], env: Record<string, string>) => cliProcess(repo, args, { env });
    const plainEnv = { NO_COLOR: '', FORCE_COLOR: '0' };
    const base = await diff(['diff', '0'], plainEnv);
    assert.is(base.code, 0, base.stderr);
    assert.match(base.stdout, /b\.txt/);
    assert.not.match(base.stdout, ESC, 'a pipe: no colour');
    for (const args of [
      ['diff', '0', '--color'],
      ['diff', '0', '--color=always'],
      ['--color=always', 'diff', '0'],
    ]) {
      const r = await diff(args, plainEnv);
      assert.is(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stdout, ESC, `${args.join(' ')}: coloured into a pipe`);
      assert.is(r.stdout.replace(/\x1b\[[0-9;]*m/g, ''), base.stdout, `${args.join(' ')}: the same text`);
    }
    // The flag is the user's word for this one run: it wins over NO_COLOR (as no-color.org asks) and FORCE_COLOR.
    assert.match((await diff(['diff', '0', '--color=always'], { NO_COLOR: '1' })).stdout, ESC, '--color=always over NO_COLOR');
    for (const args of [
      ['diff', '0', '--no-color'],
      ['diff', '0', '--color=never'],
      ['--no-color', 'diff', '0'],
    ]) {
      const r = await diff(args, { NO_COLOR: '', FORCE_COLOR: '1' });
      assert.is(r.code, 0, r.stderr);
      assert.is(r.stdout, base.stdout, `${args.join(' ')}: no colour over FORCE_COLOR`);
    }
    // auto is the default: a pipe, NO_COLOR, no colour.
    assert.is((await diff(['diff', '0', '--color=auto'], plainEnv)).stdout, base.stdout);
    assert.is((await diff(['diff', '0', '--color=auto'], { NO_COLOR: '1', FORCE_COLOR: '1' })).stdout, base.stdout);
    assert.match((await diff(['diff', '0', '--color=auto'], { NO_COLOR: '', FORCE_COLOR: '1' })).stdout, ESC);
    assert.is(
      usageMessage(await diff(['diff', '0', '--color=sometimes'], plainEnv), '--color=sometimes'),
      '--color must be always, never or auto, not "sometimes"',
    );
    // After `--` it is no option: undo refuses it as anything else there.
    assert.match(
      usageMessage(await diff(['undo', '--', '--no-color'], plainEnv), 'undo -- --no-color'),
      /undo takes nothing after --, got "--no-color"/,
    );
    // --help and the top-level help take it too.
    for (const args of [['undo', '--help', '--no-color'], ['--no-color'], ['--color=always', '--help']]) {
      const r = await diff(args, plainEnv);
      assert.is(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stdout, /agentsnap/);
    }
  } finally {
    repo.cleanup();
  }
});

test("every command takes --no-color and --color=always; an unknown option or a stray argument is named as typed, never by the parser's names", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const usage = await usages();
    assert.ok(PARSED.length >= 29, `every command: ${PARSED.join(' ')}`);
    for (const [name, line] of usage) {
      if (/<[^>]+>/.test(line)) assert.ok(POSITIONALS[name], `a value for ${name}'s positionals: ${line}`);
    }
    const jobs: (() => Promise<void>)[] = [];
    for (const name of PARSED) {
      const positionals = [...(POSITIONALS[name] ?? []), ...(REQUIRED[name] ?? [])];
      const check = (args: string[], expected: string) => async () => {
        const message = usageMessage(await cliProcess(repo, [name, ...args]), `${name} ${args.join(' ')}`);
        assert.is(message, expected, `${name} ${args.join(' ')}`);
        assert.not.match(message, /\b[a-z]+[A-Z][A-Za-z]*\b/, `${name}: no camelCase name`);
      };
      jobs.push(
        check(
          ['--color=always', ...positionals, '--no-color', '--bogus-opt', '--no-bogus', '--bogus-opt=3', '-Z', '--color'],
          'unknown option --bogus-opt; unknown option --no-bogus; unknown option -Z',
        ),
      );
      if (!VARIADIC.has(name)) {
        const slots = [...(usage.get(name) ?? '').matchAll(/<[^>]+>|\[[^\]]+\]/g)].length;
        const filled = [...positionals, ...Array.from({ length: slots - positionals.length }, () => 'x')];
        jobs.push(check(['--no-color', ...filled, 'stray'], 'unexpected argument "stray"'));
      }
    }
    await inBatches(jobs);
    // A near miss of a dashed option is still suggested, in its dashed form.
    assert.is(
      usageMessage(await cliProcess(repo, ['undo', '--dry-runn']), 'undo --dry-runn'),
      'unknown option --dry-runn (did you mean --dry-run?)',
    );
    assert.is(
      usageMessage(await cliProcess(repo, ['gc', '--older-tan', '3d']), 'gc --older-tan'),
      'unknown option --older-tan (did you mean --older-than?)',
    );
    // A required option is named with its dashes.
    assert.is(usageMessage(await cliProcess(repo, ['bisect', '--no-color']), 'bisect'), 'bisect needs --run');
  } finally {
    repo.cleanup();
  }
});

/** What an apply could change here: the files, every agentsnap ref, every session's journal. */
function observable(repo: TempRepo): string {
  const files = [...worktreeFiles(repo)].map(([p, f]) => `${p}:${f.mode}:${f.content.toString('base64')}`);
  const sessions = path.join(gitCommonDir(repo), 'agentsnap', 'sessions');
  const journals = fs.readdirSync(sessions).map((id) => fs.readFileSync(path.join(sessions, id, 'journal.jsonl'), 'utf8'));
  return JSON.stringify({
    files,
    refs: [...refsUnder(repo, 'refs/agent').entries(), ...refsUnder(repo, 'refs/agentsnap').entries()],
    journals,
  });
}

test('apply --dry-run says what the apply would write, exits 0 and changes nothing; it refuses where the apply refuses', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'l1\nl2\nl3\n', 'del.txt': 'd1\n', 'c.txt': 'c\n' } });
  try {
    const wt = (await startWorktreeSession(await openRepo(repo.dir, { env: repo.env }), { session: 's1' })).meta.path;
    fs.writeFileSync(path.join(wt, 'a.txt'), 'l1\nagent\nl3\n');
    fs.writeFileSync(path.join(wt, 'new.txt'), 'from agent\n');
    fs.writeFileSync(path.join(wt, 'c.txt'), 'agent c\n');
    fs.rmSync(path.join(wt, 'del.txt'));
    assert.is((await cliProcess(repo, ['snap', '--session', 's1', '-m', 'work'], { cwd: wt })).code, 0);
    repo.write('c.txt', 'mine c\n');
    const before = observable(repo);
    // c.txt conflicts: the dry run refuses as the apply does (exit 4, the same message), and changes nothing.
    const refused = await cliProcess(repo, ['apply', 's1', '--dry-run']);
    assert.is(refused.code, 4, refused.stderr);
    assert.match(refused.stderr, /applying session s1 conflicts in 1 file\(s\): c\.txt/);
    assert.is(observable(repo), before);
    repo.write('c.txt', 'agent c\n');
    const calm = observable(repo);
    const dry = await cliProcess(repo, ['apply', 's1', '--dry-run']);
    assert.is(dry.code, 0, dry.stderr);
    assert.match(dry.stdout, /^apply s1 \(dry run\): 2 files would be written, 1 deleted$/m);
    assert.match(dry.stdout, /^ a\.txt +\| \+1 -1$/m);
    assert.match(dry.stdout, /^ new\.txt +\| \+1 -0$/m);
    assert.match(dry.stdout, /^ del\.txt +\| \+0 -1$/m);
    assert.not.match(dry.stdout, /c\.txt/, 'already as the session has it: nothing to write');
    assert.match(dry.stderr, /nothing was changed/);
    assert.is(observable(repo), calm, 'files, refs and journals as they were');
    const json = JSON.parse((await cliProcess(repo, ['apply', 's1', '-n', '--json'])).stdout) as {
      dryRun: boolean;
      written: string[];
      created: string[];
      deleted: string[];
      safetyRef: string | null;
    };
    assert.equal(
      { dryRun: json.dryRun, written: json.written, created: json.created, deleted: json.deleted, safetyRef: json.safetyRef },
      { dryRun: true, written: ['a.txt', 'new.txt'], created: ['new.txt'], deleted: ['del.txt'], safetyRef: null },
    );
    assert.is(observable(repo), calm);
    // The real apply writes what the dry run said.
    const real = await cliProcess(repo, ['apply', 's1', '--json']);
    assert.is(real.code, 0, real.stderr);
    const done = JSON.parse(real.stdout) as { written: string[]; deleted: string[] };
    assert.equal([done.written, done.deleted], [json.written, json.deleted]);
    assert.is(repo.read('a.txt').toString(), 'l1\nagent\nl3\n');
  } finally {
    repo.cleanup();
  }
});

test('--help lists the five everyday commands first, then the rest by theme, each command once; `help <cmd>` is `<cmd> --help`', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const help = await cliProcess(repo, ['--help']);
    assert.is(help.code, 0, help.stderr);
    assert.is((await cliProcess(repo, ['help'])).stdout, help.stdout, '`help` alone is --help');
    const lines = help.stdout.split('\n');
    const headings = lines.filter((l) => /^\S.*:$/.test(l));
    assert.is(headings[0], 'Everyday commands:');
    assert.not.ok(headings.includes('Commands:'), 'no single list of everything');
    // Each command's first line, in the order shown, under its heading.
    const listed: { heading: string; name: string }[] = [];
    let heading = '';
    for (const l of lines) {
      if (/^\S.*:$/.test(l)) heading = l;
      const m = /^ {2}agentsnap (\S+)/.exec(l);
      if (m) listed.push({ heading, name: m[1] as string });
    }
    assert.equal(
      listed.filter((x) => x.heading === 'Everyday commands:').map((x) => x.name),
      ['wrap', 'log', 'show', 'undo', 'redo'],
    );
    assert.equal(listed.map((x) => x.name).sort(), COMMANDS.map((c) => c.name).sort(), 'every command, once');
    assert.ok(headings.length >= 5, `grouped by theme: ${headings.join(' | ')}`);
    assert.match(help.stdout, /^Options:$/m);
    const own = await cliProcess(repo, ['undo', '--help']);
    assert.is(own.code, 0);
    assert.is((await cliProcess(repo, ['help', 'undo'])).stdout, own.stdout);
    assert.match(own.stdout, /^agentsnap undo \[step\]/);
    assert.not.match(own.stdout, /Everyday commands:/);
  } finally {
    repo.cleanup();
  }
});

test("`completion bash|zsh|fish`: generated from the command definitions; bash completes `agentsnap un` to `undo` and each command's options", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const bash = await cliProcess(repo, ['completion', 'bash']);
    assert.is(bash.code, 0, bash.stderr);
    const script = path.join(repo.base, 'agentsnap.bash');
    fs.writeFileSync(script, bash.stdout);
    const complete = async (...words: string[]) => {
      const r = await runProcess(
        'bash',
        [
          '-c',
          'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _agentsnap; printf "%s\\n" "${COMPREPLY[@]}"',
          '_',
          script,
          ...words,
        ],
        { cwd: repo.dir, env: repo.env },
      );
      assert.is(r.code, 0, r.stderr);
      return r.stdout.split('\n').filter(Boolean);
    };
    assert.equal(await complete('agentsnap', 'un'), ['undo']);
    assert.equal(await complete('agentsnap', '--no-color', 'ap'), ['apply']);
    assert.equal(await complete('agentsnap', 'undo', '--dr'), ['--dry-run']);
    assert.equal(await complete('agentsnap', 'apply', 'some-session', '--dry'), ['--dry-run']);
    assert.ok((await complete('agentsnap', 'log', '--')).includes('--no-color'), 'the options every command takes');
    const all = await complete('agentsnap', '');
    for (const c of COMMANDS) assert.ok(all.includes(c.name), `${c.name} completes`);
    // zsh and fish: the same commands and options (no zsh or fish on this machine to run them in).
    const zsh = await cliProcess(repo, ['completion', 'zsh']);
    assert.is(zsh.code, 0, zsh.stderr);
    assert.match(zsh.stdout, /^#compdef agentsnap\n/);
    const fish = await cliProcess(repo, ['completion', 'fish']);
    assert.is(fish.code, 0, fish.stderr);
    for (const c of COMMANDS) {
      assert.match(zsh.stdout, new RegExp(`'${c.name}:`), `zsh: ${c.name}`);
      assert.match(fish.stdout, new RegExp(`-a ${c.name} `), `fish: ${c.name}`);
    }
    assert.match(fish.stdout, /__fish_seen_subcommand_from undo' -l dry-run/);
    assert.not.match(fish.stdout, /from undo' -l step /, 'a positional is no option');
    assert.is(
      usageMessage(await cliProcess(repo, ['completion', 'tcsh']), 'completion tcsh'),
      'shell must be "bash", "zsh" or "fish", not "tcsh"',
    );
  } finally {
    repo.cleanup();
  }
});

test('`help --man`: a man page from the same definitions as --help, in its groups; nroff renders it', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const man = await cliProcess(repo, ['help', '--man']);
    assert.is(man.code, 0, man.stderr);
    assert.match(man.stdout, /^\.TH AGENTSNAP 1 /);
    const groups = [...man.stdout.matchAll(/^\.SS (.+)$/gm)].map((m) => m[1]);
    assert.is(groups[0], 'Everyday commands');
    for (const c of COMMANDS) assert.match(man.stdout, new RegExp(`^\\.B agentsnap ${c.name}\\b`, 'm'), `${c.name} in the man page`);
    assert.match(man.stdout, /\\-\\-dry\\-run/, 'options, dashes escaped');
    const page = path.join(repo.base, 'agentsnap.1');
    fs.writeFileSync(page, man.stdout);
    const rendered = await runProcess('nroff', ['-man', page], { cwd: repo.dir, env: { ...repo.env, MANWIDTH: '100' } });
    assert.is(rendered.code, 0, rendered.stderr);
    assert.is(rendered.stderr, '', 'no roff warnings');
    const text = rendered.stdout.replace(/.\x08/g, '');
    assert.match(text, /agentsnap undo \[step\]/);
    assert.match(text, /--dry-run/);
  } finally {
    repo.cleanup();
  }
});

test.run();
