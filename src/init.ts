// `agentsnap init <agent>`: hooks that record every tool call without a
// wrapper, written into the agent's project-local settings, kept out of
// commits, merged with what is there and idempotent; `init --remove` takes
// exactly those entries out again.
// - Claude Code: .claude/settings.local.json (personal by design), plus the
//   in-agent command /agentsnap-undo (.claude/commands/agentsnap-undo.md).
// - Codex CLI: .codex/hooks.json (read for trusted projects; Codex asks the
//   user to review new hooks once before it runs them).
// - Gemini CLI: .gemini/settings.json, its only project settings file; many
//   projects commit it, so init refuses when it is tracked.
import fs from 'node:fs';
import path from 'node:path';
import { errors } from './errors.js';
import { openRepo, type Repo } from './repo.js';
import { CLAUDE_TOOL_MATCHER, parseJsonc, withHooks, withoutHooks, type HookGroup } from './agent-hooks.js';
import { HOOK_CLIENT } from './server.js';

export const INIT_AGENTS = ['claude', 'codex', 'gemini'] as const;
export type InitAgent = (typeof INIT_AGENTS)[number];

interface AgentLayout {
  /** The settings file holding the hooks, from the top of the worktree. */
  file: string;
  /** The hook events, and whether each takes a tool matcher. */
  events: [string, boolean][];
  /** Said after writing the hooks (what the user still has to do, if anything). */
  note?: string;
}

const LAYOUTS: Record<InitAgent, AgentLayout> = {
  claude: {
    file: '.claude/settings.local.json',
    events: [
      ['PreToolUse', true],
      ['PostToolUse', true],
      ['PostToolUseFailure', true],
      ['SessionEnd', false],
    ],
  },
  codex: {
    file: '.codex/hooks.json',
    events: [
      ['PreToolUse', true],
      ['PostToolUse', true],
      ['SessionEnd', false],
    ],
    note: 'Codex CLI reads .codex/ only in projects you trust, and runs new hooks only after you review them once: type /hooks in Codex and trust the agentsnap hooks.',
  },
  gemini: {
    file: '.gemini/settings.json',
    events: [
      ['BeforeTool', true],
      ['AfterTool', true],
      ['SessionEnd', false],
    ],
    note: 'Gemini CLI runs project hooks only in folders you trust, and warns once about new ones.',
  },
};

/** The in-agent undo command for Claude Code (issue 4): `/agentsnap-undo [N] [--dry-run] [--force]`. */
export const CLAUDE_UNDO_COMMAND = '.claude/commands/agentsnap-undo.md';
const UNDO_MARKER = '<!-- written by `agentsnap init claude`; removed by `agentsnap init --remove claude` -->';
const CLAUDE_UNDO_TEXT = `---
description: Undo tool calls with agentsnap (puts the files back as they were before step N; default the last step)
argument-hint: "[N] [--dry-run] [--force]"
allowed-tools: Bash(agentsnap undo:*), Bash(agentsnap log:*)
---
${UNDO_MARKER}
Run this exact command with the Bash tool, from the project directory, and nothing else before it:

agentsnap undo $ARGUMENTS

Then report to the user in a few lines what it printed: which files were restored, and any warning or
refusal word for word. If it refused because of changes made outside tool calls or an unprotected step,
say so and that \`/agentsnap-undo <N> --force\` would override it; do not run it with --force yourself.
The files are now as they were before that step: do not redo the undone work unless the user asks.
`;

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

/** The executable file `name` resolves to on `env.PATH`, as `command -v` finds it; null when none. */
export function onPath(name: string, env: NodeJS.ProcessEnv): string | null {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const file = path.join(dir, name);
    try {
      fs.accessSync(file, fs.constants.X_OK);
      if (fs.statSync(file).isFile()) return file;
    } catch {
      /* not here */
    }
  }
  return null;
}

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
}

export interface InitOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  agent: string;
  remove?: boolean;
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
    throw errors.invalidConfig(`${rel} is not a JSON object; agentsnap leaves it as it is.`, { hint: 'Fix the file, then run init again.', data: { file } });
  }
  return { settings: parsed as Record<string, unknown>, before };
}

function writeAtomic(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
}

async function isTracked(repo: Repo, rel: string): Promise<boolean> {
  return (await repo.git(['ls-files', '--error-unmatch', '--', rel], { okCodes: [1] })).code === 0;
}

export async function init(opts: InitOptions): Promise<InitResult> {
  if (!(INIT_AGENTS as readonly string[]).includes(opts.agent)) {
    throw errors.invalidArgument(`init supports ${INIT_AGENTS.join(', ')}, not ${JSON.stringify(opts.agent)}.`, {
      hint: 'For other agents use `agentsnap wrap -- <agent>`.',
      data: { agent: opts.agent },
    });
  }
  const agent = opts.agent as InitAgent;
  const layout = LAYOUTS[agent];
  const repo = await openRepo(opts.cwd, { env: opts.env });
  const rel = layout.file;
  const file = path.join(repo.worktree, rel);
  if (agent !== 'claude' && !opts.remove && (await isTracked(repo, rel))) {
    throw errors.refused(`${rel} is committed in this repository: agentsnap's hooks in it would reach everyone who clones it.`, {
      hint: `${agent === 'gemini' ? 'Gemini CLI has' : 'Codex CLI has'} no other project settings file; run the agent as \`agentsnap wrap -- ${agent}\` instead.`,
      data: { file },
    });
  }
  const { settings, before } = readSettings(file, rel);
  // Take our entries out, then add them back unless removing: the same result however often it runs.
  let next = withoutHooks(settings, agent);
  // Hooks that call a command the agent cannot find record nothing, in silence: without agentsnap-hook on
  // PATH they name this install's files (a later global install and `init` again give the PATH form back).
  const absolute = opts.remove || onPath('agentsnap-hook', opts.env) ? null : thisInstall();
  if (!opts.remove) {
    const add: Record<string, HookGroup[]> = {};
    for (const [ev, matcher] of layout.events) {
      const hooks = [{ type: 'command', command: initHookCommand(agent, ev, absolute) }];
      // Claude Code's read-only tools are journaled from its transcript, not hooked (see CLAUDE_TOOL_MATCHER).
      add[ev] = [matcher ? { matcher: agent === 'claude' ? CLAUDE_TOOL_MATCHER : '*', hooks } : { hooks }];
    }
    next = withHooks(next, add);
  }
  const text = `${JSON.stringify(next, null, 2)}\n`;
  const empty = Object.keys(next).length === 0;
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
  if (agent === 'claude') extra.push(await undoCommand(repo, !!opts.remove));
  return { agent, file, changed, removed: !!opts.remove, excluded, extra, note: opts.remove ? null : layout.note ?? null, absolute };
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

/** Writes (or removes) Claude Code's /agentsnap-undo command; a file of the same name that is not ours is left alone. */
async function undoCommand(repo: Repo, remove: boolean): Promise<InitResult['extra'][number]> {
  const file = path.join(repo.worktree, CLAUDE_UNDO_COMMAND);
  let current: string | null = null;
  try {
    current = fs.readFileSync(file, 'utf8');
  } catch {
    /* none yet */
  }
  const ours = current !== null && current.includes(UNDO_MARKER);
  if (current !== null && !ours) {
    return { file, changed: false, note: `${CLAUDE_UNDO_COMMAND} exists and is not agentsnap's: left as it is` };
  }
  if (remove) {
    if (!ours) return { file, changed: false };
    fs.rmSync(file, { force: true });
    removeEmptyDir(path.dirname(file), repo.worktree);
    unexcludeLocally(repo, CLAUDE_UNDO_COMMAND);
    return { file, changed: true };
  }
  if (current === CLAUDE_UNDO_TEXT) return { file, changed: false };
  writeAtomic(file, CLAUDE_UNDO_TEXT);
  await excludeLocally(repo, CLAUDE_UNDO_COMMAND);
  return { file, changed: true };
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
  } catch {
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
