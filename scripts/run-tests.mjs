#!/usr/bin/env node
// Runs every uvu test file under test/ as real ESM (tsx loader) and ends with
// the line `N passed, N failed` that CI reads. Extra arguments narrow the
// file pattern, e.g. `npm test -- snap` runs files whose names match "snap".
// AGENTSNAP_E2E=0 leaves out the end-to-end tests with the real agents
// (`*-e2e.test.ts`: Claude Code, Codex, Gemini, ~900 MB on their first run).
// Colours only on a terminal: uvu forces them on (its --color defaults to
// true), so piped output and NO_COLOR get --no-color.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const filter = process.argv[2];
const pattern = filter ? `${filter}.*\\.test\\.ts$` : '\\.test\\.ts$';
const fast = process.env.AGENTSNAP_E2E === '0';
const color = !!process.stdout.isTTY && process.env.NO_COLOR === undefined && process.env.FORCE_COLOR !== '0';
const args = [
  path.join(root, 'node_modules/uvu/bin.js'),
  'test',
  pattern,
  ...(fast ? ['--ignore', 'e2e\\.test\\.ts$'] : []),
  ...(color ? [] : ['--no-color']),
];
if (fast) console.log('AGENTSNAP_E2E=0: the end-to-end tests with the real agents (*-e2e.test.ts) are left out');
const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
  cwd: root,
  stdio: ['ignore', 'pipe', 'inherit'],
  env: { ...process.env, FORCE_COLOR: color ? '1' : '0', ...(color ? {} : { NO_COLOR: '1' }) },
});
// A signal to the runner alone (SIGTERM from a CI timeout) reaches the tests too, whose temp dirs are
// removed on it (test/support/helpers.ts); Ctrl-C already reaches the whole process group.
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, () => child.kill(sig));
let out = '';
child.stdout.on('data', (d) => {
  out += d.toString();
  process.stdout.write(d);
});
child.on('close', (code, signal) => {
  // eslint-disable-next-line no-control-regex
  const plain = out.replace(/\x1b\[[0-9;]*m/g, '');
  const num = (label) => Number((new RegExp(`${label}:\\s+(\\d+)`).exec(plain) ?? [])[1] ?? 0);
  const total = num('Total');
  const passed = num('Passed');
  const skipped = num('Skipped');
  let failed = Math.max(0, total - passed - skipped);
  if ((code !== 0 || signal) && failed === 0) failed = 1; // a file that crashed before reporting, or a killed run
  console.log(`\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}${signal ? ` (stopped by ${signal})` : ''}`);
  process.exit(code === 0 && failed === 0 ? 0 : 1);
});
