// The agents' JSON settings files, as agentsnap edits them: read with
// comments and trailing commas, hook arrays appended to and taken out again
// (only agentsnap's own entries, recognised by their command). Shared by the
// adapters and `init`.
import { errors } from '../base/errors.js';
import type { HookGroup, McpInitLayout, McpServerCommand } from './adapter.js';

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
  const hooks = {
    ...((settings.hooks && typeof settings.hooks === 'object' && !Array.isArray(settings.hooks) ? settings.hooks : {}) as Record<
      string,
      unknown
    >),
  };
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

/** The name agentsnap's MCP server is declared under in every agent's configuration. */
export const MCP_SERVER_NAME = 'agentsnap';

/** Whether a declared MCP server is agentsnap's own (`agentsnap mcp`, by PATH or by this install's path). */
export function isAgentsnapMcpServer(entry: unknown): boolean {
  if (!entry || typeof entry !== 'object') return false;
  const e = entry as { command?: unknown; args?: unknown };
  const words = [e.command, ...(Array.isArray(e.args) ? e.args : [])].filter((w): w is string => typeof w === 'string');
  return words.some((w) => /agentsnap/.test(w)) && words.includes('mcp');
}

/** `settings` with agentsnap's server in its `mcpServers` object (Claude Code's .mcp.json, Gemini CLI's settings.json). */
export function withMcpServer(
  settings: Record<string, unknown>,
  server: McpServerCommand & Record<string, unknown>,
  file: string,
): Record<string, unknown> {
  const servers = settings.mcpServers;
  if (servers !== undefined && (!servers || typeof servers !== 'object' || Array.isArray(servers))) {
    throw errors.invalidConfig(`${file}: mcpServers is not an object; agentsnap leaves it as it is.`, {
      hint: 'Fix the file, then run init again.',
      data: { file },
    });
  }
  const current = (servers as Record<string, unknown> | undefined)?.[MCP_SERVER_NAME];
  if (current !== undefined && !isAgentsnapMcpServer(current)) {
    throw errors.refused(`${file} already declares an MCP server named ${MCP_SERVER_NAME} that is not agentsnap's; it is left as it is.`, {
      hint: 'Rename or remove that entry, then run init again.',
      data: { file },
    });
  }
  return { ...settings, mcpServers: { ...((servers as Record<string, unknown> | undefined) ?? {}), [MCP_SERVER_NAME]: server } };
}

/** `settings` without agentsnap's server (an `mcpServers` left empty by that is dropped); another entry of that name stays. */
export function withoutMcpServer(settings: Record<string, unknown>): Record<string, unknown> {
  const servers = settings.mcpServers;
  if (
    !servers ||
    typeof servers !== 'object' ||
    Array.isArray(servers) ||
    !isAgentsnapMcpServer((servers as Record<string, unknown>)[MCP_SERVER_NAME])
  )
    return settings;
  const { [MCP_SERVER_NAME]: _ours, ...rest } = servers as Record<string, unknown>;
  void _ours;
  const next: Record<string, unknown> = { ...settings, mcpServers: rest };
  if (Object.keys(rest).length === 0) delete next.mcpServers;
  return next;
}

/** An `mcpServers` JSON file as `init --mcp` edits it (comments refused: they would be dropped). */
export function jsonMcpLayout(
  file: string,
  opts: { personal: boolean; trackedHint?: string; note?: string; entry?: (server: McpServerCommand) => Record<string, unknown> },
): McpInitLayout {
  const read = (text: string | null): Record<string, unknown> => {
    if (text === null || !text.trim()) return {};
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (e) {
      let jsonc = false;
      try {
        jsonc = !!parseJsonc(text);
      } catch {
        /* not JSON with comments either */
      }
      if (jsonc)
        throw errors.refused(`${file} has comments, which agentsnap would drop when it edits it; it is left as it is.`, {
          hint: 'Remove the comments, then run init again.',
          data: { file },
        });
      throw errors.invalidConfig(`${file} is not valid JSON (${(e as Error).message}); agentsnap leaves it as it is.`, {
        hint: 'Fix the file, then run init again.',
        data: { file },
      });
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
      throw errors.invalidConfig(`${file} is not a JSON object; agentsnap leaves it as it is.`, {
        hint: 'Fix the file, then run init again.',
        data: { file },
      });
    return parsed as Record<string, unknown>;
  };
  return {
    file,
    personal: opts.personal,
    ...(opts.trackedHint ? { trackedHint: opts.trackedHint } : {}),
    ...(opts.note ? { note: opts.note } : {}),
    add: (text, server) =>
      `${JSON.stringify(withMcpServer(read(text), { ...(opts.entry?.(server) ?? {}), command: server.command, args: server.args }, file), null, 2)}\n`,
    remove: (text) => {
      const before = read(text);
      const next = withoutMcpServer(before);
      if (next === before) return text; // nothing of agentsnap's: the file stays byte for byte
      return Object.keys(next).length === 0 ? null : `${JSON.stringify(next, null, 2)}\n`;
    },
  };
}
