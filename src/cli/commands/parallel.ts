// Commands that bring parallel sessions back or throw them away: apply, promote, discard, gc.
import { errors } from '../../base/errors.js';
import { apply, applyUndo, discard, gc, promote } from '../../api/api.js';
import type { FileStat } from '../../worktrees/diffstat.js';
import type { CommandFactory } from '../context.js';
import { jsonOption } from '../context.js';
import { describeLeft, formatSize, printablePath, type Output } from '../output.js';
import { printableLine } from '../../base/printable.js';

const sessionPositional = { type: 'string', describe: 'session id, or the name it was started with (see `agentsnap sessions`)' } as const;

/** Like git's --stat, with counts in words: " path | +a -d" per file, then a summary line. */
function diffstatLines(stat: FileStat[]): string[] {
  if (stat.length === 0) return [];
  const names = stat.map((f) => printablePath(f.path));
  const width = Math.min(60, Math.max(...names.map((n) => n.length)));
  const lines = stat.map((f, i) => ` ${names[i]!.padEnd(width)} | ${f.added === null ? 'binary' : `+${f.added} -${f.deleted ?? 0}`}`);
  const ins = stat.reduce((n, f) => n + (f.added ?? 0), 0);
  const del = stat.reduce((n, f) => n + (f.deleted ?? 0), 0);
  const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;
  lines.push(
    ` ${plural(stat.length, 'file', 'files')} changed, ${plural(ins, 'insertion(+)', 'insertions(+)')}, ${plural(del, 'deletion(-)', 'deletions(-)')}`,
  );
  return lines;
}

function listed(paths: string[], max = 10): string {
  return paths.slice(0, max).map(printablePath).join(', ') + (paths.length > max ? `, … (${paths.length - max} more)` : '');
}

/** What `apply --undo` took back. */
function printApplyUndo(out: Output, res: Awaited<ReturnType<typeof applyUndo>>): void {
  for (const line of diffstatLines(res.stat)) out.out(line);
  for (const l of res.left) out.out(out.color.yellow(`  ! ${describeLeft(l)}`));
  out.note(
    `agentsnap: took back the apply of session ${res.session} (${res.appliedAt}): ${res.written.length} written, ${res.deleted.length} deleted`,
  );
  if (res.left.length > 0)
    out.err(`agentsnap: ${res.left.length} path(s) changed since the apply were left as they are: ${listed(res.left.map((l) => l.path))}`);
  out.note(`agentsnap: this worktree as it was before the undo: ${res.beforeRef} (${res.before.slice(0, 10)})`);
}

/** What `apply --dry-run` would write. */
function printApplyDryRun(out: Output, res: Awaited<ReturnType<typeof apply>>, forceConflicts: boolean): void {
  const files = (n: number) => `${n} ${n === 1 ? 'file' : 'files'}`;
  out.out(out.color.bold(`apply ${res.session} (dry run): ${files(res.written.length)} would be written, ${res.deleted.length} deleted`));
  for (const line of diffstatLines(res.stat)) out.out(line);
  if (res.conflicts.length > 0)
    out.out(out.color.yellow(`  ${files(res.conflicts.length)} would have conflict markers: ${listed(res.conflicts)}`));
  if (res.skipped.length > 0) out.out(`  submodules would not be written: ${listed(res.skipped)}`);
  for (const l of res.left) out.out(out.color.yellow(`  ! ${describeLeft(l)}`));
  out.note(
    `agentsnap: nothing was changed (dry run); \`agentsnap apply ${res.session}${forceConflicts ? ' --force-conflicts' : ''}\` applies it`,
  );
}

export const applyCommand: CommandFactory = (ctx) => ({
  command: 'apply [session]',
  describe: "Merge a session's net change (its start to its last snapshot) into this worktree; --undo takes the last apply back",
  builder: (y) =>
    y
      .positional('session', sessionPositional)
      .options({
        'force-conflicts': {
          type: 'boolean',
          default: false,
          describe: 'write conflicting files with conflict markers instead of refusing',
        },
        undo: { type: 'boolean', default: false, describe: 'take back the last apply into this worktree (of <session>, if named)' },
        force: {
          type: 'boolean',
          default: false,
          implies: 'undo',
          describe: 'with --undo: take back the other paths when some were changed since the apply',
        },
        'dry-run': {
          type: 'boolean',
          alias: 'n',
          default: false,
          describe: 'print what the apply would write; change nothing (refused where the apply is)',
        },
        ...jsonOption,
      })
      .example('$0 apply lq3k2x0a-7f3c --dry-run', 'what that apply would write here')
      .example('$0 apply lq3k2x0a-7f3c', "bring that agent's work into the current worktree")
      .example('$0 apply --undo', 'take the last apply back (paths changed since are refused)'),
  handler: async (raw) => {
    const argv = raw as unknown as {
      session?: string;
      forceConflicts: boolean;
      undo: boolean;
      force: boolean;
      'dry-run': boolean;
      json: boolean;
    };
    const out = ctx.output(argv);
    if (!argv.undo && (argv.session === undefined || argv.session === '')) {
      throw errors.invalidArgument(
        'apply needs a session id or name (see `agentsnap sessions`): agentsnap apply <session>, or agentsnap apply --undo.',
      );
    }
    if (argv.undo && argv.forceConflicts) throw errors.invalidArgument('--force-conflicts goes with an apply, not with --undo.');
    if (argv.undo && argv['dry-run'])
      throw errors.invalidArgument('--dry-run goes with an apply, not yet with --undo.', {
        hint: 'See what --undo would take back with `agentsnap sessions` and `agentsnap diff`; it refuses, changing nothing, where a path changed since the apply.',
      });
    if (argv.undo) {
      const res = await applyUndo({ cwd: ctx.io.cwd, env: ctx.io.env, session: argv.session, force: argv.force });
      if (out.json) {
        out.printJson(res);
        return;
      }
      printApplyUndo(out, res);
      return;
    }
    const res = await apply({
      cwd: ctx.io.cwd,
      env: ctx.io.env,
      session: argv.session ?? '',
      forceConflicts: argv.forceConflicts,
      dryRun: argv['dry-run'],
    });
    if (out.json) {
      out.printJson(res);
      return;
    }
    if (res.empty) {
      out.note(`agentsnap: session ${res.session} has nothing to apply here`);
      return;
    }
    if (res.dryRun) {
      printApplyDryRun(out, res, argv.forceConflicts);
      return;
    }
    for (const line of diffstatLines(res.stat)) out.out(line);
    out.note(`agentsnap: applied session ${res.session}: ${res.written.length} written, ${res.deleted.length} deleted`);
    if (res.conflicts.length > 0) out.err(`agentsnap: ${res.conflicts.length} file(s) have conflict markers: ${listed(res.conflicts)}`);
    if (res.skipped.length > 0) out.note(`agentsnap: submodules not written: ${listed(res.skipped)}`);
    for (const l of res.left) out.out(out.color.yellow(`  ! ${describeLeft(l)}`));
    out.note(
      `agentsnap: this worktree as it was before: ${res.safetyRef} (${res.safety?.slice(0, 10)}); take it back with \`agentsnap apply --undo\``,
    );
  },
});

export const promoteCommand: CommandFactory = (ctx) => ({
  command: 'promote <session>',
  describe: "Create a branch with one ordinary commit (by you) holding the session's result",
  builder: (y) =>
    y
      .positional('session', sessionPositional)
      .options({
        branch: { type: 'string', alias: 'b', demandOption: true, describe: 'name of the new branch' },
        message: { type: 'string', alias: 'm', describe: 'commit message (default: "Changes from agent session <id>")' },
        force: { type: 'boolean', default: false, describe: 'replace the branch if it exists' },
        'include-uncommitted': {
          type: 'boolean',
          default: false,
          describe: 'also commit what was uncommitted in the worktree when the session started (left out by default)',
        },
        ...jsonOption,
      })
      .example('$0 promote lq3k2x0a-7f3c -b feature/login -m "Add login form"', "the session's result as a commit on a new branch"),
  handler: async (raw) => {
    const argv = raw as unknown as {
      session: string;
      branch: string;
      message?: string;
      force: boolean;
      includeUncommitted: boolean;
      json: boolean;
    };
    const out = ctx.output(argv);
    const res = await promote({
      cwd: ctx.io.cwd,
      env: ctx.io.env,
      session: argv.session,
      branch: argv.branch,
      message: argv.message,
      force: argv.force,
      includeUncommitted: argv.includeUncommitted,
    });
    if (out.json) {
      out.printJson(res);
      return;
    }
    out.out(`${printablePath(res.branch)} ${res.commit}`);
    for (const line of diffstatLines(res.stat)) out.out(line);
    if (res.uncommitted.length > 0) {
      out.err(
        out.color.yellow(
          res.uncommittedIncluded
            ? `agentsnap: warning: the commit includes ${res.uncommitted.length} file(s) that were uncommitted in the worktree before the session started (yours, not the agent's): ${listed(res.uncommitted)}`
            : `agentsnap: left out ${res.uncommitted.length} file(s) that were uncommitted in the worktree before the session started (yours, not the agent's): ${listed(res.uncommitted)}; add them with --include-uncommitted`,
        ),
      );
    }
    out.note(
      `agentsnap: branch ${printablePath(res.branch)} holds session ${res.session} as one commit on ${res.parent ? res.parent.slice(0, 10) : 'no parent'}`,
    );
  },
});

export const discardCommand: CommandFactory = (ctx) => ({
  command: 'discard <session>',
  describe: 'Throw a session away: final snapshot, then remove its worktree (refs and journal stay until gc)',
  builder: (y) =>
    y.positional('session', sessionPositional).options({
      purge: { type: 'boolean', default: false, describe: 'also drop its refs and journal now' },
      force: { type: 'boolean', default: false, describe: 'even if its wrapper is running, or files would be lost' },
      ...jsonOption,
    }),
  handler: async (raw) => {
    const argv = raw as unknown as { session: string; purge: boolean; force: boolean; json: boolean };
    const out = ctx.output(argv);
    const res = await discard({ cwd: ctx.io.cwd, env: ctx.io.env, session: argv.session, purge: argv.purge, force: argv.force });
    if (out.json) {
      out.printJson(res);
      return;
    }
    if (res.finalCommit) out.note(`agentsnap: final snapshot ${res.finalCommit.slice(0, 10)}`);
    if (res.worktreeRemoved) out.note(`agentsnap: removed worktree ${printablePath(res.worktreeRemoved)}`);
    out.note(
      res.purged
        ? `agentsnap: session ${res.session} purged (refs and journal dropped)`
        : `agentsnap: session ${res.session} discarded; its refs and journal stay until \`agentsnap gc\``,
    );
  },
});

function count(n: number, noun: string): string {
  if (n === 1) return `1 ${noun}`;
  return `${n} ${noun.endsWith('y') ? `${noun.slice(0, -1)}ies` : `${noun}s`}`;
}

/** gc's result as one sentence: "removed 1 session, 5 refs and the state directory …", "nothing to remove". */
function gcSentence(res: Awaited<ReturnType<typeof gc>>, verb: string): string {
  const stateDir = res.all ? res.removedFiles[res.removedFiles.length - 1] : undefined;
  const files = res.removedFiles.length - (stateDir ? 1 : 0);
  const parts = [
    res.removedSessions.length ? count(res.removedSessions.length, 'session') : '',
    res.removedWorktrees.length ? count(res.removedWorktrees.length, 'worktree') : '',
    res.removedRefs.length ? count(res.removedRefs.length, 'ref') : '',
    res.removedConfig.length ? count(res.removedConfig.length, 'config entry') : '',
    files ? count(files, 'file') : '',
    stateDir ? `the state directory ${printablePath(stateDir)}` : '',
  ].filter(Boolean);
  if (parts.length === 0) return res.dryRun ? 'nothing would be removed' : 'nothing to remove';
  const list = parts.length === 1 ? parts[0] : `${parts.slice(0, -1).join(', ')} and ${parts[parts.length - 1]}`;
  return `${verb} ${list}`;
}

export const gcCommand: CommandFactory = (ctx) => ({
  command: 'gc',
  describe: "Drop old sessions and agentsnap's leftovers; report disk use before and after",
  builder: (y) =>
    y
      .options({
        'older-than': { type: 'string', describe: 'drop sessions inactive this long (default: agentsnap.retention, 14d)' },
        keep: { type: 'number', describe: 'keep the N most recent sessions whatever their age (default: agentsnap.gcKeep, 0)' },
        'dry-run': {
          type: 'boolean',
          alias: 'n',
          default: false,
          describe: 'only report what would go, and what would be refused and why (never refuses)',
        },
        all: { type: 'boolean', default: false, describe: 'remove everything agentsnap put into this repository' },
        force: { type: 'boolean', default: false, describe: 'with --all: also sessions that may be in use or hold unsnapshotted work' },
        ...jsonOption,
      })
      .example('$0 gc --older-than 3d --dry-run', 'what a 3-day retention would drop'),
  handler: async (raw) => {
    const argv = raw as unknown as { olderThan?: string; keep?: number; dryRun: boolean; all: boolean; force: boolean; json: boolean };
    const out = ctx.output(argv);
    const res = await gc({
      cwd: ctx.io.cwd,
      env: ctx.io.env,
      olderThan: argv.olderThan,
      keep: argv.keep,
      dryRun: argv.dryRun,
      all: argv.all,
      force: argv.force,
    });
    if (out.json) {
      out.printJson(res);
      return;
    }
    const verb = res.dryRun ? 'would remove' : 'removed';
    for (const s of res.removedSessions) out.out(`${verb} session ${s}`);
    for (const w of res.removedWorktrees) out.out(`${verb} worktree ${printablePath(w)}`);
    for (const r of res.all ? res.removedRefs.filter((r) => !r.startsWith('refs/agent')) : []) out.out(`${verb} ref ${printableLine(r)}`);
    for (const c of res.removedConfig) out.out(`${verb} config ${printableLine(c)}`);
    for (const k of res.kept) out.out(`kept session ${k.session}: ${printableLine(k.reason)}`);
    // A dry run never refuses: it says what the real run would refuse, and how to go ahead.
    const inUse = res.refused.filter((r) => r.kind === 'in-use').map((r) => r.session);
    if (inUse.length > 0)
      out.out(
        `would refuse: ${count(inUse.length, 'session')} may still be in use (${inUse.join(', ')}): stop ${inUse.length === 1 ? 'its agent' : 'their agents'} (or discard ${inUse.length === 1 ? 'it' : 'them'}) first, or run \`agentsnap gc --all --force\``,
      );
    for (const r of res.refused.filter((r) => r.kind === 'unsaved-work'))
      out.out(
        `would refuse: session ${r.session}: ${printableLine(r.reason)}: apply, promote or discard it first, or run \`agentsnap gc --all --force\``,
      );
    for (const l of res.left) out.out(`left: ${printableLine(l)}`);
    for (const d of res.removedShadows) out.out(`${verb} the shadow repository ${printablePath(d)}`);
    out.out(`${gcSentence(res, verb)}; disk use ${formatSize(res.before)} -> ${formatSize(res.after)}${res.dryRun ? ' (estimate)' : ''}`);
  },
});
