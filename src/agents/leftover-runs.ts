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
 * unreadable sessions directory has no leftovers.
 */
export function leftoverRuns<State extends { owner?: LockOwner }>(
  sessionsRoot: string,
  matches: (name: string) => boolean,
  readState: (entry: string) => State,
): LeftoverRun<State>[] {
  const found: LeftoverRun<State>[] = [];
  for (const session of readdirOrEmpty(sessionsRoot)) {
    const sessionDir = path.join(sessionsRoot, session);
    for (const name of readdirOrEmpty(sessionDir).filter(matches)) {
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

function readdirOrEmpty(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return []; // no such directory (no session yet), or not one: nothing left there
  }
}
