#!/usr/bin/env node
// `npm run demo`'s first half: `npm run build` only when dist/ is missing or older than what it is built from
// (src/, bin/, ui/, the bundle scripts, package.json, tsconfig.json). A current dist/ starts the demo at once
// instead of after a full build (~17 s). An installed package has no src/: its dist/ is used as it is.
// The package root is this file's parent, or the directory given as the first argument (test/cli/demo.test.ts).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = process.argv[2] ? path.resolve(process.argv[2]) : path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SOURCES = ['src', 'bin', 'ui', 'scripts/bundle-cli.mjs', 'scripts/bundle-ui.mjs', 'package.json', 'tsconfig.json'];

/** The modification times of the files under `rel` (a file or a directory; none when it does not exist). */
function mtimes(rel, skip = () => false) {
  const out = [];
  const walk = (p) => {
    let st;
    try {
      st = fs.lstatSync(p);
    } catch {
      return;
    }
    if (st.isDirectory()) for (const name of fs.readdirSync(p)) walk(path.join(p, name));
    else if (!skip(p)) out.push(st.mtimeMs);
  };
  walk(path.join(root, rel));
  return out;
}

const sources = SOURCES.flatMap((rel) => mtimes(rel));
// The V8 code caches (dist/*.cache) are written when the CLI runs, not by the build: they say nothing of it.
const built = mtimes('dist', (p) => p.endsWith('.cache'));
const current = built.length > 0 && (sources.length === 0 || Math.min(...built) > Math.max(...sources));
if (current) {
  console.log('dist/ is newer than every source file: not rebuilding (`npm run build` forces it)');
} else {
  const r = spawnSync(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
  if (r.error) throw r.error;
  process.exitCode = r.status ?? 1;
}
