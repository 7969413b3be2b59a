// The detached process that packs an ended session's objects after `wrap`
// has exited (maintainInBackground in maintenance.ts starts it): `node
// maintain-main.js <session>` in the session's worktree, with the wrapper's
// environment. Only an entry point: nothing imports it. It prints nothing and
// exits 0 whatever happens (packing is an optimisation; what it could not
// pack stays loose for the next maintenance).
import { assertSessionId } from '../base/ids.js';
import { openRepo } from '../git/repo.js';
import { maintainEndedSession } from './maintenance.js';

async function main(): Promise<void> {
  const id = assertSessionId(process.argv[2] ?? '');
  const repo = await openRepo(process.cwd(), { env: process.env });
  await maintainEndedSession(repo, id);
}

main().catch(() => undefined); // a background helper with nobody to tell: objects left loose lose nothing
