import { AGENTS, parseHookArgs, runHook } from '../../runtime/hook.js';
import type { CommandFactory } from '../context.js';
import type { CliIO } from '../output.js';

/** Reads all of stdin (the agent's JSON payload); an absent stdin is an empty payload. */
async function readAll(stream: NodeJS.ReadableStream | undefined): Promise<string> {
  if (!stream) return '';
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string));
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * `agentsnap hook <agent> <event> [--wrapped]`, run by the agent around each
 * tool call. Parsed without yargs on purpose: a usage error must not become
 * exit code 2, which Claude Code reads as "block this tool call". Always
 * exits 0, never prints on stdout (read as a decision), one warning line on
 * stderr when something failed.
 */
export async function runHookCli(args: string[], io: CliIO): Promise<number> {
  try {
    const { agent, event, wrapped, env } = parseHookArgs(args, io.env);
    const input = await readAll(io.stdin);
    const res = await runHook({ agent, event, input, env, cwd: io.cwd, wrapped });
    if (res.warning) io.stderr.write(`${res.warning}\n`);
  } catch (e) {
    io.stderr.write(`agentsnap: warning: hook failed: ${e instanceof Error ? e.message : String(e)}\n`);
  }
  return 0;
}

/** Registered for --help; the real entry is runHookCli (see main.ts). */
export const hookCommand: CommandFactory = (ctx) => ({
  command: 'hook <agent> <event>',
  describe: 'Hook entry point agents call around each tool call (reads their JSON payload on stdin; always exits 0)',
  builder: (y) =>
    y
      .positional('agent', { type: 'string', describe: AGENTS.join(', ') })
      .positional('event', {
        type: 'string',
        describe: "the agent's event: PreToolUse, PostToolUse, PostToolUseFailure, BeforeTool, AfterTool, SessionEnd, pre, post",
      })
      .options({
        wrapped: { type: 'boolean', hidden: true },
        session: { type: 'string', hidden: true },
        worktree: { type: 'string', hidden: true },
      }),
  handler: async (raw) => {
    const argv = raw as unknown as { agent: string; event: string; wrapped?: boolean; session?: string; worktree?: string };
    const extra = [
      ...(argv.wrapped ? ['--wrapped'] : []),
      ...(argv.session ? ['--session', argv.session] : []),
      ...(argv.worktree ? ['--worktree', argv.worktree] : []),
    ];
    await runHookCli([argv.agent, argv.event, ...extra], ctx.io);
  },
});
