// Gemini CLI: everything agentsnap knows about it.
// - wrap: Gemini CLI has no per-run settings flag, and the system settings
//   files it lets an environment variable replace are skipped unless root owns
//   them and every directory above them. So agentsnap points GEMINI_CLI_HOME at
//   a private overlay of ~/.gemini: every entry is a symlink to the real one,
//   except settings.json, which is the user's settings plus agentsnap's hooks
//   (hook arrays concatenate across settings layers). When the agent exits,
//   whatever Gemini created or replaced in the overlay is moved back.
// - init: .gemini/settings.json, its only project settings file; many
//   projects commit it, so init refuses when it is tracked.
// - Hook payloads (BeforeTool/AfterTool) carry no call id, and a failing shell
//   command shows only in the result's text.
import fs from 'node:fs';
import path from 'node:path';
import { errors } from '../base/errors.js';
import { currentOwner, type LockOwner } from '../base/lock.js';
import { leftoverRuns } from './leftover-runs.js';
import os from 'node:os';
import type { AgentAdapter, HookGroup, McpServerCommand } from './adapter.js';
import { jsonMcpLayout, parseJsonc, withHooks, withMcpServer, withoutHooks, withoutMcpServer } from './settings-file.js';
import { field, paths, shell, text, type CallDescription } from './describe.js';
import { obj, planFromList } from './plan.js';
import { compactGeminiChat, forkGeminiChat, syntheticToolUseId } from './gemini-chat.js';
import { replaceStateFile } from '../base/state-dir.js';

export { syntheticToolUseId } from './gemini-chat.js';

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
  /** `wrap --mcp` added agentsnap's MCP server to the overlay's settings: taken out of what is carried back. */
  mcp?: boolean;
}

const OVERLAY_STATE = 'agentsnap-overlay.json';

/**
 * Builds the overlay home in `dir` (created; must not exist). `hooks` are the
 * hook groups to add to the user's settings.
 */
export function createGeminiOverlay(opts: {
  dir: string;
  realHome: string;
  hooks: Record<string, HookGroup[]>;
  sessionDir: string;
  mcp?: McpServerCommand | null;
}): GeminiOverlay {
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
  const withOurs = withHooks(settings, opts.hooks);
  const written = `${JSON.stringify(opts.mcp ? withMcpServer(withOurs, { command: opts.mcp.command, args: opts.mcp.args }, realSettings) : withOurs, null, 2)}\n`;
  fs.writeFileSync(path.join(overlayDir, 'settings.json'), written, { mode: 0o600 });
  const state: OverlayState = {
    owner: currentOwner('gemini overlay'),
    realHome: opts.realHome,
    before,
    written,
    ...(opts.mcp ? { mcp: true } : {}),
  };
  // In the session's state dir: 0600, never through a link (src/base/state-dir.ts).
  replaceStateFile(path.join(opts.dir, OVERLAY_STATE), `${JSON.stringify(state)}\n`);
  replaceStateFile(
    geminiOverlayRecord(opts.sessionDir),
    `${JSON.stringify({ overlay: opts.dir, real: opts.realHome } satisfies OverlayRecord)}\n`,
  );
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
        warnings.push(
          `agentsnap: warning: Gemini CLI changed its settings during the run, but ${realSettings} changed too; the run's version is left in ${overlaySettings}`,
        );
      } else {
        const parsed = parseJsonc(now) as Record<string, unknown>;
        fs.mkdirSync(realDir, { recursive: true });
        const back = withoutHooks(parsed, 'gemini');
        fs.writeFileSync(realSettings, `${JSON.stringify(state.mcp ? withoutMcpServer(back) : back, null, 2)}\n`);
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
  const overlays = leftoverRuns(
    sessionsRoot,
    (n) => n.startsWith('gemini-home-'),
    (dir) => JSON.parse(fs.readFileSync(path.join(dir, OVERLAY_STATE), 'utf8')) as OverlayState,
  );
  for (const { sessionDir, entry: dir, state } of overlays) {
    const warnings = finishOverlay(dir, state, sessionDir);
    // Kept for the user: no second attempt on the next run.
    if (warnings.length > 0) fs.rmSync(path.join(dir, OVERLAY_STATE), { force: true });
    lines.push(
      ...(warnings.length > 0 ? warnings : [`agentsnap: moved back what Gemini CLI wrote in ${dir} (its wrapper had been killed)`]),
    );
  }
  return lines;
}

/** Gemini CLI's built-in tools by their input (run_shell_command `command`, write_file/replace `file_path`…). */
function describeGeminiCall(tool: string | null, input: unknown): CallDescription | null {
  switch (tool) {
    case 'run_shell_command':
      return shell(field(input, 'command'));
    case 'write_file':
    case 'replace':
    case 'edit':
    case 'read_file':
      return paths(field(input, 'file_path', 'absolute_path', 'path'));
    case 'read_many_files': {
      const list = input && typeof input === 'object' ? (input as Record<string, unknown>).paths : null;
      return Array.isArray(list) ? paths(...list.filter((p): p is string => typeof p === 'string')) : null;
    }
    case 'list_directory':
      return paths(field(input, 'path', 'dir_path'));
    case 'glob':
    case 'search_file_content':
    case 'grep':
      return text(field(input, 'pattern'));
    case 'google_web_search':
      return text(field(input, 'query'));
    case 'web_fetch':
      return text(field(input, 'prompt', 'url'));
    case 'save_memory':
      return text(field(input, 'fact'));
    default:
      return null;
  }
}

export const gemini: AgentAdapter = {
  // write_todos sends the whole list: `todos: [{ description, status }]`.
  nextPlan: (_plan, tool, input) => (tool === 'write_todos' ? planFromList(obj(input)?.todos, ['description', 'text']) : null),
  name: 'gemini',
  product: 'gemini-cli',
  displayName: 'Gemini CLI',
  turnWord: 'model turn',
  isCommand: (arg, base) => base === 'gemini' || base === 'gemini-cli' || arg.includes('@google/gemini-cli'),
  hookSettingsFiles: { project: ['.gemini/settings.json'], user: ['.gemini/settings.json'] },
  // Its chat files under ~/.gemini/tmp, forked by gemini-chat.ts.
  ownsTranscript: (file, sessionAgent) => (sessionAgent !== null && /gemini/i.test(sessionAgent)) || file.includes('/.gemini/'),
  forkConversation: (at, opts) => forkGeminiChat(at, opts),
  compactConversation: (at, digest, opts) => compactGeminiChat(at, digest, opts),
  refineCall(call, payload) {
    const response = payload.tool_response ?? payload.tool_output ?? payload.output;
    const responseObj = response && typeof response === 'object' ? (response as Record<string, unknown>) : null;
    if (call.phase === 'post' && call.status === 'done') {
      // Gemini's run_shell_command reports a failing command only in its text: "Exit Code: 3".
      const text = responseObj
        ? `${typeof responseObj.llmContent === 'string' ? responseObj.llmContent : ''}\n${typeof responseObj.returnDisplay === 'string' ? responseObj.returnDisplay : ''}`
        : '';
      const m = /(?:^|\n)\s*(?:Exit Code:|Command exited with code:)\s*(\d+)/.exec(text);
      if (m && m[1] !== '0') {
        call.status = 'failed';
        call.error = call.error ?? `Exit code ${m[1]}`;
      }
    }
    // Gemini CLI gives its hooks no call id: the call's name and input pair its BeforeTool with its AfterTool.
    if (!call.toolUseId && call.tool && (call.phase === 'pre' || call.phase === 'post'))
      call.toolUseId = syntheticToolUseId(call.tool, payload.tool_input);
  },
  // Under wrap, Gemini CLI runs with an overlay home that is gone afterwards: keep the path the file ends up at.
  transcriptPath: (sessionDir, reported) => mapGeminiPath(sessionDir, reported),
  /** Gemini CLI's home for this run: the user's, plus agentsnap's BeforeTool/AfterTool hooks. */
  prepareRun(run) {
    // One per run: a wrapper that was killed leaves its overlay (and whatever Gemini created only there) in place.
    const dir = path.join(run.sessionDir, `gemini-home-${process.pid}-${Date.now().toString(36)}`);
    const hook = (ev: string): HookGroup => ({
      matcher: '*',
      hooks: [
        {
          type: 'command',
          name: `agentsnap-${ev}`,
          command: run.hookCommand(ev, { session: run.session, worktree: run.worktree }),
          timeout: 600_000,
        },
      ],
    });
    const overlay = createGeminiOverlay({
      dir,
      realHome: run.env.GEMINI_CLI_HOME || run.env.HOME || os.homedir(),
      hooks: { BeforeTool: [hook('BeforeTool')], AfterTool: [hook('AfterTool')] },
      sessionDir: run.sessionDir,
      mcp: run.mcp,
    });
    return { env: { GEMINI_CLI_HOME: overlay.home }, finish: () => overlay.finish() };
  },
  // What a killed wrapper's Gemini wrote only in its overlay goes back first (a run's chats, logins, settings).
  recover: (sessionsRoot) => recoverGeminiOverlays(sessionsRoot),
  init: {
    file: '.gemini/settings.json',
    events: [
      ['BeforeTool', true],
      ['AfterTool', true],
      ['SessionEnd', false],
    ],
    matcher: '*',
    personal: false,
    trackedHint: 'Gemini CLI has no other project settings file; run the agent as `agentsnap wrap -- gemini` instead.',
    note: 'Gemini CLI runs project hooks only in folders you trust, and warns once about new ones.',
    // Its MCP servers live in the same file, under mcpServers.
    mcp: jsonMcpLayout('.gemini/settings.json', {
      personal: false,
      trackedHint: 'Gemini CLI has no other project settings file; run the agent as `agentsnap wrap --mcp -- gemini` instead.',
      note: 'Gemini CLI starts project MCP servers only in folders you trust.',
    }),
  },
  // What each of its calls was, for `log`.
  describeCall: describeGeminiCall,
};
