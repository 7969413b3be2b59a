// Issue 33 part 1: a directory in no git repository. agentsnap keeps a shadow repository for it outside it
// (src/git/shadow.ts: `$XDG_STATE_HOME/agentsnap/shadows/<name>-<hash>/`), every command works through it, nothing
// is written into the directory, and what needs a real repository says so in one line.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { BIN, agentsnapOnPath, cli, cliProcess, untilClockPast, worktreeFiles, type TempRepo } from '../support/helpers.js';
import { listShadows, plainDir } from '../support/shadow.js';
import { request } from '../support/ui-helpers.js';
import { startUiServer } from '../../src/ui/server.js';
import { shadowKey } from '../../src/git/shadow.js';
import { snap } from '../../src/api/api.js';

/** Every name in the directory, recursively (what a user would see with `find`). */
function names(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string, rel: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      out.push(r);
      if (e.isDirectory()) walk(path.join(d, e.name), r);
    }
  };
  walk(dir, '');
  return out.sort();
}

test('shadow: before anything, a read command says the directory is in no repository and how to start (exit 1, NotARepository)', async () => {
  const { t, env, shadows } = plainDir();
  try {
    const log = await cli(t, ['log', '--json'], { env });
    assert.is(log.code, 1);
    const e = JSON.parse(log.stdout).error;
    assert.is(e.code, 'NotARepository');
    assert.is(e.data.shadow, 'none');
    assert.match(e.hint, /agentsnap snap` or `agentsnap wrap` here records it in a shadow repository/);
    assert.equal(listShadows(shadows), [], 'a read command makes no shadow repository');
    // AGENTSNAP_SHADOWS=off: as before shadow repositories.
    const off = await cli(t, ['snap'], { env: { ...env, AGENTSNAP_SHADOWS: 'off' } });
    assert.is(off.code, 1, off.stderr);
    assert.match(off.stderr, /not a git repository/);
    assert.equal(listShadows(shadows), []);
  } finally {
    t.cleanup();
  }
});

test('shadow, end to end through the installed executable: a wrapped scripted agent edits, deletes and creates; log, show, bisect, blame, the MCP tools, undo, redo and the web page work; nothing is written into the directory; gc --all removes the shadow repository', async () => {
  const {
    t,
    env: ceiling,
    shadows,
  } = plainDir({ 'f.txt': 'line 1\nline 2\n', 'doomed.txt': 'bye\n', 'node_modules/dep/index.js': 'v1\n' });
  const env = { ...ceiling, PATH: agentsnapOnPath(t.base) };
  try {
    const before = names(t.dir);
    // The agent: three tool calls, each between a pre and a post snapshot, as a hooked agent's are.
    const agent = path.join(t.base, 'agent.sh');
    fs.writeFileSync(
      agent,
      [
        'set -e',
        'call() { agentsnap snap --phase pre --tool Bash -q; sh -c "$1"; agentsnap snap --phase post -q; }',
        `call 'echo "line 3 by the agent" >> f.txt'`,
        `call 'rm doomed.txt; echo new > created.txt; echo v2 > node_modules/dep/index.js'`,
        `call 'echo broken > broken.txt'`,
      ].join('\n'),
    );
    const wrap = await cliProcess(t, ['wrap', '--', 'sh', agent], { env });
    assert.is(wrap.code, 0, wrap.stderr);
    assert.match(wrap.stderr, /this directory is in no git repository: its snapshots are kept in .*shadows\/repo-[0-9a-f]{20}/);
    assert.equal(listShadows(shadows), [shadowKey(t.dir)]);
    // Nothing of agentsnap's in the directory: the agent's own changes only.
    assert.equal(
      names(t.dir),
      [...before.filter((n) => n !== 'doomed.txt'), 'broken.txt', 'created.txt'].sort(),
      'no .git, no state file in the directory',
    );

    const log = await cliProcess(t, ['log'], { env });
    assert.is(log.code, 0, log.stderr);
    assert.match(log.stdout, /1 {2}Bash {2}done/);
    assert.match(log.stdout, /3 {2}Bash {2}done/);
    const show = await cliProcess(t, ['show', '2'], { env });
    assert.is(show.code, 0, show.stderr);
    assert.match(show.stdout, /--- a\/doomed\.txt\n\+\+\+ \/dev\/null/);
    assert.match(show.stdout, /\+\+\+ b\/created\.txt/);
    assert.not.match(show.stdout, /node_modules/, 'node_modules is left out by default');
    const status = await cliProcess(t, ['status'], { env });
    assert.match(status.stdout, /shadow repository: .*shadows\/repo-/);
    const shadow = await cliProcess(t, ['shadow'], { env });
    assert.is(shadow.code, 0, shadow.stderr);
    assert.match(shadow.stdout, /left out: the directory's \.gitignore files, agentsnap\.exclude and node_modules\/ \.venv\//);

    const bisect = await cliProcess(t, ['bisect', '--run', 'test ! -e broken.txt'], { env });
    assert.is(bisect.code, 0, bisect.stderr);
    assert.match(bisect.stdout, /first bad step: 3 {2}Bash {2}done/);
    const blame = await cliProcess(t, ['blame', 'f.txt'], { env });
    assert.is(blame.code, 0, blame.stderr);
    assert.match(blame.stdout, /step 1 .*line 3 by the agent/);

    const ui = await startUiServer({ cwd: t.dir, env: { ...t.env, ...env } });
    try {
      const host = `127.0.0.1:${ui.port}`;
      const sessions = await request(ui.port, 'GET', '/api/sessions', { Host: host, 'X-Agentsnap-Token': ui.token });
      assert.is(sessions.status, 200);
      assert.match(sessions.body, /"steps":3/);
    } finally {
      await ui.close();
    }

    // The agent's own MCP tools, through the SDK's client over stdio.
    const client = new Client({ name: 'agentsnap-test', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [BIN, 'mcp'],
        cwd: t.dir,
        env: { ...(t.env as Record<string, string>), ...env },
        stderr: 'pipe',
      }),
    );
    try {
      const listed = (await client.callTool({ name: 'list_steps', arguments: {} })) as { content: { text: string }[] };
      assert.match(listed.content.map((c) => c.text).join('\n'), /3 step\(s\)/);
    } finally {
      await client.close();
    }

    const undo = await cliProcess(t, ['undo', '2'], { env });
    assert.is(undo.code, 0, undo.stderr);
    assert.is(t.read('f.txt').toString(), 'line 1\nline 2\nline 3 by the agent\n');
    assert.is(t.read('doomed.txt').toString(), 'bye\n');
    assert.not.ok(t.exists('created.txt'));
    assert.not.ok(t.exists('broken.txt'));
    assert.is(t.read('node_modules/dep/index.js').toString(), 'v2\n', 'what is left out is left alone');
    const redo = await cliProcess(t, ['redo'], { env });
    assert.is(redo.code, 0, redo.stderr);
    assert.is(t.read('broken.txt').toString(), 'broken\n');
    assert.not.ok(t.exists('doomed.txt'));

    const gc = await cliProcess(t, ['gc', '--all'], { env });
    assert.is(gc.code, 0, gc.stderr);
    assert.match(gc.stdout, /removed the shadow repository .*shadows\/repo-/);
    assert.equal(listShadows(shadows), [], 'the shadow repository is gone');
    assert.equal(names(t.dir), [...before.filter((n) => n !== 'doomed.txt'), 'broken.txt', 'created.txt'].sort(), 'gc changed no file');
    const after = await cliProcess(t, ['log'], { env });
    assert.is(after.code, 1);
    assert.match(after.stderr, /not a git repository, and agentsnap keeps no shadow repository for it yet/);
  } finally {
    t.cleanup();
  }
});

test('shadow: what needs a real repository says so in one line (exit 1, NeedsGitRepository), and changes nothing', async () => {
  const { t, env } = plainDir();
  try {
    assert.is((await cli(t, ['snap', '-q'], { env })).code, 0);
    for (const args of [
      ['hooks', 'install'],
      ['apply', 'x'],
      ['promote', 'x', '--branch', 'b'],
      ['wrap', '--worktree', '--', 'true'],
      ['server', 'start'],
    ]) {
      const res = await cli(
        t,
        [...args, '--json'].filter((a) => !(args[0] === 'wrap' && a === '--json')),
        { env },
      );
      assert.is(res.code, 1, `${args.join(' ')}: ${res.stdout}${res.stderr}`);
      assert.match(
        res.stdout + res.stderr,
        /needs a git repository, and .* is in none \(agentsnap keeps a shadow repository for it\)/,
        args.join(' '),
      );
    }
    assert.equal(names(t.dir), ['a.txt']);
  } finally {
    t.cleanup();
  }
});

test("shadow: a subdirectory uses its parent's shadow repository (as git finds a .git above it); a directory in a git repository never gets one", async () => {
  const { t, env, shadows } = plainDir({ 'a.txt': 'one\n', 'sub/b.txt': 'two\n' });
  try {
    assert.is((await cli(t, ['snap', '-q'], { env })).code, 0);
    const sub = path.join(t.dir, 'sub');
    t.write('sub/b.txt', 'changed\n');
    const inSub = await cli(t, ['snap', '-m', 'from sub'], { env, cwd: sub });
    assert.is(inSub.code, 0, inSub.stderr);
    assert.equal(listShadows(shadows), [shadowKey(t.dir)], 'no second shadow repository for the subdirectory');
    const log = await cli(t, ['log'], { env, cwd: sub });
    assert.match(log.stdout, /M sub\/b\.txt/);
    // A git repository below: its own .git wins, and no shadow is made for it.
    const nested = path.join(t.base, 'elsewhere');
    fs.mkdirSync(nested);
    t.git(['init', '-q', nested]);
    fs.writeFileSync(path.join(nested, 'x'), 'x\n');
    assert.is((await cli(t, ['snap', '-q'], { env, cwd: nested })).code, 0);
    assert.ok(fs.existsSync(path.join(nested, '.git', 'agentsnap')));
    assert.equal(listShadows(shadows), [shadowKey(t.dir)]);
  } finally {
    t.cleanup();
  }
});

test('shadow: a home directory or / is refused unless `shadow create --force` (exit 3); with it, the shadows inside home are left out of its snapshots', async () => {
  const { t, env, shadows } = plainDir();
  try {
    fs.writeFileSync(path.join(t.home, 'notes.txt'), 'mine\n');
    const res = await cli(t, ['snap', '--json'], { env, cwd: t.home });
    assert.is(res.code, 3, res.stderr);
    const e = JSON.parse(res.stdout).error;
    assert.is(e.code, 'Refused');
    assert.is(e.data.reason, 'home-or-root');
    assert.match(e.hint, /agentsnap shadow create --force/);
    assert.equal(listShadows(shadows), []);
    const root = await cli(t, ['snap'], { env, cwd: '/' });
    assert.is(root.code, 3, root.stderr);
    assert.match(root.stderr, /does not snapshot the root directory unless asked/);

    const create = await cli(t, ['shadow', 'create', '--force'], { env, cwd: t.home });
    assert.is(create.code, 0, create.stderr);
    const snap = await cli(t, ['snap', '-m', 'home', '--json'], { env, cwd: t.home });
    assert.is(snap.code, 0, snap.stderr);
    const show = await cli(t, ['show', '1', '--json'], { env, cwd: t.home });
    const paths = JSON.stringify(JSON.parse(show.stdout));
    assert.not.match(paths, /\.local\/state\/agentsnap/, "agentsnap's own shadows are never snapshotted");
    const files = worktreeFiles({ ...t, dir: t.home } as TempRepo, (rel) => rel.startsWith('.local'));
    assert.ok(files.has('notes.txt'));
  } finally {
    t.cleanup();
  }
});

test('shadow: a shadows directory another user could change is not used, and no shadow repository is made there (exit 3)', async () => {
  const { t, env, shadows } = plainDir();
  try {
    fs.mkdirSync(shadows, { recursive: true });
    fs.chmodSync(shadows, 0o777);
    const res = await cli(t, ['snap'], { env });
    assert.is(res.code, 3, res.stderr);
    assert.match(res.stderr, /is not yours alone/);
    assert.equal(fs.readdirSync(shadows), []);
    // One made while it was private is refused once it is opened up: not used, not set aside, not replaced.
    fs.chmodSync(shadows, 0o700);
    assert.is((await cli(t, ['snap', '-q', '-m', 'precious'], { env })).code, 0);
    fs.chmodSync(path.join(shadows, shadowKey(t.dir), 'git'), 0o777);
    for (const args of [['log'], ['snap', '-m', 'next']]) {
      const r = await cli(t, args, { env });
      assert.is(r.code, 3, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /the shadow repository .* is not used: .* is writable by everyone/);
    }
    assert.equal(listShadows(shadows), [shadowKey(t.dir)], 'nothing set aside or made');
    fs.chmodSync(path.join(shadows, shadowKey(t.dir), 'git'), 0o700);
    const log = await cli(t, ['log'], { env });
    assert.match(log.stdout, /precious/);
    // A directory above the shadows that another user could write in (not sticky): refused as well.
    const state = path.join(t.home, '.local', 'state');
    fs.chmodSync(state, 0o777);
    assert.is((await cli(t, ['log'], { env })).code, 3);
    fs.chmodSync(state, 0o1777);
    assert.is((await cli(t, ['log'], { env })).code, 0, 'a sticky directory lets no one else rename ours');
  } finally {
    t.cleanup();
  }
});

test('shadow: with HOME reached through a symlink (/home -> /var/home), the shadows directory is still recognised: no shadow of it, and a home shadow leaves it out', async () => {
  const { t, env, shadows } = plainDir();
  const link = path.join(t.base, 'homelink');
  fs.symlinkSync(t.home, link);
  const henv = { ...env, HOME: link, XDG_STATE_HOME: '' };
  try {
    assert.is((await cli(t, ['snap', '-q'], { env: henv })).code, 0);
    const inside = await cli(t, ['snap', '-q'], { env: henv, cwd: path.join(link, '.local', 'state', 'agentsnap', 'shadows') });
    assert.is(inside.code, 3, inside.stderr);
    assert.match(inside.stderr, /inside agentsnap's own shadow repositories/);
    assert.equal(listShadows(shadows), [shadowKey(t.dir)]);
    assert.is((await cli(t, ['shadow', 'create', '--force'], { env: henv, cwd: link })).code, 0);
    assert.is((await cli(t, ['snap', '-q', '-m', 'home'], { env: henv, cwd: link })).code, 0);
    const show = await cli(t, ['show', '1', '--stat'], { env: henv, cwd: link });
    assert.not.match(show.stdout, /\.local\/state/, show.stdout);
  } finally {
    t.cleanup();
  }
});

test('shadow: a world-writable directory (as /tmp) and a path with a newline are refused before any shadow is made', async () => {
  const { t, env, shadows } = plainDir();
  try {
    const shared = path.join(t.base, 'shared');
    fs.mkdirSync(shared);
    fs.chmodSync(shared, 0o1777);
    const r = await cli(t, ['snap'], { env, cwd: shared });
    assert.is(r.code, 3, r.stderr);
    assert.match(r.stderr, /does not snapshot a directory everyone can write in unless asked/);
    const nl = path.join(t.base, 'a\nb');
    fs.mkdirSync(nl);
    const n = await cli(t, ['snap'], { env, cwd: nl });
    assert.is(n.code, 1, n.stderr);
    assert.match(n.stderr, /holds a newline/);
    assert.equal(listShadows(shadows), []);
  } finally {
    t.cleanup();
  }
});

test('shadow: a directory removed and made again (or another moved in) at the same path is not given the old sessions; the old shadow is set aside, said so, listed, and gc --all removes it', async () => {
  const { t, env, shadows } = plainDir();
  try {
    assert.is((await cli(t, ['snap', '-m', 'old'], { env })).code, 0);
    // Removed and made again: on ext4 the inode number is often reused at once; the birth time tells them apart.
    fs.rmSync(t.dir, { recursive: true });
    fs.mkdirSync(t.dir);
    // A clock tick later (a birth time equal to the ctime is taken for none: git/shadow.ts birthTime).
    await untilClockPast(Date.now() + 30);
    fs.writeFileSync(path.join(t.dir, 'new.txt'), 'new\n');
    const log = await cli(t, ['log'], { env });
    if (fs.statSync(t.dir).birthtimeMs === 0)
      console.log('  (no birth times on this filesystem: a reused inode is taken for the same directory)');
    else assert.is(log.code, 1, `the old sessions are shown for another directory:\n${log.stdout}`);
    // Another directory moved to the path.
    fs.renameSync(t.dir, `${t.dir}.gone`);
    fs.mkdirSync(t.dir);
    fs.writeFileSync(path.join(t.dir, 'new.txt'), 'new\n');
    assert.is((await cli(t, ['log'], { env })).code, 1);
    const snap = await cli(t, ['snap', '-m', 'new'], { env });
    assert.is(snap.code, 0, snap.stderr);
    assert.match(
      snap.stderr,
      /warning: the shadow repository kept at this path was made for another directory .* set aside as .*\.replaced-/,
    );
    const now = await cli(t, ['log', '--json'], { env });
    assert.is(JSON.parse(now.stdout).length, 1, 'a fresh shadow repository');
    const kept = listShadows(shadows);
    assert.is(kept.length, 2);
    assert.ok(
      kept.some((k) => k.startsWith(`${shadowKey(t.dir)}.replaced-`)),
      kept.join(' '),
    );
    assert.match(
      (await cli(t, ['shadow'], { env })).stdout,
      /set aside \(kept for a directory that was at this path before\): .*\.replaced-/,
    );
    const gc = await cli(t, ['gc', '--all', '--force'], { env });
    assert.is(gc.code, 0, gc.stderr);
    assert.equal(listShadows(shadows), []);
  } finally {
    t.cleanup();
  }
});

test('shadow import: after `git init` the sessions are carried into the repository, undo goes on there, the shadow repository is removed; a repository of the other object format is refused', async () => {
  const { t, env, shadows } = plainDir();
  try {
    const pre = await cli(t, ['snap', '--phase', 'pre', '--tool', 'Bash', '-q'], { env });
    assert.is(pre.code, 0, pre.stderr);
    t.write('a.txt', 'agent\n');
    assert.is((await cli(t, ['snap', '--phase', 'post', '-q'], { env })).code, 0);
    const other = t.objectFormat === 'sha1' ? 'sha256' : 'sha1';
    t.git(['init', '-q', `--object-format=${other}`]);
    const refused = await cli(t, ['shadow', 'import'], { env });
    assert.is(refused.code, 3, refused.stderr);
    assert.match(refused.stderr, /cannot be carried over/);
    fs.rmSync(path.join(t.dir, '.git'), { recursive: true });
    t.git(['init', '-q', `--object-format=${t.objectFormat}`]);
    const none = await cli(t, ['log'], { env });
    assert.is(none.code, 1);
    assert.match(none.stderr, /agentsnap shadow import` carries them over/);
    const dry = await cli(t, ['shadow', 'import', '--dry-run'], { env });
    assert.match(dry.stdout, /would carry 1 session over/);
    assert.equal(listShadows(shadows), [shadowKey(t.dir)]);
    const imp = await cli(t, ['shadow', 'import'], { env });
    assert.is(imp.code, 0, imp.stderr);
    assert.match(imp.stdout, /carried 1 session over .*; removed the shadow repository/);
    assert.equal(listShadows(shadows), []);
    const undo = await cli(t, ['undo', '1'], { env });
    assert.is(undo.code, 0, undo.stderr);
    assert.is(t.read('a.txt').toString(), 'one\n');
    const again = await cli(t, ['shadow', 'import'], { env });
    assert.is(again.code, 1);
    assert.match(again.stderr, /keeps no shadow repository for/);
  } finally {
    t.cleanup();
  }
});

test('shadow import: one stopped half way goes on where it stopped (a session it carried is not a clash); a session of the same id with another history is refused, nothing changed', async () => {
  const { t, env, shadows } = plainDir();
  try {
    assert.is((await cli(t, ['snap', '-m', 'one', '-q'], { env })).code, 0);
    const id = JSON.parse((await cli(t, ['sessions', '--json'], { env })).stdout)[0].id as string;
    const shadowSession = path.join(shadows, shadowKey(t.dir), 'git', 'agentsnap', 'sessions', id);
    t.git(['init', '-q', `--object-format=${t.objectFormat}`]);
    const mine = path.join(t.dir, '.git', 'agentsnap', 'sessions', id);
    // Another history under the same id: refused.
    fs.mkdirSync(mine, { recursive: true });
    fs.writeFileSync(path.join(mine, 'journal.jsonl'), '{"other":true}\n');
    const clash = await cli(t, ['shadow', 'import'], { env });
    assert.is(clash.code, 3, clash.stderr);
    assert.match(clash.stderr, new RegExp(`already has session ${id}`));
    assert.ok(fs.existsSync(shadowSession), 'the shadow repository is left whole');
    // The session as an import that stopped after copying it left it: the import goes on.
    fs.rmSync(mine, { recursive: true });
    fs.cpSync(shadowSession, mine, { recursive: true });
    const imp = await cli(t, ['shadow', 'import'], { env });
    assert.is(imp.code, 0, imp.stderr);
    assert.equal(listShadows(shadows), []);
    const log = await cli(t, ['log'], { env });
    assert.is(log.code, 0, log.stderr);
    assert.match(log.stdout, /checkpoint {2}done .* one/);
  } finally {
    t.cleanup();
  }
});

test("shadow import: what the shadow left out (node_modules/, dist/) stays out of the repository's snapshots: the next undo never deletes it", async () => {
  const { t, env } = plainDir({ 'f.txt': 'one\n', 'node_modules/dep/index.js': 'dep\n', 'dist/out.js': 'built\n' });
  try {
    assert.is((await cli(t, ['snap', '-q'], { env })).code, 0);
    t.write('f.txt', 'two\n');
    assert.is((await cli(t, ['snap', '-q'], { env })).code, 0);
    t.git(['init', '-q', `--object-format=${t.objectFormat}`]);
    const imp = await cli(t, ['shadow', 'import'], { env });
    assert.is(imp.code, 0, imp.stderr);
    assert.match(
      imp.stdout,
      /added what the shadow left out to .*info\/exclude, so this repository's snapshots \(and git\) leave it out too: node_modules\/ /,
    );
    assert.match(fs.readFileSync(path.join(t.dir, '.git', 'info', 'exclude'), 'utf8'), /# agentsnap shadow import: .*\nnode_modules\/\n/);
    t.write('f.txt', 'three\n');
    assert.is((await cli(t, ['snap', '-q'], { env })).code, 0);
    const undo = await cli(t, ['undo'], { env });
    assert.is(undo.code, 0, undo.stderr);
    assert.is(t.read('f.txt').toString(), 'two\n');
    assert.is(t.read('node_modules/dep/index.js').toString(), 'dep\n');
    assert.is(t.read('dist/out.js').toString(), 'built\n');
  } finally {
    t.cleanup();
  }
});

test('shadow import: `git init` in a parent directory: log says where the sessions are and why they cannot be carried over; import refuses (exit 3), nothing changed', async () => {
  const { t, env, shadows } = plainDir({ 'sub/a.txt': 'one\n' });
  const sub = path.join(t.dir, 'sub');
  try {
    assert.is((await cli(t, ['snap', '-q'], { env, cwd: sub })).code, 0);
    t.git(['init', '-q']);
    const log = await cli(t, ['log'], { env, cwd: sub });
    assert.is(log.code, 1);
    assert.match(log.stderr, /records .*sub as its top, so they cannot become this repository's/);
    const imp = await cli(t, ['shadow', 'import'], { env, cwd: sub });
    assert.is(imp.code, 3, imp.stderr);
    assert.match(imp.stderr, /Nothing was changed/);
    assert.equal(listShadows(shadows), [shadowKey(sub)]);
  } finally {
    t.cleanup();
  }
});

test("shadow import: what is not a file or directory in the shadow's state (a FIFO an agent left) is not carried and does not stop it", async () => {
  const { t, env, shadows } = plainDir();
  try {
    assert.is((await cli(t, ['snap', '-q'], { env })).code, 0);
    const sessions = path.join(shadows, shadowKey(t.dir), 'git', 'agentsnap', 'sessions');
    const [id] = fs.readdirSync(sessions);
    execFileSync('mkfifo', [path.join(sessions, id as string, 'zz-fifo')]);
    t.git(['init', '-q', `--object-format=${t.objectFormat}`]);
    const imp = await cli(t, ['shadow', 'import'], { env });
    assert.is(imp.code, 0, imp.stderr);
    assert.not.ok(fs.existsSync(path.join(t.dir, '.git', 'agentsnap', 'sessions', id as string, 'zz-fifo')));
    assert.ok(fs.existsSync(path.join(t.dir, '.git', 'agentsnap', 'sessions', id as string, 'journal.jsonl')));
  } finally {
    t.cleanup();
  }
});

test('shadow: an agent that runs `git init` in the middle of a wrap: its later calls are still recorded in the shadow repository, and import carries them over', async () => {
  const { t, env: ceiling } = plainDir();
  const env = { ...ceiling, PATH: agentsnapOnPath(t.base) };
  try {
    const agent = path.join(t.base, 'agent.sh');
    fs.writeFileSync(
      agent,
      [
        'set -e',
        'call() { agentsnap snap --phase pre --tool Bash -q; sh -c "$1"; agentsnap snap --phase post -q; }',
        `call 'echo two > a.txt'`,
        `call 'git init -q --object-format=${t.objectFormat}'`,
        `call 'echo three > a.txt'`,
      ].join('\n'),
    );
    const wrap = await cliProcess(t, ['wrap', '--', 'sh', agent], { env });
    assert.is(wrap.code, 0, wrap.stderr);
    assert.not.match(wrap.stderr, /no session/);
    const imp = await cliProcess(t, ['shadow', 'import'], { env });
    assert.is(imp.code, 0, imp.stderr);
    const log = await cliProcess(t, ['log', '--json'], { env });
    assert.is(JSON.parse(log.stdout).length, 3, log.stdout);
  } finally {
    t.cleanup();
  }
});

test("shadow: the first snapshot's progress says how many files it adds and how much they weigh (shown after a second on a terminal)", async () => {
  const { t, env } = plainDir({ 'a.txt': 'one\n', 'd/b.txt': 'x'.repeat(2000), 'node_modules/m.js': 'left out\n' });
  try {
    const phases: string[] = [];
    const res = await snap({ cwd: t.dir, env: { ...t.env, ...env }, onProgress: (p) => phases.push(p) });
    assert.ok(res.startedSession);
    assert.ok(phases.includes('adding 2 files (2.0 KiB untracked)'), phases.join(' | '));
  } finally {
    t.cleanup();
  }
});

test.run();
