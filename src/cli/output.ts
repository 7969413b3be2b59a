// Terminal output: colour only on a TTY and never with NO_COLOR, unless --color
// says otherwise; a progress indicator only on a TTY and only for work that
// takes over a second.
import { Chalk, type ChalkInstance } from 'chalk';
import type { Writable } from 'node:stream';
import type { ChangedPath, SkippedFile } from '../session/journal.js';
import { NESTED_REPO_GONE_PREFIX } from '../restore/restore.js';
import { printableName, printableText } from '../base/printable.js';
import type { AgentProcess } from '../session/processes.js';
import type { StopResult } from '../base/procfs.js';
import { formatSize } from '../base/fsutil.js';

export { formatSize };

export interface CliIO {
  stdout: Writable & { isTTY?: boolean };
  stderr: Writable & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Read only by commands that take input (hook payloads). */
  stdin?: NodeJS.ReadableStream;
  /** `--color=<when>` / `--no-color` as the user gave them (main.ts); auto when absent. */
  color?: ColorMode;
  /** Set by the warm server: the context of a call (its repository, settings, snapshotter…). */
  openContext?: import('../session/context.js').ContextOpener;
}

export interface Output {
  readonly json: boolean;
  readonly color: ChalkInstance;
  /** Whether stdout is a colour-capable terminal (for git's --color). */
  readonly stdoutColor: boolean;
  out(text: string): void;
  err(text: string): void;
  /** One informational line on stderr (suppressed with --json and --quiet). */
  note(text: string): void;
  printJson(value: unknown): void;
  progress(): Progress;
}

export interface Progress {
  update(phase: string): void;
  done(): void;
}

/** git's `--color=<when>`. */
export type ColorMode = 'always' | 'never' | 'auto';

function colorWanted(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv, mode: ColorMode = 'auto'): boolean {
  // The flag is this run's own word: it wins over NO_COLOR and FORCE_COLOR (no-color.org asks as much).
  if (mode !== 'auto') return mode === 'always';
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0') return true;
  if (env.TERM === 'dumb') return false;
  return stream.isTTY === true;
}

export function makeOutput(io: CliIO, opts: { json: boolean; quiet?: boolean }): Output {
  const errColor = colorWanted(io.stderr, io.env, io.color);
  const outColor = colorWanted(io.stdout, io.env, io.color);
  const color = new Chalk({ level: outColor ? 1 : 0 });
  const errChalk = new Chalk({ level: errColor ? 1 : 0 });
  return {
    json: opts.json,
    color,
    stdoutColor: outColor,
    out: (text) => io.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
    err: (text) => io.stderr.write(text.endsWith('\n') ? text : `${text}\n`),
    note(text) {
      if (opts.json || opts.quiet) return;
      io.stderr.write(`${errChalk.dim(text)}\n`);
    },
    printJson: (value) => io.stdout.write(`${JSON.stringify(value, null, 2)}\n`),
    progress() {
      if (opts.json || io.stderr.isTTY !== true) return { update() {}, done() {} };
      return spinner(io.stderr, errChalk);
    },
  };
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

function spinner(stream: Writable, c: ChalkInstance): Progress {
  const started = Date.now();
  let phase = 'working';
  let frame = 0;
  let shown = false;
  const timer = setInterval(() => {
    if (Date.now() - started < 1000) return;
    shown = true;
    stream.write(`\r\x1b[2K${c.cyan(FRAMES[frame++ % FRAMES.length])} ${phase}…`);
  }, 100);
  timer.unref();
  return {
    update(p) {
      phase = p;
    },
    done() {
      clearInterval(timer);
      if (shown) stream.write('\r\x1b[2K');
    },
  };
}

const SKIP_REASON: Record<SkippedFile['reason'], string> = {
  secret: 'looks like a secret',
  'too-large': 'over the size cap',
  excluded: 'excluded by agentsnap.exclude',
  'nested-repo-without-commit': 'nested repository without a commit',
  'nested-repo-other-format': 'nested repository of another object format',
  unreadable: 'unreadable',
  'path-too-long': 'path too long to read',
  'gitmodules-symlink': 'a symlinked .gitmodules, which git cannot record',
};

export function describeSkipped(s: SkippedFile): string {
  const size = s.size !== undefined && s.reason === 'too-large' ? `, ${formatSize(s.size)}` : '';
  return `${printableName(s.path)} (${SKIP_REASON[s.reason] ?? s.reason}${size})`;
}

export function countChanges(changed: ChangedPath[]): { files: number; added: number; deleted: number } {
  let added = 0;
  let deleted = 0;
  for (const c of changed) {
    added += c.added ?? 0;
    deleted += c.deleted ?? 0;
  }
  return { files: changed.length, added, deleted };
}

/** Prints a path the way a terminal can show it (control characters escaped: base/printable.ts, the one escaping of recorded text). */
export const printablePath = printableName;

/**
 * A path an operation left, for a `  ! …` line. One with an object id holds a
 * version the restore found there at the moment it replaced the path (a write
 * that raced with it): its reason says what became of it and names the object.
 */
export function describeLeft(l: { path: string; reason: string; oid?: string }): string {
  // A deleted nested repository is not there to be "left as it is": its reason says what happened.
  return l.oid || l.reason.startsWith(NESTED_REPO_GONE_PREFIX)
    ? `${printablePath(l.path)}  ${l.reason}`
    : `${printablePath(l.path)}  left as it is: ${l.reason}`;
}

/** git's diff header lines (before a file's first hunk), coloured bold as git colours them. */
const DIFF_META =
  /^(diff --git |index |--- |\+\+\+ |new file mode |deleted file mode |old mode |new mode |similarity index |dissimilarity index |rename from |rename to |copy from |copy to |Binary files )/;

/**
 * A diff as git prints it (asked for without colour), made safe for a terminal: the files' bytes and names
 * with their control characters escaped (printableText), then coloured the way git colours a diff by
 * default (headers bold, hunk heads cyan, removed lines red, added green, a diffstat's graph red and green).
 * git's own colours cannot be kept: in its output they could not be told from escape codes in the files.
 */
export function printableDiff(diff: string, c: ChalkInstance): string {
  const text = printableText(diff);
  if (c.level === 0) return text;
  let inHeader = false;
  return text
    .split('\n')
    .map((line) => {
      if (line.startsWith('diff --git ')) inHeader = true;
      if (line.startsWith('@@')) {
        inHeader = false;
        const m = /^(@@ [^@]* @@)(.*)$/.exec(line);
        return m ? `${c.cyan(m[1])}${m[2]}` : c.cyan(line);
      }
      if (inHeader && DIFF_META.test(line)) return c.bold(line);
      if (line.startsWith('+')) return c.green(line);
      if (line.startsWith('-')) return c.red(line);
      const stat = /^( .* \| +\d+ )(\+*)(-*)$/.exec(line);
      if (stat) return `${stat[1]}${stat[2] ? c.green(stat[2]) : ''}${stat[3] ? c.red(stat[3]) : ''}`;
      return line;
    })
    .join('\n');
}

/** One process an agent's call left running: pid, command, the step that started it, its ports, how it was stopped. */
export function processLine(p: AgentProcess & { stopped?: StopResult }): string {
  const ports = p.ports.length > 0 ? `, listening on ${p.ports.map((n) => `:${n}`).join(' ')}` : '';
  const stopped =
    p.stopped === undefined
      ? ''
      : p.stopped === 'failed'
        ? '  — could not be stopped'
        : p.stopped === 'gone'
          ? '  — had already ended'
          : `  — stopped (${p.stopped === 'killed' ? 'SIGKILL' : 'SIGTERM'})`;
  return `pid ${p.pid}  ${printablePath(p.command)}  (started by step ${p.step}${ports})${stopped}`;
}

/** The warning when a new shadow repository set aside one kept for another directory at the same path. */
export function setAsideNote(dir: string): string {
  return `the shadow repository kept at this path was made for another directory (removed or replaced since): it is set aside as ${printablePath(dir)}, not deleted; \`agentsnap gc --all\` here removes it`;
}
