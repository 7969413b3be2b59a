// Tool calls as Claude Code pays for them: `agentsnap init claude` writes the
// hooks into the bench repository's .claude/settings.local.json, and each
// hook call runs the command string found there through `/bin/sh -c`, with
// Claude Code's JSON payload on stdin, the project as cwd and
// CLAUDE_PROJECT_DIR set, like Claude Code does. Whatever the command is (a
// Node CLI today, a small shell client of a warm server later), the bench
// times exactly that, and checks afterwards that the snapshots were recorded
// (the commands end in `|| true`, so a failing hook would otherwise look fast).
import fs from 'node:fs';
import path from 'node:path';
import { agentsnapCmd, BIN, git, ROOT, run, timed, type BenchEnv, type Cmd } from './measure.js';
import { noteWorktree } from './server.js';
import type { BenchRepo } from './repos.js';

export type HookEvent = 'PreToolUse' | 'PostToolUse' | 'SessionEnd';

export interface HookSetup {
  repo: BenchRepo;
  /** Whether the hooks run for the bench's tool (false: the matcher leaves it out; its calls run no command). */
  hooked: boolean;
  /** Commands per event, in settings order, for the tool the bench calls. */
  commands: Record<HookEvent, string[]>;
  env: NodeJS.ProcessEnv;
}

interface HookGroup {
  matcher?: string;
  hooks?: { type?: string; command?: string }[];
}

/**
 * Claude Code's matcher, applied to whatever hooks the settings hold: empty or
 * `*` matches every tool; a tool name or `A|B` is a list of exact names;
 * anything else is a JavaScript regex tested (unanchored) against the tool
 * name. Checked against the real binary (2.1.332): `^(?!(?:Read|…)$)` runs no
 * hook for Read and runs them for Write, Edit, Bash and ToolSearch, which an
 * anchored reading would not.
 */
export function matches(matcher: string | undefined, tool: string): boolean {
  if (!matcher || matcher === '*') return true;
  if (/^[\w|]+$/.test(matcher)) return matcher.split('|').includes(tool);
  try {
    return new RegExp(matcher).test(tool);
  } catch {
    return false;
  }
}

/**
 * Runs `agentsnap init claude` in the repository (idempotent) and reads the
 * hook commands it wrote. agentsnap's executables are found on PATH as after
 * a global install: a bin directory in the bench's temp dir links to them.
 */
export function installClaudeHooks(repo: BenchRepo, env: BenchEnv, tool: string): HookSetup {
  const binDir = path.join(env.base, 'bin');
  if (!fs.existsSync(binDir)) {
    // Every executable of package.json "bin", linked as npm links them on a global install.
    fs.mkdirSync(binDir, { recursive: true });
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { bin?: string | Record<string, string> };
    const bins = typeof pkg.bin === 'string' ? { agentsnap: pkg.bin } : (pkg.bin ?? { agentsnap: path.relative(ROOT, BIN) });
    for (const [name, rel] of Object.entries(bins)) fs.symlinkSync(path.join(ROOT, rel), path.join(binDir, name));
  }
  const hookEnv = { ...env.env, PATH: `${binDir}${path.delimiter}${env.env.PATH ?? ''}`, CLAUDE_PROJECT_DIR: repo.dir };
  // With agentsnap-hook on PATH, as after a global install: init writes the PATH form users get.
  run(agentsnapCmd(env, repo.dir, ['init', 'claude'], { PATH: hookEnv.PATH ?? '' }));
  const settings = JSON.parse(fs.readFileSync(path.join(repo.dir, '.claude', 'settings.local.json'), 'utf8')) as {
    hooks?: Record<string, HookGroup[]>;
  };
  const commands = { PreToolUse: [], PostToolUse: [], SessionEnd: [] } as Record<HookEvent, string[]>;
  for (const ev of Object.keys(commands) as HookEvent[]) {
    let written = 0;
    for (const group of settings.hooks?.[ev] ?? []) {
      const cmds = (group.hooks ?? []).flatMap((h) => (h.type === 'command' && h.command ? [h.command] : []));
      written += cmds.length;
      // A tool the matcher leaves out runs no command at all (Claude Code starts no process for it).
      if (ev === 'SessionEnd' || matches(group.matcher, tool)) commands[ev].push(...cmds);
    }
    if (!written) throw new Error(`agentsnap init claude wrote no ${ev} hook command into .claude/settings.local.json`);
  }
  noteWorktree(env, repo.dir);
  const hooked = commands.PreToolUse.length + commands.PostToolUse.length > 0;
  return { repo, hooked, commands, env: hookEnv };
}

/** Claude Code's default timeout of a command hook: a hook that hangs fails the bench instead of hanging it. */
export const HOOK_TIMEOUT_MS = 60_000;

/**
 * The commands of one hook event, as /bin/sh runs them for Claude Code. Its
 * stdin is what Node's spawn gives a child: a socketpair (libuv), the payload
 * written, then closed.
 */
export function hookCmds(setup: HookSetup, event: HookEvent, payload: object): Cmd[] {
  const input = JSON.stringify(payload);
  return setup.commands[event].map((command) => ({
    file: '/bin/sh',
    args: ['-c', command],
    cwd: setup.repo.dir,
    env: setup.env,
    input,
    timeoutMs: HOOK_TIMEOUT_MS,
  }));
}

export interface ToolCallSpec {
  /** Claude Code's session id (a new one starts a new agentsnap session). */
  sessionId: string;
  tool: 'Read' | 'Edit' | 'Bash';
  input: Record<string, unknown>;
  response: unknown;
}

let callCounter = 0;

/** Claude Code's PreToolUse/PostToolUse payloads for one call (the fields agentsnap reads, and the rest it sends). */
export function claudePayload(setup: HookSetup, call: ToolCallSpec, event: 'PreToolUse' | 'PostToolUse', toolUseId: string): object {
  return {
    session_id: call.sessionId,
    transcript_path: '',
    cwd: setup.repo.dir,
    permission_mode: 'default',
    hook_event_name: event,
    tool_name: call.tool,
    tool_input: call.input,
    tool_use_id: toolUseId,
    ...(event === 'PostToolUse' ? { tool_response: call.response } : {}),
  };
}

/**
 * One tool call: the pre hook, the tool's own work (untimed), the post hook.
 * Returns the hooks' wall time in ms (pre + post).
 */
export function toolCall(
  setup: HookSetup,
  call: ToolCallSpec,
  work: () => void,
): { ms: number; preMs: number; postMs: number; stderr: string } {
  const id = `toolu_bench_${process.pid}_${++callCounter}`;
  const pre = timed(hookCmds(setup, 'PreToolUse', claudePayload(setup, call, 'PreToolUse', id)));
  work();
  const post = timed(hookCmds(setup, 'PostToolUse', claudePayload(setup, call, 'PostToolUse', id)));
  return { ms: pre.ms + post.ms, preMs: pre.ms, postMs: post.ms, stderr: pre.stderr + post.stderr };
}

/** Claude Code's SessionEnd hook: agentsnap ends the session (final snapshot, packs its objects). */
export function endClaudeSession(setup: HookSetup, sessionId: string): number {
  return timed(
    hookCmds(setup, 'SessionEnd', {
      session_id: sessionId,
      transcript_path: '',
      cwd: setup.repo.dir,
      hook_event_name: 'SessionEnd',
      reason: 'other',
    }),
  ).ms;
}

/**
 * Step refs written so far, and whether the newest one points at a post
 * snapshot (its commit's `Agentsnap-Phase: post`): after a post hook has
 * returned, that must already be so, or the hook answered before the
 * snapshot was taken and its time would not be the snapshot's.
 */
export function recordedSteps(env: BenchEnv, repo: BenchRepo): { steps: number; lastIsPost: boolean } {
  const refs = git(env, repo.dir, ['for-each-ref', '--format=%(refname) %(objectname)', 'refs/agent/'])
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const [ref = '', oid = ''] = l.split(' ');
      return { n: Number(ref.slice(ref.lastIndexOf('/') + 1)), oid };
    })
    .filter((r) => r.n > 0);
  if (!refs.length) return { steps: 0, lastIsPost: false };
  const last = refs.reduce((a, b) => (b.n > a.n ? b : a));
  const body = git(env, repo.dir, ['cat-file', 'commit', last.oid]);
  return { steps: refs.length, lastIsPost: /^Agentsnap-Phase: (post|checkpoint)$/m.test(body) };
}
