#!/usr/bin/env node
// The `agentsnap` executable: a thin shim over the compiled CLI, bundled into
// one file at build time (scripts/bundle-cli.mjs: it starts ~70 ms sooner). A
// `snap` is handed to the worktree's warm server when one runs (the same CLI
// code runs there, and this process loads nothing else); see src/server.ts.
import { snapViaServer } from './server-client.js';

const code = process.argv[2] === 'snap' ? snapViaServer(process.argv.slice(2)) : null;
if (code !== null) process.exitCode = code;
else await (await import('../dist/cli.bundle.js')).main();
