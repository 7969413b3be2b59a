// `agentsnap init <agent>`: hooks that record every tool call without a
// wrapper, written into the agent's project-local settings, kept out of
// commits, merged with what is there and idempotent; `init --remove` takes
// exactly those entries out again. Agent-neutral: where each agent's settings
// live, its events and matcher, and any file beside them come from its
// adapter's `init` layout (agents/*.ts).
import fs from 'node:fs';
import path from 'node:path';
import { errors } from '../base/errors.js';
import { openRepo, type Repo } from '../git/repo.js';
import { ADAPTERS, INIT_AGENTS } from '../agents/registry.js';
import type { Agent, HookGroup, InitLayout } from '../agents/adapter.js';
import { parseJsonc, withHooks, withoutHooks } from '../agents/settings-file.js';

/** Claude Code's in-agent undo command, written beside its settings. */
export { CLAUDE_UNDO_COMMAND } from '../agents/claude.js';
import { HOOK_CLIENT } from '../server/server.js';
import { LOG_ALL_ALIAS } from '../session/refs.js';
import { unsetConfigValue } from '../worktrees/gc.js';

/** The agents with project hooks (their adapter's `init` layout). */
export { INIT_AGENTS } from '../agents/registry.js';
export type InitAgent = Agent;

/**
 * The hook command init writes: the stable entry point on PATH, silent where
 * agentsnap is not installed. `agentsnap-hook` (a POSIX-sh client) hands the
 * call to the worktree's warm server, or runs `agentsnap hook` without one.
 */
export function initHookCommand(agent: InitAgent, event: string, client: HookClient | null = null): string {
  if (client) {
    // No agentsnap-hook on PATH (npx, a clone): this install by its absolute paths, the Node fallback included
    // (the client's own fallback, `agentsnap hook`, would need agentsnap on PATH too).
    return `${[client.hook, '--exec', client.node, client.js].map(quoteWord).join(' ')} ${agent} ${event} || true`;
  }
  return `command -v agentsnap-hook >/dev/null 2>&1 && agentsnap-hook ${agent} ${event} || true`;
}

/** This install's hook client, with the node and CLI its fallback runs. */
export interface HookClient {
  hook: string;
  node: string;
  js: string;
}

export function thisInstall(): HookClient {
  return { hook: HOOK_CLIENT, node: process.execPath, js: path.join(path.dirname(HOOK_CLIENT), 'agentsnap.js') };
}

import { onPath } from '../base/shell.js';

export { onPath };

function quoteWord(word: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

export interface InitResult {
  agent: InitAgent;
  file: string;
  changed: boolean;
  removed: boolean;
  /** Set when init added a file it wrote to .git/info/exclude (nothing ignored it). */
  excluded: boolean;
  /** Other files written or removed (Claude Code's /agentsnap-undo command). */
  extra: { file: string; changed: boolean; note?: string }[];
  /** What the user still has to do in the agent, if anything. */
  note: string | null;
  /** Set when `agentsnap-hook` is not on PATH: the hooks run this install by its absolute path. */
  absolute: HookClient | null;
  /** The agent's MCP configuration file, when `mcp` (or `remove`) touched it or was asked to. */
  mcp: { file: string; changed: boolean; excluded: boolean; note: string | null } | null;
  /**
   * `git log-all` (LOG_ALL_ALIAS) in this repository's config: `set` by this init, `unchanged` (already there),
   * `foreign` (an alias of that name of the user's, left alone), `removed` by this `--remove`, `kept` (another
   * agent's init still there), null (nothing to do).
   */
  logAlias: 'set' | 'unchanged' | 'foreign' | 'removed' | 'kept' | null;
}

export interface InitOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  agent: string;
  remove?: boolean;
  /** Also declare agentsnap's MCP server (`agentsnap mcp`) in the agent's project MCP configuration. `remove` takes it out whether or not this is set. */
  mcp?: boolean;
}

function readSettings(file: string, rel: string): { settings: Record<string, unknown>; before: string } {
  let before = '';
  try {
    before = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { settings: {}, before };
    throw errors.unreadableFile(`cannot read ${rel}: ${(e as Error).message}`, { data: { file } });
  }
  if (!before.trim()) return { settings: {}, before };
  let parsed: unknown;
  try {
    parsed = JSON.parse(before);
  } catch (e) {
    let jsonc = false;
    try {
      jsonc = !!parseJsonc(before);
    } catch {
      /* not JSON with comments either */
    }
    if (jsonc) {
      throw errors.refused(`${rel} has comments, which agentsnap would drop when it adds its hooks; it is left as it is.`, {
        hint: 'Remove the comments (or add the hooks by hand: see `agentsnap init --help`), then run init again.',
        data: { file },
      });
    }
    throw errors.invalidConfig(`${rel} is not valid JSON (${(e as Error).message}); agentsnap leaves it as it is.`, {
      hint: 'Fix the file, then run init again.',
      data: { file },
    });
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw errors.invalidConfig(`${rel} is not a JSON object; agentsnap leaves it as it is.`, {
      hint: 'Fix the file, then run init again.',
      data: { file },
    });
  }
  return { settings: parsed as Record<string, unknown>, before };
}

function writeAtomic(file: string, text: string, mode?: number): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, text, mode === undefined ? {} : { mode });
  if (mode !== undefined) fs.chmodSync(tmp, mode); // whatever the umask
  fs.renameSync(tmp, file);
}

async function isTracked(repo: Repo, rel: string): Promise<boolean> {
  return (await repo.git(['ls-files', '--error-unmatch', '--', rel], { okCodes: [1] })).code === 0;
}

export async function init(opts: InitOptions): Promise<InitResult> {
  if (!INIT_AGENTS.includes(opts.agent)) {
    throw errors.invalidArgument(`init supports ${INIT_AGENTS.join(', ')}, not ${JSON.stringify(opts.agent)}.`, {
      hint: 'For other agents use `agentsnap wrap -- <agent>`.',
      data: { agent: opts.agent },
    });
  }
  const agent = opts.agent as InitAgent;
  const layout = ADAPTERS[agent]?.init as InitLayout;
  // Never through a warm server's opener: `init` is the CLI's own, below the API (api/open.ts is above this layer).
  const repo = await openRepo(opts.cwd ?? process.cwd(), { ...(opts.env ? { env: opts.env } : {}), shadow: 'create' });
  const rel = layout.file;
  const file = path.join(repo.worktree, rel);
  if (!layout.personal && !opts.remove && (await isTracked(repo, rel))) {
    throw errors.refused(`${rel} is committed in this repository: agentsnap's hooks in it would reach everyone who clones it.`, {
      ...(layout.trackedHint ? { hint: layout.trackedHint } : {}),
      data: { file },
    });
  }
  if (layout.hookProgram) return initHookProgram(repo, agent, layout, layout.hookProgram, opts);
  // Removing: the MCP entry first, so a settings file it shares with the hooks (Gemini's) is left empty, and goes, after them.
  const mcpBefore = opts.remove && layout.mcp ? await mcpEntry(repo, layout.mcp, { remove: true, absolute: null }) : null;
  // Hooks as executable files (InitLayout.scripts): no settings file to edit.
  if (layout.scripts) return initScripts(repo, agent, layout, layout.scripts, opts, mcpBefore);
  const { settings, before } = readSettings(file, rel);
  // Take our entries out, then add them back unless removing: the same result however often it runs.
  let next = withoutHooks(settings, agent);
  // Hooks that call a command the agent cannot find record nothing, in silence: without agentsnap-hook on
  // PATH they name this install's files (a later global install and `init` again give the PATH form back).
  const absolute = opts.remove || onPath('agentsnap-hook', opts.env) ? null : thisInstall();
  if (opts.mcp && !opts.remove) {
    if (!layout.mcp) throw errors.invalidArgument(`agentsnap knows no MCP configuration of ${agent}.`);
    // Whatever would refuse the MCP entry (a committed file, comments, another server of that name) refuses before any write.
    await mcpEntry(repo, layout.mcp, { remove: false, absolute, dryRun: true });
  }
  if (!opts.remove) {
    const add: Record<string, HookGroup[]> = {};
    for (const [ev, matcher] of layout.events) {
      const hooks = [{ type: 'command', command: initHookCommand(agent, ev, absolute) }];
      add[ev] = [matcher ? { matcher: layout.matcher, hooks } : { hooks }];
    }
    next = withHooks(next, add);
  }
  const text = `${JSON.stringify(next, null, 2)}\n`;
  const empty = Object.keys(next).every((k) => layout.agentKeys?.includes(k));
  const changed = text !== before && !(opts.remove && before === '');
  let excluded = false;
  if (changed) {
    if (opts.remove && empty) {
      fs.rmSync(file, { force: true }); // the file was only ours
      removeEmptyDir(path.dirname(file), repo.worktree);
      unexcludeLocally(repo, rel);
    } else writeAtomic(file, text);
    if (!opts.remove) excluded = await excludeLocally(repo, rel);
  }
  const extra: InitResult['extra'] = [];
  for (const f of layout.extraFiles ?? []) extra.push(await extraFile(repo, f, !!opts.remove));
  return finishInit(repo, agent, layout, opts, { file, changed, excluded, extra, absolute, mcpBefore });
}

/** The end every kind of init layout shares: the MCP entry, init's `git log-all` alias, the result. */
async function finishInit(
  repo: Repo,
  agent: InitAgent,
  layout: InitLayout,
  opts: InitOptions,
  done: Pick<InitResult, 'file' | 'changed' | 'excluded' | 'extra' | 'absolute'> & { mcpBefore: InitResult['mcp'] },
): Promise<InitResult> {
  let mcp = done.mcpBefore;
  if (opts.mcp && !opts.remove && layout.mcp) mcp = await mcpEntry(repo, layout.mcp, { remove: false, absolute: done.absolute });
  const logAlias = opts.remove ? await removeLogAlias(repo, agent) : await setLogAlias(repo);
  const { mcpBefore: _, ...result } = done;
  return { agent, ...result, removed: !!opts.remove, note: opts.remove ? null : (layout.note ?? null), mcp, logAlias };
}

async function logAliasValue(repo: Repo): Promise<string | null> {
  const res = await repo.git(['config', '--local', '--get', LOG_ALL_ALIAS.key], { okCodes: [1] });
  return res.code === 0 ? res.stdout.toString('utf8').replace(/\n$/, '') : null;
}

/** `git log-all`: `git log --all` without agentsnap's snapshots, the one command the README shows for history views. */
async function setLogAlias(repo: Repo): Promise<InitResult['logAlias']> {
  const current = await logAliasValue(repo);
  if (current === LOG_ALL_ALIAS.value) return 'unchanged';
  if (current !== null) return 'foreign';
  await repo.git(['config', '--local', LOG_ALL_ALIAS.key, LOG_ALL_ALIAS.value]);
  return 'set';
}

/** Takes init's alias out once no agent's init is left (one alias serves them all); an alias of the user's stays. */
async function removeLogAlias(repo: Repo, agent: InitAgent): Promise<InitResult['logAlias']> {
  if ((await logAliasValue(repo)) !== LOG_ALL_ALIAS.value) return null;
  if (INIT_AGENTS.some((other) => other !== agent && stillInitialised(repo, other as InitAgent))) return 'kept';
  await unsetConfigValue(repo, LOG_ALL_ALIAS.key, LOG_ALL_ALIAS.value);
  return 'removed';
}

/** Whether the agent's init settings file holds agentsnap hooks (an unreadable one counts: the alias then stays). */
export function stillInitialised(repo: Repo, agent: InitAgent): boolean {
  const layout = ADAPTERS[agent]?.init;
  if (!layout) return false;
  const holdsMarker = (file: string, marker: string) => {
    try {
      return fs.readFileSync(path.join(repo.worktree, file), 'utf8').includes(marker);
    } catch (e) {
      return (e as NodeJS.ErrnoException).code !== 'ENOENT'; // unreadable counts, as below
    }
  };
  if (layout.hookProgram) return holdsMarker(layout.file, layout.hookProgram.marker);
  const scripts = layout.scripts;
  if (scripts) return layout.events.some(([ev]) => holdsMarker(scripts.file(ev), scripts.marker));
  try {
    const { settings } = readSettings(path.join(repo.worktree, layout.file), layout.file);
    return JSON.stringify(withoutHooks(settings, agent)) !== JSON.stringify(settings);
  } catch {
    return true; // unreadable or not JSON: counted as initialised, so the alias stays (the safe side)
  }
}

/**
 * init for hooks that are a program of their own (the layout's `hookProgram`, OpenCode's plugin): the file written
 * whole, a file of that name that is not agentsnap's refused; `--remove` takes it out with what the agent created
 * because of it, except what was there before init.
 */
async function initHookProgram(
  repo: Repo,
  agent: InitAgent,
  layout: InitLayout,
  program: NonNullable<InitLayout['hookProgram']>,
  opts: InitOptions,
): Promise<InitResult> {
  const rel = layout.file;
  const file = path.join(repo.worktree, rel);
  const current = readIfPresent(file, rel);
  const ours = current !== null && current.includes(program.marker);
  if (current !== null && !ours) {
    throw errors.refused(`${rel} exists and is not agentsnap's; it is left as it is.`, {
      hint: 'Rename or remove it, then run init again.',
      data: { file },
    });
  }
  const result = (changed: boolean, excluded: boolean, absolute: HookClient | null, mcp: InitResult['mcp']): InitResult => ({
    agent,
    file,
    changed,
    removed: !!opts.remove,
    excluded,
    extra: [],
    note: opts.remove ? null : (layout.note ?? null),
    absolute,
    mcp,
    logAlias,
  });
  let logAlias: InitResult['logAlias'] = null;
  if (opts.remove) {
    const mcp = layout.mcp ? await mcpEntry(repo, layout.mcp, { remove: true, absolute: null }) : null;
    if (!ours) return result(false, false, null, mcp);
    const kept = program.kept(current as string);
    fs.rmSync(file, { force: true });
    unexcludeLocally(repo, rel);
    for (const f of program.agentFiles) {
      if (kept.includes(f)) continue;
      fs.rmSync(path.join(repo.worktree, f), { recursive: true, force: true });
      unexcludeLocally(repo, f);
    }
    removeEmptyDir(path.dirname(file), repo.worktree);
    logAlias = await removeLogAlias(repo, agent);
    return result(true, false, null, mcp);
  }
  const absolute = onPath('agentsnap-hook', opts.env) ? null : thisInstall();
  if (opts.mcp) {
    if (!layout.mcp) throw errors.invalidArgument(`agentsnap knows no MCP configuration of ${agent}.`);
    await mcpEntry(repo, layout.mcp, { remove: false, absolute, dryRun: true });
  }
  const kept = ours
    ? program.kept(current as string)
    : program.agentFiles.filter((f) => fs.lstatSync(path.join(repo.worktree, f), { throwIfNoEntry: false }) !== undefined);
  const text = program.text((ev) => initHookCommand(agent, ev, absolute), kept);
  let excluded = false;
  if (text !== current) {
    writeAtomic(file, text);
    excluded = await excludeLocally(repo, rel);
    // What the agent will create beside it stays out of commits too (each line goes again with --remove).
    for (const f of program.agentFiles) if (!kept.includes(f)) await excludeLocally(repo, f);
  }
  const mcp = opts.mcp && layout.mcp ? await mcpEntry(repo, layout.mcp, { remove: false, absolute }) : null;
  return result(text !== current, excluded, absolute, mcp);
}

/** The command an agent's MCP configuration starts agentsnap's server with: `agentsnap mcp` from PATH, else this install by its paths. */
function mcpCommand(absolute: HookClient | null, env: NodeJS.ProcessEnv): { command: string; args: string[] } {
  if (!absolute && onPath('agentsnap', env)) return { command: 'agentsnap', args: ['mcp'] };
  const install = absolute ?? thisInstall();
  return { command: install.node, args: [install.js, 'mcp'] };
}

/** A project file's text, or null when there is none; an unreadable one is UnreadableFile (exit 1). */
function readIfPresent(file: string, rel: string): string | null {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw errors.unreadableFile(`cannot read ${rel}: ${(e as Error).message}`, { data: { file } });
  }
}

/** Adds (or takes out) agentsnap's MCP server in the agent's project MCP file, through its adapter; kept out of commits like the hooks. */
async function mcpEntry(
  repo: Repo,
  layout: NonNullable<InitLayout['mcp']>,
  opts: { remove: boolean; absolute: HookClient | null; dryRun?: boolean },
): Promise<NonNullable<InitResult['mcp']>> {
  const rel = layout.file;
  const file = path.join(repo.worktree, rel);
  const current = readIfPresent(file, rel);
  if (opts.remove) {
    if (current === null) return { file, changed: false, excluded: false, note: null };
    const next = layout.remove(current);
    if (next === current) return { file, changed: false, excluded: false, note: null };
    if (next === null) {
      fs.rmSync(file, { force: true });
      removeEmptyDir(path.dirname(file), repo.worktree);
      unexcludeLocally(repo, rel);
    } else writeAtomic(file, next);
    return { file, changed: true, excluded: false, note: null };
  }
  if (!layout.personal && (await isTracked(repo, rel))) {
    throw errors.refused(`${rel} is committed in this repository: agentsnap's MCP server in it would reach everyone who clones it.`, {
      ...(layout.trackedHint ? { hint: layout.trackedHint } : {}),
      data: { file },
    });
  }
  const next = layout.add(current, mcpCommand(opts.absolute, repo.callerEnv));
  const changed = next !== current;
  if (opts.dryRun) return { file, changed, excluded: false, note: null };
  if (changed) writeAtomic(file, next);
  const excluded = changed ? await excludeLocally(repo, rel) : false;
  return { file, changed, excluded, note: layout.note ?? null };
}

/** Removes `dir` and the directories above it that this leaves empty, up to (not including) `top`. */
function removeEmptyDir(dir: string, top: string): void {
  for (let d = path.resolve(dir); d !== path.resolve(top) && d.startsWith(path.resolve(top) + path.sep); d = path.dirname(d)) {
    try {
      fs.rmdirSync(d);
    } catch {
      return; /* not empty: the user's own files stay */
    }
  }
}

/** `init` of an agent whose hooks are executable files (InitLayout.scripts), one per event; then its MCP entry as for the others. */
async function initScripts(
  repo: Repo,
  agent: InitAgent,
  layout: InitLayout,
  scripts: NonNullable<InitLayout['scripts']>,
  opts: InitOptions,
  mcpBefore: InitResult['mcp'],
): Promise<InitResult> {
  const absolute = opts.remove || onPath('agentsnap-hook', opts.env) ? null : thisInstall();
  if (opts.mcp && !opts.remove) {
    if (!layout.mcp) {
      throw errors.invalidArgument(`${ADAPTERS[agent]?.displayName ?? agent} has no project MCP configuration for agentsnap to write.`, {
        hint: `Run it as \`agentsnap wrap --mcp -- ${agent}\` (the server for that run only), or declare \`agentsnap mcp\` in its own MCP settings.`,
      });
    }
    await mcpEntry(repo, layout.mcp, { remove: false, absolute, dryRun: true });
  }
  const extra: InitResult['extra'] = [];
  let changed = false;
  let excluded = false;
  for (const [ev] of layout.events) {
    const f = { file: scripts.file(ev), text: scripts.text(initHookCommand(agent, ev, absolute)), marker: scripts.marker, mode: 0o755 };
    const res = await extraFile(repo, f, !!opts.remove);
    changed ||= res.changed;
    excluded ||= !!res.excluded;
    if (res.note) extra.push({ file: res.file, changed: false, note: res.note });
  }
  return finishInit(repo, agent, layout, opts, {
    file: path.join(repo.worktree, layout.file),
    changed,
    excluded,
    extra,
    absolute,
    mcpBefore,
  });
}

/** Writes (or removes) a file of the layout's (Claude Code's /agentsnap-undo command); a file of the same name that is not ours is left alone. */
async function extraFile(
  repo: Repo,
  f: NonNullable<InitLayout['extraFiles']>[number] & { mode?: number },
  remove: boolean,
): Promise<InitResult['extra'][number] & { excluded?: boolean }> {
  const file = path.join(repo.worktree, f.file);
  let current: string | null = null;
  try {
    current = fs.readFileSync(file, 'utf8');
  } catch {
    /* none yet */
  }
  const ours = current !== null && current.includes(f.marker);
  if (current !== null && !ours) {
    return { file, changed: false, note: `${f.file} exists and is not agentsnap's: left as it is` };
  }
  if (remove) {
    if (!ours) return { file, changed: false };
    fs.rmSync(file, { force: true });
    removeEmptyDir(path.dirname(file), repo.worktree);
    unexcludeLocally(repo, f.file);
    return { file, changed: true };
  }
  if (current === f.text) return { file, changed: false };
  writeAtomic(file, f.text, f.mode);
  const excluded = await excludeLocally(repo, f.file);
  return { file, changed: true, excluded };
}

/** Makes sure a personal file is never committed: .git/info/exclude when nothing ignores it yet. */
async function excludeLocally(repo: Repo, rel: string): Promise<boolean> {
  const res = await repo.git(['check-ignore', '-q', '--', rel], { okCodes: [1] });
  if (res.code === 0) return false;
  if (await isTracked(repo, rel)) return false; // already committed: ignoring would not help, and we never touch the index
  const exclude = path.join(repo.commonDir, 'info', 'exclude');
  fs.mkdirSync(path.dirname(exclude), { recursive: true });
  let text = '';
  try {
    text = fs.readFileSync(exclude, 'utf8');
  } catch {
    /* new file */
  }
  fs.writeFileSync(exclude, `${text}${text && !text.endsWith('\n') ? '\n' : ''}${EXCLUDE_MARKER}\n/${rel}\n`);
  return true;
}

const EXCLUDE_MARKER = '# added by `agentsnap init` (removed by `agentsnap init --remove`)';

/**
 * Takes out the info/exclude line excludeLocally added for `rel` (and its marker line), once the file it kept out
 * of commits is gone. A file that stays (it holds the user's own settings) stays excluded: dropping the line then
 * would put it up for commit.
 */
function unexcludeLocally(repo: Repo, rel: string): void {
  const exclude = path.join(repo.commonDir, 'info', 'exclude');
  let text: string;
  try {
    text = fs.readFileSync(exclude, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e; // no exclude file: nothing to remove from it
    return;
  }
  const lines = text.split('\n');
  const out: string[] = [];
  for (const line of lines) {
    if (line === `/${rel}`) {
      if (out[out.length - 1] === EXCLUDE_MARKER) out.pop();
      continue;
    }
    out.push(line);
  }
  if (out.length !== lines.length) fs.writeFileSync(exclude, out.join('\n'));
}
