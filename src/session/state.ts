// A session's state: the fold of its journal, cached in state.json (rebuilt
// whenever the journal's size differs from the one recorded there).
import fs from 'node:fs';
import { errors } from '../base/errors.js';
import { readStateFile, replaceStateFile } from '../base/state-dir.js';
import { assertSessionId } from '../base/ids.js';
import { readJournal } from './journal.js';
import { foldJournal, openSteps, type Session, type Step } from './model.js';
import { updateRefs, type RefUpdate } from '../git/plumbing.js';
import { isMissingObjectError, missingObjects } from '../git/missing.js';
import { type Settings } from '../settings/settings.js';
import type { Repo } from '../git/repo.js';
import { redactValue } from './redact.js';
import { sessionPaths, refsFor } from './refs.js';
import type { EnvState } from './environment.js';

/** The small per-session cache the per-tool-call path reads instead of the whole journal. */
export interface SessionState {
  v: 1;
  journalSize: number;
  session: Omit<Session, 'steps' | 'extraEvents'> & { stepCount: number; open: Step[] };
  /** Snapshots written since agentsnap last packed this session's objects. */
  unpacked: number;
  packedHead: string | null;
  /** The newest journaled tool_use ids (at most RECENT_CALLS): where a transcript import stops. */
  recentToolUseIds?: string[];
  /** The agent transcript of the newest step that named one (read at session end for calls no hook saw). */
  transcriptPath?: string | null;
  /** Where the last transcript import left off (ReadCallScan.floor): the next one walks back to it. */
  transcriptFloor?: { path: string; offset: number };
  /** The key of the session's environment hashes and the digest of the last call's environment (see envChangeAt). */
  env?: EnvState;
  /** How far the pre hooks searched the transcript for the tools the agent offered (see toolsSince in session.ts). */
  toolsScan?: { path: string; offset: number };
}

const RECENT_CALLS = 256;

/** `s` is the whole journal folded, or (`folded`) the previous state's open steps with new events applied. */
export function stateFrom(s: Session, journalSize: number, prev: SessionState | null, folded = false): SessionState {
  const { steps, extraEvents, ...rest } = s;
  void extraEvents;
  return {
    v: 1,
    journalSize,
    session: { ...rest, stepCount: rest.nextStep - 1, open: openSteps(s) },
    unpacked: prev?.unpacked ?? 0,
    packedHead: prev?.packedHead ?? null,
    // Folded forward from a cache that predates the list, the steps are not all the journal's: leave it to a full read.
    ...(folded && !prev?.recentToolUseIds
      ? {}
      : {
          recentToolUseIds: [
            ...new Set([...(prev?.recentToolUseIds ?? []), ...steps.flatMap((st) => (st.toolUseId ? [st.toolUseId] : []))]),
          ].slice(-RECENT_CALLS),
        }),
    transcriptPath: steps.reduce<string | null>((last, st) => st.transcript?.path ?? last, prev?.transcriptPath ?? null),
    ...(prev?.transcriptFloor ? { transcriptFloor: prev.transcriptFloor } : {}),
    ...(prev?.env ? { env: prev.env } : {}),
    ...(prev?.toolsScan ? { toolsScan: prev.toolsScan } : {}),
  };
}

/** The cached fold, replaced whole (a link in its place is replaced, never written through). */
export function writeState(file: string, state: SessionState): void {
  replaceStateFile(file, JSON.stringify(state));
}

function readState(file: string): SessionState | null {
  try {
    const st = JSON.parse(readStateFile(file)?.toString('utf8') ?? 'null') as SessionState | null;
    return st?.v === 1 ? st : null;
  } catch {
    return null; /* missing, torn, not a regular file: a cache only, folded again from the journal */
  }
}

function journalSize(file: string): number {
  try {
    // lstat: a link in the journal's place does not match the cache (readJournal then refuses it).
    return fs.lstatSync(file).size;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw e;
  }
}

/** The session the journal's events fold to; UnknownSession when they hold none. */
function foldOrUnknown(events: Parameters<typeof foldJournal>[0], id: string): Session {
  const s = foldJournal(events);
  if (!s) {
    throw errors.unknownSession(`no session ${id} in this repository.`, {
      hint: 'List sessions with `agentsnap sessions`.',
      data: { session: id },
    });
  }
  return s;
}

/** Loads the full session from its journal. Throws UnknownSession when there is none. */
export function loadSession(repo: Repo, id: string): Session {
  assertSessionId(id);
  const p = sessionPaths(repo, id);
  const read = readJournal(p.journal);
  const s = foldOrUnknown(read.events, id);
  return s;
}

/**
 * State for the hot path: the cache when it matches the journal, else
 * rebuilt. Only a caller holding the session lock may `repair` (move refs,
 * rewrite state.json): a reader without it could see a writer between its
 * journal append and its ref update, and move refs back.
 */
export async function loadState(repo: Repo, id: string, repair = true): Promise<SessionState> {
  const p = sessionPaths(repo, id);
  const cached = readState(p.state);
  const size = journalSize(p.journal);
  if (cached && cached.journalSize === size && size > 0) return cached;
  const read = readJournal(p.journal);
  const s = foldOrUnknown(read.events, id);
  const state = stateFrom(s, size, cached);
  if (!repair) return state;
  // The journal is ahead of the cache: a previous command died after journaling. Make the refs agree.
  await setRefsFromJournal(repo, refsFor(s));
  writeState(p.state, state);
  return state;
}

/**
 * Sets refs as the journal has them, leaving out the snapshots git's prune
 * deleted (nothing to point at: the journal still names them, `log` and
 * `doctor` report them lost). Returns the refs left out.
 */
export async function setRefsFromJournal(repo: Repo, updates: RefUpdate[]): Promise<RefUpdate[]> {
  try {
    await updateRefs(repo, updates);
    return [];
  } catch (e) {
    if (!isMissingObjectError(e)) throw e;
  }
  const gone = await missingObjects(
    repo,
    updates.map((u) => u.value),
  );
  await updateRefs(
    repo,
    updates.filter((u) => !u.value || !gone.has(u.value)),
  );
  return updates.filter((u) => u.value && gone.has(u.value));
}

/**
 * Makes a session's state name only snapshots that exist, after an object
 * it named was found missing (deleted by the user's git prune): the head
 * becomes the newest snapshot of the journal still there (none: the next
 * snapshot is a root commit), and an open step whose pre snapshot is gone
 * closes from the head. In memory: the next journal line records the result.
 */
export async function forgetPruned(repo: Repo, state: SessionState): Promise<void> {
  const s = state.session;
  const gone = await missingObjects(repo, [s.head, s.headTree, ...s.open.flatMap((o) => [o.pre, o.preTree, o.operation?.tree])]);
  if (gone.size === 0) return;
  for (const o of s.open) {
    if (o.pre && gone.has(o.pre)) o.pre = null;
    if (o.preTree && gone.has(o.preTree)) o.preTree = null;
    if (o.operation?.tree && gone.has(o.operation.tree)) o.operation = { ...o.operation, tree: null };
  }
  if (!gone.has(s.head) && !(s.headTree && gone.has(s.headTree))) return;
  const full = loadSession(repo, s.id);
  const candidates: { commit: string; tree: string | null }[] = [];
  for (const st of [...full.steps].reverse()) {
    if (st.post) candidates.push({ commit: st.post, tree: st.postTree });
    if (st.pre) candidates.push({ commit: st.pre, tree: st.preTree });
  }
  candidates.push({ commit: full.baseline, tree: full.baselineTree });
  const absent = await missingObjects(
    repo,
    candidates.flatMap((c) => [c.commit, c.tree]),
  );
  const found = candidates.find((c) => !absent.has(c.commit) && !(c.tree && absent.has(c.tree)));
  s.head = found?.commit ?? '';
  s.headTree = found?.tree ?? null;
}

/** Whether a session has ended or been discarded, from its state cache (a whole journal read only when the cache is behind). */
export async function sessionFinished(repo: Repo, id: string): Promise<boolean> {
  const st = (await loadState(repo, id, false)).session;
  return !!st.ended || !!st.discarded;
}

export function loadSessionExists(repo: Repo, id: string): void {
  assertSessionId(id);
  if (!fs.existsSync(sessionPaths(repo, id).journal)) {
    throw errors.unknownSession(`no session ${id} in this repository.`, {
      hint: 'List sessions with `agentsnap sessions`.',
      data: { session: id },
    });
  }
}

/**
 * Redaction for what an event or a commit message carries as free text (tool
 * names, messages, inputs, outputs, errors, reasons, commands, versions): the
 * same as a hook's input gets, whoever called. Redacting twice is harmless.
 * Paths, ids and object names are left as they are (they must stay exact).
 */
export function journaled(settings: Settings): <T>(v: T) => T {
  return (v) => redactValue(v, settings.redactPatterns);
}
