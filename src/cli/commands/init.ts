import { init, INIT_AGENTS } from '../../install/init.js';
import type { CommandFactory } from '../context.js';

export const initCommand: CommandFactory = (ctx) => ({
  command: 'init <agent>',
  describe: "Record every tool call without the wrapper: hooks in the agent's personal, uncommitted project settings",
  builder: (y) =>
    y
      .positional('agent', { choices: [...INIT_AGENTS], describe: 'the agent to configure' })
      .options({
        remove: { type: 'boolean', default: false, describe: "take agentsnap's hooks (and its MCP server, if declared) out again" },
        mcp: {
          type: 'boolean',
          default: false,
          describe:
            "also declare agentsnap's MCP server (`agentsnap mcp`: the agent lists and undoes its own steps) in the agent's project MCP configuration",
        },
      })
      .example('$0 init claude', 'hooks in .claude/settings.local.json and the /agentsnap-undo command')
      .example('$0 init codex', 'hooks in .codex/hooks.json')
      .example('$0 init gemini', 'hooks in .gemini/settings.json (refused when that file is committed)')
      .example('$0 init claude --mcp', 'also the MCP server, in .mcp.json')
      .example('$0 init --remove claude', 'remove them'),
  handler: async (raw) => {
    const argv = raw as unknown as { agent: string; remove: boolean; mcp: boolean };
    const out = ctx.output({});
    const res = await init({ cwd: ctx.io.cwd, env: ctx.io.env, agent: argv.agent, remove: argv.remove, mcp: argv.mcp });
    if (!res.changed) out.note(`agentsnap: ${res.file} already ${res.removed ? 'has no agentsnap hooks' : 'has the agentsnap hooks'}`);
    else out.note(`agentsnap: ${res.removed ? 'removed the hooks from' : 'wrote the hooks into'} ${res.file}`);
    if (res.excluded) out.note('agentsnap: added it to .git/info/exclude so it is never committed');
    for (const x of res.extra) {
      if (x.note) out.note(`agentsnap: ${x.note}`);
      else if (x.changed)
        out.note(
          `agentsnap: ${res.removed ? 'removed' : 'wrote'} ${x.file}${res.removed ? '' : ' (/agentsnap-undo in Claude Code; kept out of commits)'}`,
        );
    }
    if (res.absolute) {
      const npx = /[\\/]_npx[\\/]/.test(res.absolute.hook) ? ', in an npx cache that npm may clean' : '';
      out.note(
        `agentsnap: agentsnap-hook is not on PATH, so the hooks run this install by its path (${res.absolute.hook}${npx}); once a global install puts agentsnap-hook on PATH (\`npm install -g\`: see "Install" in the README), run \`agentsnap init ${res.agent}\` again for hooks that follow upgrades`,
      );
    }
    if (res.mcp?.changed) {
      out.note(
        `agentsnap: ${res.removed ? 'removed the MCP server agentsnap from' : 'declared the MCP server agentsnap in'} ${res.mcp.file}`,
      );
      if (res.mcp.excluded) out.note('agentsnap: added it to .git/info/exclude so it is never committed');
    } else if (res.mcp && !res.removed) out.note(`agentsnap: ${res.mcp.file} already declares the MCP server agentsnap`);
    if (res.logAlias === 'set')
      out.note("agentsnap: `git log-all` is `git log --all` without agentsnap's snapshots (alias.log-all in .git/config)");
    if (res.logAlias === 'foreign')
      out.note(
        "agentsnap: alias.log-all is already yours, left as it is; `git log --exclude='refs/agent*' --exclude=refs/notes/agentsnap --all` is `git log --all` without agentsnap's snapshots",
      );
    if (res.logAlias === 'removed') out.note('agentsnap: removed alias.log-all (`git log-all`) from .git/config');
    if (res.note) out.note(`agentsnap: ${res.note}`);
    if (res.mcp?.note && !res.removed) out.note(`agentsnap: ${res.mcp.note}`);
  },
});
