// Adversarial findings against issue 13 ("Nothing is lost, ever"): one test
// per bug, named after what the user observes. A test marked `// FAILS:` was
// committed failing, its fix left to the lead.
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cli, tempRepo, step } from './helpers.js';

test('a file named "q" (quotes in its name) or ending in a CR is snapshotted and undone with its own bytes under text=auto', async () => {
  // hash-object --stdin-paths unquotes a line starting with `"` and strips a
  // trailing CR: the snapshot recorded the bytes of `q` and `c` instead.
  const repo = tempRepo({ files: { '.gitattributes': '* text=auto\n', q: 'plain q\n', c: 'plain c\n' } });
  try {
    repo.write('"q"', 'the user bytes of "q"\r\n');
    repo.write('c\r', 'the user bytes of c-CR\r\n');
    repo.write('"m"', 'quoted m, before\n');
    repo.write('m', 'plain m\n');
    repo.git(['add', '-A']);
    repo.git(['commit', '-q', '-m', 'odd names']);
    await step(repo, () => {
      fs.rmSync(path.join(repo.dir, '"q"'));
      fs.rmSync(path.join(repo.dir, 'c\r'));
      repo.write('"m"', 'quoted m, by the agent\n');
    });
    const res = await cli(repo, ['undo']);
    assert.is(res.code, 0, res.stderr);
    assert.is(repo.read('"q"').toString(), 'the user bytes of "q"\r\n');
    assert.is(repo.read('c\r').toString(), 'the user bytes of c-CR\r\n');
    // The restore's check hashed `m` for `"m"` and left it as "changed while the operation ran".
    assert.is(repo.read('"m"').toString(), 'quoted m, before\n');
  } finally {
    repo.cleanup();
  }
});

test.run();
