import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, hermeticEnv } from '../support/helpers.js';

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

test('npm run demo builds only when dist/ is missing or older than a source file (a current dist/ starts the demo at once)', () => {
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'agentsnap-demo-stale-')));
  try {
    const pkg = path.join(base, 'pkg');
    const file = (rel: string, text: string, seconds: number) => {
      fs.mkdirSync(path.dirname(path.join(pkg, rel)), { recursive: true });
      fs.writeFileSync(path.join(pkg, rel), text);
      fs.utimesSync(path.join(pkg, rel), seconds, seconds);
    };
    // A package whose build only leaves a mark: whether the script ran it is what the test sees.
    const build = `node -e "require('fs').writeFileSync('built.txt', 'yes')"`;
    file('package.json', JSON.stringify({ name: 'stale-check', version: '1.0.0', scripts: { build } }), 1000);
    file('src/index.ts', 'export {};\n', 2000);
    file('bin/cli.js', '\n', 1500);
    fs.mkdirSync(path.join(base, 'home'));
    const env = hermeticEnv(path.join(base, 'home'), { TMPDIR: base });
    const check = () => {
      fs.rmSync(path.join(pkg, 'built.txt'), { force: true });
      const r = spawnSync(process.execPath, [path.join(ROOT, 'demo', 'build-if-stale.mjs'), pkg], { env, encoding: 'utf8' });
      assert.is(r.status, 0, r.stderr);
      return { built: fs.existsSync(path.join(pkg, 'built.txt')), stdout: r.stdout };
    };
    assert.ok(check().built, 'no dist/: built');
    file('dist/index.js', '\n', 1800);
    assert.ok(check().built, 'dist/ older than src/index.ts: built');
    file('dist/index.js', '\n', 3000);
    // A code cache the CLI wrote long ago (or just now) says nothing about the build.
    file('dist/cli.cache', '\n', 500);
    const current = check();
    assert.not.ok(current.built, 'dist/ newer than every source: not built');
    assert.match(current.stdout, /not rebuilding/);
    file('bin/cli.js', '\n', 4000);
    assert.ok(check().built, 'bin/ changed since: built');
    const script = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).scripts.demo as string;
    assert.is(script, 'node demo/build-if-stale.mjs && node demo/run.js');
  } finally {
    fs.rmSync(base, { recursive: true, force: true });
  }
});

test.run();
