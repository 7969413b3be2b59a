// What a wrapper killed mid-run leaves behind: each adapter that injects
// through files of its own keeps a record of the run in the session's state
// directory, and the next run finishes the ones whose owner is gone.
import fs from 'node:fs';
import path from 'node:path';
import { ownerAlive, type LockOwner } from '../base/lock.js';

export interface LeftoverRun<State> {
  session: string;
  /** `<sessionsRoot>/<session>`. */
  sessionDir: string;
  /** The entry's path (`<sessionDir>/<name>`). */
  entry: string;
  state: State;
}

/**
 * The entries of every session directory under `sessionsRoot` whose name
 * `matches`, with their state (read by `readState`), whose owner has died.
 * An entry whose state cannot be read is skipped: left by an older agentsnap,
 * or kept with warnings already, it is the user's to look at. A missing or
 * missing sessions directory has no leftovers; an unreadable one is an error.
 */
export function leftoverRuns<State extends { owner?: LockOwner }>(
  sessionsRoot: string,
  matches: (name: string) => boolean,
  readState: (entry: string) => State,
): LeftoverRun<State>[] {
  const found: LeftoverRun<State>[] = [];
  let sessions: string[];
  try {
    sessions = fs.readdirSync(sessionsRoot);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    return found; // no session yet: nothing left behind
  }
  for (const session of sessions) {
    const sessionDir = path.join(sessionsRoot, session);
    let names: string[];
    try {
      names = fs.readdirSync(sessionDir);
    } catch {
      continue; // a session removed meanwhile, or not a directory: nothing of ours in it
    }
    for (const name of names.filter(matches)) {
      const entry = path.join(sessionDir, name);
      let state: State;
      try {
        state = readState(entry);
      } catch {
        continue; // unreadable state: see above
      }
      if (state.owner && !ownerAlive(state.owner)) found.push({ session, sessionDir, entry, state });
    }
  }
  return found;
}

/** The `<prefix>*.json` run records (JSON, with an owner) left by killed wrappers: the common case of leftoverRuns. */
export function leftoverRunRecords<State extends { owner?: LockOwner }>(sessionsRoot: string, prefix: string): LeftoverRun<State>[] {
  return leftoverRuns(
    sessionsRoot,
    (n) => n.startsWith(prefix) && n.endsWith('.json'),
    (f) => JSON.parse(fs.readFileSync(f, 'utf8')) as State,
  );
}
