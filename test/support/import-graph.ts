// The import graph of a source tree (src/, or a small fake one in a test), read by esbuild, the parser the build
// already runs: `bundle` over every file with `metafile` lists each import esbuild resolved (static, `export … from`,
// `import()` and `require()` of a literal), by the file it resolves to. esbuild erases type-only imports, which
// tie the design together just the same: module-syntax.ts reads every import from the same text, with the line, and
// esbuild reads the text with `import type`/`export type … from` made value imports (withTypeImportsAsValues); the
// two must agree file by file, or the graph is refused (a misread never hides an edge).
// Used by test/project/architecture.test.ts (the layering) and scripts/hook-path.ts (a hook call's path at run time).
import fs from 'node:fs';
import path from 'node:path';
import { build, type Metafile, type Plugin } from 'esbuild';
import { scanModuleSyntax, ModuleSyntaxError, type ScannedImport, type ScannedEscape, type ImportKind } from './module-syntax.js';

export interface ImportEdge {
  /** The importing file, relative to the source root, with '/'. */
  from: string;
  /** The imported file relative to the source root; for a package (or a built-in), its specifier. */
  to: string;
  /** Whether `to` is a file of the source tree (false: a package, or a file outside the tree: see `outside`). */
  internal: boolean;
  /** A relative specifier that resolves to a file outside the source tree. */
  outside: boolean;
  spec: string;
  kind: ImportKind;
  /** Only types are imported: no module is loaded at run time for it. */
  typeOnly: boolean;
  /** The lines of `from` where it is imported (each occurrence). */
  lines: number[];
}

export interface ImportGraph {
  root: string;
  files: string[];
  edges: ImportEdge[];
  /** Modules loaded with no literal specifier (`import(x)`, `require(x)`, createRequire, `/// <reference>`), by file. */
  escapes: (ScannedEscape & { file: string })[];
}

export class ImportGraphError extends Error {}

export function sourceFiles(root: string): string[] {
  return fs
    .readdirSync(root, { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.(ts|mts|cts|tsx|js|mjs|cjs)$/.test(f) && !f.endsWith('.d.ts'))
    .map((f) => path.join(root, f))
    .filter((f) => fs.statSync(f).isFile())
    .sort();
}

const posix = (p: string): string => p.split(path.sep).join('/');
/** `<kind>\0<specifier>` as `<kind> of '<specifier>'`. */
const describeKey = (key: string): string => key.replace(/\0(.*)$/s, " of '$1'");

/**
 * The text with `import type` and `export type {…}`/`export type *` written as value imports, same length (`type`
 * becomes 4 spaces): esbuild then reads those too, where it would erase them, so the scanner's type-only imports
 * are checked against a real parser like its value imports. Only `import('…')` in a type stays the scanner's alone.
 * Text that only looks like one (in a string or comment) changes harmlessly; esbuild takes an imported name that no
 * module exports as a type in a TypeScript file.
 */
export function withTypeImportsAsValues(text: string): string {
  return text
    .replace(/\b(import|export)(\s+)type(?=\s*[{*])/g, (_m, kw: string, ws: string) => `${kw}${ws}    `)
    .replace(/\bimport(\s+)type(?=\s+(?!from\s*['"])[A-Za-z_$][\w$]*\s*(?:from\b|=))/g, (_m, ws: string) => `import${ws}    `);
}

/** Reads the import graph of every source file under `root`. Throws ImportGraphError where it cannot read it exactly. */
export async function readImportGraph(root: string): Promise<ImportGraph> {
  root = fs.realpathSync(root);
  const files = sourceFiles(root);
  const rel = (abs: string): string => posix(path.relative(root, abs));
  const scanned = new Map<string, { imports: ScannedImport[]; escapes: ScannedEscape[] }>();
  /** Per file, the resolved path of each specifier the scanner found (type-only ones included). */
  const resolvedSpecs = new Map<string, Map<string, { path: string; external: boolean }>>();
  const scanner: Plugin = {
    name: 'module-syntax',
    setup(b) {
      b.onLoad({ filter: /\.(ts|mts|cts|tsx|js|mjs|cjs)$/ }, async (args) => {
        const text = await fs.promises.readFile(args.path, 'utf8');
        let found: { imports: ScannedImport[]; escapes: ScannedEscape[] };
        try {
          found = scanModuleSyntax(text);
        } catch (e) {
          if (e instanceof ModuleSyntaxError)
            return {
              errors: [{ text: `the import scanner cannot read this file: ${e.message}`, location: { file: args.path, line: e.line } }],
            };
          throw e;
        }
        scanned.set(args.path, found);
        const specs = new Map<string, { path: string; external: boolean }>();
        for (const imp of found.imports) {
          if (specs.has(imp.spec)) continue;
          const r = await b.resolve(imp.spec, { kind: imp.kind, importer: args.path, resolveDir: path.dirname(args.path) });
          if (r.errors.length > 0) return { errors: r.errors.map((m) => ({ ...m, location: { file: args.path, line: imp.line } })) };
          specs.set(imp.spec, { path: r.path, external: r.external });
        }
        resolvedSpecs.set(args.path, specs);
        const ext = path.extname(args.path).slice(1);
        return {
          contents: withTypeImportsAsValues(text),
          loader: ext === 'tsx' ? 'tsx' : ext.startsWith('m') || ext.startsWith('c') ? 'js' : (ext as 'ts' | 'js'),
        };
      });
    },
  };
  let metafile: Metafile;
  try {
    const res = await build({
      absWorkingDir: root,
      entryPoints: files,
      bundle: true,
      write: false,
      metafile: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      packages: 'external',
      outdir: path.join(root, '.import-graph-out'), // never written (write: false)
      logLevel: 'silent',
      // Keep every value import as written (else esbuild drops one whose names are used in types only).
      tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true } },
      plugins: [scanner],
    });
    metafile = res.metafile;
  } catch (e) {
    const errs = (e as { errors?: { text: string; location?: { file: string; line: number } | null }[] }).errors;
    if (!errs) throw e;
    throw new ImportGraphError(
      errs
        .map(
          (m) => `${m.location ? `${posix(path.relative(root, path.resolve(root, m.location.file)))}:${m.location.line}: ` : ''}${m.text}`,
        )
        .join('\n'),
    );
  }

  const edges = new Map<string, ImportEdge>();
  const escapes: ImportGraph['escapes'] = [];
  const problems: string[] = [];
  for (const abs of files) {
    const file = rel(abs);
    const found = scanned.get(abs);
    const input = metafile.inputs[posix(path.relative(root, abs))];
    if (!found || !input) {
      problems.push(`${file}: esbuild did not read it`);
      continue;
    }
    for (const e of found.escapes) escapes.push({ ...e, file });
    const specs = resolvedSpecs.get(abs) as Map<string, { path: string; external: boolean }>;
    // esbuild's imports, as (specifier, kind) → count; glob imports (`import(\`./${x}\`)`) are escapes the scanner reports.
    const esbuildCount = new Map<string, number>();
    for (const i of input.imports) {
      if (i.path === '<runtime>' || i.path.includes('*')) continue;
      const key = `${i.kind}\0${i.original ?? i.path}`;
      esbuildCount.set(key, (esbuildCount.get(key) ?? 0) + 1);
    }
    const scannedCount = new Map<string, ScannedImport[]>();
    for (const imp of found.imports) {
      const key = `${imp.kind}\0${imp.spec}`;
      scannedCount.set(key, [...(scannedCount.get(key) ?? []), imp]);
    }
    for (const [key, n] of esbuildCount) {
      const seen = scannedCount.get(key)?.length ?? 0;
      if (seen < n) problems.push(`${file}: esbuild reads ${n} ${describeKey(key)}, the scanner ${seen}`);
    }
    for (const [key, imps] of scannedCount) {
      const n = esbuildCount.get(key) ?? 0;
      if (imps.length === n) continue;
      // An import() esbuild does not load is in a type (`import('./x.js').T`): type-only. Any other surplus is a misread.
      if ((imps[0] as ScannedImport).kind === 'dynamic-import' && imps.length > n) {
        // Which occurrences are the types is not known: with n > 0, all are listed as value and type lines alike.
        if (n === 0) for (const imp of imps) imp.typeOnly = true;
        else found.imports.push({ ...(imps[0] as ScannedImport), typeOnly: true, line: (imps[imps.length - 1] as ScannedImport).line });
        continue;
      }
      problems.push(`${file}: the scanner reads ${imps.length} ${describeKey(key)}, esbuild ${n}`);
    }
    for (const imp of found.imports) {
      const r = specs.get(imp.spec) as { path: string; external: boolean };
      const internal = !r.external && path.isAbsolute(r.path) && !path.relative(root, r.path).startsWith('..');
      const outside = !r.external && !internal;
      const to = internal ? rel(r.path) : outside ? posix(path.relative(root, r.path)) : imp.spec;
      const key = `${file}\0${to}\0${imp.kind}\0${imp.typeOnly}`;
      const had = edges.get(key);
      if (had) {
        if (!had.lines.includes(imp.line)) had.lines.push(imp.line);
      } else
        edges.set(key, { from: file, to, internal, outside, spec: imp.spec, kind: imp.kind, typeOnly: imp.typeOnly, lines: [imp.line] });
    }
  }
  if (problems.length > 0)
    throw new ImportGraphError(`the import scanner and esbuild disagree (fix test/support/module-syntax.ts):\n  ${problems.join('\n  ')}`);
  return { root, files: files.map(rel), edges: [...edges.values()], escapes };
}

/** The layers of src/, lowest first, as DEVELOPING.md's "Layers" diagram draws them (top first): `.` is src/*.ts. */
export function layersFromDoc(developing: string): string[] {
  const section = /^## Layers\n([\s\S]*?)^## /m.exec(developing)?.[1];
  const diagram = section ? /^```\n([\s\S]*?)^```/m.exec(section)?.[1] : undefined;
  if (!diagram) throw new Error('DEVELOPING.md has no "## Layers" section with a ``` diagram');
  const top: string[] = [];
  for (const line of diagram.split('\n')) {
    const m = /^\s*(src\/\*\.ts|[a-z][\w-]*\/)\s/.exec(line);
    if (m) top.push(m[1] === 'src/*.ts' ? '.' : (m[1] as string).slice(0, -1));
  }
  return top.reverse();
}

/** The layer of a file of src/: its first folder, or `.` directly in src/. */
export function layerOf(file: string): string {
  const parts = file.split('/');
  return parts.length === 1 ? '.' : (parts[0] as string);
}

/** Every import against the layering (`file:line: …`), and every module loaded unseen unless `allowedEscapes` names it. */
export function layeringViolations(
  graph: ImportGraph,
  layers: string[],
  allowedEscapes: ReadonlyMap<string, string> = new Map(),
): string[] {
  const out: string[] = [];
  const rank = (f: string): number => layers.indexOf(layerOf(f));
  for (const f of graph.files) if (rank(f) < 0) out.push(`${f}: in no layer (src/${layerOf(f)}/ is not in DEVELOPING.md's Layers diagram)`);
  for (const e of graph.edges) {
    const at = e.lines.map((l) => `${e.from}:${l}`).join(', ');
    const how = `${e.typeOnly ? 'type-only ' : ''}${e.kind === 'import-statement' ? 'import' : e.kind === 'dynamic-import' ? 'import()' : 'require()'} of '${e.spec}'`;
    if (e.outside) out.push(`${at}: ${how} leaves the source tree (${e.to})`);
    else if (e.internal && rank(e.to) > rank(e.from))
      out.push(`${at}: ${how}: ${layerOf(e.from)} → ${layerOf(e.to)} (${e.to}), a higher layer`);
  }
  for (const x of graph.escapes)
    if (!allowedEscapes.has(`${x.file}: ${x.what}`)) out.push(`${x.file}:${x.line}: ${x.what}: it escapes the layering check`);
  return out;
}

/** Every import cycle among the tree's files (type-only imports count), as `a → b → a`. */
export function importCycles(graph: ImportGraph): string[] {
  const g = new Map<string, string[]>(graph.files.map((f) => [f, []]));
  for (const e of graph.edges) if (e.internal && e.to !== e.from) (g.get(e.from) as string[]).push(e.to);
  const state = new Map<string, 'open' | 'done'>();
  const cycles: string[] = [];
  const stack: string[] = [];
  const visit = (f: string): void => {
    state.set(f, 'open');
    stack.push(f);
    for (const d of [...new Set(g.get(f) ?? [])].sort()) {
      const s = state.get(d);
      if (s === 'open') cycles.push([...stack.slice(stack.indexOf(d)), d].join(' → '));
      else if (s === undefined) visit(d);
    }
    stack.pop();
    state.set(f, 'done');
  };
  for (const f of [...g.keys()].sort()) if (!state.has(f)) visit(f);
  return cycles;
}
