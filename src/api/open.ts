// The one way an entry point (the API, a hook, the MCP tools, the page's server) opens its repository. It sits in
// the API layer, above server/: the warm server's opener it calls is then a call downward at run time, as the
// import graph says (test/server/hook-path.test.ts).
import { openRepo, type OpenRepoOptions, type Repo } from '../git/repo.js';
import { openContext, type Context, type ContextOpener } from '../session/context.js';

/** Where a command runs: a directory in a worktree, its environment, and how a host that keeps a repository open gives a call its context. */
export interface RepoLocation {
  /** Directory inside the worktree (default: process.cwd()). */
  cwd?: string | undefined;
  /** Environment to read AGENTSNAP_* and git variables from (default: process.env). */
  env?: NodeJS.ProcessEnv | undefined;
  /** The warm server's opener (its repository kept open, its engine); absent: the repository is opened afresh. */
  openContext?: ContextOpener | undefined;
  /** In a directory in no git repository, whether a shadow repository is made when there is none (a command that snapshots). */
  shadow?: 'find' | 'create' | undefined;
}

/**
 * How an entry point opens its repository: through the
 * host's opener when it has one (the warm server: its cached repository), else afresh. Every entry point comes here,
 * so whether a call uses the server's repository is decided in this one place.
 */
export async function repoFor(at: RepoLocation): Promise<Repo> {
  if (at.openContext) return (await at.openContext(at.cwd ?? process.cwd(), at.env ?? process.env)).repo;
  return openRepo(at.cwd ?? process.cwd(), openOptions(at));
}

/** The command's context: the host's (the warm server's), else the repository of `cwd` with its settings read once. */
export async function contextFor(at: RepoLocation): Promise<Context> {
  if (at.openContext) return at.openContext(at.cwd ?? process.cwd(), at.env ?? process.env);
  return openContext(await openRepo(at.cwd ?? process.cwd(), openOptions(at)));
}

function openOptions(at: RepoLocation): OpenRepoOptions {
  return { ...(at.env ? { env: at.env } : {}), ...(at.shadow ? { shadow: at.shadow } : {}) };
}
