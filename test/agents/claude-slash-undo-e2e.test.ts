// In-agent undo with the real Claude Code binary: `init claude` installs
// /agentsnap-undo; invoked in a later run of the same wrapped session, Claude
// Code expands it into the prompt and its Bash tool runs `agentsnap undo`.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import path from 'node:path';
import { agentsnapOnPath, cliProcess, tempRepo } from '../support/helpers.js';
import { startMessagesStub } from '../support/messages-stub.js';
import { claudeBinary } from '../support/claude-code.js';

const claude = claudeBinary();

test('claude: /agentsnap-undo 2 runs agentsnap undo 2 through Bash in the wrapped session', async () => {
  if (!claude) return;
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  const d = (rel: string) => path.join(repo.dir, rel);
  const pathWithAgentsnap = agentsnapOnPath(repo.base);
  const env = {
    IS_SANDBOX: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    ANTHROPIC_API_KEY: 'sk-ant-api03-e2e-test-key-not-real',
    PATH: pathWithAgentsnap,
  };
  const first = await startMessagesStub([
    { tools: [{ name: 'Write', input: { file_path: d('hello.txt'), content: 'hello\n' } }] },
    { tools: [{ name: 'Edit', input: { file_path: d('a.txt'), old_string: 'one', new_string: 'two' } }] },
    { text: 'Done.' },
  ]);
  const second = await startMessagesStub([
    { tools: [{ name: 'Bash', input: { command: 'agentsnap undo 2', description: 'undo step 2' } }] },
    { text: 'Undone.' },
  ]);
  try {
    const init = await cliProcess(repo, ['init', 'claude'], { env });
    assert.is(init.code, 0, init.stderr);
    const run1 = await cliProcess(
      repo,
      ['wrap', '--session', 'work', '--', claude, '-p', 'Make the changes.', '--dangerously-skip-permissions'],
      {
        env: { ...env, ANTHROPIC_BASE_URL: first.url },
        timeoutMs: 120_000,
      },
    );
    assert.is(run1.code, 0, run1.stderr);
    assert.is(repo.read('a.txt').toString(), 'two\n');
    const run2 = await cliProcess(
      repo,
      ['wrap', '--session', 'work', '--', claude, '-p', '/agentsnap-undo 2', '--dangerously-skip-permissions'],
      {
        env: { ...env, ANTHROPIC_BASE_URL: second.url },
        timeoutMs: 120_000,
      },
    );
    assert.is(run2.code, 0, run2.stderr);
    // The command reached the model expanded, with its argument.
    const prompt = JSON.stringify(second.requests[0]?.messages ?? []);
    assert.match(prompt, 'agentsnap undo 2');
    assert.match(run2.stdout, 'Undone.');
    // And the Bash call really undid step 2 (the Edit), keeping step 1 (the Write).
    assert.is(repo.read('a.txt').toString(), 'one\n');
    assert.is(repo.read('hello.txt').toString(), 'hello\n');
    const log = JSON.parse((await cliProcess(repo, ['log', '--session', 'work', '--json'])).stdout) as { step: number; tool: string }[];
    assert.equal(
      log.slice(0, 2).map((s) => s.tool),
      ['Write', 'Edit'],
    );
    assert.ok(
      log.some((s) => s.tool === 'Bash'),
      'the Bash call that ran the undo is a step of its own',
    );
  } finally {
    await first.close();
    await second.close();
    repo.cleanup();
  }
});

test.run();
