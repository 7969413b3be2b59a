// The incremental engine with environment directories (agentsnap.environment, issue 33): its watcher covers them
// although the rules ignore them, so a call that changes files there (or nothing there) is read incrementally, and
// every snapshot equals the full scan's (which lists them whole). The other ignored directories stay unwatched.
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { tempRepo } from '../support/helpers.js';
import { checkEngine, type EngineCtx } from '../support/engine-check.js';
import { openRepo } from '../../src/git/repo.js';
import { loadSettings } from '../../src/settings/settings.js';
import { IncrementalSnapshotter } from '../../src/snapshot/incremental.js';

type Ctx = EngineCtx;

const FILES: Record<string, string> = {
  '.gitignore': 'node_modules/\nweb/\n*.log\n',
  'a.txt': 'a\n',
  'node_modules/left/index.js': 'left 1\n',
  'node_modules/left/.gitignore': '*.js\n',
  'web/.venv/lib/p.py': 'p 1\n',
  'web/other.txt': 'ignored, not an environment directory\n',
  'build.log': 'ignored\n',
};

async function setup(files: Record<string, string> = FILES, environment: string | null = 'node_modules,web/.venv'): Promise<Ctx> {
  const t = tempRepo({ files });
  if (environment !== null) t.git(['config', 'agentsnap.environment', environment]);
  const repo = await openRepo(t.dir, { env: t.env });
  const settings = await loadSettings(repo);
  const engine = await IncrementalSnapshotter.open(repo, { runDir: path.join(t.base, 'run'), settings });
  return { t, repo, settings, engine };
}

const check = checkEngine;

function paths(c: Ctx, tree: string): string[] {
  return c.t.git(['ls-tree', '-r', '--name-only', '-z', tree]).split('\0').filter(Boolean).sort();
}

test('environment directories: the engine reads changes below them incrementally and equals the full scan; other ignored files stay out', async () => {
  const c = await setup();
  try {
    const first = await check(c, null, 'first');
    assert.is(first.mode, 'full');
    assert.equal(paths(c, first.tree), [
      '.gitignore',
      'a.txt',
      'node_modules/left/.gitignore',
      'node_modules/left/index.js',
      'web/.venv/lib/p.py',
    ]);
    let parent = first.tree;
    const rounds: [string, () => void][] = [
      ['nothing', () => {}],
      ['a file below node_modules changed', () => c.t.write('node_modules/left/index.js', 'left 2\n')],
      [
        'a package installed',
        () => {
          c.t.write('node_modules/right/index.js', 'right\n');
          c.t.write('node_modules/right/lib/deep.js', 'deep\n');
        },
      ],
      ['a file below the nested environment directory', () => c.t.write('web/.venv/lib/q.py', 'q\n')],
      ['an ignored file beside it stays out', () => c.t.write('web/more.txt', 'more\n')],
      ['an ignored log inside node_modules is held (the rules do not apply there)', () => c.t.write('node_modules/right/x.log', 'log\n')],
      ['a secret below node_modules is skipped as anywhere else', () => c.t.write('node_modules/right/.env', 'TOKEN=1\n')],
      ['a package removed', () => fs.rmSync(path.join(c.t.dir, 'node_modules', 'left'), { recursive: true })],
      ['a tracked file', () => c.t.write('a.txt', 'a 2\n')],
    ];
    let incremental = 0;
    for (const [label, change] of rounds) {
      change();
      const got = await check(c, parent, label);
      if (got.mode === 'incremental') incremental++;
      parent = got.tree;
    }
    const last = paths(c, parent);
    assert.ok(last.includes('node_modules/right/lib/deep.js') && last.includes('node_modules/right/x.log'), last.join(' '));
    assert.ok(last.includes('web/.venv/lib/q.py') && !last.includes('web/more.txt') && !last.includes('web/other.txt'), last.join(' '));
    assert.not.ok(
      last.some((p) => p.startsWith('node_modules/left/')),
      last.join(' '),
    );
    // The rounds are each a few paths: the engine took them without a full scan (the first after its start aside).
    assert.ok(
      incremental >= rounds.length - 1,
      `${incremental} of ${rounds.length} rounds incremental; last full: ${c.engine.stats.lastFullReason}`,
    );
  } finally {
    await c.engine.close();
    c.t.cleanup();
  }
});

test('environment directory replaced by a symlink: a full scan, equal to the full scan', async () => {
  const c = await setup();
  try {
    let parent = (await check(c, null, 'first')).tree;
    fs.mkdirSync(path.join(c.t.base, 'elsewhere'));
    fs.writeFileSync(path.join(c.t.base, 'elsewhere', 'index.js'), 'outside\n');
    fs.rmSync(path.join(c.t.dir, 'node_modules'), { recursive: true });
    fs.symlinkSync(path.join(c.t.base, 'elsewhere'), path.join(c.t.dir, 'node_modules'));
    const got = await check(c, parent, 'symlink');
    parent = got.tree;
    assert.not.ok(paths(c, parent).includes('node_modules/index.js'), 'nothing is read through the symlink');
    c.t.write('a.txt', 'a 3\n');
    await check(c, parent, 'after');
  } finally {
    await c.engine.close();
    c.t.cleanup();
  }
});

test('the environment directories change between two snapshots with no file changing (wrap --environment hands the engine its session settings): equal to the full scan', async () => {
  const files = { '.gitignore': 'node_modules/\n', 'a.txt': 'a\n', 'node_modules/p/index.js': 'p\n' };
  const c = await setup(files, null);
  try {
    const withEnv = { ...c.settings, environment: ['node_modules'] };
    let parent = (await check(c, null, 'first, no environment')).tree;
    parent = (await check(c, parent, 'environment node_modules added', withEnv)).tree;
    assert.ok(paths(c, parent).includes('node_modules/p/index.js'));
    c.t.write('node_modules/p/index.js', 'p 2\n');
    parent = (await check(c, parent, 'a file below it', withEnv)).tree;
    c.t.write('a.txt', 'a 2\n');
    parent = (await check(c, parent, 'environment dropped')).tree;
    assert.not.ok(paths(c, parent).includes('node_modules/p/index.js'));
  } finally {
    await c.engine.close();
    c.t.cleanup();
  }
});

test('an environment directory missing while its parent is there (removed, renamed away, never made) is no unreadable directory: equal to the full scan', async () => {
  const files = { '.gitignore': 'web/\n', 'a.txt': 'a\n', 'web/.venv/lib/p.py': 'p\n', 'web/x.txt': 'x\n' };
  const c = await setup(files, 'web/.venv');
  try {
    let parent = (await check(c, null, 'first')).tree;
    fs.renameSync(path.join(c.t.dir, 'web/.venv'), path.join(c.t.dir, 'web/.venv-old'));
    const renamed = await check(c, parent, 'renamed away');
    assert.equal(renamed.skipped, [], 'nothing skipped');
    parent = renamed.tree;
    fs.renameSync(path.join(c.t.dir, 'web/.venv-old'), path.join(c.t.dir, 'web/.venv'));
    parent = (await check(c, parent, 'renamed back')).tree;
    fs.rmSync(path.join(c.t.dir, 'web/.venv'), { recursive: true });
    const removed = await check(c, parent, 'removed');
    assert.equal(removed.skipped, [], 'nothing skipped');
  } finally {
    await c.engine.close();
    c.t.cleanup();
  }
});

test.run();
