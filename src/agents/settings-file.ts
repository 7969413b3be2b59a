// The agents' JSON settings files, as agentsnap edits them: read with
// comments and trailing commas, hook arrays appended to and taken out again
// (only agentsnap's own entries, recognised by their command). Shared by the
// adapters and `init`.
import type { HookGroup } from './adapter.js';

export type { HookGroup } from './adapter.js';

/** Reads JSON with comments and trailing commas (Gemini CLI's settings files allow both). */
export function parseJsonc(text: string): unknown {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      i = end === -1 ? text.length : end + 2;
    } else {
      out += c;
      i++;
    }
  }
  return JSON.parse(out.replace(/,(\s*[}\]])/g, '$1'));
}

/** Whether a hook command is one of agentsnap's for `agent` (written by wrap or init). */
export function isAgentsnapHook(command: unknown, agent: string): boolean {
  if (typeof command !== 'string' || !command.includes('agentsnap')) return false;
  // `agentsnap hook <agent> …` (Node), or `agentsnap-hook [--run DIR] [--exec NODE JS] <agent> …` (the shell client).
  return command.includes(` hook ${agent} `) || new RegExp(`agentsnap-hook'?(?: .*)? ${agent} `).test(command);
}

/** `settings` with `add` appended to its hook arrays (a new object; `settings` is not changed). */
export function withHooks(settings: Record<string, unknown>, add: Record<string, HookGroup[]>): Record<string, unknown> {
  const hooks = { ...((settings.hooks && typeof settings.hooks === 'object' && !Array.isArray(settings.hooks) ? settings.hooks : {}) as Record<string, unknown>) };
  for (const [ev, groups] of Object.entries(add)) hooks[ev] = [...(Array.isArray(hooks[ev]) ? (hooks[ev] as unknown[]) : []), ...groups];
  return { ...settings, hooks };
}

/** `settings` without agentsnap's hooks for `agent`; events and groups left empty by that are dropped. */
export function withoutHooks(settings: Record<string, unknown>, agent: string): Record<string, unknown> {
  if (!settings.hooks || typeof settings.hooks !== 'object' || Array.isArray(settings.hooks)) return settings;
  const hooks: Record<string, unknown> = {};
  for (const [ev, groups] of Object.entries(settings.hooks as Record<string, unknown>)) {
    if (!Array.isArray(groups)) {
      hooks[ev] = groups;
      continue;
    }
    const kept = (groups as HookGroup[])
      .map((g) => (g && Array.isArray(g.hooks) ? { ...g, hooks: g.hooks.filter((h) => !isAgentsnapHook(h?.command, agent)) } : g))
      .filter((g, i) => !g || !Array.isArray(g.hooks) || g.hooks.length > 0 || ((groups as HookGroup[])[i]?.hooks ?? []).length === 0);
    if (kept.length > 0) hooks[ev] = kept;
  }
  const next: Record<string, unknown> = { ...settings, hooks };
  if (Object.keys(hooks).length === 0) delete next.hooks;
  return next;
}

