// `agentsnap op log` and `agentsnap op undo [ID]`: the operation log, and taking back any operation.
import { opLog, opUndo } from '../../api/op.js';
import { errors } from '../../base/errors.js';
import type { CommandFactory } from '../context.js';
import { sessionSourceNote } from '../context.js';
import { printablePath, type Output } from '../output.js';
import { printableLine } from '../../base/printable.js';
import { depsListener, depsVerdict, dryRunVerdict, opOptions, printDeps, printOperation } from './undo.js';

function dateTime(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

interface OpUndoArgs {
  id?: string;
  session?: string;
  'dry-run': boolean;
  force: boolean;
  'sync-deps': boolean;
  json: boolean;
}

export const opCommand: CommandFactory = (ctx) => ({
  command: 'op <action> [id]',
  describe: 'The operation log (undo, redo, restore, revert, apply, op undo) and taking back any operation',
  builder: (y) =>
    y
      .positional('action', { choices: ['log', 'undo'] as const, describe: 'log: list the operations; undo: take one back' })
      .positional('id', { type: 'string', describe: 'undo: the id `op log` shows (default: the last operation)' })
      .options(opOptions)
      .example('$0 op log', 'every operation of the session, with its id')
      .example('$0 op undo', 'take back the last operation (again: take back that op undo)')
      .example('$0 op undo 2 --dry-run', 'what taking back operation 2 would change'),
  handler: async (raw) => {
    const argv = raw as unknown as OpUndoArgs & { action: 'log' | 'undo' };
    const out = ctx.output(argv);
    const common = { cwd: ctx.io.cwd, env: ctx.io.env, session: argv.session };
    if (argv.action === 'log') {
      if (argv.id !== undefined)
        throw errors.invalidArgument(`op log takes no id (${JSON.stringify(argv.id)}).`, { hint: 'Run `agentsnap op log`.' });
      const res = await opLog(common);
      if (out.json) {
        out.printJson(res.ops.map(({ at: _at, ...o }) => o));
        return;
      }
      out.note(sessionSourceNote(res.session, res.source));
      if (res.ops.length === 0) {
        out.note('no operations yet (undo, redo, restore, revert, apply and op undo are listed here)');
        return;
      }
      const c = out.color;
      const idWidth = Math.max(...res.ops.map((o) => o.id.length));
      const kindWidth = Math.max(...res.ops.map((o) => o.kind.length));
      for (const o of res.ops) {
        const state = o.status !== 'done' ? c.yellow(o.status) : o.undoneBy !== null ? c.dim(`undone by ${o.undoneBy}`) : c.green('done');
        const files = o.files === 1 ? '1 file' : `${o.files} files`;
        out.out(
          `${c.bold(o.id.padStart(idWidth))}  ${o.kind.padEnd(kindWidth)}  ${dateTime(o.time)}  ${printablePath(printableLine(o.what))}  ${c.dim(files)}  ${state}`,
        );
      }
      return;
    }
    await runOpUndo(ctx, out, { ...common, argv });
  },
});

/** `op undo [ID]`: takes the operation back, prints what it did (and what its dependency files need). */
async function runOpUndo(
  ctx: Parameters<CommandFactory>[0],
  out: Output,
  { argv, ...common }: { cwd: string; env: NodeJS.ProcessEnv; session: string | undefined; argv: OpUndoArgs },
): Promise<void> {
  const r = await opUndo({
    ...common,
    id: argv.id,
    dryRun: argv['dry-run'],
    force: argv.force,
    syncDeps: argv['sync-deps'],
    depsListener: depsListener(ctx, out),
  });
  if (r.files) dryRunVerdict(ctx, out, r.files, 'op undo');
  depsVerdict(ctx, r.depsSync);
  if (out.json) {
    out.printJson(r);
    return;
  }
  out.note(sessionSourceNote(r.session, r.source));
  const what = `operation ${r.undone.id} (${printableLine(r.undone.what)})`;
  if (r.files) {
    const f = r.files;
    printOperation(
      out,
      f,
      f.dryRun ? `op undo ${r.undone.id} (dry run): back to before ${what}` : `op undo (operation ${f.op}): ${what} taken back`,
    );
    if (f.stepsBack.length > 0)
      out.note(`agentsnap: step${f.stepsBack.length === 1 ? '' : 's'} ${f.stepsBack.join(', ')} ${f.dryRun ? 'would be' : 'are'} back`);
    if (f.stepsUndone.length > 0)
      out.note(
        `agentsnap: step${f.stepsUndone.length === 1 ? '' : 's'} ${f.stepsUndone.join(', ')} ${f.dryRun ? 'would be' : 'are'} undone again`,
      );
    if (!f.dryRun && f.op !== null) out.note(`agentsnap: take this back too with \`agentsnap op undo ${f.op}\``);
    printDeps(ctx, out, f, r.depsSync, { syncAsked: argv['sync-deps'], kind: 'op undo' });
    return;
  }
  if (!r.apply) {
    out.out(
      `op undo ${r.undone.id} (dry run): would run \`agentsnap apply --undo\` in ${printablePath(r.undone.target ?? '')} (${r.undone.files} files)`,
    );
    return;
  }
  out.out(out.color.bold(`op undo: ${what} taken back in ${printablePath(r.undone.target ?? '')}`));
  for (const p of [...r.apply.written, ...r.apply.deleted].sort()) out.out(`  ${printablePath(p)}  (as before the apply)`);
  for (const l of r.apply.left) out.out(`  ! ${printablePath(l.path)}: ${printableLine(l.reason)}`);
  out.note(`agentsnap: the worktree as it was is kept in ${r.apply.beforeRef}`);
}
