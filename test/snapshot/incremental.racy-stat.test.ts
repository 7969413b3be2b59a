// The incremental engine against a file written again in place with its size kept and its mtime put back (utimes,
// touch -d, cp -p, rsync -a), the rewrite that defeats git's stat check within the second of the recorded ctime:
// the engine trusts no recorded stat for a write its watcher reports (the path is read), and its own stat records
// (sweeps, hard-linked files) hold the ctime to the nanosecond, which no utimes puts back, and count a stat as racy
// by its ctime as well as its mtime. Pinned here: the next snapshot's tree holds the bytes on disk.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { tempRepo } from '../support/helpers.js';
import { openRepo } from '../../src/git/repo.js';
import { loadSettings } from '../../src/settings/settings.js';
import { IncrementalSnapshotter } from '../../src/snapshot/incremental.js';

async function setup() {
  const t = tempRepo({ files: { 'a.txt': 'a\n', 'run.sh': 'AAAA\n' } });
  const repo = await openRepo(t.dir, { env: t.env });
  const settings = await loadSettings(repo);
  const engine = await IncrementalSnapshotter.open(repo, { runDir: path.join(t.base, 'run'), settings });
  const abs = path.join(t.dir, 'run.sh');
  const old = new Date(Date.now() - 60_000);
  const holdsDisk = (tree: string, label: string) =>
    assert.is(
      t.git(['rev-parse', `${tree}:run.sh`]).trim(),
      t.git(['hash-object', '--no-filters', 'run.sh']).trim(),
      `${label}: the snapshot holds the bytes on disk`,
    );
  return { t, settings, engine, abs, old, holdsDisk };
}

test('engine: a file rewritten in place, same size, mtime put back, is read by the next snapshot', async () => {
  const c = await setup();
  try {
    fs.utimesSync(c.abs, c.old, c.old);
    let res = await c.engine.snapshot({ settings: c.settings, parentTree: null });
    for (const [i, text] of ['BBBB\n', 'CCCC\n', 'DDDD\n'].entries()) {
      fs.writeFileSync(c.abs, text);
      fs.utimesSync(c.abs, c.old, c.old);
      const next = await c.engine.snapshot({ settings: c.settings, parentTree: res.tree });
      c.holdsDisk(next.tree, `rewrite ${i + 1} (${next.mode})`);
      assert.equal(
        next.changed.map((x) => `${x.change} ${x.path}`),
        ['M run.sh'],
      );
      res = next;
    }
  } finally {
    await c.engine.close();
    c.t.cleanup();
  }
});

test('engine: a rewrite through a hard link made outside the worktree, same size, mtime put back, is read after a sweep', async () => {
  const c = await setup();
  const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'agentsnap-link-'));
  try {
    const link = path.join(outside, 'run.sh');
    fs.linkSync(c.abs, link);
    fs.utimesSync(c.abs, c.old, c.old);
    let res = await c.engine.snapshot({ settings: c.settings, parentTree: null });
    await c.engine.sweep();
    res = await c.engine.snapshot({ settings: c.settings, parentTree: res.tree });
    await c.engine.sweep();
    fs.writeFileSync(link, 'BBBB\n');
    fs.utimesSync(link, c.old, c.old);
    const next = await c.engine.snapshot({ settings: c.settings, parentTree: res.tree });
    c.holdsDisk(next.tree, `through the outside link (${next.mode})`);
  } finally {
    fs.rmSync(outside, { recursive: true, force: true });
    await c.engine.close();
    c.t.cleanup();
  }
});

test.run();
