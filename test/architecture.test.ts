// The layering of src/ (DEVELOPING.md, "Layers"): every folder is a layer, a
// file imports only from its own layer or lower ones, and no module takes part
// in an import cycle (type-only imports count: they tie the files together just
// the same for a reader). Imports are read with a small scanner rather than
// dependency-cruiser or madge: both read TypeScript through the `typescript`
// compiler API (or @swc/core), which TypeScript 7's native compiler no longer
// ships. Our own sources use a few plain import forms, and the scanner refuses
// any relative specifier it cannot resolve to a file, so a form it misreads
// fails the test instead of hiding an edge.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'src');

/** Lowest first. `.` is the files directly in src/: the public API (index.ts, api*.ts, the routers). */
const LAYERS = ['base', 'git', 'snapshot', 'agents', 'session', 'restore', 'server', 'worktrees', 'history', '.', 'ui', 'cli'];

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const abs = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(abs);
    return e.name.endsWith('.ts') ? [abs] : [];
  });
}

/** Comments out, so an example in a comment is no import (strings stay: specifiers are strings). */
function withoutComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
}

/** The relative specifiers a file imports: `from '…'` (import/export), `import '…'`, `import('…')`. */
export function importsOf(text: string): string[] {
  const out: string[] = [];
  const re = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(['"])(\.{1,2}\/[^'"]+)\1/g;
  for (const m of withoutComments(text).matchAll(re)) out.push(m[2] as string);
  return out;
}

function resolve(from: string, spec: string): string {
  const abs = path.resolve(path.dirname(from), spec);
  const candidates = [abs.replace(/\.js$/, '.ts'), abs, `${abs}.ts`, path.join(abs, 'index.ts')];
  const hit = candidates.find((c) => c.startsWith(SRC) && fs.existsSync(c) && fs.statSync(c).isFile());
  if (!hit) throw new Error(`${path.relative(SRC, from)}: cannot resolve import '${spec}'`);
  return hit;
}

function layerOf(file: string): string {
  const rel = path.relative(SRC, file).split(path.sep);
  return rel.length === 1 ? '.' : (rel[0] as string);
}

const rel = (f: string): string => path.relative(SRC, f).split(path.sep).join('/');

function graph(): Map<string, string[]> {
  const g = new Map<string, string[]>();
  for (const f of sourceFiles(SRC)) g.set(f, [...new Set(importsOf(fs.readFileSync(f, 'utf8')).map((s) => resolve(f, s)))]);
  return g;
}

test('architecture: the scanner sees every import form our sources use', () => {
  const text = [
    "import fs from 'node:fs';",
    "import { a } from './a.js';",
    "import type { B } from '../b/b.js';",
    "export * from './c.js';",
    "export { d } from './d.js';",
    "import './e.js';",
    "const f = await import('./f.js');",
    "type G = import('../g.js').G;",
    "// import { no } from './comment.js';",
    "/* export * from './block.js'; */",
    "const s = 'see http://x.invalid/ from ./h.js';",
  ].join('\n');
  assert.equal(importsOf(text), ['./a.js', '../b/b.js', './c.js', './d.js', './e.js', './f.js', '../g.js']);
});

test('architecture: every folder of src/ is a known layer', () => {
  const folders = new Set([...graph().keys()].map(layerOf));
  for (const f of folders) assert.ok(LAYERS.includes(f), `src/${f}/ is in no layer: add it to LAYERS here and to DEVELOPING.md`);
});

test('architecture: no file imports from a higher layer', () => {
  const bad: string[] = [];
  for (const [file, deps] of graph()) {
    const mine = LAYERS.indexOf(layerOf(file));
    for (const d of deps) {
      if (LAYERS.indexOf(layerOf(d)) > mine) bad.push(`${rel(file)} (${layerOf(file)}) imports ${rel(d)} (${layerOf(d)})`);
    }
  }
  assert.equal(bad, [], `imports against the layering:\n  ${bad.join('\n  ')}`);
});

test('architecture: no import cycles', () => {
  const g = graph();
  const state = new Map<string, 'open' | 'done'>();
  const cycles: string[] = [];
  const stack: string[] = [];
  const visit = (f: string): void => {
    state.set(f, 'open');
    stack.push(f);
    for (const d of g.get(f) ?? []) {
      const s = state.get(d);
      if (s === 'open') cycles.push([...stack.slice(stack.indexOf(d)), d].map(rel).join(' → '));
      else if (s === undefined) visit(d);
    }
    stack.pop();
    state.set(f, 'done');
  };
  for (const f of [...g.keys()].sort()) if (!state.has(f)) visit(f);
  assert.equal(cycles, [], `import cycles:\n  ${cycles.join('\n  ')}`);
});

// Issue 15: what agentsnap knows about one agent is in that agent's adapter file(s); everything else goes
// through the AgentAdapter interface (adapter.ts) and registry.ts. The exceptions are public API helpers
// named for one agent (`claudeHookSettings`/`claudeArgv` in wrap.ts, `CLAUDE_UNDO_COMMAND` from init.ts).
test('architecture: outside src/agents/, one agent\'s files are reached only through the adapter interface', () => {
  const ADAPTER_FILES = /^agents\/(claude|claude-transcript|codex|gemini|generic)\.ts$/;
  const allowed = new Set(['wrap.ts → agents/claude.ts', 'init.ts → agents/claude.ts']);
  const bad: string[] = [];
  for (const [file, deps] of graph()) {
    if (layerOf(file) === 'agents') continue;
    for (const d of deps) {
      const edge = `${rel(file)} → ${rel(d)}`;
      if (ADAPTER_FILES.test(rel(d)) && !allowed.has(edge)) bad.push(edge);
    }
  }
  assert.equal(bad, [], `imports of one agent's adapter from agent-neutral code (use adapterOf/transcriptReader in agents/registry.ts):\n  ${bad.join('\n  ')}`);
});

test.run();
