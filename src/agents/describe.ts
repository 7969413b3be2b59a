// What a tool call was, in a few words, from its recorded name and input: the
// shell command, the file it wrote, the MCP tool's main argument. Each adapter
// knows its own agent's tool input shapes (`describeCall`); what is here is
// the shape every adapter returns and the agent-neutral fallback, which reads
// the field names most agents share (command, file_path, path…). Pure: no
// file is read, nothing is printed.

/** What a call was: a shell command, the files it wrote or read, or a short text (an MCP tool's main argument). */
export type CallDescription = { kind: 'shell'; command: string } | { kind: 'paths'; paths: string[] } | { kind: 'text'; text: string };

function record(v: unknown): Record<string, unknown> | null {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
}

/** A non-empty string field of an input object. */
export function field(input: unknown, ...keys: string[]): string | null {
  const o = record(input);
  if (!o) return null;
  for (const k of keys) {
    const v = o[k];
    if (typeof v === 'string' && v.trim() !== '') return v;
  }
  return null;
}

/** A command given as a string or as an argv array (`["bash", "-lc", "…"]` is the script it runs). */
export function commandText(v: unknown): string | null {
  if (typeof v === 'string') return v.trim() === '' ? null : v;
  if (Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string')) {
    const words = v as string[];
    if (words.length === 3 && /^(?:.*\/)?(?:ba|z|da)?sh$/.test(words[0]!) && /^-l?c$/.test(words[1]!)) return words[2]!;
    return words.map((w) => (/^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`)).join(' ');
  }
  return null;
}

export const shell = (command: string | null): CallDescription | null => (command === null ? null : { kind: 'shell', command });
export const paths = (...list: (string | null)[]): CallDescription | null => {
  const ps = list.filter((p): p is string => p !== null);
  return ps.length === 0 ? null : { kind: 'paths', paths: ps };
};
export const text = (t: string | null): CallDescription | null => (t === null ? null : { kind: 'text', text: t });

/** The argument an MCP tool (or an unknown one) is most likely about, as `key: value`. */
export function mainArgument(input: unknown): string | null {
  if (typeof input === 'string') return input.trim() === '' ? null : input;
  const o = record(input);
  if (!o) return null;
  const preferred = [
    'query',
    'q',
    'path',
    'file_path',
    'url',
    'command',
    'name',
    'title',
    'pattern',
    'id',
    'repo',
    'key',
    'message',
    'prompt',
    'text',
  ];
  const key =
    preferred.find((k) => typeof o[k] === 'string' && (o[k] as string).trim() !== '') ??
    Object.keys(o).find((k) => typeof o[k] === 'string' && (o[k] as string).trim() !== '');
  if (key !== undefined) return `${key}: ${o[key] as string}`;
  const scalar = Object.keys(o).find((k) => typeof o[k] === 'number' || typeof o[k] === 'boolean');
  return scalar === undefined ? null : `${scalar}: ${String(o[scalar])}`;
}

/**
 * The fallback for any agent: an MCP tool (`mcp__server__tool`) by its main argument, a shell command
 * (`command`, `cmd`), a file (`file_path`, `path`, `notebook_path`, `absolute_path`, `filename`), else the
 * input's main argument.
 */
export function describeCallGeneric(tool: string | null, input: unknown): CallDescription | null {
  if (input === undefined || input === null) return null;
  if (tool?.startsWith('mcp__')) return text(mainArgument(input));
  const o = record(input);
  if (o) {
    const cmd = commandText(o.command) ?? commandText(o.cmd);
    if (cmd !== null) return shell(cmd);
    const file = field(o, 'file_path', 'path', 'notebook_path', 'absolute_path', 'filename', 'file');
    if (file !== null) return paths(file);
    if (Array.isArray(o.paths) && o.paths.every((p) => typeof p === 'string')) return paths(...(o.paths as string[]));
  }
  return text(mainArgument(input));
}

/** Files named by a Codex-style patch (`*** Update File: a`, `*** Add File:`, `*** Delete File:`, `*** Move to:`). */
export function patchPaths(patch: string): string[] {
  const out: string[] = [];
  for (const m of patch.matchAll(/^\*\*\* (?:Update|Add|Delete) File: (.+)$|^\*\*\* Move to: (.+)$/gm)) {
    const p = (m[1] ?? m[2] ?? '').trim();
    if (p && !out.includes(p)) out.push(p);
  }
  return out;
}
