// Issue 14, "The log tells the story", through the built executable: every
// `log` row says what the call was in one line (the shell command, the file an
// edit tool wrote, the MCP tool's main argument), the columns line up whatever
// the statuses and tool names, `failed` is red on a colour terminal and no row
// holds an escape code when piped; `sessions` has a header over aligned columns.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import path from 'node:path';
import { cliProcess, tempRepo, type TempRepo } from '../support/helpers.js';
import { runHook } from '../../src/runtime/hook.js';

/** One hook call as the agent makes it (hooks written by `init`: the agent's session id maps to an agentsnap session). */
async function hook(repo: TempRepo, agent: string, event: string, payload: Record<string, unknown>): Promise<string> {
  const res = await runHook({
    agent,
    event,
    input: JSON.stringify({ session_id: `${agent}-chat-1`, cwd: repo.dir, ...payload }),
    env: repo.env,
    cwd: repo.dir,
  });
  assert.is(res.warning, null, `${agent} ${event}`);
  return res.session as string;
}

/** A Claude Code session: Bash, Write (absolute path), Edit, MultiEdit, an MCP tool, a failed Bash, an interrupted Write. */
async function claudeSession(repo: TempRepo): Promise<string> {
  const call = async (
    id: string,
    tool: string,
    input: unknown,
    change: () => void,
    end: 'PostToolUse' | 'PostToolUseFailure' | null = 'PostToolUse',
  ) => {
    await hook(repo, 'claude', 'PreToolUse', { tool_name: tool, tool_input: input, tool_use_id: id });
    change();
    if (end)
      await hook(repo, 'claude', end, {
        tool_name: tool,
        tool_input: input,
        tool_use_id: id,
        tool_response: 'ok',
        ...(end === 'PostToolUseFailure' ? { error: 'Exit code 1' } : {}),
      });
  };
  await call('t1', 'Bash', { command: 'npm test -- --grep "log rows"', description: 'run the tests' }, () => repo.write('out.log', 'ok\n'));
  await call('t2', 'Write', { file_path: path.join(repo.dir, 'src', 'app.ts'), content: 'export {};\n' }, () =>
    repo.write('src/app.ts', 'export {};\n'),
  );
  await call('t3', 'Edit', { file_path: path.join(repo.dir, 'a.txt'), old_string: 'a', new_string: 'b' }, () => repo.write('a.txt', 'b\n'));
  await call('t4', 'MultiEdit', { file_path: path.join(repo.dir, 'src', 'app.ts'), edits: [] }, () =>
    repo.write('src/app.ts', 'export const x = 1;\n'),
  );
  await call('t5', 'mcp__github__create_issue', { owner: 'me', repo: 'app', title: 'Log rows say nothing' }, () => {});
  await call('t6', 'Bash', { command: 'rm -rf build &&\n  make all' }, () => repo.write('build.txt', 'x\n'), 'PostToolUseFailure');
  await call('t7', 'Write', { file_path: path.join(repo.dir, 'half.txt'), content: 'half' }, () => repo.write('half.txt', 'half'), null);
  return hook(repo, 'claude', 'SessionEnd', { reason: 'exit' });
}

async function log(repo: TempRepo, args: string[], env: Record<string, string> = {}): Promise<string[]> {
  const r = await cliProcess(repo, ['log', ...args], { env });
  assert.is(r.code, 0, r.stderr);
  return r.stdout.split('\n').filter((l) => /^\s+\d+\s/.test(l));
}

test('log: each row says what the call was (command, file relative to the worktree, MCP argument), columns aligned, failed and interrupted included', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const id = await claudeSession(repo);
    const rows = await log(repo, ['--session', id]);
    assert.is(rows.length, 7, rows.join('\n'));
    assert.match(rows[0]!, /\s1\s+Bash\s+done\s.*\$ npm test -- --grep "log rows"$/);
    assert.match(rows[1]!, /\s2\s+Write\s+done\s.*\ssrc\/app\.ts$/);
    assert.match(rows[2]!, /\s3\s+Edit\s+done\s.*\sa\.txt$/);
    assert.match(rows[3]!, /\s4\s+MultiEdit\s+done\s.*\ssrc\/app\.ts$/);
    assert.match(rows[4]!, /\s5\s+mcp__github__create_issue\s+done\s.*\stitle: Log rows say nothing$/);
    assert.match(rows[5]!, /\s6\s+Bash\s+failed\s.*\$ rm -rf build && make all$/, 'a script on one line');
    assert.match(rows[6]!, /\s7\s+Write\s+interrupted\s.*\shalf\.txt$/);
    assert.not.match(rows.join('\n'), repo.dir, 'paths relative to the worktree');
    // The columns line up whatever the tool's and the status's width.
    for (const column of [/\d\d:\d\d:\d\d/, /\d+ files? \+/]) {
      const at = rows.map((r) => r.search(column));
      assert.ok(
        at.every((x) => x === at[0] && x > 0),
        `${column} at ${at.join(',')}:\n${rows.join('\n')}`,
      );
    }
    // --json carries the same line.
    const j = JSON.parse((await cliProcess(repo, ['log', '--session', id, '--json'])).stdout) as { step: number; what: string | null }[];
    assert.is(j[0]?.what, '$ npm test -- --grep "log rows"');
    assert.is(j[1]?.what, 'src/app.ts');
    // show says it too, whole, in its first line.
    const shown = await cliProcess(repo, ['show', '6', '--session', id]);
    assert.match(shown.stdout.split('\n')[0] ?? '', /^step 6\s+Bash\s+failed\s+\S+\s+\$ rm -rf build && make all$/);
  } finally {
    repo.cleanup();
  }
});

test('log: the description is cut to the row width ($COLUMNS when piped); failed in red only on a colour terminal', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const id = await claudeSession(repo);
    await hook(repo, 'claude', 'PreToolUse', {
      session_id: 'claude-chat-2',
      tool_name: 'Bash',
      tool_input: { command: `echo ${'x'.repeat(300)}` },
      tool_use_id: 'long',
    });
    await hook(repo, 'claude', 'PostToolUse', {
      session_id: 'claude-chat-2',
      tool_name: 'Bash',
      tool_input: {},
      tool_use_id: 'long',
      tool_response: '',
    });
    const narrow = await log(repo, [], { COLUMNS: '70' });
    const long = narrow.find((r) => r.includes('echo xxx'));
    assert.ok(long && long.length <= 70 && long.endsWith('…'), `cut to 70: ${long}`);
    const plain = await cliProcess(repo, ['log', '--session', id], { env: { NO_COLOR: '', FORCE_COLOR: '0' } });
    assert.not.match(plain.stdout, /\x1b\[/, 'no colour when piped');
    const colour = await cliProcess(repo, ['log', '--session', id], { env: { NO_COLOR: '', FORCE_COLOR: '1' } });
    assert.match(colour.stdout, /\x1b\[31mfailed\x1b\[39m/, 'failed in red');
    const noColor = await cliProcess(repo, ['log', '--session', id], { env: { NO_COLOR: '1', FORCE_COLOR: '1' } });
    assert.not.match(noColor.stdout, /\x1b\[/, 'NO_COLOR wins');
  } finally {
    repo.cleanup();
  }
});

test('log: Codex shell and apply_patch calls, Gemini CLI tools, a session of `snap` alone', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const codexCall = async (id: string, tool: string, input: unknown) => {
      await hook(repo, 'codex', 'PreToolUse', { tool_name: tool, tool_input: input, tool_use_id: id });
      await hook(repo, 'codex', 'PostToolUse', { tool_name: tool, tool_input: input, tool_use_id: id, tool_response: '' });
    };
    await codexCall('c1', 'Bash', { command: 'cargo build' });
    const patch = `*** Begin Patch\n*** Update File: ${path.join(repo.dir, 'a.txt')}\n@@\n-a\n+b\n*** Add File: notes/new.md\n+hi\n*** End Patch\n`;
    await codexCall('c2', 'apply_patch', { command: patch });
    const codexRows = await log(repo, []);
    assert.match(codexRows[0]!, /Bash\s+done\s.*\$ cargo build$/);
    assert.match(codexRows[1]!, /apply_patch\s+done\s.*\sa\.txt, notes\/new\.md$/);

    const geminiCall = async (tool: string, input: unknown) => {
      await hook(repo, 'gemini', 'BeforeTool', { tool_name: tool, tool_input: input });
      await hook(repo, 'gemini', 'AfterTool', { tool_name: tool, tool_input: input, tool_response: { llmContent: 'ok' } });
    };
    await geminiCall('run_shell_command', { command: 'ls -la' });
    await geminiCall('write_file', { file_path: path.join(repo.dir, 'hello.txt'), content: 'hi\n' });
    await geminiCall('replace', { file_path: 'a.txt', old_string: 'a', new_string: 'c' });
    await geminiCall('read_file', { absolute_path: path.join(repo.dir, 'a.txt') });
    const geminiRows = await log(repo, []);
    assert.match(geminiRows[0]!, /run_shell_command\s+done\s.*\$ ls -la$/);
    assert.match(geminiRows[1]!, /write_file\s+done\s.*\shello\.txt$/);
    assert.match(geminiRows[2]!, /replace\s+done\s.*\sa\.txt$/);
    assert.match(geminiRows[3]!, /read_file\s+done\s.*\sa\.txt$/);
  } finally {
    repo.cleanup();
  }
});

test('sessions: a header row over aligned columns, the disk use under its label', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    await claudeSession(repo);
    assert.is((await cliProcess(repo, ['snap', '-m', 'mine'])).code, 0);
    const r = await cliProcess(repo, ['sessions']);
    assert.is(r.code, 0, r.stderr);
    const lines = r.stdout.trimEnd().split('\n');
    assert.is(lines.length, 3, r.stdout);
    assert.match(lines[0]!, /^SESSION\s+NAME\s+STATUS\s+STEPS\s+FILES CHANGED\s+DISK USE\s+STARTED\s+AGENT\s+WORKTREE$/);
    const at = (line: string, re: RegExp) => line.search(re);
    // Status and the start time begin under their labels; the numbers end under theirs.
    for (const line of lines.slice(1)) {
      assert.is(at(line, /\b(running|ended)\b/), lines[0]!.indexOf('STATUS'), line);
      assert.is(at(line, /\d{4}-\d\d-\d\d \d\d:\d\d\b/), lines[0]!.indexOf('STARTED'), line);
      assert.match(line.slice(0, lines[0]!.indexOf('DISK USE') + 'DISK USE'.length), /\d+(\.\d)? (B|KiB|MiB)$/, line);
    }
    assert.match(r.stdout, /\bclaude\b/);
    assert.match(r.stdout, /main worktree/);
  } finally {
    repo.cleanup();
  }
});

/** One call of a Claude Code conversation `chat` (each conversation is its own agentsnap session under init's hooks). */
async function chatCall(
  repo: TempRepo,
  chat: string,
  id: string,
  tool: string,
  input: unknown,
  change: () => void,
  response: unknown = 'ok',
): Promise<string> {
  const session = await hook(repo, 'claude', 'PreToolUse', { session_id: chat, tool_name: tool, tool_input: input, tool_use_id: id });
  change();
  await hook(repo, 'claude', 'PostToolUse', {
    session_id: chat,
    tool_name: tool,
    tool_input: input,
    tool_use_id: id,
    tool_response: response,
  });
  return session;
}

test('log --grep TEXT: steps whose input or output holds TEXT (case-insensitive, plain text, as journaled: redacted); --all-sessions labels each row', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const first = await chatCall(repo, 'chat-1', 'a1', 'Bash', { command: 'rm -rf build' }, () => repo.write('x.txt', '1\n'));
    await chatCall(
      repo,
      'chat-1',
      'a2',
      'Bash',
      { command: 'curl -H "Authorization: Bearer ghp_16C7e42F292c6912E7710c838347Ae178B4a" api' },
      () => {},
    );
    const second = await chatCall(repo, 'chat-2', 'b1', 'Bash', { command: 'echo RM -RF is not run here' }, () => {});
    await chatCall(repo, 'chat-2', 'b2', 'Bash', { command: 'cat notes.txt' }, () => {}, {
      stdout: 'the Needle is in the output',
      stderr: '',
    });
    await chatCall(repo, 'chat-2', 'b3', 'Bash', { command: 'ls a.* (x)' }, () => {});
    assert.ok(first !== second, 'two sessions');
    const rows = async (args: string[]) => {
      const r = await cliProcess(repo, ['log', ...args]);
      assert.is(r.code, 0, r.stderr);
      return r.stdout.split('\n').filter((l) => /\d\d:\d\d:\d\d/.test(l));
    };
    // The default session (the most recent), case-insensitive.
    const mine = await rows(['--grep', 'rm -rf']);
    assert.is(mine.length, 1, mine.join('\n'));
    assert.match(mine[0]!, /RM -RF is not run here/);
    // Every session: each row starts with its session.
    const all = await rows(['--all-sessions', '--grep', 'rm -rf']);
    assert.is(all.length, 2, all.join('\n'));
    assert.match(all[0]!, new RegExp(`^${first}\\s+1\\s+Bash\\s.*\\$ rm -rf build$`));
    assert.match(all[1]!, new RegExp(`^${second}\\s+1\\s+Bash\\s.*RM -RF`));
    // Outputs are searched too; TEXT is plain text, not a pattern.
    assert.match((await rows(['--grep', 'NEEDLE']))[0] ?? '', /cat notes\.txt/);
    assert.is((await rows(['--grep', 'a.* (x)'])).length, 1);
    assert.is((await rows(['--grep', 'a.*x'])).length, 0);
    // What was redacted before it was journaled cannot be found.
    assert.is((await rows(['--all-sessions', '--grep', 'ghp_16C7e42F292c6912E7710c838347Ae178B4a'])).length, 0);
    assert.is((await rows(['--all-sessions', '--grep', 'Authorization'])).length, 1);
    // --json names each step's session.
    const j = JSON.parse((await cliProcess(repo, ['log', '--all-sessions', '--grep', 'rm -rf', '--json'])).stdout) as {
      session: string;
      step: number;
    }[];
    assert.equal(
      j.map((x) => [x.session, x.step]),
      [
        [first, 1],
        [second, 1],
      ],
    );
    // Nothing matches: said on stderr, exit 0.
    const none = await cliProcess(repo, ['log', '--all-sessions', '--grep', 'no such text']);
    assert.is(none.code, 0);
    assert.match(none.stderr, /no step matches/);
    // --all-sessions and --session contradict each other.
    const both = await cliProcess(repo, ['log', '--all-sessions', '--session', first]);
    assert.is(both.code, 2, both.stderr);
    assert.match(both.stderr, /--all-sessions/);
  } finally {
    repo.cleanup();
  }
});

test('log --all-sessions -- <path>: who last wrote it is the last row (time order across sessions); --last N of them all', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const first = await chatCall(repo, 'chat-1', 'a1', 'Write', { file_path: path.join(repo.dir, 'src', 'app.ts') }, () =>
      repo.write('src/app.ts', 'one\n'),
    );
    await chatCall(repo, 'chat-1', 'a2', 'Bash', { command: 'touch other.txt' }, () => repo.write('other.txt', ''));
    const second = await chatCall(repo, 'chat-2', 'b1', 'Edit', { file_path: path.join(repo.dir, 'src', 'app.ts') }, () =>
      repo.write('src/app.ts', 'two\n'),
    );
    await chatCall(repo, 'chat-1', 'a3', 'Bash', { command: 'sed -i s/two/three/ src/app.ts' }, () => repo.write('src/app.ts', 'three\n'));
    const r = await cliProcess(repo, ['log', '--all-sessions', '--', 'src/app.ts']);
    assert.is(r.code, 0, r.stderr);
    const rows = r.stdout.split('\n').filter((l) => /\d\d:\d\d:\d\d/.test(l));
    assert.equal(
      rows.map((l) => l.split(/\s+/).slice(0, 3).join(' ')),
      [`${first} 1 Write`, `${second} 1 Edit`, `${first} 3 Bash`],
    );
    const last = await cliProcess(repo, ['log', '--all-sessions', '--last', '1', '--json', '--', 'src/app.ts']);
    assert.equal(
      (JSON.parse(last.stdout) as { session: string; step: number }[]).map((x) => [x.session, x.step]),
      [[first, 3]],
    );
    // From a subdirectory, the path is relative to it, as everywhere.
    const sub = await cliProcess(repo, ['log', '--all-sessions', '--json', '--', 'app.ts'], { cwd: path.join(repo.dir, 'src') });
    assert.is((JSON.parse(sub.stdout) as unknown[]).length, 3, sub.stderr);
  } finally {
    repo.cleanup();
  }
});

test.run();
