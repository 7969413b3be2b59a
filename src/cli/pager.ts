// The pager for show, diff, log, replay and bisect, the way git pages: on a terminal
// only, through $AGENTSNAP_PAGER, else $PAGER, else `less` with LESS=FRX
// (when LESS is unset: quit if one screen, keep colours, leave the screen as
// it is) and LV=-c; none with --no-pager, when stdout is not a terminal, or
// when the pager is empty or `cat`. A pager that cannot be started means
// plain output; the user quitting it before the end (EPIPE) is no error.
import { spawn, type ChildProcess } from 'node:child_process';
import { Writable } from 'node:stream';
import type { CliIO } from './output.js';

/** The commands whose output is paged. */
export const PAGED_COMMANDS = new Set(['show', 'diff', 'log', 'replay', 'bisect']);

/** The pager command line git's order gives ($AGENTSNAP_PAGER, $PAGER, less), or null for none. */
export function pagerCommand(env: NodeJS.ProcessEnv): string | null {
  const cmd = env.AGENTSNAP_PAGER ?? env.PAGER ?? 'less';
  return cmd.trim() === '' || cmd.trim() === 'cat' ? null : cmd;
}

/** A command with no shell syntax runs as its words (so a missing one is known before any output is lost); any other through sh. */
function argvOf(cmd: string): [string, string[]] {
  // git's list of characters that need a shell (run-command.c), without the blanks that separate words.
  if (!/[|&;<>()$`\\"'*?[#~=%\n]/.test(cmd)) {
    const words = cmd.trim().split(/[ \t]+/);
    return [words[0]!, words.slice(1)];
  }
  return ['sh', ['-c', cmd]];
}

/** The terminal's end of a pager: writes go to its stdin; once it has gone (quit early) they are dropped. */
class PagerStream extends Writable {
  isTTY = true;
  constructor(
    private readonly sink: Writable,
    private readonly state: { gone: boolean },
    readonly columns: number | undefined,
  ) {
    super();
  }
  override _write(chunk: Buffer | string, _enc: BufferEncoding, cb: (e?: Error | null) => void): void {
    if (this.state.gone) {
      cb();
      return;
    }
    // EPIPE (the user quit the pager) is not the command's failure: the rest is dropped.
    this.sink.write(chunk, () => cb());
  }
}

export interface Pager {
  /** The io to run the command with: stdout (and stderr when it is the terminal too, as git does) into the pager. */
  io: CliIO;
  /** Ends the pager's input and waits for the user to quit it. */
  finish(): Promise<void>;
}

/** Starts the pager when the output is a terminal and one is configured; null means print as usual. */
export async function startPager(io: CliIO): Promise<Pager | null> {
  if (io.stdout.isTTY !== true) return null;
  const cmd = pagerCommand(io.env);
  if (cmd === null) return null;
  const [file, args] = argvOf(cmd);
  const env = { ...io.env, LESS: io.env.LESS ?? 'FRX', LV: io.env.LV ?? '-c' };
  let child: ChildProcess;
  try {
    child = spawn(file, args, { stdio: ['pipe', io.stdout as unknown as 'inherit', io.stderr as unknown as 'inherit'], env, cwd: io.cwd });
  } catch {
    return null; // a pager that cannot be started: the output goes out unpaged
  }
  const started = await new Promise<boolean>((resolve) => {
    child.once('spawn', () => resolve(true));
    child.once('error', () => resolve(false));
  });
  child.on('error', () => {}); // any later error: the pager is gone, which 'exit' says
  if (!started || !child.stdin) return null;
  const state = { gone: false };
  const stdin = child.stdin;
  stdin.on('error', () => {
    state.gone = true;
  });
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  }).then(() => {
    state.gone = true;
  });
  const columns = (io.stdout as { columns?: number }).columns;
  const out = new PagerStream(stdin, state, columns);
  const err = io.stderr.isTTY === true ? new PagerStream(stdin, state, (io.stderr as { columns?: number }).columns) : io.stderr;
  // Ctrl-C in the pager is the pager's (less stops a search with it): agentsnap waits for it to quit instead of dying under it.
  const ignore = () => {};
  process.on('SIGINT', ignore);
  process.on('SIGQUIT', ignore);
  const ended = (w: Writable) => new Promise<void>((resolve) => w.end(() => resolve()));
  return {
    io: { ...io, stdout: out, stderr: err },
    async finish() {
      await ended(out);
      if (err !== io.stderr) await ended(err as Writable);
      stdin.end();
      await exited;
      process.off('SIGINT', ignore);
      process.off('SIGQUIT', ignore);
    },
  };
}
