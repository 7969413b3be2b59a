// `agentsnap replay`: a session rebuilt in order, for a person or an agent to
// regain context without re-running anything: user prompts and assistant
// messages from the agent's transcript where it is known, and every step with
// its recorded input, output and changed files.
import { resolveSession, type SessionOptions } from './api.js';
import { errors } from '../base/errors.js';
import { loadSettings } from '../settings/settings.js';
import { redactText, redactValue } from '../session/redact.js';
import type { ConversationEntry } from '../agents/adapter.js';
import { transcriptReader } from '../agents/registry.js';
import { planHistory, planLines, type PlanItem } from '../session/plan.js';
import { stepOf } from '../session/read.js';
import type { Session, Step } from '../session/model.js';
import type { ChangedPath } from '../session/journal.js';
import { fenceOf, printableLine, printableName, printableText } from '../base/printable.js';

export type ReplayEntry =
  | {
      type: 'session';
      session: string;
      worktree: string;
      agent: string | null;
      command: string[] | null;
      startedAt: string;
      baseHead: string | null;
      branch: string | null;
    }
  | { type: 'user' | 'assistant'; text: string; time: string | null }
  /** A tool call in the transcript that is not a step of this session (before it started, or not hooked). */
  | { type: 'call'; tool: string | null; input: unknown; time: string | null }
  | {
      type: 'step';
      step: number;
      kind: Step['kind'];
      tool: string | null;
      status: Step['status'];
      startedAt: string;
      durationMs: number | null;
      toolUseId: string | null;
      message: string | null;
      input: unknown;
      output: unknown;
      error: string | null;
      changed: ChangedPath[];
      /** Changes made between the previous snapshot and this step, outside any recorded call. */
      changedBefore: ChangedPath[];
      agentVersion: string | null;
      model: string | null;
      unprotectedReason: string | null;
      /** The agent's plan after this step, when this step changed it (its plan tool). */
      plan: PlanItem[] | null;
    }
  | { type: 'end'; time: string; exitCode: number | null; signal: string | null; changed: ChangedPath[] };

export interface ReplayOptions extends SessionOptions {
  /** Stop after this step. */
  until?: number | undefined;
}

function stepEntry(st: Step, plans: Map<number, PlanItem[]>): ReplayEntry {
  return {
    type: 'step',
    step: st.step,
    kind: st.kind,
    tool: st.tool,
    status: st.status,
    startedAt: st.startedAt,
    durationMs: st.durationMs,
    toolUseId: st.toolUseId,
    message: st.message ?? null,
    input: st.input ?? null,
    output: st.output ?? null,
    error: st.error ?? null,
    changed: st.changed,
    changedBefore: st.step > 1 ? st.changedBefore : [],
    agentVersion: st.agentVersion ?? null,
    model: st.model ?? null,
    unprotectedReason: st.unprotectedReason,
    plan: plans.get(st.step) ?? null,
  };
}

function timeOf(e: ReplayEntry): string | null {
  if (e.type === 'step') return e.startedAt;
  if (e.type === 'session') return e.startedAt;
  return e.time;
}

/** Builds the ordered entries of a session (pure, given its transcripts' conversations). */
export function buildReplay(s: Session, conversations: ConversationEntry[][], until?: number): ReplayEntry[] {
  const plans = new Map(planHistory(s).map((p) => [p.setAt, p.items]));
  const byToolUse = new Map<string, Step>();
  for (const st of s.steps) if (st.toolUseId) byToolUse.set(st.toolUseId, st);
  const used = new Set<number>();
  const body: ReplayEntry[] = [];
  const seen = new Set<string>();
  for (const conv of conversations) {
    for (const c of conv) {
      const key = c.uuid ? `${c.uuid}:${c.kind}:${c.kind === 'tool' ? c.toolUseId : c.text.slice(0, 40)}` : null;
      if (key) {
        if (seen.has(key)) continue;
        seen.add(key);
      }
      if (c.kind === 'tool') {
        const st = byToolUse.get(c.toolUseId);
        if (st && !used.has(st.step)) {
          used.add(st.step);
          body.push(stepEntry(st, plans));
        } else if (!st) body.push({ type: 'call', tool: c.name, input: c.input, time: c.time });
      } else body.push({ type: c.kind, text: c.text, time: c.time });
    }
  }
  // Steps the transcript does not hold (checkpoints, generic agents): by time.
  for (const st of s.steps) {
    if (used.has(st.step)) continue;
    const e = stepEntry(st, plans);
    let at = body.length;
    for (let i = 0; i < body.length; i++) {
      const t = timeOf(body[i] as ReplayEntry);
      const b = body[i] as ReplayEntry;
      if (t && t > st.startedAt) {
        at = i;
        break;
      }
      if (b.type === 'step' && b.step > st.step) {
        at = i;
        break;
      }
    }
    body.splice(at, 0, e);
  }
  const out: ReplayEntry[] = [
    {
      type: 'session',
      session: s.id,
      worktree: s.worktree,
      agent: s.agent,
      command: s.command,
      startedAt: s.createdAt,
      baseHead: s.baseHead,
      branch: s.branch,
    },
  ];
  if (until !== undefined) {
    const cut = body.findIndex((e) => e.type === 'step' && e.step === until);
    out.push(...(cut === -1 ? body : body.slice(0, cut + 1)));
    return out;
  }
  out.push(...body);
  if (s.ended) out.push({ type: 'end', time: s.ended.time, exitCode: s.ended.exitCode, signal: s.ended.signal, changed: s.ended.changed });
  return out;
}

/** `agentsnap replay`: the session in order, up to step `until`. */
export async function replay(
  opts: ReplayOptions = {},
): Promise<{ session: Session; entries: ReplayEntry[]; source: 'flag' | 'env' | 'recent' }> {
  if (opts.until !== undefined && (!Number.isInteger(opts.until) || opts.until < 0)) {
    throw errors.invalidArgument(`--until must be a step number, not ${JSON.stringify(opts.until)}.`);
  }
  const r = await resolveSession(opts);
  if (opts.until !== undefined && opts.until > 0) stepOf(r.session, opts.until);
  const paths: string[] = [];
  for (const st of r.session.steps) if (st.transcript?.path && !paths.includes(st.transcript.path)) paths.push(st.transcript.path);
  const settings = await loadSettings(r.repo);
  const conversations = paths.map((p) =>
    (transcriptReader(r.session.agent, p)?.readConversation(p) ?? []).map((c) =>
      c.kind === 'tool'
        ? { ...c, input: redactValue(c.input, settings.redactPatterns) }
        : { ...c, text: redactText(c.text, settings.redactPatterns) },
    ),
  );
  return { session: r.session, entries: buildReplay(r.session, conversations, opts.until), source: r.source };
}

/** Recorded text in a code block it cannot close, its control characters escaped (a terminal never runs them). */
function fence(text: string, lang = ''): string {
  return fenceOf(printableText(text), lang);
}

function changedLines(changed: ChangedPath[]): string {
  return changed
    .map((c) => `- ${c.change} \`${printableName(c.path)}\`${c.added === null ? ' (binary)' : ` (+${c.added} -${c.deleted ?? 0})`}`)
    .join('\n');
}

/** Shows a recorded output the way it reads best: shell output as text, anything else as JSON. */
function outputBlock(output: unknown): string {
  if (typeof output === 'string') return fence(output);
  if (output && typeof output === 'object') {
    const o = output as Record<string, unknown>;
    if (typeof o.stdout === 'string' || typeof o.stderr === 'string') {
      const parts: string[] = [];
      if (o.stdout) parts.push(fence(String(o.stdout)));
      if (o.stderr) parts.push(`stderr:\n\n${fence(String(o.stderr))}`);
      return parts.join('\n\n') || '(no output)';
    }
  }
  return fence(JSON.stringify(output, null, 2), 'json');
}

/**
 * The replay as Markdown. Every recorded text in it (prompts, messages, tool names, inputs, outputs, file
 * names) has its control characters escaped (base/printable.ts): printed to a terminal, it never runs an
 * escape sequence. `--format jsonl` (the entries as JSON) is exact.
 */
export function replayMarkdown(entries: ReplayEntry[]): string {
  const parts: string[] = [];
  for (const e of entries) {
    switch (e.type) {
      case 'session': {
        const lines = [`# agentsnap session ${e.session}`, '', `- worktree: \`${printableName(e.worktree)}\``];
        if (e.agent) lines.push(`- agent: ${printableName(e.agent)}`);
        if (e.command) lines.push(`- command: \`${printableLine(e.command.join(' '))}\``);
        lines.push(
          `- started: ${printableLine(e.startedAt)}${e.baseHead ? ` on ${printableName(e.branch ?? 'detached HEAD')} at ${e.baseHead.slice(0, 12)}` : ''}`,
        );
        parts.push(lines.join('\n'));
        break;
      }
      case 'user':
        parts.push(`## User\n\n${printableText(e.text.trim())}`);
        break;
      case 'assistant':
        parts.push(`## Assistant\n\n${printableText(e.text.trim())}`);
        break;
      case 'call':
        parts.push(
          `### Tool call ${printableName(e.tool ?? '')} (not recorded by agentsnap)\n\n${fence(JSON.stringify(e.input ?? null, null, 2), 'json')}`,
        );
        break;
      case 'step': {
        const what =
          e.kind === 'checkpoint' ? `checkpoint${e.tool ? ` ${printableName(e.tool)}` : ''}` : e.tool ? printableName(e.tool) : 'tool call';
        const dur = e.durationMs !== null && e.kind !== 'checkpoint' ? `, ${e.durationMs} ms` : '';
        const lines = [`### Step ${e.step}: ${what} (${e.status}${dur})`];
        if (e.message) lines.push('', printableText(e.message));
        if (e.changedBefore.length > 0) lines.push('', 'Changed outside tool calls before this step:', '', changedLines(e.changedBefore));
        if (e.input !== null && e.input !== undefined) lines.push('', 'Input:', '', fence(JSON.stringify(e.input, null, 2), 'json'));
        if (e.output !== null && e.output !== undefined) lines.push('', 'Output:', '', outputBlock(e.output));
        if (e.error) lines.push('', `Error: ${printableText(e.error)}`);
        if (e.unprotectedReason) lines.push('', `Unprotected (no snapshot): ${printableLine(e.unprotectedReason)}`);
        if (e.plan) lines.push('', 'Plan after this step:', '', planLines(e.plan));
        lines.push('', e.changed.length > 0 ? `Changed:\n\n${changedLines(e.changed)}` : e.kind === 'checkpoint' ? '' : 'Changed: nothing');
        parts.push(lines.join('\n').trimEnd());
        break;
      }
      case 'end': {
        const how = e.signal ? `killed by ${e.signal}` : e.exitCode !== null ? `exit code ${e.exitCode}` : 'ended';
        const lines = [`## Session ended (${how})`];
        if (e.changed.length > 0) lines.push('', 'Changed after the last step:', '', changedLines(e.changed));
        parts.push(lines.join('\n'));
        break;
      }
    }
  }
  return `${parts.join('\n\n')}\n`;
}
