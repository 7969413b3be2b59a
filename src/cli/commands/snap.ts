import { end, snap } from '../../api/api.js';
import type { CommandFactory } from '../context.js';
import { jsonOption, sessionOption } from '../context.js';
import { describeSkipped, printablePath, setAsideNote } from '../output.js';

interface SnapArgs {
  session?: string;
  phase?: 'pre' | 'post';
  step?: number;
  tool?: string;
  message?: string;
  status?: 'done' | 'failed' | 'interrupted';
  json: boolean;
  quiet: boolean;
}

export const snapCommand: CommandFactory = (ctx) => ({
  command: 'snap',
  describe: 'Snapshot the worktree into refs/agent/<session>/<n> (a checkpoint, or the pre/post of a tool call)',
  builder: (y) =>
    y
      .options({
        ...sessionOption,
        phase: { choices: ['pre', 'post'] as const, describe: 'pre: allocate a step before a tool call; post: close it' },
        step: { type: 'number', describe: 'with --phase post: the step to close (default: the only open one)' },
        tool: { type: 'string', describe: 'tool name recorded with the step' },
        message: { type: 'string', alias: 'm', describe: 'note recorded with the step' },
        status: { choices: ['done', 'failed', 'interrupted'] as const, describe: 'with --phase post: how the call ended (default done)' },
        quiet: { type: 'boolean', alias: 'q', default: false, describe: 'print only the step number' },
        ...jsonOption,
      })
      .example('$0 snap -m "before refactor"', 'checkpoint the worktree as a step of the current session')
      .example(
        'step=$(agentsnap snap --phase pre --tool Bash) && ./run.sh; agentsnap snap --phase post --step $step',
        'bracket a tool call',
      ),
  handler: async (raw) => {
    const argv = raw as unknown as SnapArgs;
    const out = ctx.output(argv);
    const progress = out.progress();
    let res;
    try {
      res = await snap({
        cwd: ctx.io.cwd,
        env: ctx.io.env,
        openContext: ctx.io.openContext,
        session: argv.session,
        phase: argv.phase,
        step: argv.step,
        tool: argv.tool,
        message: argv.message,
        status: argv.status,
        onProgress: (p) => progress.update(p),
        // Not from the warm server: start one for the next snap (and hooks) of this worktree.
        autoStartServer: !ctx.io.openContext,
      });
    } finally {
      progress.done();
    }
    if (out.json) {
      out.printJson(res);
      return;
    }
    if (res.startedSession) out.note(`agentsnap: started session ${res.session} (baseline refs/agent/${res.session}/0)`);
    if (res.startedSession && res.shadow)
      out.note(`agentsnap: this directory is in no git repository: its snapshots are kept in ${printablePath(res.shadow)}`);
    if (res.shadowSetAside) out.err(`agentsnap: warning: ${setAsideNote(res.shadowSetAside)}`);
    const changed = res.changed.length === 1 ? '1 file changed' : `${res.changed.length} files changed`;
    out.note(`agentsnap: session ${res.session} step ${res.step} ${res.phase} ${res.commit.slice(0, 10)} (${changed})`);
    if (res.skipped.length > 0) out.note(`agentsnap: not snapshotted: ${res.skipped.map(describeSkipped).join(', ')}`);
    out.out(String(res.step));
  },
});

interface EndArgs {
  session?: string;
  json: boolean;
  quiet: boolean;
}

export const endCommand: CommandFactory = (ctx) => ({
  command: 'end',
  describe: 'End the current session (the one `snap` started): a final snapshot; its steps stay (a wrapped session ends with its command)',
  builder: (y) =>
    y
      .options({
        ...sessionOption,
        quiet: { type: 'boolean', alias: 'q', default: false, describe: 'print nothing' },
        ...jsonOption,
      })
      .example('$0 snap -m "before refactor" && … && $0 end', 'save points of your own, then end their session')
      .example('$0 end --session fix-login', 'end a session a killed wrapper left running'),
  handler: async (raw) => {
    const argv = raw as unknown as EndArgs;
    const out = ctx.output(argv);
    const res = await end({ cwd: ctx.io.cwd, env: ctx.io.env, session: argv.session });
    if (out.json) {
      out.printJson(res);
      return;
    }
    if (!res.ended) {
      out.note(`agentsnap: session ${res.session} had already ended; nothing to do`);
      return;
    }
    const changed = res.changed.length === 1 ? '1 file changed' : `${res.changed.length} files changed`;
    const last = res.commit
      ? `final snapshot ${res.commit.slice(0, 10)} (${changed} since its last step)`
      : 'no change since its last step';
    out.note(`agentsnap: session ${res.session} ended; ${last}; its steps stay until \`agentsnap gc\``);
  },
});
