// Conversation rewind, agent-neutral: the adapter of the agent whose
// transcript the step records forks the conversation before it (Claude Code:
// agents/claude-transcript.ts); where none can, a digest of the session up to
// step N to paste into the agent.
import type { Session, Step } from '../session/model.js';
import { effectLabel } from '../session/effects.js';
import type { ChatFork } from '../agents/adapter.js';
import { ADAPTERS } from '../agents/registry.js';

export type { ChatFork } from '../agents/adapter.js';

export interface ChatDigest {
  kind: 'digest';
  text: string;
  reason: string;
}

export type ChatRewind = ChatFork | ChatDigest;

/**
 * A plain-text digest of the session before step N, for agents whose conversation cannot be forked.
 * `filesRestored`: the worktree is back to before step N (this call or the last undo put it there);
 * otherwise the digest says the files still hold the later steps' changes.
 */
export function sessionDigest(s: Session, before: number, worktree: string, filesRestored = true): string {
  const lines = [`agentsnap session ${s.id}: the tool calls before step ${before} (later ones ${filesRestored ? 'were undone' : 'are taken back'}).`];
  for (const st of s.steps) {
    if (st.step >= before) break;
    const files = st.changed.map((c) => `${c.change} ${c.path}`).join(', ');
    const label = st.kind === 'checkpoint' ? `checkpoint${st.message ? `: ${st.message}` : ''}` : `${st.tool ?? 'tool'}: ${effectLabel(st)}`;
    lines.push(`- step ${st.step} ${label} (${st.status})${files ? ` -> ${files}` : ''}`);
  }
  const undone = s.steps.filter((st) => st.step >= before);
  const last = undone[undone.length - 1]?.step;
  if (undone.length > 0 && filesRestored) {
    lines.push(`Steps ${before} to ${last} were undone: the files in ${worktree} are as they were before step ${before}. Do not assume their changes exist.`);
  } else if (undone.length > 0) {
    lines.push(`Steps ${before} to ${last} are taken back in the conversation only: the files in ${worktree} still hold their changes (\`agentsnap undo ${before}\` puts the files back).`);
  }
  return lines.join('\n');
}

/** Why a step's conversation cannot be forked, in the user's words (what is recorded, and whose it is). */
function noForkReason(s: Session, step: Step, transcript: string | undefined): string {
  const owner = transcript ? Object.values(ADAPTERS).find((a) => !a.forkConversation && a.ownsTranscript?.(transcript, s.agent)) : undefined;
  if (transcript && owner) return `${owner.displayName} conversations cannot be forked by agentsnap; its transcript is recorded: ${transcript}`;
  if (transcript) return `the transcript recorded for step ${step.step} is no agent's agentsnap can fork: ${transcript}`;
  if (s.agentTranscript) return `the session's transcript is recorded (${s.agentTranscript}), but not where step ${step.step} is in it`;
  return 'no transcript is recorded for this session';
}

/**
 * Rewinds the conversation to before step N: a transcript fork when one is known and readable, else a digest.
 * `filesRestored` (default true): whether the worktree is back to before step N, for the digest's words.
 */
export function rewindChat(s: Session, step: Step, cwd: string, opts: { filesRestored?: boolean } = {}): ChatRewind {
  const filesRestored = opts.filesRestored ?? true;
  const path = step.transcript?.path;
  // An agent whose transcript it is but that cannot fork (Codex, Gemini) is asked first: Claude Code's
  // adapter claims any transcript of a session with no agent recorded.
  const cannot = path ? Object.values(ADAPTERS).some((a) => !a.forkConversation && a.ownsTranscript?.(path, s.agent)) : false;
  const agent = path && !cannot ? Object.values(ADAPTERS).find((a) => a.forkConversation && a.ownsTranscript?.(path, s.agent)) : undefined;
  if (agent?.forkConversation) {
    try {
      const fork = agent.forkConversation(step, { cwd });
      if (fork.subagentCall) fork.subagentStep = s.steps.find((x) => x.toolUseId === fork.subagentCall)?.step ?? null;
      return fork;
    } catch (e) {
      return { kind: 'digest', text: sessionDigest(s, step.step, s.worktree, filesRestored), reason: e instanceof Error ? e.message : String(e) };
    }
  }
  return { kind: 'digest', text: sessionDigest(s, step.step, s.worktree, filesRestored), reason: noForkReason(s, step, path) };
}
