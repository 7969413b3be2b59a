// isomorphic-git's snapshot, run in a process of its own: in-process for
// isomorphic-git (its timing is taken here, around its calls), while the
// bench's own process stays small. A process that holds isomorphic-git's
// 100k-entry index and caches makes every process it spawns slower to start
// (fork copies its page tables), which would tax the hook and git subjects.
import fs from 'node:fs';
import * as isogit from 'isomorphic-git';

interface Init {
  dir: string;
  gitdir: string;
}

let opts: { fs: typeof fs; dir: string; gitdir: string; cache: object } | null = null;
const author = { name: 'Bench User', email: 'bench@example.com', timestamp: 1704067200, timezoneOffset: 0 };

async function snapshot(): Promise<number> {
  if (!opts) throw new Error('not initialised');
  const t0 = process.hrtime.bigint();
  const matrix = await isogit.statusMatrix({ ...opts, refresh: true });
  const add: string[] = [];
  for (const [file, , workdir, stage] of matrix) {
    // The index already matches the worktree when stage is "same as workdir" (2), or both equal HEAD (1, 1).
    if (stage === 2 || (stage === 1 && workdir === 1)) continue;
    if (workdir === 0) await isogit.remove({ ...opts, filepath: file });
    else add.push(file);
  }
  if (add.length) await isogit.add({ ...opts, filepath: add });
  await isogit.commit({ ...opts, message: 'checkpoint', author, committer: author });
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

process.on('message', (msg: { op: 'init'; init: Init } | { op: 'run' } | { op: 'exit' }) => {
  if (msg.op === 'init') {
    opts = { fs, dir: msg.init.dir, gitdir: msg.init.gitdir, cache: {} };
    process.send?.({ ok: true });
  } else if (msg.op === 'run') {
    snapshot().then(
      (ms) => process.send?.({ ms }),
      (e: unknown) => process.send?.({ error: e instanceof Error ? e.message : String(e) }),
    );
  } else process.exit(0);
});
