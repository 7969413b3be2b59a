// The adapters, by name, and recognising an agent from its command line.
import path from 'node:path';
import type { Agent, AgentAdapter, TranscriptReader } from './adapter.js';
import { claude } from './claude.js';
import { codex } from './codex.js';
import { gemini } from './gemini.js';
import { qwen } from './qwen.js';
import { copilot } from './copilot.js';
import { opencode } from './opencode.js';
import { cline } from './cline.js';
import { generic } from './generic.js';
import { describeCallGeneric, type CallDescription } from './describe.js';

/** Every adapter, one line each; `generic` (nothing injected) last. The rest of agentsnap asks this list, never names an agent. */
const LIST: readonly AgentAdapter[] = [claude, codex, gemini, qwen, copilot, opencode, cline, generic];

export const ADAPTERS: Readonly<Record<Agent, AgentAdapter>> = Object.fromEntries(LIST.map((a) => [a.name, a]));

/** The agents' names (`wrap --agent`, `hook <agent>`). */
export const AGENTS: readonly Agent[] = LIST.map((a) => a.name);

/** The agents `wrap` recognises from their command line. */
export const RECOGNISED_AGENTS: readonly Agent[] = LIST.filter((a) => a.name !== 'generic').map((a) => a.name);

/** The agents `init` writes project hooks for. */
export const INIT_AGENTS: readonly Agent[] = LIST.filter((a) => a.init).map((a) => a.name);

/** The ref prefixes agents write into the user's repository themselves (AgentAdapter.repoRefs), each once. */
export const AGENT_REPO_REFS: readonly string[] = [...new Set(LIST.flatMap((a) => a.repoRefs ?? []))];

/** The adapter of `agent` (the name a hook command or a session records), or null for a name agentsnap does not know. */
export function adapterOf(agent: string | null): AgentAdapter | null {
  return agent !== null && Object.hasOwn(ADAPTERS, agent) ? (ADAPTERS[agent] ?? null) : null;
}

/** The adapter of `agent`, or the generic one (nothing injected) for a name agentsnap does not know. */
export function adapterOrGeneric(agent: string | null): AgentAdapter {
  return adapterOf(agent) ?? generic;
}

/** The agent and the index of the word naming it (its own options follow that word): its program, or the script a runner (node, npx…) starts. */
export function findAgent(command: string[]): { agent: Agent; index: number } | null {
  const runners = new Set(['node', 'npx', 'bunx', 'bun', 'pnpx', 'deno', 'env', 'exec']);
  for (const [index, arg] of command.slice(0, 4).entries()) {
    if (arg.startsWith('-')) continue;
    const base = path
      .basename(arg)
      .replace(/\.(exe|cmd|js|mjs|cjs)$/i, '')
      .replace(/@[\d.]+.*$/, '')
      .toLowerCase();
    for (const a of LIST) if (a.isCommand(arg, base)) return { agent: a.name, index };
    if (!runners.has(base)) break;
  }
  return null;
}

/** The adapter whose product name a step's `agentVersion` starts with (`claude-code 2.1.3`), for a session that names no agent. */
export function adapterOfProduct(agentVersion: string | null | undefined): AgentAdapter | null {
  const product = agentVersion?.split(' ')[0];
  return product ? (Object.values(ADAPTERS).find((a) => a.product === product) ?? null) : null;
}

/**
 * What a recorded call was: the agent's own reading of its tool input (the adapter's `describeCall`), else
 * the agent-neutral one. `agent` is the session's; `agentVersion` the step's, for sessions that name none.
 */
export function describeCall(
  agent: string | null,
  agentVersion: string | null | undefined,
  tool: string | null,
  input: unknown,
): CallDescription | null {
  if (input === undefined || input === null) return null;
  const adapter = adapterOf(agent) ?? adapterOfProduct(agentVersion);
  return adapter?.describeCall?.(tool, input) ?? describeCallGeneric(tool, input);
}

/**
 * The reader of a session's transcript: its agent's, else the one of the adapter that owns the file (a
 * session that names no agent); null when no adapter reads it.
 */
export function transcriptReader(agent: string | null, file: string): TranscriptReader | null {
  const own = adapterOf(agent)?.transcript;
  if (own) return own;
  return Object.values(ADAPTERS).find((a) => a.transcript && a.ownsTranscript?.(file, agent))?.transcript ?? null;
}

/** Whether the agent leaves read-only tools unhooked and the session imports them from its transcript (Claude Code). */
export function importsReadCalls(agent: string | null): boolean {
  return !!adapterOf(agent)?.transcript?.unjournaledReads;
}
