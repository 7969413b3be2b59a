// What a recorded call was (`log`'s description), per agent: each adapter's
// reading of its own tool inputs, and the agent-neutral fallback.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { describeCall } from '../../src/agents/registry.js';
import { commandText, patchPaths } from '../../src/agents/describe.js';

test('Claude Code: Bash command, file tools, MultiEdit, notebooks, searches, MCP main argument', () => {
  assert.equal(describeCall('claude', null, 'Bash', { command: 'ls', description: 'list' }), { kind: 'shell', command: 'ls' });
  for (const tool of ['Write', 'Edit', 'MultiEdit', 'Read'])
    assert.equal(describeCall('claude', null, tool, { file_path: '/w/a.ts' }), { kind: 'paths', paths: ['/w/a.ts'] }, tool);
  assert.equal(describeCall('claude', null, 'NotebookEdit', { notebook_path: 'n.ipynb' }), { kind: 'paths', paths: ['n.ipynb'] });
  assert.equal(describeCall('claude', null, 'Grep', { pattern: 'TODO', path: 'src' }), { kind: 'text', text: 'TODO  in src' });
  assert.equal(describeCall('claude', null, 'mcp__db__query', { query: 'select 1', limit: 5 }), { kind: 'text', text: 'query: select 1' });
  assert.equal(describeCall('claude', null, 'mcp__gh__get', { number: 7 }), { kind: 'text', text: 'number: 7' });
  // A session that names no agent: the step's agent version says whose call it was.
  assert.equal(describeCall(null, 'claude-code 2.1.3', 'Grep', { pattern: 'x' }), { kind: 'text', text: 'x' });
});

test('Codex CLI: shell as Bash, apply_patch names every file of the patch', () => {
  assert.equal(describeCall('codex', null, 'Bash', { command: 'cargo test' }), { kind: 'shell', command: 'cargo test' });
  const patch =
    '*** Begin Patch\n*** Update File: src/a.rs\n@@\n-x\n+y\n*** Move to: src/b.rs\n*** Add File: c.md\n+hi\n*** Delete File: old.txt\n*** End Patch';
  assert.equal(describeCall('codex', null, 'apply_patch', { command: patch }), {
    kind: 'paths',
    paths: ['src/a.rs', 'src/b.rs', 'c.md', 'old.txt'],
  });
  assert.equal(patchPaths('no patch'), []);
  assert.equal(commandText(['bash', '-lc', 'echo hi && ls']), 'echo hi && ls');
  assert.equal(commandText(['rm', '-rf', 'my dir']), "rm -rf 'my dir'");
});

test('Gemini CLI: run_shell_command, write_file, replace, read_file (absolute_path), read_many_files', () => {
  assert.equal(describeCall('gemini', null, 'run_shell_command', { command: 'make' }), { kind: 'shell', command: 'make' });
  assert.equal(describeCall('gemini', null, 'write_file', { file_path: 'a', content: '' }), { kind: 'paths', paths: ['a'] });
  assert.equal(describeCall('gemini', null, 'replace', { file_path: 'b', old_string: '', new_string: '' }), {
    kind: 'paths',
    paths: ['b'],
  });
  assert.equal(describeCall('gemini', null, 'read_file', { absolute_path: '/w/c' }), { kind: 'paths', paths: ['/w/c'] });
  assert.equal(describeCall('gemini', null, 'read_many_files', { paths: ['x', 'y'] }), { kind: 'paths', paths: ['x', 'y'] });
});

test('any other agent: command, cmd, file_path, path, MCP tools; nothing for no input', () => {
  assert.equal(describeCall('generic', null, 'run', { cmd: ['npm', 'test'] }), { kind: 'shell', command: 'npm test' });
  assert.equal(describeCall(null, null, 'save', { path: 'out.txt' }), { kind: 'paths', paths: ['out.txt'] });
  assert.equal(describeCall('generic', null, 'mcp__s__t', { command: 'not a shell' }), { kind: 'text', text: 'command: not a shell' });
  assert.equal(describeCall('generic', null, 'think', 'about it'), { kind: 'text', text: 'about it' });
  assert.is(describeCall('claude', null, 'Bash', null), null);
  assert.is(describeCall('claude', null, 'Bash', undefined), null);
  assert.is(describeCall('generic', null, 'x', { n: [1, 2] }), null);
});

test.run();
