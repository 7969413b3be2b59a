// Read-only views of a session: log, show, diff. Nothing here takes a lock or
// writes a ref; diff against the worktree writes only unreferenced objects
// through a throwaway copy of the private index.
import { errors } from '../base/errors.js';
import fs from 'node:fs';
import path from 'node:path';
import { openRepo, type Repo } from '../git/repo.js';
import { AUTO_TOOL, sessionSettings, type Session, type Step } from './model.js';
import { loadSession, sessionPaths } from './session.js';
import { snapshotNow } from '../snapshot/snapshot-now.js';
import { loadSettings } from '../settings/settings.js';
import { treeOf } from '../git/plumbing.js';
import { describeCall } from '../agents/registry.js';
import { printableLine } from '../base/printable.js';

export interface LogFilter {
  tool?: string | undefined;
  last?: number | undefined;
  /** Only steps that changed one of these paths (worktree-relative; a directory matches everything below it). */
  paths?: string[] | undefined;
  /** Only steps whose input, output, error or message holds this text (plain text, case-insensitive; as journaled, i.e. redacted). */
  grep?: string | undefined;
}

/** Whether any string in `value` (an input or output as journaled: strings, arrays, objects) holds `needle` (lower case). */
function holds(value: unknown, needle: string): boolean {
  if (typeof value === 'string') return value.toLowerCase().includes(needle);
  if (Array.isArray(value)) return value.some((v) => holds(v, needle));
  if (value && typeof value === 'object') return Object.values(value).some((v) => holds(v, needle));
  return false;
}

/** A step whose recorded input, output, error or checkpoint message holds `needle` (lower case). */
export function stepHolds(step: Step, needle: string): boolean {
  return holds(step.input, needle) || holds(step.output, needle) || holds(step.error, needle) || holds(step.message, needle);
}

function touches(step: Step, paths: string[]): boolean {
  return step.changed.some((c) => paths.some((p) => c.path === p || c.path.startsWith(p.endsWith('/') ? p : `${p}/`)));
}

export function filterSteps(s: Session, filter: LogFilter): Step[] {
  let steps = s.steps;
  if (filter.tool) {
    const t = filter.tool.toLowerCase();
    steps = steps.filter((st) => (st.tool ?? '').toLowerCase() === t);
  }
  if (filter.paths && filter.paths.length > 0) {
    const ps = filter.paths.map((p) => p.replace(/^\.\//, '').replace(/\/+$/, '') || '.');
    steps = ps.includes('.') ? steps : steps.filter((st) => touches(st, ps));
  }
  if (filter.grep) {
    const needle = filter.grep.toLowerCase();
    steps = steps.filter((st) => stepHolds(st, needle));
  }
  if (filter.last !== undefined) steps = steps.slice(Math.max(0, steps.length - filter.last));
  return steps;
}

/** One line of text: runs of whitespace (newlines of a script included) as one space, other control characters escaped. */
function oneLine(t: string): string {
  return printableLine(t.replace(/\s+/g, ' ').trim());
}

/** A path a tool named, relative to the session's worktree when it is inside it (agents often give absolute paths). */
function worktreePath(worktree: string, p: string): string {
  if (!path.isAbsolute(p)) return p.replace(/^\.\//, '');
  const rel = path.relative(worktree, p);
  return rel === '' ? '.' : rel.startsWith('..') || path.isAbsolute(rel) ? p : rel.split(path.sep).join('/');
}

/** The files a step changed, for a step whose input names none: the first few, then how many more. */
function changedFiles(st: Step): string {
  const shown = st.changed.slice(0, 3).map((c) => c.path);
  const more = st.changed.length - shown.length;
  return oneLine(`changed ${shown.join(', ')}${more > 0 ? ` and ${more} more` : ''}`);
}

/**
 * What a step was, in one line, wherever a step is named (log, show, bisect, blame, the web page): `$ <command>`
 * for a shell command, the files it wrote or read (relative to the worktree), an MCP tool's main argument; for a
 * `wrap --auto` step the files it changed; else the `-m` text of a checkpoint; null when nothing says (a
 * `snap --phase pre` without input). The reading of each agent's tool inputs is its adapter's.
 */
export function describeStep(s: Pick<Session, 'agent' | 'worktree'>, st: Step): string | null {
  const d = describeCall(s.agent, st.agentVersion, st.tool, st.input);
  if (d?.kind === 'shell') return `$ ${oneLine(d.command)}`;
  if (d?.kind === 'paths') return oneLine(d.paths.map((p) => worktreePath(s.worktree, p)).join(', '));
  if (d) return oneLine(d.text);
  // An --auto step's message is the same for every step ("the worktree changed"): its files say which it was.
  if (st.tool === AUTO_TOOL && st.changed.length > 0) return changedFiles(st);
  return st.message ? oneLine(st.message) : null;
}

/** A point in a session's history: the state before or after a step (`0` is the baseline). */
export interface StatePoint {
  step: number;
  when: 'before' | 'after';
}

/** Parses `N` (after step N), `N:post`, `N:pre` / `N:before`. */
export function parseStatePoint(text: string): StatePoint {
  const m = /^(\d+)(?::(pre|post|before|after))?$/.exec(text.trim());
  if (!m) {
    throw errors.invalidArgument(`${JSON.stringify(text)} is not a step.`, {
      hint: 'Use a step number (the state after it), or N:pre for the state before it.',
      data: { value: text },
    });
  }
  const when = m[2] === 'pre' || m[2] === 'before' ? 'before' : 'after';
  return { step: Number(m[1]), when };
}

export function stepOf(s: Session, n: number): Step {
  const st = s.steps.find((x) => x.step === n);
  if (!st) {
    const range = s.nextStep > 1 ? `steps are 1 to ${s.nextStep - 1}` : 'it has no steps yet';
    throw errors.stepOutOfRange(`session ${s.id} has no step ${n} (${range}).`, {
      hint: 'See `agentsnap log` for the steps of the session.',
      data: { session: s.id, step: n },
    });
  }
  return st;
}

/** The commit holding the session's state at `point`. */
export function commitAt(s: Session, point: StatePoint): string {
  if (point.step === 0) return s.baseline;
  const st = stepOf(s, point.step);
  const commit = point.when === 'before' ? st.pre : (st.post ?? st.pre);
  if (!commit) {
    throw errors.stepOutOfRange(`step ${point.step} of session ${s.id} has no snapshot (${st.status}).`, {
      hint: st.unprotectedReason ? `Its snapshot failed: ${st.unprotectedReason}` : 'See `agentsnap log`.',
      data: { session: s.id, step: point.step },
    });
  }
  return commit;
}

export interface DiffOptions {
  color?: boolean;
  stat?: boolean;
  paths?: string[];
}

function diffArgs(opts: DiffOptions): string[] {
  const args = [
    '-c',
    'core.quotepath=false',
    'diff',
    '--ignore-submodules=none',
    '--no-ext-diff',
    '--no-renames',
    opts.color ? '--color=always' : '--no-color',
  ];
  if (opts.stat) args.push('--stat');
  return args;
}

async function runDiff(repo: Repo, from: string, to: string, opts: DiffOptions): Promise<string> {
  const environment = opts.paths?.length ? [] : await environmentOf(repo, to);
  if (environment.length > 0) return collapsedDiff(repo, from, to, opts, environment);
  const args = [...diffArgs(opts), from, to, '--'];
  if (opts.paths) args.push(...opts.paths);
  const res = await repo.git(args, { extraEnv: { GIT_LITERAL_PATHSPECS: '1' } });
  return res.stdout.toString('utf8');
}

/** The environment directories a snapshot holds whole (its `Agentsnap-Environment:` trailers); none for another commit. */
async function environmentOf(repo: Repo, commit: string): Promise<string[]> {
  const res = await repo.git(['cat-file', 'commit', commit], { okCodes: [128] });
  if (res.code !== 0) return [];
  return [...res.stdout.toString('utf8').matchAll(/^Agentsnap-Environment: (.+)$/gm)].map((m) => m[1]!);
}

/**
 * A diff with each environment directory as one line: an `npm install` changes thousands of files there, which
 * would bury the code. `agentsnap diff A B -- <dir>` shows them.
 */
async function collapsedDiff(repo: Repo, from: string, to: string, opts: DiffOptions, environment: string[]): Promise<string> {
  const rest = await repo.git([...diffArgs(opts), from, to, '--', ':(top)', ...environment.map((d) => `:(top,literal,exclude)${d}`)]);
  let text = rest.stdout.toString('utf8');
  for (const dir of environment) {
    const res = await repo.git(['diff', '--ignore-submodules=none', '--no-renames', '--shortstat', from, to, '--', dir], {
      extraEnv: { GIT_LITERAL_PATHSPECS: '1' },
    });
    const stat = res.stdout.toString('utf8').trim();
    if (stat) text += `${dir}/: ${stat} (environment directory: \`agentsnap diff\` with \`-- ${dir}\` shows them)\n`;
  }
  return text;
}

/** What step n changed, as a diff (for a checkpoint: what changed since the snapshot before it). */
export async function showStep(repo: Repo, id: string, n: number, opts: DiffOptions = {}): Promise<{ step: Step; diff: string }> {
  const s = loadSession(repo, id);
  const step = stepOf(s, n);
  const to = step.post ?? step.pre;
  if (!to) throw errors.stepOutOfRange(`step ${n} has no snapshot (${step.status}).`, { data: { session: id, step: n } });
  const from = step.kind === 'checkpoint' ? `${to}^` : (step.pre ?? to);
  return { step, diff: await runDiff(repo, from, to, opts) };
}

/** A tree of the worktree as it is now, written through a throwaway copy of the session's private index. */
export async function worktreeTree(repo: Repo, id: string): Promise<string> {
  const settings = sessionSettings(await loadSettings(repo), loadSession(repo, id));
  return (await snapshotNow(repo, settings, 'diff', { seedIndex: sessionPaths(repo, id).index })).tree;
}

/** The session's own worktree (a session worktree, say) when it is not this one and still exists. */
async function sessionWorktree(repo: Repo, s: Session): Promise<Repo> {
  if (path.resolve(s.worktree) === path.resolve(repo.worktree) || !fs.existsSync(path.join(s.worktree, '.git'))) return repo;
  try {
    return await openRepo(s.worktree, { env: repo.callerEnv });
  } catch {
    return repo; // no longer a worktree git opens: read from this one
  }
}

/** Diff between two states of a session, or a state and the session's worktree as it is now. */
export async function diffStates(
  repo: Repo,
  id: string,
  from: StatePoint,
  to: StatePoint | 'worktree',
  opts: DiffOptions = {},
): Promise<string> {
  const s = loadSession(repo, id);
  const a = await treeOf(repo, commitAt(s, from));
  const b = to === 'worktree' ? await worktreeTree(await sessionWorktree(repo, s), id) : await treeOf(repo, commitAt(s, to));
  return runDiff(repo, a, b, opts);
}
