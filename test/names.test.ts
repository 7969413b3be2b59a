// Names the filesystem allows and JavaScript strings do not hold as they are:
// worktree paths holding a newline or bytes that are not UTF-8 (refused with a
// clear message).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BIN, cli, tempRepo } from './helpers.js';

// Regression (test/attack.found.test.ts): openRepo split one rev-parse output on newlines, so a path
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

// Regression (test/attack.found.test.ts): the cwd Node gets for a directory whose name is not UTF-8 holds
// U+FFFD, names no directory, and spawning git there failed with ENOENT, reported as "git was not found".
test('snap in a worktree whose path is not UTF-8 says so (exit 1) and does not claim git is missing', () => {
  const repo = tempRepo();
  try {
    // The shell makes the directory and runs the CLI from it: the name's byte 0xe9 never passes through a JS string.
    const res = spawnSync('sh', ['-c', 'D="$BASE/caf$(printf "\\351")" && mkdir "$D" && cd "$D" && git init -q -b main && echo a > a && exec "$NODE" "$BIN" snap'], {
      env: { ...repo.env, BASE: repo.base, NODE: process.execPath, BIN },
    });
    const stderr = res.stderr.toString();
    assert.not.match(stderr, /git was not found/, stderr);
    assert.match(stderr, /not UTF-8/, stderr);
    assert.is(res.status, 1, stderr);
  } finally {
    repo.cleanup();
  }
});

test.run();
