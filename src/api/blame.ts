// Public API of `blame` and `why` (issue 17): which tool call last wrote each
// line of a file, and the story of one line. Validates, then reads through
// blame/blame.ts (git blame over the snapshot chain) and the agent's transcript.
import fs from 'node:fs';
import { errors } from '../base/errors.js';
import { loadSettings } from '../settings/settings.js';
import { transcriptReader } from '../agents/registry.js';
import type { ConversationEntry } from '../agents/adapter.js';
import { blameFile, originStep, type BlameLine, type LineOrigin } from '../blame/blame.js';
import { describeStep } from '../session/read.js';
import { redactText } from '../session/redact.js';
import type { Session, Step } from '../session/model.js';
import { resolveSession, toRepoPath, type ResolvedSession, type SessionOptions } from './api.js';
import { committedAuthors } from '../blame/notes.js';
import { loadSession } from '../session/session.js';
import { latestCheckByStep, type CheckResult } from '../check/check.js';

export type { BlameLine, LineOrigin } from '../blame/blame.js';

export interface BlameOptions extends SessionOptions {
  /** The file, relative to the caller's directory (cwd). */
  path: string;
}

/** What wrote a line: the step with its tool, time and call, and the user's request that led to it. */
export interface LineAuthor {
  origin: LineOrigin;
  step: number | null;
  tool: string | null;
  time: string | null;
  what: string | null;
  /** The user's last message before the call in the agent's conversation (redacted), when the transcript holds it. */
  prompt: string | null;
}

export interface BlameResult {
  session: Session;
  source: ResolvedSession['source'];
  /** Worktree-relative. */
  path: string;
  lines: (BlameLine & { author: LineAuthor })[];
}

/** The conversation around one call: the user's request and the assistant's words before it. */
interface CallContext {
  prompt: string | null;
  assistant: string | null;
}

function contextReader(s: Session, patterns: RegExp[]): (st: Step) => CallContext {
  const conversations = new Map<string, ConversationEntry[]>();
  const memo = new Map<number, CallContext>();
  return (st) => {
    const known = memo.get(st.step);
    if (known) return known;
    let found: CallContext = { prompt: null, assistant: null };
    const file = st.transcript?.path;
    if (file && st.toolUseId) {
      let conv = conversations.get(file);
      if (!conv) conversations.set(file, (conv = transcriptReader(s.agent, file)?.readConversation(file) ?? []));
      const at = conv.findIndex((c) => c.kind === 'tool' && c.toolUseId === st.toolUseId);
      if (at !== -1) {
        const before = conv.slice(0, at).reverse();
        const user = before.find((c) => c.kind === 'user');
        const assistant = before.find((c) => c.kind === 'assistant' || c.kind === 'user');
        found = {
          prompt: user && user.kind === 'user' ? redactText(user.text, patterns) : null,
          assistant: assistant && assistant.kind === 'assistant' ? redactText(assistant.text, patterns) : null,
        };
      }
    }
    memo.set(st.step, found);
    return found;
  };
}

function authorOf(s: Session, origin: LineOrigin, context: (st: Step) => CallContext): LineAuthor {
  const st = originStep(s, origin);
  if (!st) return { origin, step: null, tool: null, time: null, what: null, prompt: null };
  const call = origin.kind === 'step';
  return {
    origin,
    step: st.step,
    tool: call ? st.tool : null,
    time: call ? (st.endedAt ?? st.startedAt) : st.startedAt,
    what: call ? describeStep(s, st) : null,
    prompt: call ? context(st).prompt : null,
  };
}

/** A line a commit's note attributes to a step of `s` (null: that session is not in this repository any more). */
function committedAuthor(s: Session | null, origin: Extract<LineOrigin, { kind: 'committed' }>): LineAuthor {
  const st = s?.steps.find((x) => x.step === origin.step) ?? null;
  return {
    origin,
    step: origin.step,
    tool: st?.tool ?? null,
    time: st ? (st.endedAt ?? st.startedAt) : null,
    what: s && st ? describeStep(s, st) : null,
    prompt: null,
  };
}

/** `agentsnap blame <file>`: each line of the file as it is now, with the step that last wrote it. */
export async function blame(opts: BlameOptions): Promise<BlameResult> {
  if (typeof opts.path !== 'string' || opts.path === '') throw errors.invalidArgument('blame needs a file: agentsnap blame <file>.');
  const r = await resolveSession(opts);
  const rel = toRepoPath(r.repo, opts.path);
  const abs = `${r.repo.worktree}/${rel}`;
  let contents: Buffer | null = null;
  try {
    // lstat: a symlink is blamed as the link a snapshot records, never read through (to a file outside the
    // repository, a FIFO that blocks, /dev/zero that never ends).
    const st = fs.lstatSync(abs);
    if (st.isDirectory()) throw errors.invalidArgument(`${rel} is a directory: blame takes a file.`);
    if (st.isSymbolicLink()) contents = Buffer.from(fs.readlinkSync(abs, { encoding: 'buffer' }));
    else if (!st.isFile()) throw errors.invalidArgument(`${rel} is not a regular file: blame takes a file.`);
    else contents = fs.readFileSync(abs);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  const settings = await loadSettings(r.repo);
  const context = contextReader(r.session, settings.redactPatterns);
  const blamed = await blameFile(r.repo, r.session, rel, contents);
  // Lines from before this session that a commit's note attributes to an earlier session's step.
  if (blamed.some((l) => l.origin.kind === 'before-session')) {
    const committed = await committedAuthors(r.repo, rel, contents);
    for (const l of blamed) {
      const c = committed.get(l.line);
      if (l.origin.kind === 'before-session' && c) l.origin = { kind: 'committed', ...c };
    }
  }
  const others = new Map<string, Session | null>();
  const sessionOf = (id: string): Session | null => {
    if (id === r.session.id) return r.session;
    if (!others.has(id)) {
      try {
        others.set(id, loadSession(r.repo, id));
      } catch {
        others.set(id, null); // gc'ed, or recorded in another clone
      }
    }
    return others.get(id) ?? null;
  };
  const lines = blamed.map((l) => ({
    ...l,
    author: l.origin.kind === 'committed' ? committedAuthor(sessionOf(l.origin.session), l.origin) : authorOf(r.session, l.origin, context),
  }));
  return { session: r.session, source: r.source, path: rel, lines };
}

export interface WhyOptions extends SessionOptions {
  path: string;
  line: number;
}

export interface WhyResult {
  session: Session;
  source: ResolvedSession['source'];
  path: string;
  line: BlameLine & { author: LineAuthor };
  /** The step's recorded call: its input, or a checkpoint's `-m` note. */
  input: unknown;
  message: string | null;
  status: Step['status'] | null;
  /** The assistant's words right before the call (redacted), when the transcript holds them. */
  assistant: string | null;
  /** The newest checks (`agentsnap check`) of the state before the step and of the state after it. */
  checks: { before: CheckResult | null; after: CheckResult | null };
}

function checksAround(s: Session, st: Step | null): WhyResult['checks'] {
  if (!st) return { before: null, after: null };
  const checks = latestCheckByStep(s);
  const earlier = s.steps.filter((x) => x.step < st.step && x.post && x.source !== 'transcript');
  const prev = earlier.length ? (earlier[earlier.length - 1] as Step).step : 0;
  return { before: checks.get(prev) ?? null, after: checks.get(st.step) ?? null };
}

/** `agentsnap why <file>:<line>`: the story of one line. */
export async function why(opts: WhyOptions): Promise<WhyResult> {
  if (!Number.isInteger(opts.line) || opts.line < 1)
    throw errors.invalidArgument(`the line must be a whole number of 1 or more, not ${JSON.stringify(opts.line)}.`);
  const b = await blame(opts);
  const line = b.lines.find((l) => l.line === opts.line);
  if (!line) {
    throw errors.invalidArgument(`${b.path} has ${b.lines.length} ${b.lines.length === 1 ? 'line' : 'lines'}, not ${opts.line}.`, {
      data: { path: b.path, lines: b.lines.length },
    });
  }
  const st = originStep(b.session, line.origin);
  const settings = await loadSettings((await resolveSession(opts)).repo);
  const context = st && line.origin.kind === 'step' ? contextReader(b.session, settings.redactPatterns)(st) : null;
  return {
    session: b.session,
    source: b.source,
    path: b.path,
    line,
    input: st && line.origin.kind === 'step' ? (st.input ?? null) : null,
    message: st?.message ?? null,
    status: st && line.origin.kind === 'step' ? st.status : null,
    assistant: context?.assistant ?? null,
    checks: checksAround(b.session, st),
  };
}
