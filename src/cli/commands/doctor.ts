// `agentsnap doctor [--fix] [--json]`: exit 0 when healthy, 1 when problems were found.
import { doctor } from '../../sync-api.js';
import type { CommandFactory } from '../context.js';
import { jsonOption } from '../context.js';
import { printableLine } from '../../base/printable.js';

export const doctorCommand: CommandFactory = (ctx) => ({
  command: 'doctor',
  describe: "Check git, hooks, agent integrations and agentsnap's state; name the fix for each problem",
  builder: (y) =>
    y.options({
      fix: { type: 'boolean', default: false, describe: 'repair what is safe: stale locks, refs vs journals, dead sessions, stale worktrees' },
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
      const mark = ch.status === 'ok' ? c.green('ok     ') : ch.status === 'info' ? c.dim('info   ') : c.red('problem');
      out.out(`${mark}  ${printableLine(ch.message)}`);
      if (ch.fix) out.out(`         fix: ${printableLine(ch.fix)}`);
    }
    out.out(res.healthy ? 'healthy' : `${res.problems} problem${res.problems === 1 ? '' : 's'} found`);
  },
});
