// Issue 29, item 12: failures that a bare `catch` used to swallow, which now reach the user or `doctor`
// (test/project/catches.test.ts keeps every other catch clause honest).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { BIN, cli, refsUnder, tempRepo, treeFiles, type TempRepo } from '../support/helpers.js';
import { openRepo } from '../../src/git/repo.js';
import { runDirOf } from '../../src/server/server.js';
import { serverEngine } from '../../src/server/serve.js';
import { startWorktreeServer } from '../../src/runtime/server-api.js';
import { runSnap } from '../../src/cli/main.js';

const isRoot = process.getuid?.() === 0;

/** Root without the capabilities that let it read any file whatever its mode: it then obeys file permissions. */
const DROP_READ_CAPS = ['--inh-caps=-dac_override,-dac_read_search', '--bounding-set=-dac_override,-dac_read_search', '--'];
const canDropReadCaps = isRoot && spawnSync('setpriv', [...DROP_READ_CAPS, 'true']).status === 0;
function withoutReadCaps(repo: TempRepo, args: string[]): { code: number; stdout: string; stderr: string } {
  const r = spawnSync('setpriv', [...DROP_READ_CAPS, process.execPath, BIN, ...args], { cwd: repo.dir, env: repo.env, encoding: 'utf8' });
  return { code: r.status ?? 128, stdout: r.stdout, stderr: r.stderr };
}

// Before: an unreadable .agentsnap.json was taken for none, so its exclusions were dropped in silence and the
// excluded file went into the snapshot (exit 0).
test('an unreadable .agentsnap.json: exit 1 naming it, no step (its exclusions are never dropped in silence)', async () => {
  if (!canDropReadCaps) {
    console.log('  (skipped: needs root and setpriv to drop the read capabilities)');
    return;
  }
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    // The settings file itself is ignored, so only reading it as settings can fail.
    fs.appendFileSync(path.join(repo.dir, '.git', 'info', 'exclude'), '.agentsnap.json\n');
    repo.write('.agentsnap.json', JSON.stringify({ exclude: ['secret.txt'] }));
    repo.write('secret.txt', 'token\n');
    const first = withoutReadCaps(repo, ['snap', '--json']);
    assert.is(first.code, 0, first.stderr);
    const commits = [...refsUnder(repo, 'refs/agent/').values()];
    for (const c of commits) assert.not.ok(treeFiles(repo, c).has('secret.txt'), 'excluded while the file is readable');
    fs.chmodSync(path.join(repo.dir, '.agentsnap.json'), 0o000);
    repo.write('a.txt', 'changed\n');
    const refs = refsUnder(repo, 'refs/agent/');
    const r = withoutReadCaps(repo, ['snap']);
    assert.is(r.code, 1, r.stderr);
    assert.match(r.stderr, '.agentsnap.json');
    assert.match(r.stderr, 'permission denied');
    assert.not.match(r.stderr, /\n\s+at /, 'no stack trace');
    assert.equal(refsUnder(repo, 'refs/agent/'), refs, 'no step');
  } finally {
    repo.cleanup();
  }
});

interface DoctorCheck {
  check: string;
  status: string;
  message: string;
  fix?: string;
}
const gcChecks = async (repo: TempRepo): Promise<DoctorCheck[]> =>
  (JSON.parse((await cli(repo, ['doctor', '--json'])).stdout) as { checks: DoctorCheck[] }).checks.filter((c) => c.check === 'gc');

// Before: wrap's automatic gc swallowed every failure, so an invalid agentsnap.retention meant no retention ever,
// said nowhere (doctor healthy as to gc).
test('a failed automatic gc: the session runs (exit 0), doctor names the failure and its fix; a gc that succeeds clears it', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    repo.git(['config', 'agentsnap.retention', 'fortnight']);
    const wrap = await cli(repo, ['wrap', '-q', '--', 'true']);
    assert.is(wrap.code, 0, wrap.stderr);
    const failed = await gcChecks(repo);
    assert.is(failed.length, 1, JSON.stringify(failed));
    assert.is(failed[0]?.status, 'problem');
    assert.match(failed[0]?.message ?? '', 'automatic gc');
    assert.match(failed[0]?.message ?? '', 'agentsnap.retention');
    assert.is(failed[0]?.fix, 'agentsnap gc');
    // The fix command tells the same failure, as a user error.
    const manual = await cli(repo, ['gc']);
    assert.is(manual.code, 1, manual.stderr);
    assert.match(manual.stderr, 'agentsnap.retention');
    repo.git(['config', '--unset', 'agentsnap.retention']);
    const fixed = await cli(repo, ['gc']);
    assert.is(fixed.code, 0, fixed.stderr);
    assert.equal(await gcChecks(repo), []);
  } finally {
    repo.cleanup();
  }
});

// Before: a server whose engine could not start served on with full scans, and said so only under
// AGENTSNAP_SERVER_TRACE and in its log; doctor found nothing wrong.
test('a server whose snapshot engine did not start: doctor names it with its error and fix while that server runs', async () => {
  if (process.platform !== 'linux') return;
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  const env = { ...repo.env, AGENTSNAP_SERVER: 'on' };
  const r = await openRepo(repo.dir, { env });
  const serverChecks = async (): Promise<DoctorCheck[]> =>
    (
      JSON.parse((await cli(repo, ['doctor', '--json'], { env: { AGENTSNAP_SERVER: 'on' } })).stdout) as { checks: DoctorCheck[] }
    ).checks.filter((c) => c.check === 'server');
  // The engine's directory taken by a file: its start fails (EEXIST), every time.
  fs.mkdirSync(runDirOf(r), { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(runDirOf(r), 'engine'), 'not a directory\n');
  const server = await startWorktreeServer(r, { hosted: true, warmUp: true, snap: runSnap });
  try {
    assert.is(await serverEngine(server), null, 'no engine');
    const checks = await serverChecks();
    assert.is(checks.length, 1, JSON.stringify(checks));
    assert.is(checks[0]?.status, 'problem');
    assert.match(checks[0]?.message ?? '', 'engine did not start');
    assert.match(checks[0]?.message ?? '', 'EEXIST');
    assert.is(checks[0]?.fix, 'agentsnap server stop');
  } finally {
    await server.close();
  }
  // A report names its server: none once it is gone.
  assert.equal(await serverChecks(), []);
  repo.cleanup();
});

test.run();
