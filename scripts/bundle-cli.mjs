#!/usr/bin/env node
// Second step of `npm run build`: bundles the CLI (tsc's dist/cli/main.js and
// everything it imports, yargs included) into one file, dist/cli.bundle.cjs,
// which bin/agentsnap.js runs. `agentsnap snap` runs on every tool call, and
// Node resolving and compiling ~100 separate modules (yargs and its
// dependencies are most of them) cost ~70 ms per start; one file does not.
// The library (dist/index.js) stays tsc's output, module per module.
//
// The bundle sits in dist/, above tsc's per-folder files: src/base/package-root.ts
// finds the package root (bin/, hooks/) from wherever the module runs.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');
// CommonJS: bin/cli-loader.js runs it as a vm.Script with V8's code cache (Node 20 has none for ES modules).
const outfile = path.join(dist, 'cli.bundle.cjs');

// yargs finds its message translations (`--help` chrome in the user's
// LANG) at `<its own file>/../../../locales`. Inside the bundle that file is
// dist/cli.bundle.cjs, so the locales are copied next to it and the one
// path is rewritten; the build fails should a yargs release move it.
const YARGS_SHIM = /[\\/]yargs[\\/]lib[\\/]platform-shims[\\/]esm\.mjs$/;
const LOCALES_FROM = "resolve(__dirname, '../../../locales')";
const LOCALES_TO = "resolve(__dirname, '../yargs-locales')";
const yargsLocales = {
  name: 'yargs-locales',
  setup(b) {
    b.onLoad({ filter: YARGS_SHIM }, async (args) => {
      const text = await fs.promises.readFile(args.path, 'utf8');
      if (text.split(LOCALES_FROM).length !== 2)
        throw new Error(`bundle-cli: ${args.path} no longer holds ${LOCALES_FROM}; update scripts/bundle-cli.mjs`);
      return { contents: text.replace(LOCALES_FROM, LOCALES_TO), loader: 'js' };
    });
  },
};

// string-width (yargs' help layout; three copies) builds at import what only
// measuring a string needs: an Intl.Segmenter (ICU break data, 10-30 ms in
// the first process to make one) and, in its version 8, /^\p{RGI_Emoji}$/v
// (~20 ms to compile). Only help and usage text ever measure a string; `snap`
// never does, yet paid both on every tool call. Each is created on first use
// instead (same locale, same pattern); the build fails if they change.
const STRING_WIDTH = /[\\/]string-width[\\/]index\.js$/;
const LAZY = [
  {
    from: 'const segmenter = new Intl.Segmenter();',
    to: 'let segmenterOnFirstUse; const segmenter = { segment: (text) => (segmenterOnFirstUse ??= new Intl.Segmenter()).segment(text) };',
    everyCopy: true,
  },
  {
    from: 'const rgiEmojiRegex = /^\\p{RGI_Emoji}$/v;',
    to: 'let rgiEmojiOnFirstUse; const rgiEmojiRegex = { test: (text) => (rgiEmojiOnFirstUse ??= /^\\p{RGI_Emoji}$/v).test(text) };',
    everyCopy: false,
  },
];
const lazyApplied = new Map(LAZY.map((l) => [l.from, 0]));
const lazyStringWidth = {
  name: 'lazy-string-width',
  setup(b) {
    b.onLoad({ filter: STRING_WIDTH }, async (args) => {
      let text = await fs.promises.readFile(args.path, 'utf8');
      for (const l of LAZY) {
        const n = text.split(l.from).length - 1;
        if (n > 1 || (n === 0 && l.everyCopy))
          throw new Error(`bundle-cli: ${args.path} no longer holds ${l.from} once; update scripts/bundle-cli.mjs`);
        if (n === 1) {
          text = text.replace(l.from, l.to);
          lazyApplied.set(l.from, (lazyApplied.get(l.from) ?? 0) + 1);
        }
      }
      return { contents: text, loader: 'js' };
    });
  },
};

// `agentsnap mcp` (src/mcp/server.ts, with the MCP SDK: ~430 kB) is a bundle of its own, dist/mcp.bundle.js: inside this
// one its text would be read at every start of every command, `snap` on each tool call included. The command's
// `import('../../mcp/server.js')` becomes `import('./mcp.bundle.js')`, next to this bundle.
const MCP_MODULE = /^\.\.\/\.\.\/mcp\/server\.js$/;
// Likewise `agentsnap ui`'s server (src/ui/server.ts, node:http): dist/ui.bundle.js, so no other command loads a network module.
const UI_MODULE = /^\.\.\/\.\.\/ui\/server\.js$/;
const mcpApart = {
  name: 'mcp-apart',
  setup(b) {
    b.onResolve({ filter: MCP_MODULE }, (args) =>
      /[\\/]cli[\\/]commands[\\/]mcp\.js$/.test(args.importer) ? { path: './mcp.bundle.js', external: true } : undefined,
    );
    b.onResolve({ filter: UI_MODULE }, (args) =>
      /[\\/]cli[\\/]commands[\\/]ui\.js$/.test(args.importer) ? { path: './ui.bundle.js', external: true } : undefined,
    );
  },
};

const common = {
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // CommonJS dependencies (picomatch) require Node's built-ins.
  banner: {
    js: "import { createRequire as __agentsnapCreateRequire } from 'node:module'; const require = __agentsnapCreateRequire(import.meta.url);",
  },
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: 'warning',
};

// The server channel's client (src/server/channel.ts) for the bin/ shims, which require it on every served `snap` and
// `wrap`: CommonJS, and node: imports only (the build fails on any other), so a call pays no module loading.
{
  const res = await build({
    entryPoints: [path.join(dist, 'server', 'channel.js')],
    outfile: path.join(dist, 'channel.cjs'),
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    metafile: true,
    logLevel: 'warning',
  });
  const inputs = Object.keys(res.metafile.inputs);
  if (inputs.length !== 1)
    throw new Error(`bundle-cli: src/server/channel.ts must import node: modules only; it pulls in ${inputs.join(', ')}`);
}

await build({ ...common, entryPoints: [path.join(dist, 'mcp', 'server.js')], outfile: path.join(dist, 'mcp.bundle.js') });
await build({ ...common, entryPoints: [path.join(dist, 'ui', 'server.js')], outfile: path.join(dist, 'ui.bundle.js') });

await build({
  entryPoints: [path.join(dist, 'cli', 'main.js')],
  outfile,
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  // The modules' import.meta.url (package-root.ts, yargs' shim) is the bundle's own; yargs' import.meta.resolve (config
  // `extends`, which the CLI does not use) is not there and fails inside its try.
  banner: { js: "const __agentsnapUrl = require('node:url').pathToFileURL(__filename).href;" },
  define: { 'import.meta.url': '__agentsnapUrl', 'import.meta.resolve': 'undefined' },
  plugins: [yargsLocales, lazyStringWidth, mcpApart],
  // Less text for V8 to scan on every start; identifiers stay (error names, stack traces with AGENTSNAP_DEBUG=1).
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: 'warning',
});

// In the vm.Script the loader runs, import() has no loader (Node 20 loses vm's importModuleDynamically with a code
// cache): the two ES bundles it imports are imported by bin/cli-loader.js instead, through the wrapper's
// __agentsnapImport. The build fails on any other import() left.
{
  let text = fs.readFileSync(outfile, 'utf8');
  for (const spec of ['./mcp.bundle.js', './ui.bundle.js']) {
    const from = `import(${JSON.stringify(spec)})`;
    if (text.split(from).length !== 2)
      throw new Error(`bundle-cli: ${from} is not in ${outfile} exactly once; update scripts/bundle-cli.mjs`);
    text = text.replace(from, `__agentsnapImport(${JSON.stringify(spec)})`);
  }
  const left = /(?<![\w$.])import\(/.exec(text);
  if (left) throw new Error(`bundle-cli: a dynamic import() is left in ${outfile} at ${left.index}: bin/cli-loader.js cannot serve it`);
  fs.writeFileSync(outfile, text);
}

for (const [from, n] of lazyApplied)
  if (n === 0) throw new Error(`bundle-cli: no string-width holds ${from} any more; update scripts/bundle-cli.mjs`);

const localesFrom = path.join(root, 'node_modules', 'yargs', 'locales');
const localesTo = path.join(dist, 'yargs-locales');
fs.rmSync(localesTo, { recursive: true, force: true });
fs.cpSync(localesFrom, localesTo, { recursive: true });
