// The thin `agentsnap wrap` (issue 19): where this worktree's background server
// runs (left by the last wrap, or started by a hook), the server begins the
// session (baseline through its file watcher, the agent's hooks) and ends it
// (final snapshot, maintenance), and this process only starts the agent in
// between, so a session costs a Node start-up and two calls instead of the
// CLI's load and two looks at the whole worktree. Same output, same exit code
// and the same session as `wrap` through the CLI.
// The calls go over the channel of src/server/channel.ts (dist/channel.cjs: the run dir's trust check, the record):
//   begin: `wrap <args>` → "spawn <base64 JSON: token, program, argv, cwd, env changes> <base64 stderr>",
//            or "exit …" (the wrap ended there: an error, reported as the CLI reports it),
//            or anything else: null, and the CLI runs the whole wrap here.
//   end:   `wrap-end` with JSON {token, code, signal} → "exit <code> <out> <err>".
// If the server is gone by the end, the CLI ends the session here (finishServedWrap).
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const channel = require('../dist/channel.cjs');

/** The background server of this worktree (never a wrapper's own: it stops with that wrapper's agent) when its run dir passes the trust check, or null. */
function backgroundServer(cwd) {
  const server = channel.trustedRunDir(cwd);
  if (!server) return null;
  try {
    const owner = JSON.parse(channel.readPlainFile(path.join(server.run, 'server.lock')) ?? '');
    return owner.purpose === 'server' && owner.pid === server.pid ? server : null;
  } catch {
    return null; // an unreadable or torn server lock: no trusted server, the Node path as if none ran
  }
}

const decode = channel.replyBytes;

function write(fd, buf) {
  try {
    if (buf) fs.writeSync(fd, buf);
  } catch (e) {
    if (e.code !== 'EPIPE') throw e; // a reader that stopped early (`| head`) is no failure, as in the CLI
  }
}

/** An exit code as the server sent it (a whole number 0–255; anything else would be a bug, reported as one). */
function exitCode(text) {
  const n = Number(text);
  return Number.isInteger(n) && n >= 0 && n <= 255 ? n : 70;
}

const TERMINAL_SIGNALS = new Set(['SIGINT', 'SIGQUIT', 'SIGHUP']);
const FORWARDED_SIGNALS = ['SIGINT', 'SIGQUIT', 'SIGHUP', 'SIGTERM', 'SIGUSR1', 'SIGUSR2'];

/** Starts the agent as src/runtime/wrap.ts runChild does: signals forwarded (those the terminal sent it too, not twice). */
function runAgent(spawn, spec, env) {
  return new Promise((resolve) => {
    let child = null;
    const handlers = new Map();
    const cleanup = () => {
      for (const [sig, h] of handlers) process.off(sig, h);
    };
    for (const sig of FORWARDED_SIGNALS) {
      const h = () => {
        if (TERMINAL_SIGNALS.has(sig) && channel.inTerminalForeground()) return;
        try {
          child?.kill(sig);
        } catch {
          /* already gone */
        }
      };
      handlers.set(sig, h);
      process.on(sig, h);
    }
    child = spawn(spec.program, spec.argv.slice(1), { cwd: spec.cwd, env, stdio: 'inherit', argv0: spec.argv[0] });
    child.on('error', (e) => {
      cleanup();
      resolve({ error: e });
    });
    child.on('exit', (code, signal) => {
      cleanup();
      resolve({ code, signal });
    });
  });
}

/**
 * `agentsnap wrap <args>` through this worktree's background server: the
 * exit code, or null (no such server, or it does not begin this form), and
 * the CLI runs the whole wrap itself, as if this had not been tried.
 */
async function wrapViaServer(args, loadCli) {
  if (channel.serverSwitchedOff(process.env) || !args.includes('--') || args.includes('--help') || args.includes('-h')) return null;
  const cwd = process.cwd();
  const server = backgroundServer(cwd);
  if (!server) return null;
  const run = server.run;
  // The request goes out before callServer() first waits: node:child_process loads while the server begins the session.
  const asked = channel.callServer(run, ['wrap', ...args], null);
  const { spawn } = require('node:child_process');
  const begun = await asked;
  if (!begun) return null;
  const [a, b, c] = begun.fields;
  const kind = begun.kind;
  if (kind === 'exit') {
    write(1, decode(b));
    write(2, decode(c));
    return exitCode(a);
  }
  if (kind !== 'spawn') return null;
  let spec;
  try {
    spec = JSON.parse(decode(a).toString('utf8'));
  } catch {
    return null; // cannot happen with our own server; a session it began is ended by crash recovery (its owner is gone)
  }
  write(1, spec.stdout ? Buffer.from(spec.stdout) : null);
  write(2, decode(b));
  const env = { ...process.env, ...spec.env.set };
  for (const k of spec.env.unset) delete env[k];
  const exit = await runAgent(spawn, spec, env);
  const outcome = exit.error ? { code: null, signal: null, error: exit.error.message } : { code: exit.code, signal: exit.signal };
  // The end of a session waits for a free slot while the server runs (a burst of hooks holds them all): given up,
  // the session would be ended here with the server's warning, and the server would keep it as begun.
  const ended = await channel.callServer(run, ['wrap-end'], JSON.stringify({ token: spec.token, ...outcome }), {
    slotWaitMs: 60_000,
    serving: () => backgroundServer(cwd) !== null,
  });
  if (ended && ended.kind === 'exit') {
    write(1, decode(ended.fields[1]));
    write(2, decode(ended.fields[2]));
    return exitCode(ended.fields[0]);
  }
  // The server went away while the agent ran (or, never seen, would not end the session): it is ended here, as the server would have.
  const why = ended && ended.kind === 'warn' ? ended.fields.join(' ') : null;
  // In the session's worktree: the agent may have removed the directory this wrap began in.
  return (await loadCli()).finishServedWrap(
    { cwd: spec.begun.worktree ?? process.cwd(), env: process.env, stdout: process.stdout, stderr: process.stderr },
    spec.begun,
    outcome,
    why,
  );
}

module.exports = { wrapViaServer };
