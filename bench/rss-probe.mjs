// Preloaded (node --import) into an agentsnap process by the benchmark:
// writes the process's peak memory (max RSS, KiB) when it exits, to the file
// named in AGENTSNAP_BENCH_RSS_FILE, or to <AGENTSNAP_BENCH_RSS_DIR>/<pid>
// (every Node process a hook command starts). Never loaded outside the bench.
import fs from 'node:fs';
import path from 'node:path';

const file = process.env.AGENTSNAP_BENCH_RSS_FILE;
const dir = process.env.AGENTSNAP_BENCH_RSS_DIR;
const target = file ?? (dir ? path.join(dir, String(process.pid)) : null);
if (target) {
  process.on('exit', () => {
    try {
      fs.writeFileSync(target, String(process.resourceUsage().maxRSS));
    } catch {
      /* the bench no longer waits for this figure (e.g. a background process outliving the probe's dir) */
    }
  });
}
