#!/usr/bin/env node
// The `agentsnap` executable: a thin shim over the compiled CLI, bundled into
// one file at build time (scripts/bundle-cli.mjs: it starts ~70 ms sooner).
import { main } from '../dist/cli.bundle.js';

await main();
