// Public API of the hooks, backup-remote and doctor commands: validates what
// callers pass, opens the repository, calls one internal function each.
import { noteCommit, type CommitNote } from '../blame/notes.js';
import { asCaller, errors } from '../base/errors.js';
import { repoFor } from './open.js';
import { hooksStatus, installHooks, uninstallHooks, type HooksReport, type InstallResult } from '../install/git-hooks.js';
import {
  addBackupRemote,
  fetchSnapshots,
  pushSnapshots,
  removeBackupRemote,
  type FetchResult,
  type PushResult,
  type RemoteAddResult,
} from '../backup/sync.js';
import { runDoctor, type DoctorReport } from '../doctor/doctor.js';
import type { RepoOptions } from './api.js';

/** A name the caller must give (a remote's): a non-empty string. */
function requireName(value: unknown, what: string): string {
  if (typeof value !== 'string' || value === '') throw errors.invalidArgument(`name the ${what}, not ${JSON.stringify(value)}.`);
  return value;
}

const HOOKS_ACTIONS = ['install', 'uninstall', 'status', 'note-commit'] as const;

/** `agentsnap hooks install|uninstall|status`. */
export function hooks(
  action: 'install' | 'uninstall' | 'status' | 'note-commit',
  opts: RepoOptions & { force?: boolean; strict?: boolean | undefined; commits?: string[] } = {},
): Promise<HooksReport | InstallResult | { note: CommitNote | null }> {
  return asCaller('hooks', async () => {
    if (!HOOKS_ACTIONS.includes(action))
      throw errors.invalidArgument(`unknown hooks action ${JSON.stringify(action)}: use install, uninstall or status.`);
    if (opts.commits?.length && action !== 'note-commit')
      throw errors.invalidArgument(`hooks ${action} takes no commits (${opts.commits.join(' ')}): only note-commit does.`);
    if (opts.strict !== undefined && action !== 'install')
      throw errors.invalidArgument(`--${opts.strict ? '' : 'no-'}strict goes with \`hooks install\`.`);
    const repo = await repoFor(opts);
    if (action === 'install')
      return installHooks(repo, { force: !!opts.force, ...(opts.strict !== undefined ? { strict: opts.strict } : {}) });
    if (action === 'uninstall') return uninstallHooks(repo);
    if (action === 'status') return hooksStatus(repo);
    // HEAD, or each commit named (an older version's post-rewrite hook names a rebase's): the last one's note is returned.
    let note: CommitNote | null = null;
    for (const commit of opts.commits?.length ? opts.commits : ['HEAD']) note = await noteCommit(repo, commit);
    return { note };
  });
}

/** `agentsnap remote add <name> [url]`. */
export function remoteAdd(name: string, url: string | undefined, opts: RepoOptions = {}): Promise<RemoteAddResult> {
  return asCaller('remoteAdd', async () => {
    const remote = requireName(name, 'remote');
    return addBackupRemote(await repoFor(opts), remote, url);
  });
}

/** `agentsnap remote remove <name>`. */
export function remoteRemove(name: string, opts: RepoOptions = {}): Promise<{ remote: string; wasBackup: boolean }> {
  return asCaller('remoteRemove', async () => {
    const remote = requireName(name, 'remote');
    return removeBackupRemote(await repoFor(opts), remote);
  });
}

/** `agentsnap push <remote>`. */
export function push(remote: string, opts: RepoOptions = {}): Promise<PushResult> {
  return asCaller('push', async () => {
    const name = requireName(remote, 'remote');
    return pushSnapshots(await repoFor(opts), name);
  });
}

/** `agentsnap fetch <remote>`. */
export function fetch(remote: string, opts: RepoOptions = {}): Promise<FetchResult> {
  return asCaller('fetch', async () => {
    const name = requireName(remote, 'remote');
    return fetchSnapshots(await repoFor(opts), name);
  });
}

/** `agentsnap doctor [--fix]`. */
export function doctor(opts: RepoOptions & { fix?: boolean } = {}): Promise<DoctorReport> {
  return asCaller('doctor', async () => runDoctor(await repoFor(opts), { fix: !!opts.fix }));
}
