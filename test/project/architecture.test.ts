// The layering of src/ (DEVELOPING.md, "Layers"): every folder is a layer, a file imports only from its own layer
// or lower ones, and no module takes part in an import cycle (type-only imports count: they tie the files together
// just the same for a reader). The order of the layers is read from DEVELOPING.md's diagram: the doc is the one
// table. Imports are read by esbuild (the build's own parser, type-only imports included) and by a token-level
// scanner that gives their lines and `import('…')` in types (test/support/import-graph.ts, module-syntax.ts); the
// two must agree on every file.
// The old check read imports with regular expressions over text without comments; a `/*` inside a `//` comment
// made it drop everything after it, and it saw no import of ui/server.ts or history/sync.ts at all: the planted
// cases below (a tiny fake src/ in a temp dir) hide an upward import in each such shape and must be reported.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROOT, removeOnSignal } from '../support/helpers.js';
import { importCycles, layeringViolations, layersFromDoc, layerOf, readImportGraph, type ImportGraph } from '../support/import-graph.js';
import { scanModuleSyntax } from '../support/module-syntax.js';

const SRC = path.join(ROOT, 'src');
const DEVELOPING = fs.readFileSync(path.join(ROOT, 'DEVELOPING.md'), 'utf8');
const LAYERS = layersFromDoc(DEVELOPING);

/**
 * Modules src/ loads with no literal specifier (`import(x)`, `require(x)`, createRequire, `/// <reference>`), as
 * `<file>: <what>` → why it is safe. Each escapes the layering check: none today.
 */
const ALLOWED_ESCAPES = new Map<string, string>();

let real: ImportGraph | null = null;
const realGraph = async (): Promise<ImportGraph> => (real ??= await readImportGraph(SRC));

// ---- the real src/ ----

test('architecture: the layers are the ones DEVELOPING.md draws, and its table names the same folders', () => {
  assert.equal(LAYERS, [
    'base',
    'deps',
    'git',
    'settings',
    'snapshot',
    'agents',
    'session',
    'blame',
    'restore',
    'server',
    'worktrees',
    'check',
    'backup',
    'install',
    'doctor',
    'api',
    'runtime',
    'mcp',
    '.',
    'ui',
    'cli',
  ]);
  const section = /^## Layers\n([\s\S]*?)^## /m.exec(DEVELOPING)?.[1] ?? '';
  const tableFolders = [...section.matchAll(/^\| `([^`]+)` \|/gm)].map((m) =>
    m[1] === 'src/*.ts' ? '.' : (m[1] as string).replace(/\/$/, ''),
  );
  assert.equal([...tableFolders].sort(), [...LAYERS].sort(), "DEVELOPING.md's Layers table and diagram name different folders");
});

test('architecture: every folder of src/ is a known layer', async () => {
  for (const f of new Set((await realGraph()).files.map(layerOf)))
    assert.ok(LAYERS.includes(f), `src/${f}/ is in no layer: add it to DEVELOPING.md's Layers diagram and table`);
});

test('architecture: every file of src/ is a TypeScript module the graph read (no .d.ts, .js or other file unchecked)', async () => {
  const all = fs
    .readdirSync(SRC, { recursive: true, encoding: 'utf8' })
    .filter((f) => fs.statSync(path.join(SRC, f)).isFile())
    .map((f) => f.split(path.sep).join('/'));
  const read = new Set((await realGraph()).files);
  assert.equal(
    all.filter((f) => !read.has(f) || !f.endsWith('.ts')),
    [],
  );
});

// The old scanner saw none of ui/server.ts's 9 imports of src/ and history/sync.ts's 8, and 3 of init.ts's 8 (at 4fc03ba).
test('architecture: the graph holds the imports the old scanner missed (ui/server.ts, backup/sync.ts, install/init.ts)', async () => {
  const g = await realGraph();
  const has = (from: string, to: string): boolean => g.edges.some((e) => e.from === from && e.to === to);
  assert.ok(has('ui/server.ts', 'api/api.ts'));
  assert.ok(has('backup/sync.ts', 'session/session.ts'));
  assert.ok(has('install/init.ts', 'agents/registry.ts'));
  // a type in a type position: `import('../session/context.js').ContextOpener`
  assert.ok(g.edges.some((e) => e.from === 'cli/output.ts' && e.to === 'session/context.ts' && e.kind === 'dynamic-import' && e.typeOnly));
});

test('architecture: no file imports from a higher layer, and none loads a module unseen', async () => {
  const bad = layeringViolations(await realGraph(), LAYERS, ALLOWED_ESCAPES);
  assert.equal(bad, [], `imports against the layering:\n  ${bad.join('\n  ')}`);
});

test('architecture: no import cycles', async () => {
  const cycles = importCycles(await realGraph());
  assert.equal(cycles, [], `import cycles:\n  ${cycles.join('\n  ')}`);
});

// Issue 15: what agentsnap knows about one agent is in that agent's adapter file(s); everything else goes
// through the AgentAdapter interface (adapter.ts) and registry.ts. The exceptions are public API helpers
// named for one agent (`claudeHookSettings`/`claudeArgv` in wrap.ts, `CLAUDE_UNDO_COMMAND` from init.ts).
test("architecture: outside src/agents/, one agent's files are reached only through the adapter interface", async () => {
  const ADAPTER_FILES = /^agents\/(claude|claude-transcript|codex|gemini|generic)\.ts$/;
  const allowed = new Set(['runtime/wrap.ts → agents/claude.ts', 'install/init.ts → agents/claude.ts']);
  const bad = new Set<string>();
  for (const e of (await realGraph()).edges) {
    if (!e.internal || layerOf(e.from) === 'agents') continue;
    const edge = `${e.from} → ${e.to}`;
    if (ADAPTER_FILES.test(e.to) && !allowed.has(edge)) bad.add(`${edge} (${e.from}:${e.lines.join(',')})`);
  }
  assert.equal(
    [...bad],
    [],
    `imports of one agent's adapter from agent-neutral code (use adapterOf/transcriptReader in agents/registry.ts):\n  ${[...bad].join('\n  ')}`,
  );
});

// ---- the checker on planted imports ----

/** Violations the checker reports for a fake src/ holding `files` (plus ui/high.ts, base/low.ts: a higher and a lower module). */
async function violationsIn(files: Record<string, string>, allowed: ReadonlyMap<string, string> = new Map()): Promise<string[]> {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'agentsnap-layering-')));
  const forget = removeOnSignal(dir);
  try {
    const all: Record<string, string> = {
      'ui/high.ts': 'export const high = 1;\nexport type High = number;\nexport default high;\n',
      'base/low.ts': 'export const low = 2;\nexport default low;\n',
      ...files,
    };
    for (const [rel, text] of Object.entries(all)) {
      fs.mkdirSync(path.join(dir, 'src', path.dirname(rel)), { recursive: true });
      fs.writeFileSync(path.join(dir, 'src', rel), text);
    }
    return layeringViolations(await readImportGraph(path.join(dir, 'src')), LAYERS, allowed);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    forget();
  }
}

const UP = "'../ui/high.js'";

/** Each shape the old scanner misread, with an upward import hidden behind it (reported at `line`) and a look-alike (not). */
const SHAPES: { shape: string; planted: string; line: number; lookalike: string }[] = [
  {
    shape: 'a // comment holding /*',
    planted: `// the layers of src/*.ts\nimport { high } from ${UP};\n/** A doc comment. */\nexport const x = high;\n`,
    line: 2,
    lookalike: `// src/*.ts: import { high } from ${UP};\nexport const x = 1;\n`,
  },
  {
    shape: 'a string holding /* (and a later one holding */)',
    planted: `const glob = 'src/*.ts';\nimport { high } from ${UP};\nconst end = '*/';\nexport const x = [glob, end, high];\n`,
    line: 2,
    lookalike: `const glob = 'src/*.ts';\nconst t = "import { high } from ${UP.replace(/'/g, '')}";\nconst end = '*/';\nexport const x = [glob, t, end];\n`,
  },
  {
    shape: 'a string holding // on the line of the import',
    planted: `const sep = "a//b"; import { high } from ${UP};\nexport const x = [sep, high];\n`,
    line: 1,
    lookalike: `const s = "// import { high } from ${UP.replace(/'/g, '')}";\nexport const x = s;\n`,
  },
  {
    shape: 'a template literal with ${} (import-like text in and around it)',
    planted: `const t = \`\${(await import(${UP})).high} and /* \${'*/'}\`;\nexport const x = t;\n`,
    line: 1,
    lookalike: `const t = \`import { high } from ${UP} \${"import { high } from ${UP.replace(/'/g, '')}"} \${\`export * from ${UP}\`}\`;\nexport const x = t;\n`,
  },
  {
    shape: 'a block comment, then */ in a string after the import',
    planted: `/* a note */ const a = '/*';\nimport { high } from ${UP};\nconst b = '*/';\nexport const x = [a, b, high];\n`,
    line: 2,
    lookalike: `/* export * from ${UP};\n   import { high } from ${UP}; */\nconst b = '*/';\nexport const x = b;\n`,
  },
  {
    shape: 'a regular expression holding /* and a quote',
    planted: `const re = /https?:\\/*|'/;\nimport { high } from ${UP};\n/** A doc comment. */\nexport const x = [re, high];\n`,
    line: 2,
    lookalike: `const re = /import { high } from '..\\/ui\\/high.js'/;\nexport const x = re;\n`,
  },
  {
    shape: 'a dynamic import()',
    planted: `export const load = async () => (await import(${UP})).high;\n`,
    line: 1,
    lookalike: `const loader = { import: (s: string) => s };\nexport const x = [loader.import(${UP}), "import(${UP.replace(/'/g, '')})"];\n`,
  },
  {
    shape: 'a require()',
    planted: `declare const require: (s: string) => unknown;\nexport const h = require(${UP});\n`,
    line: 2,
    lookalike: `const mod = { require: (s: string) => s };\nexport const x = [mod.require(${UP}), "require(${UP.replace(/'/g, '')})"];\n`,
  },
  {
    shape: 'an export … from',
    planted: `export const x = 1;\nexport { high } from ${UP};\nexport * as all from ${UP};\n`,
    line: 2,
    lookalike: `const high = 1;\nexport { high };\nexport const s = "export { high } from ${UP.replace(/'/g, '')}";\n`,
  },
  {
    shape: 'an import type',
    planted: `import type { High } from ${UP};\nexport type X = High;\n`,
    line: 1,
    lookalike: `// import type { High } from ${UP};\nimport type from '../base/low.js';\nexport const x: { import: number; type: number } = { import: 1, type };\n`,
  },
  {
    shape: 'an export type … from',
    planted: `export type { High } from ${UP};\n`,
    line: 1,
    lookalike: `export type High = number;\nexport const s = 'export type { High } from ${UP.replace(/'/g, '')}';\n`,
  },
  {
    shape: "an import('…') in a type",
    planted: `export type X = import(${UP}).High;\n`,
    line: 1,
    lookalike: `export type X = typeof import('../base/low.js');\n`,
  },
];

for (const s of SHAPES) {
  test(`architecture: an upward import behind ${s.shape} is reported, with its line`, async () => {
    const bad = await violationsIn({ 'git/planted.ts': s.planted });
    assert.ok(
      bad.some((v) => v.startsWith(`git/planted.ts:${s.line}`) && v.includes('git → ui (ui/high.ts), a higher layer')),
      `expected git/planted.ts:${s.line} importing ui/high.ts in:\n  ${bad.join('\n  ')}`,
    );
  });
  test(`architecture: text that only looks like an import, in ${s.shape}, is not reported`, async () => {
    assert.equal(await violationsIn({ 'git/lookalike.ts': s.lookalike }), []);
  });
}

test('architecture: a downward import in each shape is no violation', async () => {
  const down = Object.fromEntries(
    SHAPES.map((s, i) => [
      `ui/down${i}.ts`,
      s.planted.replaceAll(UP, "'../base/low.js'").replaceAll('High', 'Low').replaceAll('{ high }', '{ low as high }'),
    ]),
  );
  assert.equal(await violationsIn(down), []);
});

test('architecture: a module loaded with no literal specifier is reported unless allow-listed with a reason', async () => {
  const files = {
    'base/escapes.ts':
      "declare const require: (s: string) => unknown;\nconst name = '../ui/high.js';\nexport const a = import(name);\nexport const b = require(name);\nexport const c = import(`../ui/${name}`);\n",
  };
  const bad = await violationsIn(files);
  assert.equal(bad, [
    'base/escapes.ts:3: import() of a specifier that is not a string literal: it escapes the layering check',
    'base/escapes.ts:4: require() of a specifier that is not a string literal: it escapes the layering check',
    'base/escapes.ts:5: import() of a specifier that is not a string literal: it escapes the layering check',
  ]);
  const allowed = new Map([
    ['base/escapes.ts: import() of a specifier that is not a string literal', 'test: both import()s load ../ui/high.js'],
    ['base/escapes.ts: require() of a specifier that is not a string literal', 'test'],
  ]);
  assert.equal(await violationsIn(files, allowed), []);
});

test('architecture: an import that leaves the source tree, and a cycle, are reported', async () => {
  const bad = await violationsIn({
    'git/out.ts': "import { low } from '../../outside.js';\nexport const x = low;\n",
    '../outside.ts': 'export const low = 1;\n',
  });
  assert.equal(bad, ["git/out.ts:1: import of '../../outside.js' leaves the source tree (../outside.ts)"]);
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'agentsnap-layering-')));
  const forget = removeOnSignal(dir);
  try {
    fs.mkdirSync(path.join(dir, 'git'));
    fs.writeFileSync(path.join(dir, 'git', 'a.ts'), "import type { B } from './b.js';\nexport type A = B | 1;\n");
    fs.writeFileSync(path.join(dir, 'git', 'b.ts'), "import { type A } from './a.js';\nexport type B = A | 2;\n");
    assert.equal(importCycles(await readImportGraph(dir)), ['git/a.ts → git/b.ts → git/a.ts']);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    forget();
  }
});

test('architecture: the scanner refuses text it cannot follow instead of guessing', async () => {
  const bad = await violationsIn({ 'base/broken.ts': 'const s = `never closed ${1};\n' }).then(
    () => null,
    (e: Error) => e.message,
  );
  assert.ok(bad?.includes('base/broken.ts:1'), String(bad));
});

for (const hidden of [`import { high } from ${UP};\nexport const t = high;`, `import type { High } from ${UP};\nexport type T = High;`]) {
  test(`architecture: a file the scanner misreads is refused (esbuild reads ${hidden.split(' {')[0]}, the scanner does not)`, async () => {
    // After a block's `}` the scanner takes a `/` for a division: here the start of a regex holding a backtick, which
    // it then reads as a template literal that hides the next lines. esbuild reads the import (a type-only one too:
    // it is given the text with `import type` as `import`); they disagree.
    const text = `export function f(s: string): boolean {\n  {}\n  /\`/.test(s);\n  return true;\n}\n${hidden} // a backtick: \`\n`;
    const err = await violationsIn({ 'git/misread.ts': text }).then(
      () => null,
      (e: Error) => e.message,
    );
    assert.ok(
      err?.includes('the import scanner and esbuild disagree') &&
        err.includes("git/misread.ts: esbuild reads 1 import-statement of '../ui/high.js', the scanner 0"),
      String(err),
    );
  });
}

test('architecture: the scanner tells a regex after if (…) from a division after (…)', () => {
  const text = "if (a) /'/.test(s);\nconst n = (a) / 2; const m = (b) / 3;\nimport { x } from './x.js';\n";
  assert.equal(
    scanModuleSyntax(text).imports.map((i) => `${i.line} ${i.spec}`),
    ['3 ./x.js'],
  );
});

test('architecture: the scanner reads lines and type-only imports', () => {
  const text = [
    "import fs from 'node:fs';",
    "import { a, type B } from './a.js';",
    "import type { C } from '../c/c.js';",
    "import type, { d } from './d.js';",
    "export * from './e.js';",
    "export type { F } from './f.js';",
    "import './g.js';",
    "const h = await import('./h.js');",
    "import I = require('./i.js');",
    "import type J = require('./j.js');",
    "const s = '/* import x from \"./no.js\" */'; // import { y } from './no.js'",
  ].join('\n');
  assert.equal(
    scanModuleSyntax(text).imports.map((i) => `${i.line} ${i.kind} ${i.spec}${i.typeOnly ? ' type' : ''}`),
    [
      '1 import-statement node:fs',
      '2 import-statement ./a.js',
      '3 import-statement ../c/c.js type',
      '4 import-statement ./d.js',
      '5 import-statement ./e.js',
      '6 import-statement ./f.js type',
      '7 import-statement ./g.js',
      '8 dynamic-import ./h.js',
      '9 require-call ./i.js',
      '10 require-call ./j.js type',
    ],
  );
});

test.run();
