// Line-level blame to the tool call (issue 17): `git blame` over the
// session's snapshot chain (baseline → step 1 pre → step 1 post → step 2 pre
// …, one commit each), so a line a shell command wrote is attributed exactly
// like one an Edit wrote. A line's commit says who last wrote it: a step's
// post (that call), a step's pre (changed between calls, not by a recorded
// call), the baseline or older (before the session), or none (in the worktree,
// not yet recorded). A line an operation (undo, redo, restore, revert, op
// undo) put back is credited to whoever wrote it in the state put back.
import fs from 'node:fs';
import path from 'node:path';
import { errors } from '../base/errors.js';
import type { Repo } from '../git/repo.js';
import { commitTree } from '../git/plumbing.js';
import type { Session, Step } from '../session/model.js';
import { stateLayout } from '../base/state-dir.js';

export type LineOrigin =
  | { kind: 'step'; step: number }
  /**
   * Changed outside the recorded tool calls (the user's edit, or a process outside the agent's calls): first seen
   * in step `step`'s pre, or in the snapshot an operation took before it ran (`op`); `after`: the step before it.
   * A null step: no step came after it yet.
   */
  | { kind: 'between'; step: number | null; after: number | null; op?: number }
  | { kind: 'before-session' }
  | { kind: 'operation'; subject: string }
  /** Before this session, committed: the note of the commit (refs/notes/agentsnap) names an earlier session's step. */
  | { kind: 'committed'; session: string; step: number; commit: string }
  | { kind: 'not-recorded' };

export interface BlameLine {
  /** 1-based, in the file as it is now (the worktree's; the session's latest snapshot when the file is gone). */
  line: number;
  text: string;
  origin: LineOrigin;
  /** The snapshot commit git blame named. */
  commit: string | null;
}

/** Commit → what it is in the session. */
function originsOf(s: Session): Map<string, LineOrigin> {
  const m = new Map<string, LineOrigin>();
  m.set(s.baseline, { kind: 'before-session' });
  let after: number | null = null;
  for (const st of s.steps) {
    if (st.source === 'transcript') continue;
    if (st.kind === 'checkpoint') {
      if (st.post) m.set(st.post, { kind: 'step', step: st.step });
      after = st.step;
      continue;
    }
    if (st.pre && !m.has(st.pre)) m.set(st.pre, { kind: 'between', step: st.step, after });
    if (st.post) m.set(st.post, { kind: 'step', step: st.step });
    after = st.step;
  }
  // The snapshot an operation takes of the worktree before it runs holds what changed since the last step outside
  // the calls (the user's edits): placed between the steps around the operation's time.
  const recorded = s.steps.filter((st) => st.source !== 'transcript');
  for (const ev of s.extraEvents) {
    if (ev.type !== 'op.start' || m.has(ev.safety)) continue;
    const at = Date.parse(ev.time);
    const before = recorded.filter((st) => Date.parse(st.startedAt) <= at);
    const next = recorded.find((st) => Date.parse(st.startedAt) > at);
    m.set(ev.safety, { kind: 'between', step: next?.step ?? null, after: before[before.length - 1]?.step ?? null, op: ev.op });
  }
  return m;
}

/**
 * Each line of `rel` (worktree-relative) with the step that last wrote it. `contents`: the file's bytes now
 * (null: blame the session's latest snapshot as it is). Throws when the file is in neither.
 */
export async function blameFile(repo: Repo, s: Session, rel: string, contents: Buffer | null): Promise<BlameLine[]> {
  const recorded = await repo.git(['cat-file', 'blob', `${s.head}:${rel}`], { okCodes: [1, 128] });
  const inHead = recorded.code === 0;
  // git 2.39's `blame --contents` works against HEAD only: a worktree file that differs from the latest
  // snapshot is blamed through a throwaway commit on top of it (its objects are unreachable; git gc prunes them).
  let tip = s.head;
  if (contents && !(inHead && recorded.stdout.equals(contents))) tip = await throwawayCommit(repo, s.head, rel, contents);
  const res = await repo.git(['blame', '--porcelain', tip, '--', rel], { okCodes: [128] });
  if (res.code !== 0) {
    throw errors.invalidArgument(
      `${rel} is not in session ${s.id}'s latest snapshot${contents ? '' : ' and not in the worktree'}: nothing to blame.`,
      {
        hint: 'Name a file the session recorded (see `agentsnap log -- <path>`).',
        data: { path: rel, session: s.id, git: res.stderr.trim() },
      },
    );
  }
  const origins = originsOf(s);
  const lines = linesOf(res.stdout.toString('utf8'), origins, tip !== s.head ? tip : null);
  await creditPutBack(repo, rel, lines, { origins, sources: putBackSources(s) }, 0);
  return lines;
}

/** git blame --porcelain's lines with their origins; `throwaway`: the commit of the worktree now (not recorded). */
function linesOf(porcelain: string, origins: Map<string, LineOrigin>, throwaway: string | null): BlameLine[] {
  const subjects = new Map<string, string>();
  const out: BlameLine[] = [];
  let commit: string | null = null;
  let finalLine = 0;
  for (const raw of porcelain.split('\n')) {
    const header = /^([0-9a-f]{40,64}) \d+ (\d+)/.exec(raw);
    if (header) {
      commit = header[1] as string;
      finalLine = Number(header[2]);
      continue;
    }
    if (raw.startsWith('summary ') && commit) subjects.set(commit, raw.slice(8));
    if (!raw.startsWith('\t') || !commit) continue;
    const zero = commit === throwaway;
    const origin: LineOrigin = zero
      ? { kind: 'not-recorded' }
      : (origins.get(commit) ??
        (subjects.get(commit)?.startsWith('agentsnap:') && !subjects.get(commit)?.includes('baseline')
          ? { kind: 'operation', subject: subjects.get(commit) as string }
          : { kind: 'before-session' }));
    out.push({ line: finalLine, text: raw.slice(1), origin, commit: zero ? null : commit });
  }
  return out;
}

/**
 * The commit whose lines each operation's result put back: its target state (undo, redo, restore, op undo), or for
 * a revert the reverted step's pre. git blame credits such a line to the operation's commit, as if it wrote it.
 */
function putBackSources(s: Session): Map<string, string> {
  const starts = new Map<number, Extract<Session['extraEvents'][number], { type: 'op.start' }>>();
  const out = new Map<string, string>();
  for (const ev of s.extraEvents) {
    if (ev.type === 'op.start') starts.set(ev.op, ev);
    if (ev.type !== 'op.done' || !ev.commit) continue;
    const start = starts.get(ev.op);
    const reverted = start?.kind === 'revert' ? s.steps.find((st) => st.step === start.target.step)?.pre : null;
    const source = start?.toCommit ?? reverted;
    if (source) out.set(ev.commit, source);
  }
  return out;
}

// An operation that put back what another put back: followed this many times at most.
const PUT_BACK_DEPTH = 4;

/**
 * A line an operation put back is credited to whoever wrote it in the state the operation put back (the step, or
 * the user's edit): blamed in that state and matched by its text, in order. A line no longer found there stays the
 * operation's.
 */
async function creditPutBack(
  repo: Repo,
  rel: string,
  lines: BlameLine[],
  chain: { origins: Map<string, LineOrigin>; sources: Map<string, string> },
  depth: number,
): Promise<void> {
  const { origins, sources } = chain;
  const byCommit = new Map<string, BlameLine[]>();
  for (const l of lines) {
    if (l.origin.kind !== 'operation' || !l.commit || !sources.has(l.commit)) continue;
    byCommit.set(l.commit, [...(byCommit.get(l.commit) ?? []), l]);
  }
  for (const [commit, credited] of byCommit) {
    const res = await repo.git(['blame', '--porcelain', sources.get(commit) as string, '--', rel], { okCodes: [128] });
    if (res.code !== 0) continue; // the file was not there: the operation's own
    const there = linesOf(res.stdout.toString('utf8'), origins, null);
    if (depth < PUT_BACK_DEPTH) await creditPutBack(repo, rel, there, chain, depth + 1);
    const byText = new Map<string, LineOrigin[]>();
    for (const l of there) byText.set(l.text, [...(byText.get(l.text) ?? []), l.origin]);
    for (const l of credited) {
      const origin = byText.get(l.text)?.shift();
      if (origin && origin.kind !== 'operation') l.origin = origin;
    }
  }
}

/** A commit of `base`'s tree with `rel` holding `contents`, through a temporary index (the user's is not read). */
async function throwawayCommit(repo: Repo, base: string, rel: string, contents: Buffer): Promise<string> {
  const dir = fs.mkdtempSync(stateLayout.blameTmpPrefix(repo));
  try {
    const extraEnv = { GIT_INDEX_FILE: path.join(dir, 'index') };
    // --no-filters: snapshots hold the worktree's exact bytes (no eol or filter= conversion), so must this blob.
    const blob = (await repo.git(['hash-object', '-w', '--stdin', '--no-filters'], { input: contents })).stdout.toString().trim();
    await repo.git(['read-tree', base], { extraEnv });
    await repo.git(['update-index', '--add', '--cacheinfo', `100644,${blob},${rel}`], { extraEnv });
    const tree = (await repo.git(['write-tree'], { extraEnv })).stdout.toString().trim();
    return commitTree(repo, { tree, parents: [base], message: 'agentsnap: the worktree now (blame)\n' });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The step a line's origin names, if any. */
export function originStep(s: Session, o: LineOrigin): Step | null {
  return o.kind === 'step' || o.kind === 'between' ? (s.steps.find((st) => st.step === o.step) ?? null) : null;
}
