// A token-level reader of the module syntax of a TypeScript file: every import, re-export, `import()` and
// `require()` with its line, and whether it is type-only. esbuild (test/support/import-graph.ts) reads imports with
// a real parser but gives no line, and erases `import('…').T` in a type (and `import type`, which import-graph.ts
// turns into a value import for it); this reader gives both. It is a lexer, not a pattern over the text: comments,
// strings, template literals (with `${}` nesting) and regular expressions are tokens, so text that only looks like
// an import is none, and an import after a `/*` in a string or a `//` comment is still seen. Where it cannot
// follow the text (an unterminated string, comment, template or regex) it throws instead of guessing, and
// import-graph.ts checks its imports against esbuild's for every file, so a misread fails loudly.

export type TokenKind =
  | 'name'
  | 'string'
  | 'template'
  | 'template-head'
  | 'template-middle'
  | 'template-tail'
  | 'number'
  | 'regex'
  | 'punct';

export interface Token {
  kind: TokenKind;
  /** The source text of a name, number or punctuator; the cooked-enough value of a string or template without `${}`. */
  text: string;
  line: number;
}

/** A comment: where it stands among the tokens (`before` is the index of the first token after it) and its lines. */
export interface Comment {
  text: string;
  line: number;
  endLine: number;
  before: number;
}

export type ImportKind = 'import-statement' | 'dynamic-import' | 'require-call';

export interface ScannedImport {
  spec: string;
  kind: ImportKind;
  /** `import type`, `export type … from`, `import X = require` after `import type`; `import()` is decided later (esbuild). */
  typeOnly: boolean;
  line: number;
}

/** A way of loading a module that no literal specifier names: it would escape the layering check. */
export interface ScannedEscape {
  what: string;
  line: number;
}

export class ModuleSyntaxError extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(`line ${line}: ${message}`);
  }
}

// After these words an expression starts, so a `/` begins a regular expression rather than a division.
const EXPRESSION_KEYWORDS = new Set([
  'return',
  'typeof',
  'instanceof',
  'in',
  'of',
  'new',
  'delete',
  'void',
  'throw',
  'case',
  'do',
  'else',
  'yield',
  'await',
  'extends',
  'keyof',
  'as',
  'satisfies',
]);

const isNameStart = (c: string): boolean => /[A-Za-z_$#\u0080-\uffff]/.test(c);
const isNamePart = (c: string): boolean => /[\w$\u0080-\uffff]/.test(c);

export function tokenize(text: string): { tokens: Token[]; escapes: ScannedEscape[]; comments: Comment[] } {
  const tokens: Token[] = [];
  const escapes: ScannedEscape[] = [];
  const comments: Comment[] = [];
  /** One entry per open `{` (false) or `${` (true): a `}` closes the innermost. */
  const braces: boolean[] = [];
  /** One entry per open `(`: whether it holds the condition of if/while/for/with (after its `)`, an expression starts). */
  const parens: boolean[] = [];
  /** Whether the last `)` closed such a condition. */
  let closedCondition = false;
  let i = 0;
  let line = 1;
  if (text.startsWith('#!')) while (i < text.length && text[i] !== '\n') i++;

  const advanceTo = (end: number): void => {
    for (let k = i; k < end; k++) if (text.charCodeAt(k) === 10) line++;
    i = end;
  };
  const regexAllowed = (): boolean => {
    const prev = tokens[tokens.length - 1];
    if (!prev) return true;
    if (prev.kind === 'name') return EXPRESSION_KEYWORDS.has(prev.text);
    if (prev.kind === 'punct') return prev.text === ')' ? closedCondition : !([']', '}'] as string[]).includes(prev.text);
    return prev.kind === 'template-head' || prev.kind === 'template-middle';
  };
  /** Reads template text from i (just after '`' or a closing '}' of `${`) up to '`' or '${'. */
  const templateChunk = (opening: boolean): void => {
    const startLine = line;
    let value = '';
    let k = i;
    for (;;) {
      if (k >= text.length) throw new ModuleSyntaxError(startLine, 'unterminated template literal');
      const c = text[k] as string;
      if (c === '\\') {
        value += text.slice(k, k + 2);
        k += 2;
      } else if (c === '`') {
        advanceTo(k + 1);
        tokens.push({ kind: opening ? 'template' : 'template-tail', text: value, line: startLine });
        return;
      } else if (c === '$' && text[k + 1] === '{') {
        advanceTo(k + 2);
        braces.push(true);
        tokens.push({ kind: opening ? 'template-head' : 'template-middle', text: value, line: startLine });
        return;
      } else {
        value += c;
        k++;
      }
    }
  };

  while (i < text.length) {
    const c = text[i] as string;
    const next = text[i + 1];
    if (
      c === '\n' ||
      c === ' ' ||
      c === '\t' ||
      c === '\r' ||
      c === '\f' ||
      c === '\v' ||
      c === '\u00a0' ||
      c === '\ufeff' ||
      c === '\u2028' ||
      c === '\u2029'
    ) {
      advanceTo(i + 1);
    } else if (c === '/' && next === '/') {
      let end = text.indexOf('\n', i);
      if (end < 0) end = text.length;
      // `/// <reference path="…" />` makes the file depend on another one without any import.
      if (/^\/\/\/\s*<reference\s/.test(text.slice(i, end)))
        escapes.push({ what: `triple-slash directive ${text.slice(i, end).trim()}`, line });
      comments.push({ text: text.slice(i, end), line, endLine: line, before: tokens.length });
      advanceTo(end);
    } else if (c === '/' && next === '*') {
      const end = text.indexOf('*/', i + 2);
      if (end < 0) throw new ModuleSyntaxError(line, 'unterminated block comment');
      const startLine = line;
      const commentText = text.slice(i, end + 2);
      advanceTo(end + 2);
      comments.push({ text: commentText, line: startLine, endLine: line, before: tokens.length });
    } else if (c === "'" || c === '"') {
      const startLine = line;
      let value = '';
      let k = i + 1;
      for (;;) {
        const d = text[k];
        if (d === undefined || d === '\n') throw new ModuleSyntaxError(startLine, 'unterminated string');
        if (d === c) break;
        if (d === '\\') {
          // A line continuation adds nothing; other escapes are kept as written (specifiers have none).
          if (text[k + 1] === '\n') line++;
          else value += text.slice(k, k + 2);
          k += 2;
        } else {
          value += d;
          k++;
        }
      }
      i = k + 1;
      tokens.push({ kind: 'string', text: value, line: startLine });
    } else if (c === '`') {
      advanceTo(i + 1);
      templateChunk(true);
    } else if (c === '}' && braces[braces.length - 1] === true) {
      braces.pop();
      advanceTo(i + 1);
      templateChunk(false);
    } else if (c === '/' && regexAllowed()) {
      const startLine = line;
      let k = i + 1;
      let inClass = false;
      for (;;) {
        const d = text[k];
        if (d === undefined || d === '\n')
          throw new ModuleSyntaxError(startLine, 'unterminated regular expression (or a division the scanner took for one)');
        if (d === '\\') k += 2;
        else {
          if (d === '[') inClass = true;
          else if (d === ']') inClass = false;
          else if (d === '/' && !inClass) break;
          k++;
        }
      }
      k++;
      while (k < text.length && isNamePart(text[k] as string)) k++; // flags
      tokens.push({ kind: 'regex', text: text.slice(i, k), line: startLine });
      i = k;
    } else if (isNameStart(c)) {
      let k = i + 1;
      while (k < text.length && isNamePart(text[k] as string)) k++;
      tokens.push({ kind: 'name', text: text.slice(i, k), line });
      i = k;
    } else if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(next ?? ''))) {
      let k = i + 1;
      while (k < text.length && /[\w.]/.test(text[k] as string)) k++;
      tokens.push({ kind: 'number', text: text.slice(i, k), line });
      i = k;
    } else {
      if (c === '{') braces.push(false);
      else if (c === '}') braces.pop();
      else if (c === '(') {
        const before = tokens[tokens.length - 1];
        parens.push(
          before?.kind === 'name' && ['if', 'while', 'for', 'with'].includes(before.text) && !isPunct(tokens[tokens.length - 2], '.'),
        );
      } else if (c === ')') closedCondition = parens.pop() ?? false;
      tokens.push({ kind: 'punct', text: c, line });
      i++;
    }
  }
  if (braces.includes(true)) throw new ModuleSyntaxError(line, 'unterminated template literal substitution');
  return { tokens, escapes, comments };
}

const isLiteral = (t: Token | undefined): t is Token => t !== undefined && (t.kind === 'string' || t.kind === 'template');
const isPunct = (t: Token | undefined, p: string): boolean => t !== undefined && t.kind === 'punct' && t.text === p;
const isName = (t: Token | undefined, n?: string): boolean => t !== undefined && t.kind === 'name' && (n === undefined || t.text === n);

/** Every module a TypeScript file names (import, export … from, import(), require()), and every way it loads one unnamed. */
export function scanModuleSyntax(text: string): { imports: ScannedImport[]; escapes: ScannedEscape[] } {
  const { tokens, escapes } = tokenize(text);
  const imports: ScannedImport[] = [];
  const consumedRequires = new Set<number>();
  /**
   * The index of the specifier of an import or export clause starting at k (`x`, `x, {…}`, `x, * as ns`, `{…}`,
   * `* as ns`, `*`, each followed by `from '…'`), or -1 when what starts there is no such clause.
   */
  const specAfterClause = (k: number): number => {
    const t = tokens[k];
    if (isName(t) && !(isName(t, 'from') && tokens[k + 1]?.kind === 'string')) {
      k++;
      if (isPunct(tokens[k], ',')) k++;
    }
    if (isPunct(tokens[k], '{')) {
      k++;
      while (isName(tokens[k]) || tokens[k]?.kind === 'string' || isPunct(tokens[k], ',')) k++;
      if (!isPunct(tokens[k], '}')) return -1;
      k++;
    } else if (isPunct(tokens[k], '*')) {
      k++;
      if (isName(tokens[k], 'as') && isName(tokens[k + 1])) k += 2;
    }
    return isName(tokens[k], 'from') && tokens[k + 1]?.kind === 'string' ? k + 1 : -1;
  };
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i] as Token;
    if (t.kind !== 'name') continue;
    const prev = tokens[i - 1];
    const after = tokens[i + 1];
    // obj.import, obj?.require: properties, not the keyword or the function.
    if (isPunct(prev, '.')) continue;
    if (t.text === 'import') {
      if (isPunct(after, '(')) {
        const arg = tokens[i + 2];
        if (isLiteral(arg) && (isPunct(tokens[i + 3], ')') || isPunct(tokens[i + 3], ',')))
          imports.push({ spec: arg.text, kind: 'dynamic-import', typeOnly: false, line: t.line });
        else escapes.push({ what: 'import() of a specifier that is not a string literal', line: t.line });
      } else if (after?.kind === 'string') {
        imports.push({ spec: after.text, kind: 'import-statement', typeOnly: false, line: t.line });
      } else if (isName(after) || isPunct(after, '{') || isPunct(after, '*')) {
        // `import type X …` is type-only, but `import type from '…'`, `import type, {…}` and `import type = …` bind a value named type.
        const third = tokens[i + 2];
        const typeOnly =
          isName(after, 'type') &&
          !(isName(third, 'from') && tokens[i + 3]?.kind === 'string') &&
          !isPunct(third, ',') &&
          !isPunct(third, '=');
        const clause = typeOnly ? i + 2 : i + 1;
        const eq = isName(tokens[clause]) && isPunct(tokens[clause + 1], '=') ? clause + 1 : -1;
        if (eq >= 0) {
          // import X = require('…')  (a namespace alias `import X = A.B` names no module)
          const r = tokens[eq + 1];
          const arg = tokens[eq + 3];
          if (isName(r, 'require') && isPunct(tokens[eq + 2], '(') && isLiteral(arg)) {
            imports.push({ spec: arg.text, kind: 'require-call', typeOnly, line: t.line });
            consumedRequires.add(eq + 1);
          }
        } else {
          const spec = specAfterClause(clause);
          if (spec >= 0) imports.push({ spec: (tokens[spec] as Token).text, kind: 'import-statement', typeOnly, line: t.line });
        }
      }
    } else if (t.text === 'export') {
      const typeOnly = isName(after, 'type') && (isPunct(tokens[i + 2], '{') || isPunct(tokens[i + 2], '*'));
      const clause = typeOnly ? i + 2 : i + 1;
      if (isPunct(tokens[clause], '{') || isPunct(tokens[clause], '*')) {
        const spec = specAfterClause(clause);
        if (spec >= 0) imports.push({ spec: (tokens[spec] as Token).text, kind: 'import-statement', typeOnly, line: t.line });
      }
    } else if (t.text === 'require' && isPunct(after, '(') && !consumedRequires.has(i) && !isName(prev, 'function')) {
      const arg = tokens[i + 2];
      if (isLiteral(arg) && isPunct(tokens[i + 3], ')'))
        imports.push({ spec: arg.text, kind: 'require-call', typeOnly: false, line: t.line });
      else escapes.push({ what: 'require() of a specifier that is not a string literal', line: t.line });
    } else if (t.text === 'createRequire') {
      escapes.push({ what: 'createRequire (a require made by it loads modules no import names)', line: t.line });
    }
  }
  return { imports, escapes };
}
