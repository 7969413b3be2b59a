// Issue 14, "The README a newcomer meets": the README says what agentsnap is,
// how to install it, a quick start, the five commands and the guarantees; the
// full reference lives in docs/ and stays complete: every command, every
// configuration key agentsnap reads and every exit code it uses is in it, and
// every relative link (and its #anchor) resolves.
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROOT } from '../support/helpers.js';
import { COMMANDS } from '../../src/cli/main.js';
import { ExitCode } from '../../src/base/errors.js';
import { MCP_TOOLS } from '../../src/mcp/tools.js';

const read = (rel: string) => fs.readFileSync(path.join(ROOT, rel), 'utf8');
const README = read('README.md');
const REFERENCE = read('docs/reference.md');

/** The `## ` sections of a markdown text, by title. */
function section(text: string, title: string): string {
  const start = text.indexOf(`\n## ${title}\n`);
  assert.ok(start >= 0, `section ${title}`);
  const end = text.indexOf('\n## ', start + 1);
  return text.slice(start, end < 0 ? undefined : end);
}

function sourceFiles(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? sourceFiles(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));
}

/** GitHub's anchor for a heading. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

test('the README: what it is, Install before Quick start, the five commands, the guarantees; the reference and bench tables are in docs/', () => {
  const titles = [...README.matchAll(/^## (.+)$/gm)].map((m) => m[1]);
  for (const t of ['Install', 'Quick start', 'The five commands', 'Guarantees']) assert.ok(titles.includes(t), t);
  assert.ok(titles.indexOf('Install') < titles.indexOf('Quick start'));
  for (const cmd of ['npm install -g agentsnap', 'npm install -g .', 'npm pack', 'npm install -g ./agentsnap-'])
    assert.ok(README.includes(cmd), cmd);
  const five = section(README, 'The five commands');
  for (const cmd of ['wrap', 'log', 'show', 'undo', 'redo']) assert.match(five, new RegExp(`\\| \`agentsnap ${cmd}\\b`), cmd);
  assert.not.ok(
    titles.some((t) => /Performance|Configuration|Exit codes|Library/.test(t ?? '')),
    `reference sections moved out: ${titles.join(', ')}`,
  );
  assert.not.match(README, /raw git: GIT_INDEX_FILE/, 'no bench internals');
  assert.ok(README.includes('(docs/reference.md)') && README.includes('(docs/bench.md)'));
  assert.ok(README.split('\n').length < 200, 'short');
});

test("the README names every MCP tool `agentsnap mcp` serves, and explains npm 11's allowScripts warning on `npm install -g .`", () => {
  const mcp = README.slice(README.indexOf('### The agent undoes its own steps (MCP)'));
  const paragraph = mcp.slice(0, mcp.indexOf('\n\n'));
  assert.ok(MCP_TOOLS.length >= 9, 'nine tools');
  for (const t of MCP_TOOLS) assert.ok(paragraph.includes(`\`${t.name}\``), `MCP tool ${t.name} in the README's MCP paragraph`);
  // What npm 11.19 prints for `npm install -g .` in a clone: "1 package has install scripts not yet covered by allowScripts".
  assert.match(README, /not yet covered by allowScripts/);
  assert.match(README, /prepare: npm run build\)` is "not yet covered by allowScripts": that script is the build/);
});

test('docs/reference.md names every command, every configuration key agentsnap reads, every exit code', () => {
  for (const c of COMMANDS) assert.ok(REFERENCE.includes(`agentsnap ${c.name}`), `command ${c.name}`);
  const config = section(REFERENCE, 'Configuration').toLowerCase();
  const keys = new Set<string>();
  for (const file of sourceFiles(path.join(ROOT, 'src'))) {
    for (const m of fs.readFileSync(file, 'utf8').matchAll(/(Symbol\.for\()?'agentsnap\.([a-zA-Z]+)'/g))
      if (!m[1] && m[2] !== 'js') keys.add((m[2] as string).toLowerCase());
  }
  assert.ok(keys.size >= 15, [...keys].join(' '));
  for (const k of keys) assert.ok(config.includes(`agentsnap.${k}\``), `config key agentsnap.${k} in the Configuration table`);
  const exits = section(REFERENCE, 'Exit codes');
  for (const [name, code] of Object.entries(ExitCode))
    assert.match(exits, new RegExp(`^\\| ${code} \\|`, 'm'), `exit code ${code} (${name})`);
});

test('every relative link in README.md, DEVELOPING.md and docs/ resolves, #anchors included', () => {
  const docs = ['README.md', 'DEVELOPING.md', ...fs.readdirSync(path.join(ROOT, 'docs')).map((f) => `docs/${f}`)];
  const anchors = new Map(docs.map((d) => [d, new Set([...read(d).matchAll(/^#+ (.+)$/gm)].map((m) => slug(m[1] as string)))]));
  let links = 0;
  for (const doc of docs) {
    for (const m of read(doc).matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1] as string;
      if (/^[a-z]+:/.test(target)) continue;
      const [file, anchor] = target.split('#') as [string, string | undefined];
      const rel = file ? path.posix.normalize(path.posix.join(path.posix.dirname(doc), file)) : doc;
      assert.ok(fs.existsSync(path.join(ROOT, rel)), `${doc}: ${target}`);
      if (anchor) assert.ok(anchors.get(rel)?.has(anchor), `${doc}: ${target} (no heading #${anchor} in ${rel})`);
      links++;
    }
  }
  assert.ok(links >= 10, `${links} links`);
});

/** Folders of this repository that a path in the docs or a comment starts with. */
const REPO_FOLDERS = ['src', 'bin', 'test', 'scripts', 'bench', 'hooks', 'docs', 'demo', 'ui'];
/** Paths in the docs that are a user's files in an example, not this repository's. */
const EXAMPLE_PATHS = new Set(['src/app.ts']);

/** The paths of this repository a text names (`src/…`, `test/…`, …; globs and `<placeholders>` left out). */
function repoPathsIn(text: string, folders: readonly string[]): string[] {
  const re = new RegExp(`(?<![\\w./-])((?:${folders.join('|')})/[\\w./-]*\\w)(?![*<\\w])`, 'g');
  return [...text.matchAll(re)].map((m) => m[1] as string);
}

/** The comment text of a source file, line by line: `//` comments and the lines of `/* … *\/` blocks (a lexer is not needed to find paths). */
function commentLines(text: string): [number, string][] {
  const out: [number, string][] = [];
  text.split('\n').forEach((line, i) => {
    const lineComment = /(?:^|\s)\/\/(.*)$/.exec(line);
    if (lineComment) out.push([i + 1, lineComment[1] as string]);
    else if (/^\s*(\/\*|\*)/.test(line)) out.push([i + 1, line]);
  });
  return out;
}

test('every path of this repository named in the docs or in a comment exists (none left behind by a move)', () => {
  const exists = (p: string) => fs.existsSync(path.join(ROOT, p));
  const stale: string[] = [];
  const docs = [
    'README.md',
    'DEVELOPING.md',
    ...fs
      .readdirSync(path.join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ];
  // DEVELOPING.md also names files by their folder of src/ alone (`server/serve.ts`).
  const layers = fs
    .readdirSync(path.join(ROOT, 'src'), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name);
  for (const doc of docs) {
    read(doc)
      .split('\n')
      .forEach((line, i) => {
        for (const p of repoPathsIn(line, REPO_FOLDERS))
          if (!EXAMPLE_PATHS.has(p) && !exists(p) && !exists(`src/${p}`)) stale.push(`${doc}:${i + 1}: ${p}`);
        if (doc !== 'DEVELOPING.md') return;
        for (const p of repoPathsIn(line, layers))
          if (/\.(ts|js|mjs|cjs)$/.test(p) && !exists(`src/${p}`) && !exists(p)) stale.push(`${doc}:${i + 1}: ${p} (src/${p})`);
      });
  }
  const code = ['src', 'bin', 'test', 'scripts', 'bench', 'demo', 'ui'].flatMap((d) =>
    (fs.readdirSync(path.join(ROOT, d), { recursive: true }) as string[])
      .filter((f) => /\.(ts|js|mjs|cjs)$/.test(f))
      .map((f) => `${d}/${f}`),
  );
  assert.ok(code.length > 100, `${code.length} source files`);
  // The sh scripts' `#` comments too.
  const shell = (text: string): [number, string][] =>
    text.split('\n').flatMap((l, i): [number, string][] => (/^\s*#/.test(l) ? [[i + 1, l]] : []));
  for (const file of [...code, 'bin/agentsnap-hook', 'hooks/agentsnap-hook', '.ci/run']) {
    for (const [line, comment] of (/\.(ts|js|mjs|cjs)$/.test(file) ? commentLines : shell)(read(file))) {
      // `ui/` alone is ambiguous in a comment (the page at the top, or src/ui/ for src's own files): full paths only.
      for (const p of repoPathsIn(
        comment,
        REPO_FOLDERS.filter((f) => f !== 'ui'),
      ))
        if (!exists(p)) stale.push(`${file}:${line}: ${p}`);
    }
  }
  assert.equal(stale, [], `stale paths:\n  ${stale.join('\n  ')}`);
});

test.run();
