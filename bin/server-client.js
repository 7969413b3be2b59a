// The Node side of the warm server's channel (the shell side is
// bin/agentsnap-hook): finds this worktree's run directory the way the shell
// client does, claims a reply slot, sends "<slot> <pid>" and waits for
// "<pid> exit <code> <stdout base64> <stderr base64>". Returns null whenever
// the server cannot answer, and the caller runs the command itself.
// Plain JavaScript with node: imports only, so a call pays no module loading.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const SLOTS = 16;

/** `<git common dir>/agentsnap/run/<main|wt-NAME>` for the worktree around `cwd`, or null. */
function findRunDir(cwd) {
  let dir = cwd;
  for (;;) {
    const dotGit = path.join(dir, '.git');
    let st = null;
    try {
      st = fs.statSync(dotGit);
    } catch {
      /* not here */
    }
    if (st) {
      let gitDir = dotGit;
      if (st.isFile()) {
        const m = /^gitdir: (.*)$/m.exec(fs.readFileSync(dotGit, 'utf8'));
        if (!m) return null;
        gitDir = path.resolve(dir, m[1].trim());
      }
      try {
        const common = fs.readFileSync(path.join(gitDir, 'commondir'), 'utf8').trim();
        return path.join(path.resolve(gitDir, common), 'agentsnap', 'run', `wt-${path.basename(gitDir)}`);
      } catch {
        return path.join(gitDir, 'agentsnap', 'run', 'main');
      }
    }
    const up = path.dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
}

function switchedOff(env) {
  return /^(0|off|false|no)$/i.test(env.AGENTSNAP_SERVER ?? '');
}

/** Claims a free reply slot (an exclusive create of claim.<n>); its number, or -1 when all are taken. */
function claimSlot(run) {
  for (let n = 0; n < SLOTS; n++) {
    try {
      fs.writeFileSync(path.join(run, `claim.${n}`), `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
      return n;
    } catch {
      /* taken */
    }
  }
  return -1;
}

/**
 * Opens slot n's reply FIFO for reading. The server holds it open for writing: end of file means it is gone. A
 * read-only open would wait forever for a writer if it died after the pid check, so open read-write first (never
 * waits), then read-only (a writer, ours, exists), and drop ours: only the server's end is left.
 */
function openReply(run, slot) {
  const slotFile = path.join(run, `slot.${slot}`);
  const ours = fs.openSync(slotFile, fs.constants.O_RDWR);
  try {
    return fs.openSync(slotFile, fs.constants.O_RDONLY);
  } finally {
    fs.closeSync(ours);
  }
}

/** Sends the request line "<slot> <pid>[ <kind>]" (one short line: written atomically). */
function sendRequest(run, slot, kind) {
  const req = fs.openSync(path.join(run, 'req'), fs.constants.O_RDWR);
  try {
    fs.writeSync(req, `${slot} ${process.pid}${kind ? ` ${kind}` : ''}\n`);
  } finally {
    fs.closeSync(req);
  }
}

/** Runs `agentsnap <args>` in the server; the exit code, or null to run it here. */
function snapViaServer(args) {
  if (process.platform !== 'linux' || switchedOff(process.env) || args.includes('--help') || args.includes('-h')) return null;
  let claim = null;
  try {
    const run = findRunDir(process.cwd());
    if (!run) return null;
    const pid = Number(fs.readFileSync(path.join(run, 'pid'), 'utf8').trim());
    process.kill(pid, 0);
    const slot = claimSlot(run);
    if (slot < 0) return null;
    claim = path.join(run, `claim.${slot}`);
    const reply = openReply(run, slot);
    sendRequest(run, slot, null);
    const prefix = `${process.pid} `;
    let text = '';
    const buf = Buffer.alloc(64 * 1024);
    for (;;) {
      const nl = text.indexOf('\n');
      if (nl >= 0) {
        const line = text.slice(0, nl);
        text = text.slice(nl + 1);
        if (!line.startsWith(prefix)) continue; // a reply meant for a client killed before it read it
        fs.closeSync(reply);
        claim = null;
        const [kind, code, out, err] = line.slice(prefix.length).split(' ');
        if (kind !== 'exit') return null;
        if (out && out !== '-') fs.writeSync(1, Buffer.from(out, 'base64'));
        if (err && err !== '-') fs.writeSync(2, Buffer.from(err, 'base64'));
        return Number(code);
      }
      const n = fs.readSync(reply, buf, 0, buf.length, null);
      if (n === 0) break; // end of file: the server went away
      text += buf.toString('latin1', 0, n);
    }
    fs.closeSync(reply);
    return null;
  } catch {
    return null;
  } finally {
    if (claim) fs.rmSync(claim, { force: true });
  }
}

module.exports = { findRunDir, snapViaServer, claimSlot, openReply, sendRequest };
