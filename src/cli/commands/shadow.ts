// `agentsnap shadow [show|create|import]`: the shadow repository agentsnap keeps for a directory in no git
// repository (issue 33; src/git/shadow.ts).
import { shadowCreate, shadowImport, shadowShow, type ShadowReport } from '../../api/shadow.js';
import { errors } from '../../base/errors.js';
import type { CommandFactory } from '../context.js';
import { jsonOption } from '../context.js';
import { printablePath, type Output } from '../output.js';
import { printableLine } from '../../base/printable.js';

function printReport(out: Output, r: ShadowReport): void {
  if (out.json) {
    out.printJson(r);
    return;
  }
  if (r.shadow === null) {
    out.out(`${printablePath(r.worktree)} is a git repository: agentsnap keeps its snapshots there, in no shadow repository.`);
    if (r.leftBehindHint) out.out(printableLine(r.leftBehindHint));
    return;
  }
  out.out(`${printablePath(r.worktree)} is in no git repository: its snapshots are kept in ${printablePath(r.shadow)}`);
  out.out(`left out: the directory's .gitignore files, agentsnap.exclude and ${r.excludes.map(printableLine).join(' ')}`);
  out.out(`(edit ${printablePath(`${r.gitDir}/info/exclude`)}; \`agentsnap gc --all\` here removes the shadow repository)`);
  for (const d of r.setAside) out.out(`set aside (kept for a directory that was at this path before): ${printablePath(d)}`);
}

export const shadowCommand: CommandFactory = (ctx) => ({
  command: 'shadow [action]',
  describe: 'Where the snapshots of a directory in no git repository are kept; create one, or carry it into a new repository',
  builder: (y) =>
    y
      .positional('action', {
        choices: ['show', 'create', 'import'] as const,
        default: 'show',
        describe:
          'show: where and what it leaves out; create: make it now; import: carry its sessions into the repository `git init` made here',
      })
      .options({
        force: { type: 'boolean', default: false, describe: 'create: also for a home directory or /' },
        'dry-run': { type: 'boolean', alias: 'n', default: false, describe: 'import: only say which sessions would be carried over' },
        ...jsonOption,
      })
      .example('$0 shadow', 'is this directory recorded in a shadow repository, and what is left out?')
      .example('git init && $0 shadow import', 'carry the sessions into the new repository'),
  handler: async (raw) => {
    const argv = raw as unknown as { action: 'show' | 'create' | 'import'; force: boolean; dryRun: boolean; json: boolean };
    const out = ctx.output(argv);
    const base = { cwd: ctx.io.cwd, env: ctx.io.env };
    if (argv.force && argv.action !== 'create') throw errors.invalidArgument('--force goes with `shadow create`.');
    if (argv.dryRun && argv.action !== 'import') throw errors.invalidArgument('--dry-run goes with `shadow import`.');
    if (argv.action === 'import') {
      const r = await shadowImport({ ...base, dryRun: argv.dryRun });
      if (out.json) {
        out.printJson(r);
        return;
      }
      const what = r.sessions.length === 1 ? '1 session' : `${r.sessions.length} sessions`;
      out.out(
        r.dryRun
          ? `would carry ${what} over (${r.sessions.join(', ') || 'none'}) and remove ${printablePath(r.shadow)}`
          : `carried ${what} over (${r.sessions.join(', ') || 'none'}); removed the shadow repository ${printablePath(r.shadow)}`,
      );
      if (r.excludes.length > 0)
        out.out(
          `${r.dryRun ? 'would add' : 'added'} what the shadow left out to ${printablePath(r.excludeFile)}, so this repository's snapshots (and git) leave it out too: ${r.excludes.map(printableLine).join(' ')}`,
        );
      return;
    }
    printReport(out, argv.action === 'create' ? await shadowCreate({ ...base, force: argv.force }) : await shadowShow(base));
  },
});
