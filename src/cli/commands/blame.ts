// blame and why: which tool call last wrote each line, and the story of one line.
import { blame, why, type LineAuthor } from '../../api/blame.js';
import { errors } from '../../base/errors.js';
import type { CommandFactory } from '../context.js';
import { jsonOption, sessionOption, sessionSourceNote } from '../context.js';
import { printablePath } from '../output.js';
import { printableLine } from '../../base/printable.js';

/** A change outside the recorded calls: the user's own edit, named by the steps around it. */
function yourEdit(o: Extract<LineAuthor['origin'], { kind: 'between' }>): string {
  const where =
    o.after !== null && o.step !== null
      ? ` (between step ${o.after} and ${o.step})`
      : o.step !== null
        ? ` (before step ${o.step})`
        : o.after !== null
          ? ` (after step ${o.after})`
          : '';
  return `your edit${where}`;
}

/** Who wrote a line, in a few words (the blame column). */
function label(a: LineAuthor): string {
  const o = a.origin;
  if (o.kind === 'step') return `step ${a.step} ${printablePath(a.tool ?? 'checkpoint')}`;
  if (o.kind === 'between') return yourEdit(o);
  if (o.kind === 'before-session') return 'before the session';
  if (o.kind === 'operation') return printableLine(o.subject.replace(/^agentsnap:\s*/, ''));
  if (o.kind === 'committed') return `step ${o.step} ${printablePath(a.tool ?? '')} of ${printablePath(o.session)}`.replace('  ', ' ');
  return 'not recorded yet';
}

function hhmm(iso: string | null): string {
  if (!iso) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? '' : d.toTimeString().slice(0, 5);
}

const oneLine = (s: string, max: number) => {
  const t = printablePath(s.replace(/\s+/g, ' ').trim());
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
};

export const blameCommand: CommandFactory = (ctx) => ({
  command: 'blame <file>',
  describe: 'Each line of a file with the tool call that last wrote it (shell commands included)',
  builder: (y) =>
    y
      .positional('file', { type: 'string', describe: 'a file of the worktree' })
      .options({ ...sessionOption, ...jsonOption })
      .example('$0 blame src/app.ts', 'which step wrote each line')
      .example('$0 why src/app.ts:12', 'the story of line 12'),
  handler: async (raw) => {
    const argv = raw as unknown as { file: string; session?: string; json: boolean };
    const out = ctx.output(argv);
    const res = await blame({ cwd: ctx.io.cwd, env: ctx.io.env, session: argv.session, path: String(argv.file) });
    if (out.json) {
      out.printJson({
        session: res.session.id,
        path: res.path,
        lines: res.lines.map((l) => ({ line: l.line, text: l.text, commit: l.commit, ...l.author })),
      });
      return;
    }
    out.note(sessionSourceNote(res.session, res.source));
    const labels = res.lines.map((l) => label(l.author));
    const width = Math.min(40, Math.max(0, ...labels.map((s) => s.length)));
    const numWidth = String(res.lines.length).length;
    const c = out.color;
    // The user's request that led to the call, cut short: a column only when some line has one.
    const prompts = res.lines.map((l) => (l.author.prompt ? oneLine(l.author.prompt, 28) : ''));
    const promptWidth = Math.max(0, ...prompts.map((p) => p.length));
    const rows = res.lines.map((l, i) => {
      const who = (labels[i] as string).padEnd(width).slice(0, width);
      const shown = l.author.origin.kind === 'step' ? c.cyan(who) : c.dim(who);
      const prompt = promptWidth ? ` ${c.dim((prompts[i] as string).padEnd(promptWidth))}` : '';
      return `${shown} ${hhmm(l.author.time).padEnd(5)}${prompt} ${String(l.line).padStart(numWidth)}) ${printableLine(l.text)}`;
    });
    ctx.io.stdout.write(rows.length ? `${rows.join('\n')}\n` : '');
    if (rows.length === 0) out.note(`${printablePath(res.path)} is empty`);
  },
});

export const whyCommand: CommandFactory = (ctx) => ({
  command: 'why <place>',
  describe: 'The story of one line: the tool call that wrote it, its input, and what was said around it',
  builder: (y) =>
    y
      .positional('place', { type: 'string', describe: '<file>:<line>' })
      .options({ ...sessionOption, ...jsonOption })
      .example('$0 why src/app.ts:12', 'who wrote line 12 of src/app.ts, and why'),
  handler: async (raw) => {
    const argv = raw as unknown as { place: string; session?: string; json: boolean };
    const out = ctx.output(argv);
    const m = /^(.+):(\d+)$/.exec(String(argv.place));
    if (!m)
      throw errors.invalidArgument(`${JSON.stringify(String(argv.place))} is not <file>:<line>.`, {
        hint: 'For example: agentsnap why src/app.ts:12',
      });
    const res = await why({ cwd: ctx.io.cwd, env: ctx.io.env, session: argv.session, path: m[1] as string, line: Number(m[2]) });
    const a = res.line.author;
    if (out.json) {
      out.printJson({
        session: res.session.id,
        path: res.path,
        line: res.line.line,
        text: res.line.text,
        commit: res.line.commit,
        ...a,
        status: res.status,
        input: res.input,
        message: res.message,
        assistant: res.assistant,
        checks: res.checks,
      });
      return;
    }
    out.note(sessionSourceNote(res.session, res.source));
    out.out(`${printablePath(res.path)}:${res.line.line}  ${printableLine(res.line.text)}`);
    const o = a.origin;
    if (o.kind === 'step')
      out.out(
        `written by step ${a.step} (${printablePath(a.tool ?? 'checkpoint')}, ${res.status}) at ${a.time}${a.what ? `: ${oneLine(a.what, 200)}` : ''}`,
      );
    else if (o.kind === 'between')
      out.out(
        `${yourEdit(o)}${a.time ? `, by ${hhmm(a.time)}` : ''}: not by a recorded tool call (you, or a process outside the agent's calls)`,
      );
    else if (o.kind === 'before-session') out.out('written before the session started');
    else if (o.kind === 'operation') out.out(`put back by ${printableLine(o.subject.replace(/^agentsnap:\s*/, ''))}`);
    else if (o.kind === 'committed')
      out.out(
        `written by step ${o.step}${a.tool ? ` (${printablePath(a.tool)})` : ''} of session ${printablePath(o.session)}, committed in ${o.commit.slice(0, 12)} (its agentsnap note)`,
      );
    else out.out('in the worktree, not recorded by any snapshot yet');
    if (a.prompt) out.out(`the user had asked: ${oneLine(a.prompt, 400)}`);
    if (res.assistant) out.out(`the assistant said before the call: ${oneLine(res.assistant, 400)}`);
    if (res.message) out.out(`note: ${oneLine(res.message, 400)}`);
    if (res.input !== null && res.input !== undefined) out.out(`input: ${oneLine(JSON.stringify(res.input), 400)}`);
    const verdict = (r: { verdict: string; command: string } | null) =>
      r ? `${r.verdict === 'pass' ? '✓' : r.verdict === 'fail' ? '✗' : '~'} ${oneLine(r.command, 60)}` : 'not checked';
    if (res.checks.before || res.checks.after)
      out.out(`checks: before the step ${verdict(res.checks.before)}; after it ${verdict(res.checks.after)}`);
  },
});
