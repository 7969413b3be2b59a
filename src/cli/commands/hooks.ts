// `agentsnap hooks install|uninstall|status`.
import path from 'node:path';
import { hooks } from '../../api/sync.js';
import type { HooksReport, InstallResult } from '../../install/git-hooks.js';
import type { CommandFactory } from '../context.js';
import { jsonOption } from '../context.js';
import type { Output } from '../output.js';

const STATE_TEXT: Record<string, string> = {
  current: 'installed, current',
  outdated: 'installed, outdated (run `agentsnap hooks install`)',
  missing: 'not installed',
  optional: 'not installed (only with `agentsnap hooks install --strict`)',
  foreign: "not installed (another program's hook is there)",
};

function printReport(out: Output, r: HooksReport): void {
  out.out(`hooks directory: ${r.dir}${r.hooksPath ? ` (core.hooksPath = ${r.hooksPath})` : ''}`);
  for (const h of r.hooks) {
    const key = h.state === 'missing' && h.strictOnly ? 'optional' : h.state;
    const state =
      h.state === 'current'
        ? out.color.green(STATE_TEXT[key])
        : h.state === 'missing' && h.strictOnly
          ? STATE_TEXT[key]
          : out.color.yellow(STATE_TEXT[key] ?? h.state);
    out.out(`  ${h.name.padEnd(22)} ${state}${h.chained ? `; chains ${h.chained}` : ''}`);
  }
  for (const f of r.retired)
    out.out(`  ${path.basename(f).padEnd(22)} ${out.color.yellow('left by an older agentsnap (`agentsnap hooks install` takes it out)')}`);
}

export const hooksCommand: CommandFactory = (ctx) => ({
  command: 'hooks <action> [commits..]',
  describe: 'Install, remove or inspect the git hooks that keep snapshots out of real history',
  builder: (y) =>
    y
      .positional('action', {
        choices: ['install', 'uninstall', 'status', 'note-commit'] as const,
        describe: 'what to do (note-commit: write the blame notes of commits now; gc writes them before it removes a session)',
      })
      .positional('commits', { type: 'string', array: true, describe: 'note-commit: the commits to note (default HEAD)' })
      .options({
        force: { type: 'boolean', default: false, describe: 'install: change hook files even when the hooks directory is checked in' },
        strict: {
          type: 'boolean',
          describe:
            'install: also reference-transaction, which refuses a branch or tag set to a snapshot (reset, fast-forward merge, branch -f) but slows a rebase several times; --no-strict takes it out',
        },
        ...jsonOption,
      })
      .example('$0 hooks install', 'install (chaining any hook already there)')
      .example('$0 hooks install --strict', 'also refuse a branch or tag set to a snapshot (a rebase gets slower)')
      .example('$0 hooks status --json', 'what is installed where'),
  handler: async (raw) => {
    const argv = raw as unknown as {
      action: 'install' | 'uninstall' | 'status' | 'note-commit';
      commits?: string[];
      force: boolean;
      strict?: boolean;
      json: boolean;
    };
    const out = ctx.output(argv);
    const res = await hooks(argv.action, {
      cwd: ctx.io.cwd,
      env: ctx.io.env,
      force: argv.force,
      strict: argv.strict,
      commits: argv.commits ?? [],
    });
    if (out.json) {
      out.printJson(res);
      return;
    }
    if ('note' in res) {
      const files = res.note ? Object.keys(res.note.files).length : 0;
      out.note(
        files
          ? `agentsnap: noted which session steps wrote the committed lines of ${files} ${files === 1 ? 'file' : 'files'} (refs/notes/agentsnap)`
          : 'agentsnap: no committed line came from a recorded step',
      );
      return;
    }
    if ('actions' in res) {
      for (const a of (res as InstallResult).actions) {
        if (a.action === 'unchanged' || a.action === 'absent') continue;
        const what =
          a.action === 'chained'
            ? `installed ${a.name}, chaining the hook that was there (kept as ${a.name}.agentsnap-orig)`
            : a.action === 'restored'
              ? `removed ${a.name} and restored the hook that was there before`
              : `${a.action} ${a.name}`;
        out.note(`agentsnap: ${what}`);
      }
    }
    printReport(out, res);
  },
});
