#!/usr/bin/env node
// The `agentsnap` executable: a thin shim over the compiled CLI, bundled into
// one file at build time (scripts/bundle-cli.mjs: it starts ~70 ms sooner) and
// loaded through V8's code cache (./cli-loader.js: ~30 ms sooner again). A
// `snap` is handed to the worktree's warm server when one runs (the same CLI
// code runs there, and this process loads nothing else); see src/server/channel.ts.
// So is the beginning and the end of a `wrap` (./wrap-client.js).
// Otherwise, for `snap` and a pre-tool hook, the first snapshot's `git status`
// starts before the CLI loads (src/snapshot/status-prefetch.ts).
'use strict';
// CommonJS (bin/package.json): an ES module entry costs every process ~5-9 ms of module loader before its first line.

/**
 * `agentsnap snap <args>` in this worktree's server (the channel and its trust check: src/server/channel.ts, as
 * dist/channel.cjs): the exit code, or null to run it here.
 */
async function snapViaServer(args) {
  if (args.includes('--help') || args.includes('-h')) return null;
  const channel = require('../dist/channel.cjs');
  if (channel.serverSwitchedOff(process.env)) return null;
  const server = channel.trustedRunDir(process.cwd());
  if (!server) return null;
  const reply = await channel.callServer(server.run, args, null);
  if (!reply || reply.kind !== 'exit') return null;
  const [code, out, err] = reply.fields;
  const stdout = channel.replyBytes(out);
  const stderr = channel.replyBytes(err);
  if (stdout) require('node:fs').writeSync(1, stdout);
  if (stderr) require('node:fs').writeSync(2, stderr);
  return Number(code);
}

async function main() {
  const [command, , event] = process.argv.slice(2);
  // `wrap`: the worktree's background server begins and ends the session, this process only runs the agent (./wrap-client.js).
  const code =
    command === 'snap'
      ? await snapViaServer(process.argv.slice(2))
      : command === 'wrap'
        ? await require('./wrap-client.js').wrapViaServer(process.argv.slice(3), async () => require('./cli-loader.js').loadCli())
        : null;
  if (code !== null && command === 'wrap')
    process.exit(code); // its output went out by writeSync; nothing else is left to run
  else if (code !== null) process.exitCode = code;
  else {
    const prefetch =
      command === 'snap' || (command === 'hook' && (event === 'PreToolUse' || event === 'BeforeTool'))
        ? await import('../dist/snapshot/status-prefetch.js')
        : null;
    prefetch?.startStatusPrefetch(process.cwd(), process.env);
    try {
      await require('./cli-loader.js').loadCli().main();
    } finally {
      prefetch?.dropStatusPrefetch();
    }
  }
}

main().catch((e) => {
  // As an uncaught error of the ES module it was: the CLI reports its own failures, this is only what escaped it.
  process.exitCode = 1;
  throw e;
});
