// `agentsnap doctor`: checks the installation and agentsnap's state in this
// repository and names, for each problem, the command that fixes it. With
// fix: true it also repairs what is safe to repair (dead owners' locks, refs
// that disagree with their journal, sessions whose wrapper died, prunable
// worktrees); it never deletes snapshots.
import fs from 'node:fs';
import path from 'node:path';
import { checkGitVersion, type Repo } from '../git/repo.js';
import { hooksStatus } from '../install/git-hooks.js';
import { appendEvent, eventBase, readJournal, type JournalEvent } from '../session/journal.js';
import { acquireLock, ownerAlive } from '../base/lock.js';
import { foldJournal, type Session } from '../session/model.js';
import { listRefs, updateRefs, type RefUpdate } from '../git/plumbing.js';
import { missingObjects } from '../git/missing.js';
import {
  headRef,
  refsFor,
  sessionIds,
  sessionOfRef,
  sessionPaths,
  sessionsDir,
  SESSION_META_PREFIX,
  STEP_REF_PREFIX,
  wrapperGone,
} from '../session/session.js';
import { isAgentsnapError, type AgentsnapError } from '../base/errors.js';
import { diskUse } from '../base/fsutil.js';
import { isAgentsnapHook, type HookGroup } from '../agents/settings-file.js';
import { ADAPTERS, AGENT_REPO_REFS, adapterOf } from '../agents/registry.js';
import { onPath } from '../base/shell.js';
import { serverInfo } from '../server/server.js';
import { readEngineFailure, readWatchState } from '../server/watch-state.js';
import { readStateFile, stateLayout } from '../base/state-dir.js';

export type CheckStatus = 'ok' | 'info' | 'problem';

/**
 * What a check is about: `required`, what agentsnap needs to work (a failure is broken: a problem, exit 1);
 * `optional`, set-up agentsnap works without (not done: information with what it would give, never a problem;
 * done and then broken, such as hooks another tool replaced: a problem).
 */
export type CheckClass = 'required' | 'optional';

export interface Check {
  /** Stable identifier of the kind of check (git, hooks, integration, session, lock, worktree, disk, refs). */
  check: string;
  status: CheckStatus;
  class: CheckClass;
  message: string;
  /** The command that fixes it (problems only). */
  fix?: string;
  /** The command that sets it up (optional set-up not done). */
  setup?: string;
  data?: Record<string, unknown>;
}

export interface DoctorReport {
  healthy: boolean;
  problems: number;
  checks: Check[];
  /** What --fix did. */
  fixed: string[];
}

const FIX = 'agentsnap doctor --fix';

async function checkGit(repo: Repo): Promise<Check> {
  try {
    const v = await checkGitVersion(repo.env);
    return { check: 'git', status: 'ok', class: 'required', message: `git ${v}`, data: { version: v } };
  } catch (e) {
    const msg = isAgentsnapError(e) ? e.message : String(e);
    return { check: 'git', status: 'problem', class: 'required', message: msg, fix: 'upgrade git to 2.30 or newer' };
  }
}

async function checkHooks(repo: Repo): Promise<Check> {
  const r = await hooksStatus(repo);
  if (r.installed) {
    const chained = r.hooks.filter((h) => h.chained).map((h) => h.name);
    return {
      check: 'hooks',
      status: 'ok',
      class: 'optional',
      message: `hooks installed and current in ${r.dir}${r.strict ? ' (strict)' : ''}${chained.length ? ` (chaining ${chained.join(', ')})` : ''}`,
      data: { dir: r.dir },
    };
  }
  // None of agentsnap's hooks there: never installed (or uninstalled), an optional set-up. Some of them there: an
  // install another tool partly replaced or an older version left, so the protection the user set up is broken.
  const ours = r.retired.length > 0 || r.hooks.some((h) => h.state === 'current' || h.state === 'outdated');
  if (!ours) {
    return {
      check: 'hooks',
      status: 'info',
      class: 'optional',
      message: `the git hooks are not installed in ${r.dir}: they refuse a commit, merge or push that would put an agent snapshot into your history (\`--strict\`: a branch set to one too), and keep \`blame\`'s answer for committed lines once their session is removed`,
      setup: 'agentsnap hooks install',
      data: { dir: r.dir, hooks: r.hooks },
    };
  }
  const bad = [
    ...r.hooks.filter((h) => h.state !== 'current' && !(h.strictOnly && h.state === 'missing')).map((h) => `${h.name} ${h.state}`),
    ...r.retired.map((f) => `${path.basename(f)} left by an older agentsnap`),
  ];
  return {
    check: 'hooks',
    status: 'problem',
    class: 'optional',
    message: `git hooks that keep snapshots out of real history are not all installed in ${r.dir}: ${bad.join(', ')}`,
    fix: 'agentsnap hooks install',
    data: { dir: r.dir, hooks: r.hooks },
  };
}

/** Agent settings files that may hold agentsnap hooks (presence is reported, never judged). */
function integrationFiles(repo: Repo): { agent: string; file: string }[] {
  const home = repo.callerEnv.HOME ?? '';
  const agents = Object.values(ADAPTERS);
  // The project's files first, then the user's (each adapter names its agent's).
  return [
    ...agents.flatMap((a) =>
      (a.hookSettingsFiles?.project ?? []).map((rel) => ({ agent: a.name as string, file: path.join(repo.worktree, rel) })),
    ),
    ...(home
      ? agents.flatMap((a) => (a.hookSettingsFiles?.user ?? []).map((rel) => ({ agent: a.name as string, file: path.join(home, rel) })))
      : []),
  ];
}

function checkIntegrations(repo: Repo): Check[] {
  const found: { agent: string; file: string }[] = [];
  for (const f of integrationFiles(repo)) {
    try {
      const st = fs.statSync(f.file);
      if (!st.isFile() || st.size > 1024 * 1024) continue;
      if (fs.readFileSync(f.file, 'utf8').includes('agentsnap')) found.push(f);
    } catch {
      /* not there */
    }
  }
  if (found.length === 0) {
    return [
      {
        check: 'integration',
        status: 'info',
        class: 'optional',
        message: 'no agent settings file mentions agentsnap (fine when agents run under `agentsnap wrap`)',
      },
    ];
  }
  const out: Check[] = [];
  for (const f of found) {
    out.push({
      check: 'integration',
      status: 'info' as const,
      class: 'optional',
      message: `${f.agent}: agentsnap hooks configured in ${f.file}`,
      data: f,
    });
    const missing = unresolvedHookCommands(f.file, f.agent, repo.callerEnv);
    if (missing.length === 0) continue;
    // The settings file `agentsnap init <agent>` writes (its adapter's init layout).
    const own = path.relative(repo.worktree, f.file) === adapterOf(f.agent)?.init?.file;
    out.push({
      check: 'integration',
      status: 'problem',
      class: 'required',
      message: `${f.agent}: the agentsnap hooks in ${f.file} run ${missing.join(', ')}, which ${missing.length === 1 ? 'does' : 'do'} not resolve here: they record nothing`,
      fix: own ? `agentsnap init ${f.agent}` : `edit ${f.file} (or \`agentsnap init ${f.agent}\` for the project's personal settings)`,
      data: { ...f, missing },
    });
  }
  return out;
}

/**
 * The programs agentsnap's hook commands in `file` name that do not exist: an absolute path that is gone (an
 * install moved or an npx cache cleaned), or `agentsnap-hook`/`agentsnap` with none on PATH. Such hooks exit 0 and
 * record nothing, in silence.
 */
function unresolvedHookCommands(file: string, agent: string, env: NodeJS.ProcessEnv): string[] {
  let settings: unknown;
  try {
    settings = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return []; // missing or not JSON: no hook command of ours in it to check
  }
  const hooks = (settings as { hooks?: unknown } | null)?.hooks;
  if (!hooks || typeof hooks !== 'object') return [];
  const missing = new Set<string>();
  for (const groups of Object.values(hooks as Record<string, unknown>)) {
    if (!Array.isArray(groups)) continue;
    for (const g of groups as HookGroup[]) {
      for (const h of Array.isArray(g?.hooks) ? g.hooks : []) {
        if (!isAgentsnapHook(h?.command, agent)) continue;
        const command = String(h.command);
        const words = [...command.matchAll(/'((?:[^']|'\\'')*)'|(\S+)/g)].map((m) =>
          m[1] !== undefined ? m[1].replace(/'\\''/g, "'") : (m[2] ?? ''),
        );
        for (const w of words) if (w.startsWith('/') && !fs.existsSync(w)) missing.add(w);
        const bare = words.find((w) => w === 'agentsnap-hook' || w === 'agentsnap');
        if (bare && !onPath(bare, env)) missing.add(`${bare} (not on PATH)`);
      }
    }
  }
  return [...missing];
}

interface LoadedSession {
  id: string;
  session: Session | null;
  corruptLines: number[];
  /** Why its journal was not read (a link or special file in its place: UnsafeStateFile). */
  unsafe?: AgentsnapError;
}

function loadSessions(repo: Repo): LoadedSession[] {
  const out: LoadedSession[] = [];
  for (const id of sessionIds(repo)) {
    let read: ReturnType<typeof readJournal>;
    try {
      read = readJournal(sessionPaths(repo, id).journal);
    } catch (e) {
      // Every other command refuses such a session; doctor names it among the rest.
      if (isAgentsnapError(e) && e.code === 'UnsafeStateFile') {
        out.push({ id, session: null, corruptLines: [], unsafe: e });
        continue;
      }
      throw e;
    }
    out.push({ id, session: foldJournal(read.events), corruptLines: read.corruptLines });
  }
  return out;
}

function checkSessions(sessions: LoadedSession[]): Check[] {
  const checks: Check[] = [];
  for (const s of sessions) {
    if (s.unsafe) {
      checks.push({
        check: 'session',
        status: 'problem',
        class: 'required',
        message: `session ${s.id}: ${s.unsafe.message}`,
        fix: s.unsafe.hint ?? 'remove it',
        data: { session: s.id, file: s.unsafe.data.file },
      });
      continue;
    }
    if (!s.session) {
      checks.push({
        check: 'session',
        status: 'problem',
        class: 'required',
        message: `session ${s.id}: its journal has no start event`,
        fix: `inspect or remove the session directory (see \`agentsnap sessions\`)`,
        data: { session: s.id },
      });
      continue;
    }
    if (s.corruptLines.length > 0) {
      checks.push({
        check: 'session',
        status: 'problem',
        class: 'required',
        message: `session ${s.id}: journal lines ${s.corruptLines.slice(0, 5).join(', ')} cannot be read (they are skipped)`,
        fix: 'nothing to run: the readable events are used; keep the file for inspection',
        data: { session: s.id, corruptLines: s.corruptLines },
      });
    }
    const ss = s.session;
    if (wrapperGone(ss)) {
      checks.push({
        check: 'session',
        status: 'problem',
        class: 'required',
        message: `session ${s.id} is still marked running, but its process (pid ${ss.owner?.pid}) is gone`,
        fix: `${FIX} (journals its end, without a final snapshot)`,
        data: { session: s.id, pid: ss.owner?.pid },
      });
    }
  }
  return checks;
}

interface LockFile {
  file: string;
  pid: number | null;
}

function lockFiles(repo: Repo): string[] {
  const out: string[] = [];
  const add = (dir: string, match: (n: string) => boolean) => {
    try {
      for (const n of fs.readdirSync(dir)) if (match(n)) out.push(path.join(dir, n));
    } catch {
      /* none */
    }
  };
  add(stateLayout.locksDir(repo), (n) => n.endsWith('.lock') || n.includes('.lock.stale-'));
  try {
    for (const id of fs.readdirSync(sessionsDir(repo)))
      add(path.join(sessionsDir(repo), id), (n) => n === 'lock' || n.startsWith('lock.stale-'));
  } catch {
    /* none */
  }
  return out;
}

function staleLocks(repo: Repo): LockFile[] {
  const stale: LockFile[] = [];
  for (const file of lockFiles(repo)) {
    let text: string;
    let mtime: number;
    try {
      text = fs.readFileSync(file, 'utf8');
      mtime = fs.statSync(file).mtimeMs;
    } catch {
      continue; // released meanwhile: not a lock to report
    }
    if (file.includes('.stale-')) {
      stale.push({ file, pid: null });
      continue;
    }
    try {
      const o = JSON.parse(text) as { pid: number; start: string | null; host: string };
      if (typeof o.pid === 'number' && !ownerAlive(o)) stale.push({ file, pid: o.pid });
    } catch {
      // A torn lock file (its writer was killed mid-write) older than a few seconds.
      if (Date.now() - mtime > 5000) stale.push({ file, pid: null });
    }
  }
  return stale;
}

function checkLocks(repo: Repo): Check[] {
  return staleLocks(repo).map((l) => ({
    check: 'lock',
    status: 'problem' as const,
    class: 'required' as const,
    message: `stale lock ${l.file}${l.pid !== null ? ` (its owner, pid ${l.pid}, is gone)` : ''}`,
    fix: `${FIX} (or: rm ${l.file})`,
    data: { ...l },
  }));
}

async function prunableWorktrees(repo: Repo): Promise<{ path: string; reason: string }[]> {
  const res = await repo.git(['worktree', 'list', '--porcelain']);
  const out: { path: string; reason: string }[] = [];
  let current = '';
  for (const line of res.stdout.toString('utf8').split('\n')) {
    if (line.startsWith('worktree ')) current = line.slice('worktree '.length);
    else if (line.startsWith('prunable') && current) {
      const inside = !path.relative(repo.stateDir, current).startsWith('..');
      if (inside) out.push({ path: current, reason: line.slice('prunable'.length).trim() });
    }
  }
  return out;
}

async function checkWorktrees(repo: Repo): Promise<Check[]> {
  return (await prunableWorktrees(repo)).map((w) => ({
    check: 'worktree',
    status: 'problem' as const,
    class: 'required' as const,
    message: `stale agentsnap worktree ${w.path}${w.reason ? ` (${w.reason})` : ''}`,
    fix: `git worktree prune`,
    data: w,
  }));
}

async function checkDisk(repo: Repo): Promise<Check> {
  const stateBytes = diskUse(repo.stateDir);
  const refs = (await listRefs(repo, STEP_REF_PREFIX)).length;
  let objectBytes: number | null = null;
  // Objects reachable only from agentsnap's refs (git 2.38+ has --disk-usage; skipped elsewhere).
  const res = await repo.git(
    [
      'rev-list',
      '--objects',
      '--disk-usage',
      '--glob=refs/agent/*',
      '--glob=refs/agentsnap/*',
      '--not',
      '--branches',
      '--tags',
      '--remotes',
    ],
    { okCodes: [128, 129] },
  );
  if (res.code === 0) objectBytes = Number(res.stdout.toString('utf8').trim()) || 0;
  return {
    check: 'disk',
    status: 'info',
    class: 'required',
    message: `agentsnap uses ${formatBytes(stateBytes)} in ${repo.stateDir}${objectBytes !== null ? ` and about ${formatBytes(objectBytes)} of git objects only its ${refs} refs reach` : ''}`,
    data: { stateDir: repo.stateDir, stateBytes, objectBytes, stepRefs: refs },
  };
}

function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MiB`;
  return `${(n / 1024 ** 3).toFixed(1)} GiB`;
}

interface RefMismatch {
  session: string;
  ref: string;
  expected: string | null;
  actual: string | null;
}

async function refMismatches(
  repo: Repo,
  sessions: LoadedSession[],
): Promise<{ mismatches: RefMismatch[]; orphans: string[]; lost: RefMismatch[] }> {
  const actual = new Map<string, string>();
  for (const r of await listRefs(repo, STEP_REF_PREFIX)) actual.set(r.ref, r.oid);
  for (const r of await listRefs(repo, SESSION_META_PREFIX)) actual.set(r.ref, r.oid);
  const mismatches: RefMismatch[] = [];
  const known = new Set<string>();
  for (const s of sessions) {
    if (!s.session) continue;
    known.add(s.id);
    for (const u of refsFor(s.session)) {
      const have = actual.get(u.ref) ?? null;
      if (have !== u.value) mismatches.push({ session: s.id, ref: u.ref, expected: u.value, actual: have });
    }
  }
  // A snapshot the journal names that git's prune deleted: no ref can point at it; reported lost, not a mismatch.
  const gone = await missingObjects(
    repo,
    mismatches.map((m) => m.expected),
  );
  const lost = mismatches.filter((m) => m.expected && gone.has(m.expected));
  mismatches.splice(0, mismatches.length, ...mismatches.filter((m) => !(m.expected && gone.has(m.expected))));
  const orphans = new Set<string>();
  for (const ref of actual.keys()) {
    const id = sessionOfRef(ref);
    if (id && !known.has(id)) orphans.add(id);
  }
  return { mismatches, orphans: [...orphans].sort(), lost };
}

/** What lost refs mean to a user: the steps (or the session head) whose snapshots git's prune deleted. */
function lostSteps(lost: RefMismatch[]): string {
  const names = [
    ...new Set(
      lost.map((m) => (m.ref.startsWith(STEP_REF_PREFIX) ? `step ${m.ref.slice(m.ref.lastIndexOf('/') + 1)}` : 'the session head')),
    ),
  ];
  return names.join(', ');
}

async function checkRefs(repo: Repo, sessions: LoadedSession[]): Promise<Check[]> {
  const { mismatches, orphans, lost } = await refMismatches(repo, sessions);
  const checks: Check[] = [];
  const lostBySession = new Map<string, RefMismatch[]>();
  for (const m of lost) lostBySession.set(m.session, [...(lostBySession.get(m.session) ?? []), m]);
  for (const [id, list] of lostBySession) {
    checks.push({
      check: 'lost',
      status: 'info',
      class: 'required',
      message: `session ${id}: the snapshots of ${lostSteps(list)} were deleted by git's prune (git gc/prune with an expiry of now); those cannot be undone to, every other step can`,
      data: { session: id, refs: list },
    });
  }
  const bySession = new Map<string, RefMismatch[]>();
  for (const m of mismatches) bySession.set(m.session, [...(bySession.get(m.session) ?? []), m]);
  for (const [id, list] of bySession) {
    const first = list[0] as RefMismatch;
    const what =
      first.actual === null
        ? `${first.ref} is missing`
        : `${first.ref} points at ${first.actual.slice(0, 10)}, the journal says ${first.expected?.slice(0, 10)}`;
    checks.push({
      check: 'refs',
      status: 'problem',
      class: 'required',
      message: `session ${id}: ${list.length} ref(s) disagree with its journal (${what}${list.length > 1 ? ', …' : ''})`,
      fix: `${FIX} (sets the refs from the journal)`,
      data: { session: id, refs: list },
    });
  }
  for (const id of orphans) {
    checks.push({
      check: 'refs',
      status: 'problem',
      class: 'required',
      message: `refs/agent/${id}/ has refs but no journal in ${sessionsDir(repo)}`,
      fix: `agentsnap fetch <backup-remote> if it was recorded elsewhere; to drop them: git for-each-ref --format='delete %(refname)' refs/agent/${id}/ refs/agentsnap/sessions/${id}/ | git update-ref --stdin`,
      data: { session: id },
    });
  }
  if (mismatches.length === 0 && orphans.length === 0 && sessions.length > 0) {
    checks.push({
      check: 'refs',
      status: 'ok',
      class: 'required',
      message: `refs of ${sessions.length} session(s) agree with their journals`,
    });
  }
  return checks;
}

/** The warm server's file watcher, when a server runs: degraded (full scans only) is a problem with the command that raises the limit. */
function checkWatcher(repo: Repo): Check[] {
  const info = serverInfo(repo);
  const w = info ? readWatchState(info.runDir, info.pid) : null;
  if (!info || !w) return [];
  const data = { pid: info.pid, ...w };
  if (w.state === 'watching')
    return [
      {
        check: 'watcher',
        status: 'ok',
        class: 'required',
        message: `the server (pid ${info.pid}) follows the worktree with ${w.watches} inotify watches`,
        data,
      },
    ];
  const cost = w.lastFullScanMs !== null ? ` (the last took ${w.lastFullScanMs} ms)` : '';
  return [
    {
      check: 'watcher',
      status: 'problem',
      class: 'required',
      message: `the server's file watcher is degraded: every snapshot is a full scan${cost}: ${w.reason}`,
      fix: w.hint ?? 'agentsnap server stop',
      data,
    },
  ];
}

/** The warm server's snapshot engine, when a server runs and it failed (to start, or its warm-up snapshot). */
function checkServerEngine(repo: Repo): Check[] {
  const info = serverInfo(repo);
  let failure: ReturnType<typeof readEngineFailure>;
  try {
    failure = info ? readEngineFailure(info.runDir, info.pid) : null;
  } catch (e) {
    if (isAgentsnapError(e) && e.code === 'UnsafeStateFile')
      return [{ check: 'server', status: 'problem', class: 'required', message: e.message, fix: 'agentsnap server stop' }];
    throw e;
  }
  if (!info || !failure) return [];
  const what = failure.what === 'start' ? 'snapshot engine did not start (every snapshot is a full scan)' : 'warm-up snapshot failed';
  return [
    {
      check: 'server',
      status: 'problem',
      class: 'required',
      message: `the server's (pid ${info.pid}) ${what}: ${failure.error}`,
      fix: 'agentsnap server stop',
      data: { pid: info.pid, ...failure },
    },
  ];
}

/** A failed automatic gc (wrap never stops for one, so nothing else says it): a problem until a gc succeeds. */
function checkAutoGc(repo: Repo): Check[] {
  const file = stateLayout.gcFailure(repo);
  let raw: Buffer | null;
  try {
    raw = readStateFile(file);
  } catch (e) {
    if (isAgentsnapError(e) && e.code === 'UnsafeStateFile')
      return [{ check: 'gc', status: 'problem', class: 'required', message: e.message, fix: `rm ${file}` }];
    throw e;
  }
  if (!raw) return [];
  const text = raw.toString('utf8').trim();
  const nl = text.indexOf('\n');
  const [at, why] = nl < 0 ? ['', text] : [text.slice(0, nl), text.slice(nl + 1)];
  return [
    {
      check: 'gc',
      status: 'problem',
      class: 'required',
      message: `the last automatic gc${at ? ` (${at})` : ''} failed: ${why.replace(/\.$/, '')}; old sessions are not removed until a gc succeeds`,
      fix: 'agentsnap gc',
      data: { file, at: at || null, error: why },
    },
  ];
}

async function runChecks(repo: Repo): Promise<Check[]> {
  const sessions = loadSessions(repo);
  return [
    await checkGit(repo),
    await checkHooks(repo),
    ...checkIntegrations(repo),
    ...checkSessions(sessions),
    ...checkLocks(repo),
    ...(await checkWorktrees(repo)),
    ...(await checkRefs(repo, sessions)),
    await checkDisk(repo),
    ...(await checkAgentRefs(repo)),
    ...checkWatcher(repo),
    ...checkServerEngine(repo),
    ...checkAutoGc(repo),
  ];
}

/** Refs an agent wrote into the repository itself (Cline's checkpoints): the agent's, not the user's; said once per prefix. */
async function checkAgentRefs(repo: Repo): Promise<Check[]> {
  const configured = await repo.git(['config', '--get-all', 'agentsnap.agentRefs'], { okCodes: [1] });
  const prefixes =
    configured.code === 0
      ? configured.stdout
          .toString('utf8')
          .split('\n')
          .filter((p) => p.trim())
      : [...AGENT_REPO_REFS];
  const checks: Check[] = [];
  for (const prefix of prefixes) {
    const refs = await listRefs(repo, prefix);
    if (refs.length === 0) continue;
    checks.push({
      check: 'agent-refs',
      status: 'info',
      class: 'required',
      message: `${refs.length} ref(s) under ${prefix} were written by an agent itself (its checkpoints), not by you; agentsnap's pre-push hook keeps them off remotes that are not backup remotes (agentsnap.agentRefs)`,
      data: { prefix, refs: refs.length },
    });
  }
  return checks;
}

/** Repairs what is safe to repair; returns one line per thing done. */
async function applyFixes(repo: Repo): Promise<string[]> {
  const done: string[] = [];
  for (const l of staleLocks(repo)) {
    // Re-checked just above; a dead owner cannot come back, so removing is safe.
    fs.rmSync(l.file, { force: true });
    done.push(`removed stale lock ${l.file}`);
  }
  if ((await prunableWorktrees(repo)).length > 0) {
    await repo.git(['worktree', 'prune']);
    done.push('pruned stale worktrees (git worktree prune)');
  }
  for (const s of loadSessions(repo)) {
    if (!s.session) continue;
    const p = sessionPaths(repo, s.id);
    const lock = await acquireLock(p.lock, { purpose: 'doctor --fix' });
    try {
      let session = foldJournal(readJournal(p.journal).events);
      if (!session) continue;
      if (wrapperGone(session)) {
        const ev: JournalEvent = {
          ...eventBase(s.id),
          type: 'session.end',
          exitCode: null,
          signal: null,
          commit: null,
          tree: null,
          changed: [],
          reason: 'owner-gone',
        };
        appendEvent(p.journal, ev);
        fs.rmSync(p.state, { force: true });
        session = foldJournal(readJournal(p.journal).events) ?? session;
        done.push(`session ${s.id}: journaled its end (its process ${s.session.owner?.pid} was gone)`);
      }
      const { mismatches, lost } = await refMismatches(repo, [{ id: s.id, session, corruptLines: [] }]);
      if (lost.length > 0)
        done.push(
          `session ${s.id}: the snapshots of ${lostSteps(lost)} were deleted by git's prune: left as lost (every other step keeps its ref)`,
        );
      if (mismatches.length > 0) {
        const updates: RefUpdate[] = mismatches.map((m) => ({ ref: m.ref, value: m.expected }));
        // The head ref follows the journal too (unless git's prune deleted it).
        if (!updates.some((u) => u.ref === headRef(s.id)) && !lost.some((m) => m.ref === headRef(s.id)))
          updates.push({ ref: headRef(s.id), value: session.head });
        try {
          await updateRefs(repo, updates);
          done.push(`session ${s.id}: set ${mismatches.length} ref(s) from its journal`);
        } catch (e) {
          // Typically snapshots the journal names are gone from the object store: nothing to point at.
          done.push(`session ${s.id}: could not set its refs from the journal (${isAgentsnapError(e) ? e.message : String(e)})`);
        }
      }
    } finally {
      lock.release();
    }
  }
  return done;
}

/** Runs every check (after repairing what is safe when fix is set). */
export async function runDoctor(repo: Repo, opts: { fix?: boolean } = {}): Promise<DoctorReport> {
  const fixed = opts.fix ? await applyFixes(repo) : [];
  const checks = await runChecks(repo);
  const problems = checks.filter((c) => c.status === 'problem').length;
  return { healthy: problems === 0, problems, checks, fixed };
}
