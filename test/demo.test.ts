import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, hermeticEnv } from './helpers.js';

test('npm run demo: the scripted agent runs through wrap and log/show/replay show its steps', () => {
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'agentsnap-demo-test-')));
  try {
    fs.mkdirSync(path.join(base, 'home'));
    const env = hermeticEnv(path.join(base, 'home'), { TMPDIR: base });
    const r = spawnSync(process.execPath, [path.join(ROOT, 'demo', 'run.js')], { env, encoding: 'utf8' });
    assert.is(r.status, 0, r.stderr);
    const out = r.stdout;
    assert.match(out, /7 {2}Bash +done/);
    assert.match(out, /5 {2}Bash +failed .*\n +A test-report\.txt/);
    assert.match(out, /D notes\.txt/);
    assert.match(out, "+export const greet = () => 'Hello, world';");
    assert.match(out, '### Step 5: Bash (failed');
    assert.match(out, '## Session ended (exit code 0)');
  } finally {
    fs.rmSync(base, { recursive: true, force: true });
  }
});

test.run();
