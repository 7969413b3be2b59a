import {
  beginWrap,
  endWrap,
  servable,
  wrap,
  type AgentChoice,
  type WrapOptions,
  type WrapResult,
  type WrapRun,
  type WrapStart,
} from '../../runtime/wrap.js';
import { AGENTS, RECOGNISED_AGENTS } from '../../agents/registry.js';
import type { CliContext, CommandFactory } from '../context.js';
import { printablePath, setAsideNote, type Output } from '../output.js';
import { sessionOption } from '../context.js';
import { shellQuote } from '../../base/shell.js';
import { printableName } from '../../base/printable.js';
import { parseEnvironment } from '../../settings/settings.js';

export interface WrapArgs {
  session?: string;
  agent: AgentChoice;
  auto: boolean;
  quiet: boolean;
  worktree?: boolean;
  name?: string;
  from?: string;
  command?: string[];
  mcp: boolean;
  environment?: string | string[];
  '--'?: string[];
}

export const wrapCommand: CommandFactory = (ctx) => ({
  command: 'wrap [command..]',
  describe: "Run an agent with a snapshot before and after every tool call (its exit code is the agent's)",
  builder: (y) =>
    y
      .positional('command', { type: 'string', array: true, describe: 'the agent command, after --' })
      .options({
        session: { ...sessionOption.session, describe: 'session id to start, or to resume when it exists (default: a new one)' },
        agent: {
          choices: ['auto', ...AGENTS] as const,
          default: 'auto' as AgentChoice,
          describe: `which agent it is: auto recognises ${RECOGNISED_AGENTS.join(', ')} from the command; generic gets AGENTSNAP_SESSION only`,
        },
        auto: {
          type: 'boolean',
          default: false,
          describe: 'also checkpoint whenever the worktree changed and then stayed quiet (agents without hooks, e.g. aider)',
        },
        quiet: { type: 'boolean', alias: 'q', default: false, describe: 'no session line on stderr' },
        mcp: {
          type: 'boolean',
          default: false,
          describe: "also give the agent agentsnap's MCP tools (steps, undo, redo, restore, check) for this run, editing no file of yours",
        },
        environment: {
          type: 'string',
          requiresArg: true,
          describe:
            'an ignored directory (node_modules, .venv) to snapshot whole for this session, so undo brings it back with the code; repeat or comma-separate (agentsnap.environment sets it for every session)',
        },
        worktree: { type: 'boolean', describe: 'run the agent in a new linked worktree of its own (see apply, promote, discard)' },
        name: {
          type: 'string',
          describe:
            'a name for the session, shown by `agentsnap sessions` and accepted wherever its id is (default: the command, shortened)',
        },
        from: {
          type: 'string',
          implies: 'worktree',
          describe:
            'with --worktree: start from `current` (this worktree as it is, uncommitted files included; the default), `HEAD`, or a revision',
        },
      })
      .example('$0 wrap -- claude', 'every Claude Code tool call becomes an undoable step')
      .example('$0 wrap --session fix-login -- claude --continue', 'resume a session')
      .example('$0 wrap -- ./my-agent.sh', 'a generic agent calls `agentsnap snap --phase pre|post` itself')
      .example(
        '$0 wrap --worktree --name login -- claude',
        'the agent works in its own worktree; bring the result back with `agentsnap apply`',
      )
      .example('$0 wrap --environment node_modules -- claude', 'undo also brings back what the agent installed')
      .example('$0 wrap --auto -- aider', 'a checkpoint after each burst of changes')
      .example('$0 wrap --mcp -- claude', 'the agent can list and undo its own steps (MCP tools mcp__agentsnap__*)'),
  handler: async (raw) => {
    const argv = raw as unknown as WrapArgs;
    const out = ctx.output({ quiet: argv.quiet });
    const progress = out.progress();
    const res = await wrap({
      ...wrapOptions(argv, ctx),
      onProgress: (p) => progress.update(p),
      onStart: (info) => {
        progress.done();
        startNotes(out, argv, info);
      },
    });
    endNotes(out, res, argv.name);
    ctx.setExitCode(res.exitCode);
  },
});

function wrapOptions(argv: WrapArgs, ctx: CliContext): WrapOptions {
  return {
    cwd: ctx.io.cwd,
    env: ctx.io.env,
    command: [...(argv.command ?? []), ...(argv['--'] ?? [])].map(String),
    session: argv.session,
    agent: argv.agent,
    name: argv.name ?? null,
    worktree: argv.worktree ? { name: argv.name ?? null, from: argv.from ?? 'current' } : null,
    auto: argv.auto,
    mcp: argv.mcp,
    environment: parseEnvironment(([] as string[]).concat(argv.environment ?? []), 'flag'),
    serveSnap: ctx.serveSnap,
  };
}

/** The session line and the set-up warnings, once the baseline is taken. */
function startNotes(out: Output, argv: WrapArgs, info: WrapStart): void {
  const verb = info.resumed ? 'resumed' : 'started';
  const how = [
    info.agent === 'generic' ? 'AGENTSNAP_SESSION set for the command' : `${info.agent} hooks injected`,
    ...(argv.auto ? ['automatic checkpoints'] : []),
    ...(argv.mcp && info.agent !== 'generic' ? ['MCP server agentsnap offered'] : []),
    ...(argv.environment ? [`${printableName(([] as string[]).concat(argv.environment).join(', '))} snapshotted whole`] : []),
  ].join(', ');
  const name = argv.name ? ` "${printableName(argv.name)}"` : '';
  out.note(`agentsnap: ${verb} session ${info.session}${name} (refs ${info.refPrefix}<n>; ${how})`);
  if (info.sessionWorktree) out.note(`agentsnap: the agent works in ${info.worktree}`);
  if (info.shadow && !info.resumed)
    out.note(`agentsnap: this directory is in no git repository: its snapshots are kept in ${printablePath(info.shadow)}`);
  if (info.shadowSetAside) out.err(`agentsnap: warning: ${setAsideNote(info.shadowSetAside)}`);
  for (const w of info.warnings) out.err(`agentsnap: warning: ${w}`);
}

/** What the end of the session printed: its warnings, then how it ended (its hints name it as the user did: `--name`). */
function endNotes(out: Output, res: WrapResult, name?: string): void {
  // A name holding a control character is not one to type: its hints name the session by its id.
  const handle = name && printableName(name) === name ? shellQuote(name) : res.session;
  for (const w of res.warnings) out.err(w);
  if (res.endError) {
    out.err(`agentsnap: warning: the final snapshot of session ${res.session} failed: ${res.endError.message}`);
  } else if (res.sessionWorktree) {
    const id = handle;
    out.note(
      [
        `agentsnap: session ${res.session} ended; its work is in ${res.worktree}`,
        `  look:     agentsnap log --session ${id}; agentsnap diff 0 --session ${id}`,
        `  apply:    agentsnap apply ${id}   (merge it into your worktree)`,
        `  promote:  agentsnap promote ${id} --branch <name>   (one commit on a new branch)`,
        `  discard:  agentsnap discard ${id}   (remove the worktree)`,
      ].join('\n'),
    );
  } else if (res.wholeRun === 'unchanged') {
    out.note(`agentsnap: session ${res.session} ended; no files changed, nothing recorded`);
  } else {
    out.note(`agentsnap: session ${res.session} ended; see \`agentsnap log --session ${handle}\``);
  }
  // A run with no step of its own (a plain command; a known agent's are said in its warning): its one step.
  if (!res.endError && res.wholeRun && res.wholeRun !== 'unchanged' && res.agent === 'generic') {
    const files = res.wholeRun.changed === 1 ? '1 file changed' : `${res.wholeRun.changed} files changed`;
    out.note(
      `agentsnap: recorded 1 step (the whole run: ${files}); \`agentsnap undo ${res.wholeRun.step} --session ${handle}\` takes it back`,
    );
  }
}

/**
 * The wrap command's first half for a background server answering the thin
 * client (bin/wrap-client.js), which starts the agent; `end` is its second,
 * printed through the end call's context. Only forms the client runs as this
 * command would (servable: in this worktree, no automatic checkpoints, an
 * agent whose hooks need nothing outside its command line); otherwise null,
 * and the client runs the whole wrap itself.
 */
export async function beginServedWrap(
  ctx: CliContext,
  argv: WrapArgs,
  servedBy: NonNullable<WrapOptions['servedBy']>,
): Promise<{ run: WrapRun; end(ctx: CliContext, res: WrapResult): number } | null> {
  const opts: WrapOptions = { ...wrapOptions(argv, ctx), servedBy };
  if (!servable(opts)) return null;
  const out = ctx.output({ quiet: argv.quiet });
  const run = await beginWrap({ ...opts, onStart: (info) => startNotes(out, argv, info) });
  return {
    run,
    end: (endCtx, res) => {
      endNotes(endCtx.output({ quiet: argv.quiet }), res, argv.name);
      return res.exitCode;
    },
  };
}

/** finishServedWrap (main.ts): a served session ended by its client, its server gone (endWrap). */
export async function endServedWrap(
  ctx: CliContext,
  begun: { session: string; agent: string; quiet: boolean; worktree?: string },
  exit: { code: number | null; signal: NodeJS.Signals | null; error?: string },
  refused: string | null,
): Promise<number> {
  const res = await endWrap({
    cwd: begun.worktree ?? ctx.io.cwd,
    env: ctx.io.env,
    session: begun.session,
    agent: begun.agent,
    exit,
    refused,
  });
  endNotes(ctx.output({ quiet: begun.quiet }), res);
  return res.exitCode;
}
