#!/usr/bin/env node
// The `agentsnap` executable: a thin shim over the compiled CLI, bundled into
// one file at build time (scripts/bundle-cli.mjs: it starts ~70 ms sooner) and
// loaded through V8's code cache (./cli-loader.js: ~30 ms sooner again). A
// `snap` is handed to the worktree's warm server when one runs (the same CLI
// code runs there, and this process loads nothing else); see src/server.ts.
// Otherwise, for `snap` and a pre-tool hook, the first snapshot's `git status`
// starts before the CLI loads (src/status-prefetch.ts).
import { snapViaServer } from './server-client.js';

const [command, , event] = process.argv.slice(2);
const code = command === 'snap' ? snapViaServer(process.argv.slice(2)) : null;
if (code !== null) process.exitCode = code;
else {
  const prefetch = command === 'snap' || (command === 'hook' && (event === 'PreToolUse' || event === 'BeforeTool')) ? await import('../dist/snapshot/status-prefetch.js') : null;
  prefetch?.startStatusPrefetch(process.cwd(), process.env);
  try {
    await (await import('./cli-loader.js')).loadCli().main();
  } finally {
    prefetch?.dropStatusPrefetch();
  }
}
