// Issue 33 part 2 through `agentsnap mcp`: an undo that moves a lockfile tells the agent, in one line, the
// package manager's command and where to run it (installed dependencies are not restored with the files).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { BIN, step, tempRepo } from '../support/helpers.js';

test('MCP undo (dry run, then the run) names `npm ci` in web/ for the lockfile it moves; an undo of other files says nothing of it', async () => {
  const repo = tempRepo({ files: { 'web/package.json': '{"name":"web"}\n', 'web/package-lock.json': 'v1\n', 'a.txt': 'a\n' } });
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'mcp'],
    cwd: repo.dir,
    env: repo.env as Record<string, string>,
    stderr: 'pipe',
  });
  const client = new Client({ name: 'agentsnap-test', version: '1.0.0' });
  try {
    await step(repo, () => repo.write('web/package-lock.json', 'v2\n'));
    await step(repo, () => repo.write('a.txt', 'b\n'), 'Edit');
    await client.connect(transport);
    const call = async (args: Record<string, unknown>) => {
      const res = (await client.callTool({ name: 'undo', arguments: args })) as { content: { text: string }[]; isError?: boolean };
      assert.not.ok(res.isError, res.content[0]?.text);
      return res.content.map((c) => c.text).join('\n');
    };
    const other = await call({ step: 2 });
    assert.not.match(other, /Dependency/, other);
    const dry = await call({ step: 1 });
    assert.ok(
      dry.includes(
        'Dependency manifests or lockfiles would change; installed dependencies are not restored with the files: afterwards run `npm ci` in web/ (for web/package-lock.json) so they match.\n',
      ),
      dry,
    );
    const done = await call({ step: 1, dry_run: false });
    assert.ok(
      done.includes(
        'Dependency manifests or lockfiles changed; installed dependencies are not restored with the files: run `npm ci` in web/ (for web/package-lock.json) so they match.\n',
      ),
      done,
    );
    assert.is(repo.read('web/package-lock.json').toString(), 'v1\n');
  } finally {
    await client.close();
    repo.cleanup();
  }
});

test.run();
