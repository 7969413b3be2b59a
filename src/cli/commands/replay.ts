import { replay, replayMarkdown } from '../../api/replay.js';
import type { CommandFactory } from '../context.js';
import { sessionOption, sessionSourceNote } from '../context.js';

export const replayCommand: CommandFactory = (ctx) => ({
  command: 'replay',
  describe: 'The session in order: prompts, assistant messages and every tool call with its input, output and changed files',
  builder: (y) =>
    y
      .options({
        ...sessionOption,
        until: { type: 'number', describe: 'stop after step N' },
        format: {
          choices: ['md', 'jsonl'] as const,
          default: 'md' as const,
          describe: 'Markdown for reading, or one JSON object per line',
        },
      })
      .example('$0 replay --until 4 > context.md', 'what happened up to step 4, to hand to an agent'),
  handler: async (raw) => {
    const argv = raw as unknown as { session?: string; until?: number; format: 'md' | 'jsonl' };
    const out = ctx.output({});
    const res = await replay({ cwd: ctx.io.cwd, env: ctx.io.env, session: argv.session, until: argv.until });
    if (argv.format === 'jsonl') {
      ctx.io.stdout.write(res.entries.map((e) => `${JSON.stringify(e)}\n`).join(''));
      return;
    }
    out.note(sessionSourceNote(res.session.id, res.source));
    ctx.io.stdout.write(replayMarkdown(res.entries));
  },
});
