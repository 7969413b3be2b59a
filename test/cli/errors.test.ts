// Error codes are a closed list (ErrorCode): each stable code keeps its
// documented exit code, and an error that crosses a bundle keeps its code only
// when it is one of them.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { AgentsnapError, ExitCode, errors, isAgentsnapError, isErrorCode } from '../../src/base/errors.js';
import { sameError } from '../../src/cli/context.js';

/** Every factory's code and exit code, as docs/reference.md "Exit codes" describes them: none may change. */
const DOCUMENTED: Record<keyof typeof errors, [string, number]> = {
  notARepository: ['NotARepository', 1],
  bareRepository: ['BareRepository', 1],
  needsGitRepository: ['NeedsGitRepository', 1],
  unsupportedPath: ['UnsupportedPath', 1],
  gitMissing: ['GitMissing', 1],
  gitTooOld: ['GitTooOld', 1],
  invalidSessionId: ['InvalidSessionId', 1],
  unknownSession: ['UnknownSession', 1],
  ambiguousSession: ['AmbiguousSession', 1],
  noSession: ['NoSession', 1],
  sessionNotRunning: ['SessionNotRunning', 1],
  stepOutOfRange: ['StepOutOfRange', 1],
  unknownOperation: ['UnknownOperation', 1],
  unknownPath: ['UnknownPath', 1],
  noOpenStep: ['NoOpenStep', 1],
  nothingToDo: ['NothingToDo', 1],
  ambiguousOpenStep: ['AmbiguousOpenStep', 1],
  invalidArgument: ['InvalidArgument', 2],
  invalidConfig: ['InvalidConfig', 1],
  unreadableFile: ['UnreadableFile', 1],
  snapshotFailed: ['SnapshotFailed', 70],
  busy: ['Busy', 5],
  refused: ['Refused', 3],
  unsafeStateFile: ['UnsafeStateFile', 3],
  conflict: ['Conflict', 4],
  worktreeSetupFailed: ['WorktreeSetupFailed', 1],
  noIdentity: ['NoIdentity', 1],
  gitFailed: ['GitFailed', 70],
  diskFull: ['DiskFull', 1],
  internal: ['Internal', 70],
};

test('every error factory keeps its stable code and documented exit code; each code is an ErrorCode', () => {
  assert.equal(Object.keys(errors).sort(), Object.keys(DOCUMENTED).sort());
  for (const [name, make] of Object.entries(errors)) {
    const e = make('m', { hint: 'h', data: { x: 1 } });
    const [code, exit] = DOCUMENTED[name as keyof typeof errors];
    assert.is(e.code, code, name);
    assert.is(e.exitCode, exit, name);
    assert.ok(isErrorCode(e.code), name);
    assert.equal(e.toJSON(), { code, message: 'm', hint: 'h', data: { x: 1 }, exitCode: exit });
  }
  // The CLI's usage error (yargs) is a code of its own.
  assert.ok(isErrorCode('Usage'));
  assert.is(ExitCode.usage, 2);
});

test('isErrorCode: only the stable codes (no prototype name, no near miss, no non-string)', () => {
  for (const x of ['NotARepo', 'busy', 'toString', 'constructor', '__proto__', '', 7, null, undefined, {}])
    assert.not.ok(isErrorCode(x), String(x));
});

test('an AgentsnapError from another bundle keeps its code and exit code only when the code is a stable one', () => {
  // What dist/ui.bundle.js or dist/mcp.bundle.js throws: an AgentsnapError of its own copy of the class.
  const foreign = (code: string, exit: string) =>
    Object.assign(new Error('locked'), { name: 'AgentsnapError', code, exit, hint: 'wait', data: { a: 1 } });
  const busy = sameError(foreign('Busy', 'busy'));
  assert.ok(busy instanceof AgentsnapError);
  assert.is((busy as AgentsnapError).code, 'Busy');
  assert.is((busy as AgentsnapError).exitCode, 5);
  assert.is((busy as AgentsnapError).hint, 'wait');
  // A code no error has is not made one: it stays what it was (the CLI reports it as an internal error).
  const odd = foreign('NotACode', 'busy');
  assert.is(sameError(odd), odd);
  assert.not.ok(isAgentsnapError(sameError(odd)));
  const own = errors.conflict('c');
  assert.is(sameError(own), own);
});

test.run();
