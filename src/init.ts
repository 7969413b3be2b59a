// `agentsnap init <agent>`: hooks that record every tool call without a
// wrapper, written into the agent's personal, project-local settings that are
// not committed (Claude Code: .claude/settings.local.json), merged with what
// is there and idempotent; `init --remove` takes exactly those entries out.
import fs from 'node:fs';
import path from 'node:path';
import { errors } from './errors.js';
import { openRepo } from './repo.js';

export const INIT_AGENTS = ['claude'] as const;
export type InitAgent = (typeof INIT_AGENTS)[number];

const CLAUDE_EVENTS = ['PreToolUse', 'PostToolUse', 'PostToolUseFailure', 'SessionEnd'];

/** The hook command init writes: the stable entry point on PATH, silent where agentsnap is not installed. */
export function initHookCommand(agent: InitAgent, event: string): string {
  return `command -v agentsnap >/dev/null 2>&1 && agentsnap hook ${agent} ${event} || true`;
}

function isOurs(command: unknown, agent: string): boolean {
  return typeof command === 'string' && command.includes('agentsnap') && command.includes(` hook ${agent} `);
}

type HookEntry = { matcher?: string; hooks?: { type?: string; command?: string }[] };

export interface InitResult {
  agent: InitAgent;
  file: string;
  changed: boolean;
  removed: boolean;
  /** Set when init added the settings file to .git/info/exclude (it was not ignored). */
  excluded: boolean;
}

export interface InitOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  agent: string;
  remove?: boolean;
}

export async function init(opts: InitOptions): Promise<InitResult> {
  if (!(INIT_AGENTS as readonly string[]).includes(opts.agent)) {
    throw errors.invalidArgument(`init supports ${INIT_AGENTS.join(', ')}, not ${JSON.stringify(opts.agent)}.`, {
      hint: 'For other agents use `agentsnap wrap -- <agent>`.',
      data: { agent: opts.agent },
    });
  }
  const agent = opts.agent as InitAgent;
  const repo = await openRepo(opts.cwd, { env: opts.env });
  const rel = '.claude/settings.local.json';
  const file = path.join(repo.worktree, rel);
  let settings: Record<string, unknown> = {};
  let before = '';
  try {
    before = fs.readFileSync(file, 'utf8');
    const parsed = JSON.parse(before) as unknown;
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not a JSON object');
    settings = parsed as Record<string, unknown>;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw errors.invalidConfig(`${rel} is not a JSON object (${(e as Error).message}); agentsnap leaves it as it is.`, {
        hint: 'Fix the file, then run init again.',
        data: { file },
      });
    }
  }
  const hooks = { ...((settings.hooks && typeof settings.hooks === 'object' ? settings.hooks : {}) as Record<string, HookEntry[]>) };
  // Take our entries out (of every event), then add them back unless removing: the same result however often it runs.
  for (const [ev, entries] of Object.entries(hooks)) {
    if (!Array.isArray(entries)) continue;
    const kept = entries
      .map((en) => ({ ...en, hooks: (en.hooks ?? []).filter((h) => !isOurs(h.command, agent)) }))
      .filter((en, i) => en.hooks.length > 0 || (entries[i]?.hooks ?? []).length === 0);
    if (kept.length > 0) hooks[ev] = kept;
    else delete hooks[ev];
  }
  if (!opts.remove) {
    for (const ev of CLAUDE_EVENTS) {
      const entry = { matcher: '*', hooks: [{ type: 'command', command: initHookCommand(agent, ev) }] };
      hooks[ev] = [...(hooks[ev] ?? []), ev === 'SessionEnd' ? { hooks: entry.hooks } : entry];
    }
  }
  const next: Record<string, unknown> = { ...settings, hooks };
  if (Object.keys(hooks).length === 0) delete next.hooks;
  const text = `${JSON.stringify(next, null, 2)}\n`;
  const changed = text !== before && !(opts.remove && before === '');
  let excluded = false;
  if (changed) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const tmp = `${file}.tmp-${process.pid}`;
    fs.writeFileSync(tmp, text);
    fs.renameSync(tmp, file);
    if (!opts.remove) excluded = await excludeLocally(repo, rel);
  }
  return { agent, file, changed, removed: !!opts.remove, excluded };
}

/** Makes sure the personal settings file is never committed: .git/info/exclude when nothing ignores it yet. */
async function excludeLocally(repo: Awaited<ReturnType<typeof openRepo>>, rel: string): Promise<boolean> {
  const res = await repo.git(['check-ignore', '-q', '--', rel], { okCodes: [1] });
  if (res.code === 0) return false;
  const tracked = await repo.git(['ls-files', '--error-unmatch', '--', rel], { okCodes: [1] });
  if (tracked.code === 0) return false; // already committed: ignoring would not help, and we never touch the index
  const exclude = path.join(repo.commonDir, 'info', 'exclude');
  fs.mkdirSync(path.dirname(exclude), { recursive: true });
  let text = '';
  try {
    text = fs.readFileSync(exclude, 'utf8');
  } catch {
    /* new file */
  }
  fs.writeFileSync(exclude, `${text}${text && !text.endsWith('\n') ? '\n' : ''}/${rel}\n`);
  return true;
}
