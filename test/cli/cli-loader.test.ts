// bin/cli-loader.js runs the bundled CLI with V8's code cache (issue 19: ~30
// ms of every Node start). V8 checks only its version, its flags and the
// source's length: a cache made from another bundle of the same length would
// run the other bundle's code. The loader keys the cache on the bundle file
// itself; these run a copy of the package and look at what a user sees (the
// output) and at the cache file.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROOT } from '../support/helpers.js';

const isRoot = process.getuid?.() === 0;
const DROP_WRITE_CAPS = ['--inh-caps=-dac_override,-dac_read_search', '--bounding-set=-dac_override,-dac_read_search', '--'];

/** A copy of the built package (bin/, dist/, package.json) without any cache. */
function packageCopy(): { dir: string; cleanup(): void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentsnap-loader-'));
  for (const f of ['bin', 'dist', 'package.json']) fs.cpSync(path.join(ROOT, f), path.join(dir, f), { recursive: true });
  for (const f of fs.readdirSync(path.join(dir, 'dist'))) if (f.endsWith('.cache')) fs.rmSync(path.join(dir, 'dist', f));
  return {
    dir,
    cleanup: () => {
      fs.chmodSync(path.join(dir, 'dist'), 0o755);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

function run(pkg: string, args: string[], prefix: string[] = []): { code: number; stdout: string; stderr: string } {
  const cmd = [...prefix, process.execPath, path.join(pkg, 'bin', 'agentsnap.js'), ...args];
  const r = spawnSync(cmd[0]!, cmd.slice(1), {
    cwd: pkg,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: pkg, LANG: 'C' },
  });
  return { code: r.status ?? 128, stdout: r.stdout, stderr: r.stderr };
}

function caches(pkg: string): string[] {
  return fs.readdirSync(path.join(pkg, 'dist')).filter((f) => f.endsWith('.cache'));
}

test('the first run writes the cache, the next ones use it as it is', () => {
  const pkg = packageCopy();
  try {
    const first = run(pkg.dir, ['bogus']);
    assert.is(first.code, 2, first.stderr);
    assert.match(first.stderr, /unknown command: bogus/);
    const [cache, ...more] = caches(pkg.dir);
    assert.ok(cache && more.length === 0, `one cache: ${caches(pkg.dir).join(', ')}`);
    const file = path.join(pkg.dir, 'dist', cache);
    assert.match(fs.readFileSync(file).subarray(0, 40).toString('latin1'), /^agentsnap-cli-cache 2 /);
    const before = fs.statSync(file, { bigint: true });
    const again = run(pkg.dir, ['bogus']);
    assert.equal([again.code, again.stderr], [first.code, first.stderr]);
    const after = fs.statSync(file, { bigint: true });
    assert.equal([after.ino, after.mtimeNs], [before.ino, before.mtimeNs], 'not written again');
  } finally {
    pkg.cleanup();
  }
});

test('a bundle rebuilt to the same length runs its own code, not the cached one (V8 alone would take the cache)', () => {
  const pkg = packageCopy();
  try {
    assert.is(run(pkg.dir, ['bogus']).code, 2);
    assert.is(caches(pkg.dir).length, 1);
    const bundle = path.join(pkg.dir, 'dist', 'cli.bundle.cjs');
    const text = fs.readFileSync(bundle, 'utf8');
    assert.ok(text.includes('unknown command: '), 'the message is in the bundle');
    const changed = text.replaceAll('unknown command: ', 'unknown c0mmand: ');
    assert.is(Buffer.byteLength(changed), Buffer.byteLength(text));
    fs.writeFileSync(bundle, changed);
    const r = run(pkg.dir, ['bogus']);
    assert.is(r.code, 2, r.stderr);
    assert.match(r.stderr, /unknown c0mmand: bogus/);
    // And the cache is made again from the new bundle.
    assert.match(run(pkg.dir, ['bogus']).stderr, /unknown c0mmand: bogus/);
  } finally {
    pkg.cleanup();
  }
});

test('a damaged cache is not used, and is written again', () => {
  const pkg = packageCopy();
  try {
    assert.is(run(pkg.dir, ['bogus']).code, 2);
    const file = path.join(pkg.dir, 'dist', caches(pkg.dir)[0]!);
    const bytes = fs.readFileSync(file);
    const header = bytes.indexOf(10) + 1;
    // The header kept (it names this bundle), V8's data garbled after its first bytes.
    for (let i = header + 64; i < bytes.length; i += 7) bytes[i] = (bytes[i]! + 91) & 0xff;
    fs.writeFileSync(file, bytes);
    const r = run(pkg.dir, ['--version']);
    assert.is(r.code, 0, r.stderr);
    assert.is(r.stdout.trim(), JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version);
    assert.not.equal(fs.readFileSync(file), bytes, 'written again');
    assert.is(run(pkg.dir, ['--version']).code, 0);
  } finally {
    pkg.cleanup();
  }
});

test('a package directory the user cannot write: the CLI runs, without a cache', () => {
  const prefix = isRoot ? ['setpriv', ...DROP_WRITE_CAPS] : [];
  if (isRoot && spawnSync('setpriv', [...DROP_WRITE_CAPS, 'true']).status !== 0) {
    console.log('  (skipped: needs setpriv to drop root’s capabilities)');
    return;
  }
  const pkg = packageCopy();
  try {
    fs.chmodSync(path.join(pkg.dir, 'dist'), 0o555);
    const r = run(pkg.dir, ['bogus'], prefix);
    assert.is(r.code, 2, r.stderr);
    assert.match(r.stderr, /unknown command: bogus/);
    assert.not.match(r.stderr, /EACCES|Error/);
    assert.equal(caches(pkg.dir), []);
  } finally {
    pkg.cleanup();
  }
});

test.run();
