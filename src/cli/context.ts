import type { CommandModule } from 'yargs';
import { AgentsnapError, ExitCode, errors, isErrorCode, type ExitCodeName } from '../base/errors.js';
import type { CliIO, Output } from './output.js';
import type { ServerCalls } from '../server/serve.js';
import type { Session } from '../session/model.js';
import { sessionName } from '../session/selection.js';
import { printableName } from '../base/printable.js';

/** What every command handler gets: where it runs and how to print. Passed in, never global. */
export interface CliContext {
  io: CliIO;
  /** Set by main before the handler runs (depends on --json). */
  output(argv: { json?: boolean; quiet?: boolean }): Output;
  /** For commands whose exit code is not theirs to choose (wrap exits with the agent's code). */
  setExitCode(code: number): void;
  /** `snap` for a warm server this process hosts (wrap, `server run`): runSnap in main.ts, as `agentsnap snap` runs. */
  serveSnap(args: string[], io: CliIO): Promise<number | null>;
  /** `wrap`'s first half for a background server (`server run`) answering a thin wrap client: runServedWrap in main.ts. */
  serveWrap: ServerCalls['wrap'];
  /** Every command's definition, as --help reads them (for `completion`): main.ts's COMMANDS, loaded. */
  commandModules(): Promise<CommandModule[]>;
}

export type CommandFactory = (ctx: CliContext) => CommandModule;

export const sessionOption = {
  session: {
    type: 'string',
    describe: 'session id, or the name it was started with (default: $AGENTSNAP_SESSION, else the most recent session of this worktree)',
  },
} as const;

export const jsonOption = {
  json: { type: 'boolean', default: false, describe: 'print machine-readable JSON on stdout' },
} as const;

/** Describes where the session came from, for the "which session" line on stderr; a session is named by its name too. */
export function sessionSourceNote(session: string | Pick<Session, 'id' | 'name' | 'command'>, source: 'flag' | 'env' | 'recent'): string {
  const why = source === 'flag' ? '' : source === 'env' ? ' (from AGENTSNAP_SESSION)' : ' (most recent in this worktree)';
  if (typeof session === 'string') return `session ${session}${why}`;
  const name = sessionName(session);
  return `session ${session.id}${name ? ` (${printableName(name)})` : ''}${why}`;
}

/**
 * A step positional as the user typed it (parsed as a string: yargs' number type
 * turns `abc` into NaN and the message would say `null`): a whole number from 1.
 */
export function stepArgument(value: unknown): number {
  const text = String(value);
  if (!/^[1-9][0-9]{0,8}$/.test(text)) {
    throw errors.invalidArgument(`${JSON.stringify(text)} is not a step number.`, {
      hint: 'Steps are numbered from 1: see `agentsnap log`.',
      data: { value: text },
    });
  }
  return Number(text);
}

/** An AgentsnapError of another bundle's class (dist/mcp.bundle.js and dist/ui.bundle.js hold their own copies) as this one's, so it keeps its exit code. */
export function sameError(e: unknown): unknown {
  const x = e as Partial<AgentsnapError> | null;
  if (e instanceof AgentsnapError || !x || x.name !== 'AgentsnapError' || !isErrorCode(x.code) || !(String(x.exit) in ExitCode)) return e;
  return new AgentsnapError(x.code, x.exit as ExitCodeName, String(x.message), {
    ...(x.hint ? { hint: x.hint } : {}),
    ...(x.data ? { data: x.data } : {}),
    cause: e,
  });
}
