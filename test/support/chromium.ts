// Debian's Chromium for the browser tests of `agentsnap ui` (and the README's
// screenshot): playwright-core drives it; no browser is ever downloaded. When
// none is installed and we are root with apt-get, it is installed from the OS
// packages (`apt-get install -y chromium`, after `apt-get update` when the
// first try fails). Null, with the reason, when there is none to be had.
import fs from 'node:fs';
import { spawnSync } from 'node:child_process';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/snap/bin/chromium', '/usr/bin/google-chrome'];

function found(): string | null {
  const own = process.env.AGENTSNAP_CHROMIUM;
  if (own) return fs.existsSync(own) ? own : null;
  return CANDIDATES.find((c) => fs.existsSync(c)) ?? null;
}

function apt(args: string[]): boolean {
  const r = spawnSync('apt-get', args, {
    stdio: 'ignore',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    timeout: 15 * 60_000,
  });
  return r.status === 0;
}

let cached: { path: string | null; reason: string } | undefined;

/** The Chromium executable, installing Debian's package when missing and possible. */
export function chromium(): { path: string | null; reason: string } {
  if (cached) return cached;
  let p = found();
  if (p) return (cached = { path: p, reason: '' });
  if (process.env.AGENTSNAP_CHROMIUM)
    return (cached = { path: null, reason: `AGENTSNAP_CHROMIUM=${process.env.AGENTSNAP_CHROMIUM} does not exist` });
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  const hasApt = spawnSync('apt-get', ['--version'], { stdio: 'ignore' }).status === 0;
  if (!root || !hasApt)
    return (cached = {
      path: null,
      reason: `no Chromium installed (${CANDIDATES.join(', ')}), and ${root ? 'no apt-get' : 'not root'} to install Debian's chromium package`,
    });
  if (!apt(['install', '-y', '-qq', 'chromium'])) {
    apt(['update', '-qq']);
    apt(['install', '-y', '-qq', 'chromium']);
  }
  p = found();
  return (cached = p ? { path: p, reason: '' } : { path: null, reason: 'apt-get install chromium failed (no package source reachable?)' });
}

/** Chromium's flags here: no sandbox when root (Chromium refuses to start otherwise), no GPU, no first-run chrome. */
export const CHROMIUM_ARGS = [
  ...(typeof process.getuid === 'function' && process.getuid() === 0 ? ['--no-sandbox'] : []),
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--no-first-run',
  '--no-default-browser-check',
];
