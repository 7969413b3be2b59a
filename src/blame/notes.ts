// Blame across commits (issue 17): which session step last wrote each committed line, so `agentsnap blame`
// names the step in a later session, once the commit holds the line. Worked out when it is asked for
// (issue 32 item 11: a hook per commit made every commit and every commit a rebase replays start a process):
// `blame` computes it for a commit without a note from the sessions that began before the commit was made,
// and, with the git hooks installed, `gc` writes it down as a git note (refs/notes/agentsnap) before it removes
// a session, so the answer outlives the session. `notes.rewriteRef` makes git copy a note when `commit --amend`
// or `rebase` rewrites its commit. A note is JSON:
//   {"v":1,"files":{"<path>":[[firstLine, count, session, step], ...]},"blobs":{"<path>":"<blob id>"}}
// with line numbers of the file as that commit has it (its blob: a note git copied to a rebased commit whose file
// is another blob now has its lines mapped through the diff, never taken as they are). (git-ai's authorship notes answer "which lines did an
// AI write"; these answer "which tool call of which agentsnap session".)
import type { Repo } from '../git/repo.js';
import { listSessions, loadSession } from '../session/session.js';
import { blameFile } from './blame.js';
import type { Session } from '../session/model.js';
import { sessionIdProblem } from '../base/ids.js';

export const NOTES_REF = 'refs/notes/agentsnap';

export type NoteRuns = [number, number, string, number][];

export interface CommitNote {
  v: 1;
  files: Record<string, NoteRuns>;
  /**
   * The blob each file had in the commit noted. git copies a note as it is when a rebase rewrites its commit
   * (notes.rewriteRef): where the file is another blob now, its line numbers are not this commit's (fileRuns).
   * Notes of older versions have none: they were written afresh after each rebase.
   */
  blobs?: Record<string, string>;
}

const IDENT = {
  GIT_AUTHOR_NAME: 'agentsnap',
  GIT_AUTHOR_EMAIL: 'agentsnap@agentsnap.invalid',
  GIT_COMMITTER_NAME: 'agentsnap',
  GIT_COMMITTER_EMAIL: 'agentsnap@agentsnap.invalid',
};

function splitNul(b: Buffer): string[] {
  return b.toString('utf8').split('\0').filter(Boolean);
}

/** The repository's sessions, each with the files it changed (baseline → head): who may own a line. */
export interface NoteSessions {
  sessions: { session: Session; since: number; touched: Set<string> }[];
}

/**
 * The repository's sessions for noting, those of every worktree (a session worktree's work is applied here and
 * committed; gc removes sessions of all worktrees). Unreadable ones are doctor's to report.
 */
export async function noteSessions(repo: Repo): Promise<NoteSessions> {
  const out: NoteSessions = { sessions: [] };
  for (const summary of await listSessions(repo)) {
    let session: Session;
    try {
      session = loadSession(repo, summary.id);
    } catch {
      continue; // unreadable: doctor's to report
    }
    // Only what a session changed can carry a step: one diff per session bounds the blames to those files.
    const d = await repo.git(
      ['diff-tree', '--ignore-submodules=none', '-r', '-z', '--name-only', '--no-renames', session.baseline, session.head],
      { okCodes: [128] },
    );
    const since = Math.floor(Date.parse(session.createdAt) / 1000);
    out.sessions.push({ session, since: Number.isFinite(since) ? since : 0, touched: new Set(d.code === 0 ? splitNul(d.stdout) : []) });
  }
  return out;
}

/**
 * Which session step wrote each line of `rel` as commit `oid` has it (`blob`: its bytes), from the sessions that began
 * before the commit was first made (`authored`: its author time, kept by amend and rebase: a session that began after
 * a rebased commit's lines were written did not write them) and changed the file, each as it was when the commit was
 * made (`committed`: its committer time, seconds); sessions newest first,
 * a line keeps the first attribution found. Empty for a binary file.
 */
async function attributeFile(
  repo: Repo,
  known: NoteSessions,
  rel: string,
  blob: Buffer,
  committed: number,
  authored: number = committed,
): Promise<NoteRuns> {
  if (blob.includes(0)) return []; // binary: no lines
  const owner = new Map<number, [string, number]>();
  for (const { session, since, touched } of known.sessions) {
    if (since > Math.min(committed, authored) || !touched.has(rel)) continue;
    // The session as it was when the commit was made: a step it ran later cannot have written a committed line
    // (its snapshots are blamed up to the last one made by then).
    const until = await repo.git(['rev-list', '-1', '--first-parent', `--before=@${committed}`, session.head, '--'], { okCodes: [128] });
    const tip = until.code === 0 ? until.stdout.toString().trim() : '';
    if (!OID.test(tip)) continue;
    let lines;
    try {
      lines = await blameFile(repo, { ...session, head: tip }, rel, blob);
    } catch {
      continue; // not in this session's snapshots
    }
    for (const l of lines) if (l.origin.kind === 'step' && !owner.has(l.line)) owner.set(l.line, [session.id, l.origin.step]);
  }
  return runsOf(owner);
}

/** Each line's [session, step] as a note's runs: consecutive lines of one step make one run. */
function runsOf(owner: Map<number, [string, number]>): NoteRuns {
  const runs: NoteRuns = [];
  for (const line of [...owner.keys()].sort((a, b) => a - b)) {
    const [session, step] = owner.get(line) as [string, number];
    const last = runs[runs.length - 1];
    if (last && last[0] + last[1] === line && last[2] === session && last[3] === step) last[1]++;
    else runs.push([line, 1, session, step]);
  }
  return runs;
}

/**
 * Writes the note of `commit` (default HEAD): for each text file it added or changed, the lines the repository's
 * sessions' steps wrote. Returns the note, or null when no committed line came from a step.
 */
export async function noteCommit(repo: Repo, commit = 'HEAD', known?: NoteSessions): Promise<CommitNote | null> {
  const oid = (await repo.git(['rev-parse', '--verify', '-q', `${commit}^{commit}`], { okCodes: [1] })).stdout.toString().trim();
  if (!oid) return null;
  const parent = (await repo.git(['rev-parse', '--verify', '-q', `${oid}^`], { okCodes: [1] })).stdout.toString().trim();
  const diff = parent
    ? await repo.git([
        'diff-tree',
        '--ignore-submodules=none',
        '-r',
        '-z',
        '--no-commit-id',
        '--name-only',
        '--diff-filter=AM',
        parent,
        oid,
      ])
    : await repo.git(['ls-tree', '-r', '-z', '--name-only', oid]);
  const paths = splitNul(diff.stdout);
  if (paths.length === 0) return null;
  const sessions = known ?? (await noteSessions(repo));
  if (sessions.sessions.length === 0) return null;
  const [committed, authored] = (await repo.git(['show', '-s', '--format=%ct %at', oid])).stdout
    .toString()
    .trim()
    .split(' ')
    .map(Number) as [number, number];
  const note: CommitNote = { v: 1, files: {} };
  for (const rel of paths) {
    if (!sessions.sessions.some((s) => s.touched.has(rel))) continue;
    const blob = await repo.git(['cat-file', 'blob', `${oid}:${rel}`], { okCodes: [128] });
    if (blob.code !== 0) continue;
    const runs = await attributeFile(repo, sessions, rel, blob.stdout, committed, authored);
    if (runs.length > 0) {
      note.files[rel] = runs;
      (note.blobs ??= {})[rel] = await blobOf(repo, oid, rel);
    }
  }
  if (Object.keys(note.files).length === 0) return null;
  // A rebased commit may already hold the note git copied from the commit it replaces (notes.rewriteRef): this one
  // goes first, the copied one stays after it (readNote: a file keeps the first note that names it).
  const line = JSON.stringify(note);
  const existing = await repo.git(['notes', '--ref', NOTES_REF, 'show', oid], { okCodes: [1, 128] });
  const kept =
    existing.code === 0
      ? existing.stdout
          .toString('utf8')
          .split('\n')
          .filter((l) => l.trim() && l !== line)
      : [];
  await repo.git(['notes', '--ref', NOTES_REF, 'add', '-f', '-F', '-', oid], {
    input: `${[line, ...kept].join('\n')}\n`,
    extraEnv: IDENT,
  });
  return note;
}

/**
 * Gives each note of an older version (no `blobs`) the blobs of its commit, so that a copy git makes when a rebase
 * rewrites the commit is mapped, never read as it is (fileRuns). Those notes were right for their commit: the older
 * version's post-rewrite hook wrote a rebase's notes afresh, and `hooks install` is what takes that hook out.
 * Returns how many were given blobs; never throws (a note left as it is is read as before).
 */
export async function migrateLegacyNotes(repo: Repo): Promise<number> {
  let migrated = 0;
  try {
    const list = await repo.git(['notes', '--ref', NOTES_REF, 'list'], { okCodes: [1, 128] });
    for (const entry of list.stdout.toString('utf8').split('\n')) {
      const commit = entry.split(' ')[1] ?? '';
      if (!OID.test(commit)) continue;
      const shown = await repo.git(['notes', '--ref', NOTES_REF, 'show', commit], { okCodes: [1, 128] });
      if (shown.code !== 0) continue;
      let changed = false;
      const lines: string[] = [];
      for (const line of shown.stdout.toString('utf8').split('\n')) {
        if (!line.trim()) continue;
        let n: CommitNote | null = null;
        try {
          n = JSON.parse(line) as CommitNote;
        } catch {
          /* not ours (not JSON): kept as it is */
        }
        if (n && n.v === 1 && n.files && typeof n.files === 'object' && !n.blobs) {
          n.blobs = {};
          for (const rel of Object.keys(n.files)) n.blobs[rel] = await blobOf(repo, commit, rel);
          changed = true;
          lines.push(JSON.stringify(n));
        } else lines.push(line);
      }
      if (!changed) continue;
      await repo.git(['notes', '--ref', NOTES_REF, 'add', '-f', '-F', '-', commit], { input: `${lines.join('\n')}\n`, extraEnv: IDENT });
      migrated++;
    }
  } catch {
    /* git could not list or write notes: they are read as before */
  }
  return migrated;
}

/** Whether `hooks install` has set this repository up for notes (its notes.rewriteRef entry). */
export async function notesEnabled(repo: Repo): Promise<boolean> {
  const res = await repo.git(['config', '--local', '--get-all', 'notes.rewriteRef'], { okCodes: [1] });
  const values = res.stdout.toString().split('\n');
  return values.includes(NOTES_REWRITE_REF) || values.includes(NOTES_REF);
}

/** At most this many commits are noted by one `gc`: the branches' commits since the oldest session it removes. */
const MAX_NOTED = 2000;

/**
 * Before `gc` removes sessions: writes the note of each commit on a local branch made since the oldest of them
 * began that has none yet, while every session that may own its lines still exists. Returns how many were written.
 * Only where `hooks install` set notes up (notesEnabled); never throws (a note not written costs blame, not data).
 */
export async function noteBeforeRemoving(repo: Repo, removing: { id: string; createdAt: string }[]): Promise<number> {
  try {
    if (removing.length === 0 || !(await notesEnabled(repo))) return 0;
    const since = Math.min(...removing.map((s) => Math.floor(Date.parse(s.createdAt) / 1000)).filter(Number.isFinite));
    if (!Number.isFinite(since)) return 0;
    const known = await noteSessions(repo);
    const gone = new Set(removing.map((s) => s.id));
    const theirs = await linesAdded(
      repo,
      known.sessions.filter((s) => gone.has(s.session.id)).map((s) => [s.session.baseline, s.session.head] as const),
    );
    if (theirs.size === 0) return 0;
    // One git process lists the commits and the lines each added: only a commit that added a line one of these
    // sessions' steps added can hold a step's line, and only those are blamed (a user's hundred commits cost one log).
    const log = await repo.git(
      [
        'log',
        ...DIFF_LINES,
        '--no-merges',
        '--diff-filter=AM',
        '--format=%x01%H',
        `--max-count=${MAX_NOTED}`,
        `--since=@${since}`,
        '--branches',
      ],
      { okCodes: [128] },
    );
    if (log.code !== 0) return 0;
    let written = 0;
    for (const record of log.stdout.toString('utf8').split('\x01').slice(1)) {
      const oid = record.slice(0, record.indexOf('\n') < 0 ? record.length : record.indexOf('\n')).trim();
      if (!OID.test(oid) || !addedLinesOf(record).some((l) => theirs.has(l))) continue;
      const note = await readNote(repo, oid);
      if (note && (await noteIsCurrent(repo, note, oid))) continue;
      if (await noteCommit(repo, oid, known)) written++;
    }
    return written;
  } catch {
    return 0; // git could not list or write: blame of those commits names no step once the session is gone
  }
}

/** Options of every diff read for its added lines: no context, the plain text of each line, whatever the user's config. */
const DIFF_LINES = ['-p', '-U0', '--no-color', '--no-ext-diff', '--no-textconv', '--no-renames'];

/** The lines (text) that the diffs `[from, to]` add, blank ones left out (they say nothing of who wrote them). */
async function linesAdded(repo: Repo, ranges: (readonly [string, string])[]): Promise<Set<string>> {
  const out = new Set<string>();
  for (const [from, to] of ranges) {
    const d = await repo.git(['diff', ...DIFF_LINES, from, to], { okCodes: [128] });
    if (d.code === 0) for (const l of addedLinesOf(d.stdout.toString('utf8'))) out.add(l);
  }
  return out;
}

/**
 * The added lines of a unified diff with no context (-U0), read by each hunk's counts (`@@ -a,b +c,d @@`: b removed
 * lines, then d added ones), so that a line of text that looks like a header is never taken for one.
 */
export function addedLinesOf(diff: string): string[] {
  const out: string[] = [];
  const lines = diff.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const m = /^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@/.exec(lines[i] as string);
    if (!m) continue;
    let removed = m[1] === undefined ? 1 : Number(m[1]);
    let added = m[2] === undefined ? 1 : Number(m[2]);
    while ((removed > 0 || added > 0) && i + 1 < lines.length) {
      const l = lines[++i] as string;
      if (l.startsWith('\\')) continue; // "\ No newline at end of file"
      if (l.startsWith('-')) removed--;
      else if (l.startsWith('+')) {
        added--;
        if (l.trim() !== '+') out.push(l.slice(1));
      } else break;
    }
  }
  return out;
}

/** The note of a commit, or null. Never throws. */
export async function readNote(repo: Repo, commit: string): Promise<CommitNote | null> {
  try {
    const res = await repo.git(['notes', '--ref', NOTES_REF, 'show', commit], { okCodes: [1, 128] });
    if (res.code !== 0) return null;
    // One JSON line per note; but when a rebase or amend copies a note (notes.rewriteRef) onto a commit the
    // post-commit hook already noted, git concatenates them (notes.rewriteMode's default): the first one is the
    // hook's, made for this very commit, so a file keeps the first note that names it.
    const out: CommitNote = { v: 1, files: {} };
    let found = false;
    for (const line of res.stdout.toString('utf8').split('\n')) {
      if (!line.trim()) continue;
      let n: CommitNote;
      try {
        n = JSON.parse(line) as CommitNote;
      } catch {
        continue; // a note that is not ours (not JSON): skipped
      }
      if (!n || n.v !== 1 || !n.files || typeof n.files !== 'object') continue;
      found = true;
      for (const [rel, raw] of Object.entries(n.files)) {
        const runs = validRuns(raw);
        if (rel in out.files || !runs) continue;
        out.files[rel] = runs;
        const blob = n.blobs && typeof n.blobs === 'object' ? n.blobs[rel] : undefined;
        if (typeof blob === 'string') (out.blobs ??= {})[rel] = blob;
      }
    }
    return found ? out : null;
  } catch {
    return null; // git could not read the notes: no blame for this commit, as documented (never throws)
  }
}

/** Which session step a note says wrote line `line` of `rel` in its commit (runs as validRuns leaves them: in order). */
export function noteLine(note: CommitNote, rel: string, line: number): { session: string; step: number } | null {
  const runs = note.files[rel] ?? [];
  let lo = 0;
  let hi = runs.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const [first, count, session, step] = runs[mid] as NoteRuns[number];
    if (line < first) hi = mid - 1;
    else if (line >= first + count) lo = mid + 1;
    else return { session, step };
  }
  return null;
}

/** `first`'s runs, and `then`'s for the lines `first` does not name (both in order). */
function mergeRuns(first: NoteRuns, then: NoteRuns): NoteRuns {
  const owner = new Map<number, [string, number]>();
  for (const runs of [first, then])
    for (const [line0, count, session, step] of runs)
      for (let line = line0; line < line0 + count; line++) if (!owner.has(line)) owner.set(line, [session, step]);
  return runsOf(owner);
}

/**
 * A file's runs as agentsnap writes them, or null when they are not (a note can come from someone else's remote):
 * each [line ≥ 1, count ≥ 1, a session id, a step ≥ 1], in order and apart, at most MAX_RUN lines in all. Bounds
 * what reading a note costs (a few huge or countless runs) and what blame prints (a session or step of escapes).
 */
export function validRuns(raw: unknown): NoteRuns | null {
  if (!Array.isArray(raw)) return null;
  let end = 1;
  let total = 0;
  for (const run of raw) {
    if (!Array.isArray(run) || run.length !== 4) return null;
    const [first, count, session, step] = run as unknown[];
    if (!Number.isSafeInteger(first) || !Number.isSafeInteger(count) || !Number.isSafeInteger(step)) return null;
    if ((first as number) < end || (count as number) < 1 || (step as number) < 1) return null;
    if (typeof session !== 'string' || sessionIdProblem(session)) return null;
    total += count as number;
    if (total > MAX_RUN) return null;
    end = (first as number) + (count as number);
  }
  return raw as NoteRuns;
}

/** Whether a note was made for `commit` as it is (not copied by a rebase that changed its files since). */
async function noteIsCurrent(repo: Repo, note: CommitNote, commit: string): Promise<boolean> {
  for (const [rel, blob] of Object.entries(note.blobs ?? {})) if ((await blobOf(repo, commit, rel)) !== blob) return false;
  return true;
}

const OID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
/** Longer runs than this are not a note agentsnap wrote (a file of millions of lines is not blamed line by line). */
const MAX_RUN = 1_000_000;

/** The blob id of `rel` in `commit`, or '' when it has none. */
async function blobOf(repo: Repo, commit: string, rel: string): Promise<string> {
  const res = await repo.git(['rev-parse', '--verify', '-q', `${commit}:${rel}`], { okCodes: [1, 128] });
  return res.code === 0 ? res.stdout.toString().trim() : '';
}

/**
 * The runs of `rel` a note gives for `commit`, with the line numbers `commit`'s file has: as written when the note
 * was made for this very blob (or by an older version, which noted rebased commits afresh); mapped through the diff
 * from the blob it was made for when a rebase copied it to a commit whose file differs (a line the diff changed
 * loses its step); null when that blob is gone too (git gc): no answer rather than a wrong one.
 */
export async function fileRuns(
  repo: Repo,
  note: CommitNote,
  commit: string,
  rel: string,
  /** The blob `rel` has in `commit`, when the caller has it already. */
  current?: string,
): Promise<NoteRuns | null> {
  const runs = validRuns(note.files[rel]);
  if (!runs) return null;
  const was = note.blobs?.[rel];
  if (was === undefined) return runs;
  // A note can come from a remote (refs/notes/agentsnap fetched): anything but an object id is not used, never
  // passed to git (`--output=<file>` would be an option).
  if (!OID.test(was)) return null;
  const now = current ?? (await blobOf(repo, commit, rel));
  if (now === was) return runs;
  if (!now) return null;
  const diff = await repo.git(['diff', '-U0', '--no-color', '--no-ext-diff', was, now], { okCodes: [128] });
  if (diff.code !== 0) return null;
  // Each hunk "@@ -a[,b] +c[,d] @@": old lines a..a+b-1 became new lines c..c+d-1; lines between hunks shift.
  const hunks: [number, number, number, number][] = [];
  for (const m of diff.stdout.toString('utf8').matchAll(/^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/gm))
    hunks.push([Number(m[1]), m[2] === undefined ? 1 : Number(m[2]), Number(m[3]), m[4] === undefined ? 1 : Number(m[4])]);
  // A count of 0 names the line before: an insertion (b = 0) comes after old line a, a deletion (d = 0) after new line c.
  const ends = hunks.map(([a, b, c, d]) => [b === 0 ? a : a + b - 1, d === 0 ? c : c + d - 1] as const);
  const mapLine = (line: number): number | null => {
    // The first hunk that ends at or after the line (hunks come in order): the line is in it, or before it.
    let lo = 0;
    let hi = hunks.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((ends[mid] as readonly [number, number])[0] < line) lo = mid + 1;
      else hi = mid;
    }
    const hunk = hunks[lo];
    if (hunk && hunk[1] > 0 && line >= hunk[0]) return null;
    const before = ends[lo - 1];
    return before ? line + before[1] - before[0] : line;
  };
  const out: NoteRuns = [];
  for (const [first, count, session, step] of runs) {
    for (let line = first; line < first + count; line++) {
      const moved = mapLine(line);
      if (moved === null) continue;
      const last = out[out.length - 1];
      if (last && last[0] + last[1] === moved && last[2] === session && last[3] === step) last[1]++;
      else out.push([moved, 1, session, step]);
    }
  }
  return out;
}

/**
 * What `hooks install` adds to notes.rewriteRef: a glob, because git warns "notes ref … is invalid" on every
 * amend and rebase while a named ref does not exist yet (before the first note); a glob that matches nothing
 * is silent. (Older installs added NOTES_REF itself: uninstall takes either out.)
 */
export const NOTES_REWRITE_REF = `${NOTES_REF}*`;

/** `notes.rewriteRef` carries agentsnap's notes across amend and rebase; set by `hooks install`. */
export async function setNotesRewrite(repo: Repo, on: boolean): Promise<void> {
  const res = await repo.git(['config', '--local', '--get-all', 'notes.rewriteRef'], { okCodes: [1] });
  const values = res.stdout.toString().split('\n');
  if (on && !values.includes(NOTES_REWRITE_REF)) await repo.git(['config', '--local', '--add', 'notes.rewriteRef', NOTES_REWRITE_REF]);
  if (on && values.includes(NOTES_REF))
    await repo.git(['config', '--local', '--unset-all', '--fixed-value', 'notes.rewriteRef', NOTES_REF], { okCodes: [5] });
  if (!on) {
    for (const v of [NOTES_REWRITE_REF, NOTES_REF]) {
      if (values.includes(v))
        await repo.git(['config', '--local', '--unset-all', '--fixed-value', 'notes.rewriteRef', v], { okCodes: [5] });
    }
  }
}

/**
 * For the lines of `rel` as it is now (`contents`: the worktree's bytes, null: HEAD's), the session step that wrote
 * each in the commit that holds it: git blame of the user's history (HEAD), each line's commit and its line there
 * looked up in that commit's note, or, for a commit without one, worked out now from the sessions that began before
 * it (as `gc` would note it). Lines no step wrote are left out. Never throws (no HEAD: an empty map).
 */
export async function committedAuthors(
  repo: Repo,
  rel: string,
  contents: Buffer | null,
): Promise<Map<number, { session: string; step: number; commit: string }>> {
  const out = new Map<number, { session: string; step: number; commit: string }>();
  try {
    const hasNotes = (await repo.git(['rev-parse', '--verify', '-q', NOTES_REF], { okCodes: [1] })).code === 0;
    const known = await noteSessions(repo);
    const mayOwn = known.sessions.filter((s) => s.touched.has(rel));
    if (!hasNotes && mayOwn.length === 0) return out;
    const oldest = Math.min(...mayOwn.map((s) => s.since));
    // Without a revision, --contents blames against HEAD (git 2.39 allows nothing else).
    const res = await repo.git(['blame', '--porcelain', ...(contents ? ['--contents', '-'] : ['HEAD']), '--', rel], {
      ...(contents ? { input: contents } : {}),
      okCodes: [128],
    });
    if (res.code !== 0) return out;
    const notes = new Map<string, NoteRuns | null>();
    let commit = '';
    const lines: [string, number, number][] = [];
    const times = new Map<string, number>();
    const authoredAt = new Map<string, number>();
    for (const raw of res.stdout.toString('utf8').split('\n')) {
      const m = /^([0-9a-f]{40,64}) (\d+) (\d+)/.exec(raw);
      if (m) {
        commit = m[1] as string;
        if (!/^0+$/.test(commit)) lines.push([commit, Number(m[2]), Number(m[3])]);
        continue;
      }
      if (raw.startsWith('committer-time ')) times.set(commit, Number(raw.slice('committer-time '.length)));
      if (raw.startsWith('author-time ')) authoredAt.set(commit, Number(raw.slice('author-time '.length)));
    }
    for (const [c, line, now] of lines) {
      if (!notes.has(c)) {
        const note = hasNotes ? await readNote(repo, c) : null;
        // Asked once: fileRuns maps the note through it, and it says whether the note was made for another blob.
        const current = note?.blobs?.[rel] !== undefined ? await blobOf(repo, c, rel) : undefined;
        let runs: NoteRuns | null = note ? await fileRuns(repo, note, c, rel, current) : null;
        const time = times.get(c) ?? 0;
        // No note, or one git copied from the commit an amend or rebase rewrote (made for another blob of the file: its
        // mapped lines miss what the rewrite added): worked out from the sessions, the copied note filling in the rest.
        const copied = current !== undefined && current !== note?.blobs?.[rel];
        if ((!note || copied) && mayOwn.length > 0 && time >= oldest) {
          const blob = await repo.git(['cat-file', 'blob', `${c}:${rel}`], { okCodes: [128] });
          const fresh =
            blob.code === 0 ? await attributeFile(repo, { sessions: mayOwn }, rel, blob.stdout, time, authoredAt.get(c) ?? time) : null;
          runs = fresh && runs ? mergeRuns(fresh, runs) : (fresh ?? runs);
        }
        notes.set(c, runs);
      }
      const hit = noteLine({ v: 1, files: { [rel]: notes.get(c) ?? [] } }, rel, line);
      if (hit) out.set(now, { ...hit, commit: c });
    }
  } catch {
    /* no history to read */
  }
  return out;
}
