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
 * before the commit was made (`committed`: its committer time, seconds) and changed the file; sessions newest first,
 * a line keeps the first attribution found. Empty for a binary file.
 */
async function attributeFile(repo: Repo, known: NoteSessions, rel: string, blob: Buffer, committed: number): Promise<NoteRuns> {
  if (blob.includes(0)) return []; // binary: no lines
  const owner = new Map<number, [string, number]>();
  for (const { session, since, touched } of known.sessions) {
    if (since > committed || !touched.has(rel)) continue;
    let lines;
    try {
      lines = await blameFile(repo, session, rel, blob);
    } catch {
      continue; // not in this session's snapshots
    }
    for (const l of lines) if (l.origin.kind === 'step' && !owner.has(l.line)) owner.set(l.line, [session.id, l.origin.step]);
  }
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
  const committed = Number((await repo.git(['show', '-s', '--format=%ct', oid])).stdout.toString().trim());
  const note: CommitNote = { v: 1, files: {} };
  for (const rel of paths) {
    if (!sessions.sessions.some((s) => s.touched.has(rel))) continue;
    const blob = await repo.git(['cat-file', 'blob', `${oid}:${rel}`], { okCodes: [128] });
    if (blob.code !== 0) continue;
    const runs = await attributeFile(repo, sessions, rel, blob.stdout, committed);
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
export async function noteBeforeRemoving(repo: Repo, removing: { createdAt: string }[]): Promise<number> {
  try {
    if (removing.length === 0 || !(await notesEnabled(repo))) return 0;
    const since = Math.min(...removing.map((s) => Math.floor(Date.parse(s.createdAt) / 1000)).filter(Number.isFinite));
    if (!Number.isFinite(since)) return 0;
    // One git process lists the commits and the files each added or changed; only those that hold a file some session
    // changed can hold a step's line (the rest cost nothing more).
    const list = await repo.git(
      [
        'log',
        '-z',
        '--no-merges',
        '--no-renames',
        '--diff-filter=AM',
        '--name-only',
        '--format=%x01%H',
        `--max-count=${MAX_NOTED}`,
        `--since=@${since}`,
        '--branches',
      ],
      { okCodes: [128] },
    );
    if (list.code !== 0) return 0;
    const known = await noteSessions(repo);
    const touched = new Set(known.sessions.flatMap((s) => [...s.touched]));
    let written = 0;
    for (const record of list.stdout.toString('utf8').split('\x01').slice(1)) {
      const [oid = '', ...names] = record.split('\0');
      // git puts a newline between the commit line and its first file name.
      if (names[0]?.startsWith('\n')) names[0] = names[0].slice(1);
      if (!OID.test(oid) || !names.some((n) => touched.has(n))) continue;
      const note = await readNote(repo, oid);
      if (note && (await noteIsCurrent(repo, note, oid))) continue;
      if (await noteCommit(repo, oid, known)) written++;
    }
    return written;
  } catch {
    return 0; // git could not list or write: blame of those commits names no step once the session is gone
  }
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
      for (const [rel, runs] of Object.entries(n.files)) {
        if (rel in out.files || !Array.isArray(runs)) continue;
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

/** Which session step a note says wrote line `line` of `rel` in its commit. */
export function noteLine(note: CommitNote, rel: string, line: number): { session: string; step: number } | null {
  for (const [first, count, session, step] of note.files[rel] ?? []) if (line >= first && line < first + count) return { session, step };
  return null;
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
export async function fileRuns(repo: Repo, note: CommitNote, commit: string, rel: string): Promise<NoteRuns | null> {
  const runs = note.files[rel];
  if (!runs) return null;
  const was = note.blobs?.[rel];
  if (was === undefined) return runs;
  // A note can come from a remote (refs/notes/agentsnap fetched): anything but an object id is not used, never
  // passed to git (`--output=<file>` would be an option).
  if (!OID.test(was)) return null;
  const now = await blobOf(repo, commit, rel);
  if (now === was) return runs;
  if (!now) return null;
  const diff = await repo.git(['diff', '-U0', '--no-color', '--no-ext-diff', was, now], { okCodes: [128] });
  if (diff.code !== 0) return null;
  // Each hunk "@@ -a[,b] +c[,d] @@": old lines a..a+b-1 became new lines c..c+d-1; lines between hunks shift.
  const hunks: [number, number, number, number][] = [];
  for (const m of diff.stdout.toString('utf8').matchAll(/^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/gm))
    hunks.push([Number(m[1]), m[2] === undefined ? 1 : Number(m[2]), Number(m[3]), m[4] === undefined ? 1 : Number(m[4])]);
  const mapLine = (line: number): number | null => {
    let shift = 0;
    for (const [a, b, c, d] of hunks) {
      // A count of 0 names the line before: an insertion (b = 0) comes after old line a, a deletion (d = 0) after new line c.
      const oldEnd = b === 0 ? a : a + b - 1;
      const newEnd = d === 0 ? c : c + d - 1;
      if (b > 0 && line >= a && line <= oldEnd) return null;
      if (line <= oldEnd) break;
      shift = newEnd - oldEnd;
    }
    return line + shift;
  };
  const out: NoteRuns = [];
  for (const [first, count, session, step] of runs) {
    if (!Number.isSafeInteger(first) || !Number.isSafeInteger(count) || first < 1 || count > MAX_RUN) continue; // not ours
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
    for (const raw of res.stdout.toString('utf8').split('\n')) {
      const m = /^([0-9a-f]{40,64}) (\d+) (\d+)/.exec(raw);
      if (m) {
        commit = m[1] as string;
        if (!/^0+$/.test(commit)) lines.push([commit, Number(m[2]), Number(m[3])]);
        continue;
      }
      if (raw.startsWith('committer-time ')) times.set(commit, Number(raw.slice('committer-time '.length)));
    }
    for (const [c, line, now] of lines) {
      if (!notes.has(c)) {
        const note = hasNotes ? await readNote(repo, c) : null;
        let runs: NoteRuns | null = note ? await fileRuns(repo, note, c, rel) : null;
        const time = times.get(c) ?? 0;
        if (!note && mayOwn.length > 0 && time >= oldest) {
          const blob = await repo.git(['cat-file', 'blob', `${c}:${rel}`], { okCodes: [128] });
          runs = blob.code === 0 ? await attributeFile(repo, { sessions: mayOwn }, rel, blob.stdout, time) : null;
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
