// `agentsnap ui`: serves the local page (src/ui/server.ts), prints its URL and opens it; runs until Ctrl-C.
import type { CommandFactory } from '../context.js';
import { sameError, sessionOption } from '../context.js';

export const uiCommand: CommandFactory = (ctx) => ({
  command: 'ui',
  describe: 'A local web page of the sessions: timeline, diffs, conversation, and undo/redo/restore/revert with their dry runs',
  builder: (y) =>
    y
      .options({
        ...sessionOption,
        port: { type: 'number', describe: 'port on 127.0.0.1 (default: a free one)' },
        open: { type: 'boolean', default: true, describe: 'open the page in the browser (--no-open: only print its URL)' },
      })
      .example('$0 ui', 'open the timeline of the most recent session')
      .example('$0 ui --no-open --port 4791', 'print the URL (it holds the access token) and serve on port 4791'),
  handler: async (raw) => {
    const argv = raw as unknown as { session?: string; port?: number; open: boolean };
    const out = ctx.output({});
    // Loaded here: the server (node:http) is a bundle of its own (scripts/bundle-cli.mjs), never paid by other commands.
    const { startUiServer, openInBrowser } = await import('../../ui/server.js');
    const server = await startUiServer({ cwd: ctx.io.cwd, env: ctx.io.env, session: argv.session, port: argv.port }).catch((e: unknown) => {
      throw sameError(e);
    });
    out.out(server.url);
    out.note('agentsnap ui: serving on 127.0.0.1 only; the URL holds the access token. Ctrl-C stops it.');
    // Listening for the signals before the browser's file exists: Ctrl-C at any moment removes it.
    const stopped = new Promise<void>((resolve) => {
      for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(sig, () => resolve());
    });
    const opened = argv.open ? await openInBrowser(server.url, ctx.io.env) : null;
    if (opened && !opened.opened) out.note('could not start a browser: open the URL above');
    try {
      await stopped;
    } finally {
      opened?.close();
      await server.close();
    }
  },
});
