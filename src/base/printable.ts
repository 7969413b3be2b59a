// Recorded text (tool output, commands, file names, prompts, messages, session and branch names) as it is
// shown to a person on a terminal or to a model: every control character escaped, so that no recorded byte
// moves the cursor, clears the screen, sets the window title or writes the clipboard (OSC 52), and no name
// forges a line of its own. One spelling everywhere, JSON's: \n, \r, \t, \u001b, \u009b. `--json` output is
// JSON-escaped by JSON.stringify and needs none of this.

/**
 * The characters never printed as they are: C0 controls, DEL, C1 controls (U+0080–U+009F: a terminal may
 * read U+009B as CSI), the Unicode line and paragraph separators (a line break to some readers), and the
 * bidirectional overrides and isolates (text shown in another order than it is).
 */
const CONTROL_CLASS = '[\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069]';
const CONTROL = new RegExp(CONTROL_CLASS, 'g');
const CONTROL_TEST = new RegExp(CONTROL_CLASS);
/** A CRLF line end (kept by printableText) or one control character. */
const CRLF_OR_CONTROL = new RegExp(`\\r\\n|${CONTROL_CLASS}`, 'g');

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t', '\b': '\\b', '\f': '\\f' };

/** One control character as its escape (`\n`, `\u001b`). */
function escapeOne(c: string): string {
  return NAMED[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/** Whether the text holds a character printableText/printableName would escape. */
export function hasControl(text: string): boolean {
  return CONTROL_TEST.test(text);
}

/**
 * A name (file, tool, session, branch, command) as one printable token: as it is when it holds no control
 * character, else quoted with its controls escaped the way JSON writes them (`"a\nb"`), so it can never end
 * a line or start an escape sequence.
 */
export function printableName(name: string): string {
  return hasControl(name) ? JSON.stringify(name).replace(CONTROL, escapeOne) : name;
}

/** Text on one line: every control character escaped, newlines included, no quotes added. */
export function printableLine(text: string): string {
  return text.replace(CONTROL, escapeOne);
}

/**
 * Text of many lines (a tool's output, a diff, a message): newlines and tabs kept, and a carriage return
 * that ends a line (CRLF); every other control character escaped, a bare carriage return included (it
 * would let a later line overwrite what the reader sees).
 */
export function printableText(text: string): string {
  return text.replace(CRLF_OR_CONTROL, (c) => (c === '\n' || c === '\t' || c === '\r\n' ? c : escapeOne(c)));
}

/**
 * A Markdown code fence around text that the text cannot close: a run of backticks longer than any the text
 * holds (at least three), so no line of the text ends the block early.
 */
export function fenceOf(text: string, info = ''): string {
  let longest = 0;
  for (const run of text.matchAll(/`+/g)) longest = Math.max(longest, run[0].length);
  const ticks = '`'.repeat(Math.max(3, longest + 1));
  return `${ticks}${info}\n${text.replace(/\n$/, '')}\n${ticks}`;
}
