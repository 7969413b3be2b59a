#!/usr/bin/env node
// Second step of `npm run build`: bundles the CLI (tsc's dist/cli/main.js and
// everything it imports, yargs included) into one file, dist/cli.bundle.js,
// which bin/agentsnap.js runs. `agentsnap snap` runs on every tool call, and
// Node resolving and compiling ~100 separate modules (yargs and its
// dependencies are most of them) cost ~70 ms per start; one file does not.
// The library (dist/index.js) stays tsc's output, module per module.
//
// The bundle sits in dist/ like tsc's files, so paths that src/ derives from
// its own location (`..` = the package root: bin/, hooks/) stay right.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');
const outfile = path.join(dist, 'cli.bundle.js');

// yargs finds its message translations (`--help` chrome in the user's
// LANG) at `<its own file>/../../../locales`. Inside the bundle that file is
// dist/cli.bundle.js, so the locales are copied next to it and the one
// path is rewritten; the build fails should a yargs release move it.
const YARGS_SHIM = /[\\/]yargs[\\/]lib[\\/]platform-shims[\\/]esm\.mjs$/;
const LOCALES_FROM = "resolve(__dirname, '../../../locales')";
const LOCALES_TO = "resolve(__dirname, '../yargs-locales')";
const yargsLocales = {
  name: 'yargs-locales',
  setup(b) {
    b.onLoad({ filter: YARGS_SHIM }, async (args) => {
      const text = await fs.promises.readFile(args.path, 'utf8');
      if (text.split(LOCALES_FROM).length !== 2) throw new Error(`bundle-cli: ${args.path} no longer holds ${LOCALES_FROM}; update scripts/bundle-cli.mjs`);
      return { contents: text.replace(LOCALES_FROM, LOCALES_TO), loader: 'js' };
    });
  },
};

// string-width (yargs' help layout; three copies) creates an Intl.Segmenter
// when it is imported, ~25 ms of ICU set-up in every process, although only
// help and usage text ever measure a string (`snap` never does). Created on
// first use instead: same default locale, same segments.
const STRING_WIDTH = /[\\/]string-width[\\/]index\.js$/;
const SEGMENTER_FROM = 'const segmenter = new Intl.Segmenter();';
const SEGMENTER_TO = 'let segmenterOnFirstUse; const segmenter = { segment: (text) => (segmenterOnFirstUse ??= new Intl.Segmenter()).segment(text) };';
const lazySegmenter = {
  name: 'lazy-segmenter',
  setup(b) {
    b.onLoad({ filter: STRING_WIDTH }, async (args) => {
      const text = await fs.promises.readFile(args.path, 'utf8');
      if (text.split(SEGMENTER_FROM).length !== 2) throw new Error(`bundle-cli: ${args.path} no longer holds ${SEGMENTER_FROM}; update scripts/bundle-cli.mjs`);
      return { contents: text.replace(SEGMENTER_FROM, SEGMENTER_TO), loader: 'js' };
    });
  },
};

await build({
  entryPoints: [path.join(dist, 'cli', 'main.js')],
  outfile,
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // CommonJS dependencies (picomatch) require Node's built-ins.
  banner: { js: "import { createRequire as __agentsnapCreateRequire } from 'node:module'; const require = __agentsnapCreateRequire(import.meta.url);" },
  plugins: [yargsLocales, lazySegmenter],
  logLevel: 'warning',
});

const localesFrom = path.join(root, 'node_modules', 'yargs', 'locales');
const localesTo = path.join(dist, 'yargs-locales');
fs.rmSync(localesTo, { recursive: true, force: true });
fs.cpSync(localesFrom, localesTo, { recursive: true });
