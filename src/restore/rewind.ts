// Conversation rewind, agent-neutral: the adapter of the agent whose
// transcript the step records forks the conversation before it (Claude Code:
// agents/claude-transcript.ts); where none can, a digest of the session up to
// step N to paste into the agent.
import type { Session, Step } from '../session/model.js';
import { effectLabel } from '../session/effects.js';
import type { ChatFork } from '../agents/adapter.js';
import { ADAPTERS } from '../agents/registry.js';

export type { ChatFork } from '../agents/adapter.js';
export { findCut } from '../agents/claude-transcript.js';

export interface ChatDigest {
  kind: 'digest';
  text: string;
  reason: string;
}

export type ChatRewind = ChatFork | ChatDigest;

/** A plain-text digest of the session before step N, for agents whose conversation cannot be forked. */
export function sessionDigest(s: Session, before: number, worktree: string): string {
  const lines = [`agentsnap session ${s.id}: the tool calls before step ${before} (later ones were undone).`];
  for (const st of s.steps) {
    if (st.step >= before) break;
    const files = st.changed.map((c) => `${c.change} ${c.path}`).join(', ');
    const label = st.kind === 'checkpoint' ? `checkpoint${st.message ? `: ${st.message}` : ''}` : `${st.tool ?? 'tool'}: ${effectLabel(st)}`;
    lines.push(`- step ${st.step} ${label} (${st.status})${files ? ` -> ${files}` : ''}`);
  }
  const undone = s.steps.filter((st) => st.step >= before);
  if (undone.length > 0) {
    lines.push(`Steps ${before} to ${undone[undone.length - 1]?.step} were undone: the files in ${worktree} are as they were before step ${before}. Do not assume their changes exist.`);
  }
  return lines.join('\n');
}

/** Rewinds the conversation to before step N: a transcript fork when one is known and readable, else a digest. */
export function rewindChat(s: Session, step: Step, cwd: string): ChatRewind {
  const path = step.transcript?.path;
  const agent = path ? Object.values(ADAPTERS).find((a) => a.forkConversation && a.ownsTranscript?.(path, s.agent)) : undefined;
  if (agent?.forkConversation) {
    try {
      const fork = agent.forkConversation(step, { cwd });
      if (fork.subagentCall) fork.subagentStep = s.steps.find((x) => x.toolUseId === fork.subagentCall)?.step ?? null;
      return fork;
    } catch (e) {
      return { kind: 'digest', text: sessionDigest(s, step.step, s.worktree), reason: e instanceof Error ? e.message : String(e) };
    }
  }
  return { kind: 'digest', text: sessionDigest(s, step.step, s.worktree), reason: 'no transcript is recorded for this session' };
}
