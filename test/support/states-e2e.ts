// The plan and processes states (issue 16) checked end to end with a real agent: the agent's shell tool starts
// a small TCP server that outlives the call, its plan tool writes a plan before and marks it done after. The
// checks then run the CLI as a user would: show, status, undo, redo, undo --stop-processes.
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { cliProcess, type TempRepo } from './helpers.js';

/** The files the server writes (its pid, then its port once it listens), and how to start it from the agent's shell. */
export interface LeftServer {
  pidFile: string;
  portFile: string;
  /** A shell command that starts the server detached (nohup + setsid: it outlives the call and the agent) and returns once it listens. */
  command: string;
  /** Kills it if it still runs (test cleanup). */
  kill(): void;
}

export function leftServer(repo: TempRepo): LeftServer {
  const pidFile = path.join(repo.base, 'server.pid');
  const portFile = path.join(repo.base, 'server.port');
  const script = path.join(repo.base, 'left-server.js');
  fs.writeFileSync(
    script,
    "const fs = require('fs');\n" +
      'fs.writeFileSync(process.argv[2], String(process.pid));\n' +
      "const s = require('net').createServer().listen(0, '127.0.0.1', () => fs.writeFileSync(process.argv[3], String(s.address().port)));\n" +
      'setInterval(() => {}, 1e6);\n',
  );
  const q = (s: string) => `'${s}'`;
  // Bounded wait (20 s) inside the call, so the call ends only once the server listens: no timing luck. In a
  // script of its own: Gemini CLI refuses a command holding $(( )) as "command substitution".
  const starter = path.join(repo.base, 'start-server.sh');
  fs.writeFileSync(
    starter,
    `nohup setsid ${q(process.execPath)} ${q(script)} ${q(pidFile)} ${q(portFile)} </dev/null >/dev/null 2>&1 &\n` +
      `i=0; while [ ! -s ${q(portFile)} ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done\necho started\n`,
  );
  const command = `sh ${q(starter)}`;
  return {
    pidFile,
    portFile,
    command,
    kill() {
      try {
        process.kill(Number(fs.readFileSync(pidFile, 'utf8')), 'SIGKILL');
      } catch {
        /* not started, or gone */
      }
    },
  };
}

export function alive(pid: number): boolean {
  try {
    return !/^\S+ \(.*\) [ZX] /.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** Polls (50 ms, up to 30 s: a loaded machine only makes it slower). */
export async function until(what: string, ok: () => boolean): Promise<void> {
  for (let i = 0; i < 600 && !ok(); i++) await new Promise((r) => setTimeout(r, 50));
  assert.ok(ok(), what);
}

type Env = { envChanged: unknown; tools: string[] | null };

/**
 * After a session whose steps are: `planStep` wrote the plan (`items` in progress/pending), `serverStep` started
 * the server, later steps did the work, `doneStep` marked every item completed.
 */
export async function checkPlanAndProcesses(
  repo: TempRepo,
  id: string,
  server: LeftServer,
  at: { planStep: number; serverStep: number; doneStep: number; items: string[]; firstItemMark: string },
): Promise<{ environments: Env[] }> {
  const pid = Number(fs.readFileSync(server.pidFile, 'utf8'));
  const port = Number(fs.readFileSync(server.portFile, 'utf8'));
  assert.ok(alive(pid), 'the server outlived the call and the agent');

  // show N: the plan as of that step.
  const show = await cliProcess(repo, ['show', String(at.serverStep), '--session', id]);
  assert.is(show.code, 0, show.stderr);
  assert.match(show.stdout, `plan (as of this step, set by step ${at.planStep}):\n  - [${at.firstItemMark}] ${at.items[0]}`);
  const log = JSON.parse((await cliProcess(repo, ['log', '--json', '--session', id])).stdout) as {
    step: number;
    plan: { setAt: number } | null;
  }[];
  assert.is(log.find((r) => r.step === at.doneStep)?.plan?.setAt, at.doneStep, 'the plan as of the last plan call');

  // status: the server, with the step that started it and its port.
  const status = await cliProcess(repo, ['status', '--json', '--session', id]);
  assert.is(status.code, 0, status.stderr);
  const listed = (JSON.parse(status.stdout) as { processes: { pid: number; step: number; ports: number[] }[] }).processes;
  assert.equal(
    listed.map((p) => ({ pid: p.pid, step: p.step, ports: p.ports })),
    [{ pid, step: at.serverStep, ports: [port] }],
    status.stdout,
  );
  const text = await cliProcess(repo, ['status', '--session', id]);
  assert.match(text.stdout, `(started by step ${at.serverStep}, listening on :${port})`);

  // The environment of each step: no variable differs between calls of one agent run; the tools when the agent says.
  const environments: Env[] = [];
  for (const r of log) {
    const one = JSON.parse((await cliProcess(repo, ['show', String(r.step), '--json', '--session', id])).stdout) as { environment: Env };
    environments.push(one.environment);
    assert.is(one.environment.envChanged, null, `no environment variable changed by step ${r.step}`);
  }

  // undo N: names the plan items the undone steps marked done and the server still running; stops nothing.
  const undo = await cliProcess(repo, ['undo', String(at.serverStep), '--session', id]);
  assert.is(undo.code, 0, undo.stderr);
  assert.match(undo.stdout, 'plan items the undone steps had marked done (the agent may still believe them done):');
  for (const item of at.items) assert.match(undo.stdout, `  - [x] ${item}`);
  assert.match(undo.stdout, `still running, started by the undone steps (files are put back, processes are not):\n  pid ${pid}`);
  assert.ok(alive(pid), 'undo without --stop-processes stops nothing');
  const redo = await cliProcess(repo, ['redo', '--session', id]);
  assert.is(redo.code, 0, redo.stderr);

  // undo N --stop-processes: stops it (SIGTERM), and it is gone.
  const stop = await cliProcess(repo, ['undo', String(at.serverStep), '--stop-processes', '--json', '--session', id]);
  assert.is(stop.code, 0, stop.stderr);
  const stopped = (JSON.parse(stop.stdout) as { processes: { pid: number; stopped: string }[] }).processes;
  assert.equal(
    stopped.map((p) => [p.pid, p.stopped]),
    [[pid, 'terminated']],
  );
  await until('the stopped server is gone', () => !alive(pid));
  const after = await cliProcess(repo, ['status', '--json', '--session', id]);
  assert.equal((JSON.parse(after.stdout) as { processes: unknown[] }).processes, []);
  return { environments };
}
