// Public API of the operation log: `agentsnap op log` and `agentsnap op undo [ID]` (issue 32). Validates
// the id and picks the session; an undo, redo, restore, revert or op undo is taken back by the engine
// (src/restore/op-undo.ts), an apply by `apply --undo` in the worktree it wrote into.
import { errors } from '../base/errors.js';
import { openRepo } from '../git/repo.js';
import { readJournal } from '../session/journal.js';
import { selectSession, sessionPaths } from '../session/session.js';
import { sessionArg, type SessionOptions } from './api.js';
import { operationLog, opUndoOperation, type OpLogEntry, type OpUndoResult } from '../restore/op-undo.js';
import { undoApply, type UndoApplyResult } from '../worktrees/apply-undo.js';
import type { OperationCommonOptions } from './undo.js';
import { runDepsSync } from './deps.js';
import type { DepsSyncOutcome } from '../deps/sync.js';

export type { OpLogEntry, OpUndoResult } from '../restore/op-undo.js';

type Source = 'flag' | 'env' | 'recent';

async function sessionFor(opts: SessionOptions) {
  const repo = await openRepo(opts.cwd ?? process.cwd(), opts.env ? { env: opts.env } : {});
  const sel = await selectSession(repo, { session: sessionArg(repo, opts.session) });
  return { repo, id: sel.id, source: sel.source as Source };
}

/** `agentsnap op log`: the operations of a session, oldest first, each with its id. */
export async function opLog(opts: SessionOptions = {}): Promise<{ session: string; source: Source; ops: OpLogEntry[] }> {
  const { repo, id, source } = await sessionFor(opts);
  return { session: id, source, ops: operationLog(readJournal(sessionPaths(repo, id).journal).events) };
}

export interface OpUndoOptions extends SessionOptions {
  /** The operation's id from `op log`; default: the last operation. */
  id?: string | undefined;
  dryRun?: boolean;
  force?: boolean;
  /** The open step of the tool call asking for it (agentsnap's MCP tools): see OperationOptions.byStep. */
  byStep?: number | undefined;
  /** See OperationCommonOptions.syncDeps. */
  syncDeps?: boolean;
  depsListener?: OperationCommonOptions['depsListener'];
}

export interface OpUndoOutcome {
  session: string;
  source: Source;
  /** The operation taken back. */
  undone: OpLogEntry;
  /** An undo, redo, restore, revert or op undo: the engine's result (itself operation `files.op`). */
  files: OpUndoResult | null;
  /** An apply: `apply --undo`'s result in the worktree it wrote into (null for a dry run). */
  apply: UndoApplyResult | null;
  /** `syncDeps`: what each package manager's command did (null: not asked for, a dry run, or an apply). */
  depsSync: DepsSyncOutcome[] | null;
}

/** `agentsnap op undo [ID]`: takes back one operation (default: the last), keeping the user's edits. */
export async function opUndo(opts: OpUndoOptions = {}): Promise<OpUndoOutcome> {
  const { repo, id, source } = await sessionFor(opts);
  const log = operationLog(readJournal(sessionPaths(repo, id).journal).events);
  const wanted = opts.id === undefined ? undefined : String(opts.id).trim();
  const entry = wanted === undefined ? log[log.length - 1] : log.find((o) => o.id === wanted);
  if (!entry) {
    if (wanted === undefined)
      throw errors.nothingToDo(`nothing to take back in session ${id}: it has no operations.`, {
        hint: 'Operations are undo, redo, restore, revert, apply and op undo; `agentsnap log` lists the steps.',
        data: { session: id },
      });
    throw errors.unknownOperation(`no operation ${JSON.stringify(wanted)} in session ${id}.`, {
      hint: 'See `agentsnap op log` for the operations and their ids.',
      data: { session: id, op: wanted },
    });
  }
  const base = { session: id, source, undone: entry };
  if (entry.op !== null) {
    const files = await opUndoOperation(repo, id, entry.op, {
      dryRun: !!opts.dryRun,
      force: !!opts.force,
      ...(opts.byStep !== undefined ? { byStep: opts.byStep } : {}),
    });
    return { ...base, files, apply: null, depsSync: await runDepsSync(repo, files, opts) };
  }
  if (entry.kind === 'apply' && entry.target) {
    if (entry.undoneBy !== null)
      throw errors.nothingToDo(`operation ${entry.id} (${entry.what}) is already taken back (${entry.undoneBy}).`, {
        data: { session: id, op: entry.id },
      });
    if (!entry.undoable)
      throw errors.refused(
        `operation ${entry.id} (${entry.what}) is not the last apply into ${entry.target}: it cannot be taken back alone.`,
        {
          hint: 'Take back the later apply first (`agentsnap op log` lists them).',
          data: { session: id, op: entry.id },
        },
      );
    if (opts.dryRun) return { ...base, files: null, apply: null, depsSync: null };
    const target = await openRepo(entry.target, opts.env ? { env: opts.env } : {});
    return { ...base, files: null, apply: await undoApply(target, { session: id, force: !!opts.force }), depsSync: null };
  }
  throw errors.nothingToDo(`operation ${entry.id} (${entry.what}) cannot be taken back with op undo.`, {
    hint:
      entry.kind === 'apply-undo'
        ? `Apply the session again: \`agentsnap apply ${id}\`.`
        : 'A discarded session stays in its refs: `agentsnap log --session` still shows it.',
    data: { session: id, op: entry.id },
  });
}
