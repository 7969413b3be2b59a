// The executable starts a new session's `git status` before it loads the CLI;
// the snapshot uses that output only where it would have run the same
// command on an identical copy of the user's index.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runProcess, tempRepo, treeFiles } from '../support/helpers.js';
import { openRepo } from '../../src/git/repo.js';
import { statKey } from '../../src/base/fsutil.js';
import { snapshotStatusArgs } from '../../src/git/status-args.js';
import { dropStatusPrefetch, startStatusPrefetch, takeStatusPrefetch } from '../../src/snapshot/status-prefetch.js';

const JS = path.join(path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..'), 'bin', 'agentsnap.js');

interface Trace {
  event: string;
  sid: string;
  time: string;
  argv?: string[];
}

test('status prefetch: a cold snap takes the status started before the CLI loaded, and snapshots the worktree exactly', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n', 'src/b.txt': 'two\n', 'gone.txt': 'bye\n' } });
  try {
    repo.write('a.txt', 'changed\n');
    repo.write('src/new.txt', 'new\n');
    fs.rmSync(path.join(repo.dir, 'gone.txt'));
    const trace = path.join(repo.base, 'trace.json');
    const res = await runProcess(process.execPath, [JS, 'snap', '--json'], {
      cwd: path.join(repo.dir, 'src'),
      env: { ...repo.env, AGENTSNAP_SERVER: 'on', AGENTSNAP_SERVER_IDLE_MS: '200', GIT_TRACE2_EVENT: trace },
    });
    assert.is(res.code, 0, res.stderr);
    const out = JSON.parse(res.stdout) as { commit: string };
    const files = treeFiles(repo, out.commit);
    assert.equal([...files.keys()].sort(), ['a.txt', 'src/b.txt', 'src/new.txt']);
    assert.is(files.get('a.txt')?.content.toString(), 'changed\n');
    // This process's git commands (the background server's come later, from another process tree).
    const events = fs
      .readFileSync(trace, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Trace);
    const starts = events.filter((e) => e.event === 'start' && e.argv);
    const firstRevParse = starts.findIndex((e) => e.argv?.[1] === 'rev-parse');
    const statuses = starts.slice(0, starts.findIndex((e) => e.argv?.includes('update-ref')) + 1).filter((e) => e.argv?.includes('status'));
    assert.is(statuses.length, 1, 'one status');
    assert.ok(starts.indexOf(statuses[0] as Trace) < firstRevParse, 'started before the CLI opened the repository');
  } finally {
    repo.cleanup();
  }
});

test('status prefetch: not taken for another repository, a changed user index or other arguments', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  const other = tempRepo({ files: { 'b.txt': 'two\n' } });
  try {
    const env = { ...repo.env, AGENTSNAP_SERVER: 'on' };
    const r = await openRepo(repo.dir, { env: repo.env });
    const key = () => statKey(path.join(r.gitDir, 'index'));
    const args = snapshotStatusArgs(false);

    startStatusPrefetch(repo.dir, env);
    assert.is(takeStatusPrefetch(await openRepo(other.dir, { env: other.env }), key(), args), null, 'another repository');
    assert.is(takeStatusPrefetch(r, key(), args), null, 'taken once: gone after a refusal');

    startStatusPrefetch(repo.dir, env);
    assert.is(takeStatusPrefetch(r, key(), snapshotStatusArgs(true)), null, 'other arguments');

    startStatusPrefetch(repo.dir, env);
    const before = key();
    repo.write('c.txt', 'three\n');
    repo.git(['add', 'c.txt']);
    assert.is(takeStatusPrefetch(r, before, args), null, 'the user index changed since it started');

    startStatusPrefetch(repo.dir, env);
    const ok = takeStatusPrefetch(r, key(), args);
    assert.ok(ok, 'same repository, same index, same arguments');
    assert.match(String(await ok), 'c.txt', 'its output: the status of that index');

    startStatusPrefetch(repo.dir, { ...env, AGENTSNAP_SERVER: 'off' });
    assert.is(takeStatusPrefetch(r, key(), args), null, 'none started with the server off');
    startStatusPrefetch(repo.dir, { ...env, GIT_DIR: path.join(other.dir, '.git') });
    assert.is(takeStatusPrefetch(r, key(), args), null, 'none started where GIT_DIR points elsewhere');
  } finally {
    dropStatusPrefetch();
    repo.cleanup();
    other.cleanup();
  }
});

test.run();
