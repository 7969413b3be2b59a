// `--sync-deps` (issue 33 part 2): runs the package manager's own command (deps.ts) in its directory after an
// operation moved a dependency file: argv with no shell, found on the caller's PATH, its output handed to the
// caller as it comes (the CLI passes it to stderr). A command that is missing or fails is an outcome, never an
// error: the operation before it is done and stays done.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { onPath } from '../base/shell.js';
import type { DepsToSync } from './deps.js';

/** What one command did. */
export interface DepsSyncOutcome {
  /** The directory it ran in, relative to the worktree (`.`: the top). */
  dir: string;
  command: string[];
  /** Whether it started (false: its program is not on PATH, or could not be started). */
  ran: boolean;
  /** Its exit code (null: it did not run, or a signal ended it). */
  exitCode: number | null;
  signal: string | null;
  /** null: it ran and exited 0; else what went wrong, in words. */
  error: string | null;
}

/** Where the caller wants to hear of the commands: each before it starts, their output as it comes. */
export interface DepsSyncListener {
  start?(entry: DepsToSync & { command: string[] }): void;
  output?(chunk: Uint8Array): void;
}

/** Runs each entry's command (entries without one are skipped) in turn, in `worktree`/dir, with `env` (its PATH finds the program). */
export async function syncDeps(
  worktree: string,
  entries: readonly DepsToSync[],
  env: NodeJS.ProcessEnv,
  listener: DepsSyncListener = {},
): Promise<DepsSyncOutcome[]> {
  const outcomes: DepsSyncOutcome[] = [];
  for (const entry of entries) {
    const command = entry.command;
    if (command === null) continue;
    listener.start?.({ ...entry, command });
    outcomes.push(await runOne(path.join(worktree, entry.dir), entry.dir, command, env, listener));
  }
  return outcomes;
}

async function runOne(
  cwd: string,
  dir: string,
  command: string[],
  env: NodeJS.ProcessEnv,
  listener: DepsSyncListener,
): Promise<DepsSyncOutcome> {
  const base = { dir, command, ran: false, exitCode: null, signal: null };
  const program = command[0] as string;
  const file = onPath(program, env);
  if (file === null) return { ...base, error: `${program} is not on PATH` };
  if (!fs.existsSync(cwd)) return { ...base, error: `the directory ${dir} does not exist` };
  return new Promise((resolve) => {
    const child = spawn(file, command.slice(1), {
      cwd,
      env,
      argv0: program,
      stdio: ['ignore', listener.output ? 'pipe' : 'ignore', listener.output ? 'pipe' : 'ignore'],
    });
    const forward = (chunk: Uint8Array) => listener.output?.(chunk);
    child.stdout?.on('data', forward);
    child.stderr?.on('data', forward);
    child.on('error', (e: NodeJS.ErrnoException) =>
      resolve({ ...base, error: `${program} could not be started (${e.code ?? e.message})` }),
    );
    child.on('close', (code, signal) =>
      resolve({
        ...base,
        ran: true,
        exitCode: code,
        signal,
        error: code === 0 ? null : signal ? `${program} was ended by ${signal}` : `${program} exited with ${code}`,
      }),
    );
  });
}
