// Where a session lives: its refs (steps under refs/agent/<id>/<n>, the rest
// under refs/agentsnap/sessions/<id>/) and its files under the state dir.
// Names, and the listing of what exists (sessionIds, sessionRefs); nothing here writes.
import fs from 'node:fs';
import { createHash } from 'node:crypto';
import { sessionIdProblem } from '../base/ids.js';
import { type Session } from './model.js';
import { listRefs, type RefUpdate } from '../git/plumbing.js';
import type { Repo } from '../git/repo.js';
import { ensureStateDir, sessionFiles, stateLayout } from '../base/state-dir.js';

export const STEP_REF_PREFIX = 'refs/agent/';

export const META_REF_PREFIX = 'refs/agentsnap/';

/** The blame notes gc and `hooks note-commit` write (blame/notes.ts): a ref outside both prefixes that `gc --all` removes too. */
export const NOTES_REF = 'refs/notes/agentsnap';

/**
 * `git log --all` without agentsnap's commits: `--exclude` drops the refs it matches from the `--all` after it
 * (git's wildmatch without pathname rules, so `refs/agent*` covers `refs/agent/` and `refs/agentsnap/`). `init`
 * sets it as an alias of this repository (`git log-all`), which `init --remove` and `gc --all` take out again.
 */
export const LOG_ALL_ALIAS = { key: 'alias.log-all', value: `log --exclude=refs/agent* --exclude=${NOTES_REF} --all` } as const;

export function stepRef(session: string, step: number): string {
  return `${STEP_REF_PREFIX}${session}/${step}`;
}

export const SESSION_META_PREFIX = `${META_REF_PREFIX}sessions/`;

/** A ref agentsnap keeps for a session besides its steps: head, origin, ops/<k>, worktree-head. */
export function sessionMetaRef(session: string, name: string): string {
  return `${SESSION_META_PREFIX}${session}/${name}`;
}

export function headRef(session: string): string {
  return sessionMetaRef(session, 'head');
}

/**
 * Refs that name a snapshot's new objects from before the journal line that
 * names them: git's prune deletes what no ref names, and a journal line is not
 * one (see commitEvent). `keep/<i>`, one per distinct object of the update.
 */
export function keepRef(session: string, i: number): string {
  return sessionMetaRef(session, `keep/${i}`);
}

/** The session a ref belongs to (`refs/agent/<id>/…`, `refs/agentsnap/sessions/<id>/…`), or null. */
export function sessionOfRef(ref: string): string | null {
  const prefix = ref.startsWith(STEP_REF_PREFIX) ? STEP_REF_PREFIX : ref.startsWith(SESSION_META_PREFIX) ? SESSION_META_PREFIX : null;
  return prefix ? ref.slice(prefix.length).split('/')[0] || null : null;
}

/** Every ref agentsnap keeps for a session. */
export async function sessionRefs(repo: Repo, id: string): Promise<string[]> {
  const refs = [...(await listRefs(repo, `${STEP_REF_PREFIX}${id}/`)), ...(await listRefs(repo, `${SESSION_META_PREFIX}${id}/`))];
  return refs.map((r) => r.ref);
}

export interface SessionPaths {
  dir: string;
  index: string;
  journal: string;
  state: string;
  lock: string;
}

export function sessionsDir(repo: Repo): string {
  return stateLayout.sessionsDir(repo);
}

/** The ids of the sessions that have a journal in this repository, sorted. */
export function sessionIds(repo: Repo): string[] {
  let names: string[];
  try {
    names = fs.readdirSync(sessionsDir(repo));
  } catch (e) {
    // No session yet; an unreadable or replaced sessions dir is an error the user must see, not "no sessions".
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  return names.filter((n) => sessionIdProblem(n) === undefined && fs.existsSync(sessionPaths(repo, n).journal)).sort();
}

export function sessionPaths(repo: Repo, id: string): SessionPaths {
  return sessionFiles(repo, id);
}

export function worktreeKey(repo: Pick<Repo, 'worktree'>): string {
  return createHash('sha1').update(repo.worktree).digest('hex').slice(0, 16);
}

/** A directory of the state dir, created 0700 (a link in its place refused): see src/base/state-dir.ts. */
export function ensureDir(dir: string, root?: string): void {
  ensureStateDir(dir, root);
}

/** The refs a session's journal says it has: baseline, each step's latest snapshot, and the head. */
export function refsFor(s: Session): RefUpdate[] {
  const updates: RefUpdate[] = [
    { ref: stepRef(s.id, 0), value: s.baseline },
    { ref: headRef(s.id), value: s.head },
  ];
  for (const st of s.steps) {
    const commit = st.post ?? st.pre;
    if (commit) updates.push({ ref: stepRef(s.id, st.step), value: commit });
  }
  return updates;
}
