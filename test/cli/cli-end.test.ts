// `agentsnap end` (issue 32 item 5): a session `snap -m` started never ended,
// so `gc --all` refused it as "may still be in use". `end` ends the current
// session (its steps stay), refuses one a live wrapper runs, and says so when
// there is none.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BIN, cliProcess, tempRepo } from '../support/helpers.js';
import { journal, ON, sessionOf } from '../support/served.js';

const OFF = { AGENTSNAP_SERVER: 'off' };

test('snap -m, then end, then gc --all removes the session instead of refusing it as in use', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const snap = await cliProcess(repo, ['snap', '-m', 'before refactor'], { env: OFF });
    assert.is(snap.code, 0, snap.stderr);
    const id = /started session (\S+) /.exec(snap.stderr)?.[1] as string;
    assert.ok(id, snap.stderr);
    const refused = await cliProcess(repo, ['gc', '--all'], { env: OFF });
    assert.is(refused.code, 3, refused.stderr);
    assert.match(refused.stderr, 'may still be in use');
    repo.write('a.txt', 'after\n');
    const end = await cliProcess(repo, ['end'], { env: OFF });
    assert.is(end.code, 0, end.stderr);
    assert.match(end.stderr, new RegExp(`session ${id} ended; final snapshot [0-9a-f]{10} \\(1 file changed since its last step\\)`));
    const events = journal(repo, id);
    assert.is(events.filter((e) => e.type === 'session.end').length, 1);
    // Its steps stay: the checkpoint is still there to go back to.
    const log = await cliProcess(repo, ['log', '--session', id], { env: OFF });
    assert.is(log.code, 0, log.stderr);
    assert.match(log.stdout, 'before refactor');
    assert.ok(repo.git(['for-each-ref', `refs/agent/${id}/`]).includes(`refs/agent/${id}/1`));
    const again = await cliProcess(repo, ['end', '--session', id], { env: OFF });
    assert.is(again.code, 0, again.stderr);
    assert.match(again.stderr, `session ${id} had already ended; nothing to do`);
    assert.is(journal(repo, id).filter((e) => e.type === 'session.end').length, 1);
    const gc = await cliProcess(repo, ['gc', '--all'], { env: OFF });
    assert.is(gc.code, 0, gc.stderr);
    assert.is(repo.git(['for-each-ref', 'refs/agent/']).trim(), '');
    assert.is(repo.read('a.txt').toString(), 'after\n');
  } finally {
    repo.cleanup();
  }
});

test('end with no session running here: one clear message, exit 1, nothing written', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const none = await cliProcess(repo, ['end'], { env: OFF });
    assert.is(none.code, 1, none.stderr);
    assert.match(none.stderr, /no session is running in this worktree .*: there is nothing to end/);
    assert.not.match(none.stderr, /at .*\.js:\d+/);
    // A wrapped session that ended is not a running one either.
    const wrapped = await cliProcess(repo, ['wrap', '--', 'true'], { env: OFF });
    assert.is(wrapped.code, 0, wrapped.stderr);
    const after = await cliProcess(repo, ['end'], { env: OFF });
    assert.is(after.code, 1, after.stderr);
    const unknown = await cliProcess(repo, ['end', '--session', 'no-such-session'], { env: OFF });
    assert.is(unknown.code, 1, unknown.stderr);
    assert.match(unknown.stderr, 'no-such-session');
  } finally {
    repo.cleanup();
  }
});

for (const [mode, env] of [
  ['without the server', OFF],
  ['with the warm server', ON],
] as const) {
  test(`${mode}: end of a session whose wrap is still alive is refused (exit 5); the wrapper ends it`, async () => {
    const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
    try {
      // The wrapped command itself asks, while its wrapper waits for it: by AGENTSNAP_SESSION, and as the running session here.
      const node = JSON.stringify(process.execPath);
      const bin = JSON.stringify(BIN);
      const script = [
        `${node} ${bin} end 2> by-env.err; echo $? > by-env.code`,
        `env -u AGENTSNAP_SESSION ${node} ${bin} end 2> by-worktree.err; echo $? > by-worktree.code`,
        'echo changed >> a.txt',
      ].join('; ');
      const res = await cliProcess(repo, ['wrap', '--', 'sh', '-c', script], { env });
      assert.is(res.code, 0, res.stderr);
      const id = sessionOf(res.stderr);
      for (const how of ['by-env', 'by-worktree']) {
        assert.is(repo.read(`${how}.code`).toString().trim(), '5', how);
        const err = repo.read(`${how}.err`).toString();
        assert.match(err, new RegExp(`session ${id} is run by \`agentsnap wrap\` \\(process \\d+\\): it ends when its command exits`), how);
        assert.match(err, 'Exit the agent', how);
      }
      // Refused means untouched: the wrapper's end is the session's only one, and it recorded the run.
      const events = journal(repo, id);
      assert.is(events.filter((e) => e.type === 'session.end').length, 1);
      assert.match(res.stderr, `\`agentsnap undo 1 --session ${id}\` takes it back`);
    } finally {
      repo.cleanup();
    }
  });
}

test('end is listed with snap in the grouped help, and completes', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const help = await cliProcess(repo, ['--help'], { env: OFF });
    assert.is(help.code, 0, help.stderr);
    const group = help.stdout.slice(help.stdout.indexOf('Record without wrap'));
    assert.match(group.slice(0, group.indexOf('\n\n')), /agentsnap end\b.*End the current session/);
    const completion = await cliProcess(repo, ['completion', 'bash'], { env: OFF });
    assert.is(completion.code, 0, completion.stderr);
    assert.match(completion.stdout, /\bend\b/);
  } finally {
    repo.cleanup();
  }
});

test.run();
