// The operation log (`agentsnap op log`) and `op undo` of an undo, redo, restore, revert or op undo
// (issue 32, jj's model): every operation that moved a worktree is listed with an id, and any of them
// can be taken back. `op undo N` is itself an operation of the engine in undo.ts (kind op-undo: safety
// snapshot, op.start, restore, op.done), so it is listed and can be taken back in turn. Its target is
// the worktree before operation N (N's safety snapshot) on the paths N changed, with undo's protection:
// a change made outside the recorded tool calls since N, on one of those paths, refuses (exit 3).
// Applies into another worktree are the worktrees layer's (`apply --undo`): listed here, undone by the API.
import { errors } from '../base/errors.js';
import { readJournal, type ChangedPath, type JournalEvent, type SessionApplyEvent } from '../session/journal.js';
import { sessionPaths } from '../session/session.js';
import type { Repo } from '../git/repo.js';
import {
  describeTarget,
  eventIndex,
  foldOps,
  runOperation,
  skippedOf,
  stepsAfter,
  undoneSteps,
  type OperationOptions,
  type OperationResult,
  type OpRecord,
  type OpSpec,
} from './undo.js';

/** One entry of the operation log. */
export interface OpLogEntry {
  /** `3` (an undo, redo, restore, revert or op undo: its operation number), `a1` (the session's first apply), `a1-undo`, `discard`. */
  id: string;
  kind: OpRecord['kind'] | 'apply' | 'apply-undo' | 'discard';
  time: string;
  /** What it did, in words ("revert step 4", "apply to /path"). */
  what: string;
  /** done; abandoned or interrupted (an operation of the engine that did not finish). */
  status: 'done' | 'abandoned' | 'interrupted';
  /** The id of what took it back (op undo, apply --undo, redo of an undo); null while it stands. */
  undoneBy: string | null;
  /** Files it changed (planned). */
  files: number;
  /** Whether `op undo <id>` can take it back now. */
  undoable: boolean;
  /** Operation number of the engine's operations; null for applies and discards. */
  op: number | null;
  /** The worktree an apply wrote into. */
  target?: string;
  /** Changes made outside the recorded tool calls that its safety snapshot saw first (the user's edits before it). */
  edits: ChangedPath[];
  /** Position in the session's journal (orders the log's timeline). */
  at: number;
}

function applyWhat(ev: SessionApplyEvent): string {
  return `apply to ${ev.target}`;
}

/** The operations of a session, in journal order, from its journal events. */
export function operationLog(events: JournalEvent[]): OpLogEntry[] {
  const ops = new Map(foldOps(events).map((o) => [o.op, o]));
  const out: OpLogEntry[] = [];
  const applies = new Map<string, OpLogEntry>();
  events.forEach((e, at) => {
    if (e.type === 'op.start') {
      const o = ops.get(e.op)!;
      out.push({
        id: String(o.op),
        kind: o.kind,
        time: o.time,
        what: describeTarget(o.kind, o.target),
        status: o.status,
        undoneBy: o.undoneBy !== null ? String(o.undoneBy) : o.redoneBy !== null ? String(o.redoneBy) : null,
        files: o.changed,
        undoable: o.status === 'done' && o.undoneBy === null,
        op: o.op,
        edits: e.changedBefore ?? [],
        at,
      });
    } else if (e.type === 'session.apply') {
      const entry: OpLogEntry = {
        id: `a${applies.size + 1}`,
        kind: 'apply',
        time: e.time,
        what: applyWhat(e),
        status: 'done',
        undoneBy: null,
        files: e.written.length + e.deleted.length,
        undoable: true,
        op: null,
        target: e.target,
        edits: [],
        at,
      };
      applies.set(e.safetyRef, entry);
      out.push(entry);
    } else if (e.type === 'session.apply.undo') {
      const applied = applies.get(e.safetyRef);
      const id = `${applied?.id ?? 'a?'}-undo`;
      if (applied) {
        applied.undoneBy = id;
        applied.undoable = false;
      }
      out.push({
        id,
        kind: 'apply-undo',
        time: e.time,
        what: `apply --undo in ${e.target}`,
        status: 'done',
        undoneBy: null,
        files: e.written.length + e.deleted.length,
        undoable: false,
        op: null,
        target: e.target,
        edits: [],
        at,
      });
    } else if (e.type === 'session.discard') {
      out.push({
        id: 'discard',
        kind: 'discard',
        time: e.time,
        what: e.worktree ? `discard (removed ${e.worktree})` : 'discard',
        status: 'done',
        undoneBy: null,
        files: e.changed.length,
        undoable: false,
        op: null,
        edits: [],
        at,
      });
    }
  });
  // An apply is taken back only by `apply --undo`, and only the last one into its worktree.
  const lastInto = new Map<string, OpLogEntry>();
  for (const o of out) if (o.kind === 'apply' && o.target) lastInto.set(o.target, o);
  for (const o of out) if (o.kind === 'apply' && o.target && lastInto.get(o.target) !== o) o.undoable = false;
  return out;
}

/** Where each step first appears in the journal (its pre, or its checkpoint): orders steps among operations. */
export function stepPositions(events: JournalEvent[]): Map<number, number> {
  const at = new Map<number, number>();
  events.forEach((e, i) => {
    if (
      (e.type === 'step.pre' || e.type === 'step.post' || e.type === 'step.checkpoint' || e.type === 'step.unprotected') &&
      !at.has(e.step)
    )
      at.set(e.step, i);
  });
  return at;
}

function opUndoSpec(op: number): OpSpec {
  const target = { op };
  return {
    kind: 'op-undo',
    target,
    async resolve({ session, events, ops, safetyTree }) {
      const taken = ops.find((o) => o.op === op);
      if (!taken) {
        throw errors.unknownOperation(`no operation ${op} in session ${session.id}.`, {
          hint: 'See `agentsnap op log` for the operations and their ids.',
          data: { session: session.id, op: String(op) },
        });
      }
      if (taken.status !== 'done') {
        throw errors.nothingToDo(`operation ${op} (${taken.kind}) was ${taken.status}: it changed nothing to take back.`, {
          data: { session: session.id, op: String(op) },
        });
      }
      if (taken.undoneBy !== null) {
        throw errors.nothingToDo(`operation ${op} (${taken.kind}) is already taken back by operation ${taken.undoneBy}.`, {
          hint: `Bring it back with \`agentsnap op undo ${taken.undoneBy}\`.`,
          data: { session: session.id, op: String(op), undoneBy: String(taken.undoneBy) },
        });
      }
      const anchor = eventIndex(events, (e) => e.type === 'op.start' && e.op === op);
      const start = events[anchor];
      if (!start || start.type !== 'op.start') throw errors.internal(`operation ${op} has no op.start in the journal.`);
      // Only the paths the operation changed (not those it left as they were) go back: what changed
      // elsewhere since stays, and a change outside tool calls on one of them refuses (undo's protection).
      const left = new Set(taken.left.map((l) => l.path));
      const paths = start.paths.map((c) => c.path).filter((p) => !left.has(p));
      return {
        toTree: paths.length > 0 ? start.safetyTree : safetyTree,
        toCommit: paths.length > 0 ? start.safety : null,
        ...(paths.length > 0 ? { paths } : {}),
        anchor,
        // The steps since: their changes to these paths go too (they are the agent's, kept in the snapshots),
        // and one whose snapshot failed (unprotected) refuses without --force, as for undo.
        crossed: stepsAfter(events, anchor).filter((n) => !session.steps.some((y) => y.step === n && y.status === 'open')),
        undoes: [],
        redoes: null,
        redone: [],
        headOf: null,
        skippedAtTarget: skippedOf(events, start.safety),
      };
    },
  };
}

export interface OpUndoResult extends OperationResult {
  /** Steps no longer undone after it (an op undo of an undo), and steps undone again (of a redo). */
  stepsBack: number[];
  stepsUndone: number[];
}

/** `op undo N` of an operation of the engine: the worktree before it on the paths it changed. */
export async function opUndoOperation(repo: Repo, id: string, op: number, opts: OperationOptions): Promise<OpUndoResult> {
  const ops = foldOps(readJournal(sessionPaths(repo, id).journal).events);
  const before = undoneSteps(ops);
  const r = await runOperation(repo, id, opUndoSpec(op), opts);
  // The steps' undone marks after it: the journal's fold, or for a dry run the fold with it done.
  const after = r.dryRun
    ? undoneSteps([
        ...ops,
        { ...ops[0]!, op: Number.MAX_SAFE_INTEGER, kind: 'op-undo', target: { op }, status: 'done', undoes: [], redoes: null },
      ])
    : undoneSteps(foldOps(readJournal(sessionPaths(repo, id).journal).events));
  return {
    ...r,
    stepsBack: [...before].filter((n) => !after.has(n)).sort((a, b) => a - b),
    stepsUndone: [...after].filter((n) => !before.has(n)).sort((a, b) => a - b),
  };
}
