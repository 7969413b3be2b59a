// The package as another uid runs it. The channel tests run clients as a second uid (setpriv); a checkout in a
// private directory (CI clones into a 0700 one) is out of that uid's reach, so they run a copy of what the CLI
// needs (bin, dist, hooks, package.json, node_modules) in a world-traversable temp directory: hard links where the
// filesystem allows (the files keep their modes), else a copy. Removed when the test process exits.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { ROOT } from './helpers.js';

const copies = new Map<number, string>();

/** Whether `uid` can read `file` (asked as that uid: every directory above it must let it through). */
function readableBy(uid: number, file: string): boolean {
  const probe = `require('node:fs').accessSync(${JSON.stringify(file)}, require('node:fs').constants.R_OK)`;
  return (
    spawnSync('setpriv', [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', process.execPath, '-e', probe], { stdio: 'ignore' })
      .status === 0
  );
}

/** The package root `uid` can run agentsnap from: ROOT where it reaches it, else a copy made once. */
export function packageRootFor(uid: number): string {
  const known = copies.get(uid);
  if (known) return known;
  let root = ROOT;
  if (!readableBy(uid, path.join(ROOT, 'dist', 'channel.cjs'))) {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'agentsnap-pkg-'));
    fs.chmodSync(root, 0o755);
    const parts = ['bin', 'dist', 'hooks', 'node_modules', 'package.json'].map((p) => path.join(ROOT, p));
    if (spawnSync('cp', ['-al', ...parts, root], { stdio: 'ignore' }).status !== 0) {
      const copied = spawnSync('cp', ['-a', ...parts, root], { encoding: 'utf8' });
      if (copied.status !== 0) throw new Error(`could not copy the package for uid ${uid}: ${copied.stderr}`);
    }
    process.on('exit', () => fs.rmSync(root, { recursive: true, force: true }));
  }
  copies.set(uid, root);
  return root;
}
