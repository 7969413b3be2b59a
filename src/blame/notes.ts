// Blame across commits (issue 17): when the git hooks are installed, the
// post-commit hook records in a git note (refs/notes/agentsnap) which session
// step last wrote each committed line, so `agentsnap blame` still names the
// step once the session is long over. `notes.rewriteRef` makes git copy the
// note when `commit --amend` or `rebase` rewrites the commit. A note is JSON:
//   {"v":1,"files":{"<path>":[[firstLine, count, session, step], ...]}}
// with line numbers of the file as that commit has it. (git-ai's authorship
// notes answer "which lines did an AI write"; these answer "which tool call of
// which agentsnap session", and are written by agentsnap's own hook.)
import type { Repo } from '../git/repo.js';
import { listSessions, loadSession } from '../session/session.js';
import { blameFile } from './blame.js';
import type { Session } from '../session/model.js';

export const NOTES_REF = 'refs/notes/agentsnap';

export type NoteRuns = [number, number, string, number][];

export interface CommitNote {
  v: 1;
  files: Record<string, NoteRuns>;
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

/**
 * Writes the note of `commit` (default HEAD): for each text file it added or changed, the lines this worktree's
 * sessions' steps wrote. Returns the note, or null when no committed line came from a step. Sessions are tried
 * newest first; a line keeps the first attribution found.
 */
export async function noteCommit(repo: Repo, commit = 'HEAD'): Promise<CommitNote | null> {
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
  const sessions: Session[] = [];
  for (const summary of await listSessions(repo)) {
    if (summary.worktree !== repo.worktree) continue;
    try {
      sessions.push(loadSession(repo, summary.id));
    } catch {
      /* unreadable: doctor's to report */
    }
  }
  if (sessions.length === 0) return null;
  // Only what a session changed can carry a step: one diff per session bounds the blames to those files.
  const touched = new Map<string, Set<string>>();
  for (const s of sessions) {
    const d = await repo.git(['diff-tree', '--ignore-submodules=none', '-r', '-z', '--name-only', '--no-renames', s.baseline, s.head], {
      okCodes: [128],
    });
    touched.set(s.id, new Set(d.code === 0 ? splitNul(d.stdout) : []));
  }
  const note: CommitNote = { v: 1, files: {} };
  for (const rel of paths) {
    if (!sessions.some((s) => touched.get(s.id)?.has(rel))) continue;
    const blob = await repo.git(['cat-file', 'blob', `${oid}:${rel}`], { okCodes: [128] });
    if (blob.code !== 0 || blob.stdout.includes(0)) continue; // binary: no lines
    const owner = new Map<number, [string, number]>();
    for (const s of sessions) {
      if (!touched.get(s.id)?.has(rel)) continue;
      let lines;
      try {
        lines = await blameFile(repo, s, rel, blob.stdout);
      } catch {
        continue; // not in this session's snapshots
      }
      for (const l of lines) if (l.origin.kind === 'step' && !owner.has(l.line)) owner.set(l.line, [s.id, l.origin.step]);
    }
    const runs: NoteRuns = [];
    for (const line of [...owner.keys()].sort((a, b) => a - b)) {
      const [session, step] = owner.get(line) as [string, number];
      const last = runs[runs.length - 1];
      if (last && last[0] + last[1] === line && last[2] === session && last[3] === step) last[1]++;
      else runs.push([line, 1, session, step]);
    }
    if (runs.length > 0) note.files[rel] = runs;
  }
  if (Object.keys(note.files).length === 0) return null;
  // A rebased commit already holds the note git copied from the commit it replaces (notes.rewriteRef): this one
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
      for (const [rel, runs] of Object.entries(n.files)) if (!(rel in out.files) && Array.isArray(runs)) out.files[rel] = runs;
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
 * For the lines of `rel` as it is now (`contents`: the worktree's bytes, null: HEAD's), the session step a
 * commit's note names: git blame of the user's history (HEAD), each line's commit and its line there looked up
 * in that commit's note. Lines no note covers are left out. Never throws (no HEAD, no notes: an empty map).
 */
export async function committedAuthors(
  repo: Repo,
  rel: string,
  contents: Buffer | null,
): Promise<Map<number, { session: string; step: number; commit: string }>> {
  const out = new Map<number, { session: string; step: number; commit: string }>();
  try {
    const hasNotes = (await repo.git(['rev-parse', '--verify', '-q', NOTES_REF], { okCodes: [1] })).code === 0;
    if (!hasNotes) return out;
    // Without a revision, --contents blames against HEAD (git 2.39 allows nothing else).
    const res = await repo.git(['blame', '--porcelain', ...(contents ? ['--contents', '-'] : ['HEAD']), '--', rel], {
      ...(contents ? { input: contents } : {}),
      okCodes: [128],
    });
    if (res.code !== 0) return out;
    const notes = new Map<string, CommitNote | null>();
    for (const raw of res.stdout.toString('utf8').split('\n')) {
      const m = /^([0-9a-f]{40,64}) (\d+) (\d+)/.exec(raw);
      if (!m || /^0+$/.test(m[1] as string)) continue;
      const commit = m[1] as string;
      if (!notes.has(commit)) notes.set(commit, await readNote(repo, commit));
      const note = notes.get(commit);
      const hit = note ? noteLine(note, rel, Number(m[2])) : null;
      if (hit) out.set(Number(m[3]), { ...hit, commit });
    }
  } catch {
    /* no history to read */
  }
  return out;
}
