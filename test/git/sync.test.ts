import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { cli, refsUnder, sessionOf, step, tempRepo, type TempRepo } from '../support/helpers.js';
import { openRepo } from '../../src/git/repo.js';
import { undoOperation } from '../../src/restore/undo.js';
import { openContext } from '../../src/session/context.js';

/** Clone A records a session; clone B is a second clone of the same project; both share a bare backup remote. */
function twoClones(): { a: TempRepo; b: TempRepo; backup: string; cleanup(): void } {
  const a = tempRepo({ files: { 'a.txt': 'one\n' } });
  const backup = path.join(a.base, 'snaps.git');
  a.git(['init', '-q', '--bare', backup]);
  const bDir = path.join(a.base, 'clone-b');
  a.git(['clone', '-q', a.dir, bDir]);
  const b: TempRepo = {
    ...a,
    dir: bDir,
    git: (args, o = {}) => a.git(args, { cwd: bDir, ...o }),
    gitRaw: (args, o = {}) => a.gitRaw(args, { cwd: bDir, ...o }),
    write: (rel, content) => fs.writeFileSync(path.join(bDir, rel), content),
    read: (rel) => fs.readFileSync(path.join(bDir, rel)),
  };
  return { a, b, backup, cleanup: () => a.cleanup() };
}

function journalOf(repo: TempRepo, session: string): Buffer {
  const common = path.resolve(repo.dir, repo.git(['rev-parse', '--git-common-dir']).trim());
  return fs.readFileSync(path.join(common, 'agentsnap', 'sessions', session, 'journal.jsonl'));
}

test('a session recorded in one clone is listed, logged and shown in another after push and fetch', async () => {
  const { a, b, backup, cleanup } = twoClones();
  try {
    a.write('a.txt', 'two\n');
    const s1 = JSON.parse((await cli(a, ['snap', '--json', '-m', 'first'])).stdout) as { session: string };
    a.write('new.txt', 'hello\n');
    await cli(a, ['snap', '-m', 'second']);
    const session = s1.session;
    // Not a backup remote yet: refused.
    a.git(['remote', 'add', 'snaps', backup]);
    const refused = await cli(a, ['push', 'snaps']);
    assert.is(refused.code, 3);
    assert.match(refused.stderr, 'agentsnap remote add snaps');
    assert.is((await cli(a, ['remote', 'add', 'snaps'])).code, 0);
    assert.is(a.git(['config', '--get-all', 'agentsnap.backupRemote']).trim(), 'snaps');
    await cli(a, ['hooks', 'install']);
    const pushed = await cli(a, ['push', 'snaps', '--json']);
    assert.is(pushed.code, 0, pushed.stderr);
    const remoteRefs = a.git(['--git-dir', backup, 'for-each-ref', '--format=%(refname)']).split('\n').filter(Boolean);
    assert.ok(remoteRefs.includes(`refs/agent/${session}/2`));
    assert.ok(remoteRefs.includes(`refs/agentsnap/journals/${session}`));
    // The journal commit carries agentsnap's identity and trailers, like every snapshot.
    const meta = a.git([
      '--git-dir',
      backup,
      'log',
      '-1',
      '--format=%an <%ae>|%cn <%ce>|%(trailers:key=Agentsnap-Session,valueonly)',
      `refs/agentsnap/journals/${session}`,
    ]);
    assert.is(meta.trim(), `agentsnap <agentsnap@agentsnap.invalid>|agentsnap <agentsnap@agentsnap.invalid>|${session}`);
    // A second push sends nothing new.
    const again = JSON.parse((await cli(a, ['push', 'snaps', '--json'])).stdout) as { pushed: string[] };
    assert.equal(again.pushed, []);

    assert.is((await cli(b, ['remote', 'add', 'snaps', backup])).code, 0);
    const fetched = await cli(b, ['fetch', 'snaps', '--json']);
    assert.is(fetched.code, 0, fetched.stderr);
    assert.equal((JSON.parse(fetched.stdout) as { sessions: unknown[] }).sessions, [{ session, action: 'added', events: 3 }]);
    assert.equal(journalOf(b, session), journalOf(a, session));
    assert.equal(refsUnder(b, `refs/agent/${session}/`), refsUnder(a, `refs/agent/${session}/`));
    assert.equal([...refsUnder(b, 'refs/agentsnap/fetch/').keys()], []);
    const list = await cli(b, ['sessions']);
    assert.match(list.stdout, session);
    const log = await cli(b, ['log', '--session', session]);
    assert.is(log.code, 0, log.stderr);
    assert.match(log.stdout, /\sfirst(\s|$)/m);
    assert.match(log.stdout, /\ssecond(\s|$)/m);
    const show = await cli(b, ['show', '2', '--session', session]);
    assert.is(show.code, 0, show.stderr);
    assert.match(show.stdout, '+hello');
    const diff = await cli(b, ['diff', '0', '2', '--session', session]);
    assert.match(diff.stdout, 'b/new.txt');

    // A records more; B's fetch brings the longer journal.
    a.write('a.txt', 'three\n');
    await cli(a, ['snap', '-m', 'third']);
    assert.is((await cli(a, ['push', 'snaps'])).code, 0);
    const upd = JSON.parse((await cli(b, ['fetch', 'snaps', '--json'])).stdout) as { sessions: { action: string }[] };
    assert.is(upd.sessions[0]?.action, 'updated');
    assert.equal(journalOf(b, session), journalOf(a, session));
    assert.match((await cli(b, ['show', '3', '--session', session])).stdout, '+three');
  } finally {
    cleanup();
  }
});

test('fetch never overwrites a local journal that has more events', async () => {
  const { a, backup, cleanup } = twoClones();
  try {
    a.write('a.txt', 'two\n');
    const { session } = JSON.parse((await cli(a, ['snap', '--json'])).stdout) as { session: string };
    await cli(a, ['remote', 'add', 'snaps', backup]);
    assert.is((await cli(a, ['push', 'snaps'])).code, 0);
    a.write('a.txt', 'three\n');
    await cli(a, ['snap']);
    const before = journalOf(a, session);
    const refsBefore = refsUnder(a, 'refs/agent/');
    const res = await cli(a, ['fetch', 'snaps']);
    assert.is(res.code, 0, res.stderr);
    assert.match(res.stdout, `${session}  local-ahead`);
    assert.match(res.stdout, 'kept it');
    assert.equal(journalOf(a, session), before);
    assert.equal(refsUnder(a, 'refs/agent/'), refsBefore);
  } finally {
    cleanup();
  }
});

test('a session whose newest state is an undo (kept versions included) or its final snapshot is complete in a clone that shares no objects', async () => {
  const a = tempRepo({ files: { 'a.txt': 'one\n', 'b.txt': 'two\n' } });
  try {
    const backup = path.join(a.base, 'snaps.git');
    a.git(['init', '-q', '--bare', backup]);
    const bDir = path.join(a.base, 'clone-b');
    a.git(['clone', '-q', '--no-local', a.dir, bDir]);
    const b: TempRepo = {
      ...a,
      dir: bDir,
      git: (args, o = {}) => a.git(args, { cwd: bDir, ...o }),
      gitRaw: (args, o = {}) => a.gitRaw(args, { cwd: bDir, ...o }),
    };
    await step(a, () => {
      a.write('a.txt', 'agent a\n');
      a.write('b.txt', 'agent b\n');
    });
    const session = sessionOf(a);
    // The undo keeps a version an editor saved while the undo had b.txt aside, then saved over.
    const repo = await openRepo(a.dir, { env: a.env });
    const res = await undoOperation(repo, session, 1, {
      restoreHooks: {
        beforeReplace: (rel) => rel === 'b.txt' && a.write('b.txt', 'first save\n'),
        afterCheck: (rel) => rel === 'b.txt' && a.write('b.txt', 'second save\n'),
      },
    });
    const oid = res.left.find((l) => l.path === 'b.txt')?.oid;
    assert.ok(oid, JSON.stringify(res.left));
    assert.is((await cli(a, ['remote', 'add', 'snaps', backup])).code, 0);
    assert.is((await cli(a, ['push', 'snaps'])).code, 0);
    assert.is((await cli(b, ['remote', 'add', 'snaps', backup])).code, 0);
    const fetched = await cli(b, ['fetch', 'snaps', '--json']);
    assert.is(fetched.code, 0, fetched.stderr);
    assert.equal(
      (JSON.parse(fetched.stdout) as { sessions: { action: string }[] }).sessions.map((x) => x.action),
      ['added'],
      fetched.stdout,
    );
    assert.is(refsUnder(b, `refs/agentsnap/sessions/${session}/head`).get(`refs/agentsnap/sessions/${session}/head`), res.commit!);
    assert.is(b.gitRaw(['cat-file', '-e', oid!]).status, 0, 'the kept version came along');
    assert.equal([...refsUnder(b, 'refs/agentsnap/fetch/').keys()], []);

    // The session ends with a final snapshot (changes after its last step): that travels too.
    a.write('a.txt', 'after the undo\n');
    const { endSession } = await import('../../src/session/session.js');
    await endSession(await openContext(repo), session, {});
    assert.is((await cli(a, ['push', 'snaps'])).code, 0);
    const again = JSON.parse((await cli(b, ['fetch', 'snaps', '--json'])).stdout) as { sessions: { action: string }[] };
    assert.equal(
      again.sessions.map((x) => x.action),
      ['updated'],
    );
    assert.equal(refsUnder(b, `refs/agentsnap/sessions/${session}/head`), refsUnder(a, `refs/agentsnap/sessions/${session}/head`));
  } finally {
    a.cleanup();
  }
});

test('remote add creates a remote from a URL, refuses a conflicting URL, and remove only undesignates', async () => {
  const { a, backup, cleanup } = twoClones();
  try {
    const add = await cli(a, ['remote', 'add', 'snaps', backup]);
    assert.is(add.code, 0, add.stderr);
    assert.is(a.git(['config', 'remote.snaps.url']).trim(), backup);
    const conflict = await cli(a, ['remote', 'add', 'snaps', '/elsewhere.git']);
    assert.is(conflict.code, 4);
    const missing = await cli(a, ['remote', 'add', 'nope']);
    assert.is(missing.code, 2);
    assert.match(missing.stderr, 'give its URL');
    assert.is((await cli(a, ['remote', 'remove', 'snaps'])).code, 0);
    assert.is(a.gitRaw(['config', '--get-all', 'agentsnap.backupRemote']).status, 1);
    assert.is(a.git(['config', 'remote.snaps.url']).trim(), backup);
    assert.is((await cli(a, ['fetch', 'snaps'])).code, 3);
  } finally {
    cleanup();
  }
});

test.run();
