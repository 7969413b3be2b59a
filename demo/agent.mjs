#!/usr/bin/env node
// A tiny scripted "agent" for `npm run demo`: no model, no network. Like a
// real agent without hooks, it brackets each tool call with
// `agentsnap snap --phase pre` and `--phase post` (wrap gives it
// AGENTSNAP_SESSION, AGENTSNAP_BIN and AGENTSNAP_NODE).
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';

const node = process.env.AGENTSNAP_NODE ?? process.execPath;
const bin = process.env.AGENTSNAP_BIN;
if (!bin || !process.env.AGENTSNAP_SESSION) {
  console.error('demo agent: run me through `agentsnap wrap -- node demo/agent.mjs`');
  process.exit(2);
}

function agentsnap(...args) {
  return execFileSync(node, [bin, ...args, '--quiet'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
}

/** One tool call: pre snapshot, the action, post snapshot with how it ended. */
function tool(name, what, action) {
  console.log(`  agent> ${name}: ${what}`);
  const step = agentsnap('snap', '--phase', 'pre', '--tool', name, '--message', what);
  let status = 'done';
  try {
    action();
  } catch (e) {
    status = 'failed';
    console.log(`  agent> ${name} failed: ${e.message.split('\n')[0]}`);
  }
  agentsnap('snap', '--phase', 'post', '--step', step, '--status', status);
}

function bash(command) {
  const r = spawnSync('sh', ['-c', command], { encoding: 'utf8' });
  if (r.stdout.trim()) console.log(r.stdout.trimEnd().replace(/^/gm, '         '));
  if (r.status !== 0) throw new Error(`exit code ${r.status}`);
}

tool('Read', 'read src/greet.js', () => fs.readFileSync('src/greet.js', 'utf8'));
tool('Edit', 'greet the whole world in src/greet.js', () => {
  const text = fs.readFileSync('src/greet.js', 'utf8');
  fs.writeFileSync('src/greet.js', text.replace("'Hello'", "'Hello, world'"));
});
tool('Write', 'create src/farewell.js', () => {
  fs.writeFileSync('src/farewell.js', 'export const farewell = (name) => `Goodbye, ${name}!`;\n');
});
tool('Bash', 'rm notes.txt (no longer needed)', () => bash('rm notes.txt'));
tool('Bash', 'run the tests (they fail, after writing test-report.txt)', () =>
  bash('echo "1 passed, 1 failed" > test-report.txt; echo "not ok 2 - farewell is exported"; exit 1'),
);
tool('Edit', 'fix the test expectation in test/expect.txt', () => {
  fs.writeFileSync('test/expect.txt', 'Hello, world\nGoodbye, you!\n');
});
tool('Bash', 'run the tests again', () => bash('echo "2 passed" > test-report.txt; echo "ok 1 - greet"; echo "ok 2 - farewell"'));
console.log('  agent> done');
