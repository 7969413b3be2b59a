// The read-only commands: sessions, log, show, diff.
import { diff, log, sessions, show } from '../../api.js';
import { errors } from '../../base/errors.js';
import type { Step } from '../../session/model.js';
import { outsideEffect } from '../../session/effects.js';
import type { CommandFactory } from '../context.js';
import { jsonOption, sessionOption, sessionSourceNote } from '../context.js';
import { countChanges, describeSkipped, formatSize, printablePath, type Output } from '../output.js';

function when(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const pad = (n: number) => String(n).padStart(2, '0');
  const time = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  const today = new Date();
  if (d.toDateString() === today.toDateString()) return time;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${time}`;
}

function statusColor(out: Output, status: string): string {
  const c = out.color;
  switch (status) {
    case 'done':
    case 'running':
      return c.green(status);
    case 'failed':
    case 'unprotected':
      return c.red(status);
    case 'open':
    case 'interrupted':
      return c.yellow(status);
    default:
      return c.dim(status);
  }
}

export const sessionsCommand: CommandFactory = (ctx) => ({
  command: 'sessions',
  describe: 'List the sessions of this repository',
  builder: (y) => y.options({ ...jsonOption }).example('$0 sessions --json', 'every session as JSON'),
  handler: async (raw) => {
    const argv = raw as unknown as { json: boolean };
    const out = ctx.output(argv);
    const list = await sessions({ cwd: ctx.io.cwd, env: ctx.io.env });
    if (out.json) {
      out.printJson(list);
      return;
    }
    if (list.length === 0) {
      out.note('no sessions yet: start one with `agentsnap wrap -- <agent>` or `agentsnap snap`');
      return;
    }
    for (const s of list) {
      const steps = s.steps === 1 ? '1 step' : `${s.steps} steps`;
      const files = s.filesChanged === 1 ? '1 file changed' : `${s.filesChanged} files changed`;
      const agent = s.agent ? `  ${s.agent}` : '';
      const name = s.name ? ` (${s.name})` : '';
      const where =
        s.worktreeKind === 'main' ? 'main worktree' : `${s.worktree}${s.worktreeExists ? '' : out.color.dim(' (removed)')}`;
      const disk = formatSize((s.diskUse.worktree ?? 0) + s.diskUse.state);
      out.out(`${out.color.bold(s.id)}${name}  ${statusColor(out, s.status)}  ${steps}  ${files}  ${disk}  ${when(s.createdAt)}  ${where}${agent}`);
    }
  },
});

function stepJson(st: Step) {
  return {
    step: st.step,
    kind: st.kind,
    tool: st.tool,
    status: st.status,
    pre: st.pre,
    post: st.post,
    startedAt: st.startedAt,
    endedAt: st.endedAt,
    durationMs: st.durationMs,
    toolUseId: st.toolUseId,
    message: st.message ?? null,
    changed: st.changed,
    changedBefore: st.changedBefore,
    skipped: st.skipped,
    overlaps: st.overlaps,
    input: st.input ?? null,
    output: st.output ?? null,
    error: st.error ?? null,
    unprotectedReason: st.unprotectedReason,
    ...(st.source ? { source: st.source } : {}),
    ...(st.kind === 'checkpoint' ? { madeBy: st.madeBy ?? 'user' } : {}),
  };
}

export const logCommand: CommandFactory = (ctx) => ({
  command: 'log',
  describe: 'List the steps of a session with the files each changed',
  builder: (y) =>
    y
      .options({
        ...sessionOption,
        tool: { type: 'string', describe: 'only steps of this tool' },
        last: { type: 'number', describe: 'only the last N steps' },
        ...jsonOption,
      })
      .example('$0 log --last 5', 'the five most recent steps')
      .example('$0 log -- src/app.ts', 'only steps that changed src/app.ts'),
  handler: async (raw) => {
    const argv = raw as unknown as { session?: string; tool?: string; last?: number; json: boolean; '--'?: string[]; _: (string | number)[] };
    const out = ctx.output(argv);
    const paths = [...(argv['--'] ?? []).map(String)];
    const res = await log({ cwd: ctx.io.cwd, env: ctx.io.env, session: argv.session, tool: argv.tool, last: argv.last, paths });
    if (out.json) {
      out.printJson(res.steps.map(stepJson));
      return;
    }
    out.note(sessionSourceNote(res.session.id, res.source));
    if (res.steps.length === 0) {
      out.note(res.session.steps.length === 0 ? 'no steps yet' : 'no step matches');
      return;
    }
    const c = out.color;
    for (const st of res.steps) {
      const n = countChanges(st.changed);
      const files = n.files === 1 ? '1 file' : `${n.files} files`;
      const tool = st.tool ?? (st.kind === 'checkpoint' ? 'checkpoint' : '-');
      const marks: string[] = [];
      if (st.overlaps.length > 0) marks.push(c.yellow(`overlaps ${st.overlaps.join(',')}`));
      if (st.changedBefore.length > 0 && st.step > 1) marks.push(c.yellow(`${st.changedBefore.length} changed outside tool calls before it`));
      if (st.message) marks.push(JSON.stringify(st.message));
      // What a checkpoint of the user's recorded is theirs: undo, redo, restore and revert take it back only with --force.
      if (st.kind === 'checkpoint' && st.madeBy !== 'agent' && st.changed.length > 0) marks.push(c.yellow('changed outside tool calls (undo needs --force)'));
      if (st.source === 'transcript') marks.push(c.dim('not hooked (read-only), from the transcript'));
      const effect = outsideEffect(st, res.session.worktree);
      if (effect) marks.push(c.red(`not undoable: ${effect}`));
      out.out(
        `${c.bold(String(st.step).padStart(4))}  ${tool.padEnd(12)} ${statusColor(out, st.status.padEnd(11))} ${when(st.startedAt)}  ${files} ${c.green(`+${n.added}`)} ${c.red(`-${n.deleted}`)}${marks.length ? `  ${marks.join('  ')}` : ''}`,
      );
      for (const ch of st.changed) {
        const counts = ch.added === null ? 'binary' : `${c.green(`+${ch.added}`)} ${c.red(`-${ch.deleted ?? 0}`)}`;
        out.out(`        ${ch.change} ${printablePath(ch.path)}  ${counts}`);
      }
      if (st.skipped.length > 0) out.out(c.dim(`        not snapshotted: ${st.skipped.map(describeSkipped).join(', ')}`));
      if (st.unprotectedReason) out.out(c.red(`        unprotected: ${st.unprotectedReason}`));
    }
  },
});

export const showCommand: CommandFactory = (ctx) => ({
  command: 'show <step>',
  describe: 'Show what step N changed, as a diff',
  builder: (y) =>
    y
      .positional('step', { type: 'string', describe: 'step number' })
      .options({ ...sessionOption, stat: { type: 'boolean', default: false, describe: 'a diffstat instead of the patch' }, ...jsonOption })
      .example('$0 show 3', 'the diff of tool call 3'),
  handler: async (raw) => {
    const argv = raw as unknown as { step: string; session?: string; stat: boolean; json: boolean };
    const out = ctx.output(argv);
    if (!/^\d+$/.test(String(argv.step))) {
      throw errors.invalidArgument(`${JSON.stringify(String(argv.step))} is not a step number.`, { hint: 'See `agentsnap log` for the steps of the session.' });
    }
    const res = await show({ cwd: ctx.io.cwd, env: ctx.io.env, session: argv.session, step: Number(argv.step), color: out.stdoutColor, stat: argv.stat });
    if (out.json) {
      out.printJson({ ...stepJson(res.step), session: res.session.id, diff: res.diff });
      return;
    }
    out.note(sessionSourceNote(res.session.id, res.source));
    const st = res.step;
    out.out(out.color.bold(`step ${st.step}  ${st.tool ?? st.kind}  ${st.status}  ${st.pre?.slice(0, 10) ?? '-'}..${st.post?.slice(0, 10) ?? '-'}`));
    if (res.diff) ctx.io.stdout.write(res.diff);
    else out.note('no changes');
  },
});

export const diffCommand: CommandFactory = (ctx) => ({
  command: 'diff <from> [to]',
  describe: 'Diff two states of a session (N = after step N, N:pre = before it), or a state and the worktree',
  builder: (y) =>
    y
      .positional('from', { type: 'string', describe: 'a state: N (after step N), N:pre (before it), 0 (the baseline)' })
      .positional('to', { type: 'string', describe: 'another state (default: the worktree as it is now)' })
      .options({ ...sessionOption, stat: { type: 'boolean', default: false, describe: 'a diffstat instead of the patch' }, ...jsonOption })
      .example('$0 diff 2 5', 'what steps 3 to 5 changed')
      .example('$0 diff 0', 'everything since the session started, up to the worktree now'),
  handler: async (raw) => {
    const argv = raw as unknown as { from: string | number; to?: string | number; session?: string; stat: boolean; json: boolean; '--'?: string[] };
    const out = ctx.output(argv);
    const res = await diff({
      cwd: ctx.io.cwd,
      env: ctx.io.env,
      session: argv.session,
      from: String(argv.from),
      to: argv.to === undefined ? undefined : String(argv.to),
      color: out.stdoutColor,
      stat: argv.stat,
      paths: (argv['--'] ?? []).map(String),
    });
    if (out.json) {
      out.printJson({ session: res.session.id, from: res.from, to: res.to, diff: res.diff });
      return;
    }
    out.note(sessionSourceNote(res.session.id, res.source));
    if (res.diff) ctx.io.stdout.write(res.diff);
    else out.note('no differences');
  },
});
