// Over 500 lines: apply, promote and discard share the safety snapshot, the
// three-way merge and the journaling of what came back; kept together.
//
// Bringing parallel sessions back, or throwing them away: the sessions
// overview, apply (three-way merge into the current worktree), promote (one
// ordinary commit on a new branch) and discard (final snapshot, then remove
// the worktree).
import fs from 'node:fs';
import path from 'node:path';
import { errors } from '../base/errors.js';
import { newSessionId } from '../base/ids.js';
import { checkGitVersion, openRepo, parseGitVersion, versionAtLeast, type Repo } from '../git/repo.js';
import { loadSettings, type Settings } from '../settings/settings.js';
import {
  eventBase,
  type JournalEvent,
  type SessionApplyEvent,
  type SessionDiscardEvent,
  type SessionPromoteEvent,
  type SkippedFile,
} from '../session/journal.js';
import { clearStaleGitLock, withLock } from '../base/lock.js';
import { openContext, plainContext } from '../session/context.js';
import { commitTree, diffTrees, indexEnv, readHead, treeOf, updateRefs, type RefUpdate } from '../git/plumbing.js';
import { splitNul } from '../git/run.js';
import { readIndexFlags } from '../git/index-file.js';
import type { Session } from '../session/model.js';
import { snapshotTree } from '../snapshot/snapshot.js';
import {
  commitMessage,
  contentLockFile,
  endSession,
  headRef,
  listSessions,
  loadSession,
  META_REF_PREFIX,
  sessionMetaRef,
  sessionPaths,
  sessionRefs,
  withSessionLock,
  wrapperRunning,
  type SessionSummary,
} from '../session/session.js';
import {
  keptCommit,
  planChanges,
  prepareRestore,
  releaseKept,
  writeRestore,
  type LeftPath,
  type RestoreOptions,
} from '../restore/restore.js';
import {
  describeNestedWork,
  listWorktrees,
  nestedRepoWork,
  readWorktreeMeta,
  removeSessionWorktree,
  repoOutside,
  type StartPoint,
  type WorktreeMeta,
} from './worktree.js';
import { snapshotNow } from '../snapshot/snapshot-now.js';
import { oursWithAsidesBack, treeWithEntries } from './killed-asides.js';
import { APPLY_RESULT_TRAILER, beforeInterrupted, interruptedApplies, undoPaths } from './apply-interrupted.js';
import { diskUse, exists, unlinkQuiet } from '../base/fsutil.js';
import { diffStat, emptyTree, type FileStat } from './diffstat.js';
import { stateLayout } from '../base/state-dir.js';
import { refuseInShadow } from '../git/shadow.js';

export const SAFETY_REF_PREFIX = `${META_REF_PREFIX}safety/`;

export interface SessionOverview extends SessionSummary {
  /** 'main': the repository's main worktree; 'agentsnap': a worktree agentsnap created; 'linked': another linked worktree. */
  worktreeKind: 'main' | 'agentsnap' | 'linked';
  worktreeExists: boolean;
  name: string | null;
  from: StartPoint | null;
  /** The wrapper process is alive. */
  running: boolean;
  pid: number | null;
  /** Paths that differ between the session's baseline and its latest snapshot. */
  filesChanged: number;
  /** Bytes on disk: the session's worktree (null for worktrees agentsnap did not create) and its state (journal, index). */
  diskUse: { worktree: number | null; state: number };
}

async function countChanged(repo: Repo, from: string, to: string): Promise<number> {
  if (from === to) return 0;
  const res = await repo.git(['diff-tree', '--ignore-submodules=none', '-r', '-z', '--no-renames', '--name-only', from, to], {
    okCodes: [128],
  });
  return res.code === 0 ? splitNul(res.stdout).length : 0;
}

/** `agentsnap sessions`: every session with its worktree, liveness, changes and disk use. */
export async function sessionsOverview(repo: Repo): Promise<SessionOverview[]> {
  const list = await listSessions(repo);
  const worktrees = await listWorktrees(repo);
  const main = worktrees[0]?.path ?? repo.worktree;
  const out: SessionOverview[] = [];
  for (const s of list) {
    const meta = readWorktreeMeta(repo, s.id);
    const kind: SessionOverview['worktreeKind'] = meta ? 'agentsnap' : s.worktree === main ? 'main' : 'linked';
    const wtExists = exists(s.worktree);
    out.push({
      ...s,
      worktreeKind: kind,
      worktreeExists: wtExists,
      name: meta?.name ?? s.name,
      from: meta?.from ?? null,
      running: s.status === 'running' && !!s.owner,
      pid: s.owner?.pid ?? null,
      filesChanged: await countChanged(repo, s.baseline, s.head),
      diskUse: { worktree: meta && wtExists ? diskUse(meta.path) : null, state: diskUse(sessionPaths(repo, s.id).dir) },
    });
  }
  return out;
}

/** Journals an event of the session (and moves refs) the way every step does: under its lock; journal, refs, state. */
export function recordEvent(repo: Repo, id: string, settings: Settings, ev: JournalEvent, refs: RefUpdate[] = []): Promise<void> {
  return withSessionLock(plainContext(repo, settings), id, ev.type, (locked) => locked.append(ev, refs));
}

export interface ApplyOptions {
  /** Write the merge result with conflict markers instead of refusing. */
  forceConflicts?: boolean;
  /** Only say what the apply would write: no lock, no safety snapshot, no write, no journal event; refused where the apply is. */
  dryRun?: boolean;
  settings?: Settings;
  /** Test seam: the restore engine's hooks around each replaced path (a write racing with the apply). */
  restoreHooks?: Pick<RestoreOptions, 'beforeReplace' | 'afterCheck'>;
  /** Test seam: called once everything is written and the safety ref is final, before the journal event. */
  afterWrites?: () => void;
}

export interface ApplyResult {
  session: string;
  /** Nothing to apply: the session changed nothing. */
  empty: boolean;
  /** Only what the apply would do (written, created, deleted, conflicts, left, stat): nothing was changed, no safety ref. */
  dryRun: boolean;
  safety: string | null;
  safetyRef: string | null;
  written: string[];
  /** Of `written`, files that are new in this worktree. */
  created: string[];
  deleted: string[];
  conflicts: string[];
  /** Submodule entries that were not written. */
  skipped: string[];
  /** Paths that could not be written after all (an I/O error, or changed during the write), and why. */
  left: LeftPath[];
  /** Lines added and deleted per file written or deleted (this worktree before → after). */
  stat: FileStat[];
}

async function mergeTrees(repo: Repo, base: string, ours: string, theirs: string): Promise<{ tree: string; conflicts: string[] }> {
  const v = parseGitVersion(await checkGitVersion(repo.env).then((x) => `git version ${x}`));
  if (!v || !versionAtLeast(v, '2.38.0')) {
    throw errors.gitTooOld('apply needs git 2.38 or newer (git merge-tree --write-tree).', { hint: 'Upgrade git.' });
  }
  // merge-tree wants commits: base, and ours/theirs as its children.
  const mk = (tree: string, parents: string[]) =>
    commitTree(repo, { tree, parents, message: 'agentsnap: merge input\n\nAgentsnap-Kind: merge-input\n' });
  const baseC = await mk(base, []);
  const [oursC, theirsC] = await Promise.all([mk(ours, [baseC]), mk(theirs, [baseC])]);
  const res = await repo.git(['merge-tree', '--write-tree', '--no-messages', '--name-only', '-z', oursC, theirsC], { okCodes: [1] });
  const parts = splitNul(res.stdout);
  return { tree: parts[0] ?? '', conflicts: res.code === 1 ? [...new Set(parts.slice(1).filter(Boolean))] : [] };
}

/**
 * `agentsnap apply <session>`: the session's net change (baseline → latest
 * snapshot) merged into this worktree. Refuses with the list of conflicting
 * files (nothing written) unless forceConflicts; snapshots this worktree
 * first (refs/agentsnap/safety/…) so the apply can be undone.
 */
export async function applySession(repo: Repo, id: string, opts: ApplyOptions = {}): Promise<ApplyResult> {
  refuseInShadow(repo, 'apply');
  const s = loadSession(repo, id);
  if (path.resolve(s.worktree) === path.resolve(repo.worktree)) {
    throw errors.invalidArgument(`session ${id} ran in this worktree: its changes are already here.`, {
      hint: 'Run apply in the worktree that should receive them.',
      data: { session: id },
    });
  }
  const settings = opts.settings ?? (await loadSettings(repo));
  const base = s.baselineTree ?? (await treeOf(repo, s.baseline));
  const theirs = s.headTree ?? (await treeOf(repo, s.head));
  const result: ApplyResult = {
    session: id,
    empty: false,
    dryRun: !!opts.dryRun,
    safety: null,
    safetyRef: null,
    written: [],
    created: [],
    deleted: [],
    conflicts: [],
    skipped: [],
    left: [],
    stat: [],
  };
  if (base === theirs) return { ...result, empty: true };

  // The worktree content lock, like every restore: no snapshot of this worktree reads it half written.
  // A dry run takes no lock, as undo's does: it writes nothing a snapshot could see half written.
  const lockFile = contentLockFile(repo);
  const locked = <T>(fn: () => Promise<T>): Promise<T> =>
    opts.dryRun ? fn() : withLock(lockFile, { timeoutMs: settings.lockTimeoutMs, purpose: 'apply' }, fn);
  const applied = await locked(() => applyUnderLock(repo, id, { base, theirs, result, settings, opts }));
  if (!('ev' in applied)) return applied;
  opts.afterWrites?.();
  // Journaled after the content lock is released: lock order is session lock, then content lock.
  await recordEvent(repo, id, settings, applied.ev);
  return applied.result;
}

interface ApplyInputs {
  base: string;
  theirs: string;
  /** The result with nothing applied yet. */
  result: ApplyResult;
  settings: Settings;
  opts: ApplyOptions;
}

/** What an apply wrote (or would write), by kind of change. */
function changesByKind(changes: { path: string; from: unknown; to: unknown }[]): {
  written: string[];
  created: string[];
  deleted: string[];
} {
  return {
    written: changes.filter((c) => c.to !== null).map((c) => c.path),
    created: changes.filter((c) => c.to !== null && c.from === null).map((c) => c.path),
    deleted: changes.filter((c) => c.to === null).map((c) => c.path),
  };
}

/** The apply itself, under the content lock: merge, check, then (unless a dry run) the safety commit and the writes. */
async function applyUnderLock(repo: Repo, id: string, a: ApplyInputs): Promise<ApplyResult | { ev: JournalEvent; result: ApplyResult }> {
  const { base, theirs, result, opts } = a;
  const ours = (await snapshotNow(repo, a.settings, 'safety')).tree;
  // A restore into this worktree killed while a path was aside (an apply killed mid-way, applied
  // again): the merge sees the aside back at its path (see killed-asides.ts). The safety commit and
  // the plan start from ours as it is on disk, so the plan also removes the aside.
  const oursSeen = await oursWithAsidesBack(repo, base, ours, theirs);
  const merged = await mergeTrees(repo, base, oursSeen, theirs);
  if (merged.conflicts.length > 0 && !opts.forceConflicts) {
    throw errors.conflict(`applying session ${id} conflicts in ${merged.conflicts.length} file(s): ${merged.conflicts.join(', ')}.`, {
      hint:
        'Nothing was changed. Resolve by hand (see `agentsnap diff 0 --session ' +
        id +
        '`), or write conflict markers with --force-conflicts.',
      data: { session: id, conflicts: merged.conflicts },
    });
  }
  const plan = await planChanges(repo, ours, merged.tree);
  const head = (await readHead(repo)).commit;
  const safetyMessage = commitMessage({
    summary: `before applying session ${id} to ${repo.worktree}`,
    session: id,
    step: null,
    phase: 'safety',
    kind: 'safety',
    tool: null,
    head,
  });
  // An apply of this session into this worktree killed before its journal event: this run completes it
  // (see apply-interrupted.ts), also when it has nothing left to write.
  const killed = await interruptedApplies(repo, id, safetyMessage.slice(0, safetyMessage.indexOf('\n')));
  if (plan.length === 0 && killed.length === 0) return { ...result, empty: true, conflicts: merged.conflicts };
  // Everything is checked before the safety commit and the first write: a path that is not as
  // snapshotted (changed meanwhile, an ignored file or a symlink in the way) refuses the whole apply.
  const prepared = await prepareRestore(repo, plan, { ifNotExpected: 'refuse', target: { tree: merged.tree } });
  if (opts.dryRun) {
    // The plan the run below executes, checked against the disk as it checks it: what writeRestore reports applied.
    const { written, created, deleted } = changesByKind([...prepared.already, ...prepared.todo]);
    const left = prepared.left.filter((l) => !prepared.nested.includes(l.path));
    const stat = await diffStat(repo, ours, merged.tree, [...written, ...deleted]);
    return { ...result, written, created, deleted, conflicts: merged.conflicts, skipped: prepared.nested, left, stat };
  }
  // The safety commit is this apply's record until its journal event: what it writes is in a trailer.
  const message = `${safetyMessage}${APPLY_RESULT_TRAILER}: ${merged.tree}\n`;
  const safety = await writeSafetyCommit(repo, { ours, oursSeen, killed, message });
  const restored = writeRestore(repo, prepared, { ...opts.restoreHooks });
  const kept = await keepOverwritten(repo, id, restored, head, { ...safety, message });
  releaseKept(restored);
  return appliedOutcome(repo, id, result, { ours, merged, killed, restored, safety: { ...safety, commit: kept.safety }, kept: kept.kept });
}

type KilledApplies = Awaited<ReturnType<typeof interruptedApplies>>;
interface SafetyCommit {
  commit: string;
  ref: string;
  /** This worktree before the first of the killed applies this one completes, and the paths they wrote. */
  before: { tree: string; paths: string[] };
}

/** The undo point of an apply, under a new safety ref. */
async function writeSafetyCommit(
  repo: Repo,
  a: { ours: string; oursSeen: string; killed: KilledApplies; message: string },
): Promise<SafetyCommit> {
  const { ours, killed, message } = a;
  let safety = await commitTree(repo, { tree: ours, parents: [], message });
  // Completing killed applies: the undo point is this worktree before the first of them, on the paths
  // they wrote (this worktree as it is now, asides and all, stays reachable as the first parent).
  const before = killed.length > 0 ? await beforeInterrupted(repo, a.oursSeen, killed) : { tree: ours, paths: [] };
  if (killed.length > 0) safety = await commitTree(repo, { tree: before.tree, parents: [safety, ...killed.map((k) => k.commit)], message });
  const safetyRef = `${SAFETY_REF_PREFIX}${newSessionId()}`;
  // Each apply names a new safety ref, so the lock of one whose git was killed (an apply killed
  // mid-way) is never in the way of a later update that would clear it: clear it here.
  await clearStaleSafetyRefLocks(repo);
  await updateRefs(repo, [{ ref: safetyRef, value: safety }]);
  return { commit: safety, ref: safetyRef, before };
}

/** The versions the apply overwrote, kept reachable from the safety ref: the safety commit that holds them (or the first one). */
async function keepOverwritten(
  repo: Repo,
  id: string,
  restored: ReturnType<typeof writeRestore>,
  head: string | null,
  safety: SafetyCommit & { message: string },
): Promise<{ safety: string; kept: string | null }> {
  const kept = await keptCommit(
    repo,
    restored.kept,
    commitMessage({
      summary: `versions kept while applying session ${id} to ${repo.worktree}`,
      session: id,
      step: null,
      phase: 'safety',
      kind: 'kept',
      tool: null,
      head,
    }),
  );
  if (!kept) return { safety: safety.commit, kept: null };
  // The safety ref keeps them reachable: same tree (this worktree before the apply), second parent the kept versions.
  const safetyNow = await commitTree(repo, { tree: safety.before.tree, parents: [safety.commit, kept], message: safety.message });
  await updateRefs(repo, [{ ref: safety.ref, value: safetyNow }]);
  return { safety: safetyNow, kept };
}

/** What an apply did: its journal event and its result. */
async function appliedOutcome(
  repo: Repo,
  id: string,
  result: ApplyResult,
  a: {
    ours: string;
    merged: { tree: string; conflicts: string[] };
    killed: KilledApplies;
    restored: ReturnType<typeof writeRestore>;
    safety: SafetyCommit;
    kept: string | null;
  },
): Promise<{ ev: JournalEvent; result: ApplyResult }> {
  const { merged, killed, restored, safety, kept } = a;
  const left = restored.left.filter((l) => !restored.nested.includes(l.path));
  const { written, created, deleted } = changesByKind(restored.applied);
  // What apply --undo takes back: also the paths the killed applies wrote.
  const byKilled = await undoPaths(repo, safety.before.tree, merged.tree, safety.before.paths);
  const undoWritten = [...new Set([...written, ...byKilled.written])].sort();
  const undoDeleted = [...new Set([...deleted, ...byKilled.deleted])].sort();
  const ev: SessionApplyEvent = {
    ...eventBase(id),
    type: 'session.apply',
    target: repo.worktree,
    safety: safety.commit,
    safetyRef: safety.ref,
    result: merged.tree,
    written: undoWritten,
    deleted: undoDeleted,
    conflicts: merged.conflicts,
    ...(killed.length > 0 ? { completes: killed.map((k) => k.ref) } : {}),
    ...(left.length > 0 ? { left } : {}),
    ...(kept ? { kept } : {}),
  };
  const stat = await diffStat(repo, a.ours, merged.tree, [...written, ...deleted]);
  const applied = { written, created, deleted, conflicts: merged.conflicts, skipped: restored.nested, left, stat };
  return { ev, result: { ...result, safety: safety.commit, safetyRef: safety.ref, ...applied } };
}

export interface PromoteOptions {
  branch: string;
  message?: string | undefined;
  force?: boolean;
  /** Also commit what was uncommitted in the session's worktree when it started (left out by default). */
  includeUncommitted?: boolean;
  settings?: Settings;
}

export interface PromoteResult {
  session: string;
  branch: string;
  commit: string;
  parent: string | null;
  tree: string;
  /** Lines added and deleted per file of the commit (its parent → it). */
  stat: FileStat[];
  /**
   * Paths that differed from the parent commit already when the session
   * started (the user's uncommitted edits and untracked files in that
   * worktree, not the agent's): left out of the commit unless `uncommittedIncluded`.
   */
  uncommitted: string[];
  uncommittedIncluded: boolean;
}

const IDENTITY_VARS = [
  'GIT_AUTHOR_NAME',
  'GIT_AUTHOR_EMAIL',
  'GIT_AUTHOR_DATE',
  'GIT_COMMITTER_NAME',
  'GIT_COMMITTER_EMAIL',
  'GIT_COMMITTER_DATE',
];

/** The user's identity variables from the caller's environment (runGit strips GIT_* by default). */
function identityEnv(repo: Repo): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of IDENTITY_VARS) {
    const v = repo.callerEnv[k];
    if (v) out[k] = v;
  }
  return out;
}

/**
 * `agentsnap promote <session> --branch NAME`: a new branch holding one
 * ordinary commit (the user's identity, no agentsnap trailers) whose parent is
 * the commit the session started from and whose tree is the session's result.
 */
export async function promoteSession(repo: Repo, id: string, opts: PromoteOptions): Promise<PromoteResult> {
  refuseInShadow(repo, 'promote');
  const s = loadSession(repo, id);
  const settings = opts.settings ?? (await loadSettings(repo));
  const check = await repo.git(['check-ref-format', '--branch', opts.branch], { okCodes: [1, 128] });
  if (check.code !== 0 || opts.branch.startsWith('-')) {
    throw errors.invalidArgument(`${JSON.stringify(opts.branch)} is not a valid branch name.`, { data: { branch: opts.branch } });
  }
  const parent = s.baseHead;
  // As the user's own commit would hold it (see both functions): the session's result, and its baseline.
  const asCommitted = async (t: string) => withGitModes(repo, await withEntriesNotOnDisk(repo, s, t, parent), parent);
  const result = await asCommitted(s.headTree ?? (await treeOf(repo, s.head)));
  const baseline = await asCommitted(s.baselineTree ?? (await treeOf(repo, s.baseline)));
  const parentTree = parent ? await treeOf(repo, parent) : await emptyTree(repo);
  // What differed from the parent commit when the session started was the user's, not the agent's
  // (a session in the user's own worktree, or a worktree filled from it): the user's untracked notes
  // and half-done edits must not land silently in a commit that may be pushed. Left out by default:
  // the session's net change (baseline → result) merged onto the parent commit.
  const uncommitted = baseline === parentTree ? [] : (await diffStat(repo, parentTree, baseline)).map((f) => f.path);
  let tree = result;
  if (uncommitted.length > 0 && !opts.includeUncommitted) {
    const merged = await mergeTrees(repo, baseline, parentTree, result);
    if (merged.conflicts.length > 0) {
      throw errors.conflict(
        `session ${id} changed ${merged.conflicts.length} file(s) that were already changed in its worktree before it started (uncommitted), and the two cannot be told apart: ${merged.conflicts.join(', ')}.`,
        {
          hint: "Nothing was created. Commit them with the session's work with --include-uncommitted, or bring the session back with `agentsnap apply` and commit by hand.",
          data: { session: id, conflicts: merged.conflicts, uncommitted },
        },
      );
    }
    tree = merged.tree;
  }
  if (parent && parentTree === tree) {
    throw errors.nothingToDo(`session ${id} has no changes against the commit it started from (${parent.slice(0, 10)}).`, {
      data: { session: id },
    });
  }
  const env = identityEnv(repo);
  for (const who of ['GIT_AUTHOR_IDENT', 'GIT_COMMITTER_IDENT']) {
    const res = await repo.git(['var', who], { okCodes: [128, 1], extraEnv: env });
    if (res.code !== 0) {
      throw errors.noIdentity('promote commits as you, but git has no identity configured.', {
        hint: 'Set it: git config --global user.name "Your Name" && git config --global user.email you@example.com',
        data: { stderr: res.stderr },
      });
    }
  }
  const message = (opts.message ?? `Changes from agent session ${id}`).replace(/\s+$/, '') + '\n';
  const args = ['commit-tree', tree];
  if (parent) args.push('-p', parent);
  args.push('-F', '-');
  const commit = (await repo.git(args, { input: message, extraEnv: env })).stdout.toString('utf8').trim();
  const br = await repo.git(['branch', '--no-track', ...(opts.force ? ['--force'] : []), opts.branch, commit], { okCodes: [128] });
  if (br.code !== 0) {
    const exists = /already exists/.test(br.stderr);
    throw errors.refused(`cannot create branch ${opts.branch}: ${br.stderr.replace(/^fatal: /, '').trim()}`, {
      hint: exists ? 'Pick another name, or replace it with --force.' : 'Pick another branch name.',
      data: { branch: opts.branch, commit },
    });
  }
  const ev: SessionPromoteEvent = { ...eventBase(id), type: 'session.promote', branch: opts.branch, commit, parent };
  await recordEvent(repo, id, settings, ev);
  const stat = await diffStat(repo, parentTree, tree);
  return {
    session: id,
    branch: opts.branch,
    commit,
    parent,
    tree,
    stat,
    uncommitted,
    uncommittedIncluded: uncommitted.length > 0 && !!opts.includeUncommitted,
  };
}

/**
 * Snapshots hold the worktree as it is on disk, so in a sparse checkout the
 * entries outside the cone (skip-worktree, not on disk) are not in them. A
 * commit of such a tree would delete them all: the promoted tree keeps the
 * base commit's version of every skip-worktree entry of the session's
 * worktree that is in neither the session's baseline nor its result (the
 * session never had it on disk, so it did not delete it).
 */
async function withEntriesNotOnDisk(
  repo: Repo,
  s: Pick<Session, 'worktree' | 'baselineTree' | 'baseline'>,
  tree: string,
  parent: string | null,
): Promise<string> {
  if (!parent) return tree;
  let indexFile: string;
  try {
    const wt = path.resolve(s.worktree) === path.resolve(repo.worktree) ? repo : await openRepo(s.worktree, { env: repo.callerEnv });
    indexFile = path.join(wt.gitDir, 'index');
  } catch {
    return tree; // the session's worktree is gone: nothing says what was outside its cone
  }
  const flags = readIndexFlags(indexFile, repo.objectFormat);
  const skip = new Set(
    flags
      ? flags.skipWorktree.map((b) => b.toString('utf8'))
      : splitNul((await repo.git(['-c', 'index.sparse=false', 'ls-files', '-v', '-z'], { extraEnv: indexEnv(indexFile) })).stdout)
          .filter((r) => r[0] === 'S' || r[0] === 's')
          .map((r) => r.slice(2)),
  );
  if (skip.size === 0) return tree;
  const gone = async (to: string) => {
    const res = await repo.git([
      'diff-tree',
      '--ignore-submodules=none',
      '-r',
      '-z',
      '--no-renames',
      '--raw',
      '--diff-filter=D',
      parent,
      to,
    ]);
    const tokens = splitNul(res.stdout);
    const out = new Map<string, string>();
    for (let i = 0; i + 1 < tokens.length; i += 2) {
      const m = /^:(\d{6}) \d{6} ([0-9a-f]+) [0-9a-f]+ D$/.exec(tokens[i] ?? '');
      const p = tokens[i + 1] ?? '';
      if (m && skip.has(p)) out.set(p, `${m[1]} ${m[2]}\t${p}`);
    }
    return out;
  };
  const fromResult = await gone(tree);
  if (fromResult.size === 0) return tree;
  const baseline = s.baselineTree ?? (await treeOf(repo, s.baseline));
  const fromBaseline = await gone(baseline);
  const keep = [...fromResult].filter(([p]) => fromBaseline.has(p)).map(([, line]) => line);
  if (keep.length === 0) return tree;
  return treeWithEntries(repo, tree, keep, 'promote');
}

/**
 * Snapshots record the exec bit and the file type as they are on disk
 * whatever core.fileMode and core.symlinks say (so undo brings an executable
 * back as one, and a plain file as one). A commit the user makes under
 * core.fileMode=false keeps the mode git already has and adds new files as
 * 100644, because on such filesystems the disk's x bit means nothing; under
 * core.symlinks=false git keeps 120000 for the plain file that stands in for
 * a symlink it has (its content is the link text). A promoted commit does the
 * same, so it carries no mode or type changes the user's own commit would not.
 */
async function withGitModes(repo: Repo, tree: string, parent: string | null): Promise<string> {
  const cfg = await repo.git(['config', '-z', '--type=bool', '--get-regexp', '^core\\.(filemode|symlinks)$'], { okCodes: [1] });
  const off = new Set(
    splitNul(cfg.stdout)
      .filter((r) => r.endsWith('\nfalse'))
      .map((r) => r.slice(0, r.indexOf('\n'))),
  );
  const noFileMode = off.has('core.filemode');
  const noSymlinks = off.has('core.symlinks');
  if (!noFileMode && !(noSymlinks && parent)) return tree;
  const args = parent
    ? ['diff-tree', '--ignore-submodules=none', '-r', '-z', '--no-renames', '--raw', parent, tree]
    : ['ls-tree', '-r', '-z', tree];
  const tokens = splitNul((await repo.git(args)).stdout);
  const fix: string[] = [];
  if (parent) {
    for (let i = 0; i + 1 < tokens.length; i += 2) {
      const m = /^:(\d{6}) (\d{6}) [0-9a-f]+ ([0-9a-f]+) ([AMT])$/.exec(tokens[i] ?? '');
      if (!m) continue;
      const [, was, now, oid, letter] = m;
      const regular = (x: string | undefined) => x === '100644' || x === '100755';
      let want = now;
      if (noSymlinks && was === '120000' && regular(now)) want = was;
      else if (noFileMode) want = letter === 'A' ? '100644' : regular(was) && regular(now) ? was : now;
      if (regular(now) && want !== now) fix.push(`${want} ${oid}\t${tokens[i + 1] ?? ''}`);
    }
  } else {
    for (const rec of tokens) {
      const m = /^100755 blob ([0-9a-f]+)\t(.*)$/s.exec(rec);
      if (m) fix.push(`100644 ${m[1]}\t${m[2]}`);
    }
  }
  if (fix.length === 0) return tree;
  return treeWithEntries(repo, tree, fix, 'promote');
}

export interface DiscardOptions {
  /** Drop refs and journal now instead of at the next gc. */
  purge?: boolean;
  /** Discard even when the wrapper is alive, or when the final snapshot left files out. */
  force?: boolean;
  settings?: Settings;
}

export interface DiscardResult {
  session: string;
  /** The final snapshot, when the worktree had changed since the last one. */
  finalCommit: string | null;
  worktreeRemoved: string | null;
  purged: boolean;
  alreadyDiscarded: boolean;
}

/** Removes a session's refs and state dir (the dir first: refs without a dir are swept by gc). */
export async function dropSession(repo: Repo, id: string): Promise<void> {
  const dir = sessionPaths(repo, id).dir;
  if (exists(dir)) {
    const tmpDir = stateLayout.tmpDir(repo);
    fs.mkdirSync(tmpDir, { recursive: true, mode: 0o700 });
    const tomb = path.join(tmpDir, `dropped-${id}-${process.pid}-${Date.now()}`);
    fs.renameSync(dir, tomb);
    fs.rmSync(tomb, { recursive: true, force: true });
  }
  await updateRefs(
    repo,
    (await sessionRefs(repo, id)).map((ref) => ({ ref, value: null })),
  );
}

/** Keeps commits the agent made in its (detached) worktree reachable after the worktree goes. */
async function worktreeHeadToKeep(wt: Repo, meta: WorktreeMeta | null): Promise<string | null> {
  if (!meta) return null;
  const head = (await readHead(wt)).commit;
  return head && head !== meta.head ? head : null;
}

/** Refuses a discard whose removal of the worktree would delete what its final snapshot does not hold (nothing removed yet). */
async function refuseDiscardLosingWork(
  repo: Repo,
  wt: Repo,
  id: string,
  worktree: string,
  meta: NonNullable<ReturnType<typeof readWorktreeMeta>>,
  snap: { tree: string; skipped: SkippedFile[] },
): Promise<void> {
  const copied = new Set(meta.copied ?? []);
  const lost = snap.skipped.filter((f) => !copied.has(f.path) && !(meta.shared ?? []).some((x) => x.path === f.path));
  if (lost.length > 0) {
    throw errors.refused(
      `the final snapshot of session ${id} left out ${lost.length} file(s) that removing the worktree would delete: ${lost
        .map((f) => f.path)
        .slice(0, 10)
        .join(', ')}.`,
      {
        hint: 'Copy them out of ' + worktree + ', or discard anyway with --force.',
        data: { session: id, files: lost },
      },
    );
  }
  // A snapshot holds a nested repository as a gitlink only: its commits and files are in it alone.
  const nested = await nestedRepoWork(repo, wt, snap.tree);
  if (nested.length > 0) {
    throw errors.refused(
      `removing the worktree of session ${id} would delete ${nested.length === 1 ? 'a nested repository' : `${nested.length} nested repositories`} holding work found nowhere else: ${describeNestedWork(nested)}.`,
      {
        hint: `Commit and push, or copy them out of ${worktree}; or discard anyway with --force.`,
        data: { session: id, nested },
      },
    );
  }
}

/**
 * `agentsnap discard <session>`: a final snapshot of the session's worktree,
 * then the worktree (when agentsnap created it), its git metadata and the
 * private index are removed. The session is marked discarded; its refs and
 * journal stay until gc (or go now with purge).
 */
export async function discardSession(from: Repo, id: string, opts: DiscardOptions = {}): Promise<DiscardResult> {
  let s = loadSession(from, id);
  // Called from inside the worktree that is about to go: work from the main worktree.
  const repo = await repoOutside(from, s.worktree);
  const settings = opts.settings ?? (await loadSettings(repo));
  if (wrapperRunning(s) && !opts.force) {
    throw errors.refused(`session ${id} is running (its wrapper, pid ${s.owner?.pid}, is alive).`, {
      hint: 'Stop the agent first, or discard anyway with --force.',
      data: { session: id, pid: s.owner?.pid },
    });
  }
  const meta = readWorktreeMeta(repo, id);
  const p = sessionPaths(repo, id);
  const result: DiscardResult = { session: id, finalCommit: null, worktreeRemoved: null, purged: false, alreadyDiscarded: s.discarded };
  const wtPresent = exists(path.join(s.worktree, '.git'));
  let wt: Repo | null = null;
  if (wtPresent) {
    try {
      wt = await openRepo(s.worktree, { env: repo.callerEnv });
    } catch {
      wt = null; // not a worktree git opens: handled below (kept unless --force)
    }
  }
  if (meta && exists(meta.path) && !wt && !opts.force) {
    throw errors.refused(`the worktree of session ${id} (${meta.path}) is no longer a git worktree: no final snapshot can be taken.`, {
      hint: 'Copy out what you need, then discard with --force.',
      data: { session: id, path: meta.path },
    });
  }
  // The session worktree's context, its settings read once: its final snapshot (the session's end, or below) reads them.
  const wtCtx = wt ? await openContext(wt) : null;
  if (wtCtx && !s.ended && !s.discarded) {
    const ended = await endSession(wtCtx, id, { exitCode: null, signal: null });
    result.finalCommit = ended.commit;
    s = loadSession(repo, id);
  }
  if (!s.discarded || (wt && meta)) {
    const event: SessionDiscardEvent = {
      ...eventBase(id),
      type: 'session.discard',
      commit: null,
      tree: null,
      changed: [],
      worktree: null,
      worktreeHead: null,
      forced: !!opts.force,
    };
    const refs: RefUpdate[] = [];
    await withSessionLock(plainContext(repo, settings), id, 'discard', async (locked) => {
      if (wt && wtCtx) {
        // The final snapshot must succeed before anything is removed.
        const snap = await snapshotTree(wt, { indexFile: p.index, settings: wtCtx.settings, parentTree: s.headTree });
        if (meta && !opts.force) await refuseDiscardLosingWork(repo, wt, id, s.worktree, meta, snap);
        if (snap.tree !== s.headTree) {
          const head = await readHead(wt);
          const commit = await commitTree(wt, {
            tree: snap.tree,
            parents: [s.head],
            message: commitMessage({
              summary: `session ${id} final (discard)`,
              session: id,
              step: null,
              phase: 'final',
              kind: 'discard',
              tool: null,
              head: head.commit,
            }),
          });
          Object.assign(event, { commit, tree: snap.tree, changed: await diffTrees(wt, s.headTree ?? s.head, snap.tree) });
          refs.push({ ref: headRef(id), value: commit });
          result.finalCommit = commit;
        }
        const keepHead = await worktreeHeadToKeep(wt, meta);
        if (keepHead) {
          event.worktreeHead = keepHead;
          refs.push({ ref: sessionMetaRef(id, 'worktree-head'), value: keepHead });
        }
      }
      if (meta && wt) event.worktree = meta.path;
      await locked.append(event, refs);
    });
  }
  if (meta && exists(meta.path)) {
    await removeSessionWorktree(repo, meta);
    result.worktreeRemoved = meta.path;
  }
  unlinkQuiet(p.index);
  unlinkQuiet(`${p.index}.lock`);
  if (opts.purge) {
    await dropSession(repo, id);
    result.purged = true;
  }
  return result;
}

/** Removes lock files under refs/agentsnap/safety/ that no process holds (a killed git's; see clearStaleGitLock). */
export async function clearStaleSafetyRefLocks(repo: Repo): Promise<void> {
  const dir = path.join(repo.commonDir, ...SAFETY_REF_PREFIX.split('/').filter(Boolean));
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e; // no safety refs: no lock to clear
    return;
  }
  for (const name of names) if (name.endsWith('.lock')) await clearStaleGitLock(path.join(dir, name), 0);
}
