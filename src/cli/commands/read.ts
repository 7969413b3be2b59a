// The read-only commands: sessions, log, show, diff.
import { diff, log, logAllSessions, sessions, show, type LogEntry, type LogRow } from '../../api/api.js';
import { errors } from '../../base/errors.js';
import type { Step } from '../../session/model.js';
import { outsideEffect } from '../../session/effects.js';
import type { CliContext, CommandFactory } from '../context.js';
import { jsonOption, sessionOption, sessionSourceNote, stepArgument } from '../context.js';
import { planLines } from '../../session/plan.js';
import { countChanges, describeSkipped, formatSize, printableDiff, printablePath, processLine, type Output } from '../output.js';
import { printableLine, printableName } from '../../base/printable.js';
import { sessionName } from '../../session/selection.js';

function when(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const pad = (n: number) => String(n).padStart(2, '0');
  const time = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  const today = new Date();
  if (d.toDateString() === today.toDateString()) return time;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${time}`;
}

/** `YYYY-MM-DD HH:MM` in local time, whatever the day. */
function dateAndTime(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
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
    // A header and aligned columns (sizes under their label: the disk the session's state and worktree take).
    const c = out.color;
    const header = {
      id: 'SESSION',
      name: 'NAME',
      status: 'STATUS',
      steps: 'STEPS',
      files: 'FILES CHANGED',
      disk: 'DISK USE',
      started: 'STARTED',
      agent: 'AGENT',
      where: 'WORKTREE',
    };
    const rows = list.map((s) => ({
      id: cell(s.id, c.bold(s.id)),
      name: cell(s.name ? printablePath(s.name) : '-'),
      status: cell(s.status, statusColor(out, s.status)),
      steps: cell(String(s.steps)),
      files: cell(String(s.filesChanged)),
      disk: cell(formatSize((s.diskUse.worktree ?? 0) + s.diskUse.state)),
      // With its date, today's too: sessions are told apart across days.
      started: cell(dateAndTime(s.createdAt)),
      agent: cell(printablePath(s.agent ?? '-')),
      where: cell(
        s.worktreeKind === 'main' ? 'main worktree' : `${printablePath(s.worktree)}${s.worktreeExists ? '' : ' (removed)'}`,
        s.worktreeKind === 'main' ? 'main worktree' : `${printablePath(s.worktree)}${s.worktreeExists ? '' : c.dim(' (removed)')}`,
      ),
    }));
    const keys = Object.keys(header) as (keyof typeof header)[];
    const right = new Set<keyof typeof header>(['steps', 'files', 'disk']);
    const columns = Object.fromEntries(
      keys.map((k) => [k, padColumn([cell(header[k], c.dim(header[k])), ...rows.map((r) => r[k])], right.has(k) ? 'right' : 'left')]),
    ) as Record<keyof typeof header, string[]>;
    for (let i = 0; i <= rows.length; i++)
      out.out(
        keys
          .map((k) => columns[k][i])
          .join('  ')
          .trimEnd(),
      );
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
    ...(st.cwd ? { cwd: st.cwd } : {}),
    ...(st.envChanged ? { envChanged: st.envChanged } : {}),
    ...(st.tools ? { tools: st.tools } : {}),
    agentVersion: st.agentVersion ?? null,
    model: st.model ?? null,
    ...(st.kind === 'checkpoint' ? { madeBy: st.madeBy ?? 'user' } : {}),
  };
}

/** A table cell: the text as it is measured, and as it is printed (coloured). */
interface Cell {
  plain: string;
  shown: string;
}

const cell = (plain: string, shown = plain): Cell => ({ plain, shown });

/** Cells of one column padded to its widest (right-aligned for numbers); escape codes do not count. */
function padColumn(cells: Cell[], align: 'left' | 'right' = 'left'): string[] {
  const width = Math.max(0, ...cells.map((c) => c.plain.length));
  return cells.map((c) =>
    align === 'right' ? ' '.repeat(width - c.plain.length) + c.shown : c.shown + ' '.repeat(width - c.plain.length),
  );
}

/** `text` cut to `max` characters, the cut marked with an ellipsis. */
function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, Math.max(0, max - 1))}…`;
}

/** The width rows are cut to: the terminal's, else $COLUMNS, else 120 (piped output stays readable in a pager). */
function rowWidth(out: { columns?: number }, env: NodeJS.ProcessEnv): number {
  if (typeof out.columns === 'number' && out.columns > 0) return out.columns;
  const n = Number(env.COLUMNS);
  return Number.isInteger(n) && n > 0 ? n : 120;
}

/** The options of `log`, as yargs parsed them. */
interface LogArgs {
  session?: string;
  tool?: string;
  last?: number;
  grep?: string;
  'all-sessions': boolean;
  json: boolean;
  '--'?: string[];
  _: (string | number)[];
}

export const logCommand: CommandFactory = (ctx) => ({
  command: 'log',
  describe: 'List the steps of a session: what each call was (command, file, MCP argument) and the files it changed',
  builder: (y) =>
    y
      .options({
        ...sessionOption,
        tool: { type: 'string', describe: 'only steps of this tool' },
        last: { type: 'number', describe: 'only the last N steps' },
        grep: { type: 'string', describe: 'only steps whose input or output holds this text (plain text, any case)' },
        'all-sessions': {
          type: 'boolean',
          default: false,
          describe: 'the steps of every session of the repository, in time order, each row with its session',
        },
        ...jsonOption,
      })
      .example('$0 log --last 5', 'the five most recent steps')
      .example('$0 log -- src/app.ts', 'only steps that changed src/app.ts')
      .example("$0 log --all-sessions --grep 'rm -rf'", 'which step of any session ran rm -rf')
      .example('$0 log --all-sessions --last 1 -- src/app.ts', 'the last step, in any session, that changed src/app.ts'),
  handler: async (raw) => {
    const argv = raw as unknown as LogArgs;
    const out = ctx.output(argv);
    const all = argv['all-sessions'];
    const { rows, timeline, empty } = await readLog(ctx, argv, out);
    if (out.json) {
      out.printJson(logJson(timeline, all));
      return;
    }
    if (rows.length === 0 && timeline.length === 0) {
      out.note(empty);
      return;
    }
    printLogTimeline(out, { rows, timeline, all, width: rowWidth(ctx.io.stdout as { columns?: number }, ctx.io.env) });
  },
});

/** The log's filters (--tool, --last, --grep, the paths after `--`), refused where they contradict each other. */
function logFilters(argv: LogArgs): { tool?: string; last?: number; paths: string[]; grep?: string } {
  const paths = [...(argv['--'] ?? []).map(String)];
  if (argv['all-sessions'] && argv.session !== undefined)
    throw errors.invalidArgument('--all-sessions and --session name different sessions: give one of them.');
  if (argv.grep !== undefined && argv.grep === '') throw errors.invalidArgument('--grep needs a text to look for.');
  return { tool: argv.tool, last: argv.last, paths, grep: argv.grep };
}

/** The rows the log shows (one session's with its operations, or every session's in time order), and what it says where there are none. */
async function readLog(ctx: CliContext, argv: LogArgs, out: Output): Promise<{ rows: LogRow[]; timeline: LogEntry[]; empty: string }> {
  const common = { cwd: ctx.io.cwd, env: ctx.io.env, ...logFilters(argv) };
  if (argv['all-sessions']) {
    const res = await logAllSessions(common);
    return {
      rows: res.rows,
      timeline: res.rows.map((row) => ({ row })),
      empty: res.sessions === 0 ? 'no sessions yet' : 'no step matches',
    };
  }
  const res = await log({ ...common, session: argv.session });
  if (!out.json) out.note(sessionSourceNote(res.session, res.source));
  return { rows: res.rows, timeline: res.timeline, empty: res.session.steps.length === 0 ? 'no steps yet' : 'no step matches' };
}

/** `log --json`: steps as before (with `undone` added), operations as entries of kind "operation" among them. */
function logJson(timeline: LogEntry[], all: boolean): unknown[] {
  return timeline.map(({ row: r, op }) =>
    r
      ? {
          ...(all ? { session: r.session.id } : {}),
          ...stepJson(r.step),
          what: r.what,
          plan: r.plan,
          check: r.check,
          ...(r.lost ? { lost: true } : {}),
          ...(r.undone ? { undone: true } : {}),
          depsChanged: r.depsChanged,
        }
      : {
          kind: 'operation',
          id: op.id,
          operation: op.kind,
          time: op.time,
          what: op.what,
          status: op.status,
          undoneBy: op.undoneBy,
          files: op.files,
          changedBefore: op.edits,
          ...(op.target ? { target: op.target } : {}),
        },
  );
}

/** The log's columns, one cell per row each: every column as wide as its widest cell, whatever the tool names, statuses and dates, so the rows line up. */
function logColumns(out: Output, rows: LogRow[], all: boolean) {
  const c = out.color;
  const statusOf = (r: LogRow) => (r.undone && r.step.status === 'done' ? 'undone' : r.step.status);
  return {
    // The id, and the name it goes by, cut: a long first prompt must not push the steps off the screen.
    session: all
      ? padColumn(
          rows.map((r) => {
            const name = sessionName(r.session);
            return cell(name ? `${r.session.id} ${cut(printableName(name), 24)}` : r.session.id);
          }),
        )
      : null,
    step: padColumn(
      rows.map((r) => cell(String(r.step.step), c.bold(String(r.step.step)))),
      'right',
    ),
    // A tool name is the agent's text: escaped, and cut so that one odd name does not push every row off the screen.
    tool: padColumn(rows.map(({ step: st }) => cell(cut(printablePath(st.tool ?? (st.kind === 'checkpoint' ? 'checkpoint' : '-')), 40)))),
    status: padColumn(rows.map((r) => cell(statusOf(r), statusColor(out, statusOf(r))))),
    time: padColumn(rows.map(({ step: st }) => cell(when(st.startedAt)))),
    // ✓/✗ of the newest check of each step's state (`agentsnap check`), when any step has one.
    check: rows.some((r) => r.check)
      ? padColumn(
          rows.map(({ check }) =>
            !check
              ? cell(' ')
              : check.verdict === 'pass'
                ? cell('✓', c.green('✓'))
                : check.verdict === 'fail'
                  ? cell('✗', c.red('✗'))
                  : cell('~', c.yellow('~')),
          ),
        )
      : null,
    change: padColumn(
      rows.map(({ step: st }) => {
        const n = countChanges(st.changed);
        const files = n.files === 1 ? '1 file' : `${n.files} files`;
        return cell(`${files} +${n.added} -${n.deleted}`, `${files} ${c.green(`+${n.added}`)} ${c.red(`-${n.deleted}`)}`);
      }),
    ),
  };
}

/** The log as text: each step a row of columns (its changed files below it), each operation a row among them, in order. */
function printLogTimeline(out: Output, log: { rows: LogRow[]; timeline: LogEntry[]; all: boolean; width: number }): void {
  const cols = logColumns(out, log.rows, log.all);
  const rowIndex = new Map(log.rows.map((r, i) => [r, i]));
  const opWidth = Math.max(
    0,
    ...log.rows.map((r) => visibleLength(`${cols.session ? cols.session[rowIndex.get(r)!] : ''}  ${cols.step[rowIndex.get(r)!]}`)),
  );
  for (const { row, op } of log.timeline) {
    if (op) printOperationRow(out, op, opWidth);
    else {
      const i = rowIndex.get(row)!;
      const head = `${cols.session ? cols.session[i] : ''}  ${cols.step[i]}  ${cols.tool[i]}  ${cols.status[i]}${cols.check ? ` ${cols.check[i]}` : ''}  ${cols.time[i]}  ${cols.change[i]}`;
      printStepRow(out, row, head, log.width);
    }
  }
}

/** The line before a step or operation that lists the user's edits made before it. */
function printEditsBefore(out: Output, changed: { path: string; change: string }[], before: string): void {
  out.out(
    out.color.yellow(`        your edits before ${before}: ${changed.map((ch) => `${ch.change} ${printablePath(ch.path)}`).join(', ')}`),
  );
}

/** An operation's row: its id where a step has its number, its kind where a step has its tool. */
function printOperationRow(out: Output, op: NonNullable<LogEntry['op']>, opWidth: number): void {
  const c = out.color;
  if (op.edits.length > 0) printEditsBefore(out, op.edits, `operation ${op.id}`);
  const state = op.status !== 'done' ? c.yellow(op.status) : op.undoneBy !== null ? c.dim(`undone by op ${op.undoneBy}`) : c.green('done');
  const files = op.files === 1 ? '1 file' : `${op.files} files`;
  out.out(
    `${`  op ${op.id}`.padStart(opWidth)}  ${c.magenta(op.kind)}  ${state}  ${when(op.time)}  ${files}  ${c.cyan(printableLine(op.what))}`,
  );
}

/** A step's row (its columns, what the call was, its marks), its changed files, and what it did not snapshot or protect. */
function printStepRow(out: Output, row: LogRow, head: string, width: number): void {
  const c = out.color;
  const { step: st, what } = row;
  if (st.changedBefore.length > 0 && st.step > 1) printEditsBefore(out, st.changedBefore, `step ${st.step}`);
  const marks = stepMarks(out, row);
  const used = visibleLength(head) + (marks.length ? 2 + marks.map((m) => m.plain).join('  ').length : 0);
  // What the call was, cut so the row fits the terminal (never cut below a readable minimum).
  const desc = what === null ? '' : `  ${c.cyan(cut(what, Math.max(24, width - used - 2)))}`;
  out.out(`${head}${desc}${marks.length ? `  ${marks.map((m) => m.shown).join('  ')}` : ''}`.trimEnd());
  // An environment directory (an npm install: thousands of files) is one line, so the code's changes stay in view.
  const collapsed = new Map<string, { files: number; added: number; deleted: number }>();
  for (const ch of st.changed) {
    const dir = row.environment.find((d) => ch.path.startsWith(`${d}/`));
    if (dir !== undefined) {
      const sum = collapsed.get(dir) ?? { files: 0, added: 0, deleted: 0 };
      collapsed.set(dir, { files: sum.files + 1, added: sum.added + (ch.added ?? 0), deleted: sum.deleted + (ch.deleted ?? 0) });
      continue;
    }
    const counts = ch.added === null ? 'binary' : `${c.green(`+${ch.added}`)} ${c.red(`-${ch.deleted ?? 0}`)}`;
    out.out(`        ${ch.change} ${printablePath(ch.path)}  ${counts}`);
  }
  for (const [dir, sum] of collapsed) {
    const files = sum.files === 1 ? '1 file' : `${sum.files} files`;
    out.out(`        ~ ${printablePath(dir)}/: ${files} changed  ${c.green(`+${sum.added}`)} ${c.red(`-${sum.deleted}`)}`);
  }
  if (st.skipped.length > 0) out.out(c.dim(`        not snapshotted: ${st.skipped.map(describeSkipped).join(', ')}`));
  if (st.unprotectedReason) out.out(c.red(`        unprotected: ${printableLine(st.unprotectedReason)}`));
}

/** The notes at the end of a step's row, each as printed and as its plain text (whose length the row's width counts). */
function stepMarks(out: Output, { step: st, session, lost, depsChanged }: LogRow): Cell[] {
  const c = out.color;
  const marks: Cell[] = [];
  const mark = (plain: string, shown = plain) => marks.push(cell(plain, shown));
  if (st.overlaps.length > 0) mark(`overlaps ${st.overlaps.join(',')}`, c.yellow(`overlaps ${st.overlaps.join(',')}`));
  if (st.changedBefore.length > 0 && st.step > 1)
    mark(
      `${st.changedBefore.length} changed outside tool calls before it`,
      c.yellow(`${st.changedBefore.length} changed outside tool calls before it`),
    );
  // A checkpoint's message is its description (`what`): a call's is a note beside its command.
  if (st.message && st.kind !== 'checkpoint') mark(printableLine(JSON.stringify(st.message)));
  // What a checkpoint of the user's recorded is theirs: an undo over it keeps it (`undo N` of the checkpoint itself goes back before it).
  if (st.kind === 'checkpoint' && st.madeBy !== 'agent' && st.changed.length > 0)
    mark('your edits (an undo keeps them)', c.yellow('your edits (an undo keeps them)'));
  // Its installed dependencies (node_modules, .venv…) are not in the snapshots: an undo over it says what to run.
  if (depsChanged.length > 0) mark('dependencies changed', c.magenta('dependencies changed'));
  if (st.source === 'transcript') mark('not hooked (read-only), from the transcript', c.dim('not hooked (read-only), from the transcript'));
  if (lost)
    mark(
      "snapshot lost: deleted by git's prune (cannot be undone to)",
      c.red("snapshot lost: deleted by git's prune (cannot be undone to)"),
    );
  const effect = outsideEffect(st, session.worktree);
  if (effect) mark(`not undoable: ${printableLine(effect)}`, c.red(`not undoable: ${printableLine(effect)}`));
  return marks;
}

/** The printed width of a string holding SGR escape codes. */
function visibleLength(s: string): number {
  // eslint-disable-next-line no-control-regex
  return s.replace(/\x1b\[[0-9;]*m/g, '').length;
}

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
    const step = stepArgument(argv.step);
    // Without git's colours: the diff is escaped, then coloured (printableDiff); --json gets it as git wrote it.
    const res = await show({
      cwd: ctx.io.cwd,
      env: ctx.io.env,
      session: argv.session,
      step,
      color: false,
      stat: argv.stat,
    });
    if (out.json) {
      out.printJson({
        ...stepJson(res.step),
        what: res.what,
        plan: res.plan,
        environment: res.environment,
        processes: res.processes,
        depsChanged: res.depsChanged,
        session: res.session.id,
        diff: res.diff,
      });
      return;
    }
    out.note(sessionSourceNote(res.session, res.source));
    const st = res.step;
    out.out(
      out.color.bold(
        `step ${st.step}  ${printablePath(st.tool ?? st.kind)}  ${st.status}  ${st.pre?.slice(0, 10) ?? '-'}..${st.post?.slice(0, 10) ?? '-'}`,
      ) + (res.what ? `  ${out.color.cyan(res.what)}` : ''),
    );
    const env = res.environment;
    const agent = env.agentVersion ?? env.agent;
    if (agent || env.model || env.cwd !== res.session.cwd)
      out.out(
        out.color.dim(
          [
            agent ? `agent ${printablePath(agent)}` : null,
            env.model ? `model ${printablePath(env.model)}` : null,
            env.cwd !== res.session.cwd ? `in ${printablePath(env.cwd)}` : null,
          ]
            .filter(Boolean)
            .join(', '),
        ),
      );
    const ch = env.envChanged;
    if (ch && (ch.added.length || ch.removed.length || ch.changed.length)) {
      const names = (what: string, list: string[]) => (list.length ? `${what} ${list.map(printablePath).join(', ')}` : null);
      out.out(
        out.color.dim(
          `environment since the first call: ${[names('added', ch.added), names('removed', ch.removed), names('changed', ch.changed)].filter(Boolean).join('; ')} (names only)`,
        ),
      );
    }
    if (env.tools)
      out.out(out.color.dim(`tools (${env.tools.length}, as of step ${env.toolsAt}): ${env.tools.map(printablePath).join(', ')}`));
    if (res.plan) out.out(`plan (as of this step, set by step ${res.plan.setAt}):\n${planLines(res.plan.items).replace(/^/gm, '  ')}`);
    if (res.depsChanged.length > 0)
      out.out(
        out.color.magenta(
          `dependencies changed: ${res.depsChanged.map(printablePath).join(', ')} (${res.installedChanged ? 'what they install is snapshotted with them: an undo brings both back' : 'what they install is not snapshotted: an undo of this step says what to run'})`,
        ),
      );
    if (res.processes.length > 0) {
      out.out(`processes it started, still running (${res.processes.length}):`);
      for (const p of res.processes) out.out(`  ${processLine(p)}`);
    }
    if (res.diff) ctx.io.stdout.write(printableDiff(res.diff, out.color));
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
    const argv = raw as unknown as {
      from: string | number;
      to?: string | number;
      session?: string;
      stat: boolean;
      json: boolean;
      '--'?: string[];
    };
    const out = ctx.output(argv);
    const res = await diff({
      cwd: ctx.io.cwd,
      env: ctx.io.env,
      session: argv.session,
      from: String(argv.from),
      to: argv.to === undefined ? undefined : String(argv.to),
      color: false,
      stat: argv.stat,
      paths: (argv['--'] ?? []).map(String),
    });
    if (out.json) {
      out.printJson({ session: res.session.id, from: res.from, to: res.to, diff: res.diff });
      return;
    }
    out.note(sessionSourceNote(res.session, res.source));
    if (res.diff) ctx.io.stdout.write(printableDiff(res.diff, out.color));
    else out.note('no differences');
  },
});
