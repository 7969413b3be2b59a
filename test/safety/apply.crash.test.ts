// `apply` SIGKILLed at named points of its restore (no timing luck: the child
// kills itself from the restore engine's hooks), then `agentsnap apply` run
// again: it must exit 0 and leave the worktree exactly as the session's, with
// no restore aside left behind and nothing lost (test/safety/crash.test.ts does the
// same at random moments: "apply trial 2 seed 20240613 kill=group@196ms").
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { cli, refsUnder, ROOT, runProcess, tempRepo, treeFiles, worktreeFiles, type TempRepo } from '../support/helpers.js';
import { openRepo } from '../../src/git/repo.js';
import { startWorktreeSession } from '../../src/worktrees/worktree.js';
import { restoreAsideName } from '../../src/base/fsutil.js';

const FILES = { 'a.txt': 'a before\n', 'del.txt': 'deleted by the agent\n', 'd/b.txt': 'b before\n', 'keep.txt': 'kept\n' };

/** A worktree session that edits a.txt and d/b.txt, deletes del.txt and adds new.txt; snapshotted. */
async function session(r: TempRepo, id: string): Promise<string> {
  const repo = await openRepo(r.dir, { env: r.env });
  const wt = (await startWorktreeSession(repo, { session: id })).meta.path;
  fs.writeFileSync(path.join(wt, 'a.txt'), 'a by the agent\n');
  fs.writeFileSync(path.join(wt, 'd', 'b.txt'), 'b by the agent\n');
  fs.rmSync(path.join(wt, 'del.txt'));
  fs.writeFileSync(path.join(wt, 'new.txt'), 'new\n');
  const snap = await cli(r, ['snap', '--session', id, '-m', 'agent work'], { cwd: wt });
  assert.is(snap.code, 0, snap.stderr);
  return wt;
}

type Hook = 'beforeReplace' | 'afterCheck' | 'afterWrites';

/** Runs applySession in a child process that SIGKILLs itself at `hook` of path `at` (afterWrites: once everything is written, before the journal event). */
async function killedApply(r: TempRepo, id: string, hook: Hook, at: string): Promise<void> {
  const script = path.join(r.base, 'killed-apply.mts');
  const src = (m: string) => JSON.stringify(path.join(ROOT, 'src', m));
  fs.writeFileSync(
    script,
    `import { openRepo } from ${src('git/repo.ts')};
import { applySession } from ${src('worktrees/parallel.ts')};
const repo = await openRepo(${JSON.stringify(r.dir)}, { env: process.env });
const kill = () => process.kill(process.pid, 'SIGKILL');
await applySession(repo, ${JSON.stringify(id)}, ${hook === 'afterWrites' ? '{ afterWrites: kill }' : `{ restoreHooks: { ${hook}: (rel) => { if (rel === ${JSON.stringify(at)}) kill(); } } }`});
process.exit(3);
`,
  );
  const res = await runProcess(process.execPath, ['--import', 'tsx', script], { cwd: ROOT, env: r.env });
  assert.is(res.code, 128, `the child was killed: ${res.code} ${res.stderr}`);
}

/** The paths on which two file sets differ, with both contents. */
function differences(got: Map<string, { mode: string; content: Buffer }>, want: Map<string, { mode: string; content: Buffer }>): string[] {
  const out: string[] = [];
  for (const [p, f] of got) {
    const w = want.get(p);
    if (!w) out.push(`+${p} (${JSON.stringify(f.content.toString())})`);
    else if (!w.content.equals(f.content) || w.mode !== f.mode)
      out.push(`~${p} (${JSON.stringify(f.content.toString())} instead of ${JSON.stringify(w.content.toString())})`);
  }
  for (const p of want.keys()) if (!got.has(p)) out.push(`-${p}`);
  return out;
}

/** Every version of `rel`'s bytes that some safety snapshot holds. */
function inSafetySnapshots(r: TempRepo, body: string): boolean {
  for (const commit of refsUnder(r, 'refs/agentsnap/safety/').values()) {
    for (const f of treeFiles(r, commit).values()) if (f.content.toString() === body) return true;
  }
  return false;
}

async function appliedAgain(r: TempRepo, id: string, wt: string, what: string): Promise<void> {
  const again = await cli(r, ['apply', id]);
  assert.is(again.code, 0, `${what}: the next apply: ${again.stderr}`);
  const diff = differences(worktreeFiles(r), worktreeFiles({ dir: wt } as TempRepo));
  assert.equal(diff, [], `${what}: the worktree is the applied result (next apply said: ${again.stdout.trim()})`);
  for (const body of Object.values(FILES))
    assert.ok(inSafetySnapshots(r, body), `${what}: ${JSON.stringify(body)} is in a safety snapshot`);
}

const POINTS: { hook: Hook; at: string; what: string }[] = [
  { hook: 'beforeReplace', at: 'del.txt', what: 'killed before the first deletion' },
  { hook: 'afterCheck', at: 'del.txt', what: 'killed while the deleted file is aside' },
  { hook: 'beforeReplace', at: 'd/b.txt', what: 'killed between the writes' },
  { hook: 'afterCheck', at: 'a.txt', what: 'killed while an edited file is aside (the path is empty)' },
  { hook: 'afterCheck', at: 'd/b.txt', what: 'killed while an edited file in a directory is aside' },
  { hook: 'beforeReplace', at: 'new.txt', what: 'killed before the last write' },
  { hook: 'afterWrites', at: '', what: 'killed after the last write, before the journal event' },
];

for (const p of POINTS) {
  test(`apply ${p.what} (${p.hook} ${p.at}): applying again completes it, no aside left, nothing lost; apply --undo takes all of it back`, async () => {
    const r = tempRepo({ files: FILES });
    try {
      const wt = await session(r, 's1');
      await killedApply(r, 's1', p.hook, p.at);
      await appliedAgain(r, 's1', wt, p.what);
      // apply --undo takes the whole apply back (what the killed run wrote too), to the bytes.
      const undo = await cli(r, ['apply', '--undo']);
      assert.is(undo.code, 0, `${p.what}: apply --undo: ${undo.stderr}`);
      assert.equal(
        differences(worktreeFiles(r), new Map(Object.entries(FILES).map(([k, v]) => [k, { mode: '100644', content: Buffer.from(v) }]))),
        [],
        `${p.what}: the worktree after apply --undo is as before the apply`,
      );
    } finally {
      r.cleanup();
    }
  });
}

test('apply killed after installing an edited file, before dropping its aside: applying again completes it, no aside left', async () => {
  // No hook sits between the install and the drop: the state such a kill leaves, made by hand
  // (the new version at the path, the old one under an aside name whose writer is gone).
  const r = tempRepo({ files: FILES });
  try {
    const wt = await session(r, 's1');
    fs.writeFileSync(path.join(r.dir, 'a.txt'), 'a by the agent\n');
    fs.writeFileSync(path.join(r.dir, restoreAsideName('a.txt', 999999999, '0123abcd')), FILES['a.txt']);
    await appliedAgain(r, 's1', wt, 'killed before the aside was dropped');
  } finally {
    r.cleanup();
  }
});

test.run();
