// The test suite as a contributor meets it (issue 14): no ANSI codes when the
// runner's output is piped, AGENTSNAP_E2E=0 leaves out the real-agent
// end-to-end tests, and tempRepo's dirs go when the run is interrupted.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROOT } from '../support/helpers.js';

/** This process's environment without what decides colours. */
function plainEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.NO_COLOR;
  delete env.FORCE_COLOR;
  delete env.AGENTSNAP_E2E;
  return { ...env, ...extra };
}

test('the runner prints no ANSI codes when piped; AGENTSNAP_E2E=0 leaves out the *-e2e tests and says so', () => {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'run-tests.mjs'), 'claude-e2e|architecture'], {
    cwd: ROOT,
    env: plainEnv({ AGENTSNAP_E2E: '0' }),
    encoding: 'utf8',
    timeout: 300_000,
  });
  assert.is(r.status, 0, r.stdout + r.stderr);
  assert.not.match(r.stdout, '\x1b[', 'no escape sequences');
  assert.match(r.stdout, 'architecture.test.ts');
  assert.not.match(r.stdout, 'claude-e2e.test.ts');
  assert.match(r.stdout, /AGENTSNAP_E2E=0: the end-to-end tests with the real agents .* are left out/);
  assert.match(r.stdout, /\n\d+ passed, 0 failed/);
});

for (const sig of ['SIGTERM', 'SIGINT'] as const) {
  test(`tempRepo's dirs are removed when the test process gets ${sig}`, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentsnap-runner-'));
    try {
      const script = path.join(dir, 'child.test.ts');
      fs.writeFileSync(
        script,
        `import { tempRepo } from ${JSON.stringify(path.join(ROOT, 'test', 'support', 'helpers.ts'))};\n` +
          `const r = tempRepo({ files: { 'a.txt': 'a\\n' } });\nconsole.log(r.base);\nsetInterval(() => {}, 1000);\n`,
      );
      const child = spawn(process.execPath, ['--import', 'tsx', script], {
        cwd: ROOT,
        env: plainEnv(),
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const base = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('\n')) resolve(out.split('\n')[0]!.trim());
        });
        child.on('error', reject);
        child.on('close', () => reject(new Error(`child exited early: ${out}`)));
      });
      assert.ok(fs.existsSync(base), base);
      const closed = new Promise<NodeJS.Signals | null>((resolve) => child.on('close', (_code, signal) => resolve(signal)));
      child.kill(sig);
      assert.is(await closed, sig, 'it still ends by the signal');
      assert.not.ok(fs.existsSync(base), `${base} was removed`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
}

test.run();
