// What a tool call does to the worktree, for every subject of one row alike:
// nothing (a read), edit one tracked file, or create 100 new files. Subjects
// share the worktree but each sees only its own change: each edits its own
// file, and the files each subject created are moved aside (a rename inside
// .git, same file system, stat data kept) while the others take their
// samples, so every snapshot in a row handles exactly the same amount of work.
import fs from 'node:fs';
import path from 'node:path';
import { git, type BenchEnv } from './measure.js';
import type { BenchRepo } from './repos.js';

export type ChangeKind = 'none' | 'edit' | 'create';

export interface Change {
  kind: ChangeKind;
  /** Untimed, before a subject's sample: the worktree as that subject last snapshotted it. */
  prepare(subject: string): void;
  /** The paths (from the top of the worktree) the tool call writes in subject's sample i. */
  targets(subject: string, i: number): string[];
  /** The tool's own work for subject's sample i (untimed). */
  apply(subject: string, i: number): void;
  /** Puts the repository back as committed. */
  cleanup(): void;
}

export const CREATE_COUNT = 100;
const CREATED_DIR = 'bench-created';

const slug = (subject: string) => subject.replace(/[^a-z0-9]+/gi, '-').toLowerCase();

/**
 * Every `step`-th of the NUL-separated names `accept` lets through (the one at
 * `phase` in each step), at most `count`, with step = max(1, floor(accepted /
 * divisor)): the same picks as filtering an array of the names, without one
 * (at 1M files `ls-files` lists ~400k .ts files; only the string is held).
 */
export function spreadPick(
  nul: string,
  count: number,
  divisor: number,
  phase: 'first' | 'last',
  accept: (name: string) => boolean,
): string[] {
  const each = (fn: (name: string) => boolean) => {
    for (let start = 0; start < nul.length; ) {
      let end = nul.indexOf('\0', start);
      if (end < 0) end = nul.length;
      const name = nul.slice(start, end);
      start = end + 1;
      if (name && accept(name) && !fn(name)) return;
    }
  };
  let accepted = 0;
  each(() => (accepted++, true));
  const step = Math.max(1, Math.floor(accepted / divisor));
  const want = phase === 'first' ? 0 : step - 1;
  const picked: string[] = [];
  let i = 0;
  each((name) => {
    if (i++ % step === want) picked.push(name);
    return picked.length < count;
  });
  return picked;
}

/** Tracked files other than the repository's edit target, spread over the tree, for subjects that need a file of their own. */
function otherFiles(env: BenchEnv, repo: BenchRepo, count: number): string[] {
  const names = git(env, repo.dir, ['ls-files', '-z', '--', '*.ts']);
  return spreadPick(names, count, count + 1, 'last', (f) => f !== repo.editFile && f.split('/').length >= 3);
}

export function makeChange(kind: ChangeKind, env: BenchEnv, repo: BenchRepo): Change {
  if (kind === 'none') {
    return { kind, prepare: () => undefined, targets: () => [], apply: () => undefined, cleanup: () => undefined };
  }
  if (kind === 'edit') {
    // agentsnap edits the repository's edit target; every other subject gets its own file.
    const spare = otherFiles(env, repo, 8);
    const assigned = new Map<string, { rel: string; original: string }>();
    const fileOf = (subject: string) => {
      let f = assigned.get(subject);
      if (!f) {
        const rel = subject === 'agentsnap' ? repo.editFile : spare[assigned.size];
        if (!rel) throw new Error('not enough tracked files for the edit subjects');
        f = { rel, original: rel === repo.editFile ? repo.editOriginal : git(env, repo.dir, ['cat-file', 'blob', `HEAD:${rel}`]) };
        assigned.set(subject, f);
      }
      return f;
    };
    return {
      kind,
      prepare: () => undefined,
      targets: (subject) => [fileOf(subject).rel],
      apply: (subject, i) => {
        const f = fileOf(subject);
        fs.writeFileSync(path.join(repo.dir, f.rel), `${f.original}// edited by the bench: ${subject} ${i} ${process.hrtime.bigint()}\n`);
      },
      cleanup: () => {
        for (const f of assigned.values()) fs.writeFileSync(path.join(repo.dir, f.rel), f.original);
      },
    };
  }
  const top = path.join(repo.dir, CREATED_DIR);
  const aside = path.join(repo.dir, '.git', 'bench-aside');
  const rels = (subject: string, i: number) =>
    Array.from({ length: CREATE_COUNT }, (_, k) => `${CREATED_DIR}/${slug(subject)}/${i}/${k % 10}/new-${k}.ts`);
  return {
    kind,
    prepare: (subject) => {
      fs.mkdirSync(top, { recursive: true });
      fs.mkdirSync(aside, { recursive: true });
      const own = slug(subject);
      for (const e of fs.readdirSync(top)) if (e !== own) fs.renameSync(path.join(top, e), path.join(aside, e));
      if (fs.existsSync(path.join(aside, own))) fs.renameSync(path.join(aside, own), path.join(top, own));
    },
    targets: rels,
    apply: (subject, i) => {
      const stamp = process.hrtime.bigint();
      rels(subject, i).forEach((rel, k) => {
        const abs = path.join(repo.dir, rel);
        fs.mkdirSync(path.dirname(abs), { recursive: true });
        const body = Array.from({ length: 20 }, (_, l) => `export const value${k}_${l} = '${subject} ${i} ${k} ${l} ${stamp}';`).join('\n');
        fs.writeFileSync(abs, `// created by the bench\n${body}\n`);
      });
    },
    cleanup: () => {
      fs.rmSync(top, { recursive: true, force: true });
      fs.rmSync(aside, { recursive: true, force: true });
    },
  };
}
