// backup/ (above check/): agentsnap's history kept beyond one worktree, in
// a backup remote. Must not import the API or the CLI.
//
// Snapshot sync with a backup remote. A designated remote (git config
// agentsnap.backupRemote, multi-valued) receives refs/agent/*, each session's
// head (refs/agentsnap/sessions/<id>/head: an operation's result or a final
// snapshot that no step ref reaches yet) and each session's journal, carried as a git commit under refs/agentsnap/journals/<id>
// (agentsnap identity and trailers, tree = journal.jsonl). Fetching lands in
// refs/agentsnap/fetch/<remote>/ first; each fetched journal is then adopted
// into <common-dir>/agentsnap/sessions/<id>/journal.jsonl only when there is
// no local one or the local one is a prefix of it (a local journal with more
// events is never overwritten), and the step refs are set from it.
import fs from 'node:fs';
import { errors } from '../base/errors.js';
import { ensureStateDir, replaceStateFile } from '../base/state-dir.js';
import { assertSessionId, sessionIdProblem } from '../base/ids.js';
import { readJournal } from '../session/journal.js';
import { withLock } from '../base/lock.js';
import { foldJournal, type Session } from '../session/model.js';
import { commitTree, listRefs, resolveCommit, updateRefs, type RefUpdate } from '../git/plumbing.js';
import { refsFor, sessionIds, sessionPaths, META_REF_PREFIX, SESSION_META_PREFIX, STEP_REF_PREFIX } from '../session/session.js';
import type { Repo } from '../git/repo.js';

export const BACKUP_REMOTE_KEY = 'agentsnap.backupRemote';
export const JOURNAL_REF_PREFIX = `${META_REF_PREFIX}journals/`;
const FETCH_REF_PREFIX = `${META_REF_PREFIX}fetch/`;

export function journalRef(session: string): string {
  return `${JOURNAL_REF_PREFIX}${session}`;
}

function checkRemoteName(name: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name) || name.includes('..') || name.endsWith('.lock')) {
    throw errors.invalidArgument(`invalid remote name ${JSON.stringify(name)}: use letters, digits, ".", "_" and "-".`, {
      data: { remote: name },
    });
  }
  return name;
}

export async function backupRemotes(repo: Repo): Promise<string[]> {
  const res = await repo.git(['config', '--get-all', BACKUP_REMOTE_KEY], { okCodes: [1] });
  return res.stdout.toString('utf8').split('\n').filter(Boolean);
}

async function remoteUrl(repo: Repo, name: string): Promise<string | null> {
  const res = await repo.git(['config', '--get', `remote.${name}.url`], { okCodes: [1] });
  return res.code === 0 ? res.stdout.toString('utf8').trim() : null;
}

export interface RemoteAddResult {
  remote: string;
  url: string;
  /** `git remote add` was run. */
  created: boolean;
  /** It was already a backup remote. */
  alreadyBackup: boolean;
}

/** `agentsnap remote add <name> [url]`: designates a remote (created when a URL is given and it does not exist) as agentsnap's backup. */
export async function addBackupRemote(repo: Repo, name: string, url?: string): Promise<RemoteAddResult> {
  checkRemoteName(name);
  const existing = await remoteUrl(repo, name);
  let created = false;
  if (existing === null) {
    if (!url) {
      throw errors.invalidArgument(`there is no remote ${name}: give its URL.`, {
        hint: `agentsnap remote add ${name} <url>`,
        data: { remote: name },
      });
    }
    await repo.git(['remote', 'add', '--', name, url]);
    created = true;
  } else if (url && url !== existing) {
    throw errors.conflict(`remote ${name} already exists with URL ${existing}, not ${url}.`, {
      hint: `Leave the URL out to designate the existing remote, or pick another name.`,
      data: { remote: name, url: existing },
    });
  }
  const already = (await backupRemotes(repo)).includes(name);
  if (!already) await repo.git(['config', '--add', BACKUP_REMOTE_KEY, name]);
  return { remote: name, url: existing ?? url ?? '', created, alreadyBackup: already };
}

/** `agentsnap remote remove <name>`: the remote stays a git remote, it is just no longer a backup remote. */
export async function removeBackupRemote(repo: Repo, name: string): Promise<{ remote: string; wasBackup: boolean }> {
  checkRemoteName(name);
  const was = (await backupRemotes(repo)).includes(name);
  if (was) await repo.git(['config', '--unset-all', '--fixed-value', BACKUP_REMOTE_KEY, name]);
  return { remote: name, wasBackup: was };
}

async function requireBackup(repo: Repo, name: string): Promise<void> {
  checkRemoteName(name);
  if (!(await backupRemotes(repo)).includes(name)) {
    throw errors.refused(`${name} is not an agentsnap backup remote.`, {
      hint: `Designate it first: \`agentsnap remote add ${name}${(await remoteUrl(repo, name)) === null ? ' <url>' : ''}\` (snapshots and journals, with tool inputs and outputs, will be stored there).`,
      data: { remote: name },
    });
  }
}

/** The valid part of a session's journal (a torn last line is never exported). */
function journalBytes(file: string): Buffer | null {
  let buf: Buffer;
  try {
    buf = fs.readFileSync(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e; // a session removed meanwhile: nothing to export
    return null;
  }
  const read = readJournal(file);
  return buf.subarray(0, Math.min(read.size, buf.length));
}

/** Stores each local journal as a commit under refs/agentsnap/journals/<id>; returns the sessions whose commit changed. */
export async function exportJournals(repo: Repo): Promise<string[]> {
  const updates: RefUpdate[] = [];
  const changed: string[] = [];
  for (const id of sessionIds(repo)) {
    const bytes = journalBytes(sessionPaths(repo, id).journal);
    if (!bytes || bytes.length === 0) continue;
    const blob = (await repo.git(['hash-object', '-w', '--stdin'], { input: bytes })).stdout.toString('utf8').trim();
    const tree = (await repo.git(['mktree'], { input: `100644 blob ${blob}\tjournal.jsonl\n` })).stdout.toString('utf8').trim();
    const prev = await resolveCommit(repo, journalRef(id));
    if (prev) {
      const prevTree = (await repo.git(['rev-parse', `${prev}^{tree}`])).stdout.toString('utf8').trim();
      if (prevTree === tree) continue;
    }
    const commit = await commitTree(repo, {
      tree,
      parents: prev ? [prev] : [],
      message: `agentsnap: journal of session ${id}\n\nAgentsnap-Session: ${id}\nAgentsnap-Kind: journal\n`,
    });
    updates.push({ ref: journalRef(id), value: commit });
    changed.push(id);
  }
  await updateRefs(repo, updates);
  return changed;
}

export interface PushResult {
  remote: string;
  /** Refs sent (new or moved). */
  pushed: string[];
  upToDate: number;
  journalsUpdated: string[];
}

/** `agentsnap push <remote>`: sends refs/agent/*, the session heads and the journals to a backup remote. */
export async function pushSnapshots(repo: Repo, remote: string): Promise<PushResult> {
  await requireBackup(repo, remote);
  const journalsUpdated = await exportJournals(repo);
  const specs: string[] = [];
  if ((await listRefs(repo, STEP_REF_PREFIX)).length > 0) specs.push(`${STEP_REF_PREFIX}*:${STEP_REF_PREFIX}*`);
  if ((await listRefs(repo, JOURNAL_REF_PREFIX)).length > 0) specs.push(`${JOURNAL_REF_PREFIX}*:${JOURNAL_REF_PREFIX}*`);
  // Session heads: an operation's result (with the versions its restore kept) and a final
  // snapshot are reachable from no step ref until a later step.
  if ((await listRefs(repo, SESSION_META_PREFIX)).some((r) => r.ref.endsWith('/head')))
    specs.push(`${SESSION_META_PREFIX}*/head:${SESSION_META_PREFIX}*/head`);
  if (specs.length === 0) return { remote, pushed: [], upToDate: 0, journalsUpdated };
  // Not forced: step refs only move forward (post's first parent is pre), journal commits chain,
  // a session head only moves to a commit that descends from it.
  const res = await repo.git(['push', '--porcelain', '--', remote, ...specs], { okCodes: [1] });
  const pushed: string[] = [];
  const rejected: string[] = [];
  let upToDate = 0;
  for (const line of res.stdout.toString('utf8').split('\n')) {
    const m = /^(.)\t([^:]*):(\S+)\t(.*)$/.exec(line);
    if (!m) continue;
    const [, flag, , to, summary] = m;
    if (flag === '=') upToDate++;
    else if (flag === '!') rejected.push(`${to} (${summary})`);
    else pushed.push(to ?? '');
  }
  if (rejected.length > 0) {
    throw errors.conflict(
      `${remote} refused ${rejected.length} ref(s): ${rejected.slice(0, 5).join(', ')}${rejected.length > 5 ? ', …' : ''}.`,
      {
        hint: `The remote holds other values for them (recorded elsewhere?): \`agentsnap fetch ${remote}\` first.`,
        data: { remote, rejected, pushed },
      },
    );
  }
  if (res.code !== 0) {
    throw errors.refused(`git push to ${remote} failed: ${res.stderr.trim().split('\n').slice(-3).join(' / ')}`, {
      hint: 'A pre-push hook may have refused it; see its message above.',
      data: { remote, stderr: res.stderr },
    });
  }
  return { remote, pushed, upToDate, journalsUpdated };
}

export type FetchAction = 'added' | 'updated' | 'unchanged' | 'local-ahead' | 'diverged' | 'incomplete' | 'invalid';

export interface FetchedSession {
  session: string;
  action: FetchAction;
  /** Events in the journal now in effect locally. */
  events: number;
  note?: string;
}

export interface FetchResult {
  remote: string;
  sessions: FetchedSession[];
}

/** Commits a session's journal refers to (all must exist before the journal is adopted). */
function commitsOf(s: Session): string[] {
  const out = new Set<string>([s.baseline, s.head]);
  for (const st of s.steps) {
    if (st.pre) out.add(st.pre);
    if (st.post) out.add(st.post);
  }
  if (s.ended?.commit) out.add(s.ended.commit);
  return [...out];
}

async function missingObjects(repo: Repo, oids: string[]): Promise<string[]> {
  if (oids.length === 0) return [];
  const res = await repo.git(['cat-file', '--batch-check=%(objectname) %(objecttype)'], { input: oids.join('\n') + '\n' });
  return res.stdout
    .toString('utf8')
    .split('\n')
    .filter((l) => l.endsWith(' missing'))
    .map((l) => l.split(' ')[0] ?? '');
}

function writeFileAtomic(file: string, bytes: Buffer): void {
  replaceStateFile(file, bytes, { fsync: true });
}

/** `agentsnap fetch <remote>`: brings sessions recorded elsewhere into this repository. */
export async function fetchSnapshots(repo: Repo, remote: string): Promise<FetchResult> {
  await requireBackup(repo, remote);
  const staging = `${FETCH_REF_PREFIX}${remote}/`;
  await repo.git([
    'fetch',
    '--no-tags',
    '--no-write-fetch-head',
    '--quiet',
    '--',
    remote,
    `+${STEP_REF_PREFIX}*:${staging}agent/*`,
    `+${JOURNAL_REF_PREFIX}*:${staging}journals/*`,
    `+${SESSION_META_PREFIX}*/head:${staging}heads/*`,
  ]);
  const sessions: FetchedSession[] = [];
  try {
    for (const { ref, oid } of await listRefs(repo, `${staging}journals/`)) {
      const id = ref.slice(`${staging}journals/`.length);
      if (sessionIdProblem(id) !== undefined) {
        sessions.push({ session: id, action: 'invalid', events: 0, note: 'not a valid session id; ignored' });
        continue;
      }
      sessions.push(await adoptJournal(repo, assertSessionId(id), oid));
    }
  } finally {
    // The staging refs only carried the objects; adopted sessions now have their own refs.
    const leftovers = await listRefs(repo, staging);
    await updateRefs(
      repo,
      leftovers.map((r) => ({ ref: r.ref, value: null })),
    );
  }
  return { remote, sessions };
}

async function adoptJournal(repo: Repo, id: string, journalCommit: string): Promise<FetchedSession> {
  const remoteBytes = (await repo.git(['cat-file', 'blob', `${journalCommit}:journal.jsonl`])).stdout;
  const p = sessionPaths(repo, id);
  ensureStateDir(p.dir);
  return withLock(p.lock, { purpose: 'fetch session' }, async () => {
    const local = journalBytes(p.journal);
    const count = (b: Buffer) =>
      b
        .toString('utf8')
        .split('\n')
        .filter((l) => l.trim() !== '').length;
    if (local && local.length > 0) {
      if (local.equals(remoteBytes)) {
        await updateRefs(repo, [{ ref: journalRef(id), value: journalCommit }]);
        return { session: id, action: 'unchanged', events: count(local) };
      }
      if (local.length > remoteBytes.length && local.subarray(0, remoteBytes.length).equals(remoteBytes)) {
        return { session: id, action: 'local-ahead', events: count(local), note: 'the local journal has more events; kept it' };
      }
      if (!(remoteBytes.length > local.length && remoteBytes.subarray(0, local.length).equals(local))) {
        return {
          session: id,
          action: 'diverged',
          events: count(local),
          note: 'the local journal differs from the fetched one; kept the local one',
        };
      }
    }
    // Parse a copy of the fetched journal through the normal reader (never trust it blindly).
    const tmp = `${p.journal}.fetched-${process.pid}`;
    fs.rmSync(tmp, { force: true }); // a link planted at the name is removed, never written through
    replaceStateFile(tmp, remoteBytes);
    let session: Session | null;
    try {
      session = foldJournal(readJournal(tmp).events);
    } finally {
      fs.rmSync(tmp, { force: true });
    }
    if (!session || session.id !== id) {
      return { session: id, action: 'invalid', events: 0, note: 'the fetched journal does not describe this session; ignored' };
    }
    const missing = await missingObjects(repo, commitsOf(session));
    if (missing.length > 0) {
      return { session: id, action: 'incomplete', events: 0, note: `${missing.length} snapshot(s) it refers to were not fetched; ignored` };
    }
    // Journal first (the truth), then refs; state.json is a cache rebuilt from the journal.
    writeFileAtomic(p.journal, remoteBytes);
    fs.rmSync(p.state, { force: true });
    await updateRefs(repo, [...refsFor(session), { ref: journalRef(id), value: journalCommit }]);
    return { session: id, action: local && local.length > 0 ? 'updated' : 'added', events: count(remoteBytes) };
  });
}
