#!/usr/bin/env node
// Runs every uvu test file under test/ as real ESM (tsx loader) and ends with
// the line `N passed, N failed` that CI reads. Extra arguments narrow the
// file pattern, e.g. `npm test -- snap` runs files whose names match "snap".
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const filter = process.argv[2];
const pattern = filter ? `${filter}.*\\.test\\.ts$` : '\\.test\\.ts$';
const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'node_modules/uvu/bin.js'), 'test', pattern], {
  cwd: root,
  stdio: ['ignore', 'pipe', 'inherit'],
  env: { ...process.env, FORCE_COLOR: '0' },
});
let out = '';
child.stdout.on('data', (d) => {
  out += d.toString();
  process.stdout.write(d);
});
child.on('close', (code) => {
  // eslint-disable-next-line no-control-regex
  const plain = out.replace(/\x1b\[[0-9;]*m/g, '');
  const num = (label) => Number((new RegExp(`${label}:\\s+(\\d+)`).exec(plain) ?? [])[1] ?? 0);
  const total = num('Total');
  const passed = num('Passed');
  const skipped = num('Skipped');
  let failed = Math.max(0, total - passed - skipped);
  if (code !== 0 && failed === 0) failed = 1; // a file that crashed before reporting
  console.log(`\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
  process.exit(code === 0 && failed === 0 ? 0 : 1);
});
