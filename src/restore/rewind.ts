// Conversation rewind, agent-neutral: the adapter of the agent whose
// transcript the step records forks the conversation before it (Claude Code:
// agents/claude-transcript.ts, Codex CLI: codex-rollout.ts, Gemini CLI:
// gemini-chat.ts), or compacts it (`undo N --compact`: everything before
// step N one digest, built here); where none can, a digest of the session up
// to step N to paste into the agent.
import type { Session, Step } from '../session/model.js';
import { effectLabel } from '../session/effects.js';
import type { AgentAdapter, ChatCompact, ChatFork, ConversationEntry, ForkPoint } from '../agents/adapter.js';
import { ADAPTERS, adapterOf } from '../agents/registry.js';

export type { ChatCompact, ChatFork, ConversationSize } from '../agents/adapter.js';

export interface ChatDigest {
  kind: 'digest';
  text: string;
  reason: string;
}

export type ChatRewind = ChatFork | ChatCompact | ChatDigest;

/**
 * A plain-text digest of the session before step N, for agents whose conversation cannot be forked.
 * `filesRestored`: the worktree is back to before step N (this call or the last undo put it there);
 * otherwise the digest says the files still hold the later steps' changes.
 */
export function sessionDigest(s: Session, before: number, worktree: string, filesRestored = true): string {
  const lines = [
    `agentsnap session ${s.id}: the tool calls before step ${before} (later ones ${filesRestored ? 'were undone' : 'are taken back'}).`,
  ];
  for (const st of s.steps) {
    if (st.step >= before) break;
    const files = st.changed.map((c) => `${c.change} ${c.path}`).join(', ');
    const label =
      st.kind === 'checkpoint' ? `checkpoint${st.message ? `: ${st.message}` : ''}` : `${st.tool ?? 'tool'}: ${effectLabel(st)}`;
    lines.push(`- step ${st.step} ${label} (${st.status})${files ? ` -> ${files}` : ''}`);
  }
  const undone = s.steps.filter((st) => st.step >= before);
  const last = undone[undone.length - 1]?.step;
  if (undone.length > 0 && filesRestored) {
    lines.push(
      `Steps ${before} to ${last} were undone: the files in ${worktree} are as they were before step ${before}. Do not assume their changes exist.`,
    );
  } else if (undone.length > 0) {
    lines.push(
      `Steps ${before} to ${last} are taken back in the conversation only: the files in ${worktree} still hold their changes (\`agentsnap undo ${before}\` puts the files back).`,
    );
  }
  return lines.join('\n');
}

/** The adapter whose transcript `file` is: the session's agent's, else the one whose files it is by its path, else any that claims it. */
function ownerOf(s: Session, file: string): AgentAdapter | undefined {
  const own = adapterOf(s.agent);
  if (own?.ownsTranscript?.(file, s.agent)) return own;
  // '' names no agent: each adapter then judges by the path alone (Claude Code's claims any file of a session naming none).
  const adapters = Object.values(ADAPTERS);
  return adapters.find((a) => a.ownsTranscript?.(file, '')) ?? adapters.find((a) => a.ownsTranscript?.(file, s.agent));
}

/** Why a step's conversation cannot be forked, in the user's words (what is recorded, and whose it is). */
function noForkReason(s: Session, step: Step, transcript: string | undefined, owner: AgentAdapter | undefined, what = 'forked'): string {
  if (transcript && owner)
    return `${owner.displayName} conversations cannot be ${what} by agentsnap; its transcript is recorded: ${transcript}`;
  if (transcript) return `the transcript recorded for step ${step.step} is no agent's agentsnap can fork: ${transcript}`;
  if (s.agentTranscript) return `the session's transcript is recorded (${s.agentTranscript}), but not where step ${step.step} is in it`;
  return 'no transcript is recorded for this session';
}

/** Step N as a fork point: with how many earlier steps recorded the same call in the same transcript. */
function forkPoint(s: Session, step: Step): ForkPoint {
  const occurrence = s.steps.filter(
    (x) => x.step < step.step && x.toolUseId !== null && x.toolUseId === step.toolUseId && x.transcript?.path === step.transcript?.path,
  ).length;
  return { step: step.step, transcript: step.transcript, toolUseId: step.toolUseId, occurrence };
}

/**
 * Rewinds the conversation to before step N: a transcript fork when one is known and readable, else a digest.
 * `filesRestored` (default true): whether the worktree is back to before step N, for the digest's words.
 */
export function rewindChat(s: Session, step: Step, cwd: string, opts: { filesRestored?: boolean } = {}): ChatRewind {
  const filesRestored = opts.filesRestored ?? true;
  const path = step.transcript?.path;
  const owner = path ? ownerOf(s, path) : undefined;
  if (owner?.forkConversation) {
    try {
      const fork = owner.forkConversation(forkPoint(s, step), { cwd });
      if (fork.subagentCall) fork.subagentStep = s.steps.find((x) => x.toolUseId === fork.subagentCall)?.step ?? null;
      return fork;
    } catch (e) {
      return {
        kind: 'digest',
        text: sessionDigest(s, step.step, s.worktree, filesRestored),
        reason: e instanceof Error ? e.message : String(e),
      };
    }
  }
  return { kind: 'digest', text: sessionDigest(s, step.step, s.worktree, filesRestored), reason: noForkReason(s, step, path, owner) };
}

const clip = (t: string, n: number) => (t.length > n ? `${t.slice(0, n - 1)}…` : t);
const oneLine = (t: string) => t.replace(/\s+/g, ' ').trim();

/**
 * The digest that replaces the conversation before step N in a compacted fork: the user's requests and the
 * agent's words (its decisions) from the conversation, and per step the call, the files it changed, and a
 * failure with its error. The files are as they are now (a compaction restores none).
 */
export function compactDigest(s: Session, before: number, prior: ConversationEntry[], kept: ConversationEntry[] = []): string {
  const lines = [
    `[agentsnap] A digest of this conversation before step ${before} (session ${s.id}); the messages it replaces were removed to make the conversation shorter. The files in ${s.worktree} are unchanged: they hold the changes of every step below.`,
  ];
  const requests = prior
    .filter((e) => e.kind === 'user')
    .map((e) => oneLine((e as { text: string }).text))
    .filter(Boolean);
  if (requests.length > 0) {
    lines.push('', "The user's requests:");
    for (const r of requests) lines.push(`- ${clip(r, 2000)}`);
  }
  const said = prior
    .filter((e) => e.kind === 'assistant')
    .map((e) => oneLine((e as { text: string }).text))
    .filter(Boolean);
  if (said.length > 0) {
    lines.push('', 'What the agent said it would do or had decided:');
    for (const t of said) lines.push(`- ${clip(t, 500)}`);
  }
  // A step before N whose call is in the kept part shared step N's model turn: it stays as it happened. A call id can
  // repeat (Gemini CLI's are its tool and input): the last k steps of an id the kept part holds k times are the kept ones.
  const keptCount = new Map<string, number>();
  for (const e of kept) if (e.kind === 'tool') keptCount.set(e.toolUseId, (keptCount.get(e.toolUseId) ?? 0) + 1);
  const inKept = new Set<number>();
  for (const [id, n] of keptCount) for (const st of s.steps.filter((x) => x.toolUseId === id).slice(-n)) inKept.add(st.step);
  const steps = s.steps.filter((st) => st.step < before && !inKept.has(st.step));
  if (steps.length > 0) {
    lines.push('', 'The steps (tool calls) so far:');
    for (const st of steps) {
      const files = st.changed.map((c) => `${c.change} ${c.path}`).join(', ');
      const label =
        st.kind === 'checkpoint' ? `checkpoint${st.message ? `: ${st.message}` : ''}` : `${st.tool ?? 'tool'}: ${effectLabel(st)}`;
      const failed =
        st.status === 'failed'
          ? ` FAILED${st.error ? `: ${clip(oneLine(st.error), 300)}` : ''}`
          : st.status === 'done'
            ? ''
            : ` (${st.status})`;
      lines.push(`- step ${st.step} ${clip(label, 300)}${failed}${files ? ` -> ${files}` : ''}`);
    }
  }
  lines.push('', `The conversation continues below from step ${before}, as it happened.`);
  return lines.join('\n');
}

/** `undo N --compact`: a fork whose part before step N is one digest, the rest kept; files untouched. A digest to paste when the agent's conversation cannot be compacted. */
export function compactChat(s: Session, step: Step, cwd: string): ChatCompact | ChatDigest {
  const path = step.transcript?.path;
  const owner = path ? ownerOf(s, path) : undefined;
  const digestOf = (prior: ConversationEntry[], kept: ConversationEntry[]) => compactDigest(s, step.step, prior, kept);
  if (owner?.compactConversation) {
    try {
      const fork = owner.compactConversation(forkPoint(s, step), digestOf, { cwd });
      if (fork.subagentCall) fork.subagentStep = s.steps.find((x) => x.toolUseId === fork.subagentCall)?.step ?? null;
      return fork;
    } catch (e) {
      return { kind: 'digest', text: compactDigest(s, step.step, []), reason: e instanceof Error ? e.message : String(e) };
    }
  }
  return { kind: 'digest', text: compactDigest(s, step.step, []), reason: noForkReason(s, step, path, owner, 'compacted') };
}
