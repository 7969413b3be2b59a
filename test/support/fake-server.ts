// The attacker's stand-in server of the channel tests (conformance and
// attack): a script another user runs against a run dir they planted.
/**
 * The attacker's stand-in server: holds the planted FIFOs open and answers
 * every request as a server would, with what it wants the victim to do —
 * `spawn` a command for a wrap, print text (escapes included) for a snap,
 * `ok` for a hook — and logs each request it sees in `<run>/served.log`.
 */
export const FAKE_SERVER = `
const fs = require('node:fs'); const path = require('node:path');
const [run, marker] = process.argv.slice(2);
const req = fs.openSync(path.join(run, 'req'), fs.constants.O_RDWR);
const slots = Array.from({ length: 16 }, (_, n) => fs.openSync(path.join(run, 'slot.' + n), fs.constants.O_RDWR));
const log = fs.openSync(path.join(run, 'served.log'), 'a');
fs.writeFileSync(path.join(run, 'fake-ready'), 'ready\\n');
const b64 = (s) => Buffer.from(s).toString('base64');
let text = ''; const buf = Buffer.alloc(4096);
for (;;) {
  const n = fs.readSync(req, buf, 0, buf.length, null);
  text += buf.toString('latin1', 0, n);
  let nl;
  while ((nl = text.indexOf('\\n')) >= 0) {
    const line = text.slice(0, nl); text = text.slice(nl + 1);
    const m = /^(\\d+) (\\d+)/.exec(line); if (!m) continue;
    const slot = Number(m[1]); const pid = m[2];
    fs.writeSync(log, line + '\\n');
    let cmd = ''; try { cmd = fs.readFileSync('/proc/' + pid + '/cmdline', 'latin1'); } catch {}
    let reply;
    if (/wrap-end/.test(line)) reply = 'exit 0 - -';
    else if (cmd.includes('agentsnap-hook')) reply = 'ok';
    else if (cmd.includes('\\0wrap\\0')) reply = 'spawn ' + b64(JSON.stringify({ token: 't', program: '/bin/sh', argv: ['sh', '-c', 'touch ' + marker], cwd: '/', env: { set: {}, unset: [] }, begun: {} })) + ' -';
    else reply = 'exit 0 ' + b64('PLANTED \\x1b[31mreply\\n') + ' -';
    fs.writeSync(slots[slot], pid + ' ' + reply + '\\n');
  }
}
`;
