// Issue 14, "Bad input gets a clear error and changes nothing": each mistyped
// command a newcomer makes, through the built executable (the bundle a user
// runs): the exit code the README's "Exit codes" table documents, one message
// naming what is wrong, and no file, ref or journal changed.
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cliProcess, refsUnder, tempRepo, type CliResult, type TempRepo } from '../support/helpers.js';
import { gitCommonDir, jsonError } from '../support/snap-helpers.js';

/** A repository with one session: step 1 (Bash) wrote b.txt, step 2 (Edit) changed a.txt. */
async function sessionRepo(): Promise<{ repo: TempRepo; session: string }> {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  const run = async (args: string[]) => {
    const r = await cliProcess(repo, args);
    assert.is(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    return r;
  };
  await run(['snap', '--phase', 'pre', '--tool', 'Bash']);
  repo.write('b.txt', 'b\n');
  await run(['snap', '--phase', 'post']);
  await run(['snap', '--phase', 'pre', '--tool', 'Edit']);
  repo.write('a.txt', 'a2\n');
  await run(['snap', '--phase', 'post']);
  const sessions = JSON.parse((await run(['sessions', '--json'])).stdout) as { id: string }[];
  return { repo, session: sessions[0]!.id };
}

/** What a command could change: the files, every agentsnap ref, the session's journal. */
function observable(repo: TempRepo, session: string): string {
  const journal = path.join(gitCommonDir(repo), 'agentsnap', 'sessions', session, 'journal.jsonl');
  const files = [...fs.readdirSync(repo.dir)]
    .filter((n) => n !== '.git')
    .sort()
    .map((n) => `${n}=${fs.readFileSync(path.join(repo.dir, n), 'utf8')}`);
  return JSON.stringify({
    files,
    refs: [...refsUnder(repo, 'refs/agent').entries(), ...refsUnder(repo, 'refs/agentsnap').entries()],
    journal: fs.readFileSync(journal, 'utf8'),
  });
}

/** One message line starting `agentsnap: ` (and at most a hint line), no stack, nothing on stdout. */
function assertCleanFailure(r: CliResult, exit: number, message: RegExp): void {
  assert.is(r.code, exit, `exit ${r.code}: ${r.stderr}`);
  const lines = r.stderr.trimEnd().split('\n');
  assert.ok(lines.length <= 2, `one or two lines: ${r.stderr}`);
  assert.match(lines[0] ?? '', /^agentsnap: /);
  assert.match(r.stderr, message);
  assert.not.match(r.stderr, /\n\s+at /, 'no stack trace');
  assert.is(r.stdout, '');
}

test('`undo -- 2` and `undo -- foo` are refused (exit 2, naming what came after --) instead of undoing the last step', async () => {
  const { repo, session } = await sessionRepo();
  try {
    const before = observable(repo, session);
    assertCleanFailure(await cliProcess(repo, ['undo', '--', '2']), 2, /undo takes nothing after --.*"2".*agentsnap undo 2/);
    assertCleanFailure(await cliProcess(repo, ['undo', '--', 'foo']), 2, /undo takes nothing after --.*"foo"/);
    assertCleanFailure(await cliProcess(repo, ['undo', '2', '--', '--dry-run']), 2, /"--dry-run"/);
    assertCleanFailure(await cliProcess(repo, ['redo', '--', 'x']), 2, /redo takes nothing after --/);
    assertCleanFailure(await cliProcess(repo, ['revert', '2', '--', 'a.txt']), 2, /revert takes nothing after --.*restore/);
    assert.is(jsonError(await cliProcess(repo, ['undo', '--json', '--', '2'])).code, 'Usage');
    assert.is(observable(repo, session), before, 'nothing changed');
  } finally {
    repo.cleanup();
  }
});

test('`undo abc`, `revert 1.5`, `restore x -- a.txt` name the bad value (exit 2)', async () => {
  const { repo, session } = await sessionRepo();
  try {
    const before = observable(repo, session);
    assertCleanFailure(await cliProcess(repo, ['undo', 'abc']), 2, /"abc" is not a step number/);
    assertCleanFailure(await cliProcess(repo, ['undo', '0']), 2, /"0" is not a step number/);
    assertCleanFailure(await cliProcess(repo, ['revert', '1.5']), 2, /"1\.5" is not a step number/);
    assertCleanFailure(await cliProcess(repo, ['restore', 'x', '--', 'a.txt']), 2, /"x" is not a step number/);
    assert.is(observable(repo, session), before);
  } finally {
    repo.cleanup();
  }
});

test('`restore 2 -- nonexistent.txt` is refused (exit 1, no operation); `-- /etc/passwd` and `-- ../x` are refused alike (exit 2); an absolute path inside the worktree works', async () => {
  const { repo, session } = await sessionRepo();
  try {
    const before = observable(repo, session);
    const r = await cliProcess(repo, ['restore', '2', '--', 'nonexistent.txt']);
    assertCleanFailure(r, 1, /nonexistent\.txt is neither in the state before step 2 nor in the worktree/);
    assert.is(jsonError(await cliProcess(repo, ['restore', '2', '--json', '--', 'nonexistent.txt'])).code, 'UnknownPath');
    assertCleanFailure(await cliProcess(repo, ['restore', '2', '--', 'a.txt', 'nope/']), 1, /nope/);
    const outside = await cliProcess(repo, ['restore', '2', '--', '/etc/passwd']);
    const up = await cliProcess(repo, ['restore', '2', '--', '../x']);
    assertCleanFailure(outside, 2, /\/etc\/passwd is outside the worktree/);
    assertCleanFailure(up, 2, /\.\.\/x is outside the worktree/);
    assert.is(
      jsonError(await cliProcess(repo, ['restore', '2', '--json', '--', '/etc/passwd'])).code,
      jsonError(await cliProcess(repo, ['restore', '2', '--json', '--', '../x'])).code,
    );
    assert.is(observable(repo, session), before, 'nothing changed, no operation recorded');
    // A path the state before step 2 lacks but the worktree has is fine (restoring it deletes it), and so is an absolute path inside.
    const ok = await cliProcess(repo, ['restore', '2', '--', path.join(repo.dir, 'a.txt')]);
    assert.is(ok.code, 0, ok.stderr);
    assert.is(repo.read('a.txt').toString(), 'a\n');
    const del = await cliProcess(repo, ['restore', '1', '--', 'b.txt']);
    assert.is(del.code, 0, del.stderr);
    assert.not.ok(repo.exists('b.txt'));
  } finally {
    repo.cleanup();
  }
});

test('`snap --phase post` with no session is refused (exit 1) and starts no session', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const r = await cliProcess(repo, ['snap', '--phase', 'post']);
    assertCleanFailure(r, 1, /no session running in this worktree: there is no step to close/);
    assert.match(r.stderr, /--phase pre/);
    assert.is(jsonError(await cliProcess(repo, ['snap', '--phase', 'post', '--json'])).code, 'NoSession');
    assert.equal([...refsUnder(repo, 'refs/agent').keys()], []);
    assert.not.ok(fs.existsSync(path.join(gitCommonDir(repo), 'agentsnap', 'sessions')), 'no session started');
  } finally {
    repo.cleanup();
  }
});

test('`wrap -- false` records an empty session that does not become the default: undo and log still find the previous session', async () => {
  const { repo, session } = await sessionRepo();
  try {
    const w = await cliProcess(repo, ['wrap', '-q', '--', 'false']);
    assert.is(w.code, 1, w.stderr);
    const sessions = JSON.parse((await cliProcess(repo, ['sessions', '--json'])).stdout) as { id: string; steps: number }[];
    assert.is(sessions.length, 2);
    assert.is.not(sessions[0]!.id, session, 'the empty session is the most recent');
    const u = await cliProcess(repo, ['undo', '--dry-run']);
    assert.is(u.code, 0, u.stderr);
    assert.match(u.stderr, new RegExp(`session ${session}`));
    assert.match(u.stdout, /undo 2 \(dry run\)/);
    const log = await cliProcess(repo, ['log', '--json']);
    assert.is((JSON.parse(log.stdout) as unknown[]).length, 2, "the previous session's two steps");
  } finally {
    repo.cleanup();
  }
});

test('`agentsnap` alone prints the help (exit 0); `agentsnap help undo` is `undo --help`; `-v` is --version', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const bare = await cliProcess(repo, []);
    assert.is(bare.code, 0, bare.stderr);
    assert.match(bare.stdout, /^Everyday commands:$/m);
    assert.match(bare.stdout, /agentsnap undo/);
    assert.is(bare.stdout, (await cliProcess(repo, ['--help'])).stdout);
    const help = await cliProcess(repo, ['help', 'undo']);
    assert.is(help.code, 0, help.stderr);
    assert.is(help.stdout, (await cliProcess(repo, ['undo', '--help'])).stdout);
    assert.match(help.stdout, /--dry-run/);
    const helpAlone = await cliProcess(repo, ['help']);
    assert.is(helpAlone.stdout, bare.stdout);
    assertCleanFailure(await cliProcess(repo, ['help', 'frobnicate']), 2, /unknown command: frobnicate/);
    const v = await cliProcess(repo, ['-v']);
    assert.is(v.code, 0, v.stderr);
    assert.is(v.stdout, (await cliProcess(repo, ['--version'])).stdout);
    assert.match(v.stdout, /^\d+\.\d+\.\d+\n$/);
    assert.not.ok(fs.existsSync(path.join(gitCommonDir(repo), 'agentsnap')), 'help and version touch nothing');
  } finally {
    repo.cleanup();
  }
});

test('unknown options get a did-you-mean; missing arguments are said in plain words (exit 2)', async () => {
  const { repo, session } = await sessionRepo();
  try {
    const before = observable(repo, session);
    assertCleanFailure(await cliProcess(repo, ['undo', '--forse']), 2, /unknown option --forse \(did you mean --force\?\)/);
    assertCleanFailure(await cliProcess(repo, ['log', '--sesion', 'x']), 2, /unknown option --sesion \(did you mean --session\?\)/);
    assertCleanFailure(await cliProcess(repo, ['undo', '--dryrun']), 2, /did you mean --dry-run\?/);
    assertCleanFailure(await cliProcess(repo, ['snap', '--zzzzzz']), 2, /unknown option --zzzzzz$/m);
    assertCleanFailure(await cliProcess(repo, ['--bogus']), 2, /unknown option --bogus$/m);
    assertCleanFailure(await cliProcess(repo, ['log', '--last', 'x']), 2, /--last needs a number, not "x"/);
    assertCleanFailure(await cliProcess(repo, ['log', '--last']), 2, /--last needs a number$/m);
    assertCleanFailure(await cliProcess(repo, ['snap', '--phase']), 2, /--phase needs a value: "pre" or "post"/);
    assertCleanFailure(await cliProcess(repo, ['snap', '--phase', 'middle']), 2, /--phase must be "pre" or "post", not "middle"/);
    assertCleanFailure(await cliProcess(repo, ['init', 'aider']), 2, /agent must be "claude", "codex", "gemini", .*"qwen".* not "aider"/);
    assertCleanFailure(await cliProcess(repo, ['undo', '2', '3']), 2, /unexpected argument "3"/);
    // After `--` come paths: `--last` there is a file name, not an option without its number.
    const paths = await cliProcess(repo, ['log', '--', '--last']);
    assert.is(paths.code, 0, paths.stderr);
    const restore = await cliProcess(repo, ['restore']);
    assertCleanFailure(restore, 2, /restore needs a step number: agentsnap restore <step> \[paths\.\.\]/);
    assert.not.match(restore.stderr, /non-option/);
    assertCleanFailure(await cliProcess(repo, ['show']), 2, /show needs a step number: agentsnap show <step>/);
    assertCleanFailure(await cliProcess(repo, ['revert']), 2, /revert needs a step number/);
    assertCleanFailure(await cliProcess(repo, ['apply']), 2, /apply needs a session/);
    assertCleanFailure(await cliProcess(repo, ['init']), 2, /init needs an agent/);
    assertCleanFailure(await cliProcess(repo, ['restore', '2']), 2, /name the paths to restore/);
    assert.is(observable(repo, session), before);
  } finally {
    repo.cleanup();
  }
});

test('`undo --dry-run` exits 3 when the real undo would be refused, 0 when it would go ahead; nothing changes either way', async () => {
  const { repo, session } = await sessionRepo();
  try {
    const fine = await cliProcess(repo, ['undo', '2', '--dry-run']);
    assert.is(fine.code, 0, fine.stderr);
    repo.write('a.txt', 'my own edit\n');
    const before = observable(repo, session);
    const dry = await cliProcess(repo, ['undo', '2', '--dry-run']);
    assert.is(dry.code, 3, dry.stderr);
    assert.match(dry.stdout, /refused without --merge or --force: changed by the agent and by you since:\n\s+M a\.txt/);
    const json = await cliProcess(repo, ['undo', '2', '--dry-run', '--json']);
    assert.is(json.code, 3);
    assert.is((JSON.parse(json.stdout) as { files: { wouldRefuse: boolean } }).files.wouldRefuse, true);
    const real = await cliProcess(repo, ['undo', '2']);
    assert.is(real.code, 3, 'the real undo is refused with the same code');
    assert.is((await cliProcess(repo, ['undo', '2', '--dry-run', '--force'])).code, 0);
    assert.is((await cliProcess(repo, ['restore', '2', '--dry-run', '--', 'a.txt'])).code, 3);
    assert.is(observable(repo, session), before);
  } finally {
    repo.cleanup();
  }
});

test('`agentsnap.exclude` follows .gitignore: `node_modules` excludes the directory, `build/` only directories, `/top.log` only at the top', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    for (const g of ['node_modules', 'build/', '/top.log']) repo.git(['config', '--add', 'agentsnap.exclude', g]);
    repo.write('node_modules/pkg/index.js', 'x\n');
    repo.write('sub/node_modules/deep/x.js', 'x\n');
    repo.write('build/out.js', 'x\n');
    repo.write('src/build', 'a file named build\n');
    repo.write('top.log', 'x\n');
    repo.write('sub/top.log', 'kept\n');
    const r = await cliProcess(repo, ['snap', '--json']);
    assert.is(r.code, 0, r.stderr);
    const res = JSON.parse(r.stdout) as { commit: string; skipped: { path: string; reason: string }[] };
    const files = repo.git(['ls-tree', '-r', '--name-only', res.commit]).trim().split('\n').sort();
    assert.equal(files, ['a.txt', 'src/build', 'sub/top.log']);
    assert.ok(
      res.skipped.every((s) => s.reason === 'excluded'),
      JSON.stringify(res.skipped),
    );
  } finally {
    repo.cleanup();
  }
});

test.run();
