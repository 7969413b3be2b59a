// `agentsnap server start|stop|status|run`.
import { serverRun, serverStart, serverStatus, serverStop, type ServerStatus } from '../../runtime/server-api.js';
import type { CommandFactory } from '../context.js';
import { jsonOption } from '../context.js';
import type { Output } from '../output.js';
import { watcherLine } from '../../server/watch-state.js';

function print(out: Output, s: ServerStatus): void {
  if (out.json) {
    out.printJson(s);
    return;
  }
  if (!s.enabled) out.out('server: switched off (AGENTSNAP_SERVER or agentsnap.server; needs Linux)');
  else if (!s.running) out.out('server: not running (the next hook call or snap starts one)');
  else out.out(`server: running, pid ${s.pid}${s.hosted ? ', inside a wrapper' : ''}, since ${s.since}`);
  if (s.watcher) {
    out.out(watcherLine(s.watcher));
    if (s.watcher.hint) out.out(`  ${s.watcher.hint}`);
  }
  out.out(`run dir: ${s.runDir}`);
}

export const serverCommand: CommandFactory = (ctx) => ({
  command: 'server <action>',
  describe: 'The warm per-worktree server that answers hooks and snap without starting Node',
  builder: (y) =>
    y
      .positional('action', {
        choices: ['start', 'stop', 'status', 'run'] as const,
        describe: 'start/stop a background server, show its status, or run one in the foreground',
      })
      .options({
        idle: { type: 'number', describe: 'run: exit after this many seconds without a call (default agentsnap.serverIdle)' },
        ...jsonOption,
      })
      .example('$0 server status --json', 'is a server answering this worktree?')
      .example('$0 server stop', 'stop the background server (it also stops by itself when idle)'),
  handler: async (raw) => {
    const argv = raw as unknown as { action: 'start' | 'stop' | 'status' | 'run'; idle?: number; json: boolean };
    const out = ctx.output(argv);
    const base = { cwd: ctx.io.cwd, env: ctx.io.env };
    if (argv.action === 'run') {
      await serverRun({
        ...base,
        snap: ctx.serveSnap,
        ...(ctx.serveWrap ? { wrap: ctx.serveWrap } : {}),
        ...(argv.idle !== undefined ? { idleMs: argv.idle * 1000 } : {}),
      });
      // A call given up on at shutdown may still hold a read of its client's stdin open.
      process.exit(0);
    }
    const s =
      argv.action === 'start' ? await serverStart(base) : argv.action === 'stop' ? await serverStop(base) : await serverStatus(base);
    print(out, s);
  },
});
