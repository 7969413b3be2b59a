// The second adversarial pass on shadow repositories (issue 33; helper-39's findings A1-A6, after F1-F9 in
// shadow.test.ts): each test failed before its fix.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../support/helpers.js';
import { plainDir } from '../support/shadow.js';

// A1: with umask 002 (the default for "user private group" accounts on Fedora/RHEL, and on Debian/Ubuntu through
// pam_umask + USERGROUPS_ENAB) `git init --bare` makes the shadow's git dir 0775, which chainRefusal's ownDir refuses
// (it ignores privateGroup): the very first snap makes a shadow and then refuses it (exit 3), and so does every command after.
test('A1: with umask 002 the first snap in a plain directory works (the shadow it makes is usable)', async () => {
  const { t, env } = plainDir();
  const old = process.umask(0o002);
  try {
    const snap = await cli(t, ['snap', '-q'], { env });
    assert.is(snap.code, 0, snap.stderr);
    const log = await cli(t, ['log'], { env });
    assert.is(log.code, 0, log.stderr);
  } finally {
    process.umask(old);
    t.cleanup();
  }
});

// A2: import copies the shadow's info/exclude lines into agentsnap.exclude verbatim. The header says "a user can edit
// them there"; git's syntax has negations (`!/keep.log`), which agentsnap.exclude does not support: picomatch takes
// `!/keep.log` for "everything but /keep.log", so after import no new file is ever snapshotted again.
test('A2: a negation in the shadow info/exclude, carried by import, does not make every new file excluded', async () => {
  const { t, env } = plainDir({ 'a.txt': 'one\n', 'keep.log': 'k\n', 'x.log': 'x\n' });
  try {
    assert.is((await cli(t, ['snap', '-q'], { env })).code, 0);
    const gitDir = JSON.parse((await cli(t, ['shadow', '--json'], { env })).stdout).gitDir as string;
    fs.appendFileSync(path.join(gitDir, 'info', 'exclude'), '*.log\n!/keep.log\n');
    t.write('a.txt', 'two\n');
    assert.is((await cli(t, ['snap', '-q'], { env })).code, 0);
    t.git(['init', '-q', `--object-format=${t.objectFormat}`]);
    const imp = await cli(t, ['shadow', 'import'], { env });
    assert.is(imp.code, 0, imp.stderr);
    t.write('sub/new.txt', 'made by the agent\n');
    t.write('top-new.txt', 'made by the agent\n');
    const snap = await cli(t, ['snap'], { env });
    assert.is(snap.code, 0, snap.stderr);
    assert.not.match(snap.stderr, /excluded by agentsnap\.exclude/, snap.stderr);
  } finally {
    t.cleanup();
  }
});

// A3: where Node gets no statx (kernel < 4.11, a seccomp profile that blocks it, WSL1), libuv fills birthtime with
// ctime (uv__to_stat), which changes whenever an entry is added to or removed from the directory: sameDirectory then
// takes the same directory for another one, and the shadow with all its sessions is set aside at the next snap.
test('A3: where birthtime is really ctime (no statx), adding a file does not make the shadow "another directory\'s"', async () => {
  const { t, env } = plainDir();
  const real = fs.statSync;
  (fs as { statSync: typeof fs.statSync }).statSync = ((p: fs.PathLike, o?: fs.StatSyncOptions) => {
    const st = real(p, o as fs.StatSyncOptions);
    if (st && typeof p === 'string' && p === t.dir) (st as fs.Stats).birthtimeMs = (st as fs.Stats).ctimeMs;
    return st;
  }) as typeof fs.statSync;
  try {
    assert.is((await cli(t, ['snap', '-q', '-m', 'one'], { env })).code, 0);
    await new Promise((r) => setTimeout(r, 20));
    t.write('b.txt', 'new file\n');
    const snap = await cli(t, ['snap', '-m', 'two'], { env });
    assert.is(snap.code, 0, snap.stderr);
    assert.not.match(snap.stderr, /set aside/, snap.stderr);
    const sessions = await cli(t, ['sessions', '--json'], { env });
    assert.is(JSON.parse(sessions.stdout).length, 1, 'one session');
    const log = await cli(t, ['log', '--json'], { env });
    assert.is(JSON.parse(log.stdout).length, 2, 'both checkpoints in it');
  } finally {
    (fs as { statSync: typeof fs.statSync }).statSync = real;
    t.cleanup();
  }
});

// A4: after `git init`, a shadow left behind that is refused as untrusted (its git dir group-writable, e.g. made under
// umask 002) is silently skipped: import says "nothing to import" (exit 1), and log/gc say nothing of it.
test('A4: import in a repository whose left-behind shadow is untrusted says why (not "nothing to import")', async () => {
  const { t, env } = plainDir();
  try {
    assert.is((await cli(t, ['snap', '-q'], { env })).code, 0);
    const gitDir = JSON.parse((await cli(t, ['shadow', '--json'], { env })).stdout).gitDir as string;
    fs.chmodSync(gitDir, 0o777);
    t.git(['init', '-q', `--object-format=${t.objectFormat}`]);
    const imp = await cli(t, ['shadow', 'import', '--json'], { env });
    const e = JSON.parse(imp.stdout).error;
    assert.is.not(e.code, 'NothingToDo', `${e.message}`);
  } finally {
    t.cleanup();
  }
});

// A5: AGENTSNAP_SHADOW (every process the wrapped agent starts has it) pins the shadow for any directory below its
// worktree, even one inside a git repository that was there before the wrap (a clone in a subdirectory, with its own
// agentsnap sessions): there `agentsnap log`/`undo` act on the shadow, and a snap records the repository as a
// nested one (not its files).
test('A5: AGENTSNAP_SHADOW does not take over a git repository that already existed below the shadowed directory', async () => {
  const { t, env } = plainDir({ 'top.txt': 'top\n' });
  try {
    assert.is((await cli(t, ['snap', '-q', '-m', 'shadow-step'], { env })).code, 0);
    const gitDir = JSON.parse((await cli(t, ['shadow', '--json'], { env })).stdout).gitDir as string;
    const inner = path.join(t.dir, 'inner');
    fs.mkdirSync(inner);
    t.git(['init', '-q', `--object-format=${t.objectFormat}`], { cwd: inner });
    fs.writeFileSync(path.join(inner, 'i.txt'), 'in\n');
    assert.is((await cli(t, ['snap', '-q', '-m', 'inner-step'], { env, cwd: inner })).code, 0);
    const log = await cli(t, ['log'], { env: { ...env, AGENTSNAP_SHADOW: gitDir }, cwd: inner });
    assert.is(log.code, 0, log.stderr);
    assert.match(log.stdout, /inner-step/, log.stdout);
  } finally {
    t.cleanup();
  }
});

// A6: a shadow whose git/ is gone (an interrupted `rm -rf`, a cleanup tool, a partial restore of ~/.local/state) is
// taken for an untrusted one: "another user could change what git runs there", a chmod hint that cannot help, exit 3
// for every command in the directory and every plain directory below it, `gc --all` included (so agentsnap cannot
// remove it). A missing origin.json, by contrast, is set aside and replaced.
test('A6: a shadow whose git dir is missing does not wedge the directory (gc --all removes it, or snap sets it aside)', async () => {
  const { t, env } = plainDir();
  try {
    assert.is((await cli(t, ['snap', '-q'], { env })).code, 0);
    const shadowDir = JSON.parse((await cli(t, ['shadow', '--json'], { env })).stdout).shadow as string;
    fs.rmSync(path.join(shadowDir, 'git'), { recursive: true });
    const gc = await cli(t, ['gc', '--all', '--force'], { env });
    const snap = await cli(t, ['snap', '-q'], { env });
    assert.ok(gc.code === 0 || snap.code === 0, `gc --all: ${gc.code} ${gc.stderr}\nsnap: ${snap.code} ${snap.stderr}`);
  } finally {
    t.cleanup();
  }
});

test.run();
