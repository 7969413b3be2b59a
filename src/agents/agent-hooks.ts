// Hooks injected into Codex CLI and Gemini CLI for one `wrap` run, without
// editing the user's configuration:
// - Codex CLI reads hooks from every config layer, including `-c key=value`
//   overrides (its "session flags" layer). Hooks it has not seen before run
//   only once trusted: a `hooks.state.<key>.trusted_hash` in a user-controlled
//   layer, which `-c` is too. So agentsnap passes its hooks and their trust
//   as `-c` flags (codex-rs/hooks/src/engine/discovery.rs, config_rules.rs).
// - Gemini CLI has no per-run settings flag, and the system settings files it
//   lets an environment variable replace are skipped unless root owns them
//   and every directory above them. So agentsnap points GEMINI_CLI_HOME at a
//   private overlay of ~/.gemini: every entry is a symlink to the real one,
//   except settings.json, which is the user's settings plus agentsnap's hooks
//   (hook arrays concatenate across settings layers). When the agent exits,
//   whatever Gemini created or replaced in the overlay is moved back.
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { errors } from '../base/errors.js';
import { currentOwner, ownerAlive, type LockOwner } from '../base/lock.js';

// ---------------------------------------------------------------- Codex CLI

/** Where Codex says `-c` overrides come from; hook state keys name it. */
const CODEX_SESSION_FLAGS_SOURCE = '/<session-flags>/config.toml';
const CODEX_EVENT_LABELS: Record<string, string> = { PreToolUse: 'pre_tool_use', PostToolUse: 'post_tool_use', SessionEnd: 'session_end' };
/** Codex's default hook timeout (seconds), part of the normalized hook it hashes. */
const CODEX_DEFAULT_TIMEOUT = 600;

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

/**
 * The hash Codex trusts a command hook by: sha256 of the canonical JSON of
 * {event_name, matcher, hooks: [normalized handler]} (codex-rs/config/src/fingerprint.rs
 * `version_for_toml`, discovery.rs `command_hook_hash`).
 */
export function codexTrustHash(event: string, matcher: string | null, command: string): string {
  const label = CODEX_EVENT_LABELS[event] ?? event;
  const handler = { type: 'command', command, timeout: CODEX_DEFAULT_TIMEOUT, async: false };
  const identity: Record<string, unknown> = { event_name: label, hooks: [handler] };
  if (matcher !== null) identity.matcher = matcher;
  return `sha256:${createHash('sha256').update(JSON.stringify(canonical(identity))).digest('hex')}`;
}

/** A TOML basic string (JSON's escapes are TOML's, plus DEL, which TOML wants escaped). */
function tomlString(s: string): string {
  return JSON.stringify(s).replace(/\x7f/g, '\\u007f');
}

/**
 * `-c` overrides that make Codex run `commandFor(event)` before and after
 * every tool call in this run only, trusted.
 */
export function codexConfigOverrides(commandFor: (event: string) => string, events: string[] = ['PreToolUse', 'PostToolUse']): string[] {
  const out: string[] = [];
  const state: string[] = [];
  for (const ev of events) {
    const matcher = ev === 'SessionEnd' ? null : '*';
    const command = commandFor(ev);
    const group = `{${matcher === null ? '' : `matcher=${tomlString(matcher)},`}hooks=[{type="command",command=${tomlString(command)}}]}`;
    out.push('-c', `hooks.${ev}=[${group}]`);
    const key = `${CODEX_SESSION_FLAGS_SOURCE}:${CODEX_EVENT_LABELS[ev] ?? ev}:0:0`;
    state.push(`${tomlString(key)}={trusted_hash=${tomlString(codexTrustHash(ev, matcher, command))}}`);
  }
  out.push('-c', `hooks.state={${state.join(',')}}`);
  return out;
}

// ---------------------------------------------------------------- Gemini CLI

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

/**
 * Claude Code's built-in tools that cannot change a file: agentsnap does not
 * hook them (a hook costs the agent a process per call) and journals them from
 * the transcript instead (src/transcript-import.ts). Conservative: any tool not
 * named here, MCP tools and tools of future versions included, stays hooked.
 */
export const CLAUDE_READ_ONLY_TOOLS = ['Read', 'Glob', 'Grep', 'LS', 'NotebookRead', 'WebFetch', 'WebSearch'] as const;

/**
 * The tool matcher of agentsnap's Claude Code PreToolUse/PostToolUse(Failure)
 * hooks: every tool name except exactly the read-only ones. Claude Code reads
 * a matcher that is not a plain name list as a JavaScript regex and tests the
 * tool name with it; the negative lookahead is honoured (checked on 2.1.332:
 * Read fires no hook, Write/Edit/Bash/ToolSearch do).
 */
export const CLAUDE_TOOL_MATCHER = `^(?!(?:${CLAUDE_READ_ONLY_TOOLS.join('|')})$)`;

export type HookGroup = { matcher?: string; hooks?: { type?: string; command?: string; name?: string }[] };

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

export interface GeminiOverlay {
  /** GEMINI_CLI_HOME for the agent. */
  home: string;
  /** Moves back what Gemini created or replaced, removes the overlay; returns warnings (one line each). */
  finish(): string[];
}

interface OverlayRecord {
  overlay: string;
  real: string;
}

/** Where a session's Gemini overlay records its real home, so hooks can map transcript paths back. */
export function geminiOverlayRecord(sessionDir: string): string {
  return path.join(sessionDir, 'gemini-home.json');
}

/** A path Gemini reported under the overlay, as it is (or will be, once moved back) under the real ~/.gemini. */
export function mapGeminiPath(sessionDir: string, file: string): string {
  try {
    const rec = JSON.parse(fs.readFileSync(geminiOverlayRecord(sessionDir), 'utf8')) as OverlayRecord;
    const rel = path.relative(rec.overlay, file);
    if (rel && !rel.startsWith('..') && !path.isAbsolute(rel)) return path.join(rec.real, rel);
  } catch {
    /* no overlay: the path is real */
  }
  return file;
}

function moveEntry(from: string, to: string): void {
  try {
    fs.renameSync(from, to);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EXDEV') throw e;
    fs.cpSync(from, to, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true });
    fs.rmSync(from, { recursive: true, force: true });
  }
}

/** Moves what is in `from` (the overlay) but not a link of ours into `to` (the real directory). */
function mergeBack(from: string, to: string, linked: Set<string>, warnings: string[], skip: Set<string>): void {
  for (const name of fs.readdirSync(from)) {
    const src = path.join(from, name);
    if (skip.has(src)) continue;
    const dst = path.join(to, name);
    const st = fs.lstatSync(src);
    if (st.isSymbolicLink() && linked.has(src) && fs.readlinkSync(src) === dst) continue;
    try {
      const existing = fs.lstatSync(dst, { throwIfNoEntry: false });
      if (!existing) {
        fs.mkdirSync(to, { recursive: true });
        moveEntry(src, dst);
      } else if (st.isDirectory() && existing.isDirectory()) {
        mergeBack(src, dst, linked, warnings, skip);
      } else if (!existing.isDirectory() && !st.isDirectory()) {
        // Gemini replaced our link (a write through a temp file and a rename): its version is the newest.
        moveEntry(src, dst);
      } else {
        warnings.push(`agentsnap: warning: Gemini CLI left ${src}, which does not fit ${dst}; it was kept where it is`);
        continue;
      }
    } catch (e) {
      warnings.push(`agentsnap: warning: could not move ${src} back to ${dst}: ${(e as Error).message}`);
    }
  }
}

/** What an overlay needs to be finished later, by this wrapper or, if it was killed, by the next one: kept in the overlay's directory. */
interface OverlayState {
  /** The wrapper that made it; while it lives, nobody else finishes the overlay. */
  owner: LockOwner;
  realHome: string;
  /** The user's settings.json when the run started (null: none), and what the overlay's copy was written as. */
  before: string | null;
  written: string;
}

const OVERLAY_STATE = 'agentsnap-overlay.json';

/**
 * Builds the overlay home in `dir` (created; must not exist). `hooks` are the
 * hook groups to add to the user's settings.
 */
export function createGeminiOverlay(opts: { dir: string; realHome: string; hooks: Record<string, HookGroup[]>; sessionDir: string }): GeminiOverlay {
  const realDir = path.join(opts.realHome, '.gemini');
  const overlayDir = path.join(opts.dir, '.gemini');
  const realSettings = path.join(realDir, 'settings.json');
  let before: string | null = null;
  let settings: Record<string, unknown> = {};
  try {
    before = fs.readFileSync(realSettings, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw errors.unreadableFile(`cannot read ${realSettings}: ${(e as Error).message}`, { data: { file: realSettings } });
    }
  }
  if (before !== null && before.trim()) {
    let parsed: unknown;
    try {
      parsed = parseJsonc(before);
    } catch (e) {
      parsed = e;
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed) || parsed instanceof Error) {
      throw errors.invalidConfig(`${realSettings} is not a JSON object; agentsnap cannot add its hooks to it for this run.`, {
        hint: 'Fix the file (Gemini CLI would not read it either), then run the same command again.',
        data: { file: realSettings },
      });
    }
    settings = parsed as Record<string, unknown>;
  }
  fs.mkdirSync(overlayDir, { recursive: true, mode: 0o700 });
  let realNames: string[] = [];
  try {
    realNames = fs.readdirSync(realDir);
  } catch {
    /* no ~/.gemini yet: everything Gemini creates is moved there at the end */
  }
  for (const name of realNames) {
    if (name === 'settings.json') continue;
    fs.symlinkSync(path.join(realDir, name), path.join(overlayDir, name));
  }
  const written = `${JSON.stringify(withHooks(settings, opts.hooks), null, 2)}\n`;
  fs.writeFileSync(path.join(overlayDir, 'settings.json'), written, { mode: 0o600 });
  const state: OverlayState = { owner: currentOwner('gemini overlay'), realHome: opts.realHome, before, written };
  fs.writeFileSync(path.join(opts.dir, OVERLAY_STATE), `${JSON.stringify(state)}\n`, { mode: 0o600 });
  fs.writeFileSync(geminiOverlayRecord(opts.sessionDir), `${JSON.stringify({ overlay: opts.dir, real: opts.realHome } satisfies OverlayRecord)}\n`);
  return { home: opts.dir, finish: () => finishOverlay(opts.dir, state, opts.sessionDir) };
}

/** Moves back what Gemini created or replaced, carries settings changes back without our hooks, removes the overlay. */
function finishOverlay(dir: string, state: OverlayState, sessionDir: string): string[] {
  const realDir = path.join(state.realHome, '.gemini');
  const overlayDir = path.join(dir, '.gemini');
  const realSettings = path.join(realDir, 'settings.json');
  const overlaySettings = path.join(overlayDir, 'settings.json');
  const { before, written } = state;
  const warnings: string[] = [];
  // Settings changed inside the agent (a theme, an auth choice) go back to the real file, without our hooks.
  try {
    const now = fs.readFileSync(overlaySettings, 'utf8');
    if (now !== written) {
      let current: string | null = null;
      try {
        current = fs.readFileSync(realSettings, 'utf8');
      } catch {
        /* gone or never there */
      }
      if (current !== before) {
        warnings.push(`agentsnap: warning: Gemini CLI changed its settings during the run, but ${realSettings} changed too; the run's version is left in ${overlaySettings}`);
      } else {
        const parsed = parseJsonc(now) as Record<string, unknown>;
        fs.mkdirSync(realDir, { recursive: true });
        fs.writeFileSync(realSettings, `${JSON.stringify(withoutHooks(parsed, 'gemini'), null, 2)}\n`);
      }
    }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') {
      warnings.push(`agentsnap: warning: could not carry Gemini CLI's settings changes back to ${realSettings}: ${(e as Error).message}`);
    }
  }
  const keepSettings = warnings.length > 0;
  try {
    if (!keepSettings) fs.rmSync(overlaySettings, { force: true });
    // Our links are the ones still pointing at the real entry of the same name.
    const linked = new Set<string>();
    for (const name of fs.readdirSync(overlayDir)) {
      const link = path.join(overlayDir, name);
      try {
        if (fs.readlinkSync(link) === path.join(realDir, name)) linked.add(link);
      } catch {
        /* not a link */
      }
    }
    mergeBack(overlayDir, realDir, linked, warnings, new Set([overlaySettings]));
    try {
      const rec = JSON.parse(fs.readFileSync(geminiOverlayRecord(sessionDir), 'utf8')) as OverlayRecord;
      if (rec.overlay === dir) fs.rmSync(geminiOverlayRecord(sessionDir), { force: true });
    } catch {
      /* gone, or another run's */
    }
    // Anything left (kept settings, entries that could not move) stays for the user to look at.
    if (warnings.length === 0) fs.rmSync(dir, { recursive: true, force: true });
  } catch (e) {
    warnings.push(`agentsnap: warning: could not clean up Gemini CLI's temporary home ${dir}: ${(e as Error).message}`);
  }
  return warnings;
}

/**
 * Finishes the Gemini overlays that killed wrappers left in `sessionsRoot`'s
 * session directories (whatever Gemini wrote only there goes back to the real
 * ~/.gemini). Overlays whose wrapper still runs are left alone. Returns one
 * line per overlay finished or kept.
 */
export function recoverGeminiOverlays(sessionsRoot: string): string[] {
  const lines: string[] = [];
  let sessions: string[] = [];
  try {
    sessions = fs.readdirSync(sessionsRoot);
  } catch {
    return lines;
  }
  for (const session of sessions) {
    const sessionDir = path.join(sessionsRoot, session);
    let names: string[] = [];
    try {
      names = fs.readdirSync(sessionDir).filter((n) => n.startsWith('gemini-home-'));
    } catch {
      continue;
    }
    for (const name of names) {
      const dir = path.join(sessionDir, name);
      let state: OverlayState;
      try {
        state = JSON.parse(fs.readFileSync(path.join(dir, OVERLAY_STATE), 'utf8')) as OverlayState;
      } catch {
        continue; // left by an older agentsnap, or finished with warnings already: the user's to look at
      }
      if (!state.owner || ownerAlive(state.owner)) continue;
      const warnings = finishOverlay(dir, state, sessionDir);
      // Kept for the user: no second attempt on the next run.
      if (warnings.length > 0) fs.rmSync(path.join(dir, OVERLAY_STATE), { force: true });
      lines.push(...(warnings.length > 0 ? warnings : [`agentsnap: moved back what Gemini CLI wrote in ${dir} (its wrapper had been killed)`]));
    }
  }
  return lines;
}
