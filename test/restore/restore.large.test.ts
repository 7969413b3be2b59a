// Restoring a large file streams it from git into the worktree: agentsnap's
// own memory stays far below the file's size (issue 8: a 2 GB file).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { BIN, ROOT, cli, tempRepo } from '../support/helpers.js';

const MiB = 1024 * 1024;

test('undo restores a 192 MiB file byte for byte without holding it in memory', async () => {
  if (!fs.existsSync('/proc/self/status')) return; // the probe reads Linux's VmHWM
  const repo = tempRepo({ files: { 'small.txt': 'x\n' } });
  try {
    // Incompressible content, tracked by the user; made by another process so this one stays small.
    const made = spawnSync('head', ['-c', String(192 * MiB), '/dev/urandom'], {
      stdio: ['ignore', fs.openSync(path.join(repo.dir, 'big.bin'), 'w'), 'inherit'],
    });
    assert.is(made.status, 0);
    repo.git(['add', 'big.bin']);
    repo.git(['commit', '-q', '-m', 'big']);
    const committed = repo.git(['rev-parse', 'HEAD:big.bin']).trim();
    assert.is((await cli(repo, ['snap', '--phase', 'pre', '--tool', 'Bash', '-q'])).code, 0);
    repo.write('big.bin', 'replaced\n');
    assert.is((await cli(repo, ['snap', '--phase', 'post', '-q'])).code, 0);

    const hwmFile = path.join(repo.base, 'hwm');
    const r = spawnSync(process.execPath, ['--import', path.join(ROOT, 'test', 'support', 'hwm-probe.mjs'), BIN, 'undo', '1'], {
      cwd: repo.dir,
      env: { ...repo.env, AGENTSNAP_TEST_HWM_FILE: hwmFile },
      encoding: 'utf8',
    });
    assert.is(r.status, 0, r.stderr);
    assert.is(repo.git(['hash-object', '--no-filters', 'big.bin']).trim(), committed, 'big.bin is back byte for byte');
    const hwmKiB = Number(fs.readFileSync(hwmFile, 'utf8'));
    assert.ok(hwmKiB > 0 && hwmKiB < 150 * 1024, `agentsnap used ${Math.round(hwmKiB / 1024)} MiB restoring a 192 MiB file`);
  } finally {
    repo.cleanup();
  }
});

test.run();
