// `agentsnap shadow import`: a directory agentsnap kept a shadow repository for (git/shadow.ts) became a git
// repository (`git init`); its sessions are carried into it, so undo, log and the rest go on where they were, and
// the shadow repository is removed. Objects and refs come over with `git fetch` from the shadow's git dir; the
// sessions' state (journals, private indexes) is copied. Nothing of the repository's own is overwritten: a
// session id it already has refuses the import before anything is changed.
import fs from 'node:fs';
import path from 'node:path';
import { errors } from '../base/errors.js';
import { sessionFiles, stateLayout } from '../base/state-dir.js';
import { openShadowRepo, type Repo } from '../git/repo.js';
import { excludePatterns, leftBehindHint, shadowLeftBehind } from '../git/shadow.js';
import { META_REF_PREFIX, STEP_REF_PREFIX } from './refs.js';
import { listSessions } from './selection.js';

export interface ShadowImportResult {
  /** The shadow repository carried over (and removed unless a dry run). */
  shadow: string;
  sessions: string[];
  /** The shadow's left-out patterns added to this repository's info/exclude (those it did not hold already). */
  excludes: string[];
  excludeFile: string;
  dryRun: boolean;
}

function sameBytes(a: string, b: string): boolean {
  try {
    return fs.readFileSync(a).equals(fs.readFileSync(b));
  } catch {
    // either journal missing or unreadable: not the same, so the clash is reported, never overwritten
    return false;
  }
}

/** Carries the sessions of the worktree's shadow repository into `repo` (a real one), then removes the shadow. */
export async function importShadow(repo: Repo, opts: { dryRun?: boolean } = {}): Promise<ShadowImportResult> {
  if (repo.shadow) {
    throw errors.needsGitRepository(`${repo.worktree} is in no git repository: there is nothing to import the shadow repository into.`, {
      hint: 'Run `git init` there first, then `agentsnap shadow import`.',
      data: { worktree: repo.worktree },
    });
  }
  const left = shadowLeftBehind(repo, { strict: true });
  if (left && !left.atTop) {
    throw errors.refused(
      `the shadow repository kept for ${left.shadow.worktree} cannot be carried into the repository at ${repo.worktree}.`,
      {
        hint: `${leftBehindHint(left, repo.worktree)} Nothing was changed.`,
        data: { shadow: left.shadow.dir, of: left.shadow.worktree, worktree: repo.worktree },
      },
    );
  }
  const shadow = left?.shadow;
  if (!shadow) {
    throw errors.nothingToDo(`agentsnap keeps no shadow repository for ${repo.worktree}: there is nothing to import.`, {
      hint: 'A shadow repository is kept for a directory that was in no git repository when agentsnap first ran there.',
      data: { worktree: repo.worktree },
    });
  }
  const from = await openShadowRepo(shadow, { env: repo.callerEnv });
  if (from.objectFormat !== repo.objectFormat) {
    throw errors.refused(
      `the shadow repository is a ${from.objectFormat} repository and ${repo.worktree} is ${repo.objectFormat}: its snapshots cannot be carried over.`,
      {
        hint: `Make the repository again with \`git init --object-format=${from.objectFormat}\` (before your first commit), or leave the sessions where they are.`,
        data: { shadow: shadow.dir, from: from.objectFormat, to: repo.objectFormat },
      },
    );
  }
  const sessions = await listSessions(from);
  const running = sessions.filter((s) => s.status === 'running' && !!s.owner);
  if (running.length > 0) {
    throw errors.busy(`session ${running.map((s) => s.id).join(', ')} of the shadow repository is still running.`, {
      hint: 'Let its agent finish (or stop it), then run `agentsnap shadow import` again.',
      data: { sessions: running.map((s) => s.id) },
    });
  }
  const ids = sessions.map((s) => s.id);
  // A session an interrupted import already carried over (its journal byte-identical) is not a clash: the import
  // goes on where it stopped.
  const carried = (id: string) => sameBytes(sessionFiles(from, id).journal, sessionFiles(repo, id).journal);
  const taken = ids.filter((id) => fs.existsSync(sessionFiles(repo, id).dir) && !carried(id));
  if (taken.length > 0) {
    throw errors.refused(`the repository already has session ${taken.join(', ')}, which the shadow repository has too.`, {
      hint: "Nothing was changed. Remove the repository's copy (`agentsnap discard` or `agentsnap gc`) first if it is a leftover.",
      data: { sessions: taken },
    });
  }
  // What the shadow left out (its info/exclude: node_modules/, dist/, …) stays out of this repository's snapshots
  // too: else the first snapshot here records it as a change, and an undo of it deletes it. Its lines go to the
  // repository's info/exclude (git's own syntax there, negations included), in a block that says where they came from.
  const excludeFile = path.join(repo.commonDir, 'info', 'exclude');
  const have = new Set(excludePatterns(excludeFile));
  const excludes = excludePatterns(path.join(shadow.gitDir, 'info', 'exclude')).filter((l) => !have.has(l));
  if (opts.dryRun) return { shadow: shadow.dir, sessions: ids, excludes, excludeFile, dryRun: true };
  // Objects and refs first (the order of every mutation: objects, then what points at them).
  await repo.git([
    '-c',
    'gc.auto=0',
    'fetch',
    '--quiet',
    '--no-tags',
    '--no-write-fetch-head',
    '--no-auto-gc',
    shadow.gitDir,
    `+${STEP_REF_PREFIX}*:${STEP_REF_PREFIX}*`,
    `+${META_REF_PREFIX}*:${META_REF_PREFIX}*`,
  ]);
  for (const [src, dst] of [
    [stateLayout.sessionsDir(from), stateLayout.sessionsDir(repo)],
    [stateLayout.agentSessionsDir(from), stateLayout.agentSessionsDir(repo)],
  ] as const) {
    if (!fs.existsSync(src)) continue;
    fs.mkdirSync(dst, { recursive: true, mode: 0o700 });
    for (const name of fs.readdirSync(src)) {
      // Carried already (an interrupted import), or the repository's own agent-session mapping: it stays.
      if (fs.existsSync(path.join(dst, name))) continue;
      // Copied aside, then renamed into place: a session is there whole or not at all (an import stopped by a
      // full disk leaves no half session to clash with the next attempt). Only directories and regular files are
      // carried (agentsnap's state holds nothing else it wrote; an agent may have put a link or a FIFO there).
      const aside = path.join(dst, `.importing-${name}-${process.pid}`);
      fs.rmSync(aside, { recursive: true, force: true });
      try {
        fs.cpSync(path.join(src, name), aside, {
          recursive: true,
          errorOnExist: true,
          force: false,
          filter: (p) => {
            const st = fs.lstatSync(p);
            return st.isDirectory() || st.isFile();
          },
        });
        fs.renameSync(aside, path.join(dst, name));
      } finally {
        fs.rmSync(aside, { recursive: true, force: true });
      }
    }
  }
  if (excludes.length > 0) {
    fs.mkdirSync(path.dirname(excludeFile), { recursive: true });
    const before = fs.existsSync(excludeFile) ? fs.readFileSync(excludeFile, 'utf8') : '';
    const block = `# agentsnap shadow import: what the shadow repository of this directory left out\n${excludes.join('\n')}\n`;
    fs.appendFileSync(excludeFile, `${before && !before.endsWith('\n') ? '\n' : ''}${block}`);
  }
  fs.rmSync(shadow.dir, { recursive: true, force: true });
  return { shadow: shadow.dir, sessions: ids, excludes, excludeFile, dryRun: false };
}
