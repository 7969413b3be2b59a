// The agent's environment as of a step (issue 16), derived from the journal
// when asked: the directory the call ran in, the agent and its version, the
// model, the command the session was started with, and the names of the
// environment variables that differ from the session's first call. Recorded
// on the tool-call path: the call's directory when the agent left the
// session's, and those names when they differ from the previous call's.
// Never recorded: the values of environment variables. The tools the agent
// offered its model come from its transcript when it names them (Claude Code's
// api-request-shape lines), journaled at a pre when they changed.
import { readStateFile, replaceStateFile } from '../base/state-dir.js';
import path from 'node:path';
import { createHmac, randomBytes } from 'node:crypto';
import type { Session } from './model.js';
import type { EnvChange } from './journal.js';

export type { EnvChange };

export interface StepEnvironment {
  cwd: string;
  agent: string | null;
  /** `claude-code 2.1.3`: the newest version a step up to this one recorded. */
  agentVersion: string | null;
  model: string | null;
  command: string[] | null;
  /** The variables that differed from the first call as of this step (null: no step journaled any; all three empty: back as at the first call). */
  envChanged: EnvChange | null;
  /** The step that journaled envChanged. */
  envChangedAt: number | null;
  /** The tools the agent offered its model as of this step (names; null: its files do not say, see docs/reference.md). */
  tools: string[] | null;
  /** The step that journaled them. */
  toolsAt: number | null;
}

export function environmentAt(s: Session, step: number): StepEnvironment {
  let agentVersion: string | null = null;
  let model: string | null = null;
  let envChanged: EnvChange | null = null;
  let envChangedAt: number | null = null;
  let tools: string[] | null = null;
  let toolsAt: number | null = null;
  let cwd = s.cwd;
  for (const st of s.steps) {
    if (st.step > step) break;
    if (st.agentVersion) agentVersion = st.agentVersion;
    if (st.model) model = st.model;
    if (st.envChanged) {
      envChanged = st.envChanged;
      envChangedAt = st.step;
    }
    if (st.tools) {
      tools = st.tools;
      toolsAt = st.step;
    }
    if (st.step === step) cwd = st.cwd ?? s.cwd;
  }
  return { cwd, agent: s.agent, agentVersion, model, command: s.command, envChanged, envChangedAt, tools, toolsAt };
}

export function envEmpty(c: EnvChange): boolean {
  return c.added.length === 0 && c.removed.length === 0 && c.changed.length === 0;
}

/**
 * The shell's own bookkeeping, not the agent's environment: a hook's shell (or
 * the Node process it execs when no server answers) may set these differently
 * from call to call.
 */
const SHELL_VARIABLES = new Set(['PWD', 'OLDPWD', 'SHLVL', '_']);

/** What state.json keeps for the hot path: the key, and the digest of the previous call's environment. */
export interface EnvState {
  key: string;
  digest: string;
}

/**
 * The session's reference environment (`env-base.json` in the session's
 * directory, mode 0600, never in the journal, never pushed): per variable an
 * HMAC-SHA256 of its value under a random key of the session, so the value
 * cannot be recovered from it without the key, and nothing leaves the
 * machine.
 */
interface EnvBase {
  v: 1;
  key: string;
  vars: Record<string, string>;
}

function entries(env: NodeJS.ProcessEnv): [string, string][] {
  // The default sort (UTF-16 code units) without a comparator: the hot path's largest cost otherwise.
  const names = Object.keys(env)
    .filter((k) => typeof env[k] === 'string' && !SHELL_VARIABLES.has(k))
    .sort();
  return names.map((k) => [k, env[k] as string]);
}

function hashValue(key: Buffer, name: string, value: string): string {
  return createHmac('sha256', key).update(name).update('\0').update(value).digest('base64url').slice(0, 22);
}

function digestOf(key: Buffer, vars: [string, string][]): string {
  // One update of the joined text: an update per name and value costs more than the hash (hot path).
  let text = '';
  for (const [k, v] of vars) text += `${k}\0${v}\0`;
  return createHmac('sha256', key).update(text).digest('base64url');
}

function sameChange(a: EnvChange | null | undefined, b: EnvChange | null): boolean {
  const x = a && !envEmpty(a) ? a : null;
  const y = b && !envEmpty(b) ? b : null;
  if (!x || !y) return x === y;
  return (
    x.added.join('\0') === y.added.join('\0') &&
    x.removed.join('\0') === y.removed.join('\0') &&
    x.changed.join('\0') === y.changed.join('\0')
  );
}

function readBase(file: string): EnvBase | null {
  try {
    const b = JSON.parse(readStateFile(file)?.toString('utf8') ?? 'null') as EnvBase | null;
    return b && b.v === 1 && typeof b.key === 'string' && b.vars && typeof b.vars === 'object' ? b : null;
  } catch {
    return null; /* torn or foreign (a link): no base, the next pre records one */
  }
}

function writeBase(file: string, base: EnvBase): void {
  replaceStateFile(file, JSON.stringify(base));
}

/**
 * At a call's pre (under the session lock): the names that differ from the
 * session's first call, when they are not what the previous call journaled
 * (`last`, the fold's); undefined otherwise. The first call that carries an
 * environment becomes the reference. Cost while nothing changed: one HMAC over
 * the environment, compared with the previous call's digest in state.json (no
 * file read, no process); the reference file is read only when it differs.
 * `state` is updated in place (the caller writes it with the call's event).
 */
export function envChangeAt(
  sessionDir: string,
  state: { env?: EnvState },
  env: NodeJS.ProcessEnv,
  last: EnvChange | null | undefined,
): EnvChange | undefined {
  const vars = entries(env);
  const file = path.join(sessionDir, 'env-base.json');
  if (state.env) {
    const digest = digestOf(Buffer.from(state.env.key, 'hex'), vars);
    if (digest === state.env.digest) return undefined;
  }
  const base = readBase(file);
  if (!base) {
    const key = randomBytes(32);
    writeBase(file, { v: 1, key: key.toString('hex'), vars: Object.fromEntries(vars.map(([k, v]) => [k, hashValue(key, k, v)])) });
    state.env = { key: key.toString('hex'), digest: digestOf(key, vars) };
    return undefined;
  }
  const key = Buffer.from(base.key, 'hex');
  state.env = { key: base.key, digest: digestOf(key, vars) };
  const now = new Map(vars);
  const change: EnvChange = { added: [], removed: [], changed: [] };
  for (const [k, v] of vars) {
    const was = base.vars[k];
    if (was === undefined) change.added.push(k);
    else if (was !== hashValue(key, k, v)) change.changed.push(k);
  }
  for (const k of Object.keys(base.vars).sort()) if (!now.has(k)) change.removed.push(k);
  return sameChange(last, change) ? undefined : change;
}
