// One command's context (or one served call's): the repository, its settings
// read once, and how this command snapshots the worktree, writes commits and
// moves refs. Built once at the entry (the CLI's API call, a hook, wrap, the
// warm server for each call it serves) and passed down explicitly: the session
// layer receives these interfaces (defined in snapshot/ and git/) and never
// looks for another way to do the same thing.
import { loadSettings, type Settings } from '../settings/settings.js';
import type { Repo } from '../git/repo.js';
import { gitObjectWriter, gitRefStore, type ObjectWriter, type RefStore } from '../git/writers.js';
import { scanSnapshotter, type Snapshotter } from '../snapshot/snapshotter.js';

export interface Context {
  readonly repo: Repo;
  readonly settings: Settings;
  readonly snapshotter: Snapshotter;
  readonly objects: ObjectWriter;
  readonly refs: RefStore;
}

/** A command's context without a server: full scans, one git process a commit or ref transaction. */
export function plainContext(repo: Repo, settings: Settings): Context {
  return { repo, settings, snapshotter: scanSnapshotter(repo), objects: gitObjectWriter(repo), refs: gitRefStore(repo) };
}

/** plainContext with the settings read now (the one read of this command). */
export async function openContext(repo: Repo): Promise<Context> {
  return plainContext(repo, await loadSettings(repo));
}

/**
 * How a host that keeps a repository open (the warm server) gives each call its context: its own for a call in
 * its worktree with its git environment, a plain one (openContext) for any other.
 */
export type ContextOpener = (cwd: string, env: NodeJS.ProcessEnv) => Promise<Context>;
