// `agentsnap doctor [--fix] [--json]`: exit 0 when healthy, 1 when something is broken; optional set-up not done is information.
import { doctor } from '../../api/sync.js';
import type { CommandFactory } from '../context.js';
import { jsonOption } from '../context.js';
import { printableLine } from '../../base/printable.js';

export const doctorCommand: CommandFactory = (ctx) => ({
  command: 'doctor',
  describe: "Check git, hooks, agent integrations and agentsnap's state; name the fix for each problem",
  builder: (y) =>
    y.options({
      fix: {
        type: 'boolean',
        default: false,
        describe: 'repair what is safe: stale locks, refs vs journals, dead sessions, stale worktrees',
      },
      ...jsonOption,
    }),
  handler: async (raw) => {
    const argv = raw as unknown as { fix: boolean; json: boolean };
    const out = ctx.output(argv);
    const res = await doctor({ cwd: ctx.io.cwd, env: ctx.io.env, fix: argv.fix });
    ctx.setExitCode(res.healthy ? 0 : 1);
    if (out.json) return out.printJson(res);
    const c = out.color;
    for (const f of res.fixed) out.out(`${c.cyan('fixed')}    ${printableLine(f)}`);
    for (const ch of res.checks) {
      const mark =
        ch.status === 'ok'
          ? c.green('ok     ')
          : ch.status === 'problem'
            ? c.red('problem')
            : ch.setup
              ? c.cyan('optional')
              : c.dim('info   ');
      out.out(`${mark}${ch.setup && ch.status !== 'problem' ? ' ' : '  '}${printableLine(ch.message)}`); // 'optional' is one wider
      if (ch.fix) out.out(`         fix: ${printableLine(ch.fix)}`);
      if (ch.setup) out.out(`         to set up: ${printableLine(ch.setup)}`);
    }
    const optional = res.checks.filter((ch) => ch.setup).length;
    const more = optional ? ` (${optional} optional set-up${optional === 1 ? '' : 's'} not done: see above)` : '';
    out.out(res.healthy ? `healthy${more}` : `${res.problems} problem${res.problems === 1 ? '' : 's'} found`);
  },
});
