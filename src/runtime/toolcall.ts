// Library API for agents written in JavaScript/TypeScript: open a session for
// a directory, then wrap each tool call (pre snapshot, run, post snapshot,
// journal) in one typed call.
import { contextFor } from '../api/open.js';
import type { Context } from '../session/context.js';
import { isAgentsnapError } from '../base/errors.js';
import { assertSessionId } from '../base/ids.js';
import {
  endSession,
  recordCheckpoint,
  recordPost,
  recordPre,
  recordUnprotected,
  resumeSession,
  sessionPaths,
  startSession,
  wrapperOwner,
  type SnapshotResult,
} from '../session/session.js';
import { sanitize } from '../session/redact.js';
import fs from 'node:fs';

export interface OpenSessionOptions {
  /** Session id to start, or to continue when it exists. Default: $AGENTSNAP_SESSION (under `wrap`), else a new one. */
  session?: string;
  /** Agent name journaled with the session. */
  agent?: string;
  env?: NodeJS.ProcessEnv;
}

export interface ToolCallOptions {
  /** The agent's own id of the call. */
  toolUseId?: string;
  /** Called when a snapshot could not be taken (the call still runs; its step is marked unprotected). */
  onWarning?: (message: string) => void;
}

export interface AgentSession {
  readonly id: string;
  readonly worktree: string;
  /** Runs one tool call between a pre and a post snapshot; its result (or error, rethrown) is journaled. */
  toolCall<T>(name: string, input: unknown, fn: () => T | Promise<T>, opts?: ToolCallOptions): Promise<T>;
  /** A checkpoint step of the worktree as it is now. */
  checkpoint(message?: string): Promise<SnapshotResult>;
  /** Ends the session with a final snapshot (a session joined from $AGENTSNAP_SESSION is left to its wrapper). */
  end(): Promise<void>;
}

/**
 * Opens a session for the worktree holding `dir`. A session this process
 * starts is owned by it (it counts as running while the process lives).
 */
export async function openSession(dir: string, opts: OpenSessionOptions = {}): Promise<AgentSession> {
  const env = opts.env ?? process.env;
  const ctx = await contextFor({ cwd: dir, env, shadow: 'create' });
  const { repo } = ctx;
  const joined = !opts.session && env.AGENTSNAP_SESSION ? env.AGENTSNAP_SESSION : null;
  let id: string;
  if (joined) id = assertSessionId(joined);
  else if (opts.session && fs.existsSync(sessionPaths(repo, assertSessionId(opts.session)).journal)) {
    id = (await resumeSession(ctx, opts.session, { agent: opts.agent ?? null, owner: wrapperOwner() })).session;
  } else {
    id = (await startSession(ctx, { agent: opts.agent ?? null, owner: wrapperOwner(), ...(opts.session ? { id: opts.session } : {}) }))
      .session;
  }
  return sessionHandle(ctx, id, joined !== null);
}

function sessionHandle(ctx: Context, id: string, joined: boolean): AgentSession {
  const { repo, settings } = ctx;
  const clean = <T>(v: T): T => sanitize(v, { limit: settings.outputLimit, patterns: settings.redactPatterns });
  const warn = (opts: ToolCallOptions | undefined, e: unknown, what: string) =>
    opts?.onWarning?.(`agentsnap: ${what} snapshot failed (${e instanceof Error ? e.message : String(e)}); the step is marked unprotected`);
  return {
    id,
    worktree: repo.worktree,
    async toolCall<T>(name: string, input: unknown, fn: () => T | Promise<T>, opts?: ToolCallOptions): Promise<T> {
      const toolUseId = opts?.toolUseId ?? null;
      let step: number | null = null;
      try {
        step = (await recordPre(ctx, id, { tool: name, input: clean(input), toolUseId, env: repo.callerEnv })).step;
      } catch (e) {
        if (isAgentsnapError(e) && e.code === 'SessionNotRunning') throw e;
        warn(opts, e, 'pre');
        await recordUnprotected(ctx, id, { phase: 'pre', tool: name, reason: String((e as Error).message), toolUseId }).catch(() => {
          // the failure was warned above; the journal cannot take its record either
        });
      }
      const started = Date.now();
      const close = async (status: 'done' | 'failed', output: unknown, error: string | null) => {
        if (step === null) return;
        try {
          await recordPost(ctx, id, {
            step,
            status,
            output: clean(output),
            error: error ? clean(error) : null,
            durationMs: Date.now() - started,
          });
        } catch (e) {
          warn(opts, e, 'post');
          await recordUnprotected(ctx, id, { step, phase: 'post', tool: name, reason: String((e as Error).message) }).catch(() => {
            // the failure was warned above; the journal cannot take its record either
          });
        }
      };
      let result: T;
      try {
        result = await fn();
      } catch (e) {
        await close('failed', undefined, e instanceof Error ? e.message : String(e));
        throw e;
      }
      await close('done', result, null);
      return result;
    },
    checkpoint: (message) => recordCheckpoint(ctx, id, { message: message ?? null }),
    async end() {
      if (!joined) await endSession(ctx, id);
    },
  };
}
