// The CLI entry: registers each command explicitly, maps errors to one clear
// message and a documented exit code. No stack traces unless AGENTSNAP_DEBUG=1.
import { AgentsnapError, ExitCode, asDiskFull, isAgentsnapError } from '../base/errors.js';
import type { CommandModule } from 'yargs';
import type { CliContext, CommandFactory } from './context.js';
import { makeOutput, type CliIO, type ColorMode } from './output.js';
import type { ServedWrap } from '../server/serve.js';
import type { WrapArgs } from './commands/wrap.js';
import { PAGED_COMMANDS, startPager, type Pager } from './pager.js';
import { printableText } from '../base/printable.js';

/** A command: its name (the first word of its yargs `command`) and how to load its module. */
export interface CommandEntry {
  name: string;
  load: () => Promise<CommandFactory>;
}

// Every command, registered explicitly. Modules load on demand: `snap` runs on
// every tool call and should not pay for the imports of wrap, undo or sync.
export const COMMANDS: CommandEntry[] = [
  { name: 'wrap', load: async () => (await import('./commands/wrap.js')).wrapCommand },
  { name: 'snap', load: async () => (await import('./commands/snap.js')).snapCommand },
  { name: 'end', load: async () => (await import('./commands/snap.js')).endCommand },
  { name: 'sessions', load: async () => (await import('./commands/read.js')).sessionsCommand },
  { name: 'log', load: async () => (await import('./commands/read.js')).logCommand },
  { name: 'show', load: async () => (await import('./commands/read.js')).showCommand },
  { name: 'diff', load: async () => (await import('./commands/read.js')).diffCommand },
  { name: 'undo', load: async () => (await import('./commands/undo.js')).undoCommand },
  { name: 'redo', load: async () => (await import('./commands/undo.js')).redoCommand },
  { name: 'restore', load: async () => (await import('./commands/undo.js')).restoreCommand },
  { name: 'revert', load: async () => (await import('./commands/undo.js')).revertCommand },
  { name: 'status', load: async () => (await import('./commands/undo.js')).statusCommand },
  { name: 'op', load: async () => (await import('./commands/op.js')).opCommand },
  { name: 'check', load: async () => (await import('./commands/check.js')).checkCommand },
  { name: 'bisect', load: async () => (await import('./commands/check.js')).bisectCommand },
  { name: 'blame', load: async () => (await import('./commands/blame.js')).blameCommand },
  { name: 'why', load: async () => (await import('./commands/blame.js')).whyCommand },
  { name: 'replay', load: async () => (await import('./commands/replay.js')).replayCommand },
  { name: 'init', load: async () => (await import('./commands/init.js')).initCommand },
  { name: 'hook', load: async () => (await import('./commands/hook.js')).hookCommand },
  { name: 'hooks', load: async () => (await import('./commands/hooks.js')).hooksCommand },
  { name: 'remote', load: async () => (await import('./commands/sync.js')).remoteCommand },
  { name: 'push', load: async () => (await import('./commands/sync.js')).pushCommand },
  { name: 'fetch', load: async () => (await import('./commands/sync.js')).fetchCommand },
  { name: 'doctor', load: async () => (await import('./commands/doctor.js')).doctorCommand },
  { name: 'apply', load: async () => (await import('./commands/parallel.js')).applyCommand },
  { name: 'promote', load: async () => (await import('./commands/parallel.js')).promoteCommand },
  { name: 'discard', load: async () => (await import('./commands/parallel.js')).discardCommand },
  { name: 'gc', load: async () => (await import('./commands/parallel.js')).gcCommand },
  { name: 'shadow', load: async () => (await import('./commands/shadow.js')).shadowCommand },
  { name: 'server', load: async () => (await import('./commands/server.js')).serverCommand },
  { name: 'mcp', load: async () => (await import('./commands/mcp.js')).mcpCommand },
  { name: 'ui', load: async () => (await import('./commands/ui.js')).uiCommand },
  { name: 'completion', load: async () => (await import('./commands/completion.js')).completionCommand },
];

/**
 * The top-level help's groups, in order: the five everyday commands of the README's "The five commands" first,
 * then the rest by theme. A command in no group is listed under "More commands" (test/cli/cli-conventions.test.ts
 * checks that every command is listed once).
 */
export const COMMAND_GROUPS: { title: string; names: string[] }[] = [
  { title: 'Everyday commands', names: ['wrap', 'log', 'show', 'undo', 'redo'] },
  { title: 'Look back', names: ['sessions', 'diff', 'status', 'replay', 'blame', 'why'] },
  { title: 'Take back part of it', names: ['restore', 'revert', 'op'] },
  { title: 'Test the steps', names: ['check', 'bisect'] },
  { title: 'Record without wrap', names: ['snap', 'end', 'init', 'hook', 'shadow'] },
  { title: 'Parallel sessions', names: ['apply', 'promote', 'discard'] },
  { title: 'History and backup', names: ['hooks', 'remote', 'push', 'fetch'] },
  { title: 'Tools and upkeep', names: ['doctor', 'gc', 'server', 'mcp', 'ui', 'completion'] },
];

/**
 * yargs' top-level help lists every command under one "Commands:" heading: the same entries (its layout,
 * from the same command definitions) regrouped under COMMAND_GROUPS' headings. Any other help is as it is.
 */
export function groupedHelp(help: string): string {
  const lines = help.split('\n');
  const start = lines.indexOf('Commands:');
  if (start < 0) return help;
  let end = start + 1;
  while (end < lines.length && lines[end] !== '') end++;
  const entries = new Map<string, string[]>();
  let current: string[] | null = null;
  for (const line of lines.slice(start + 1, end)) {
    const name = /^ {2}agentsnap (\S+)/.exec(line)?.[1];
    if (name !== undefined) entries.set(name, (current = [line]));
    else current?.push(line);
  }
  const sections: string[][] = [];
  for (const g of COMMAND_GROUPS) {
    const body = g.names.flatMap((n) => entries.get(n) ?? []);
    for (const n of g.names) entries.delete(n);
    if (body.length > 0) sections.push([`${g.title}:`, ...body]);
  }
  if (entries.size > 0) sections.push(['More commands:', ...[...entries.values()].flat()]);
  const grouped = sections.flatMap((sec, i) => (i === 0 ? sec : ['', ...sec]));
  return [...lines.slice(0, start), ...grouped, ...lines.slice(end)].join('\n');
}

class UsageError extends AgentsnapError {
  constructor(message: string) {
    super('Usage', 'usage', message, { hint: 'See `agentsnap --help`, or `agentsnap <command> --help`.' });
  }
}

/** yargs says only "Did you mean X?" (or "Unknown argument: X") for an unknown command: say what is wrong. */
function unknownCommandMessage(args: string[], msg: string | undefined, known: Set<string>): string | undefined {
  const first = args.find((a) => !a.startsWith('-'));
  if (first === undefined || known.has(first)) return undefined;
  const suggestion = /^Did you mean (.+)\?$/.exec(msg ?? '')?.[1];
  if (!suggestion && !(msg ?? '').startsWith('Unknown argument')) return undefined;
  return `unknown command: ${first}${suggestion ? ` (did you mean ${suggestion}?)` : ''}`;
}

function version(): string {
  return '0.1.0';
}

// Commands that read what comes after `--` (a command to run, paths). Every other
// command refuses it: `undo -- 2` must not quietly undo the last step instead.
const TAKES_DASHDASH = new Set(['wrap', 'restore', 'log', 'diff']);

/** What a missing positional is, in words, for "restore needs a step number". */
const POSITIONAL_WORDS: Record<string, string> = {
  step: 'a step number',
  from: 'a state (N, N:pre or 0)',
  session: 'a session id (see `agentsnap sessions`)',
  agent: 'an agent',
  action: 'an action',
  event: 'an event',
  name: 'a name',
  remote: 'a remote',
};

/** "Not enough non-option arguments: got 0, need at least 1" as "restore needs a step number: agentsnap restore <step> [paths..]". */
function missingArgumentMessage(msg: string, command: string | undefined, usage: string | undefined): string | undefined {
  const m = /^Not enough non-option arguments: got (\d+), need at least (\d+)/.exec(msg);
  if (!m || !command || !usage) return undefined;
  const required = [...usage.matchAll(/<([^>]+)>/g)].map((x) => x[1] as string);
  const missing = required[Number(m[1])];
  if (!missing) return undefined;
  return `${command} needs ${POSITIONAL_WORDS[missing] ?? `<${missing}>`}: agentsnap ${usage}`;
}

/** "Missing required argument: run" as "bisect needs --run": yargs names the option without its dashes. */
function missingOptionMessage(msg: string, command: string | undefined): string | undefined {
  const m = /^Missing required arguments?: (.+)$/.exec(msg.trim());
  if (!m || !command) return undefined;
  return `${command} needs ${(m[1] as string)
    .split(', ')
    .map((name) => `--${name}`)
    .join(' and ')}`;
}

/** "Invalid values: Argument: phase, Given: "middle", Choices: "pre", "post"" as "--phase must be "pre" or "post", not "middle"". */
function invalidChoiceMessage(msg: string, usage: string | undefined): string | undefined {
  const m = /^Invalid values:\s*Argument: ([\w-]+), Given: (.+?), Choices: (.+)$/s.exec(msg.trim());
  if (!m) return undefined;
  const [, name, given, choices] = m as unknown as [string, string, string, string];
  const what = usage?.includes(`<${name}>`) || usage?.includes(`[${name}]`) ? name : `--${name}`;
  const list = choices.trim().split(', ');
  const options = list.length > 1 ? `${list.slice(0, -1).join(', ')} or ${list[list.length - 1]}` : list.join('');
  return given === 'true' ? `${what} needs a value: ${options}` : `${what} must be ${options}, not ${given}`;
}

/** A number option yargs could not read (NaN): named with what was typed, not as `null`. */
function badNumberMessage(argv: Record<string, unknown>, args: string[], numberKeys: string[]): string | undefined {
  for (const key of numberKeys) {
    // `--last` with nothing after it: yargs leaves the option unset, as if it were not given.
    const at = args.indexOf(`--${key}`);
    if (at >= 0 && (at === args.length - 1 || (/^-/.test(args[at + 1]!) && !/^-\d/.test(args[at + 1]!)))) return `--${key} needs a number`;
  }
  for (const [key, value] of Object.entries(argv)) {
    if (typeof value !== 'number' || !Number.isNaN(value) || key.length === 1 || /[A-Z]/.test(key)) continue;
    const i = args.findIndex((a) => a === `--${key}` || a.startsWith(`--${key}=`));
    const raw = i < 0 ? undefined : args[i]!.includes('=') ? args[i]!.slice(args[i]!.indexOf('=') + 1) : args[i + 1];
    return raw === undefined || raw.startsWith('-') ? `--${key} needs a number` : `--${key} needs a number, not ${JSON.stringify(raw)}`;
  }
  return undefined;
}

/** Levenshtein distance, for did-you-mean on option names. */
function distance(a: string, b: string): number {
  const d = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = d[0]!;
    d[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = d[j]!;
      d[j] = Math.min(d[j]! + 1, d[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return d[b.length]!;
}

/** `dry-run` as yargs also names it (`dryRun`): its camel-case expansion, an internal name the user never typed. */
function camelCase(name: string): string {
  return name.replace(/-+([a-z0-9])/gi, (_, c: string) => c.toUpperCase());
}

/**
 * The option the user typed that yargs reports as `name`: `--name[=v]`, its camel-case expansion (yargs
 * reports `--dry-runx` as both `dry-runx` and `dryRunx`), its negation (`--no-name`, reported as `name`), or a
 * letter of a group of short flags (`-qZ`). Undefined when no option was typed under that name (a positional).
 */
function typedOption(name: string, args: string[]): string | undefined {
  for (const arg of args) {
    if (arg.startsWith('--')) {
      const base = arg.slice(2).split('=')[0] as string;
      const positive = base.startsWith('no-') ? base.slice(3) : undefined;
      if ([base, camelCase(base), positive, positive === undefined ? undefined : camelCase(positive)].includes(name)) return `--${base}`;
    } else if (name.length === 1 && /^-[^-\d]/.test(arg) && arg.slice(1).split('=')[0]!.includes(name)) return `-${name}`;
  }
  return undefined;
}

/**
 * "Unknown arguments: forse" as "unknown option --forse (did you mean --force?)"; a stray positional as
 * "unexpected argument". Each is named as the user typed it: never by the names yargs derives (`dryRun`).
 */
function unknownOptionMessage(msg: string, args: string[], known: string[]): string | undefined {
  const m = /^Unknown arguments?: (.+)$/.exec(msg);
  if (!m) return undefined;
  const candidates = known.filter((k) => k.length > 1 && !/[A-Z]/.test(k));
  const parts = new Set<string>();
  for (const name of (m[1] as string).split(', ')) {
    const flag = typedOption(name, args);
    if (!flag) {
      parts.add(`unexpected argument ${JSON.stringify(name)}`);
      continue;
    }
    const typed = flag.replace(/^-+/, '');
    let best: string | undefined;
    let bestD = Infinity;
    for (const k of candidates) {
      const dd = distance(typed, k);
      if (dd < bestD) {
        bestD = dd;
        best = k;
      }
    }
    const close =
      flag.startsWith('--') &&
      best !== undefined &&
      (bestD <= Math.max(1, Math.floor(typed.length / 3)) || (typed.length >= 3 && best.startsWith(typed)));
    parts.add(`unknown option ${flag}${close ? ` (did you mean --${best}?)` : ''}`);
  }
  return [...parts].join('; ');
}

/**
 * git's `--color[=<when>]` and `--no-color`, taken out of the arguments before any `--` (after it they belong to
 * a command or are paths), so that every command takes them: a bare `--color` is `always`, the value is given
 * only after `=` (as git reads it: `show --color 3` is step 3), the last one wins.
 */
export function takeColorOption(args: string[]): { args: string[]; color: ColorMode | undefined } {
  const end = args.includes('--') ? args.indexOf('--') : args.length;
  let color: ColorMode | undefined;
  const rest: string[] = [];
  for (const [i, arg] of args.entries()) {
    if (i >= end || !/^--(no-)?color(=|$)/.test(arg)) {
      rest.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    if (arg.startsWith('--no-')) {
      if (eq >= 0) throw new UsageError(`${arg.slice(0, eq)} takes no value`);
      color = 'never';
      continue;
    }
    const when = eq < 0 ? 'always' : arg.slice(eq + 1);
    if (when !== 'always' && when !== 'never' && when !== 'auto')
      throw new UsageError(`--color must be always, never or auto, not ${JSON.stringify(when)}`);
    color = when;
  }
  return { args: rest, color };
}

/** Runs the CLI with the given arguments; returns the exit code instead of exiting. */
export async function run(argsAsGiven: string[], ioAsGiven: CliIO): Promise<number> {
  let argsIn = argsAsGiven;
  let ioIn = ioAsGiven;
  // Hooks never fail on their arguments (commands/hook.ts): --color is left to their parser.
  if (argsAsGiven[0] !== 'hook') {
    try {
      const taken = takeColorOption(argsAsGiven);
      argsIn = taken.args;
      if (taken.color) ioIn = { ...ioAsGiven, color: taken.color };
    } catch (e) {
      const words = argsAsGiven.includes('--') ? argsAsGiven.slice(0, argsAsGiven.indexOf('--')) : argsAsGiven;
      return reportError(e, ioAsGiven, words.includes('--json'));
    }
  }
  let pager: Pager | null = null;
  // show, diff, log, replay and bisect on a terminal go through a pager, as git's do (src/cli/pager.ts).
  const words = argsIn.includes('--') ? argsIn.slice(0, argsIn.indexOf('--')) : argsIn;
  const command = words.find((a) => !a.startsWith('-'));
  if (command !== undefined && PAGED_COMMANDS.has(command) && !words.some((a) => a === '--no-pager' || a === '--help' || a === '-h'))
    pager = await startPager(ioIn);
  try {
    return await runCommand(argsIn, pager?.io ?? ioIn);
  } finally {
    await pager?.finish();
  }
}

/** yargs' failure as one line that says what to do, as every other error (`first`: the command named, if any). */
function usageFailure(
  msg: string | undefined,
  {
    parser,
    args,
    optionArgs,
    first,
    known,
    modules,
  }: {
    parser: unknown;
    args: string[];
    optionArgs: string[];
    first: string | undefined;
    known: Set<string>;
    modules: { command?: unknown }[];
  },
): UsageError {
  const command = first !== undefined && known.has(first) ? first : undefined;
  const usage = modules.find((m) => typeof m.command === 'string' && m.command.split(' ')[0] === command)?.command as string | undefined;
  // No command, and an option it does not know (`agentsnap --bogus`): say that, not "Name a command".
  const strayOption =
    command === undefined ? optionArgs.find((a) => a.startsWith('-') && !['--help', '-h', '--version', '-v'].includes(a)) : undefined;
  const plain =
    unknownCommandMessage(args, msg, known) ??
    missingArgumentMessage(msg ?? '', command, usage) ??
    missingOptionMessage(msg ?? '', command) ??
    invalidChoiceMessage(msg ?? '', usage) ??
    (command
      ? unknownOptionMessage(
          msg ?? '',
          optionArgs,
          Object.keys((parser as unknown as { getOptions(): { key: Record<string, unknown> } }).getOptions().key),
        )
      : undefined) ??
    (strayOption ? `unknown option ${strayOption.split('=')[0]}` : undefined);
  // yargs' messages can span lines ("Invalid values:\n  Argument: ..."): one line, like every other error.
  return new UsageError(plain ?? (msg ?? 'invalid usage').replace(/\s*\n\s*/g, ' '));
}

/** Numbers that are not, and anything after `--` for a command that takes nothing there. */
function checkAfterDashDash(argv: { _: (string | number)[]; [k: string]: unknown }, parser: unknown, optionArgs: string[]): void {
  const numberKeys = ((parser as unknown as { getOptions(): { number?: string[] } }).getOptions().number ?? []).filter((k) => k.length > 1);
  const nan = badNumberMessage(argv, optionArgs, numberKeys);
  if (nan) throw new UsageError(nan);
  const command = String(argv._[0] ?? '');
  const rest = (argv['--'] as unknown[] | undefined) ?? [];
  if (TAKES_DASHDASH.has(command) || rest.length === 0) return;
  const what = rest.map((x) => JSON.stringify(String(x))).join(' ');
  const fix =
    command === 'undo' && rest.length === 1 && /^[1-9][0-9]*$/.test(String(rest[0]))
      ? ` To undo step ${String(rest[0])} and every later one: \`agentsnap undo ${String(rest[0])}\`.`
      : command === 'revert'
        ? ' To bring back single files, use `agentsnap restore N -- <paths>`.'
        : '';
  throw new UsageError(`${command} takes nothing after --, got ${what}.${fix}`);
}

async function runCommand(argsIn: string[], io: CliIO): Promise<number> {
  // Hooks bypass the parser: whatever happens they must exit 0 (see commands/hook.ts).
  if (argsIn[0] === 'hook' && !argsIn.includes('--help') && !argsIn.includes('-h'))
    return (await import('./commands/hook.js')).runHookCli(argsIn.slice(1), io);
  // `help --man`: the manual page, from the same definitions and groups as --help (commands/completion.ts).
  if (argsIn.length === 2 && argsIn[0] === 'help' && argsIn[1] === '--man') {
    const { completedCommands, manPage } = await import('./commands/completion.js');
    io.stdout.write(manPage(await completedCommands(await cliContext(io).ctx.commandModules()), COMMAND_GROUPS, version()));
    return ExitCode.ok;
  }
  // `agentsnap` alone is a newcomer asking what there is: the help, exit 0. `agentsnap help undo` is `undo --help`.
  const helpOf = argsIn[0] === 'help' ? argsIn[1] : undefined;
  const args =
    argsIn.length === 0
      ? ['--help']
      : argsIn[0] === 'help'
        ? // `help frobnicate` says "unknown command", as `frobnicate` does.
          helpOf === undefined || COMMANDS.some((c) => c.name === helpOf)
          ? [...argsIn.slice(1, 2), '--help']
          : argsIn.slice(1, 2)
        : argsIn;
  // What the user typed as options and positionals (after `--` come a command or paths, never options).
  const optionArgs = args.includes('--') ? args.slice(0, args.indexOf('--')) : args;
  const wantsJson = optionArgs.includes('--json');
  const { ctx, exitCode } = cliContext(io);
  // `snap` on the Node path runs on every tool call when no server does: well-formed arguments skip
  // yargs (~25 ms of its start-up); anything else (help, a typo, a bad value) gets yargs' handling.
  if (args[0] === 'snap') {
    const code = await runSnap(args.slice(1), io);
    if (code !== null) return code;
  }
  // `wrap` starts every session: its plain forms skip yargs too (they are the session's fixed cost, issue 19).
  if (args[0] === 'wrap') {
    const wrap = (await import('./commands/wrap.js')).wrapCommand(ctx);
    const quick = parseWrapArgs(wrap, args.slice(1));
    if (quick) {
      try {
        await (wrap.handler as (argv: Record<string, unknown>) => Promise<void>)(quick);
        return exitCode();
      } catch (e) {
        return reportError(e, io, false);
      }
    }
  }
  const known = new Set(COMMANDS.map((c) => c.name));
  // A named command without --help needs only its own module; anything else
  // (help, no command, an unknown one) lists or suggests them all.
  const first = args[0];
  const helpAsked = args.includes('--help') || args.includes('-h');
  const entries = first !== undefined && known.has(first) && !helpAsked ? COMMANDS.filter((c) => c.name === first) : COMMANDS;
  const modules = (await Promise.all(entries.map((c) => c.load()))).map((make) => make(ctx));
  // Loaded here, not at the top: hooks run on every tool call and never parse
  // with yargs, whose import (string-width, cliui, y18n) takes ~0.1 s.
  const { default: yargs } = await import('yargs');
  const parser = yargs(args)
    .scriptName('agentsnap')
    .usage('$0 <command> [options]\n\nExact, safe undo for AI coding agents: every tool call snapshotted into hidden git refs.')
    .parserConfiguration({ 'populate--': true })
    .strict()
    .demandCommand(1, 'Name a command.')
    .recommendCommands()
    .help()
    .alias('h', 'help')
    .version(version())
    .alias('v', 'version')
    // Hidden: it would head every command's options; the top-level help says it (as git's --no-pager).
    .option('pager', {
      type: 'boolean',
      default: true,
      global: true,
      hidden: true,
      describe: 'page show, diff, log, replay and bisect on a terminal',
    })
    .epilogue(
      'show, diff, log, replay and bisect go through a pager on a terminal ($AGENTSNAP_PAGER, $PAGER, less): --no-pager prints as is.\n' +
        'Every command takes --color[=always|never|auto] and --no-color, as git does (auto: colour on a terminal unless NO_COLOR is set).',
    )
    .wrap(Math.min(100, (io.stdout as { columns?: number }).columns ?? 100))
    .exitProcess(false)
    .fail((msg, err) => {
      if (err) throw err;
      throw usageFailure(msg, { parser, args, optionArgs, first, known, modules });
    })
    .middleware((argv) => checkAfterDashDash(argv, parser, optionArgs));
  for (const mod of modules) parser.command(mod);
  skipHelpCache(parser);
  let helpShown = false;
  parser.showHelpOnFail(false);
  try {
    await parser.parseAsync(args, {}, (err, _argv, output) => {
      if (output && !err) {
        helpShown = true;
        const text = groupedHelp(output);
        io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
      }
    });
    void helpShown;
    return exitCode();
  } catch (e) {
    return reportError(e, io, wantsJson);
  }
}

/** What a command module gets (CliContext), and the exit code its handler set. */
function cliContext(io: CliIO): { ctx: CliContext; exitCode: () => number } {
  let code: number = ExitCode.ok;
  const ctx: CliContext = {
    io,
    output: (argv) => makeOutput(io, { json: !!argv.json, quiet: !!argv.quiet }),
    setExitCode: (c) => {
      code = c;
    },
    serveSnap: runSnap,
    serveWrap: runServedWrap,
    commandModules: async () => (await Promise.all(COMMANDS.map((c) => c.load()))).map((make) => make(ctx)),
  };
  return { ctx, exitCode: () => code };
}

/**
 * `agentsnap snap <args>` when its arguments are plain (parseSnapArgs): the snap command's handler — api.snap,
 * then its output — with errors reported as the CLI reports them; null for anything yargs has to parse. The
 * warm server answers the Node client's `snap` through this (ctx.serveSnap), so it runs what `snap` runs here.
 */
export async function runSnap(args: string[], io: CliIO): Promise<number | null> {
  const { ctx, exitCode } = cliContext(io);
  const snap = (await import('./commands/snap.js')).snapCommand(ctx);
  const quick = parseSnapArgs(snap, args);
  if (!quick) return null;
  try {
    await (snap.handler as (argv: Record<string, unknown>) => Promise<void>)(quick);
    return exitCode();
  } catch (e) {
    return reportError(e, io, args.includes('--json'));
  }
}

/**
 * The first half of `agentsnap wrap <args>` in a background server, for the thin client (bin/wrap-client.js)
 * that starts the agent (ServerCalls['wrap']): the wrap command's own start and end, printed as it prints them,
 * for its plain forms only (parseWrapArgs, servable); null for anything else, which the client runs itself.
 */
export async function runServedWrap(
  args: string[],
  io: CliIO & {
    openContext: NonNullable<CliIO['openContext']>;
    owner: { pid: number; start: string | null; host: string };
    gitVersion: (env: NodeJS.ProcessEnv) => Promise<string>;
  },
): Promise<ServedWrap | { code: number } | null> {
  const { ctx, exitCode } = cliContext(io);
  const quick = parseWrapArgs((await import('./commands/wrap.js')).wrapCommand(ctx), args);
  if (!quick) return null;
  try {
    const { beginServedWrap } = await import('./commands/wrap.js');
    const begun = await beginServedWrap(ctx, quick as unknown as WrapArgs, {
      openContext: io.openContext,
      owner: io.owner,
      gitVersion: io.gitVersion,
    });
    if (!begun) return null;
    const { run } = begun;
    return {
      spawn: { program: run.program, argv: run.argv, cwd: run.cwd, env: run.env },
      begun: { session: run.session, agent: run.agent, quiet: !!quick.quiet, worktree: run.worktree },
      finish: async (exit, endIo) => {
        const end = cliContext({ ...io, stdout: endIo.stdout, stderr: endIo.stderr });
        try {
          if (exit.error !== undefined) await run.notStarted(new Error(exit.error));
          return begun.end(end.ctx, await run.finish(exit));
        } catch (e) {
          return reportError(e, { ...io, stdout: endIo.stdout, stderr: endIo.stderr }, false);
        }
      },
    };
  } catch (e) {
    void exitCode;
    return { code: reportError(e, io, false) };
  }
}

/**
 * The end of a session a background server began for the thin wrap client (bin/wrap-client.js) when that
 * server is gone by the time the agent exited: the final snapshot and the end, here, printed as wrap prints them.
 */
export async function finishServedWrap(
  io: CliIO,
  begun: { session: string; agent: string; quiet: boolean; worktree?: string },
  exit: { code: number | null; signal: NodeJS.Signals | null; error?: string },
  refused: string | null = null,
): Promise<number> {
  const { ctx } = cliContext(io);
  try {
    const { endServedWrap } = await import('./commands/wrap.js');
    return await endServedWrap(ctx, begun, exit, refused);
  } catch (e) {
    return reportError(e, io, false);
  }
}

/**
 * yargs renders the complete help text every time it runs a command handler
 * (cached, to show it should the handler fail later). agentsnap never shows
 * help on failure (showHelpOnFail(false)), and the rendering costs ~45 ms of
 * text layout on every `snap`, the per-tool-call path. yargs has no option for
 * it, so the cache step is replaced with a no-op where yargs 18 keeps it; if
 * a later yargs moves it, this does nothing and only the time comes back.
 * --help is rendered on demand and is unaffected.
 */
function skipHelpCache(parser: object): void {
  type Internals = { getInternalMethods?: () => { getUsageInstance?: () => { cacheHelpMessage?: unknown } } };
  const usage = (parser as Internals).getInternalMethods?.().getUsageInstance?.();
  if (usage && typeof usage.cacheHelpMessage === 'function') usage.cacheHelpMessage = () => {};
}

/** One option of a command's yargs definition, as the plain-form parser reads it. */
interface DefinedOption {
  type?: unknown;
  alias?: string | readonly string[];
  choices?: readonly unknown[];
  default?: unknown;
  [property: string]: unknown;
}

/**
 * The options a command's yargs builder defines, read by running the builder on a recorder (yargs itself costs ~25
 * ms to load); null when the builder asks for anything but options, positionals and examples (a `.check()`, a
 * `.conflicts()`): then only yargs can parse that command.
 */
function definedOptions(command: CommandModule): Record<string, DefinedOption> | null {
  if (typeof command.builder !== 'function') return null;
  const options: Record<string, DefinedOption> = {};
  let understood = true;
  const recorder: object = new Proxy(
    {},
    {
      get:
        (_target, method) =>
        (...a: unknown[]) => {
          if (method === 'options') Object.assign(options, a[0]);
          else if (method === 'option') options[String(a[0])] = a[1] as DefinedOption;
          else if (method !== 'positional' && method !== 'example') understood = false;
          return recorder;
        },
    },
  );
  (command.builder as (y: object) => unknown)(recorder);
  return understood ? options : null;
}

/** What an option may say and still be parsed plainly; anything else (implies, coerce, array, count…) is yargs' alone. */
const PLAIN_PROPERTIES = new Set(['type', 'alias', 'choices', 'default', 'describe', 'hidden']);

interface PlainOption {
  key: string;
  flag: boolean;
  choices?: readonly unknown[] | undefined;
  integer: boolean;
}

/** The command's plain options by every name they are typed as (`--quiet`, `-q`), and the defaults yargs gives. */
function plainTable(command: CommandModule): { names: Map<string, PlainOption>; defaults: Record<string, unknown> } | null {
  const options = definedOptions(command);
  if (!options) return null;
  const names = new Map<string, PlainOption>();
  const defaults: Record<string, unknown> = {};
  for (const [key, def] of Object.entries(options)) {
    if (Object.keys(def).some((p) => !PLAIN_PROPERTIES.has(p))) continue;
    const flag = def.type === 'boolean';
    if (!flag && def.type !== 'string' && def.type !== 'number' && !(def.type === undefined && def.choices)) continue;
    if (def.default !== undefined) defaults[key] = def.default;
    const aliases = typeof def.alias === 'string' ? [def.alias] : (def.alias ?? []);
    for (const name of [key, ...aliases])
      names.set(name.length === 1 ? `-${name}` : `--${name}`, { key, flag, choices: def.choices, integer: def.type === 'number' });
  }
  return { names, defaults };
}

/**
 * Options `args[0..end)` as yargs gives them to `command`'s handler (its defaults included), read from the command's
 * own yargs definition, for the plain forms only: each option at most once, values that cannot be mistaken for
 * options, choices and whole numbers valid. Null for anything else (help, a typo, `--no-x`, `-qm`, an option with
 * more than a type), which yargs then parses, explains or rejects. `test/cli/cli-snap-args.test.ts` and
 * `cli-wrap-args.test.ts` compare it with yargs.
 */
function plainOptions(command: CommandModule, args: string[], end: number): Record<string, unknown> | null {
  const table = plainTable(command);
  if (!table) return null;
  const argv: Record<string, unknown> = { ...table.defaults };
  const seen = new Set<string>();
  for (let i = 0; i < end; i++) {
    const arg = args[i] as string;
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const opt = table.names.get(eq > 0 ? arg.slice(0, eq) : arg);
    if (!opt || seen.has(opt.key)) return null;
    seen.add(opt.key);
    if (opt.flag) {
      if (eq > 0) return null;
      argv[opt.key] = true;
      continue;
    }
    const value = eq > 0 ? arg.slice(eq + 1) : i + 1 < end ? args[++i] : undefined;
    if (value === undefined || value === '' || value.startsWith('-')) return null;
    if (opt.choices && !opt.choices.includes(value)) return null;
    if (opt.integer) {
      if (!/^[1-9][0-9]{0,8}$/.test(value)) return null;
      argv[opt.key] = Number(value);
    } else argv[opt.key] = value;
  }
  return argv;
}

/** `snap`'s arguments as yargs gives them to its handler, for the plain forms only (plainOptions); else null. */
export function parseSnapArgs(snap: CommandModule, args: string[]): Record<string, unknown> | null {
  return plainOptions(snap, args, args.length);
}

/**
 * `wrap`'s arguments as yargs gives them to its handler, for the plain forms
 * only: options before `--` (plainOptions), the agent's command after it;
 * null for anything else (help, --name/--from, a command without `--`, a
 * typo), which yargs then parses, explains or rejects.
 */
export function parseWrapArgs(wrap: CommandModule, args: string[]): Record<string, unknown> | null {
  const dd = args.indexOf('--');
  if (dd < 0 || dd === args.length - 1) return null;
  const options = plainOptions(wrap, args, dd);
  return options && { ...options, command: [], '--': args.slice(dd + 1) };
}

export function reportError(raw: unknown, io: CliIO, json: boolean): number {
  const e = asDiskFull(raw, io.cwd);
  const debug = io.env.AGENTSNAP_DEBUG === '1';
  let err: AgentsnapError;
  if (isAgentsnapError(e)) err = e;
  else {
    const message = e instanceof Error ? e.message : String(e);
    err = new AgentsnapError('Internal', 'internal', `internal error: ${message}`, {
      hint: 'This is a bug in agentsnap. Run again with AGENTSNAP_DEBUG=1 and report the output.',
      cause: e,
    });
  }
  if (json) {
    io.stdout.write(`${JSON.stringify({ error: err.toJSON() }, null, 2)}\n`);
  } else {
    // A message can name a file or a session, or quote a tool's output: escaped as all recorded text is.
    io.stderr.write(`agentsnap: ${printableText(err.message)}\n`);
    if (err.hint) io.stderr.write(`  ${printableText(err.hint)}\n`);
  }
  if (debug) {
    io.stderr.write(`${(e instanceof Error && e.stack) || String(e)}\n`);
    if (isAgentsnapError(e) && Object.keys(e.data).length > 0) io.stderr.write(`${JSON.stringify(e.data, null, 2)}\n`);
  }
  return err.exitCode;
}

export async function main(): Promise<void> {
  // A reader that stopped early (`agentsnap show 3 | head`) is no failure: what is left to print is dropped and the
  // command ends as it would have (never killed halfway through an operation by a closed pipe).
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code !== 'EPIPE') throw e;
    });
  }
  const code = await run(process.argv.slice(2), {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    cwd: process.cwd(),
    // A getter: touching process.stdin creates a handle, and wrap's agent must get the terminal untouched.
    get stdin() {
      return process.stdin;
    },
  });
  process.exitCode = code;
}
