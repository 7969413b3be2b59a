#!/usr/bin/env node
// Third step of `npm run build`: the page of `agentsnap ui` (issue 20), ready to
// serve, in dist/ui-page (shipped with the package: users run no build step; not
// dist/ui, which is tsc's output of src/ui/ and must stay). The
// page's script (ui/app.js) is bundled with diff2html into one file for the
// browser; diff2html's stylesheet is copied beside it. No CDN, no external font.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const src = path.join(root, 'ui');
const out = path.join(root, 'dist', 'ui-page');
fs.rmSync(out, { recursive: true, force: true });
fs.mkdirSync(out, { recursive: true });

await build({
  entryPoints: [path.join(src, 'app.js')],
  outfile: path.join(out, 'app.js'),
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2020',
  minify: true,
  legalComments: 'eof',
  banner: { js: '/* agentsnap ui. Bundles diff2html (MIT), jsdiff (BSD-3-Clause) and hogan.js (Apache-2.0): see their packages. */' },
  logLevel: 'warning',
});

for (const f of ['index.html', 'app.css', 'favicon.svg']) fs.copyFileSync(path.join(src, f), path.join(out, f));
const require = createRequire(import.meta.url);
const d2hCss = path.join(path.dirname(require.resolve('diff2html/package.json')), 'bundles', 'css', 'diff2html.min.css');
fs.copyFileSync(d2hCss, path.join(out, 'diff2html.css'));
