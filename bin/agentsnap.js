#!/usr/bin/env node
// The `agentsnap` executable: a thin shim over the compiled CLI.
import { main } from '../dist/cli/main.js';

await main();
