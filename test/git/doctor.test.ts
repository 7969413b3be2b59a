import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { cli, refsUnder, tempRepo } from '../support/helpers.js';
import { openRepo, startSession } from '../../src/index.js';
import { openContext } from '../../src/session/context.js';

interface Report {
  healthy: boolean;
  problems: number;
  checks: { check: string; status: string; message: string; fix?: string }[];
  fixed: string[];
}

/** A pid that is certainly not running (a child that has already exited). */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(r.stdout);
}

test('doctor: hooks not installed is optional set-up with its command (exit 0); ok after install (exit 0)', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    await cli(repo, ['snap']);
    const first = await cli(repo, ['doctor']);
    assert.is(first.code, 0, first.stdout);
    assert.match(first.stdout, 'to set up: agentsnap hooks install');
    await cli(repo, ['hooks', 'install']);
    const ok = await cli(repo, ['doctor', '--json']);
    assert.is(ok.code, 0, ok.stdout);
    const report = JSON.parse(ok.stdout) as Report;
    assert.ok(report.healthy);
    const kinds = report.checks.map((c) => c.check);
    for (const k of ['git', 'hooks', 'integration', 'refs', 'disk']) assert.ok(kinds.includes(k), k);
  } finally {
    repo.cleanup();
  }
});

test('doctor: refs that disagree with the journal, stale locks and dead running sessions are reported and fixed', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    await cli(repo, ['hooks', 'install']);
    repo.write('a.txt', 'two\n');
    const { session } = JSON.parse((await cli(repo, ['snap', '--json'])).stdout) as { session: string };
    await cli(repo, ['snap']);
    const refs = refsUnder(repo, 'refs/agent/');
    // A step ref deleted, another pointing elsewhere.
    repo.git(['update-ref', '-d', `refs/agent/${session}/2`]);
    repo.git(['update-ref', `refs/agent/${session}/1`, `refs/agent/${session}/0`]);
    // A lock left by a dead process.
    const r = await openRepo(repo.dir, { env: repo.env });
    const lockFile = path.join(r.stateDir, 'sessions', session, 'lock');
    const pid = deadPid();
    fs.writeFileSync(lockFile, JSON.stringify({ pid, start: null, host: os.hostname(), since: new Date().toISOString(), purpose: 'test' }));
    // A session whose wrapper died without ending it.
    const dead = await startSession(await openContext(r), { id: 'dead-session', owner: { pid, start: null, host: os.hostname() } });
    void dead;

    const res = await cli(repo, ['doctor']);
    assert.is(res.code, 1);
    assert.match(res.stdout, `session ${session}: 2 ref(s) disagree with its journal`);
    assert.match(res.stdout, `stale lock ${lockFile} (its owner, pid ${pid}, is gone)`);
    assert.match(res.stdout, `session dead-session is still marked running, but its process (pid ${pid}) is gone`);
    assert.match(res.stdout, 'fix: agentsnap doctor --fix');

    const fixed = await cli(repo, ['doctor', '--fix', '--json']);
    const report = JSON.parse(fixed.stdout) as Report;
    assert.is(fixed.code, 0, fixed.stdout);
    assert.ok(report.fixed.some((f) => f.includes('removed stale lock')));
    assert.ok(report.fixed.some((f) => f.includes('dead-session: journaled its end')));
    assert.equal(refsUnder(repo, `refs/agent/${session}/`), new Map([...refs].filter(([k]) => k.startsWith(`refs/agent/${session}/`))));
    assert.not.ok(fs.existsSync(lockFile));
    const list = JSON.parse((await cli(repo, ['sessions', '--json'])).stdout) as { id: string; status: string }[];
    assert.is(list.find((s) => s.id === 'dead-session')?.status, 'ended');
  } finally {
    repo.cleanup();
  }
});

test('doctor reports agent integrations that mention agentsnap', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    repo.write(
      '.claude/settings.local.json',
      JSON.stringify({ hooks: { PreToolUse: [{ hooks: [{ type: 'command', command: 'agentsnap hook claude pre' }] }] } }),
    );
    const res = await cli(repo, ['doctor']);
    assert.match(res.stdout, /claude: agentsnap hooks configured in .*settings\.local\.json/);
  } finally {
    repo.cleanup();
  }
});

test.run();
