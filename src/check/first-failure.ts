// What a failed check's output says first: shared by `check --each` (the CLI)
// and the page of `agentsnap ui`, which both show the first failure, not the
// runner's closing summary.
import { printableText } from '../base/printable.js';

/** A line that names a failure in the output of common test runners (TAP and node --test, uvu, jest, mocha, pytest). */
const FAILURE_LINE = /^\s*(?:not ok\b|FAIL(?:ED)?\b|[✗✖×●]|\d+\) \S|E {3}|[\w.]*(?:Error|Exception)\b)/;

/** From the output's first failure line on (the failing test's name), else its tail: 8 lines at most, escaped. */
export function firstFailure(output: string): string[] {
  // The check's output is the project's (its test names, its files' text): escaped like every recorded text.
  const lines = printableText(output).split('\n');
  const at = lines.findIndex((l) => FAILURE_LINE.test(l));
  return at === -1 ? lines.slice(-8) : lines.slice(at, at + 8);
}
