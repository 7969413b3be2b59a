// Preloaded (node --import) into an agentsnap process by tests: writes the
// process's peak resident memory (VmHWM, KiB) to AGENTSNAP_TEST_HWM_FILE at
// exit. VmHWM belongs to the process's own address space since its exec, so a
// large parent that forked it does not count (getrusage's maxRSS would).
import fs from 'node:fs';

const file = process.env.AGENTSNAP_TEST_HWM_FILE;
if (file) {
  process.on('exit', () => {
    const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
    fs.writeFileSync(file, m ? m[1] : '0');
  });
}
