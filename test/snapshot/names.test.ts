// Names the filesystem allows and JavaScript strings do not hold as they are:
// file names that are not UTF-8 (kept by their bytes from git's output to
// git's input and to fs, see splitNul), and worktree paths holding a newline
// or bytes that are not UTF-8 (refused with a clear message).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BIN, cli, step, tempRepo } from '../support/helpers.js';
import { decodeName, pathBytes, splitNul } from '../../src/git/run.js';
import { restore } from '../../src/api/undo.js';

/** worktree/<prefix><byte><suffix> as bytes (the byte alone is not UTF-8). */
function rawName(dir: string, prefix: string, byte: number, suffix: string): Buffer {
  return Buffer.concat([Buffer.from(path.join(dir, prefix)), Buffer.from([byte]), Buffer.from(suffix)]);
}

test('splitNul keeps bytes that are not UTF-8 and pathBytes gives them back', () => {
  const names = [
    Buffer.from('caf\xe9.txt', 'latin1'),
    Buffer.from('caf\xe8.txt', 'latin1'),
    Buffer.from('ok é/ü', 'utf8'),
    Buffer.from([0xf0, 0x9f, 0x98, 0x80, 0xff, 0xc3]),
  ];
  const out = splitNul(Buffer.concat(names.flatMap((n) => [n, Buffer.from([0])])));
  assert.is(out.length, names.length);
  assert.is(new Set(out).size, names.length, 'distinct names stay distinct');
  out.forEach((s, i) => assert.ok(pathBytes(s).equals(names[i]!), `round trip of ${JSON.stringify(s)}`));
  assert.is(decodeName(Buffer.from('plain')), 'plain');
  assert.is(JSON.parse(JSON.stringify(out[0])), out[0], 'survives the journal');
});

// Regression (test/restore/undo.attack.test.ts): splitNul decoded git's output as UTF-8, so the snapshot asked git
// and fs about "caf\uFFFD.txt", which does not exist: the file was in no snapshot, listed nowhere, and
// undo said "no file changed" after the agent deleted it.
test('a user file whose name is not UTF-8, deleted by the agent, comes back with undo', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  const name = rawName(repo.dir, 'caf', 0xe9, '.txt');
  const other = rawName(repo.dir, 'caf', 0xe8, '.txt');
  try {
    fs.writeFileSync(name, 'the user notes, latin-1 name\n');
    fs.writeFileSync(other, 'another one\n');
    const snap = await cli(repo, ['snap', '--json']);
    assert.is(snap.code, 0, snap.stderr);
    await step(repo, () => {
      fs.rmSync(name);
      fs.writeFileSync(other, 'the agent was here\n');
    });
    const res = await cli(repo, ['undo']);
    assert.is(res.code, 0, res.stderr);
    assert.ok(fs.existsSync(name), `undo brings it back: ${res.stdout}`);
    assert.is(fs.readFileSync(name, 'utf8'), 'the user notes, latin-1 name\n');
    assert.is(fs.readFileSync(other, 'utf8'), 'another one\n');
    // No file under the U+FFFD spelling of either name.
    assert.equal(
      fs.readdirSync(repo.dir).filter((n) => n.startsWith('caf') && fs.existsSync(path.join(repo.dir, n))),
      [],
      'no lossy name written',
    );
  } finally {
    repo.cleanup();
  }
});

test('a tracked file whose name is not UTF-8: the user edit the agent deleted comes back with undo', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  const name = rawName(repo.dir, 'd/na', 0xef, 'me');
  try {
    fs.mkdirSync(path.join(repo.dir, 'd'));
    fs.writeFileSync(name, 'committed\n');
    repo.git(['add', '-A']);
    repo.git(['commit', '-q', '-m', 'raw name']);
    fs.writeFileSync(name, 'the user edit, not committed\n');
    await step(repo, () => fs.rmSync(name));
    const log = await cli(repo, ['log', '--json']);
    assert.is(log.code, 0, log.stderr);
    const res = await cli(repo, ['undo']);
    assert.is(res.code, 0, res.stderr);
    assert.ok(fs.existsSync(name), `undo brings it back: ${res.stdout}`);
    assert.is(fs.readFileSync(name, 'utf8'), 'the user edit, not committed\n');
    // The user's index is untouched and still names the file by its bytes.
    const ls = spawnSync('git', ['ls-files', '-z'], { cwd: repo.dir, env: repo.env });
    assert.ok(ls.stdout.includes(Buffer.from([0xef])), 'the user index keeps the raw name');
  } finally {
    repo.cleanup();
  }
});

test('restore of one file whose name is not UTF-8 (library, as the ui and MCP call it) brings its bytes back, and only it', async () => {
  // Such a name reaches the library as splitNul gives it (each stray byte a lone surrogate); git's argv cannot
  // carry it, so a pathspec naming it matched nothing: UnknownPath (found by the ui attack).
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  const bytes = rawName(repo.dir, 'd/na', 0xef, 'me');
  const rel = decodeName(Buffer.concat([Buffer.from('d/na'), Buffer.from([0xef]), Buffer.from('me')]));
  try {
    fs.mkdirSync(path.join(repo.dir, 'd'));
    fs.writeFileSync(bytes, 'committed\n');
    repo.git(['add', '-A']);
    repo.git(['commit', '-q', '-m', 'raw name']);
    const n = await step(repo, () => {
      fs.writeFileSync(bytes, 'the agent broke it\n');
      fs.writeFileSync(path.join(repo.dir, 'a.txt'), 'agent a\n');
    });
    const res = await restore({ cwd: repo.dir, env: repo.env, step: n, paths: [rel] });
    assert.equal(
      res.changes.map((c) => c.path),
      [rel],
    );
    assert.is(fs.readFileSync(bytes, 'utf8'), 'committed\n');
    assert.is(fs.readFileSync(path.join(repo.dir, 'a.txt'), 'utf8'), 'agent a\n', 'the other file is left as it is');
  } finally {
    repo.cleanup();
  }
});

test("an ignored file whose name is not UTF-8 stays when undo takes back the agent's .gitignore change", async () => {
  const repo = tempRepo({ files: { '.gitignore': '*.log\n', 'a.txt': 'a\n' } });
  const name = rawName(repo.dir, 'caf', 0xe9, '.log');
  try {
    fs.writeFileSync(name, 'ignored local data\n');
    await step(repo, () => fs.writeFileSync(path.join(repo.dir, '.gitignore'), '')); // now the post snapshot holds it
    const res = await cli(repo, ['undo']);
    assert.is(res.code, 0, res.stderr);
    assert.is(fs.readFileSync(path.join(repo.dir, '.gitignore'), 'utf8'), '*.log\n');
    assert.ok(fs.existsSync(name), `the ignored file is kept: ${res.stdout}`);
    assert.is(fs.readFileSync(name, 'utf8'), 'ignored local data\n');
  } finally {
    repo.cleanup();
  }
});

// Regression (test/restore/undo.attack.test.ts): openRepo split one rev-parse output on newlines, so a path
// holding one shifted every value (exit 70, "This is a bug"); a crafted name could point the state dir elsewhere.
test('snap in a worktree whose path holds a newline refuses clearly (exit 1), never an internal error', async () => {
  const repo = tempRepo();
  try {
    const dir = path.join(repo.base, 'new\nline');
    fs.mkdirSync(dir);
    repo.git(['init', '-q', '-b', 'main'], { cwd: dir });
    fs.writeFileSync(path.join(dir, 'a'), 'a\n');
    const res = await cli({ dir, env: repo.env }, ['snap']);
    assert.not.match(res.stderr, /internal error|This is a bug/, res.stderr);
    assert.is(res.code, 1, res.stderr);
    assert.match(res.stderr, /newline/);
    assert.not.ok(fs.existsSync(path.join(dir, '.git', 'agentsnap')), 'nothing written');
  } finally {
    repo.cleanup();
  }
});

// Regression (test/restore/undo.attack.test.ts): the cwd Node gets for a directory whose name is not UTF-8 holds
// U+FFFD, names no directory, and spawning git there failed with ENOENT, reported as "git was not found".
test('snap in a worktree whose path is not UTF-8 says so (exit 1) and does not claim git is missing', () => {
  const repo = tempRepo();
  try {
    // The shell makes the directory and runs the CLI from it: the name's byte 0xe9 never passes through a JS string.
    const res = spawnSync(
      'sh',
      ['-c', 'D="$BASE/caf$(printf "\\351")" && mkdir "$D" && cd "$D" && git init -q -b main && echo a > a && exec "$NODE" "$BIN" snap'],
      {
        env: { ...repo.env, BASE: repo.base, NODE: process.execPath, BIN },
      },
    );
    const stderr = res.stderr.toString();
    assert.not.match(stderr, /git was not found/, stderr);
    assert.match(stderr, /not UTF-8/, stderr);
    assert.is(res.status, 1, stderr);
  } finally {
    repo.cleanup();
  }
});

test.run();
