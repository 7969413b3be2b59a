import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { tempRepo, treeFiles } from '../support/helpers.js';
import { openSession } from '../../src/index.js';
import { loadSession } from '../../src/session/session.js';
import { openRepo } from '../../src/git/repo.js';

test('openSession + toolCall: each call is a step with input, output, status; errors are rethrown and recorded', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const s = await openSession(repo.dir, { env: repo.env, agent: 'my-agent' });
    const out = await s.toolCall('Write', { path: 'b.txt' }, () => {
      repo.write('b.txt', 'bee\n');
      return { written: 4 };
    });
    assert.equal(out, { written: 4 });
    let thrown: unknown;
    try {
      await s.toolCall('Bash', { command: 'make' }, async () => {
        repo.write('a.txt', 'half\n');
        throw new Error('make: *** [all] Error 2');
      });
    } catch (e) {
      thrown = e;
    }
    assert.match(String(thrown), 'Error 2');
    await s.end();
    const session = loadSession(await openRepo(repo.dir, { env: repo.env }), s.id);
    assert.is(session.agent, 'my-agent');
    assert.ok(session.ended);
    const [w, b] = session.steps;
    assert.equal([w?.tool, w?.status, w?.input, w?.output], ['Write', 'done', { path: 'b.txt' }, { written: 4 }]);
    assert.equal([b?.tool, b?.status, b?.error], ['Bash', 'failed', 'make: *** [all] Error 2']);
    assert.is(
      treeFiles(repo, b?.post as string)
        .get('a.txt')
        ?.content.toString(),
      'half\n',
    );
  } finally {
    repo.cleanup();
  }
});

test.run();
