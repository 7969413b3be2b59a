import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { cli, cliProcess, tempRepo } from '../support/helpers.js';

test('replay interleaves the transcript with the steps, up to --until, as Markdown or JSONL', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const start = await cli(repo, ['snap', '--json', '-m', 'before the agent']);
    const id = (JSON.parse(start.stdout) as { session: string }).session;
    const env = { AGENTSNAP_SESSION: id, AGENTSNAP_WORKTREE: repo.dir };
    const transcript = path.join(repo.home, 't.jsonl');
    const lines: unknown[] = [
      {
        type: 'user',
        uuid: 'u1',
        timestamp: '2030-01-01T00:00:00Z',
        message: { role: 'user', content: 'Please fix the greeting and run the tests.' },
      },
      { type: 'assistant', uuid: 'a1', message: { role: 'assistant', content: [{ type: 'text', text: 'I will edit a.txt first.' }] } },
      {
        type: 'assistant',
        uuid: 'a2',
        message: { role: 'assistant', content: [{ type: 'tool_use', id: 'tu1', name: 'Edit', input: { file_path: 'a.txt' } }] },
      },
    ];
    const write = () => fs.writeFileSync(transcript, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
    write();
    const call = async (tid: string, tool: string, input: unknown, change: () => void, post: Record<string, unknown>) => {
      await cliProcess(repo, ['hook', 'claude', 'PreToolUse', '--wrapped'], {
        env,
        input: JSON.stringify({ tool_name: tool, tool_use_id: tid, tool_input: input, transcript_path: transcript }),
      });
      change();
      await cliProcess(repo, ['hook', 'claude', post.error ? 'PostToolUseFailure' : 'PostToolUse', '--wrapped'], {
        env,
        input: JSON.stringify({ tool_name: tool, tool_use_id: tid, ...post }),
      });
    };
    await call('tu1', 'Edit', { file_path: 'a.txt', old_string: 'one', new_string: 'two' }, () => repo.write('a.txt', 'two\n'), {
      tool_response: { ok: true },
    });
    lines.push(
      { type: 'user', uuid: 'u2', message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tu1', content: 'ok' }] } },
      {
        type: 'assistant',
        uuid: 'a3',
        message: {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Now the tests.' },
            { type: 'tool_use', id: 'tu2', name: 'Bash', input: { command: 'npm test' } },
          ],
        },
      },
    );
    write();
    await call('tu2', 'Bash', { command: 'npm test' }, () => repo.write('log.txt', 'fail\n'), { error: 'Exit code 1' });
    const md = await cli(repo, ['replay', '--session', id]);
    assert.is(md.code, 0, md.stderr);
    const order = [
      '# agentsnap session',
      'Step 1: checkpoint',
      'Please fix the greeting',
      'I will edit a.txt first.',
      'Step 2: Edit (done',
      '"new_string": "two"',
      'M `a.txt` (+1 -1)',
      'Now the tests.',
      'Step 3: Bash (failed',
      'Error: Exit code 1',
      'A `log.txt`',
    ];
    let at = -1;
    for (const piece of order) {
      const i = md.stdout.indexOf(piece, at + 1);
      assert.ok(i > at, `"${piece}" missing or out of order in:\n${md.stdout}`);
      at = i;
    }
    const until = await cli(repo, ['replay', '--session', id, '--until', '2', '--format', 'jsonl']);
    const entries = until.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; step?: number });
    assert.equal(
      entries.map((e) => e.type),
      ['session', 'step', 'user', 'assistant', 'step'],
    );
    assert.is(entries.at(-1)?.step, 2);
    const bad = await cli(repo, ['replay', '--session', id, '--until', '9']);
    assert.is(bad.code, 1);
    assert.match(bad.stderr, 'no step 9');
  } finally {
    repo.cleanup();
  }
});

test.run();
