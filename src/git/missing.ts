// Objects the user's own git may have deleted under agentsnap: `git gc
// --prune=now`, `git prune`, `repack -ad` delete whatever no ref, reflog or
// the user's index names, and agentsnap's private indexes and journals are
// none of those. Which of some object ids are gone, and whether a git failure
// says that an object it needed was gone.
import type { Repo } from './repo.js';

/** The ids among oids that name no object in the repository. */
export async function missingObjects(repo: Repo, oids: Iterable<string | null | undefined>): Promise<Set<string>> {
  const wanted = [...new Set([...oids].filter((o): o is string => !!o))];
  if (wanted.length === 0) return new Set();
  const res = await repo.git(['cat-file', '--batch-check=%(objectname)'], { input: wanted.join('\n') + '\n' });
  const missing = new Set<string>();
  for (const line of res.stdout.toString('utf8').split('\n')) {
    const m = /^(\S+) missing$/.exec(line);
    if (m?.[1]) missing.add(m[1]);
  }
  return missing;
}

/** What git 2.39 prints when an object it was given or that an index or tree names does not exist. */
const MISSING_OBJECT =
  /invalid object [0-7]+ [0-9a-f]+ for|nonexistent object|not a valid object( name)?|is not a valid '(tree|commit|blob)' object|bad object|unable to read( tree| blob)? [0-9a-f]{7,}|missing (blob|tree|commit) [0-9a-f]{7,}|Could not read [0-9a-f]{7,}|fatal: bad tree object|does not point to a valid object/i;

/** Whether a failure (an AgentsnapError from a git run, or anything else) says that an object was missing. */
export function isMissingObjectError(e: unknown): boolean {
  for (let at = e, depth = 0; at && depth < 5; at = (at as { cause?: unknown }).cause, depth++) {
    const data = (at as { data?: { stderr?: unknown } }).data;
    if (MISSING_OBJECT.test(`${at instanceof Error ? at.message : String(at)}\n${String(data?.stderr ?? '')}`)) return true;
  }
  return false;
}
