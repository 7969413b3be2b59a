// worktrees/ (above server/): session worktrees (create, fill, remove), apply,
// promote, discard (parallel.ts) and gc (gc.ts). Writes into a worktree only
// through restore/'s engine.
//
// Session worktrees: a linked git worktree per agent session, so parallel
// agents neither trample each other nor the user. No branch is created: the
// worktree's HEAD is a commit of the user's (detached), never a snapshot.
//
// Default location: `<git common dir>/agentsnap/worktrees/<session>`. It is
// inside the git directory, so it never shows in the user's `git status`,
// editors and build tools do not scan it, it is on the same filesystem as the
// repository (cheap copy-on-write clones, atomic renames), and it disappears
// with the repository. `git config agentsnap.worktreeDir <dir>` moves it.
import fs from 'node:fs';
import { ensureStateDir, readStateFile, replaceStateFile, stateLayout } from '../base/state-dir.js';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import picomatch from 'picomatch';
import { errors } from '../base/errors.js';
import { assertSessionId, newSessionId, sessionIdProblem } from '../base/ids.js';
import { openRepo, type Repo } from '../git/repo.js';
import { lastValue, parseBool, readGitConfig } from '../git/config.js';
import { loadSettings, WORKTREE_EXCLUDE_FILE, type Settings } from '../settings/settings.js';
import { commitTree, readHead, resolveCommit, treeOf, updateRefs, writeTree } from '../git/plumbing.js';
import { cleanGitEnv, runGit, splitNul } from '../git/run.js';
import { copyIndexFile } from '../snapshot/snapshot.js';
import { removeTempIndex, snapshotNow, tempIndex } from '../snapshot/snapshot-now.js';
import { openContext, type Context } from '../session/context.js';
import {
  commitMessage,
  sessionIds,
  sessionMetaRef,
  sessionPaths,
  startSession,
  type SnapshotResult,
  type StartOptions,
} from '../session/session.js';
import { applyPlan, planChanges, withoutSkipped } from '../restore/restore.js';
import { exists, rmQuiet } from '../base/fsutil.js';
import { redactText } from '../session/redact.js';
import { loadSession } from '../session/state.js';
import { sessionName } from '../session/selection.js';
import type { Session } from '../session/model.js';
import { refuseInShadow } from '../git/shadow.js';

export type StartPoint = 'current' | 'HEAD' | (string & {});

export interface WorktreeConfig {
  /** Directory holding session worktrees (absolute). */
  dir: string;
  /** picomatch patterns of untracked/ignored files copied into a new worktree (.env …). */
  copy: string[];
  /** picomatch patterns of ignored directories shared with a new worktree (node_modules …). */
  share: string[];
  /** Share by symlink when the filesystem has no copy-on-write clones (writes go through to the user's copy). */
  shareSymlink: boolean;
  /** Shell command run in a new worktree after it is set up (only ever from git config). */
  setup: string | null;
}

export function defaultWorktreeDir(repo: Pick<Repo, 'stateDir'>): string {
  return stateLayout.worktreesDir(repo);
}

/** `agentsnap.worktree*` from git config (never from a file in the repository). */
export async function worktreeConfig(repo: Repo): Promise<WorktreeConfig> {
  const cfg = await readGitConfig(repo);
  const dirRaw = lastValue(cfg, 'agentsnap.worktreedir');
  let dir = defaultWorktreeDir(repo);
  if (dirRaw) {
    const expanded = dirRaw.startsWith('~/') ? path.join(os.homedir(), dirRaw.slice(2)) : dirRaw;
    dir = path.resolve(path.dirname(repo.commonDir), expanded);
  }
  return {
    dir,
    copy: cfg.get('agentsnap.worktreecopy') ?? [],
    share: cfg.get('agentsnap.worktreeshare') ?? [],
    shareSymlink: parseBool('agentsnap.worktreeShareSymlink', lastValue(cfg, 'agentsnap.worktreesharesymlink'), false),
    setup: lastValue(cfg, 'agentsnap.worktreesetup') ?? null,
  };
}

/** What agentsnap records about a worktree it created: `sessions/<id>/worktree.json`. */
export interface WorktreeMeta {
  v: 1;
  session: string;
  name: string | null;
  path: string;
  /** The worktree's git dir (`<common dir>/worktrees/<name>`). */
  gitDir: string;
  from: StartPoint;
  /** The commit checked out (detached). */
  head: string;
  /** With --from current: the snapshot of the user's worktree the new one was filled from. */
  origin: string | null;
  sourceWorktree: string;
  createdAt: string;
  copied: string[];
  shared: { path: string; how: 'clone' | 'symlink' }[];
}

export function worktreeMetaFile(repo: Repo, session: string): string {
  return path.join(sessionPaths(repo, session).dir, 'worktree.json');
}

export function readWorktreeMeta(repo: Repo, session: string): WorktreeMeta | null {
  try {
    const m = JSON.parse(readStateFile(worktreeMetaFile(repo, session))?.toString('utf8') ?? 'null') as WorktreeMeta | null;
    return m?.v === 1 ? m : null;
  } catch {
    return null; /* torn or foreign (a link): as no session worktree (doctor and gc report the session by its journal) */
  }
}

/** The names a session answers to: the one given (`wrap --name`, `--worktree --name`), and the one shown (sessionName). */
function namesOf(repo: Repo, id: string): { given: string | null; shown: string | null } {
  const meta = readWorktreeMeta(repo, id)?.name ?? null;
  let s: Session;
  try {
    s = loadSession(repo, id);
  } catch {
    return { given: meta, shown: meta }; // an unreadable session is doctor's to report: named by its id only
  }
  return { given: meta ?? s.name ?? null, shown: meta ?? sessionName(s) };
}

/**
 * The session a user named, by its id or by its name (`wrap --name`, else the shortened command `sessions`
 * shows): an id wins, then a given name, then a shown one; a name must name exactly one session.
 * `mayBeNew`: a valid id that names nothing is returned as it is (`snap --session`
 * starts that session); otherwise it is an UnknownSession error.
 */
export function sessionIdOrName(repo: Repo, value: string, opts: { mayBeNew?: boolean } = {}): string {
  if (sessionIdProblem(value) === undefined && fs.existsSync(sessionPaths(repo, value).journal)) return value;
  const names = sessionIds(repo).map((id) => ({ id, ...namesOf(repo, id) }));
  const given = names.filter((n) => n.given === value).map((n) => n.id);
  const named = given.length > 0 ? given : names.filter((n) => n.shown === value).map((n) => n.id);
  if (named.length === 1) return named[0]!;
  if (named.length > 1) {
    throw errors.ambiguousSession(`${JSON.stringify(value)} names ${named.length} sessions: ${named.join(', ')}.`, {
      hint: 'Name the session by its id (see `agentsnap sessions`).',
      data: { name: value, sessions: named },
    });
  }
  const problem = sessionIdProblem(value);
  if (problem) {
    throw errors.invalidSessionId(`invalid session id ${JSON.stringify(value)}: ${problem}, and no session has that name.`, {
      hint: 'List sessions with `agentsnap sessions`.',
      data: { session: value },
    });
  }
  if (opts.mayBeNew) return value;
  throw errors.unknownSession(`no session ${value} in this repository (no session has that id or name).`, {
    hint: 'List sessions with `agentsnap sessions`.',
    data: { session: value },
  });
}

export function originRef(session: string): string {
  return sessionMetaRef(session, 'origin');
}

/** The environment a wrapped agent gets for its session worktree. */
export function agentEnv(meta: Pick<WorktreeMeta, 'session' | 'path' | 'sourceWorktree'>): Record<string, string> {
  return {
    AGENTSNAP_SESSION: meta.session,
    AGENTSNAP_WORKTREE: meta.path,
    AGENTSNAP_SOURCE_WORKTREE: meta.sourceWorktree,
  };
}

export interface WorktreeEntry {
  path: string;
  head: string | null;
  branch: string | null;
  prunable: boolean;
}

/** `git worktree list --porcelain`; the first entry is the main worktree. */
export async function listWorktrees(repo: Repo): Promise<WorktreeEntry[]> {
  const res = await repo.git(['worktree', 'list', '--porcelain', '-z']);
  const out: WorktreeEntry[] = [];
  let cur: WorktreeEntry | null = null;
  for (const line of splitNul(res.stdout)) {
    if (line.startsWith('worktree ')) {
      cur = { path: line.slice('worktree '.length), head: null, branch: null, prunable: false };
      out.push(cur);
    } else if (cur && line.startsWith('HEAD ')) cur.head = line.slice(5);
    else if (cur && line.startsWith('branch ')) cur.branch = line.slice(7);
    else if (cur && line.startsWith('prunable')) cur.prunable = true;
  }
  return out;
}

export interface CreateWorktreeOptions {
  /** Session id (generated when missing). */
  session?: string;
  /** A label shown by `agentsnap sessions`. */
  name?: string | null;
  /** 'current' (default): the user's worktree as it is; 'HEAD' or a revision: a clean checkout. */
  from?: StartPoint;
  settings?: Settings;
  /** Where the setup command's output goes (default: captured and returned). */
  setupStdio?: 'pipe' | 'inherit';
}

export interface CreatedWorktree {
  meta: WorktreeMeta;
  /** The new worktree's repository context. */
  repo: Repo;
  env: Record<string, string>;
  /** Things that did not work out as configured, for the caller to show. */
  warnings: string[];
  setupOutput: string | null;
}

/** The tree of the user's staged state (index), or null when it cannot be written (conflicts). Read-only on the user's index. */
async function stagedTree(repo: Repo): Promise<string | null> {
  const idx = tempIndex(repo, 'staged');
  try {
    copyIndexFile(path.join(repo.gitDir, 'index'), idx);
    return await writeTree(repo, idx);
  } catch {
    return null; // no index yet, or one git cannot write as a tree (conflicts): no staging to carry over, the files come from the snapshot
  } finally {
    removeTempIndex(idx);
  }
}

/** Untracked paths of the source worktree: ignored ones (whole ignored directories as `dir/`) and the others. */
async function untrackedEntries(repo: Repo): Promise<string[]> {
  const ignored = await repo.git(['ls-files', '-z', '--others', '--ignored', '--exclude-standard', '--directory']);
  const others = await repo.git(['ls-files', '-z', '--others', '--exclude-standard']);
  return [...splitNul(ignored.stdout), ...splitNul(others.stdout)];
}

/** Copies a file, symlink or directory tree; `force` demands copy-on-write clones (throws where there are none). */
export function copyEntry(src: string, dst: string, force: boolean): void {
  const st = fs.lstatSync(src);
  fs.mkdirSync(path.dirname(dst), { recursive: true });
  if (st.isSymbolicLink()) fs.symlinkSync(fs.readlinkSync(src), dst);
  else if (st.isDirectory()) {
    fs.mkdirSync(dst, { mode: st.mode & 0o7777 });
    for (const name of fs.readdirSync(src)) copyEntry(path.join(src, name), path.join(dst, name), force);
  } else if (st.isFile()) {
    fs.copyFileSync(
      src,
      dst,
      force ? fs.constants.COPYFILE_FICLONE_FORCE | fs.constants.COPYFILE_EXCL : fs.constants.COPYFILE_FICLONE | fs.constants.COPYFILE_EXCL,
    );
  }
}

export const NO_CLONE = new Set(['ENOTSUP', 'EOPNOTSUPP', 'EXDEV', 'ENOSYS', 'EINVAL', 'ENOTTY']);

/** Copies `agentsnap.worktreeCopy` matches and shares `agentsnap.worktreeShare` directories. */
async function setUpFiles(source: Repo, target: string, cfg: WorktreeConfig, meta: WorktreeMeta, warnings: string[]): Promise<void> {
  if (cfg.copy.length === 0 && cfg.share.length === 0) return;
  const entries = await untrackedEntries(source);
  const isCopy = cfg.copy.length > 0 ? picomatch(cfg.copy, { dot: true }) : () => false;
  const isShare = cfg.share.length > 0 ? picomatch(cfg.share, { dot: true }) : () => false;
  const excludes: string[] = [];
  for (const entry of entries) {
    const isDir = entry.endsWith('/');
    const rel = isDir ? entry.slice(0, -1) : entry;
    const dst = path.join(target, rel);
    const src = path.join(source.worktree, rel);
    if (isDir && isShare(rel)) {
      if (exists(dst)) continue;
      try {
        copyEntry(src, dst, true);
        meta.shared.push({ path: rel, how: 'clone' });
        continue;
      } catch (e) {
        rmQuiet(dst);
        if (!NO_CLONE.has((e as NodeJS.ErrnoException).code ?? '')) throw e;
      }
      if (cfg.shareSymlink) {
        fs.mkdirSync(path.dirname(dst), { recursive: true });
        fs.symlinkSync(src, dst);
        excludes.push(rel);
        meta.shared.push({ path: rel, how: 'symlink' });
      } else {
        warnings.push(
          `${rel} not shared: this filesystem has no copy-on-write clones (set agentsnap.worktreeShareSymlink=true to share it by symlink; writes then reach your copy)`,
        );
      }
      continue;
    }
    if (isCopy(rel) && !exists(dst)) {
      copyEntry(src, dst, false);
      meta.copied.push(rel);
    }
  }
  if (excludes.length > 0) {
    // The symlink is a file to git: `node_modules/` does not match it, so snapshots leave it out by this list.
    fs.writeFileSync(path.join(meta.gitDir, WORKTREE_EXCLUDE_FILE), `# shared by agentsnap (symlinks)\n${excludes.join('\n')}\n`);
  }
}

function runSetup(cmd: string, cwd: string, env: NodeJS.ProcessEnv, stdio: 'pipe' | 'inherit'): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', cmd], { cwd, env, stdio: stdio === 'inherit' ? 'inherit' : ['ignore', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    child.stdout?.on('data', (d: Buffer) => chunks.push(d));
    child.stderr?.on('data', (d: Buffer) => chunks.push(d));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 128 : 1), output: Buffer.concat(chunks).toString('utf8') }));
  });
}

/** `repo`, or the main worktree's context when `repo` is the worktree at `dir` (git must not run from inside a worktree it removes). */
export async function repoOutside(repo: Repo, dir: string): Promise<Repo> {
  if (path.resolve(repo.worktree) !== path.resolve(dir)) return repo;
  const main = (await listWorktrees(repo))[0]?.path;
  return main && path.resolve(main) !== path.resolve(dir) ? openRepo(main, { env: repo.callerEnv }) : repo;
}

/** What a nested repository of a worktree holds that exists nowhere else: removing the worktree would lose it. */
export interface NestedRepoWork {
  /** Its directory, relative to the worktree. */
  path: string;
  /** Tips (HEAD, branches, tags, stash) neither the main repository nor any remote-tracking ref of its own holds. */
  commits: string[];
  /** Files modified, staged or untracked in it (its ignored files are not counted, like the worktree's). */
  uncommitted: number;
  /** Set when git could not read it: then nothing is known, so it counts as holding work. */
  problem: string | null;
}

/**
 * The nested repositories of a worktree (the gitlinks of `tree`, plus
 * `candidates` such as the paths a snapshot left out as nested repositories
 * without a commit) that hold commits or files found nowhere else. A
 * snapshot records a nested repository only as a gitlink: its objects, other
 * branches, stash and uncommitted files are in its own `.git` alone. Costs a
 * few git processes per nested repository (discard and gc only).
 */
export async function nestedRepoWork(main: Repo, wt: Repo, tree: string, candidates: string[] = []): Promise<NestedRepoWork[]> {
  const ls = await wt.git(['ls-tree', '-r', '-z', '--full-tree', tree]);
  const gitlinks = splitNul(ls.stdout)
    .filter((l) => l.startsWith('160000 '))
    .map((l) => l.slice(l.indexOf('\t') + 1));
  const out: NestedRepoWork[] = [];
  for (const rel of [...new Set([...gitlinks, ...candidates.map((c) => c.replace(/\/+$/, ''))])].sort()) {
    const dir = path.join(wt.worktree, rel);
    // An uninitialised submodule (an empty directory) or a plain file the snapshot left out: nothing of a repository there.
    if (!exists(path.join(dir, '.git'))) continue;
    const env = cleanGitEnv(wt.env);
    const g = (args: string[]) => runGit(args, { cwd: dir, env, okCodes: [1, 128] });
    try {
      const refs = await g([
        'for-each-ref',
        '--format=%(if)%(*objectname)%(then)%(*objectname)%(else)%(objectname)%(end)',
        'refs/heads',
        'refs/tags',
        'refs/stash',
      ]);
      const head = await g(['rev-parse', '-q', '--verify', 'HEAD^{commit}']);
      const tips = new Set(
        [...refs.stdout.toString('utf8').split('\n'), head.code === 0 ? head.stdout.toString('utf8') : '']
          .map((t) => t.trim())
          .filter(Boolean),
      );
      const commits: string[] = [];
      for (const tip of tips) {
        if ((await main.git(['cat-file', '-e', `${tip}^{commit}`], { okCodes: [1, 128] })).code === 0) continue;
        const unpushed = await g(['rev-list', '-n', '1', tip, '--not', '--remotes']);
        if (unpushed.code !== 0) throw new Error(unpushed.stderr.trim() || `rev-list ${tip} failed`);
        if (unpushed.stdout.toString('utf8').trim()) commits.push(tip);
      }
      const status = await g(['status', '--porcelain', '-z', '--no-renames', '--untracked-files=all', '--ignore-submodules=none']);
      if (status.code !== 0) throw new Error(status.stderr.trim() || 'git status failed');
      const uncommitted = splitNul(status.stdout).length;
      if (commits.length > 0 || uncommitted > 0) out.push({ path: rel, commits, uncommitted, problem: null });
    } catch (e) {
      out.push({
        path: rel,
        commits: [],
        uncommitted: 0,
        problem: e instanceof Error ? (e.message.split('\n')[0] ?? 'unreadable') : String(e),
      });
    }
  }
  return out;
}

/** One line per nested repository at risk, for refusals. */
export function describeNestedWork(list: NestedRepoWork[]): string {
  return list
    .map((n) => {
      const what = n.problem
        ? `cannot be read (${n.problem})`
        : [
            n.commits.length > 0
              ? `${n.commits.length === 1 ? 'a commit' : `${n.commits.length} commits`} found nowhere else (${n.commits.map((c) => c.slice(0, 10)).join(', ')})`
              : '',
            n.uncommitted > 0 ? `${n.uncommitted} uncommitted file${n.uncommitted === 1 ? '' : 's'}` : '',
          ]
            .filter(Boolean)
            .join(' and ');
      return `${n.path}: ${what}`;
    })
    .join('; ');
}

/** Removes a worktree agentsnap created: shared symlinks first, then git's worktree and its metadata. */
export async function removeSessionWorktree(from: Repo, meta: Pick<WorktreeMeta, 'path' | 'shared'>): Promise<void> {
  const repo = await repoOutside(from, meta.path);
  for (const s of meta.shared) {
    if (s.how !== 'symlink') continue;
    const link = path.join(meta.path, s.path);
    try {
      if (fs.lstatSync(link).isSymbolicLink()) fs.unlinkSync(link);
    } catch {
      /* gone */
    }
  }
  const res = await repo.git(['worktree', 'remove', '--force', meta.path], { okCodes: [128, 1] });
  if (res.code !== 0 && exists(meta.path)) {
    // e.g. a worktree holding submodules: git refuses, the directory is ours to remove (rm does not follow symlinks).
    fs.rmSync(meta.path, { recursive: true, force: true });
  }
  await repo.git(['worktree', 'prune']);
}

/** The commit a session worktree starts from; refused when there is none. */
async function startCommit(repo: Repo, from: StartPoint): Promise<string> {
  const head = await readHead(repo);
  const commit = from === 'current' || from === 'HEAD' ? head.commit : await resolveCommit(repo, from);
  if (!commit) {
    throw errors.invalidArgument(
      from === 'current' || from === 'HEAD'
        ? 'the repository has no commit yet: a worktree needs one to start from.'
        : `${from} is not a commit.`,
      {
        hint:
          from === 'current' || from === 'HEAD'
            ? 'Commit something first, or run the agent in this worktree.'
            : 'Give a branch, tag or commit id.',
        data: { from },
      },
    );
  }
  return commit;
}

/**
 * Creates a linked worktree for a session (the session itself is started by
 * the caller in the returned repo, or by startWorktreeSession). Nothing is
 * left behind when it fails.
 */
export async function createSessionWorktree(repo: Repo, opts: CreateWorktreeOptions = {}): Promise<CreatedWorktree> {
  refuseInShadow(repo, 'a session worktree (--worktree)');
  const session = opts.session ? assertSessionId(opts.session) : newSessionId();
  const from: StartPoint = opts.from ?? 'current';
  const settings = opts.settings ?? (await loadSettings(repo));
  const cfg = await worktreeConfig(repo);
  if (fs.existsSync(sessionPaths(repo, session).journal)) {
    throw errors.invalidArgument(`session ${session} already exists.`, { data: { session } });
  }
  const commit = await startCommit(repo, from);
  const wtPath = path.join(cfg.dir, session);
  if (exists(wtPath)) {
    throw errors.refused(`${wtPath} already exists.`, { hint: 'Remove it, or pick another session id.', data: { path: wtPath } });
  }

  // The user's worktree as it is, before anything else happens.
  let current: { tree: string; skipped: string[]; staged: string | null; origin: string } | null = null;
  if (from === 'current') {
    const snap = await snapshotNow(repo, settings, 'origin');
    const origin = await commitTree(repo, {
      tree: snap.tree,
      parents: [],
      message: commitMessage({
        summary: `session ${session} origin (${repo.worktree})`,
        session,
        step: null,
        phase: 'origin',
        kind: 'origin',
        tool: null,
        head: commit,
      }),
    });
    await updateRefs(repo, [{ ref: originRef(session), value: origin }]);
    current = { tree: snap.tree, skipped: snap.skipped, staged: await stagedTree(repo), origin };
  }

  const metaDir = sessionPaths(repo, session).dir;
  const warnings: string[] = [];
  let added = false;
  try {
    fs.mkdirSync(path.dirname(wtPath), { recursive: true, mode: 0o700 });
    await repo.git(['worktree', 'add', '-q', '--detach', wtPath, commit]);
    added = true;
    const wt = await openRepo(wtPath, { env: repo.callerEnv });
    const meta: WorktreeMeta = {
      v: 1,
      session,
      // A label the user typed: redacted like everything else agentsnap writes down.
      name: opts.name ? redactText(opts.name, settings.redactPatterns) : null,
      path: wt.worktree,
      gitDir: wt.gitDir,
      from,
      head: commit,
      origin: current?.origin ?? null,
      sourceWorktree: repo.worktree,
      createdAt: new Date().toISOString(),
      copied: [],
      shared: [],
    };
    if (current) {
      // Mirror the user's staged state (cheap: read-tree -m keeps stat data of unchanged entries),
      // then write the worktree's files exactly as the user has them, left uncommitted.
      const headTree = await treeOf(wt, commit);
      if (current.staged && current.staged !== headTree) await wt.git(['read-tree', '-m', current.staged]);
      // The restore engine, all or nothing; a tracked file the snapshot skipped keeps its checked-out version.
      const { plan } = withoutSkipped(await planChanges(wt, headTree, current.tree), current.skipped);
      await applyPlan(wt, plan, { ifNotExpected: 'refuse', freshCheckout: true, target: { tree: current.tree } });
    }
    await setUpFiles(repo, wt.worktree, cfg, meta, warnings);
    ensureStateDir(metaDir);
    replaceStateFile(worktreeMetaFile(repo, session), JSON.stringify(meta, null, 2) + '\n');
    const env = agentEnv(meta);
    let setupOutput: string | null = null;
    if (cfg.setup) {
      const res = await runSetup(cfg.setup, wt.worktree, { ...repo.callerEnv, ...env }, opts.setupStdio ?? 'pipe');
      setupOutput = res.output;
      if (res.code !== 0) {
        throw errors.worktreeSetupFailed(`the worktree setup command (agentsnap.worktreeSetup) failed with exit code ${res.code}.`, {
          hint: 'Fix the command or unset it: git config --unset agentsnap.worktreeSetup. The worktree was removed.',
          data: { command: cfg.setup, exitCode: res.code, output: res.output.slice(-4000) },
        });
      }
    }
    return { meta, repo: wt, env, warnings, setupOutput };
  } catch (e) {
    if (added) await removeSessionWorktree(repo, { path: wtPath, shared: [] }).catch(() => undefined); // cleanup under the failure that is rethrown below: that failure is the one reported
    if (!fs.existsSync(sessionPaths(repo, session).journal)) rmQuiet(metaDir);
    if (current) await updateRefs(repo, [{ ref: originRef(session), value: null }]).catch(() => undefined); // cleanup under the failure that is rethrown below: that failure is the one reported
    throw e;
  }
}

export interface WorktreeSessionOptions extends CreateWorktreeOptions, Omit<StartOptions, 'id' | 'settings'> {}

export interface WorktreeSession extends CreatedWorktree {
  baseline: SnapshotResult;
  /** The new worktree's context (its settings read once), for the session's other steps. */
  ctx: Context;
}

/**
 * `wrap --worktree`: a session worktree plus the session started in it
 * (baseline = the new worktree after setup). Run the agent with
 * cwd = meta.path and env = { ...process.env, ...env }.
 */
export async function startWorktreeSession(repo: Repo, opts: WorktreeSessionOptions = {}): Promise<WorktreeSession> {
  const created = await createSessionWorktree(repo, opts);
  try {
    const ctx = await openContext(created.repo);
    const baseline = await startSession(ctx, {
      id: created.meta.session,
      agent: opts.agent ?? null,
      command: opts.command ?? null,
      owner: opts.owner ?? null,
      ...(opts.environment?.length ? { environment: opts.environment } : {}),
      ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
    });
    return { ...created, baseline, ctx };
  } catch (e) {
    await removeSessionWorktree(repo, created.meta).catch(() => undefined); // cleanup under the failure that is rethrown below: that failure is the one reported
    if (!fs.existsSync(sessionPaths(repo, created.meta.session).journal)) rmQuiet(sessionPaths(repo, created.meta.session).dir);
    await updateRefs(repo, [{ ref: originRef(created.meta.session), value: null }]).catch(() => undefined); // cleanup under the failure that is rethrown below: that failure is the one reported
    throw e;
  }
}
