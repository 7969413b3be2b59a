// Over 500 lines on purpose: one operation's order (safety snapshot, plan,
// protection, op.start, restore, result, op.done) and its roll-forward of an
// interrupted one are one protocol; status reads the same journal facts.
//
// Operations that move the worktree: undo, redo, restore, revert. Each is
// recorded in the session journal like a step, in this order, under the
// session lock and then the worktree content lock:
//   1. safety snapshot of the worktree (objects only, through the private index)
//   2. plan: diff-tree between the safety tree and the target tree
//   3. refuse (before anything is written) when the plan would overwrite
//      changes no tool call made, or crosses an unprotected step, unless --force
//   4. commit the safety snapshot; journal `op.start` (fsync); ref ops/<k>
//   5. change the files (src/restore/restore.ts)
//   6. commit the restored state (parents: the safety snapshot, then the
//      versions the restore kept, if any, so they stay reachable); journal
//      `op.done`; move the session head to it; state.json
// An `op.start` without `op.done` (a crash in step 5) is completed by the next
// operation before anything else; the restore is idempotent. If snapshots were
// taken after it meanwhile, it is marked abandoned instead (nothing is lost:
// the safety snapshot and those snapshots hold every state).
import { errors } from '../base/errors.js';
import type {
  JournalEvent,
  OpDoneEvent,
  OpKind,
  OpStartEvent,
  OpTarget,
  PlannedChange,
  SkippedFile,
  ChangedPath,
} from '../session/journal.js';
import { eventBase, readJournal } from '../session/journal.js';
import { checkpointMadeBy, foldJournal, openSteps, sessionSettings, type Session, type Step } from '../session/model.js';
import type { Repo } from '../git/repo.js';
import { environmentMatcher, loadSettings, type Settings } from '../settings/settings.js';
import {
  commitMessage,
  contentLockFile,
  headRef,
  loadSession,
  sessionMetaRef,
  sessionPaths,
  sessionName,
  statusNow,
  withSessionLock,
  type LockedSession,
} from '../session/session.js';
import { withLock } from '../base/lock.js';
import { depsToSync, type DepsToSync } from '../deps/deps.js';
import { plainContext } from '../session/context.js';
import { copyIndexFile, snapshotTree, untrackedClassifier, type TreeSnapshotResult } from '../snapshot/snapshot.js';
import { removeTempIndex, tempIndex } from '../snapshot/snapshot-now.js';
import { commitTree, diffTrees, ignoredPaths, readHead, trackedPaths, treeOf, updateRefs } from '../git/plumbing.js';
import { fsPath, hasRawBytes, splitNul } from '../git/run.js';
import type { RestoreTarget } from './ignored-at-target.js';
import {
  applyPlan,
  applyPrepared,
  changeLetter,
  keptCommit,
  planChanges,
  prepareRestore,
  recordApplied,
  releaseKept,
  underAnyPath,
  UNSNAPSHOTTED_IN_THE_WAY,
  withoutSkipped,
  type LeftPath,
  type PreparedRestore,
  type RestoreOptions,
} from './restore.js';
import { stepOf } from '../session/read.js';
import { outsideEffect, effectLabel } from '../session/effects.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { printableName } from '../base/printable.js';

export function opRef(session: string, op: number): string {
  return sessionMetaRef(session, `ops/${op}`);
}

/** A change made outside the recorded tool calls, on a path an operation would touch. */
export interface OutsideChange {
  path: string;
  change: ChangedPath['change'];
  /** When it was seen: "before step 5", "since the last snapshot", "before the session ended". */
  when: string;
  /** Journal index where it was seen (the journal's length: since the last snapshot); orders it against the calls' changes. */
  at?: number;
}

/** A path both recorded calls (or operations) and the user changed since the target: refused unless --merge or --force. */
export interface BothChanged {
  path: string;
  change: ChangedPath['change'];
  /** The recorded changes, oldest first: "step 4", "operation 2 (undo)". */
  by: string[];
  /** The user's changes, oldest first ("before step 5", "since the last snapshot"). */
  yours: string[];
  /** Why --merge could not merge it (a dry run, or the refusal), else null. */
  unmergeable?: string | null;
}

export interface OperationOptions {
  dryRun?: boolean;
  force?: boolean;
  /**
   * The worktree exactly as at the target (the meaning before issue 32), refusing where a change made outside
   * the tool calls would be lost. Default: take back only what the recorded calls and operations changed since
   * the target, keep the paths only the user changed, refuse the paths both changed.
   */
  exact?: boolean;
  /** A path both changed: a three-way merge of the user's version with the agent's changes taken out (git merge-file). */
  merge?: boolean;
  settings?: Settings;
  /** Test seam: stop (throw) after this many file changes, as a crash would. */
  interruptAfter?: number;
  /**
   * The open step of the tool call asking for this operation (the agent's own undo through `agentsnap mcp`):
   * journaled as op.start.byStep when that step is still open (else left out), so its post does not record
   * the restore as the call's own change.
   */
  byStep?: number;
  /** Test seam: the restore engine's hooks around each replaced path (a write racing with the restore). */
  restoreHooks?: Pick<RestoreOptions, 'beforeReplace' | 'afterCheck'>;
}

export interface FileChange {
  path: string;
  change: 'A' | 'D' | 'M' | 'T';
}

export interface OperationResult {
  session: string;
  kind: OpKind;
  /** Operation number; null for a dry run. */
  op: number | null;
  dryRun: boolean;
  target: OpTarget;
  /** What changed (or, with dryRun, would change) in the worktree. */
  changes: FileChange[];
  /** Paths left as they were, and why. */
  left: LeftPath[];
  /** Files not in the target snapshot because they were skipped then (secrets, size cap, excludes): kept as they are. */
  kept: string[];
  /** Changes made outside the recorded tool calls that this operation overwrites (only with --force, or listed by a dry run). */
  outside: OutsideChange[];
  /** Paths only the user changed since the target (outside tool calls): kept as they are (also listed in `left`). */
  yours: OutsideChange[];
  /** Paths both the recorded calls and the user changed (a dry run lists them; a run refuses them unless --merge or --force). */
  both: BothChanged[];
  /** Paths merged with --merge: the user's version with the agent's changes taken out. */
  merged: string[];
  /** --exact: the worktree exactly as at the target. */
  exact: boolean;
  /** Unprotected steps crossed (only with --force, or listed by a dry run). */
  unprotected: { step: number; reason: string | null }[];
  /** Whether a real run would refuse without --force (dry run). */
  wouldRefuse: boolean;
  /** The user's HEAD moved since the target state: files are restored, the branch is left where it is. */
  headMoved: { then: string | null; now: string | null } | null;
  /** Steps whose effects outside the worktree cannot be taken back. */
  notUndoable: { step: number; effect: string; command: string }[];
  /** Steps this operation marks undone (undo), or that a redo replaced. */
  undone: number[];
  /** Steps a redo brings back. */
  redone: number[];
  safety: string | null;
  safetyRef: string | null;
  commit: string | null;
  /** Interrupted operations completed (or abandoned) before this one. */
  recovered: RecoveredOp[];
  /** Earlier operations whose changes this one takes back (an undo to before a revert). */
  takesBack: TakenBackOp[];
  /**
   * The dependency manifests and lockfiles among `changes`, with the package manager's command that brings the
   * installed dependencies in line and the directory to run it in (issue 33 part 2).
   */
  deps: DepsToSync[];
}

export interface RecoveredOp {
  op: number;
  kind: OpKind;
  status: 'done' | 'abandoned';
  /** Why an abandoned operation was not completed. */
  reason: string | null;
  ref: string;
}

/** An operation as the journal records it. */
export interface OpRecord {
  op: number;
  kind: OpKind;
  target: OpTarget;
  time: string;
  status: 'done' | 'abandoned' | 'interrupted';
  safety: string;
  commit: string | null;
  changed: number;
  undoes: number[];
  redoes: number | null;
  redoneBy: number | null;
  /** The `op undo` that took this operation back (null: none, or that op undo was itself taken back). */
  undoneBy: number | null;
  left: { path: string; reason: string; oid?: string }[];
}

/** The operations of a session, from its journal events. */
export function foldOps(events: JournalEvent[]): OpRecord[] {
  const ops = new Map<number, OpRecord>();
  for (const ev of events) {
    if (ev.type === 'op.start') {
      ops.set(ev.op, {
        op: ev.op,
        kind: ev.kind,
        target: ev.target,
        time: ev.time,
        status: 'interrupted',
        safety: ev.safety,
        commit: null,
        changed: ev.paths.length,
        undoes: ev.undoes,
        redoes: ev.redoes,
        redoneBy: null,
        undoneBy: null,
        left: [],
      });
    } else if (ev.type === 'op.done') {
      const o = ops.get(ev.op);
      if (!o) continue;
      o.status = ev.status;
      o.commit = ev.commit;
      o.left = ev.left;
      if (ev.status === 'done' && o.redoes !== null) {
        const undoOp = ops.get(o.redoes);
        if (undoOp) undoOp.redoneBy = o.op;
      }
      if (ev.status === 'done' && o.kind === 'op-undo' && o.target.op !== undefined) {
        // Taking back an op undo brings its operation back: that one is no longer taken back.
        const taken = ops.get(o.target.op);
        if (taken) {
          taken.undoneBy = o.op;
          if (taken.kind === 'op-undo' && taken.target.op !== undefined) {
            const back = ops.get(taken.target.op);
            if (back) back.undoneBy = null;
          }
        }
      }
    }
  }
  return [...ops.values()].sort((a, b) => a.op - b.op);
}

/**
 * Steps currently undone: added by done undos, removed again by the redos of those undos; an `op undo`
 * reverses what its operation did to them (and an op undo of an op undo does it again).
 */
export function undoneSteps(ops: OpRecord[]): Set<number> {
  const undone = new Set<number>();
  const byOp = new Map(ops.map((o) => [o.op, o]));
  const effect = (o: OpRecord, forward: boolean, depth: number): void => {
    if (depth > ops.length) return; // a cycle only a corrupt journal could hold
    if (o.kind === 'op-undo') {
      const taken = o.target.op === undefined ? undefined : byOp.get(o.target.op);
      if (taken) effect(taken, !forward, depth + 1);
      return;
    }
    const add = (ns: number[]) => ns.forEach((n) => (forward ? undone.add(n) : undone.delete(n)));
    const del = (ns: number[]) => ns.forEach((n) => (forward ? undone.delete(n) : undone.add(n)));
    if (o.kind === 'redo' && o.redoes !== null) del(byOp.get(o.redoes)?.undoes ?? []);
    add(o.undoes);
  };
  for (const o of ops) if (o.status === 'done') effect(o, true, 0);
  return undone;
}

/** An earlier operation a new one takes back (its changes are on paths the new one resets to before it). */
export interface TakenBackOp {
  op: number;
  kind: OpKind;
  what: string;
}

/**
 * The operations done after journal index `anchor`, not taken back already, whose result on a path the
 * `plan` changes to something else: an undo (or restore) to a state before them takes their changes back
 * too (issue 32: `undo 6` after `revert 4` brings step 4's change back), and says so. An earlier undo is
 * not taken back by going back further.
 */
export function opsTakenBack(events: JournalEvent[], ops: OpRecord[], anchor: number | null, plan: PlannedChange[]): TakenBackOp[] {
  if (anchor === null || plan.length === 0) return [];
  const to = new Map(plan.map((c) => [c.path, c.to]));
  const same = (a: PlannedChange['to'], b: PlannedChange['to']) =>
    a === null ? b === null : b !== null && a.oid === b.oid && a.mode === b.mode;
  const out: TakenBackOp[] = [];
  const byOp = new Map(ops.map((o) => [o.op, o]));
  for (let i = anchor + 1; i < events.length; i++) {
    const e = events[i]!;
    if (e.type !== 'op.start') continue;
    const o = byOp.get(e.op);
    if (!o || o.status !== 'done' || o.undoneBy !== null || o.kind === 'undo') continue;
    const left = new Set(o.left.map((l) => l.path));
    if (e.paths.some((c) => to.has(c.path) && !left.has(c.path) && !same(to.get(c.path)!, c.to)))
      out.push({ op: o.op, kind: o.kind, what: describeTarget(o.kind, o.target) });
  }
  return out;
}

// ---------------------------------------------------------------------------
// Planning

export interface Resolved {
  toTree: string;
  toCommit: string | null;
  paths?: string[];
  /** Journal index after which changes outside tool calls are protected; null: no protection (revert merges). */
  anchor: number | null;
  /** Steps whose effects the operation takes back (for the unprotected and not-undoable checks). */
  crossed: number[];
  undoes: number[];
  redoes: number | null;
  redone: number[];
  /** Commit whose Agentsnap-Head trailer tells where the user's HEAD was at the target state. */
  headOf: string | null;
  /** Skipped (not snapshotted) at the target: never deleted. */
  skippedAtTarget: SkippedFile[];
  /** The snapshot whose scan left out what the target lacks (revert: the state before the step); see ignored-at-target.ts. */
  scannedBy?: string;
  /** The user's own changes the operation takes back besides those after the anchor (revert of their checkpoint). */
  own?: OutsideChange[];
  /**
   * The user's checkpoint the operation goes back to before of (undo N, restore N of a checkpoint): a point to
   * return to (issue 32 item 5), so what it recorded is taken back as a step's change, not kept as the user's.
   */
  ownCheckpoint?: number;
}

/** What the restore engine keeps deletions against: the target tree and the snapshot it comes from. */
function targetOf(r: Resolved): RestoreTarget {
  return { tree: r.toTree, snapshot: r.scannedBy ?? r.toCommit };
}

export interface OpSpec {
  kind: OpKind;
  target: OpTarget;
  resolve(ctx: ResolveContext): Promise<Resolved>;
}

export interface ResolveContext {
  repo: Repo;
  session: Session;
  events: JournalEvent[];
  ops: OpRecord[];
  safetyTree: string;
}

export function eventIndex(events: JournalEvent[], pred: (e: JournalEvent) => boolean): number {
  for (let i = events.length - 1; i >= 0; i--) if (pred(events[i]!)) return i;
  return -1;
}

function stepEvent(events: JournalEvent[], n: number, type: 'step.pre' | 'step.post' | 'step.checkpoint'): number {
  return eventIndex(events, (e) => e.type === type && e.step === n);
}

/** Steps recorded after journal index `from` (their pre, post or checkpoint came later). */
export function stepsAfter(events: JournalEvent[], from: number): number[] {
  const out = new Set<number>();
  for (let i = from + 1; i < events.length; i++) {
    const e = events[i]!;
    if (e.type === 'step.pre' || e.type === 'step.post' || e.type === 'step.checkpoint' || e.type === 'step.unprotected') out.add(e.step);
  }
  return [...out].sort((a, b) => a - b);
}

/** The commit before step n: its pre-snapshot; for a checkpoint, the snapshot before it. */
async function beforeStep(repo: Repo, s: Session, st: Step): Promise<string> {
  if (st.kind === 'checkpoint' && st.post) {
    const res = await repo.git(['rev-parse', '--verify', `${st.post}^1`]);
    return res.stdout.toString('utf8').trim();
  }
  if (!st.pre) {
    throw errors.stepOutOfRange(`step ${st.step} of session ${s.id} has no snapshot from before it.`, {
      hint: st.unprotectedReason
        ? `Its snapshot failed: ${st.unprotectedReason}. Undo an earlier step instead.`
        : 'Undo an earlier step instead.',
      data: { session: s.id, step: st.step },
    });
  }
  return st.pre;
}

/** What the snapshot `commit` left out, as the event that took it journaled (none found: nothing). */
export function skippedOf(events: JournalEvent[], commit: string): SkippedFile[] {
  for (const e of events) {
    switch (e.type) {
      case 'session.start':
        if (e.baseline === commit) return e.skipped;
        break;
      case 'step.pre':
      case 'step.post':
      case 'step.checkpoint':
        if (e.commit === commit) return e.skipped;
        break;
      case 'op.start':
        if (e.safety === commit) return e.safetySkipped;
        break;
      default:
        // The other kinds record no snapshot with its skipped files.
        break;
    }
  }
  return [];
}

function undoSpec(step: number | undefined): OpSpec {
  const target: OpTarget = { when: 'before' };
  return {
    kind: 'undo',
    target,
    async resolve({ repo, session, events, ops }) {
      const undone = undoneSteps(ops);
      let n = step;
      if (n === undefined) {
        // A read journaled from the transcript changed nothing: undoing it alone would change nothing either.
        // A call that ran an operation (the agent's undo through MCP) changed files only by it: `redo` takes that back.
        const candidates = session.steps.filter(
          (st) =>
            st.status !== 'open' &&
            !undone.has(st.step) &&
            st.source !== 'transcript' &&
            !st.operation?.tree &&
            (st.pre || st.kind === 'checkpoint'),
        );
        const last = candidates[candidates.length - 1];
        if (!last) {
          const ranOps = session.steps.some((st) => st.operation?.tree && st.status !== 'open' && !undone.has(st.step));
          const why =
            session.steps.length === 0
              ? 'it has no steps'
              : ranOps
                ? 'every step is undone, or ran an undo, redo or restore itself'
                : 'every step is already undone';
          throw errors.nothingToDo(`nothing to undo in session ${session.id}: ${why}.`, {
            hint: undone.size > 0 || ranOps ? 'Bring undone steps back with `agentsnap redo`.' : undefined,
            data: { session: session.id },
          });
        }
        n = last.step;
      }
      target.step = n;
      const st = stepOf(session, n);
      const commit = await beforeStep(repo, session, st);
      // Back to before a checkpoint: what the checkpoint itself recorded is taken back too (protected when it is the user's).
      const anchor = st.kind === 'checkpoint' ? stepEvent(events, n, 'step.checkpoint') - 1 : stepEvent(events, n, 'step.pre');
      const later = session.steps.filter((x) => x.step >= n && x.status !== 'open' && !undone.has(x.step)).map((x) => x.step);
      const crossed = [...new Set([n, ...stepsAfter(events, anchor)])].filter(
        (x) => !session.steps.find((y) => y.step === x && y.status === 'open'),
      );
      return {
        toTree: await treeOf(repo, commit),
        toCommit: commit,
        anchor,
        crossed,
        undoes: later,
        redoes: null,
        redone: [],
        headOf: commit,
        ...(userCheckpoint(st) ? { ownCheckpoint: n } : {}),
        skippedAtTarget: st.kind === 'checkpoint' ? [] : skippedOf(events, commit),
      };
    },
  };
}

function redoSpec(): OpSpec {
  const target: OpTarget = {};
  return {
    kind: 'redo',
    target,
    async resolve({ repo, session, events, ops }) {
      const last = [...ops].reverse().find((o) => o.kind === 'undo' && o.status === 'done' && o.redoneBy === null && o.undoneBy === null);
      if (!last) {
        // A revert, restore or op undo is no undo: `op undo` takes any of them back (issue 32).
        const other = [...ops].reverse().find((o) => o.status === 'done' && o.undoneBy === null && o.kind !== 'undo');
        throw errors.nothingToDo(`nothing to redo in session ${session.id}: no undo to reverse.`, {
          hint: other
            ? `To take back operation ${other.op} (${describeTarget(other.kind, other.target)}): \`agentsnap op undo ${other.op}\` (\`agentsnap op log\` lists every operation).`
            : undefined,
          data: { session: session.id },
        });
      }
      target.op = last.op;
      const anchor = eventIndex(events, (e) => e.type === 'op.start' && e.op === last.op);
      // Steps recorded after that undo are replaced by the state before it (kept in this operation's safety snapshot).
      const replaced = stepsAfter(events, anchor).filter((n) => !session.steps.find((y) => y.step === n && y.status === 'open'));
      return {
        toTree: await treeOf(repo, last.safety),
        toCommit: last.safety,
        anchor,
        crossed: replaced,
        undoes: replaced,
        redoes: last.op,
        redone: last.undoes,
        headOf: last.safety,
        skippedAtTarget: skippedOf(events, last.safety),
      };
    },
  };
}

/**
 * A restore of a path that is neither in the target state nor in the worktree
 * would change nothing and still record an operation: a typo. Refused before
 * anything is recorded, naming each such path (one ls-tree per tree).
 */
async function requireKnownPaths(repo: Repo, paths: string[], trees: string[], target: string): Promise<void> {
  if (paths.length === 0) return;
  const found = new Set<string>();
  // A name that is not UTF-8 cannot be passed in argv: then the whole tree is listed and matched here.
  const inJs = paths.some(hasRawBytes);
  for (const tree of trees) {
    const args = inJs ? ['ls-tree', '-r', '-t', '-z', '--name-only', tree] : ['ls-tree', '-z', '--name-only', tree, '--', ...paths];
    const res = await repo.git(args, { extraEnv: { GIT_LITERAL_PATHSPECS: '1' } });
    for (const name of splitNul(res.stdout)) for (const p of paths) if (name === p || name.startsWith(`${p}/`)) found.add(p);
  }
  const unknown = paths.filter((p) => !found.has(p));
  if (unknown.length === 0) return;
  const onDisk = unknown.filter((p) => fs.existsSync(fsPath(path.join(repo.worktree, p))));
  const list = unknown.join(', ');
  throw errors.unknownPath(
    onDisk.length === unknown.length
      ? `${list} ${unknown.length === 1 ? 'is' : 'are'} in no snapshot (ignored or left out): there is nothing to restore.`
      : `${list} ${unknown.length === 1 ? 'is' : 'are'} neither in ${target} nor in the worktree: nothing was restored.`,
    {
      hint: 'Paths are relative to the current directory; `agentsnap log -- <path>` lists the steps that changed one.',
      data: { paths: unknown },
    },
  );
}

function restoreSpec(step: number, when: 'before' | 'after', paths: string[]): OpSpec {
  const target: OpTarget = { step, when, paths };
  return {
    kind: 'restore',
    target,
    async resolve({ repo, session, events, safetyTree }) {
      const st = stepOf(session, step);
      let commit: string;
      let anchor: number;
      if (when === 'before') {
        commit = await beforeStep(repo, session, st);
        anchor = st.kind === 'checkpoint' ? stepEvent(events, step, 'step.checkpoint') - 1 : stepEvent(events, step, 'step.pre');
      } else {
        if (!st.post) {
          throw errors.stepOutOfRange(`step ${step} of session ${session.id} has no snapshot from after it (${st.status}).`, {
            hint:
              st.status === 'open'
                ? 'The step is still running; restore the state before it instead.'
                : 'Restore the state before it instead.',
            data: { session: session.id, step },
          });
        }
        commit = st.post;
        anchor = st.kind === 'checkpoint' ? stepEvent(events, step, 'step.checkpoint') : stepEvent(events, step, 'step.post');
      }
      const toTree = await treeOf(repo, commit);
      await requireKnownPaths(repo, paths, [toTree, safetyTree], `the state ${when} step ${step}`);
      return {
        ...(when === 'before' && userCheckpoint(st) ? { ownCheckpoint: step } : {}),
        toTree,
        toCommit: commit,
        paths,
        anchor,
        crossed: [],
        undoes: [],
        redoes: null,
        redone: [],
        headOf: null,
        skippedAtTarget: skippedOf(events, commit),
      };
    },
  };
}

function revertSpec(step: number): OpSpec {
  const target: OpTarget = { step };
  return {
    kind: 'revert',
    target,
    async resolve({ repo, session, events, safetyTree }) {
      const st = stepOf(session, step);
      if (!st.post || !st.postTree) {
        throw errors.stepOutOfRange(
          `step ${step} of session ${session.id} has not finished (${st.status}): there is nothing to revert yet.`,
          {
            data: { session: session.id, step },
          },
        );
      }
      const before = await beforeStep(repo, session, st);
      const beforeTree = await treeOf(repo, before);
      const merged = await mergeRevert(repo, session.id, step, { base: st.postTree, ours: safetyTree, theirs: beforeTree });
      // A checkpoint of the user's recorded their own change: reverting it is not taking back an agent's.
      const own = userCheckpoint(st)
        ? st.changed.map((c) => ({ path: c.path, change: c.change, when: checkpointLabel(st.step, st.message) }))
        : [];
      return {
        own,
        toTree: merged,
        toCommit: null,
        anchor: null,
        crossed: [step],
        undoes: [],
        redoes: null,
        redone: [],
        headOf: null,
        skippedAtTarget: st.kind === 'checkpoint' ? [] : skippedOf(events, before),
        scannedBy: before,
      };
    },
  };
}

/**
 * Takes back what step N changed (post -> pre) on top of the worktree now:
 * a three-way merge with base = after step N, ours = now, theirs = before
 * step N, through `git merge-tree --write-tree` on throwaway commits (git
 * 2.38+ has no --merge-base before 2.40, so the base is made their parent).
 */
async function mergeRevert(repo: Repo, session: string, step: number, t: { base: string; ours: string; theirs: string }): Promise<string> {
  const msg = (what: string) => `agentsnap: revert ${step} ${what}\n\nAgentsnap-Session: ${session}\nAgentsnap-Kind: merge-input\n`;
  const base = await commitTree(repo, { tree: t.base, parents: [], message: msg('base') });
  const ours = await commitTree(repo, { tree: t.ours, parents: [base], message: msg('ours') });
  const theirs = await commitTree(repo, { tree: t.theirs, parents: [base], message: msg('theirs') });
  const res = await repo.git(
    [
      '-c',
      'merge.renormalize=false',
      '-c',
      'merge.conflictstyle=merge',
      'merge-tree',
      '--write-tree',
      '--name-only',
      '--no-messages',
      '-z',
      ours,
      theirs,
    ],
    { okCodes: [1] },
  );
  const parts = res.stdout.toString('utf8').split('\0').filter(Boolean);
  const tree = parts[0] ?? '';
  if (res.code === 1) {
    const conflicts = [...new Set(parts.slice(1))];
    throw errors.conflict(
      `revert ${step} conflicts with later changes in ${conflicts.length === 1 ? '1 file' : `${conflicts.length} files`}: ${conflicts.join(', ')}. Nothing was changed.`,
      {
        hint: `See what step ${step} changed with \`agentsnap show ${step}\`; bring single files back with \`agentsnap restore ${step} -- <path>\`, or undo from step ${step} with \`agentsnap undo ${step}\`.`,
        data: { session, step, conflicts },
      },
    );
  }
  return tree;
}

/** What a checkpoint the user made (not `wrap --auto`'s) records: their own change, undone only with --force. */
function userCheckpoint(st: Step | undefined): boolean {
  return !!st && st.kind === 'checkpoint' && st.madeBy !== 'agent';
}

function checkpointLabel(n: number, message: string | null | undefined): string {
  return `at checkpoint ${n}${message ? `: ${message.replace(/[\r\n]+/g, ' ').slice(0, 80)}` : ''}`;
}

/**
 * Changes made outside the recorded tool calls after journal index `anchor`,
 * plus those since the last snapshot: what each later pre-snapshot saw
 * before its call, what each checkpoint of the user's recorded (`snap`, a
 * resumed session, a post with no pre), what each later operation's safety
 * snapshot saw against the session head (`op.start.changedBefore`; see
 * `withOpChanges` for journals without it), what the session's final
 * snapshot saw. Changes of calls still running at that moment are theirs,
 * not outside.
 */
export function outsideChanges(
  session: Session,
  events: JournalEvent[],
  anchor: number,
  sinceHead: ChangedPath[],
  opts: { checkpoints?: boolean; ownCheckpoint?: number } = {},
): OutsideChange[] {
  const out: OutsideChange[] = [];
  const byStep = new Map(session.steps.map((s) => [s.step, s]));
  const changedBy = (steps: Iterable<number>) => new Set([...steps].flatMap((n) => byStep.get(n)?.changed.map((c) => c.path) ?? []));
  // Calls open at each point of the journal (a checkpoint does not list the calls it overlapped).
  const open = new Set<number>();
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    if (i > anchor) {
      if (e.type === 'step.pre') {
        // Changes of overlapping calls still running show up in this pre-snapshot: they were made by tool calls.
        const byOverlaps = changedBy(e.overlaps);
        for (const c of e.changed)
          if (!byOverlaps.has(c.path)) out.push({ path: c.path, change: c.change, when: `before step ${e.step}`, at: i });
      } else if (e.type === 'step.checkpoint') {
        // --exact passes over a checkpoint of the user's: a point to return to, not an edit to protect (issue 32 item 5).
        if (checkpointMadeBy(e) === 'user' && opts.checkpoints !== false && e.step !== opts.ownCheckpoint) {
          const byOpen = changedBy(open);
          for (const c of e.changed)
            if (!byOpen.has(c.path)) out.push({ path: c.path, change: c.change, when: checkpointLabel(e.step, e.message), at: i });
        }
      } else if (e.type === 'op.start') {
        // The operation's result is built on its safety snapshot, so what that snapshot saw besides
        // the tool calls is in the session head from then on; it stays the user's. A --force
        // covered that operation only.
        const byOpen = changedBy(open);
        for (const c of e.changedBefore ?? [])
          if (!byOpen.has(c.path)) out.push({ path: c.path, change: c.change, when: `before operation ${e.op} (${e.kind})`, at: i });
      } else if (e.type === 'session.end') {
        for (const c of e.changed ?? []) out.push({ path: c.path, change: c.change, when: 'after the last step', at: i });
      }
    }
    if (e.type === 'step.pre' && e.source !== 'transcript') open.add(e.step);
    else if (e.type === 'step.post' || (e.type === 'step.unprotected' && e.phase !== 'pre')) open.delete(e.step);
  }
  for (const c of sinceHead) out.push({ path: c.path, change: c.change, when: 'since the last snapshot', at: events.length });
  return out;
}

/**
 * The events with `changedBefore` filled in on each `op.start` after `anchor`
 * that lacks it (journals written before the field): the diff of its safety
 * commit against its parent, the session head when it was taken. One git
 * process per such operation, only for old journals.
 */
async function withOpChanges(repo: Repo, events: JournalEvent[], anchor: number): Promise<JournalEvent[]> {
  if (!events.some((e, i) => i > anchor && e.type === 'op.start' && !e.changedBefore)) return events;
  return Promise.all(
    events.map(async (e, i) => {
      if (i <= anchor || e.type !== 'op.start' || e.changedBefore) return e;
      return { ...e, changedBefore: await diffTrees(repo, `${e.safety}^1`, e.safety) };
    }),
  );
}

/**
 * An operation's plan, computed once: the dry run prints it, the run executes
 * it (so a dry run, and the ui's Confirm, show what the run does).
 */
interface Prepared {
  resolved: Resolved;
  plan: PlannedChange[];
  /** The plan checked against the disk (nothing written): paths to change, already as the target has them, left and why. */
  disk: PreparedRestore;
  /** Paths the worktree's snapshot left out and the target did not: kept on disk, so reported as left. */
  leftOut: LeftPath[];
  /** Why the worktree's snapshot left each path out (explainLeft). */
  why: Map<string, string>;
  kept: string[];
  outside: OutsideChange[];
  yours: OutsideChange[];
  both: BothChanged[];
  merged: string[];
  unprotected: { step: number; reason: string | null }[];
  headMoved: OperationResult['headMoved'];
  notUndoable: OperationResult['notUndoable'];
  takesBack: TakenBackOp[];
}

async function headTrailer(repo: Repo, commit: string): Promise<string | null | undefined> {
  const res = await repo.git(['cat-file', 'commit', commit]);
  const m = /^Agentsnap-Head: (\S+)$/m.exec(res.stdout.toString('utf8'));
  if (!m) return undefined;
  return m[1] === 'unborn' ? null : (m[1] ?? null);
}

async function prepare(
  repo: Repo,
  spec: OpSpec,
  ctx: ResolveContext,
  sinceHead: ChangedPath[],
  safetySkipped: SkippedFile[],
  opts: Pick<OperationOptions, 'exact' | 'merge' | 'force' | 'dryRun'>,
): Promise<Prepared> {
  const resolved = await spec.resolve(ctx);
  // A file the target snapshot skipped (secret, size cap, exclude) was maybe there: never delete it.
  const { plan: full, kept } = withoutSkipped(
    await planChanges(repo, ctx.safetyTree, resolved.toTree, resolved.paths),
    resolved.skippedAtTarget.map((f) => f.path),
  );
  const events = resolved.anchor === null ? ctx.events : await withOpChanges(repo, ctx.events, resolved.anchor);
  // --exact passes over the user's checkpoints (issue 32 item 5); by default what they recorded is the user's, kept.
  const after =
    resolved.anchor === null
      ? []
      : outsideChanges(ctx.session, events, resolved.anchor, sinceHead, {
          checkpoints: !opts.exact,
          ...(resolved.ownCheckpoint !== undefined ? { ownCheckpoint: resolved.ownCheckpoint } : {}),
        });
  let plan = full;
  let outside: OutsideChange[];
  let sorted: Classified = { plan: full, yours: [], both: [], merged: [], overwritten: [] };
  if (opts.exact || resolved.anchor === null) {
    const touched = new Set(full.map((c) => c.path));
    outside = [...after, ...(resolved.own ?? [])].filter((o) => touched.has(o.path));
  } else {
    sorted = await classify(repo, full, after, recordedChanges(events, resolved.anchor, resolved.ownCheckpoint), opts);
    plan = sorted.plan;
    outside = sorted.overwritten;
  }
  const disk = await prepareRestore(repo, plan, { target: targetOf(resolved) });
  const leftOut = [
    ...(await collapseNewDirs(repo, [ctx.safetyTree, resolved.toTree], leftOutKept(ctx.events, resolved, plan, safetySkipped))),
    ...keptLeftOutAtTarget(kept, resolved.skippedAtTarget),
    ...sorted.yours.map((y) => ({ path: y.path, reason: `your edit (${y.when}): kept as it is` })),
    ...sorted.merged.map((m) => ({ path: m, reason: "your edit, merged: the agent's changes taken out, yours kept" })),
  ].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const why = leftOutReasons(safetySkipped);
  const unprotected = resolved.crossed
    .map((n) => ctx.session.steps.find((x) => x.step === n))
    .filter((st): st is Step => !!st && st.status === 'unprotected')
    .map((st) => ({ step: st.step, reason: st.unprotectedReason }));
  let headMoved: Prepared['headMoved'] = null;
  if (resolved.headOf) {
    const then = await headTrailer(repo, resolved.headOf);
    const now = (await readHead(repo)).commit;
    if (then !== undefined && then !== now) headMoved = { then, now };
  }
  const notUndoable: Prepared['notUndoable'] = [];
  if (spec.kind === 'undo' || spec.kind === 'revert') {
    for (const n of resolved.crossed) {
      const st = ctx.session.steps.find((x) => x.step === n);
      const effect = st ? outsideEffect(st, ctx.session.worktree) : null;
      if (st && effect) notUndoable.push({ step: n, effect, command: effectLabel(st) });
    }
  }
  const takesBack = opsTakenBack(ctx.events, ctx.ops, resolved.anchor, plan);
  return {
    resolved,
    plan,
    disk,
    leftOut,
    why,
    kept,
    outside,
    yours: sorted.yours,
    both: sorted.both,
    merged: sorted.merged,
    unprotected,
    headMoved,
    notUndoable,
    takesBack,
  };
}

/** "before step 5" -> "between step 4 and 5": when the user's edit was made, as the kept line says it. */
function yourWhen(when: string): string {
  const m = /^before step (\d+)$/.exec(when);
  const n = m ? Number(m[1]) : 0;
  return n > 1 ? `between step ${n - 1} and ${n}` : when;
}

/** A change a recorded tool call or operation made after the anchor, and the commit that holds its result. */
interface RecordedChange {
  path: string;
  by: string;
  at: number;
  commit: string | null;
  /** The snapshot just before the change (a call's pre, a checkpoint's parent, an operation's safety snapshot). */
  before: string | null;
}

/**
 * What the recorded tool calls (their pre->post diffs, and agent-made checkpoints) and the operations after
 * journal index `anchor` changed: the agent's side of the rule (issue 32 item 1). A redo's anchor is its
 * undo's op.start, whose changes are among them.
 */
function recordedChanges(events: JournalEvent[], anchor: number, ownCheckpoint?: number): RecordedChange[] {
  const done = new Map<number, { at: number; commit: string | null; ok: boolean }>();
  events.forEach((e, i) => {
    if (e.type === 'op.done') done.set(e.op, { at: i, commit: e.commit, ok: e.status === 'done' });
  });
  const pres = new Map<number, string>();
  for (const e of events) if (e.type === 'step.pre') pres.set(e.step, e.commit);
  const out: RecordedChange[] = [];
  for (let i = Math.max(anchor, 0); i < events.length; i++) {
    const e = events[i]!;
    if (e.type === 'step.post' && i > anchor && e.source !== 'transcript') {
      const before = pres.get(e.step) ?? null;
      for (const c of e.changed) out.push({ path: c.path, by: `step ${e.step}`, at: i, commit: e.commit, before });
    } else if (e.type === 'step.checkpoint' && i > anchor && (checkpointMadeBy(e) === 'agent' || e.step === ownCheckpoint)) {
      for (const c of e.changed) out.push({ path: c.path, by: `step ${e.step}`, at: i, commit: e.commit, before: e.parent });
    } else if (e.type === 'op.start') {
      const d = done.get(e.op);
      if (d?.ok)
        for (const c of e.paths)
          out.push({ path: c.path, by: `operation ${e.op} (${e.kind})`, at: d.at, commit: d.commit, before: e.safety });
    }
  }
  return out;
}

/** One path is the other or lies below it (a file replaced by a directory, or the other way round). */
function related(a: string, b: string): boolean {
  return a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`);
}

interface Classified {
  /** What the operation changes: the paths the agent alone changed, the merged ones, and (--force) those both changed. */
  plan: PlannedChange[];
  yours: OutsideChange[];
  both: BothChanged[];
  merged: string[];
  /** The user's changes --force overwrites. */
  overwritten: OutsideChange[];
}

/**
 * The rule of issue 32 item 1, per path that differs between now and the target: changed only by the
 * recorded calls and operations since the target -> back to the target; only by the user -> kept;
 * by both -> refused, unless --merge (git merge-file) or --force. A path neither changed (a call still
 * open, a journal from before `changed` was recorded) goes back to the target as before.
 */
async function classify(
  repo: Repo,
  plan: PlannedChange[],
  user: OutsideChange[],
  recorded: RecordedChange[],
  opts: Pick<OperationOptions, 'merge' | 'force' | 'dryRun'>,
): Promise<Classified> {
  const out: Classified = { plan: [], yours: [], both: [], merged: [], overwritten: [] };
  for (const c of plan) {
    const mine = user.filter((u) => related(u.path, c.path));
    if (mine.length === 0) {
      out.plan.push(c);
      continue;
    }
    const agents = recorded.filter((r) => related(r.path, c.path));
    const last = mine[mine.length - 1]!;
    if (agents.length === 0) {
      out.yours.push({ path: c.path, change: last.change, when: yourWhen(last.when), ...(last.at !== undefined ? { at: last.at } : {}) });
      continue;
    }
    if (opts.force) {
      out.plan.push(c);
      out.overwritten.push(...mine.map((u) => ({ ...u, path: c.path })));
      continue;
    }
    const both: BothChanged = {
      path: c.path,
      change: last.change,
      by: [...new Set(agents.map((a) => a.by))],
      yours: [...new Set(mine.map((u) => u.when))],
    };
    if (!opts.merge) {
      out.both.push(both);
      continue;
    }
    const m = await mergeOne(repo, c, mine, agents, !opts.dryRun);
    if (typeof m === 'string') out.both.push({ ...both, unmergeable: m });
    else {
      out.merged.push(c.path);
      if (m.oid !== c.from?.oid) out.plan.push({ path: c.path, from: c.from, to: m });
    }
  }
  return out;
}

const REGULAR = new Set(['100644', '100755']);

/**
 * --merge for one path both changed: ours = the user's current file, base = the file after the agent's last
 * change to it, theirs = the target; `git merge-file`. Returns the merged entry, or why it cannot merge
 * (conflicts; not a regular file on every side; an edit of the user's before the agent's last change, which
 * a merge against that base would take back).
 */
async function mergeOne(
  repo: Repo,
  c: PlannedChange,
  mine: OutsideChange[],
  agents: RecordedChange[],
  write: boolean,
): Promise<{ mode: string; oid: string } | string> {
  const lastAgent = agents.reduce((a, b) => (b.at > a.at ? b : a));
  if (!c.from || !c.to || !REGULAR.has(c.from.mode) || !REGULAR.has(c.to.mode) || !lastAgent.commit || hasRawBytes(c.path))
    return 'it is not a regular file in both your version and the target';
  // An edit of the user's before the agent's last change: a merge against the file after that change would take
  // the edit back, so each of the agent's changes is taken out of the user's file in turn, the last first.
  const interleaved = mine.some((u) => (u.at ?? Infinity) < lastAgent.at);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentsnap-merge-'));
  try {
    let ours = (await repo.git(['cat-file', 'blob', c.from.oid])).stdout;
    const rounds = interleaved
      ? [...agents].sort((a, b) => b.at - a.at).map((a) => ({ by: a.by, base: a.commit, theirs: a.before }))
      : [{ by: lastAgent.by, base: lastAgent.commit, theirs: null }];
    for (const r of rounds) {
      const base = r.base ? await regularBlob(repo, r.base, c.path) : null;
      const theirs = r.theirs ? await regularBlob(repo, r.theirs, c.path) : interleaved ? null : c.to.oid;
      if (!base || !theirs)
        return interleaved ? `your edit came before ${r.by} changed it again` : `it is not a regular file after ${r.by}`;
      fs.writeFileSync(path.join(dir, 'ours'), ours);
      fs.writeFileSync(path.join(dir, 'base'), (await repo.git(['cat-file', 'blob', base])).stdout);
      fs.writeFileSync(path.join(dir, 'theirs'), (await repo.git(['cat-file', 'blob', theirs])).stdout);
      const okCodes = Array.from({ length: 255 }, (_, i) => i + 1);
      const res = await repo.git(['merge-file', '-p', '-q', path.join(dir, 'ours'), path.join(dir, 'base'), path.join(dir, 'theirs')], {
        okCodes,
      });
      if (res.code === 255) return 'git merge-file cannot merge it (a binary file?)';
      if (res.code !== 0)
        return `${res.code === 1 ? 'a conflict' : `${res.code} conflicts`} between your edit and ${interleaved ? `taking out ${r.by}` : 'the target'}`;
      ours = res.stdout;
    }
    const h = await repo.git(['hash-object', ...(write ? ['-w'] : []), '--stdin'], { input: ours });
    return { mode: c.from.mode, oid: h.stdout.toString('utf8').trim() };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The blob of `rel` in `commit` when it is a regular file there, else null. */
async function regularBlob(repo: Repo, commit: string, rel: string): Promise<string | null> {
  const ls = await repo.git(['ls-tree', '-z', commit, '--', rel], { extraEnv: { GIT_LITERAL_PATHSPECS: '1' } });
  const m = /^(\d+) blob ([0-9a-f]+)\t/.exec(ls.stdout.toString('utf8'));
  return m && REGULAR.has(m[1]!) ? m[2]! : null;
}

/** Why the worktree's snapshot left each path out, for the paths it left out. */
function leftOutReasons(skipped: SkippedFile[]): Map<string, string> {
  return new Map(skipped.map((f) => [f.path, leftOutWhy(f)]));
}

/**
 * The restore engine's left paths, where it found a file its snapshot does
 * not hold in the way of the target's version, with why that snapshot left
 * it out (a secret, a symlinked .gitmodules…).
 */
function explainLeft(left: LeftPath[], why: Map<string, string>): LeftPath[] {
  return left.map((l) => {
    const w = l.reason === UNSNAPSHOTTED_IN_THE_WAY ? why.get(l.path) : undefined;
    return w === undefined ? l : { ...l, reason: `not in the snapshots (${w}): kept as it is, in the way of the target's version` };
  });
}

/** Why a snapshot left a path out, in words. */
function leftOutWhy(f: SkippedFile): string {
  switch (f.reason) {
    case 'secret':
      return 'a secret';
    case 'too-large':
      return f.size !== undefined ? `over the size cap: ${f.size} bytes` : 'over the size cap';
    case 'excluded':
      return 'excluded by agentsnap.exclude';
    case 'nested-repo-without-commit':
      return 'a nested repository without a commit';
    case 'nested-repo-other-format':
      return 'a nested repository of another object format, which git cannot record';
    case 'unreadable':
      return 'it could not be read';
    case 'path-too-long':
      return 'its paths are too long';
    case 'gitmodules-symlink':
      return 'a symlinked .gitmodules, which git cannot record';
    default:
      return String(f.reason);
  }
}

/**
 * The paths the worktree's snapshot (the safety snapshot, or the dry run's)
 * left out that the operation keeps on disk while its target has no such path
 * left out: the result differs from the target there, so each is reported as
 * left, with why (never silently). A path the target also left out (the
 * user's own .env, an excluded node_modules) is as the target had it. Paths
 * the plan itself covers are the restore engine's to report.
 */
function leftOutKept(events: JournalEvent[], r: Resolved, plan: PlannedChange[], safetySkipped: SkippedFile[]): LeftPath[] {
  if (safetySkipped.length === 0) return [];
  const scanned = r.scannedBy ?? r.toCommit;
  const atTarget = new Set([...r.skippedAtTarget, ...(scanned ? skippedOf(events, scanned) : [])].map((f) => f.path));
  const planned = new Set(plan.map((c) => c.path));
  return safetySkipped
    .filter((f) => !atTarget.has(f.path) && !planned.has(f.path) && (!r.paths || underAnyPath(f.path, r.paths)))
    .map((f) => ({ path: f.path, reason: `not in the snapshots (${leftOutWhy(f)}): kept as it is; the target does not have it` }));
}

/**
 * The paths the target's snapshot left out that the worktree has now (its snapshot holds them, so the plan
 * would delete them; withoutSkipped keeps them): what the target had there is not known, so the result is
 * not the target at that path, and each is reported as left with the target's reason. One line per path the
 * target left out (a skipped directory covers the kept files below it). A path left out now too (the user's
 * own .env at the target and now) is not planned at all, so not here: nothing says it changed.
 */
function keptLeftOutAtTarget(kept: string[], skippedAtTarget: SkippedFile[]): LeftPath[] {
  if (kept.length === 0) return [];
  const byPath = new Map(skippedAtTarget.map((f) => [f.path, f]));
  const out = new Map<string, LeftPath>();
  for (const k of kept) {
    let at = k;
    let f = byPath.get(k);
    for (let i = k.lastIndexOf('/'); f === undefined && i > 0; i = k.lastIndexOf('/', i - 1)) {
      at = k.slice(0, i);
      f = byPath.get(at);
    }
    if (f === undefined) at = k;
    if (!out.has(at)) out.set(at, { path: at, reason: `not in the target's snapshot (${f ? leftOutWhy(f) : 'left out'}): kept as it is` });
  }
  return [...out.values()];
}

/** Above this many left-out paths, those in directories neither tree has are reported by directory. */
const COLLAPSE_LEFT_OUT = 20;

/**
 * Many left-out paths (an agent's `npm install` into an excluded node_modules/) read as one line per
 * directory that neither the worktree's snapshot nor the target has anything in: the whole directory is
 * kept as it is, so it is reported (as left) in their place. Two git processes, only above the threshold.
 */
async function collapseNewDirs(repo: Repo, trees: string[], leftOut: LeftPath[]): Promise<LeftPath[]> {
  if (leftOut.length <= COLLAPSE_LEFT_OUT) return leftOut;
  const known = new Set<string>();
  for (const tree of trees) {
    const res = await repo.git(['ls-tree', '-r', '-d', '-z', '--name-only', tree]);
    for (const d of splitNul(res.stdout)) known.add(d);
  }
  const groups = new Map<string, LeftPath[]>();
  const out: LeftPath[] = [];
  for (const l of leftOut) {
    const parts = l.path.split('/');
    let dir: string | null = null;
    for (let i = 1; i < parts.length && dir === null; i++) {
      const d = parts.slice(0, i).join('/');
      if (!known.has(d)) dir = d;
    }
    if (dir === null) out.push(l);
    else {
      const g = groups.get(dir);
      if (g) g.push(l);
      else groups.set(dir, [l]);
    }
  }
  for (const [dir, ls] of groups) {
    if (ls.length === 1) {
      out.push(ls[0]!);
      continue;
    }
    const whys = [
      ...new Set(ls.map((l) => (/^not in the snapshots \((.*)\): kept/.exec(l.reason)?.[1] ?? l.reason).replace(/: \d+ bytes$/, ''))),
    ];
    out.push({
      path: dir,
      reason: `${ls.length} paths in it are not in the snapshots (${whys.slice(0, 3).join('; ')}${whys.length > 3 ? '; …' : ''}), nor is anything else in it: kept as it is; the target does not have it`,
    });
  }
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/**
 * The restore engine's left paths (every one: a path can carry more than one kept version) and the
 * left-out paths it does not name already, sorted by path as the engine sorts.
 */
function mergeLeft(engine: LeftPath[], leftOut: LeftPath[]): LeftPath[] {
  const named = new Set(engine.map((l) => l.path));
  return [...engine, ...leftOut.filter((l) => !named.has(l.path))].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** What the plan changes, as the run reports what it applied (paths already as the target has them included). */
function plannedChanges(disk: PreparedRestore): FileChange[] {
  return [...disk.already, ...disk.todo].sort((a, b) => (a.path < b.path ? -1 : 1)).map((c) => ({ path: c.path, change: changeLetter(c) }));
}

/**
 * The dry run's snapshot of the worktree: through a throwaway copy of the
 * session's private index (no lock, no ref), with what it left out.
 */
async function dryRunSnapshot(repo: Repo, id: string, settings: Settings): Promise<{ tree: string; skipped: SkippedFile[] }> {
  const idx = tempIndex(repo, 'dry-run');
  try {
    const seed = sessionPaths(repo, id).index;
    if (fs.existsSync(seed)) copyIndexFile(seed, idx);
    const snap = await snapshotTree(repo, { indexFile: idx, settings, parentTree: null });
    return { tree: snap.tree, skipped: snap.skipped };
  } finally {
    removeTempIndex(idx);
  }
}

function refuseIfNeeded(spec: OpSpec, p: Prepared, opts: OperationOptions): void {
  if (opts.force) return;
  const what =
    spec.kind === 'undo' && spec.target.step !== undefined
      ? `undo ${spec.target.step}`
      : spec.kind === 'op-undo'
        ? `op undo ${spec.target.op ?? ''}`.trim()
        : spec.kind;
  if (p.unprotected.length > 0) {
    const list = p.unprotected.map((u) => `step ${u.step}${u.reason ? ` (${u.reason})` : ''}`).join(', ');
    throw errors.refused(
      `${what} crosses ${p.unprotected.length === 1 ? 'an unprotected step' : 'unprotected steps'}, ${list}: a snapshot failed there, so what those calls changed was not recorded and cannot be told apart from other changes.`,
      {
        hint: 'Check `agentsnap diff` first; run again with --force to go ahead (the worktree as it is now is kept in a safety snapshot).',
        data: { unprotected: p.unprotected },
      },
    );
  }
  if (p.outside.length > 0) {
    const lines = p.outside.map((o) => `  ${o.change} ${printableName(o.path)} (${o.when})`).join('\n');
    throw errors.refused(
      `${what} would overwrite ${p.outside.length === 1 ? 'a change' : `${p.outside.length} changes`} made outside the recorded tool calls:\n${lines}`,
      {
        hint: 'Keep them: `agentsnap restore` single files instead. Or run again with --force; they stay in the safety snapshot taken first.',
        data: { outside: p.outside },
      },
    );
  }
  if (p.both.length > 0) refuseBoth(what, p.both, !!opts.merge);
}

/** Paths both the agent and the user changed: refused (exit 3), or with --merge, the ones it could not merge (exit 4). */
function refuseBoth(what: string, both: BothChanged[], merge: boolean): never {
  const lines = both
    .map(
      (b) =>
        `  ${b.change} ${printableName(b.path)}: changed by ${b.by.join(', ')} and by you (${b.yours.map(yourWhen).join(', ')})${merge && b.unmergeable ? `; not merged: ${b.unmergeable}` : ''}`,
    )
    .join('\n');
  const n = both.length === 1 ? 'a path' : `${both.length} paths`;
  if (merge) {
    throw errors.conflict(`${what} --merge cannot merge ${n} both the agent and you changed; nothing was changed:\n${lines}`, {
      hint: "Edit the file so the agent's change is gone yourself, or run again with --force (your version stays in the safety snapshot taken first).",
      data: { both },
    });
  }
  // A step is the agent's; an operation (a revert, a restore) was run by someone: then they are the recorded changes.
  const whose = both.every((b) => b.by.every((x) => x.startsWith('step '))) ? "the agent's changes" : 'the recorded changes';
  throw errors.refused(`${what} would take back ${whose} to ${n} you changed too:\n${lines}`, {
    hint: "Run again with --merge to keep your edit and take the agent's changes out of it, or with --force to put it back as at the target anyway (your version stays in the safety snapshot taken first).",
    data: { both },
  });
}

function emptyResult(session: string, spec: OpSpec): OperationResult {
  return {
    session,
    kind: spec.kind,
    op: null,
    dryRun: false,
    target: spec.target,
    changes: [],
    left: [],
    kept: [],
    outside: [],
    yours: [],
    both: [],
    merged: [],
    exact: false,
    unprotected: [],
    wouldRefuse: false,
    headMoved: null,
    notUndoable: [],
    undone: [],
    redone: [],
    safety: null,
    safetyRef: null,
    commit: null,
    recovered: [],
    takesBack: [],
    deps: [],
  };
}

function fill(r: OperationResult, p: Prepared): void {
  r.kept = p.kept;
  r.outside = p.outside;
  r.yours = p.yours;
  r.both = p.both;
  r.merged = p.merged;
  r.unprotected = p.unprotected;
  r.headMoved = p.headMoved;
  r.notUndoable = p.notUndoable;
  r.undone = p.resolved.undoes;
  r.redone = p.resolved.redone;
  r.takesBack = p.takesBack;
}

function opMessage(
  session: string,
  op: number,
  kind: string,
  summary: string,
  head: string | null,
  environment: readonly string[] = [],
): string {
  return `${commitMessage({ summary, session, step: null, phase: 'op', tool: null, head, kind, environment })}Agentsnap-Op: ${op}\n`;
}

/**
 * Parents of an operation's result: the safety snapshot, then the commit of
 * the versions its restore kept (if any). Every later snapshot of the session
 * descends from the result, so git's gc keeps those versions as long as the
 * session's refs, and push carries them with the snapshots after it.
 */
function resultParents(safety: string, kept: string | null): string[] {
  return kept ? [safety, kept] : [safety];
}

function checkWorktree(repo: Repo, s: Session): void {
  if (s.worktree !== repo.worktree) {
    throw errors.invalidArgument(`session ${s.id} belongs to the worktree ${s.worktree}, not ${repo.worktree}.`, {
      hint: `Run the command in ${s.worktree}.`,
      data: { session: s.id, worktree: s.worktree },
    });
  }
  if (s.discarded) {
    throw errors.sessionNotRunning(`session ${s.id} has been discarded.`, { data: { session: s.id } });
  }
}

/** Completes (or abandons) operations a crash left half done. Caller holds both locks. */
/**
 * Of the paths a restore added (the safety snapshot lacked them; written or
 * found in place), those a scan of the worktree as it is now leaves out
 * (ignored under the rules now on disk — an exclude rule added since the
 * target —, or skipped: secret, size cap, exclude): the operation's result
 * must not hold them, or it would hold what no snapshot does. One
 * check-ignore, only when the restore added something.
 */
async function leftOutNow(repo: Repo, settings: Settings, paths: string[]): Promise<string[]> {
  if (paths.length === 0) return [];
  // Below an environment directory (agentsnap.environment) a scan holds what is there, whatever the rules say.
  const inEnvironment = environmentMatcher(settings.environment);
  const ignored = await ignoredPaths(
    repo,
    paths.filter((p) => !inEnvironment(p)),
    { readIndex: true },
  );
  const classify = untrackedClassifier(settings);
  const skipped = paths.filter((p) => {
    if (ignored.has(p)) return false;
    try {
      const st = fs.lstatSync(fsPath(path.join(repo.worktree, p)));
      return st.isFile() && classify(p, st.size) !== null;
    } catch {
      return true; // gone meanwhile: no scan holds it
    }
  });
  // Tracked files are never skipped (secret, size cap and excludes apply to untracked ones).
  const tracked = skipped.length > 0 ? await trackedPaths(repo, skipped) : new Set<string>();
  return [...ignored, ...skipped.filter((p) => !tracked.has(p))];
}

/**
 * The tree of an operation's result: the private index updated with what was
 * applied. A restore that changed a .gitignore also changes what a scan holds
 * on paths it did not plan (an ignored file the agent had un-ignored, one the
 * restored rules no longer ignore): the result is then a scan of the worktree
 * as the restore left it, so the next snapshot sees no phantom change (a scan,
 * only when a .gitignore was among the applied paths).
 */
async function resultTree(
  repo: Repo,
  settings: Settings,
  indexFile: string,
  applied: { applied: PlannedChange[]; added: string[] },
): Promise<string> {
  const tree = await recordApplied(repo, indexFile, applied.applied, await leftOutNow(repo, settings, applied.added));
  if (!applied.applied.some((c) => path.posix.basename(c.path) === '.gitignore')) return tree;
  return (await snapshotTree(repo, { indexFile, settings, parentTree: tree })).tree;
}

async function recoverInterrupted(
  repo: Repo,
  id: string,
  locked: LockedSession,
  events: JournalEvent[],
  settings: Settings,
): Promise<RecoveredOp[]> {
  const done = new Set(events.flatMap((e) => (e.type === 'op.done' ? [e.op] : [])));
  const out: RecoveredOp[] = [];
  for (let i = 0; i < events.length; i++) {
    const start = events[i]!;
    if (start.type !== 'op.start' || done.has(start.op)) continue;
    const ref = opRef(id, start.op);
    await updateRefs(repo, [{ ref, value: start.safety }]);
    const snapshotsAfter = events
      .slice(i + 1)
      .some((x) => x.type === 'step.pre' || x.type === 'step.post' || x.type === 'step.checkpoint' || x.type === 'session.end');
    if (snapshotsAfter) {
      const ev: OpDoneEvent = {
        ...eventBase(id),
        type: 'op.done',
        op: start.op,
        status: 'abandoned',
        commit: null,
        tree: null,
        left: [],
        resumed: true,
      };
      await locked.append(ev, []);
      out.push({ op: start.op, kind: start.kind, status: 'abandoned', reason: 'snapshots were taken after it', ref });
      continue;
    }
    let applied;
    try {
      applied = await applyPlan(repo, start.paths, { target: { tree: start.to, snapshot: start.toCommit } });
    } catch (err) {
      // Completing it failed again: give up on it rather than block every later operation.
      // Nothing is lost: the next safety snapshot records the worktree as it is.
      const reason = err instanceof Error ? err.message : String(err);
      const ev: OpDoneEvent = {
        ...eventBase(id),
        type: 'op.done',
        op: start.op,
        status: 'abandoned',
        commit: null,
        tree: null,
        left: [{ path: '.', reason }],
        resumed: true,
      };
      await locked.append(ev, []);
      out.push({ op: start.op, kind: start.kind, status: 'abandoned', reason: `completing it failed: ${reason}`, ref });
      continue;
    }
    const tree = await resultTree(repo, settings, locked.paths.index, applied);
    const head = (await readHead(repo)).commit;
    const kept = await keptCommit(
      repo,
      applied.kept,
      opMessage(id, start.op, 'kept', `versions kept by operation ${start.op} (${start.kind}, completed after an interruption)`, head),
    );
    const commit = await commitTree(repo, {
      tree,
      parents: resultParents(start.safety, kept),
      message: opMessage(id, start.op, start.kind, `operation ${start.op} ${start.kind} (completed after an interruption)`, head),
    });
    const ev: OpDoneEvent = {
      ...eventBase(id),
      type: 'op.done',
      op: start.op,
      status: 'done',
      commit,
      tree,
      left: applied.left,
      ...(kept ? { kept } : {}),
      resumed: true,
    };
    await locked.append(ev, [{ ref: headRef(id), value: commit }]);
    releaseKept(applied);
    out.push({ op: start.op, kind: start.kind, status: 'done', reason: null, ref });
  }
  return out;
}

export async function runOperation(repo: Repo, id: string, spec: OpSpec, opts: OperationOptions): Promise<OperationResult> {
  const result = await runPlanned(repo, id, spec, opts);
  result.deps = depsAfter(repo, result.changes);
  return result;
}

/** The commands that bring installed dependencies in line with the files `changes` moved: what exists is the disk's (a dry run's as it would be). */
function depsAfter(repo: Repo, changes: FileChange[]): DepsToSync[] {
  const changed = new Map(changes.map((c) => [c.path, c.change]));
  const exists = (p: string) => {
    const change = changed.get(p);
    if (change !== undefined) return change !== 'D';
    try {
      return fs.lstatSync(fsPath(path.join(repo.worktree, p)), { throwIfNoEntry: false }) !== undefined;
    } catch {
      return false; // ENOTDIR, EACCES…: not there for a package manager either
    }
  };
  // What the operation itself brought back below the installed directory (agentsnap.environment held it) needs no
  // command: node_modules (or .venv) beside the manifest moved with it.
  const movedBelow = (dir: string) => changes.some((c) => c.path.startsWith(`${dir}/`));
  const installedDir = (d: DepsToSync) =>
    d.ecosystem === 'node' ? 'node_modules' : d.ecosystem === 'python' || d.ecosystem === 'pip' ? '.venv' : null;
  return depsToSync([...changed.keys()], exists).filter((d) => {
    const base = installedDir(d);
    return !base || !movedBelow(d.dir === '.' ? base : `${d.dir}/${base}`);
  });
}

async function runPlanned(repo: Repo, id: string, spec: OpSpec, opts: OperationOptions): Promise<OperationResult> {
  const session = loadSession(repo, id);
  // The session's own environment directories (`wrap --environment`) are the operation's too: its safety snapshot holds them.
  const settings = sessionSettings(opts.settings ?? (await loadSettings(repo)), session);
  checkWorktree(repo, session);
  const result = emptyResult(id, spec);
  result.exact = !!opts.exact;
  if (opts.dryRun) return dryRunOperation(repo, id, spec, opts, settings, result);
  return withSessionLock(plainContext(repo, settings), id, `${spec.kind}`, async (locked) => {
    // Reads the transcript holds saw the head before this operation: journaled first, with that state.
    await locked.importReads();
    const lockFile = contentLockFile(repo);
    return withLock(lockFile, { timeoutMs: settings.lockTimeoutMs, purpose: spec.kind }, () =>
      operationUnderLocks({ repo, id, spec, opts, settings, locked, result }),
    );
  });
}

/** The plan a run would execute, without locks or refs: the worktree is read through a throwaway copy of the private index. */
async function dryRunOperation(
  repo: Repo,
  id: string,
  spec: OpSpec,
  opts: OperationOptions,
  settings: Settings,
  result: OperationResult,
): Promise<OperationResult> {
  const events = readJournal(sessionPaths(repo, id).journal).events;
  const session = foldJournal(events)!;
  const snap = await dryRunSnapshot(repo, id, settings);
  const sinceHead = session.headTree ? await diffTrees(repo, session.headTree, snap.tree) : [];
  const p = await prepare(
    repo,
    spec,
    { repo, session, events, ops: foldOps(events), safetyTree: snap.tree },
    sinceHead,
    snap.skipped,
    opts,
  );
  fill(result, p);
  result.dryRun = true;
  // The plan the run executes, checked against the disk as the run checks it.
  result.changes = plannedChanges(p.disk);
  result.left = mergeLeft(explainLeft(p.disk.left, p.why), p.leftOut);
  result.wouldRefuse = !opts.force && (p.outside.length > 0 || p.unprotected.length > 0 || p.both.length > 0);
  return result;
}

/** One operation under the session lock and the worktree content lock. */
interface LockedOperation {
  repo: Repo;
  id: string;
  spec: OpSpec;
  opts: OperationOptions;
  settings: Settings;
  locked: LockedSession;
  result: OperationResult;
}

/**
 * The operation's one order: recover an interrupted one, snapshot the worktree (the safety snapshot), plan, refuse
 * or journal op.start, apply, journal op.done. A crash between op.start and op.done is completed by the next
 * operation (recoverInterrupted).
 */
async function operationUnderLocks(o: LockedOperation): Promise<OperationResult> {
  const { repo, id, spec, opts, settings, locked, result } = o;
  let events = readJournal(locked.paths.journal).events;
  result.recovered = await recoverInterrupted(repo, id, locked, events, settings);
  if (result.recovered.length > 0) events = readJournal(locked.paths.journal).events;
  const session = foldJournal(events)!;
  const ops = foldOps(events);
  const head = locked.head();

  const snap = await snapshotTree(repo, { indexFile: locked.paths.index, settings, parentTree: head.tree });
  const p = await prepare(repo, spec, { repo, session, events, ops, safetyTree: snap.tree }, snap.changed, snap.skipped, opts);
  fill(result, p);
  // Undo to where the worktree already is, with no step left to mark undone (the same undo run again,
  // say after a crash): nothing is recorded, so a later redo reverses the undo that did the work.
  if (spec.kind === 'undo' && p.plan.length === 0 && p.resolved.undoes.length === 0) {
    result.left = p.leftOut;
    return result;
  }
  refuseIfNeeded(spec, p, opts);
  if (!opts.force) {
    result.outside = [];
    result.unprotected = [];
  }
  const op = ops.length === 0 ? 1 : Math.max(...ops.map((x) => x.op)) + 1;
  const userHead = (await readHead(repo)).commit;
  const safety = await commitTree(repo, {
    tree: snap.tree,
    parents: [head.commit],
    message: opMessage(id, op, 'safety', `before operation ${op} (${spec.kind})`, userHead, o.settings.environment),
  });
  const ref = opRef(id, op);
  await locked.append(opStartEvent(o, { op, safety, snap, headTree: head.tree, p, session }), [{ ref, value: safety }]);
  result.op = op;
  result.safety = safety;
  result.safetyRef = ref;
  await applyOperation(o, { op, safety, p, userHead });
  return result;
}

/** The op.start line: what the operation will do, journaled before it touches the worktree. */
function opStartEvent(
  o: LockedOperation,
  x: { op: number; safety: string; snap: TreeSnapshotResult; headTree: string | null; p: Prepared; session: Session },
): OpStartEvent {
  const { id, spec, opts } = o;
  const { p, snap } = x;
  return {
    ...eventBase(id),
    type: 'op.start',
    op: x.op,
    kind: spec.kind,
    target: spec.target,
    to: p.resolved.toTree,
    toCommit: p.resolved.toCommit,
    safety: x.safety,
    safetyTree: snap.tree,
    safetySkipped: snap.skipped,
    paths: p.plan,
    undoes: p.resolved.undoes,
    redoes: p.resolved.redoes,
    force: !!opts.force,
    ...(opts.exact ? { exact: true } : {}),
    // What the safety snapshot saw besides the session head: protected for later operations (outsideChanges).
    // Without a head tree snapshotTree reports nothing; readers then diff the safety commit with its parent.
    ...(x.headTree ? { changedBefore: snap.changed } : {}),
    ...(opts.byStep !== undefined &&
    x.session.steps.some((st) => st.step === opts.byStep && st.status === 'open' && st.source !== 'transcript')
      ? { byStep: opts.byStep }
      : {}),
  };
}

/** Applies the plan journaled in op.start, then journals op.done with the result's commit (the new session head). */
async function applyOperation(o: LockedOperation, x: { op: number; safety: string; p: Prepared; userHead: string | null }): Promise<void> {
  const { repo, id, spec, opts, settings, locked, result } = o;
  const { op, p, userHead } = x;
  const applied = await applyPrepared(repo, p.plan, p.disk, {
    target: targetOf(p.resolved),
    ...opts.restoreHooks,
    ...(opts.interruptAfter !== undefined ? { interruptAfter: opts.interruptAfter } : {}),
  });
  const left = mergeLeft(explainLeft(applied.left, p.why), p.leftOut);
  const tree = await resultTree(repo, settings, locked.paths.index, applied);
  const kept = await keptCommit(repo, applied.kept, opMessage(id, op, 'kept', `versions kept by operation ${op} (${spec.kind})`, userHead));
  const commit = await commitTree(repo, {
    tree,
    parents: resultParents(x.safety, kept),
    message: opMessage(id, op, spec.kind, describeTarget(spec.kind, spec.target), userHead, settings.environment),
  });
  const done: OpDoneEvent = {
    ...eventBase(id),
    type: 'op.done',
    op,
    status: 'done',
    commit,
    tree,
    left,
    ...(kept ? { kept } : {}),
    resumed: false,
  };
  await locked.append(done, [{ ref: headRef(id), value: commit }]);
  releaseKept(applied);
  result.commit = commit;
  result.changes = applied.applied.map((c) => ({ path: c.path, change: changeLetter(c) }));
  result.left = left;
}

export function describeTarget(kind: OpKind, t: OpTarget): string {
  switch (kind) {
    case 'undo':
      return `undo ${t.step ?? ''}: back to before step ${t.step ?? '?'}`.replace('  ', ' ');
    case 'redo':
      return `redo: back to before operation ${t.op ?? '?'}`;
    case 'restore':
      return `restore ${(t.paths ?? []).join(' ')} as ${t.when === 'after' ? 'after' : 'before'} step ${t.step ?? '?'}`;
    case 'revert':
      return `revert step ${t.step ?? '?'}`;
    case 'op-undo':
      return `op undo ${t.op ?? '?'}: back to before operation ${t.op ?? '?'}`;
  }
}

// ---------------------------------------------------------------------------
// Entry points (the public API validates and resolves the session first)

export function undoOperation(repo: Repo, id: string, step: number | undefined, opts: OperationOptions): Promise<OperationResult> {
  return runOperation(repo, id, undoSpec(step), opts);
}

export function redoOperation(repo: Repo, id: string, opts: OperationOptions): Promise<OperationResult> {
  return runOperation(repo, id, redoSpec(), opts);
}

export function restoreOperation(
  repo: Repo,
  id: string,
  step: number,
  when: 'before' | 'after',
  paths: string[],
  opts: OperationOptions,
): Promise<OperationResult> {
  return runOperation(repo, id, restoreSpec(step, when, paths), opts);
}

export function revertOperation(repo: Repo, id: string, step: number, opts: OperationOptions): Promise<OperationResult> {
  return runOperation(repo, id, revertSpec(step), opts);
}

// ---------------------------------------------------------------------------
// Status

export interface SessionStatusReport {
  session: string;
  /** The name it is shown with (sessionName): given, first prompt or command; null for a `snap` session. */
  name: string | null;
  status: ReturnType<typeof statusNow>;
  worktree: string;
  agent: string | null;
  steps: number;
  lastStep: { step: number; tool: string | null; status: string; time: string } | null;
  undone: number[];
  open: number[];
  unprotected: { step: number; reason: string | null }[];
  /** Time of the last step event: hooks are arriving when this moves. */
  lastStepEventAt: string | null;
  ops: OpRecord[];
  /** An operation that was interrupted and will be completed by the next undo/redo/restore/revert. */
  interrupted: number[];
  /** The undo operation `redo` would take back, if any. */
  redoable: number | null;
  notUndoable: { step: number; effect: string; command: string }[];
}

export function statusOf(repo: Repo, id: string): SessionStatusReport {
  const events = readJournal(sessionPaths(repo, id).journal).events;
  const s = foldJournal(events);
  if (!s) throw errors.unknownSession(`no session ${id} in this repository.`, { data: { session: id } });
  const ops = foldOps(events);
  const last = s.steps[s.steps.length - 1];
  const stepEvents = events.filter((e) => e.type.startsWith('step.'));
  const notUndoable: SessionStatusReport['notUndoable'] = [];
  for (const st of s.steps) {
    const effect = outsideEffect(st, s.worktree);
    if (effect) notUndoable.push({ step: st.step, effect, command: effectLabel(st) });
  }
  return {
    session: s.id,
    name: sessionName(s),
    status: statusNow(s),
    worktree: s.worktree,
    agent: s.agent,
    steps: s.nextStep - 1,
    lastStep: last ? { step: last.step, tool: last.tool, status: last.status, time: last.endedAt ?? last.startedAt } : null,
    undone: [...undoneSteps(ops)].sort((a, b) => a - b),
    open: openSteps(s).map((st) => st.step),
    unprotected: s.steps.filter((st) => st.status === 'unprotected').map((st) => ({ step: st.step, reason: st.unprotectedReason })),
    lastStepEventAt: stepEvents[stepEvents.length - 1]?.time ?? null,
    ops,
    interrupted: ops.filter((o) => o.status === 'interrupted').map((o) => o.op),
    redoable:
      [...ops].reverse().find((o) => o.kind === 'undo' && o.status === 'done' && o.redoneBy === null && o.undoneBy === null)?.op ?? null,
    notUndoable,
  };
}
