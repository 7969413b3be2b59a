// The thin `agentsnap wrap` (issue 19): where this worktree's background server
// runs (left by the last wrap, or started by a hook), the server begins the
// session (baseline through its file watcher, the agent's hooks) and ends it
// (final snapshot, maintenance), and this process only starts the agent in
// between, so a session costs a Node start-up and two calls instead of the
// CLI's load and two looks at the whole worktree. Same output, same exit code
// and the same session as `wrap` through the CLI.
//   begin: "<slot> <pid>" (the server reads `wrap …` from /proc/<pid>/cmdline)
//          → "<pid> spawn <base64 JSON: token, program, argv, cwd, env changes> <base64 stderr>",
//            or "<pid> exit …" (the wrap ended there: an error, reported as the CLI reports it),
//            or anything else: null, and the CLI runs the whole wrap here.
//   end:   "<slot> <pid> wrap-end", JSON {token, code, signal} in in.<slot> → "<pid> exit <code> <out> <err>".
// If the server is gone by the end, the CLI ends the session here (finishServedWrap).
// Plain JavaScript with node: imports only, so a session pays no module loading.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { claimSlot, findRunDir, openReply, sendRequest } = require('./server-client.js');


/** The background server of this worktree (never a wrapper's own: it stops with that wrapper's agent), or null. */
function backgroundServer(run) {
  try {
    const owner = JSON.parse(fs.readFileSync(path.join(run, 'server.lock'), 'utf8'));
    if (owner.purpose !== 'server') return null;
    const pid = Number(fs.readFileSync(path.join(run, 'pid'), 'utf8').trim());
    if (pid !== owner.pid) return null;
    process.kill(pid, 0);
    return pid;
  } catch {
    return null;
  }
}

/** One call: claims a slot, writes the payload, sends the line, reads the reply meant for us; null when none came. */
async function call(run, kind, payload) {
  let claim = null;
  let reply = -1;
  try {
    // The end of a session waits for a free slot while the server runs (a burst of hooks holds them all): given up,
    // the session would be ended here with the server's warning, and the server would keep it as begun.
    const deadline = Date.now() + (kind === 'wrap-end' ? 60_000 : 0);
    let slot = claimSlot(run);
    while (slot < 0 && Date.now() <= deadline && backgroundServer(run) !== null) {
      await new Promise((r) => setTimeout(r, 20));
      slot = claimSlot(run);
    }
    if (slot < 0) return null;
    claim = path.join(run, `claim.${slot}`);
    if (payload !== null) fs.writeFileSync(path.join(run, `in.${slot}`), payload, { mode: 0o600 });
    reply = openReply(run, slot);
    sendRequest(run, slot, kind);
    const prefix = `${process.pid} `;
    const buf = Buffer.alloc(64 * 1024);
    let text = '';
    for (;;) {
      const nl = text.indexOf('\n');
      if (nl >= 0) {
        const line = text.slice(0, nl);
        text = text.slice(nl + 1);
        if (line.startsWith(prefix)) {
          // Answered: the server removes the claim (after the payload), so the next call cannot take this slot
          // while the server still has to clean it; ours is removed only when no answer came.
          claim = null;
          return line.slice(prefix.length).split(' ');
        }
        continue; // a reply meant for a client killed before it read it
      }
      // Blocking reads on a pool thread: this process has nothing else to do meanwhile but take signals.
      const n = await new Promise((resolve, reject) => fs.read(reply, buf, 0, buf.length, null, (e, got) => (e ? reject(e) : resolve(got))));
      if (n === 0) return null; // end of file: the server went away
      text += buf.toString('latin1', 0, n);
    }
  } catch {
    return null;
  } finally {
    if (reply >= 0) fs.closeSync(reply);
    if (claim) fs.rmSync(claim, { force: true });
  }
}

const decode = (b64) => (b64 && b64 !== '-' ? Buffer.from(b64, 'base64') : null);

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

/** Whether this process is in its terminal's foreground process group (then the terminal signals the agent too). */
function inTerminalForeground() {
  try {
    const stat = fs.readFileSync('/proc/self/stat', 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(f[4]) !== 0 && Number(f[2]) === Number(f[5]);
  } catch {
    return false;
  }
}

const TERMINAL_SIGNALS = new Set(['SIGINT', 'SIGQUIT', 'SIGHUP']);
const FORWARDED_SIGNALS = ['SIGINT', 'SIGQUIT', 'SIGHUP', 'SIGTERM', 'SIGUSR1', 'SIGUSR2'];

/** Starts the agent as src/wrap.ts runChild does: signals forwarded (those the terminal sent it too, not twice). */
function runAgent(spawn, spec, env) {
  return new Promise((resolve) => {
    let child = null;
    const handlers = new Map();
    const cleanup = () => {
      for (const [sig, h] of handlers) process.off(sig, h);
    };
    for (const sig of FORWARDED_SIGNALS) {
      const h = () => {
        if (TERMINAL_SIGNALS.has(sig) && inTerminalForeground()) return;
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
  if (process.platform !== 'linux' || /^(0|off|false|no)$/i.test(process.env.AGENTSNAP_SERVER ?? '') || !args.includes('--') || args.includes('--help') || args.includes('-h')) return null;
  const run = findRunDir(process.cwd());
  if (!run || backgroundServer(run) === null) return null;
  // The request goes out before call() first waits: node:child_process loads while the server begins the session.
  const asked = call(run, null, null);
  const { spawn } = require('node:child_process');
  const begun = await asked;
  if (!begun) return null;
  const [kind, a, b, c] = begun;
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
  const ended = await call(run, 'wrap-end', JSON.stringify({ token: spec.token, ...outcome }));
  if (ended && ended[0] === 'exit') {
    write(1, decode(ended[2]));
    write(2, decode(ended[3]));
    return exitCode(ended[1]);
  }
  // The server went away while the agent ran (or, never seen, would not end the session): it is ended here, as the server would have.
  const why = ended && ended[0] === 'warn' ? ended.slice(1).join(' ') : null;
  // In the session's worktree: the agent may have removed the directory this wrap began in.
  return (await loadCli()).finishServedWrap({ cwd: spec.begun.worktree ?? process.cwd(), env: process.env, stdout: process.stdout, stderr: process.stderr }, spec.begun, outcome, why);
}

module.exports = { wrapViaServer };
