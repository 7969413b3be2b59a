// Hooks for the Claude Agent SDK (`@anthropic-ai/claude-agent-sdk`): what an agent built on its `query()` passes as
// `options.hooks` to have every tool call recorded as `agentsnap hook claude …` records Claude Code's (the SDK runs
// Claude Code underneath and calls these in the SDK user's process). Each call goes to the worktree's warm server
// through the same channel as the hook clients (bin/agentsnap-hook, channel.ts) when one runs and passes the trust
// check, else through runHook in this process (which starts a server for the next calls). The SDK is not imported:
// its types are matched by shape, so agentsnap does not pull it in.
import path from 'node:path';
import { errors } from '../base/errors.js';
import { assertSessionId } from '../base/ids.js';
import { adapterOf } from '../agents/registry.js';
import { callServer, serverSwitchedOff, trustedRunDir } from '../server/channel.js';
import { runHook } from './hook.js';

/** The events agentsnap hooks in the SDK: those `init claude` writes for Claude Code (its adapter's `init.events`). */
export const AGENT_SDK_HOOK_EVENTS = ['PreToolUse', 'PostToolUse', 'PostToolUseFailure', 'SessionEnd'] as const;
export type AgentSdkHookEvent = (typeof AGENT_SDK_HOOK_EVENTS)[number];

/** The SDK's `HookCallback`, by shape: its input is one of the SDK's `*HookInput` objects (read as Claude Code's hook payload). */
export type AgentSdkHookCallback = (
  input: object,
  toolUseID: string | undefined,
  options: { signal: AbortSignal },
) => Promise<{ systemMessage?: string }>;

/** The SDK's `HookCallbackMatcher`, by shape. */
export interface AgentSdkHookMatcher {
  matcher?: string;
  hooks: AgentSdkHookCallback[];
}

/** What `agentsnapHooks()` returns: `options.hooks` for the SDK's `query()`. */
export type AgentSdkHooks = Record<AgentSdkHookEvent, AgentSdkHookMatcher[]>;

export interface AgentsnapHooksOptions {
  /** The directory whose worktree records the calls. Default: the one the query runs in (its `cwd`, which the SDK hands each hook). */
  cwd?: string;
  /** An agentsnap session to record into (running, in that worktree). Default: $AGENTSNAP_SESSION under `agentsnap wrap`, else one session per SDK session, as `init claude`'s hooks do. */
  session?: string;
  /** The environment agentsnap and git run with. Default: process.env; given, calls are never handed to the warm server (it would read this process's own environment). */
  env?: NodeJS.ProcessEnv;
  /** Gets the one line of a call that could not be recorded (the tool call goes on). Default: the line becomes the hook's `systemMessage`, which the SDK shows to the user. */
  onWarning?: (line: string) => void;
}

/**
 * `options.hooks` for the Claude Agent SDK's `query()`: every tool call becomes a step (pre snapshot at PreToolUse,
 * post at PostToolUse, a failed call closed by PostToolUseFailure), recorded as Claude Code's own hooks record it.
 * The read-only tools are left out as `init claude` leaves them out (the session journals them from the transcript).
 * The callbacks never throw and never block a call.
 */
export function agentsnapHooks(opts: AgentsnapHooksOptions = {}): AgentSdkHooks {
  if (opts.session !== undefined) assertSessionId(opts.session);
  if (opts.cwd !== undefined && (typeof opts.cwd !== 'string' || opts.cwd === '')) {
    throw errors.invalidArgument('agentsnapHooks: cwd must be a directory name.', {
      hint: 'Leave it out to record in the directory the query runs in.',
      data: { cwd: opts.cwd },
    });
  }
  const cwd = opts.cwd === undefined ? null : path.resolve(opts.cwd);
  // One call at a time, in the order the SDK makes them (as the warm server serves them): a post never overtakes its pre.
  let queue: Promise<unknown> = Promise.resolve();
  const serially = <T>(fn: () => Promise<T>): Promise<T> => {
    const next = queue.then(fn, fn);
    queue = next.catch(() => undefined); // the caller gets this failure through `next`: the queue only keeps the order
    return next;
  };
  const callback =
    (event: AgentSdkHookEvent): AgentSdkHookCallback =>
    async (input) => {
      let warning: string | null;
      try {
        warning = await serially(() => recordCall(event, input as Record<string, unknown>, cwd, opts));
      } catch (e) {
        warning = `agentsnap: warning: hook failed: ${e instanceof Error ? e.message : String(e)}`;
      }
      if (!warning) return {};
      if (!opts.onWarning) return { systemMessage: warning };
      try {
        opts.onWarning(warning);
      } catch {
        /* the caller's handler must not break the agent either */
      }
      return {};
    };
  // The tool matcher `init claude` writes (the read-only tools are journaled from the transcript), on the events it puts it on.
  const init = adapterOf('claude')?.init;
  const entry = (event: AgentSdkHookEvent): AgentSdkHookMatcher[] => {
    const matched = init?.events.find(([ev]) => ev === event)?.[1] ?? false;
    return [{ ...(matched && init ? { matcher: init.matcher } : {}), hooks: [callback(event)] }];
  };
  return {
    PreToolUse: entry('PreToolUse'),
    PostToolUse: entry('PostToolUse'),
    PostToolUseFailure: entry('PostToolUseFailure'),
    SessionEnd: entry('SessionEnd'),
  };
}

/** One hook call: through the warm server when one serves this worktree, else here. The warning line, or null. */
async function recordCall(
  event: AgentSdkHookEvent,
  input: Record<string, unknown>,
  cwd: string | null,
  opts: AgentsnapHooksOptions,
): Promise<string | null> {
  const env = opts.env ?? process.env;
  const payload = cwd ? { ...input, cwd } : input;
  const dir = cwd ?? (typeof input.cwd === 'string' && input.cwd !== '' ? input.cwd : process.cwd());
  // The session, as `wrap`'s hook command lines name it (--session/--worktree): given, or the wrapper's from the environment.
  const session = opts.session ?? (env.AGENTSNAP_SESSION && env.AGENTSNAP_WORKTREE ? env.AGENTSNAP_SESSION : null);
  const worktree = opts.session ? dir : session ? (env.AGENTSNAP_WORKTREE as string) : null;
  const args = ['claude', event, ...(session && worktree ? ['--session', session, '--worktree', worktree] : [])];
  const body = JSON.stringify(payload);
  if (!opts.env && !serverSwitchedOff(env)) {
    const server = trustedRunDir(worktree ?? dir);
    const reply = server ? await callServer(server.run, ['hook', ...args], body) : null;
    if (reply?.kind === 'ok') return null;
    if (reply?.kind === 'warn') return reply.fields.join(' ') || null;
    // No reply (no slot, the server went away, refused): this process records the call, as the hook clients do.
  }
  const callEnv = session && worktree ? { ...env, AGENTSNAP_SESSION: session, AGENTSNAP_WORKTREE: worktree } : env;
  const res = await runHook({ agent: 'claude', event, input: body, env: callEnv, cwd: dir });
  return res.warning;
}
