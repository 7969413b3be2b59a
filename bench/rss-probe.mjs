// Preloaded (node --import) into an agentsnap process by the benchmark:
// writes the process's peak memory (max RSS, KiB) to the file named in
// AGENTSNAP_BENCH_RSS_FILE when it exits. Never loaded outside the bench.
import fs from 'node:fs';

const file = process.env.AGENTSNAP_BENCH_RSS_FILE;
if (file) process.on('exit', () => fs.writeFileSync(file, String(process.resourceUsage().maxRSS)));
