// Garbage collection of agentsnap's own data: old sessions (refs, journals,
// private indexes, worktrees), orphans (refs without a session, worktrees
// without a session, abandoned temporary files) and old safety snapshots.
// Sessions in use are never touched, and a session whose worktree holds work
// its snapshots do not have is kept. Objects that become unreachable are left
// to git's own gc (gc.pruneExpire), which is the user's policy to set.
import fs from 'node:fs';
import path from 'node:path';
import { errors, isAgentsnapError } from '../base/errors.js';
import { openRepo, type Repo } from '../git/repo.js';
import { lastValue, parseInteger, readGitConfig } from '../git/config.js';
import { loadSettings } from '../settings/settings.js';
import { acquireLock, type Lock } from '../base/lock.js';
import { ensureStateDir, lockFileIn, replaceStateFile, stateLayout } from '../base/state-dir.js';
import { listRefs, readHead, updateRefs } from '../git/plumbing.js';
import {
  listSessions,
  META_REF_PREFIX,
  sessionInUse,
  sessionOfRef,
  sessionPaths,
  sessionRefs,
  sessionsDir,
  SESSION_META_PREFIX,
  STEP_REF_PREFIX,
  type SessionSummary,
} from '../session/session.js';
import {
  defaultWorktreeDir,
  describeNestedWork,
  listWorktrees,
  nestedRepoWork,
  readWorktreeMeta,
  removeSessionWorktree,
  worktreeConfig,
} from './worktree.js';
import { snapshotNow } from '../snapshot/snapshot-now.js';
import { dropSession, SAFETY_REF_PREFIX } from './parallel.js';
import { diskUse, exists, olderThan, readdirOrEmpty } from '../base/fsutil.js';
import { runDirInUse } from '../server/server.js';
import { LOG_ALL_ALIAS, NOTES_REF } from '../session/refs.js';
import { noteBeforeRemoving } from '../blame/notes.js';

const DAY = 24 * 60 * 60 * 1000;
/** Temporary files and half-created things younger than this may belong to a command that is still running. */
const TEMP_GRACE_MS = 60 * 60 * 1000;

/** Parses `14d`, `12h`, `30m`, `45s`, `2w` or a number of days; `0` is zero. */
export function parseDuration(key: string, value: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$/i.exec(value);
  if (!m) {
    throw (key.startsWith('agentsnap.') ? errors.invalidConfig : errors.invalidArgument)(
      `${key} = ${JSON.stringify(value)} is not a duration.`,
      {
        hint: 'Use a number with s, m, h, d or w, e.g. 14d.',
        data: { key, value },
      },
    );
  }
  const unit = { s: 1000, m: 60_000, h: 3_600_000, d: DAY, w: 7 * DAY, '': DAY }[(m[2] ?? '').toLowerCase() as 's'];
  return Number(m[1]) * unit;
}

export interface GcSettings {
  /** Sessions inactive longer than this are dropped. */
  retentionMs: number;
  /** The N most recently active sessions are kept whatever their age. */
  keep: number;
  /** Minimum time between automatic gc runs; 0 disables them. */
  autoIntervalMs: number;
}

export async function gcSettings(repo: Repo): Promise<GcSettings> {
  const cfg = await readGitConfig(repo);
  const auto = lastValue(cfg, 'agentsnap.gcauto');
  const keep = lastValue(cfg, 'agentsnap.gckeep');
  return {
    retentionMs: parseDuration('agentsnap.retention', lastValue(cfg, 'agentsnap.retention') ?? '14d'),
    keep: parseInteger('agentsnap.gcKeep', keep, 0),
    autoIntervalMs:
      auto === undefined
        ? DAY
        : ['false', 'no', 'off', 'never'].includes(auto.trim().toLowerCase())
          ? 0
          : parseDuration('agentsnap.gcAuto', auto),
  };
}

export interface GcOptions {
  /** Default: agentsnap.retention (14d). */
  olderThanMs?: number;
  /** Default: agentsnap.gcKeep (0). */
  keep?: number;
  dryRun?: boolean;
  /** Remove everything agentsnap ever put into the repository. */
  all?: boolean;
  /** With all: also sessions that may be in use, and worktrees with unsnapshotted work. */
  force?: boolean;
  /** With all: agentsnap's git hooks are still installed, so the notes.rewriteRef their notes need stays. */
  keepNotesRewrite?: boolean;
  /** Automatic run: discarded sessions wait out the retention like the others; a busy gc is skipped. */
  auto?: boolean;
  now?: number;
}

export interface GcReport {
  dryRun: boolean;
  all: boolean;
  removedSessions: string[];
  /** Sessions kept although old, and why. */
  kept: { session: string; reason: string }[];
  removedWorktrees: string[];
  removedRefs: string[];
  removedFiles: string[];
  /** --all: the config entries agentsnap wrote (`key=value`: backup remotes, notes.rewriteRef, init's alias). */
  removedConfig: string[];
  /** --all --dry-run: what the real run would refuse without --force, and why (a dry run never refuses). */
  refused: { session: string; kind: 'in-use' | 'unsaved-work'; reason: string }[];
  /** --all: agentsnap's set-up gc does not take out (git hooks, agents' settings), each with the command that does. */
  left: string[];
  /** --all: the shadow repository of a directory in no git repository, removed whole (src/git/shadow.ts), and those set aside at its path. */
  removedShadows: string[];
  /** Commits whose blame notes were written before their sessions went (blame/notes.ts: git hooks installed). */
  notedCommits: number;
  /** Bytes used by agentsnap's state dir and worktrees. */
  before: number;
  /** After the run (dry run: an estimate). */
  after: number;
}

async function usage(repo: Repo, worktreeDir: string): Promise<number> {
  let total = diskUse(repo.stateDir);
  if (!worktreeDir.startsWith(repo.stateDir + path.sep)) total += diskUse(worktreeDir);
  return total;
}

/** Why dropping this session's worktree would lose work, or null when it would not. */
async function unsavedWork(repo: Repo, s: SessionSummary): Promise<string | null> {
  const meta = readWorktreeMeta(repo, s.id);
  if (!meta || !exists(meta.path)) return null;
  let wt: Repo;
  try {
    wt = await openRepo(meta.path, { env: repo.callerEnv });
  } catch {
    return `its worktree ${meta.path} is no longer a git worktree`; // reported: the reason gc keeps this session
  }
  const snap = await snapshotNow(wt, await loadSettings(wt), 'gc');
  const head = await wt.git(['rev-parse', '--verify', '-q', `${s.head}^{tree}`], { okCodes: [1, 128] });
  if (snap.tree !== head.stdout.toString('utf8').trim()) return `its worktree ${meta.path} has changes after the last snapshot`;
  // Nested repositories are in the snapshots as gitlinks (or left out): their commits and files are not.
  const nested = await nestedRepoWork(repo, wt, snap.tree, snap.skipped);
  if (nested.length > 0)
    return `its worktree ${meta.path} holds nested repositories with work found nowhere else (${describeNestedWork(nested)})`;
  const wtHead = (await readHead(wt)).commit;
  if (wtHead && wtHead !== meta.head) {
    const reach = await repo.git([
      'for-each-ref',
      '--count=1',
      '--contains',
      wtHead,
      '--format=%(refname)',
      'refs/heads/',
      'refs/remotes/',
      'refs/tags/',
    ]);
    if (reach.stdout.length === 0) return `its worktree ${meta.path} has commits on no branch (${wtHead.slice(0, 10)})`;
  }
  return null;
}

/** Files agentsnap leaves only when a command dies: temp indexes, state/seed temp files, broken-lock tombstones. */
function strayFiles(repo: Repo, now: number): string[] {
  const out: string[] = [];
  const tmpDir = stateLayout.tmpDir(repo);
  for (const name of readdirOrEmpty(tmpDir)) {
    const p = path.join(tmpDir, name);
    if (olderThan(p, TEMP_GRACE_MS, now)) out.push(p);
  }
  // `packs.json.tmp-<pid>` of a maintenance killed between writing and renaming its pack list.
  for (const name of readdirOrEmpty(repo.stateDir)) {
    if (/^(packs\.json|gc\.stamp)\.tmp-/.test(name) && olderThan(path.join(repo.stateDir, name), TEMP_GRACE_MS, now))
      out.push(path.join(repo.stateDir, name));
  }
  for (const id of readdirOrEmpty(sessionsDir(repo))) {
    const dir = path.join(sessionsDir(repo), id);
    for (const name of readdirOrEmpty(dir)) {
      if (
        /^index\.diff-|\.tmp-|\.seed-|\.stale-|\.lock$/.test(name) &&
        name !== 'lock' &&
        olderThan(path.join(dir, name), TEMP_GRACE_MS, now)
      ) {
        out.push(path.join(dir, name));
      }
    }
  }
  // Temporary packs of a pack-objects that was killed (agentsnap's maintenance packs its snapshots);
  // a day old, no git process is still writing them.
  const packDir = path.join(repo.commonDir, 'objects', 'pack');
  for (const name of readdirOrEmpty(packDir)) {
    if (/^tmp_pack_|^tmp_idx_|^tmp_rev_/.test(name) && olderThan(path.join(packDir, name), DAY, now)) out.push(path.join(packDir, name));
  }
  const locks = stateLayout.locksDir(repo);
  for (const name of readdirOrEmpty(locks)) {
    if (name.includes('.stale-') && olderThan(path.join(locks, name), TEMP_GRACE_MS, now)) out.push(path.join(locks, name));
  }
  return out;
}

/** The refs of each session named by agentsnap's per-session refs (steps and meta), by session id. */
async function refsBySession(repo: Repo): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (const r of [...(await listRefs(repo, STEP_REF_PREFIX)), ...(await listRefs(repo, SESSION_META_PREFIX))]) {
    const id = sessionOfRef(r.ref) ?? '';
    out.set(id, [...(out.get(id) ?? []), r.ref]);
  }
  return out;
}

/**
 * Server run dirs (`run/wt-<name>`, see runDirOf) of linked worktrees that
 * are gone: git's `worktrees/<name>` is removed, or names a worktree whose
 * `.git` is gone and that is not locked (git would prune it). Never one a
 * server may still be using (runDirInUse); `run/main` always stays.
 */
function orphanRunDirs(repo: Repo): string[] {
  const runRoot = stateLayout.runRoot(repo);
  const out: string[] = [];
  for (const name of readdirOrEmpty(runRoot)) {
    if (!name.startsWith('wt-')) continue;
    const dir = path.join(runRoot, name);
    if (linkedWorktreeExists(repo, name.slice('wt-'.length)) || runDirInUse(dir)) continue;
    out.push(dir);
  }
  return out;
}

function linkedWorktreeExists(repo: Repo, name: string): boolean {
  const admin = path.join(repo.commonDir, 'worktrees', name);
  if (!exists(admin)) return false;
  if (exists(path.join(admin, 'locked'))) return true;
  let gitdir: string;
  try {
    gitdir = fs.readFileSync(path.join(admin, 'gitdir'), 'utf8').trim();
  } catch {
    return true; // being created, or unreadable: not ours to judge
  }
  return exists(path.resolve(admin, gitdir));
}

/** `agentsnap gc`. */
export async function gc(repo: Repo, opts: GcOptions = {}): Promise<GcReport> {
  const settings = await gcSettings(repo);
  const run = new GcRun(repo, opts, settings, await worktreeConfig(repo));
  const config = opts.all ? (await agentsnapConfig(repo)).filter((c) => !(opts.keepNotesRewrite && c.key === 'notes.rewriteRef')) : [];
  const notes = opts.all ? (await listRefs(repo, NOTES_REF)).filter((r) => r.ref === NOTES_REF) : [];
  if (
    !exists(repo.stateDir) &&
    (await listRefs(repo, STEP_REF_PREFIX)).length === 0 &&
    (await listRefs(repo, META_REF_PREFIX)).length === 0 &&
    config.length === 0 &&
    notes.length === 0
  ) {
    return run.report;
  }
  let lock: Lock;
  try {
    lock = await acquireLock(lockFileIn(repo, 'gc.lock'), { timeoutMs: opts.auto ? 0 : 2000, purpose: 'gc' });
  } catch (e) {
    if (opts.auto) return run.report;
    throw e;
  }
  try {
    return await run.collect(lock, config, notes);
  } finally {
    lock.release();
  }
}

/**
 * One gc under its lock, phase by phase: which sessions go (and which are refused or kept, and why), then the
 * sessions, orphaned refs, orphaned worktrees and stray files, then (--all) everything else agentsnap put in. Each
 * phase records what it removes (or, in a dry run, would remove) in `report`, and the bytes it frees in `estimate`.
 */
class GcRun {
  readonly report: GcReport;
  private readonly now: number;
  private readonly dryRun: boolean;
  private readonly retention: number;
  private readonly keep: number;
  /** What a dry run says it would free. */
  private estimate = 0;

  constructor(
    private readonly repo: Repo,
    private readonly opts: GcOptions,
    settings: GcSettings,
    private readonly cfg: Awaited<ReturnType<typeof worktreeConfig>>,
  ) {
    this.now = opts.now ?? Date.now();
    this.dryRun = !!opts.dryRun;
    this.retention = opts.olderThanMs ?? settings.retentionMs;
    this.keep = opts.keep ?? settings.keep;
    this.report = {
      dryRun: this.dryRun,
      all: !!opts.all,
      removedSessions: [],
      kept: [],
      removedWorktrees: [],
      removedRefs: [],
      removedFiles: [],
      removedConfig: [],
      refused: [],
      left: [],
      removedShadows: [],
      notedCommits: 0,
      before: 0,
      after: 0,
    };
  }

  async collect(lock: Lock, config: { key: string; value: string }[], notes: { ref: string }[]): Promise<GcReport> {
    const { repo, opts, report, dryRun } = this;
    report.before = await usage(repo, this.cfg.dir);
    const sessions = await listSessions(repo);
    const inUse = new Set(sessions.filter((s) => sessionInUse(s, this.now)).map((s) => s.id));
    const drop = opts.all ? await this.everySession(sessions, inUse) : this.expiredSessions(sessions, inUse);
    // With the git hooks installed, the commits these sessions wrote lines into get their blame notes first.
    if (!dryRun && !opts.all) report.notedCommits = await noteBeforeRemoving(repo, drop);
    for (const s of drop) await this.dropOne(s);
    await this.removeOrphanRefs(notes);
    await this.removeOrphanWorktrees();
    // Temporary files of commands that died, and run dirs of servers whose worktree is gone.
    const stray = [...strayFiles(repo, this.now), ...orphanRunDirs(repo)];
    for (const f of stray) this.estimate += diskUse(f);
    report.removedFiles.push(...stray);
    if (!dryRun) for (const f of stray) fs.rmSync(f, { recursive: true, force: true });
    if (opts.all) await this.removeTheRest(lock, config);
    // A gc that got this far clears the failure of an earlier automatic one (doctor's `gc` problem).
    if (!dryRun && !opts.all) fs.rmSync(stateLayout.gcFailure(repo), { force: true });
    report.after = dryRun ? Math.max(0, report.before - this.estimate) : await usage(repo, this.cfg.dir);
    if (opts.all && dryRun) report.after = 0;
    return report;
  }

  /** --all: every session, unless one may be in use or holds unsaved work (refused, or listed by a dry run) without --force. */
  private async everySession(sessions: SessionSummary[], inUse: Set<string>): Promise<SessionSummary[]> {
    const { repo, opts, report, dryRun } = this;
    const busy = sessions.filter((s) => inUse.has(s.id));
    if (busy.length > 0 && !opts.force && dryRun) {
      for (const s of busy) report.refused.push({ session: s.id, kind: 'in-use', reason: 'it may still be in use' });
    } else if (busy.length > 0 && !opts.force) {
      throw errors.refused(`${busy.length} session(s) may still be in use: ${busy.map((s) => s.id).join(', ')}.`, {
        hint: 'Stop their agents (or discard them) first, or remove everything anyway with --all --force.',
        data: { sessions: busy.map((s) => s.id) },
      });
    }
    if (!opts.force) {
      // Check every worktree before removing anything: --all either does it all or nothing.
      for (const s of sessions) {
        if (s.status === 'discarded') continue;
        const why = await unsavedWork(repo, s);
        if (why && dryRun) report.refused.push({ session: s.id, kind: 'unsaved-work', reason: why });
        else if (why) {
          throw errors.refused(`session ${s.id}: ${why}.`, {
            hint: 'Apply, promote or discard it first, or use --all --force.',
            data: { session: s.id },
          });
        }
      }
    }
    return sessions;
  }

  /** Sessions past the retention (discarded ones at once, but by the automatic gc), beyond the `keep` most recent, not in use. */
  private expiredSessions(sessions: SessionSummary[], inUse: Set<string>): SessionSummary[] {
    const drop: SessionSummary[] = [];
    let recent = 0;
    for (const s of sessions) {
      if (inUse.has(s.id)) continue;
      const discarded = s.status === 'discarded';
      if (!discarded && recent < this.keep) {
        recent++;
        continue;
      }
      const old = this.now - Date.parse(s.lastActivity) > this.retention;
      if (old || (discarded && !this.opts.auto)) drop.push(s);
    }
    return drop;
  }

  /** One session out: its worktree, then (under its own lock, or kept) its refs and state. */
  private async dropOne(s: SessionSummary): Promise<void> {
    const { repo, opts, report, dryRun } = this;
    if (s.status !== 'discarded' && !opts.force && !opts.all) {
      const why = await unsavedWork(repo, s).catch(
        (e: unknown) => `its worktree could not be checked (${e instanceof Error ? e.message : String(e)})`,
      );
      if (why) {
        report.kept.push({ session: s.id, reason: why });
        return;
      }
    }
    const meta = readWorktreeMeta(repo, s.id);
    this.estimate += diskUse(sessionPaths(repo, s.id).dir);
    if (meta && exists(meta.path)) {
      this.estimate += diskUse(meta.path);
      report.removedWorktrees.push(meta.path);
      if (!dryRun) await removeSessionWorktree(repo, meta);
    }
    report.removedSessions.push(s.id);
    if (dryRun) return;
    let lockError: unknown = null;
    const sessionLock = await acquireLock(sessionPaths(repo, s.id).lock, { timeoutMs: 0, purpose: 'gc' }).catch(
      (e: unknown) => ((lockError = e), null),
    );
    if (!sessionLock) {
      report.removedSessions.pop();
      report.kept.push({ session: s.id, reason: keptForLock(lockError) });
      return;
    }
    try {
      report.removedRefs.push(...(await sessionRefs(repo, s.id)));
      await dropSession(repo, s.id);
    } finally {
      sessionLock.release();
    }
  }

  /** Refs of sessions that have no state dir (a half-started or half-dropped session), and expired safety snapshots. */
  private async removeOrphanRefs(notes: { ref: string }[]): Promise<void> {
    const { repo, opts, report } = this;
    const known = new Set(readdirOrEmpty(sessionsDir(repo)));
    const orphanRefs: string[] = [];
    for (const [id, refs] of await refsBySession(repo)) {
      if (opts.all || !known.has(id) || report.removedSessions.includes(id))
        orphanRefs.push(...refs.filter((r) => !report.removedRefs.includes(r)));
    }
    // Safety snapshots (undo points of apply) older than the retention, unless the session they
    // applied stays: its journal names them (session.apply), and the versions that apply kept
    // hang on them (second parent).
    const staying = new Set([...known].filter((id) => !report.removedSessions.includes(id)));
    const safety = await repo.git([
      'for-each-ref',
      '--format=%(committerdate:unix) %(refname) %(trailers:key=Agentsnap-Session,valueonly,separator=%x2C)',
      SAFETY_REF_PREFIX,
    ]);
    for (const line of safety.stdout.toString('utf8').split('\n').filter(Boolean)) {
      const [t, ref, session] = line.split(' ');
      if (!ref) continue;
      if (opts.all || (this.now - Number(t) * 1000 > this.retention && !(session && staying.has(session)))) orphanRefs.push(ref);
    }
    if (opts.all) {
      for (const r of [...(await listRefs(repo, STEP_REF_PREFIX)), ...(await listRefs(repo, META_REF_PREFIX)), ...notes]) {
        if (!orphanRefs.includes(r.ref) && !report.removedRefs.includes(r.ref)) orphanRefs.push(r.ref);
      }
    }
    report.removedRefs.push(...orphanRefs);
    if (!this.dryRun)
      await updateRefs(
        repo,
        orphanRefs.map((ref) => ({ ref, value: null })),
      );
  }

  /** Worktrees registered with git under agentsnap's worktree dir, with no session (or a dropped one). */
  private async removeOrphanWorktrees(): Promise<void> {
    const { repo, opts, report, dryRun } = this;
    const dirs = new Set([this.cfg.dir, defaultWorktreeDir(repo)]);
    const live = new Set(readdirOrEmpty(sessionsDir(repo)).filter((id) => !report.removedSessions.includes(id)));
    let prune = false;
    for (const wt of await listWorktrees(repo)) {
      const parent = path.dirname(wt.path);
      if (!dirs.has(parent)) continue;
      const id = path.basename(wt.path);
      if (live.has(id) && !opts.all) continue;
      if (report.removedWorktrees.includes(wt.path)) continue;
      if (!opts.all && !wt.prunable && !olderThan(wt.path, TEMP_GRACE_MS, this.now)) continue;
      if (wt.prunable) {
        prune = true;
        continue;
      }
      this.estimate += diskUse(wt.path);
      report.removedWorktrees.push(wt.path);
      if (!dryRun) await removeSessionWorktree(repo, { path: wt.path, shared: [] });
    }
    if (prune && !dryRun) await repo.git(['worktree', 'prune']);
  }

  /** --all: agentsnap's config entries, its state directory, and what is left in a worktree dir of its own. */
  private async removeTheRest(lock: Lock, config: { key: string; value: string }[]): Promise<void> {
    const { repo, report, dryRun } = this;
    report.removedConfig.push(...config.map((c) => `${c.key}=${c.value}`));
    if (!dryRun) for (const c of config) await unsetConfigValue(repo, c.key, c.value);
    report.removedFiles.push(repo.stateDir);
    if (dryRun) return;
    lock.release();
    fs.rmSync(repo.stateDir, { recursive: true, force: true });
    if (this.cfg.dir !== defaultWorktreeDir(repo)) {
      for (const name of readdirOrEmpty(this.cfg.dir))
        if (!exists(path.join(this.cfg.dir, name, '.git'))) fs.rmSync(path.join(this.cfg.dir, name), { recursive: true, force: true });
    }
  }
}

/**
 * Automatic retention, cheap enough for every session start: one stat of a
 * stamp file whose mtime is when the next run is due. Only then is
 * agentsnap.gcAuto (default 1d) read, gc run, and the stamp moved on by the
 * interval (by a day while automatic gc is off, so turning it back on takes
 * effect). Never throws: retention must not stop a session from starting.
 */
export async function maybeAutoGc(repo: Repo, opts: { now?: number } = {}): Promise<GcReport | null> {
  const now = opts.now ?? Date.now();
  try {
    const stamp = stateLayout.gcStamp(repo);
    // lstat: the stamp's own time, never a link's target's (a link is replaced below).
    if ((fs.lstatSync(stamp, { throwIfNoEntry: false })?.mtimeMs ?? 0) > now) return null;
    const settings = await gcSettings(repo);
    const next = new Date(now + (settings.autoIntervalMs > 0 ? settings.autoIntervalMs : DAY));
    ensureStateDir(repo.stateDir);
    replaceStateFile(stamp, `next automatic gc: ${next.toISOString()}\n`);
    fs.lutimesSync(stamp, next, next);
    if (settings.autoIntervalMs <= 0) return null;
    return await gc(repo, { auto: true, now });
  } catch (e) {
    // Never thrown (retention must not stop a session), never lost either: doctor names it until a gc succeeds.
    try {
      ensureStateDir(repo.stateDir);
      replaceStateFile(stateLayout.gcFailure(repo), `${new Date(now).toISOString()}\n${e instanceof Error ? e.message : String(e)}\n`);
    } catch {
      /* a state directory that takes no file (a full disk): nothing else could hold it */
    }
    return null;
  }
}

/**
 * The entries of this repository's config that agentsnap wrote: the backup remotes `remote add` designated, the
 * notes.rewriteRef `hooks install` added (blame/notes.ts), and `init`'s alias while it is still agentsnap's
 * value. Settings the user wrote (`git config agentsnap.retention …`) are the user's: left as they are.
 */
async function agentsnapConfig(repo: Repo): Promise<{ key: string; value: string }[]> {
  const res = await repo.git(
    ['config', '--local', '-z', '--get-regexp', '^(agentsnap\\.backupremote|notes\\.rewriteref|alias\\.log-all)$'],
    { okCodes: [1] },
  );
  const out: { key: string; value: string }[] = [];
  for (const entry of res.stdout.toString('utf8').split('\0').filter(Boolean)) {
    const nl = entry.indexOf('\n');
    const key = nl < 0 ? entry : entry.slice(0, nl);
    const value = nl < 0 ? '' : entry.slice(nl + 1);
    const ours =
      key === 'agentsnap.backupremote' ||
      (key === 'notes.rewriteref' && (value === NOTES_REF || value === `${NOTES_REF}*`)) ||
      (key === LOG_ALL_ALIAS.key && value === LOG_ALL_ALIAS.value);
    if (ours)
      out.push({
        key: key === 'agentsnap.backupremote' ? 'agentsnap.backupRemote' : key === 'notes.rewriteref' ? 'notes.rewriteRef' : key,
        value,
      });
  }
  return out;
}

/**
 * Takes one value of a key out of the repository's config, and the section with it when that leaves it empty:
 * git keeps an empty `[alias]` header otherwise, and what agentsnap added is to go without a trace.
 */
export async function unsetConfigValue(repo: Repo, key: string, value: string): Promise<void> {
  await repo.git(['config', '--local', '--unset-all', '--fixed-value', key, value], { okCodes: [5] });
  const section = key.slice(0, key.lastIndexOf('.'));
  const left = await repo.git(['config', '--local', '--get-regexp', `^${section.replace(/[.]/g, '\\.')}\\.`], { okCodes: [1] });
  if (left.code === 1) await repo.git(['config', '--local', '--remove-section', section], { okCodes: [128] });
}

/** Why gc kept a session whose lock it could not take: who holds it, or what failed. */
function keptForLock(e: unknown): string {
  if (isAgentsnapError(e) && e.code === 'Busy') {
    const owner = (e.data as { owner?: { pid?: number; purpose?: string } | null } | undefined)?.owner;
    return owner?.pid ? `its lock is held by pid ${owner.pid} (${owner.purpose ?? 'agentsnap'})` : 'its lock is held';
  }
  return `its lock could not be taken (${e instanceof Error ? e.message : String(e)})`;
}
