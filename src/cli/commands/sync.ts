// `agentsnap remote add|remove`, `agentsnap push <remote>`, `agentsnap fetch <remote>`.
import { fetch, push, remoteAdd, remoteRemove } from '../../api/sync.js';
import type { CommandFactory } from '../context.js';
import { jsonOption } from '../context.js';
import { printableLine, printableName } from '../../base/printable.js';

export const remoteCommand: CommandFactory = (ctx) => ({
  command: 'remote <action> <name> [url]',
  describe: "Designate a git remote as agentsnap's backup remote (or stop)",
  builder: (y) =>
    y
      .positional('action', {
        choices: ['add', 'remove'] as const,
        describe: 'add: designate (creating the remote when a URL is given); remove: stop designating',
      })
      .positional('name', { type: 'string', describe: 'remote name' })
      .positional('url', { type: 'string', describe: 'URL, to create the remote' })
      .options({ ...jsonOption })
      .example('$0 remote add snaps git@host:me/snaps.git', 'a private remote for snapshots and journals'),
  handler: async (raw) => {
    const argv = raw as unknown as { action: 'add' | 'remove'; name: string; url?: string; json: boolean };
    const out = ctx.output(argv);
    const io = { cwd: ctx.io.cwd, env: ctx.io.env };
    if (argv.action === 'add') {
      const res = await remoteAdd(argv.name, argv.url, io);
      if (out.json) return out.printJson(res);
      if (res.created) out.note(`agentsnap: added remote ${res.remote} (${res.url})`);
      out.out(
        `${res.remote} ${res.alreadyBackup ? 'is already' : 'is now'} agentsnap's backup remote: \`agentsnap push ${res.remote}\` sends snapshots and journals (tool inputs and outputs included) there`,
      );
    } else {
      const res = await remoteRemove(argv.name, io);
      if (out.json) return out.printJson(res);
      out.out(
        res.wasBackup
          ? `${res.remote} is no longer an agentsnap backup remote (the git remote itself is kept)`
          : `${res.remote} was not an agentsnap backup remote`,
      );
    }
  },
});

export const pushCommand: CommandFactory = (ctx) => ({
  command: 'push <remote>',
  describe: 'Send snapshots (refs/agent/*) and session journals to a backup remote',
  builder: (y) =>
    y.positional('remote', { type: 'string', describe: 'a backup remote (see `agentsnap remote add`)' }).options({ ...jsonOption }),
  handler: async (raw) => {
    const argv = raw as unknown as { remote: string; json: boolean };
    const out = ctx.output(argv);
    const res = await push(argv.remote, { cwd: ctx.io.cwd, env: ctx.io.env });
    if (out.json) return out.printJson(res);
    out.out(
      res.pushed.length === 0
        ? `${res.remote} is up to date`
        : `pushed ${res.pushed.length} ref(s) to ${res.remote}${res.journalsUpdated.length ? ` (journals of ${res.journalsUpdated.length} session(s) updated)` : ''}`,
    );
  },
});

export const fetchCommand: CommandFactory = (ctx) => ({
  command: 'fetch <remote>',
  describe: 'Fetch sessions recorded elsewhere from a backup remote',
  builder: (y) =>
    y.positional('remote', { type: 'string', describe: 'a backup remote (see `agentsnap remote add`)' }).options({ ...jsonOption }),
  handler: async (raw) => {
    const argv = raw as unknown as { remote: string; json: boolean };
    const out = ctx.output(argv);
    const res = await fetch(argv.remote, { cwd: ctx.io.cwd, env: ctx.io.env });
    if (out.json) return out.printJson(res);
    if (res.sessions.length === 0) {
      out.out(`no sessions on ${res.remote}`);
      return;
    }
    for (const s of res.sessions) {
      // Session names and notes come from the remote: escaped like any recorded text.
      const line = `${printableName(s.session)}  ${s.action}${s.events ? `  ${s.events} events` : ''}${s.note ? `  (${printableLine(s.note)})` : ''}`;
      if (s.action === 'diverged' || s.action === 'incomplete' || s.action === 'invalid') out.err(`agentsnap: ${line}`);
      else out.out(line);
    }
  },
});
