// Public API of the hooks, backup-remote and doctor commands: validates what
// callers pass, opens the repository, calls one internal function each.
import { noteCommit, type CommitNote } from './history/notes.js';
import { errors } from './base/errors.js';
import { repoFor } from './session/context.js';
import { hooksStatus, installHooks, uninstallHooks, type HooksReport, type InstallResult } from './history/hooks-install.js';
import {
  addBackupRemote,
  fetchSnapshots,
  pushSnapshots,
  removeBackupRemote,
  type FetchResult,
  type PushResult,
  type RemoteAddResult,
} from './history/sync.js';
import { runDoctor, type DoctorReport } from './history/doctor.js';
import type { RepoOptions } from './api.js';

/** `agentsnap hooks install|uninstall|status`. */
export async function hooks(
  action: 'install' | 'uninstall' | 'status' | 'note-commit',
  opts: RepoOptions & { force?: boolean } = {},
): Promise<HooksReport | InstallResult | { note: CommitNote | null }> {
  const repo = await repoFor(opts);
  switch (action) {
    case 'install':
      return installHooks(repo, { force: !!opts.force });
    case 'uninstall':
      return uninstallHooks(repo);
    case 'status':
      return hooksStatus(repo);
    case 'note-commit':
      return { note: await noteCommit(repo) };
    default:
      throw errors.invalidArgument(`unknown hooks action ${JSON.stringify(action)}: use install, uninstall or status.`);
  }
}

/** `agentsnap remote add <name> [url]`. */
export async function remoteAdd(name: string, url: string | undefined, opts: RepoOptions = {}): Promise<RemoteAddResult> {
  return addBackupRemote(await repoFor(opts), name, url);
}

/** `agentsnap remote remove <name>`. */
export async function remoteRemove(name: string, opts: RepoOptions = {}): Promise<{ remote: string; wasBackup: boolean }> {
  return removeBackupRemote(await repoFor(opts), name);
}

/** `agentsnap push <remote>`. */
export async function push(remote: string, opts: RepoOptions = {}): Promise<PushResult> {
  return pushSnapshots(await repoFor(opts), remote);
}

/** `agentsnap fetch <remote>`. */
export async function fetch(remote: string, opts: RepoOptions = {}): Promise<FetchResult> {
  return fetchSnapshots(await repoFor(opts), remote);
}

/** `agentsnap doctor [--fix]`. */
export async function doctor(opts: RepoOptions & { fix?: boolean } = {}): Promise<DoctorReport> {
  return runDoctor(await repoFor(opts), { fix: !!opts.fix });
}
