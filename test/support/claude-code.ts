// The real Claude Code binary for end-to-end tests: pinned, installed from
// the npm registry on first use into node_modules/.cache (kept out of
// devDependencies: it is ~400 MB and only these tests need it).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from './helpers.js';

export const CLAUDE_CODE_VERSION = '2.1.332';

/** The environment that points the real claude at a local Messages API stand-in: offline, no updater, a fake key. */
export function claudeStubEnv(baseUrl: string): Record<string, string> {
  return {
    IS_SANDBOX: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    ANTHROPIC_BASE_URL: baseUrl,
    ANTHROPIC_API_KEY: 'sk-ant-api03-e2e-test-key-not-real',
  };
}

/**
 * Path of the claude binary: $AGENTSNAP_E2E_CLAUDE_BIN when set, else the
 * pinned version (installed now if missing). Returns null when
 * AGENTSNAP_E2E_CLAUDE=skip; throws when it cannot be installed.
 */
export function claudeBinary(): string | null {
  if (process.env.AGENTSNAP_E2E_CLAUDE === 'skip') return null;
  if (process.env.AGENTSNAP_E2E_CLAUDE_BIN) return process.env.AGENTSNAP_E2E_CLAUDE_BIN;
  const dir = path.join(ROOT, 'node_modules', '.cache', 'agentsnap-e2e', `claude-code-${CLAUDE_CODE_VERSION}`);
  const bin = path.join(dir, 'node_modules', '@anthropic-ai', 'claude-code', 'bin', 'claude.exe');
  const works = () =>
    spawnSync(bin, ['--version'], { encoding: 'utf8', env: { ...process.env, IS_SANDBOX: '1' }, timeout: 60_000 }).stdout?.includes(
      CLAUDE_CODE_VERSION,
    );
  if (fs.existsSync(bin) && works()) return bin;
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'agentsnap-e2e-claude', private: true }));
  const r = spawnSync(
    'npm',
    [
      'install',
      '--no-save',
      '--no-package-lock',
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      `@anthropic-ai/claude-code@${CLAUDE_CODE_VERSION}`,
    ],
    {
      cwd: dir,
      encoding: 'utf8',
      timeout: 8 * 60_000,
    },
  );
  if (r.status !== 0 || !fs.existsSync(bin) || !works()) {
    throw new Error(
      `could not install @anthropic-ai/claude-code@${CLAUDE_CODE_VERSION} for the end-to-end test (npm exit ${r.status}): ${r.stderr || r.error?.message || ''}\n` +
        'Set AGENTSNAP_E2E_CLAUDE_BIN to a claude binary, or AGENTSNAP_E2E_CLAUDE=skip to skip this test.',
    );
  }
  return bin;
}
