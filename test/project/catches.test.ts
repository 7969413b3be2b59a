// Issue 29, item 12: no failure is swallowed without a reason. A server's warm-up snapshot failed on every fresh
// repository and nobody saw it, because a bare `catch {}` took it. The rule, checked on every .ts file under src/
// and every bin/*.js:
//   Each `catch` clause — `try … catch`, and a promise's `.catch(fn)` where fn is a function written there — either
//   (a) names its caught error in its body (`e.code`, `throw e`, `e instanceof …`, `f(e)`: inspected, rethrown or
//       passed on), or
//   (b) throws (its body is a single `throw …`: the failure goes on, as another error), or
//   (c) carries a comment inside its body or on its `catch` line saying why swallowing is right.
// A `.catch(handler)` that passes the error to a named function is (a). Text is read by the token scanner of the
// layering test (test/support/module-syntax.ts): a `catch` in a string, template, regex or comment is none, and a
// comment in a string is no reason.
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROOT } from '../support/helpers.js';
import { tokenize, type Token } from '../support/module-syntax.js';

export interface SwallowingCatch {
  line: number;
  what: string;
}

const isPunct = (t: Token | undefined, p: string): boolean => t !== undefined && t.kind === 'punct' && t.text === p;
const isName = (t: Token | undefined, n?: string): boolean => t !== undefined && t.kind === 'name' && (n === undefined || t.text === n);

/** The index of the token that closes the bracket opened at `open` (`(`, `{` or `[`). */
function closing(tokens: Token[], open: number): number {
  const pairs: Record<string, string> = { '(': ')', '{': '}', '[': ']' };
  const stack: string[] = [];
  for (let k = open; k < tokens.length; k++) {
    const t = tokens[k] as Token;
    if (t.kind !== 'punct') continue;
    if (t.text in pairs) stack.push(pairs[t.text] as string);
    else if (t.text === ')' || t.text === '}' || t.text === ']') {
      if (stack.pop() !== t.text) throw new Error(`line ${t.line}: unbalanced '${t.text}'`);
      if (stack.length === 0) return k;
    }
  }
  throw new Error(`line ${(tokens[open] as Token).line}: unclosed '${(tokens[open] as Token).text}'`);
}

/** The names a parameter list (tokens from..to, exclusive) binds: a name not after `:` (a type) or `.`. */
function boundNames(tokens: Token[], from: number, to: number): string[] {
  const names: string[] = [];
  for (let k = from; k < to; k++) {
    const t = tokens[k] as Token;
    if (!isName(t)) continue;
    const prev = tokens[k - 1];
    if (isPunct(prev, ':') || isPunct(prev, '.')) continue;
    names.push(t.text);
  }
  return names;
}

/** Whether any of `names` is read in tokens from..to (exclusive): as a name, not as a property after `.`. */
function uses(tokens: Token[], names: string[], from: number, to: number): boolean {
  for (let k = from; k < to; k++) {
    const t = tokens[k] as Token;
    if (isName(t) && names.includes(t.text) && !isPunct(tokens[k - 1], '.')) return true;
  }
  return false;
}

interface CatchClause {
  line: number;
  /** The caught error's names (none for `catch {` or `.catch(() => …)`). */
  binding: string[];
  /** The body's tokens: from (inclusive) to (exclusive). */
  from: number;
  to: number;
  throws: boolean;
  promise: boolean;
}

/** Every `catch` clause of a token list: try/catch, and `.catch(fn)` with fn a function written there. */
function catchClauses(tokens: Token[]): CatchClause[] {
  const clauses: CatchClause[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i] as Token;
    if (!isName(t, 'catch')) continue;
    if (isPunct(tokens[i - 1], '.')) {
      if (!isPunct(tokens[i + 1], '(')) continue;
      const end = closing(tokens, i + 1);
      let k = i + 2;
      if (isName(tokens[k], 'async')) k++;
      let binding: string[];
      if (isName(tokens[k], 'function')) {
        k++;
        if (isName(tokens[k])) k++;
        if (!isPunct(tokens[k], '(')) continue;
        const close = closing(tokens, k);
        binding = boundNames(tokens, k + 1, close);
        k = close + 1;
      } else if (isPunct(tokens[k], '(')) {
        const close = closing(tokens, k);
        if (!isArrow(tokens, close + 1)) continue;
        binding = boundNames(tokens, k + 1, close);
        k = close + 3;
      } else if (isName(tokens[k]) && isArrow(tokens, k + 1)) {
        binding = [(tokens[k] as Token).text];
        k += 3;
      } else continue; // a handler named elsewhere gets the error: (a)
      // An arrow's body is an expression or a block: either way, everything up to the closing parenthesis.
      const block = isPunct(tokens[k], '{');
      const throws = isName(tokens[block ? k + 1 : k], 'throw') && singleStatement(tokens, block ? k + 1 : k, block ? end - 1 : end);
      clauses.push({ line: t.line, binding, from: k, to: end, throws, promise: true });
      continue;
    }
    let k = i + 1;
    let binding: string[] = [];
    if (isPunct(tokens[k], '(')) {
      const close = closing(tokens, k);
      binding = boundNames(tokens, k + 1, close);
      k = close + 1;
    }
    if (!isPunct(tokens[k], '{')) continue; // `catch` as a plain name
    const end = closing(tokens, k);
    clauses.push({
      line: t.line,
      binding,
      from: k + 1,
      to: end,
      throws: isName(tokens[k + 1], 'throw') && singleStatement(tokens, k + 1, end),
      promise: false,
    });
  }
  return clauses;
}

const isArrow = (tokens: Token[], k: number): boolean => isPunct(tokens[k], '=') && isPunct(tokens[k + 1], '>');

/** Whether tokens from..to (exclusive) hold one statement: no `;` at their own bracket depth but a last one. */
function singleStatement(tokens: Token[], from: number, to: number): boolean {
  let depth = 0;
  for (let m = from; m < to; m++) {
    const u = tokens[m] as Token;
    if (u.kind !== 'punct') continue;
    if (u.text === '(' || u.text === '{' || u.text === '[') depth++;
    else if (u.text === ')' || u.text === '}' || u.text === ']') depth--;
    else if (u.text === ';' && depth === 0 && m !== to - 1) return false;
  }
  return true;
}

/** Every catch clause of one file's text that breaks the rule in the header. */
export function swallowingCatches(text: string): SwallowingCatch[] {
  const { tokens, comments } = tokenize(text);
  const clauses = catchClauses(tokens);
  // A comment belongs to the innermost clause whose body holds it: an inner catch's reason is not the outer one's.
  const owner = (before: number): CatchClause | undefined => {
    let best: CatchClause | undefined;
    for (const c of clauses) if (before > c.from - 1 && before <= c.to && (!best || c.from > best.from)) best = c;
    return best;
  };
  const found: SwallowingCatch[] = [];
  for (const c of clauses) {
    if (uses(tokens, c.binding, c.from, c.to) || c.throws) continue;
    if (comments.some((m) => m.line === c.line || owner(m.before) === c)) continue;
    const what = c.promise
      ? '.catch(…) ignores the error'
      : c.binding.length > 0
        ? `catch (${c.binding.join(', ')}) never looks at the error`
        : 'catch without a reason';
    found.push({ line: c.line, what });
  }
  return found;
}

/** The files the rule covers: every .ts under src/ and every bin/*.js, relative to the root. */
function coveredFiles(): string[] {
  const src = fs
    .readdirSync(path.join(ROOT, 'src'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => `src/${f.split(path.sep).join('/')}`);
  const bin = fs
    .readdirSync(path.join(ROOT, 'bin'))
    .filter((f) => f.endsWith('.js'))
    .map((f) => `bin/${f}`);
  return [...src, ...bin].sort();
}

test('catches: every catch clause in src/ and bin/ handles a named condition, passes the error on, or says why it swallows', () => {
  const files = coveredFiles();
  assert.ok(
    files.length > 100 && files.includes('src/base/lock.ts') && files.includes('bin/wrap-client.js'),
    `the scan found ${files.length} files`,
  );
  const sites: string[] = [];
  for (const f of files)
    for (const c of swallowingCatches(fs.readFileSync(path.join(ROOT, f), 'utf8'))) sites.push(`${f}:${c.line}: ${c.what}`);
  assert.equal(
    sites,
    [],
    `${sites.length} catch clause(s) swallow a failure without a reason (name the condition and rethrow the rest, let it reach the user or doctor, or say why in a comment):\n  ${sites.join('\n  ')}`,
  );
});

// ---- the rule itself, on planted text ----

const lines = (text: string): number[] => swallowingCatches(text).map((c) => c.line);

test('catches: a bare catch, an unused binding and a silent .catch are reported, each at its line', () => {
  const text = [
    'try { f(); } catch {}', // 1
    'try { f(); } catch (e) { return null; }', // 2
    'p.catch(() => {});', // 3
    'p.catch((e) => undefined);', // 4
    'p.catch(function () { return 0; });', // 5
    'p.catch(async (_e: unknown) => null);', // 6
    'p.catch(e => null);', // 7
    'try { f(); } catch { if (x) throw new Error("x"); return 1; }', // 8: throws only sometimes
  ].join('\n');
  assert.equal(lines(text), [1, 2, 3, 4, 5, 6, 7, 8]);
});

test('catches: a named condition, a rethrow, a handler, a throw or a comment is a reason', () => {
  const text = [
    "try { f(); } catch (e) { if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e; }",
    'try { f(); } catch (e) { return e instanceof TypeError; }',
    'try { f(); } catch (err: unknown) { report(err); }',
    'try { f(); } catch { throw errors.invalidArgument(`bad ${x}`, { hint: "y" }); }',
    'try { f(); } catch {',
    '  /* gone meanwhile */',
    '}',
    'try { f(); } catch { // best effort',
    '}',
    'p.catch(reject);',
    'p.catch((e) => done(e));',
    'p.catch(() => undefined); // the caller polls',
    'p.catch(() => {',
    '  // nothing to do: the next run retries',
    '});',
    'p.catch(() => { throw new Error("x"); });',
    'p.catch(() => 0).then(() => {',
    '  // not a reason for the catch above',
    '});',
  ].join('\n');
  assert.equal(lines(text), [17]);
});

test('catches: a catch in a string, template, regex or comment is none, and a comment in a string is no reason', () => {
  const text = [
    "const a = 'try {} catch {}';",
    'const b = `${"x"} catch {} ${`catch {}`}`;',
    'const c = /catch \\{\\}/;',
    '// try {} catch {}',
    '/* p.catch(() => {}) */',
    'try { f(); } catch { g("// not a comment"); }', // 6
    'obj.catch; const catch_ = 1;',
  ].join('\n');
  assert.equal(lines(text), [6]);
});

test('catches: the rule reads the outer catch and the inner one apart', () => {
  const text = [
    'try {', // 1
    '  f();',
    '} catch (e) {', // 3
    '  try { g(); } catch { /* inner: fine */ }',
    '}',
    'try { f(); } catch (e) {', // 6
    '  try { g(e); } catch {}', // 7
    '}',
  ].join('\n');
  assert.equal(lines(text), [3, 7]);
});

test.run();
