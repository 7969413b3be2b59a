// The commands that move the worktree (undo, redo, restore, revert) and status.
import {
  redo,
  restore,
  revert,
  status,
  undo,
  type DepsSyncListener,
  type DepsSyncOutcome,
  type DepsToSync,
  type OperationResult,
} from '../../api/undo.js';
import { shellQuote } from '../../base/shell.js';
import { ExitCode, errors } from '../../base/errors.js';
import type { ChatRewind } from '../../restore/rewind.js';
import { adapterOf } from '../../agents/registry.js';
import { planLines } from '../../session/plan.js';
import type { AgentProcess } from '../../session/processes.js';
import { AUTO_TOOL } from '../../session/model.js';
import type { StopResult } from '../../base/procfs.js';
import { watcherLine } from '../../server/watch-state.js';
import type { CliContext, CommandFactory } from '../context.js';
import { jsonOption, sessionOption, sessionSourceNote, stepArgument } from '../context.js';
import { describeLeft, printablePath, processLine, type Output } from '../output.js';
import { printableLine, printableName, printableText } from '../../base/printable.js';

export const opOptions = {
  ...sessionOption,
  'dry-run': { type: 'boolean', alias: 'n', default: false, describe: 'print exactly which files would change and how; change nothing' },
  force: {
    type: 'boolean',
    alias: 'f',
    default: false,
    describe: 'go ahead over changes made outside tool calls and unprotected steps (they stay in the safety snapshot)',
  },
  'sync-deps': {
    type: 'boolean',
    default: false,
    describe:
      "after the files are back, run the package manager's command (npm ci, uv sync…) where a manifest or lockfile changed (exit 6 if it fails)",
  },
  ...jsonOption,
} as const;

/** undo, redo and restore: which changes they take back (issue 32 item 1). */
const ruleOptions = {
  ...opOptions,
  exact: {
    type: 'boolean',
    default: false,
    describe:
      "the worktree exactly as at the target, refusing where your edits would be lost (default: take back the agent's changes, keep yours)",
  },
  merge: {
    type: 'boolean',
    default: false,
    describe:
      "a file both the agent and you changed: keep your edit with the agent's changes taken out (git merge-file; conflicts change nothing)",
  },
} as const;

interface OpArgs {
  session?: string;
  'dry-run': boolean;
  force: boolean;
  'sync-deps': boolean;
  exact?: boolean;
  merge?: boolean;
  json: boolean;
}

/** What every operation command passes on the same way: where, which session, the run's flags and its dependency sync. */
function operationFlags(ctx: CliContext, out: Output, argv: OpArgs) {
  return {
    cwd: ctx.io.cwd,
    env: ctx.io.env,
    session: argv.session,
    dryRun: argv['dry-run'],
    force: argv.force,
    exact: argv.exact,
    merge: argv.merge,
    syncDeps: argv['sync-deps'],
    depsListener: depsListener(ctx, out),
  };
}

const VERB: Record<string, string> = { A: 'create', D: 'delete', M: 'modify', T: 'change type' };
const DONE: Record<string, string> = { A: 'created', D: 'deleted', M: 'modified', T: 'type changed' };

function range(ns: number[]): string {
  if (ns.length === 0) return '';
  const sorted = [...ns].sort((a, b) => a - b);
  const parts: string[] = [];
  let start = sorted[0]!;
  let prev = start;
  for (const n of [...sorted.slice(1), Number.NaN]) {
    if (n === prev + 1) {
      prev = n;
      continue;
    }
    parts.push(start === prev ? String(start) : `${start}-${prev}`);
    start = n;
    prev = n;
  }
  return parts.join(', ');
}

/** "step 4" or "steps 1-3, 7". */
function steps(ns: number[]): string {
  return `${ns.length === 1 ? 'step' : 'steps'} ${range(ns)}`;
}

/** Prints an operation's outcome: what changed, what was left, and what cannot be undone. */
export function printOperation(out: Output, r: OperationResult, headline: string): void {
  const c = out.color;
  for (const rec of r.recovered) {
    out.err(
      rec.status === 'done'
        ? `agentsnap: completed interrupted operation ${rec.op} (${rec.kind}) first`
        : `agentsnap: interrupted operation ${rec.op} (${rec.kind}) was not completed (${rec.reason ?? 'unknown'}). The worktree as it was before it is in ${rec.ref}.`,
    );
  }
  // Never "back" without a word on what is not: each path left is listed below the headline.
  // The user's own edits kept (and merged) are listed apart: keeping them is the rule, not an exception.
  const mine = new Set([...r.yours.map((y) => y.path), ...r.merged]);
  const left = r.left.filter((l) => !mine.has(l.path));
  const except =
    left.length === 0 ? '' : `, except ${left.length === 1 ? 'the path left as it is' : `the ${left.length} paths left as they are`} (!)`;
  const yours = r.yours.length === 0 ? '' : `; ${r.yours.length === 1 ? 'your edit' : `your ${r.yours.length} edits`} kept`;
  out.out(c.bold(`${headline}${except}${yours}`));
  const verbs = r.dryRun ? VERB : DONE;
  if (r.changes.length === 0) out.out(r.dryRun ? '  no file would change' : '  no file changed');
  for (const ch of r.changes) {
    const color = ch.change === 'A' ? c.green : ch.change === 'D' ? c.red : c.yellow;
    out.out(`  ${color(ch.change)} ${printablePath(ch.path)}${c.dim(`  (${verbs[ch.change]})`)}`);
  }
  for (const l of left) out.out(c.yellow(`  ! ${describeLeft(l)}`));
  for (const y of r.yours) out.out(`  = kept: ${printablePath(y.path)} (your edit ${y.when})`);
  if (r.yours.length > 0 && !r.dryRun)
    out.note('agentsnap: your edits are kept; with `--exact --force` they would go back to the target too (kept in the safety snapshot)');
  for (const m of r.merged) out.out(`  ~ merged: ${printablePath(m)} (your edit kept, the agent's changes taken out)`);
  if (r.both.length > 0) {
    out.out(c.yellow(`  ${r.dryRun && r.wouldRefuse ? 'refused without --merge or --force: ' : ''}changed by the agent and by you since:`));
    for (const b of r.both)
      out.out(
        c.yellow(
          `    ${b.change} ${printablePath(b.path)}: by ${b.by.join(', ')} and by you (${b.yours.join(', ')})${b.unmergeable ? `; --merge: ${b.unmergeable}` : ''}`,
        ),
      );
  }
  // An undo to before a revert (restore, op undo) takes that operation's changes back too: said, never silent.
  for (const t of r.takesBack)
    out.out(c.yellow(`  ${r.dryRun ? 'would take' : 'takes'} back operation ${t.op} (${t.what}); \`agentsnap op log\` lists it`));
  // A kept path is also left (with the target's reason) since issue 29 item 10: listed once, by its `!` line.
  for (const k of r.kept.filter((k) => !r.left.some((l) => k === l.path || k.startsWith(`${l.path}/`))))
    out.out(c.dim(`  = ${printablePath(k)}  kept: it was not snapshotted at the target (skipped)`));
  if (r.outside.length > 0) {
    out.out(
      c.yellow(
        `  ${r.dryRun ? (r.wouldRefuse ? 'refused without --force: ' : '') : 'overwritten with --force: '}changes made outside the recorded tool calls:`,
      ),
    );
    for (const o of r.outside) out.out(c.yellow(`    ${o.change} ${printablePath(o.path)} (${o.when})`));
  }
  if (r.unprotected.length > 0) {
    out.out(
      c.yellow(
        `  ${r.dryRun && r.wouldRefuse ? 'refused without --force: ' : ''}crosses unprotected ${steps(r.unprotected.map((u) => u.step))}`,
      ),
    );
  }
  if (r.headMoved) {
    const short = (x: string | null) => (x ? x.slice(0, 10) : 'unborn');
    out.out(
      c.yellow(
        `  HEAD moved during these steps (${short(r.headMoved.then)} -> ${short(r.headMoved.now)}): files ${r.dryRun ? 'would be' : 'were'} restored, the branch is left where it is`,
      ),
    );
  }
  if (r.safetyRef) out.note(`agentsnap: the worktree as it was is kept in ${r.safetyRef}`);
  if (r.notUndoable.length > 0) {
    const list = r.notUndoable.map((n) => `step ${n.step} \`${printableLine(n.command)}\``).join(', ');
    out.out(c.red(`${r.dryRun ? 'files would be restored' : 'files restored'}; not undoable: ${list}`));
  }
}

/** A command as the user would type it. */
function commandText(argv: string[]): string {
  return printableLine(argv.map(shellQuote).join(' '));
}

/** Where a dependency command runs: `web/`, `./` for the top of the worktree. */
function dirText(dir: string): string {
  return dir === '.' ? './' : `${printablePath(dir)}/`;
}

/** The changed dependency files of an entry, relative to its directory where they are in it. */
function depFiles(e: DepsToSync): string {
  const prefix = e.dir === '.' ? '' : `${e.dir}/`;
  return e.files.map((f) => printablePath(prefix && f.startsWith(prefix) ? f.slice(prefix.length) : f)).join(', ');
}

/** `--sync-deps`'s listener for the CLI: a note as each command starts, its output passed through to stderr. */
export function depsListener(ctx: Parameters<CommandFactory>[0], out: Output): DepsSyncListener {
  return {
    start: (e) => out.note(`agentsnap: ${depFiles(e)} changed: running \`${commandText(e.command)}\` in ${dirText(e.dir)}`),
    output: (chunk) => ctx.io.stderr.write(chunk),
  };
}

/**
 * What the dependency files an operation moved need (issue 33): the command to run (a dry run: that would), or how
 * each command `--sync-deps` ran went. A failed or missing one sets exit 6: the operation itself is done.
 */
export function printDeps(
  ctx: Parameters<CommandFactory>[0],
  out: Output,
  r: OperationResult,
  synced: DepsSyncOutcome[] | null,
  opts: { syncAsked: boolean; kind: string },
): void {
  const done = new Map((synced ?? []).map((s) => [JSON.stringify([s.dir, s.command]), s]));
  for (const e of r.deps) {
    const files = depFiles(e);
    const where = dirText(e.dir);
    if (e.command === null) {
      out.note(
        `agentsnap: ${files} ${r.dryRun ? 'would be' : e.files.length === 1 ? 'is' : 'are'} gone (in ${where}): nothing to install there; ${e.installed} there may be left over`,
      );
      continue;
    }
    const cmd = `\`${commandText(e.command)}\``;
    if (r.dryRun) {
      out.note(
        opts.syncAsked
          ? `agentsnap: ${files} would change: --sync-deps would run ${cmd} in ${where}`
          : `agentsnap: ${files} would change: then run ${cmd} (in ${where}) so ${e.installed} matches, or add --sync-deps`,
      );
      continue;
    }
    const s = done.get(JSON.stringify([e.dir, e.command]));
    if (!s) out.note(`agentsnap: ${files} changed: run ${cmd} (in ${where}) so ${e.installed} matches (--sync-deps runs it)`);
    else if (s.error === null) out.note(`agentsnap: ${cmd} in ${where} done (exit 0)`);
    else {
      ctx.setExitCode(ExitCode.depsSync);
      out.err(
        s.ran
          ? `agentsnap: ${cmd} in ${where} failed: ${printableLine(s.error)}. The ${opts.kind} itself is done; ${e.installed} may not match ${files}: see its output above, fix it and run ${cmd} there again (exit 6).`
          : `agentsnap: could not run ${cmd} in ${where}: ${printableLine(s.error)}. The ${opts.kind} itself is done; install ${printableLine(e.command[0] ?? '')} and run ${cmd} there so ${e.installed} matches (exit 6).`,
      );
    }
  }
}

/** `--json`: exit 6 where a command --sync-deps ran failed or could not start (the JSON says which). */
export function depsVerdict(ctx: Parameters<CommandFactory>[0], synced: DepsSyncOutcome[] | null): void {
  if (synced?.some((s) => s.error !== null)) ctx.setExitCode(ExitCode.depsSync);
}

/**
 * A dry run of an operation the real one would refuse exits 3, as the real one
 * does: a script can ask "would this go through?" without changing anything.
 */
export function dryRunVerdict(ctx: Parameters<CommandFactory>[0], out: Output, r: OperationResult | null, kind: string): void {
  if (!r || !r.dryRun || !r.wouldRefuse) return;
  ctx.setExitCode(ExitCode.refused);
  if (!out.json)
    out.err(
      `agentsnap: the real ${kind} would be refused (exit 3): see the changes above; ${r.both.length > 0 ? "--merge keeps your edits with the agent's changes taken out; " : ''}--force goes ahead and keeps them in the safety snapshot.`,
    );
}

function printChat(out: Output, chat: ChatRewind, step: number, compacting = false): void {
  if (chat.kind === 'transcript') {
    const compact = 'digest' in chat;
    out.out(
      compact
        ? `conversation compacted before step ${step}: ${printablePath(chat.file)} (the original is unchanged; the files are untouched)`
        : `conversation forked before step ${step}: ${printablePath(chat.file)} (the original is unchanged)`,
    );
    if (chat.subagentCall) {
      const agentCall = chat.subagentStep !== null ? `step ${chat.subagentStep}, the Agent call` : `the Agent call ${chat.subagentCall}`;
      out.out(
        out.color.yellow(
          `  step ${step} was made by a subagent: the conversation is ${compact ? 'kept from' : 'cut before'} ${agentCall} that started it`,
        ),
      );
    }
    const turn = adapterOf(chat.agent)?.turnWord ?? 'assistant message';
    if (chat.sharedWith > 0) {
      out.out(
        out.color.yellow(
          `  step ${step}'s tool call shared its ${turn} with ${chat.sharedWith} other tool ${chat.sharedWith === 1 ? 'call' : 'calls'}; the conversation is ${compact ? 'kept from' : 'cut before'} that whole ${turn.split(' ')[1]}`,
        ),
      );
    }
    if (compact) {
      const pct = chat.before.chars > 0 ? Math.round((100 * (chat.before.chars - chat.after.chars)) / chat.before.chars) : 0;
      out.out(
        `  before: ${chat.before.messages} messages, ${chat.before.chars} characters; after: ${chat.after.messages} messages, ${chat.after.chars} characters (${pct}% shorter)`,
      );
    }
    out.out(`resume it with:  ${printableLine(chat.shellCommand)}`);
  } else {
    out.note(
      `agentsnap: no conversation to ${compacting ? 'compact' : 'fork'} (${chat.reason}); a digest of the session before step ${step}:`,
    );
    out.out(printableText(chat.text));
  }
}

/** The processes the undone steps left running: an undo puts files back, not processes (and redo revives none). */
function printProcesses(out: Output, list: (AgentProcess & { stopped?: StopResult })[], dryRun: boolean, step: number | undefined): void {
  if (list.length === 0) return;
  const stopping = list.some((p) => p.stopped !== undefined);
  out.out(
    stopping
      ? 'processes the undone steps started:'
      : `still running, started by ${dryRun ? 'the steps to undo' : 'the undone steps'} (files are put back, processes are not):`,
  );
  for (const p of list) out.out(`  ${processLine(p)}`);
  if (!stopping)
    out.note(
      `agentsnap: \`agentsnap undo ${step ?? 'N'} --stop-processes\` also stops them; a stopped process is not started again by redo`,
    );
}

export const undoCommand: CommandFactory = (ctx) => ({
  command: 'undo [step]',
  describe: 'Take back the changes of step N and every later step, keeping your own edits; default: the last step not undone',
  builder: (y) =>
    y
      .positional('step', { type: 'string', describe: 'step to undo, with every later one' })
      .options({
        ...ruleOptions,
        chat: { type: 'boolean', default: false, describe: 'rewind only the conversation (a forked transcript to resume)' },
        both: { type: 'boolean', default: false, describe: 'rewind the files and the conversation' },
        compact: {
          type: 'boolean',
          default: false,
          describe: 'fork the conversation with everything before step N replaced by a digest, the rest kept (files untouched)',
        },
        'stop-processes': {
          type: 'boolean',
          default: false,
          describe: 'also stop the processes the undone steps started and left running (SIGTERM, then SIGKILL)',
        },
        'last-good': {
          type: 'boolean',
          default: false,
          describe: 'back to the state after the last step whose check passed (agentsnap check)',
        },
      })
      .example('$0 undo', 'undo the last tool call')
      .example('$0 undo 3 --dry-run', 'what undoing step 3 and later would change')
      .example('$0 undo 3 --both', 'files and conversation back to before step 3')
      .example('$0 undo 3 --compact', 'a shorter conversation: steps before 3 as a digest, step 3 on kept'),
  handler: async (raw) => {
    const argv = raw as unknown as UndoArgs;
    const out = ctx.output(argv);
    const step = argv.step === undefined ? undefined : stepArgument(argv.step);
    refuseScopeMix(argv);
    const res = await undo({
      ...operationFlags(ctx, out, argv),
      step,
      scope: argv.compact ? 'compact' : argv.chat ? 'chat' : argv.both ? 'both' : 'files',
      stopProcesses: argv['stop-processes'],
      lastGood: argv['last-good'],
    });
    if (out.json) {
      out.printJson(res);
      dryRunVerdict(ctx, out, res.files, 'undo');
      depsVerdict(ctx, res.depsSync);
      return;
    }
    printUndo(ctx, out, argv, res);
  },
});

type UndoArgs = OpArgs & {
  step?: string;
  chat: boolean;
  both: boolean;
  compact: boolean;
  'stop-processes': boolean;
  'last-good': boolean;
};

/** --chat, --both and --compact each say what to rewind: two of them at once is a mistake, said before anything runs. */
function refuseScopeMix(argv: UndoArgs): void {
  if (argv.chat && argv.both)
    throw errors.invalidArgument(
      '--chat and --both exclude each other: --chat rewinds only the conversation, --both files and conversation.',
    );
  if (argv.compact && (argv.chat || argv.both || argv['stop-processes'])) {
    const other = argv.chat ? '--chat' : argv.both ? '--both' : '--stop-processes';
    throw errors.invalidArgument(
      `--compact and ${other} exclude each other: --compact forks a shorter conversation (steps before N as a digest, the rest kept) and leaves files and processes alone; ${other === '--stop-processes' ? '--stop-processes goes with an undo of the files' : `${other} rewinds the conversation to before step N`}.`,
      {
        hint: 'Run them one after the other, e.g. `agentsnap undo N` then `agentsnap undo N --compact`.',
      },
    );
  }
}

/** An undo's result as text: the files (operation, steps undone, plan, processes, dependencies), then the conversation. */
function printUndo(ctx: CliContext, out: Output, argv: UndoArgs, res: Awaited<ReturnType<typeof undo>>): void {
  const id = res.files?.session;
  if (id) out.note(sessionSourceNote(id, res.source));
  if (res.files) {
    const r = res.files;
    const head = r.dryRun
      ? `undo ${r.target.step} (dry run): the worktree would go back to before step ${r.target.step}`
      : r.op === null
        ? `undo ${r.target.step}: the worktree is already as before step ${r.target.step} (nothing recorded)`
        : `undo ${r.target.step} (operation ${r.op}): the worktree is back to before step ${r.target.step}`;
    printOperation(out, r, head);
    if (!r.dryRun && r.undone.length > 0)
      out.note(`agentsnap: ${steps(r.undone)} undone; \`agentsnap redo\` brings ${r.undone.length === 1 ? 'it' : 'them'} back`);
    if (res.planUndone.length > 0) {
      out.out(
        `plan items the ${r.dryRun ? 'steps to undo' : 'undone steps'} had marked done (the agent may still believe them done):\n${planLines(res.planUndone).replace(/^/gm, '  ')}`,
      );
    }
    printProcesses(out, res.processes, r.dryRun, r.target.step);
    printDeps(ctx, out, r, res.depsSync, { syncAsked: argv['sync-deps'], kind: 'undo' });
    dryRunVerdict(ctx, out, r, 'undo');
  }
  if (res.chat && res.chatStep !== null) printChat(out, res.chat, res.chatStep, argv.compact);
  else if (argv['dry-run'] && res.chatStep !== null && !res.files) {
    out.out(
      argv.compact
        ? `the conversation would be compacted: the steps before ${res.chatStep} as a digest, step ${res.chatStep} on kept`
        : `the conversation would be rewound to before step ${res.chatStep}`,
    );
  }
}

export const redoCommand: CommandFactory = (ctx) => ({
  command: 'redo',
  describe: 'Return to the state before the last undo (also after new steps; itself undoable)',
  builder: (y) => y.options(ruleOptions).example('$0 redo', 'take the last undo back'),
  handler: async (raw) => {
    const argv = raw as unknown as OpArgs;
    const out = ctx.output(argv);
    const r = await redo(operationFlags(ctx, out, argv));
    dryRunVerdict(ctx, out, r, 'redo');
    depsVerdict(ctx, r.depsSync);
    if (out.json) {
      out.printJson(r);
      return;
    }
    out.note(sessionSourceNote(r.session, r.source));
    printOperation(
      out,
      r,
      r.dryRun
        ? `redo (dry run): back to before operation ${r.target.op}`
        : `redo (operation ${r.op}): back to before operation ${r.target.op}`,
    );
    if (!r.dryRun && r.redone.length > 0) out.note(`agentsnap: ${steps(r.redone)} ${r.redone.length === 1 ? 'is' : 'are'} back`);
    if (r.undone.length > 0)
      out.out(
        out.color.yellow(
          `${steps(r.undone)}, recorded after that undo, ${r.undone.length === 1 ? 'is' : 'are'} replaced; ${r.undone.length === 1 ? 'its' : 'their'} files are in ${r.safetyRef ?? 'the safety snapshot'}`,
        ),
      );
    printDeps(ctx, out, r, r.depsSync, { syncAsked: argv['sync-deps'], kind: 'redo' });
  },
});

export const restoreCommand: CommandFactory = (ctx) => ({
  command: 'restore <step> [paths..]',
  describe: 'Bring specific files back as they were before step N (or after it, with --after)',
  builder: (y) =>
    y
      .positional('step', { type: 'string', describe: 'step number' })
      .positional('paths', { type: 'string', array: true, describe: 'files or directories (also accepted after --)' })
      .options({ ...ruleOptions, after: { type: 'boolean', default: false, describe: 'the state after step N instead of before it' } })
      .example('$0 restore 3 -- src/app.ts', 'src/app.ts as it was before step 3')
      .example('$0 restore 3 --after -- src/', 'src/ as step 3 left it'),
  handler: async (raw) => {
    const argv = raw as unknown as OpArgs & { step: string; after: boolean; paths?: string[]; '--'?: string[] };
    const out = ctx.output(argv);
    const step = stepArgument(argv.step);
    const paths = [...(argv.paths ?? []), ...(argv['--'] ?? [])].map(String);
    const r = await restore({ ...operationFlags(ctx, out, argv), step, after: argv.after, paths });
    dryRunVerdict(ctx, out, r, 'restore');
    depsVerdict(ctx, r.depsSync);
    if (out.json) {
      out.printJson(r);
      return;
    }
    out.note(sessionSourceNote(r.session, r.source));
    const when = argv.after ? 'after' : 'before';
    printOperation(
      out,
      r,
      r.dryRun
        ? `restore (dry run): ${paths.map(printablePath).join(' ')} as ${when} step ${step}`
        : `restore (operation ${r.op}): ${paths.map(printablePath).join(' ')} as ${when} step ${step}`,
    );
    printDeps(ctx, out, r, r.depsSync, { syncAsked: argv['sync-deps'], kind: 'restore' });
  },
});

export const revertCommand: CommandFactory = (ctx) => ({
  command: 'revert <step>',
  describe: 'Take back only what step N changed, keeping later steps (three-way merge; conflicts change nothing)',
  builder: (y) =>
    y
      .positional('step', { type: 'string', describe: 'step number' })
      .options(opOptions)
      .example('$0 revert 4', 'take back tool call 4 only'),
  handler: async (raw) => {
    const argv = raw as unknown as OpArgs & { step: string };
    const out = ctx.output(argv);
    const step = stepArgument(argv.step);
    const r = await revert({ ...operationFlags(ctx, out, argv), step });
    dryRunVerdict(ctx, out, r, 'revert');
    depsVerdict(ctx, r.depsSync);
    if (out.json) {
      out.printJson(r);
      return;
    }
    out.note(sessionSourceNote(r.session, r.source));
    printOperation(out, r, r.dryRun ? `revert ${step} (dry run)` : `revert ${step} (operation ${r.op}): step ${step}'s changes taken back`);
    printDeps(ctx, out, r, r.depsSync, { syncAsked: argv['sync-deps'], kind: 'revert' });
  },
});

function ago(iso: string | null): string {
  if (!iso) return 'never';
  const ms = Date.now() - Date.parse(iso);
  if (!Number.isFinite(ms)) return iso;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.round(s / 60)}m ago`;
  if (s < 86400) return `${Math.round(s / 3600)}h ago`;
  return `${Math.round(s / 86400)}d ago`;
}

export const statusCommand: CommandFactory = (ctx) => ({
  command: 'status',
  describe: 'Where the session stands: last step, undone, open and unprotected steps, hooks, operations',
  builder: (y) => y.options({ ...sessionOption, ...jsonOption }),
  handler: async (raw) => {
    const argv = raw as unknown as { session?: string; json: boolean };
    const out = ctx.output(argv);
    const s = await status({ cwd: ctx.io.cwd, env: ctx.io.env, session: argv.session });
    if (out.json) {
      out.printJson(s);
      return;
    }
    const c = out.color;
    out.out(
      `${c.bold(`session ${s.session}`)}${s.name ? ` (${printableName(s.name)})` : ''}  ${s.status}  ${printablePath(s.worktree)}${s.agent ? `  ${printablePath(s.agent)}` : ''}`,
    );
    out.out(
      s.lastStep
        ? `last step: ${s.lastStep.step} ${printablePath(s.lastStep.tool ?? '')} (${s.lastStep.status})`.replace('  ', ' ')
        : 'no steps yet',
    );
    // A wrap --auto session's steps come from watching the worktree, not from hooks.
    out.out(
      s.lastStep?.tool === AUTO_TOOL
        ? `automatic checkpoints (wrap --auto): the last ${ago(s.lastStepEventAt)}`
        : `hooks: last step event ${ago(s.lastStepEventAt)}`,
    );
    // Only when it costs the user something: a watching server is the normal case.
    if (s.watcher?.state === 'degraded') {
      out.out(c.yellow(watcherLine(s.watcher)));
      if (s.watcher.hint) out.out(`  ${s.watcher.hint}`);
    }
    if (s.shadow)
      out.out(
        `shadow repository: ${printablePath(s.shadow)} (this directory is in no git repository; \`agentsnap shadow\` says what it leaves out)`,
      );
    if (s.shadowLeftBehind)
      out.out(
        c.yellow(`a shadow repository from before \`git init\` holds earlier sessions: \`agentsnap shadow import\` carries them over`),
      );
    if (s.undone.length > 0)
      out.out(`undone: ${steps(s.undone)}${s.redoable !== null ? ` (\`agentsnap redo\` takes back operation ${s.redoable})` : ''}`);
    if (s.open.length > 0) out.out(c.yellow(`open: ${steps(s.open)} (running, or the post hook never came)`));
    if (s.unprotected.length > 0)
      out.out(
        c.red(`unprotected: ${s.unprotected.map((u) => `step ${u.step}${u.reason ? ` (${printableLine(u.reason)})` : ''}`).join(', ')}`),
      );
    if (s.notUndoable.length > 0)
      out.out(c.red(`not undoable: ${s.notUndoable.map((n) => `step ${n.step} \`${printableLine(n.command)}\``).join(', ')}`));
    if (s.processes.length > 0) {
      out.out(`processes the agent left running (${s.processes.length}):`);
      for (const p of s.processes) out.out(`  ${processLine(p)}`);
    }
    if (s.interrupted.length > 0)
      out.out(c.yellow(`interrupted operations: ${s.interrupted.join(', ')} (the next undo, redo, restore or revert completes them)`));
    if (s.ops.length === 0) out.out('operations: none');
    else {
      out.out('operations:');
      for (const o of s.ops) {
        const what =
          o.kind === 'undo'
            ? `undo ${o.target.step}`
            : o.kind === 'redo'
              ? `redo of operation ${o.target.op}`
              : o.kind === 'restore'
                ? `restore ${(o.target.paths ?? []).map(printablePath).join(' ')} (${o.target.when} step ${o.target.step})`
                : `revert ${o.target.step}`;
        out.out(
          `  ${String(o.op).padStart(3)}  ${what}  ${o.changed} ${o.changed === 1 ? 'path' : 'paths'}  ${o.status}${o.redoneBy ? `  (redone by ${o.redoneBy})` : ''}`,
        );
      }
    }
  },
});
