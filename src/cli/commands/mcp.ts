// `agentsnap mcp`: the MCP server over stdio (src/mcp/server.ts). Its stdout is the protocol's: nothing else is printed there.
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import type { CommandFactory } from '../context.js';
import { sameError, sessionOption } from '../context.js';

export const mcpCommand: CommandFactory = (ctx) => ({
  command: 'mcp',
  describe: "Serve agentsnap's tools (steps, diffs, undo, redo, restore, check) to an agent over MCP (stdio)",
  builder: (y) =>
    y
      .options({
        ...sessionOption,
        worktree: {
          type: 'string',
          describe: 'the worktree the server acts on (default: the one of the current directory); `wrap --mcp` passes it',
        },
      })
      .example('$0 mcp', 'what `agentsnap init claude --mcp` registers in .mcp.json')
      .example('claude --mcp-config \'{"mcpServers":{"agentsnap":{"command":"agentsnap","args":["mcp"]}}}\'', 'for one run'),
  handler: async (raw) => {
    const argv = raw as unknown as { session?: string; worktree?: string };
    // Loaded here: the server and the SDK are another bundle (scripts/bundle-cli.mjs), never paid by other commands.
    const { serveMcp } = await import('../../mcp/server.js');
    try {
      await serveMcp({
        cwd: argv.worktree === undefined ? ctx.io.cwd : path.resolve(ctx.io.cwd, argv.worktree),
        env: ctx.io.env,
        session: argv.session,
        stdin: (ctx.io.stdin ?? process.stdin) as Readable,
        stdout: ctx.io.stdout as Writable,
      });
    } catch (e) {
      throw sameError(e);
    }
  },
});
