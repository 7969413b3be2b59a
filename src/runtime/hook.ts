// The agent hook entry point (`agentsnap hook <agent> <event>`): turns one
// hook call of Claude Code, Codex CLI, Gemini CLI or a generic agent into the
// pre or post snapshot of its step. A hook never breaks the agent: failures
// come back as a warning (the CLI prints one line and exits 0) and a
// snapshot that failed marks its step unprotected.
import fs from 'node:fs';
import { ensureStateDir, readStateFile, replaceStateFile, stateLayout } from '../base/state-dir.js';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { asDiskFull, isAgentsnapError } from '../base/errors.js';
import type { Repo } from '../git/repo.js';
import type { Settings } from '../settings/settings.js';
import { contextFor } from '../api/open.js';
import type { Context, ContextOpener } from '../session/context.js';
import { acquireLock } from '../base/lock.js';
import {
  endSession,
  loadSession,
  recordCheckpoint,
  recordPost,
  recordPre,
  recordTranscript,
  recordUnprotected,
  sessionFinished,
  sessionPaths,
  startSession,
} from '../session/session.js';
import { loadState } from '../session/state.js';
import { sanitize } from '../session/redact.js';
import type { TranscriptPosition } from '../session/journal.js';
import { adapterOf, transcriptReader } from '../agents/registry.js';
import type { AgentAdapter, HookCall, ToolCallLocation, TranscriptTail } from '../agents/adapter.js';
import { autoStartServer } from '../server/server.js';
import { maybeStartAutoCheck } from '../check/check.js';

export { AGENTS } from '../agents/registry.js';
export type { Agent, HookCall } from '../agents/adapter.js';

const PRE_EVENTS = new Set(['pretooluse', 'beforetool', 'pre']);
const POST_EVENTS = new Set(['posttooluse', 'aftertool', 'post']);
const FAILURE_EVENTS = new Set(['posttoolusefailure', 'failure', 'failed']);
const END_EVENTS = new Set(['sessionend', 'end']);
const START_EVENTS = new Set(['sessionstart']);

function str(v: unknown): string | null {
  return typeof v === 'string' && v !== '' ? v : null;
}

function num(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

/** Reads an agent's payload (Claude Code's field names; Codex and Gemini use the same ones where they have them). */
export function parseHookCall(agent: string, event: string, payload: Record<string, unknown>, env: NodeJS.ProcessEnv = {}): HookCall {
  const name = (str(payload.hook_event_name) ?? event).toLowerCase();
  const ev = event ? event.toLowerCase() : name;
  const response = payload.tool_response ?? payload.tool_output ?? payload.output;
  const responseObj = response && typeof response === 'object' ? (response as Record<string, unknown>) : null;
  let phase: HookCall['phase'] = 'ignore';
  let status: HookCall['status'] = 'done';
  let error =
    str(payload.error) ??
    (responseObj ? (str(responseObj.error) ?? str((responseObj.error as { message?: unknown } | undefined)?.message)) : null);
  if (PRE_EVENTS.has(ev)) phase = 'pre';
  else if (FAILURE_EVENTS.has(ev)) {
    phase = 'post';
    status = payload.is_interrupt === true ? 'interrupted' : 'failed';
    error = error ?? 'failed';
  } else if (POST_EVENTS.has(ev)) {
    phase = 'post';
    // Gemini reports a failed tool inside tool_response; Codex has an exit code on shell calls.
    const exit = responseObj ? num(responseObj.exit_code ?? responseObj.exitCode) : null;
    if (error || (exit !== null && exit !== 0)) status = 'failed';
  } else if (END_EVENTS.has(ev)) phase = 'end';
  else if (START_EVENTS.has(ev)) phase = 'start';
  const call: HookCall = {
    phase,
    status,
    tool: str(payload.tool_name),
    input: payload.tool_input,
    output: response,
    error,
    toolUseId: str(payload.tool_use_id) ?? str(payload.tool_call_id) ?? str(payload.call_id),
    agentSessionId: str(payload.session_id),
    transcriptPath: str(payload.transcript_path),
    cwd: str(payload.cwd),
    durationMs: num(payload.duration_ms),
    agentVersion: str(payload.agent_version) ?? str(payload.version),
    model: str(payload.model),
  };
  // What only the agent's own format tells (a failure in a result's text, a call id where it gives none).
  adapterOf(agent)?.refineCall?.(call, payload, env);
  return call;
}

/**
 * The words after `hook` on a hook command line: `<agent> <event> [--wrapped]
 * [--session ID] [--worktree DIR]`; --session/--worktree name the wrapper's
 * session for agents that may drop the environment, and land in the env.
 */
export function parseHookArgs(
  args: string[],
  callerEnv: NodeJS.ProcessEnv,
): { agent: string; event: string; wrapped: boolean; env: NodeJS.ProcessEnv } {
  const env = { ...callerEnv };
  const positional: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if ((a === '--session' || a === '--worktree') && i + 1 < args.length) {
      env[a === '--session' ? 'AGENTSNAP_SESSION' : 'AGENTSNAP_WORKTREE'] = args[++i];
    } else if (!a.startsWith('--')) positional.push(a);
  }
  const [agent = 'generic', event = ''] = positional;
  return { agent, event, wrapped: args.includes('--wrapped'), env };
}

export interface HookOptions {
  agent: string;
  event: string;
  /** The agent's payload as it arrived on stdin. */
  input: string;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Set by the hooks `wrap` injects; a hook written by `init` stands aside while a wrapper's hooks run. */
  wrapped?: boolean;
  /** Set by the warm server: the call's context (its repository, settings, snapshotter…). */
  openContext?: ContextOpener;
}

export interface HookOutcome {
  action: 'pre' | 'post' | 'checkpoint' | 'start' | 'end' | 'ignored' | 'unprotected' | 'failed';
  session: string | null;
  step: number | null;
  /** One line for stderr when something went wrong; the agent goes on either way. */
  warning: string | null;
}

function message(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).split('\n')[0] ?? 'unknown error';
}

/** A failure's first line for a hook's warning; a full disk says so whatever git's words were (git's "couldn't write '<lock>'"). */
function reason(e: unknown, dir: string): string {
  return message(asDiskFull(e, dir));
}

/** An outcome that records nothing (the call ignored, or failed with `warning`). */
function none(warning: string | null, action: HookOutcome['action'] = 'ignored'): HookOutcome {
  return { action, session: null, step: null, warning };
}

/** Handles one hook call; never throws. */
export async function runHook(opts: HookOptions): Promise<HookOutcome> {
  const injected = (opts.env.AGENTSNAP_HOOKS ?? '').split(',');
  if (!opts.wrapped && injected.includes(opts.agent)) return none(null); // the wrapper's own hooks record this call
  let payload: Record<string, unknown> = {};
  if (opts.input.trim()) {
    try {
      const parsed = JSON.parse(opts.input) as unknown;
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) payload = parsed as Record<string, unknown>;
    } catch {
      return none(`agentsnap: warning: ${opts.agent} hook payload is not JSON; this call was not snapshotted`, 'failed'); // reported in the warning
    }
  }
  const call = parseHookCall(opts.agent, opts.event, payload, opts.env);
  const adapter = adapterOf(opts.agent);
  if (call.phase === 'ignore') return none(null);
  // An agent whose reads come from its transcript (Claude Code) names it at its start, before any hooked call:
  // journaled for a wrapper's session only (init's hooks start theirs at the first hooked call, which names it).
  // Other agents' reads are all hooked.
  if (
    call.phase === 'start' &&
    (!adapter?.transcript?.unjournaledReads || !call.transcriptPath || !(opts.env.AGENTSNAP_SESSION && opts.env.AGENTSNAP_WORKTREE))
  )
    return none(null);
  let ctx: Context;
  let repo: Repo;
  let id: string;
  let settings: Settings;
  try {
    const wrappedBy = opts.env.AGENTSNAP_SESSION && opts.env.AGENTSNAP_WORKTREE;
    // Always the session's worktree, whatever directory the payload names (the agent may have cd'ed).
    const dir = wrappedBy ? (opts.env.AGENTSNAP_WORKTREE as string) : (call.cwd ?? opts.cwd);
    ctx = await contextFor({ cwd: dir, env: opts.env, openContext: opts.openContext, shadow: 'create' });
    ({ repo, settings } = ctx);
    // This call took the Node path: a warm server answers the next ones.
    if (!opts.openContext) autoStartServer(repo, settings);
    if (wrappedBy) id = opts.env.AGENTSNAP_SESSION as string;
    else {
      if (call.phase === 'end') {
        const mapped = call.agentSessionId ? readMapping(repo, opts.agent, call.agentSessionId) : null;
        if (!mapped) return none(null);
        if (adapter?.callEnded) await closeEndedCalls(ctx, mapped, adapter);
        await endSession(ctx, mapped, {
          ...(adapter?.transcript?.unjournaledReads && call.transcriptPath ? { transcriptPath: call.transcriptPath } : {}),
        });
        return { action: 'end', session: mapped, step: null, warning: null };
      }
      id = await sessionForAgent(ctx, opts.agent, call.agentSessionId);
    }
  } catch (e) {
    const dir = opts.env.AGENTSNAP_WORKTREE ?? call.cwd ?? opts.cwd;
    return none(`agentsnap: warning: no snapshot for this ${call.tool ?? 'tool'} call: ${reason(e, dir)}`, 'failed');
  }
  if (call.phase === 'end') return none(null); // a wrapper ends its own session
  if (call.phase === 'start') {
    try {
      await recordTranscript(ctx, id, { path: call.transcriptPath as string });
      return { action: 'start', session: id, step: null, warning: null };
    } catch (e) {
      return none(`agentsnap: warning: the transcript of this session was not journaled: ${reason(e, repo.gitDir)}`, 'failed');
    }
  }
  const limit = settings.outputLimit;
  const clean = <T>(v: T): T => sanitize(v, { limit, patterns: settings.redactPatterns });
  const tool = call.tool ? clean(call.tool) : null;
  const routed: RoutedCall = { opts, ctx, id, call, adapter, tool, clean };
  return call.phase === 'pre' ? recordHookPre(routed) : recordHookPost(routed);
}

/**
 * Records the post of every open call of the session whose end the agent's own files show
 * (`callEnded`; with onlyFailed, only calls that failed: at a pre, a call that ended well may still get its post hook). One state read per pre of such an agent; its files are read only when a call is open.
 */
export async function closeEndedCalls(
  ctx: Context,
  id: string,
  adapter: AgentAdapter,
  opts: { except?: string | null; onlyFailed?: boolean } = {},
): Promise<void> {
  if (!adapter.callEnded) return;
  const open = (await loadState(ctx.repo, id, false)).session.open;
  for (const st of open) {
    if (!st.toolUseId || st.toolUseId === opts.except || !st.transcript?.path || st.source === 'transcript') continue;
    const ended = adapter.callEnded(st.transcript.path, st.toolUseId);
    // A call that ended well gets its own PostToolUse (a parallel call's may simply not have arrived yet).
    if (!ended || (opts.onlyFailed && ended.status !== 'failed')) continue;
    try {
      await recordPost(ctx, id, { step: st.step, status: ended.status, error: ended.error, output: null, durationMs: null });
    } catch {
      // Closed meanwhile (a late post hook), or the snapshot failed: the call's own hooks decide then.
    }
  }
}

/** The call's place in the transcript, looked up at its post (its pre may have run before the agent wrote it). */
function postTranscript(repo: Repo, id: string, agent: string, transcriptPath: string, toolUseId: string) {
  const loc = transcriptReader(agent, transcriptPath)?.locateCall(transcriptPath, toolUseId);
  if (!loc?.uuid) return null;
  const adapter = adapterOf(agent);
  const file = adapter?.transcriptPath ? adapter.transcriptPath(sessionPaths(repo, id).dir, transcriptPath) : transcriptPath;
  return {
    position: { path: file, uuid: loc.uuid, ...(loc.lineOffset !== undefined ? { offset: loc.lineOffset } : {}) },
    agentVersion: loc.agentVersion ? `${productName(agent)} ${loc.agentVersion}` : null,
    model: loc.model ?? null,
  };
}

/** A transcript no adapter reads: only its length is journaled. */
function transcriptSize(file: string): ToolCallLocation {
  try {
    return { path: file, offset: fs.statSync(file).size };
  } catch {
    return { path: file }; // gone: only its path is journaled
  }
}

function productName(agent: string): string {
  return adapterOf(agent)?.product ?? agent;
}

async function unprotected(
  ctx: Context,
  id: string,
  what: { phase: 'pre' | 'post'; tool: string | null; input?: unknown; toolUseId: string | null; step?: number },
  cause: unknown,
): Promise<HookOutcome> {
  const why = reason(cause, ctx.repo.gitDir);
  const warning = `agentsnap: warning: ${what.phase} snapshot of this ${what.tool ?? 'tool'} call failed (${why}); the step is marked unprotected`;
  if (isAgentsnapError(cause) && (cause.code === 'SessionNotRunning' || cause.code === 'UnknownSession' || cause.code === 'Busy')) {
    return {
      action: 'failed',
      session: id,
      step: null,
      warning: `agentsnap: warning: no ${what.phase} snapshot of this ${what.tool ?? 'tool'} call: ${why}`,
    };
  }
  try {
    const res = await recordUnprotected(ctx, id, { reason: why, ...what });
    return { action: 'unprotected', session: id, step: res.step, warning };
  } catch (e) {
    return { action: 'failed', session: id, step: null, warning: `${warning}; journaling that failed too: ${reason(e, ctx.repo.gitDir)}` };
  }
}

// Hooks written by `init` run without a wrapper: the agent's own session id maps to an agentsnap session.
function mappingFile(repo: Repo, agent: string, agentSessionId: string): string {
  const key = createHash('sha1').update(`${agent}\0${agentSessionId}\0${repo.worktree}`).digest('hex').slice(0, 24);
  return path.join(stateLayout.agentSessionsDir(repo), `${agent}-${key}`);
}

function readMapping(repo: Repo, agent: string, agentSessionId: string): string | null {
  try {
    const id = (readStateFile(mappingFile(repo, agent, agentSessionId))?.toString('utf8') ?? '').trim();
    return fs.existsSync(sessionPaths(repo, id).journal) ? id : null;
  } catch {
    return null; // no mapping, a torn one or a link in its place: a new session is begun for this agent session
  }
}

async function sessionForAgent(ctx: Context, agent: string, agentSessionId: string | null): Promise<string> {
  const { repo, settings } = ctx;
  const key = agentSessionId ?? 'default';
  const file = mappingFile(repo, agent, key);
  ensureStateDir(path.dirname(file));
  // acquire and release rather than withLock: what runs under the lock is this function's own code.
  const lock = await acquireLock(`${file}.lock`, { timeoutMs: settings.lockTimeoutMs, purpose: 'map agent session' });
  try {
    const mapped = readMapping(repo, agent, key);
    // From the state cache: every hook call comes through here, and the journal grows with the session.
    if (mapped && !(await sessionFinished(repo, mapped))) return mapped;
    const created = await startSession(ctx, { agent, command: null, owner: null });
    replaceStateFile(file, `${created.session}\n`);
    return created.session;
  } finally {
    lock.release();
  }
}

/** A pre or post call, routed to its session. */
interface RoutedCall {
  opts: HookOptions;
  ctx: Context;
  id: string;
  call: ReturnType<typeof parseHookCall>;
  adapter: ReturnType<typeof adapterOf>;
  /** The tool's name, redacted. */
  tool: string | null;
  clean: <T>(v: T) => T;
}

/** The conversation's first prompt, read from the agent's transcript when the session asks (see PreOptions.firstPrompt). */
function firstPromptOf(transcriptPath: string | null | undefined, agent: HookOptions['agent']): (() => string | null) | null {
  if (!transcriptPath) return null;
  return () =>
    transcriptReader(agent, transcriptPath)
      ?.readConversation(transcriptPath)
      .find((e) => e.kind === 'user')?.text ?? null;
}

/** A call's pre: its place in the agent's transcript (and the reads journaled from it first), then the pre snapshot. */
async function recordHookPre({ opts, ctx, id, call, adapter, tool, clean }: RoutedCall): Promise<HookOutcome> {
  const { repo } = ctx;
  const input = clean(call.input);
  let transcript: TranscriptPosition | null = null;
  let agentVersion = call.agentVersion;
  let model = call.model;
  // An agent whose read-only tools are not hooked (Claude Code): the calls since the last hook are journaled from the same tail read.
  let tail: TranscriptTail | null | undefined;
  let callOffset: number | undefined;
  let offered: ((since: number | undefined) => string[] | null) | null = null;
  if (call.transcriptPath) {
    // The path the agent's file ends up at (Gemini CLI under wrap runs with an overlay home that is gone afterwards).
    const file = adapter?.transcriptPath ? adapter.transcriptPath(sessionPaths(repo, id).dir, call.transcriptPath) : call.transcriptPath;
    const reader = transcriptReader(opts.agent, call.transcriptPath);
    if (reader?.unjournaledReads) tail = reader.readTail(call.transcriptPath);
    const read = tail;
    if (read && reader?.toolsOffered) offered = (since) => reader.toolsOffered?.(read, since) ?? null;
    const loc = reader ? reader.locateCall(call.transcriptPath, call.toolUseId, tail) : transcriptSize(call.transcriptPath);
    // A call whose line is not written yet (a hook answered by the warm server can be that fast) comes after every line there.
    callOffset = loc.lineOffset ?? tail?.size;
    loc.path = file;
    transcript = { path: loc.path, ...(loc.offset !== undefined ? { offset: loc.offset } : {}), ...(loc.uuid ? { uuid: loc.uuid } : {}) };
    agentVersion = agentVersion ?? (loc.agentVersion ? `${productName(opts.agent)} ${loc.agentVersion}` : null);
    model = model ?? loc.model ?? null;
  }
  try {
    // Calls the agent ended without a post hook (Codex's failed apply_patch) are closed first, as
    // it tells: not left open to overlap this call and end `interrupted`.
    // An agent whose call ids are made of the input may have refused posts behind it: calls that ended well are closed too.
    if (adapter?.callEnded) await closeEndedCalls(ctx, id, adapter, { except: call.toolUseId, onlyFailed: !adapter.callIdsFromInput });
    const res = await recordPre(ctx, id, {
      tool,
      input,
      toolUseId: call.toolUseId,
      transcript,
      agentVersion,
      model,
      cwd: call.cwd,
      env: opts.env,
      toolsOffered: offered,
      firstPrompt: firstPromptOf(call.transcriptPath, opts.agent),
      ...(tail && call.transcriptPath
        ? { transcriptTail: { path: call.transcriptPath, tail, ...(callOffset !== undefined ? { callOffset } : {}) } }
        : {}),
    });
    return { action: 'pre', session: id, step: res.step, warning: null };
  } catch (e) {
    return unprotected(ctx, id, { phase: 'pre', tool, input, toolUseId: call.toolUseId }, e);
  }
}

/** A call's post: the post snapshot, or a checkpoint where no pre came, or the step marked unprotected. */
async function recordHookPost({ opts, ctx, id, call, adapter, tool, clean }: RoutedCall): Promise<HookOutcome> {
  const { repo, settings } = ctx;
  // A call that looks done may have failed by the agent's own files (Codex CLI's rollout).
  const failure = adapter?.callFailed?.(call) ?? null;
  if (failure) {
    call.status = 'failed';
    call.error = call.error ?? failure;
  }
  const output = clean(call.output);
  const error = call.error ? clean(call.error) : null;
  try {
    const res = await recordPost(ctx, id, {
      ...(call.toolUseId
        ? { toolUseId: call.toolUseId, exactToolUseId: true, ...(adapter?.callIdsFromInput ? { uniqueToolUseId: true } : {}) }
        : {}),
      status: call.status,
      output,
      error,
      durationMs: call.durationMs,
      ...(call.transcriptPath && call.toolUseId
        ? { transcript: () => postTranscript(repo, id, opts.agent, call.transcriptPath as string, call.toolUseId as string) }
        : {}),
    });
    maybeStartAutoCheck(repo, id, settings);
    return { action: 'post', session: id, step: res.step, warning: null };
  } catch (e) {
    // Two open calls of the same tool and input, and no call id to tell whose end this is: neither is closed.
    if (isAgentsnapError(e) && e.code === 'AmbiguousOpenStep' && adapter?.callIdsFromInput)
      return { action: 'ignored', session: id, step: null, warning: null };
    if (isAgentsnapError(e) && e.code === 'NoOpenStep') {
      // Either the pre already failed (the step is unprotected: nothing more to record), or no pre ever came.
      const known = call.toolUseId ? loadSession(repo, id).steps.find((s) => s.toolUseId === call.toolUseId) : undefined;
      if (known) return { action: 'ignored', session: id, step: known.step, warning: null };
      try {
        const res = await recordCheckpoint(ctx, id, { tool, message: `after ${tool ?? 'a tool call'} (no pre snapshot)` });
        return { action: 'checkpoint', session: id, step: res.step, warning: null };
      } catch (e2) {
        return none(`agentsnap: warning: no snapshot after this ${tool ?? 'tool'} call: ${reason(e2, repo.gitDir)}`, 'failed');
      }
    }
    const open = call.toolUseId
      ? loadSession(repo, id).steps.find((s) => s.toolUseId === call.toolUseId && s.status === 'open')
      : undefined;
    return unprotected(ctx, id, { phase: 'post', tool, toolUseId: call.toolUseId, ...(open ? { step: open.step } : {}) }, e);
  }
}
