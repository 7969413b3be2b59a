// The real Codex CLI and Gemini CLI for end-to-end tests: pinned, installed
// from the npm registry on first use into node_modules/.cache (kept out of
// devDependencies, like Claude Code in claude-code.ts: only these tests need them).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from './helpers.js';

export const CODEX_VERSION = '0.171.0';
export const GEMINI_CLI_VERSION = '0.61.0';

interface Pinned {
  name: string;
  pkg: string;
  version: string;
  /** The executable inside the install dir's node_modules. */
  bin: string;
  /** AGENTSNAP_E2E_<KEY>=skip skips it; AGENTSNAP_E2E_<KEY>_BIN names a binary to use instead. */
  key: string;
}

function installed(p: Pinned): string | null {
  if (process.env[`AGENTSNAP_E2E_${p.key}`] === 'skip') return null;
  const given = process.env[`AGENTSNAP_E2E_${p.key}_BIN`];
  if (given) return given;
  const dir = path.join(ROOT, 'node_modules', '.cache', 'agentsnap-e2e', `${p.name}-${p.version}`);
  const bin = path.join(dir, 'node_modules', p.bin);
  const works = () =>
    spawnSync(bin, ['--version'], { encoding: 'utf8', env: { ...process.env, HOME: dir }, timeout: 60_000 }).stdout?.includes(p.version);
  if (fs.existsSync(bin) && works()) return bin;
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: `agentsnap-e2e-${p.name}`, private: true }));
  const r = spawnSync(
    'npm',
    ['install', '--no-save', '--no-package-lock', '--no-audit', '--no-fund', '--loglevel=error', `${p.pkg}@${p.version}`],
    {
      cwd: dir,
      encoding: 'utf8',
      timeout: 8 * 60_000,
    },
  );
  if (r.status !== 0 || !fs.existsSync(bin) || !works()) {
    throw new Error(
      `could not install ${p.pkg}@${p.version} for the end-to-end test (npm exit ${r.status}): ${r.stderr || r.error?.message || ''}\n` +
        `Set AGENTSNAP_E2E_${p.key}_BIN to a binary, or AGENTSNAP_E2E_${p.key}=skip to skip this test.`,
    );
  }
  return bin;
}

/** Path of the codex executable (pinned), or null when AGENTSNAP_E2E_CODEX=skip. */
export function codexBinary(): string | null {
  return installed({ name: 'codex', pkg: '@openai/codex', version: CODEX_VERSION, bin: '.bin/codex', key: 'CODEX' });
}

/** Path of the gemini executable (pinned), or null when AGENTSNAP_E2E_GEMINI=skip. */
export function geminiBinary(): string | null {
  return installed({ name: 'gemini', pkg: '@google/gemini-cli', version: GEMINI_CLI_VERSION, bin: '.bin/gemini', key: 'GEMINI' });
}

export const QWEN_CODE_VERSION = '0.24.4';

/** Path of the qwen executable (pinned), or null when AGENTSNAP_E2E_QWEN=skip. */
export function qwenBinary(): string | null {
  return installed({ name: 'qwen', pkg: '@qwen-code/qwen-code', version: QWEN_CODE_VERSION, bin: '.bin/qwen', key: 'QWEN' });
}

export const CLAUDE_AGENT_SDK_VERSION = '0.3.336';

/**
 * The directory of the pinned Claude Agent SDK package (@anthropic-ai/claude-agent-sdk; the Claude Code it runs comes
 * in its platform package beside it), installed on first use like the binaries above; null when
 * AGENTSNAP_E2E_AGENT_SDK=skip. AGENTSNAP_E2E_AGENT_SDK_DIR names another install's package directory.
 */
export function claudeAgentSdk(): string | null {
  if (process.env.AGENTSNAP_E2E_AGENT_SDK === 'skip') return null;
  if (process.env.AGENTSNAP_E2E_AGENT_SDK_DIR) return process.env.AGENTSNAP_E2E_AGENT_SDK_DIR;
  const dir = path.join(ROOT, 'node_modules', '.cache', 'agentsnap-e2e', `claude-agent-sdk-${CLAUDE_AGENT_SDK_VERSION}`);
  const scope = path.join(dir, 'node_modules', '@anthropic-ai');
  const pkg = path.join(scope, 'claude-agent-sdk');
  const works = () => {
    try {
      const version = (JSON.parse(fs.readFileSync(path.join(pkg, 'package.json'), 'utf8')) as { version?: string }).version;
      // The native Claude Code of this platform (…-linux-x64, …-linux-x64-musl, …) came with it.
      const native = fs
        .readdirSync(scope)
        .some((n) => n.startsWith(`claude-agent-sdk-${process.platform}-${process.arch}`) && fs.existsSync(path.join(scope, n, 'claude')));
      return version === CLAUDE_AGENT_SDK_VERSION && native;
    } catch {
      return false;
    }
  };
  if (works()) return pkg;
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'agentsnap-e2e-claude-agent-sdk', private: true }));
  const r = spawnSync(
    'npm',
    [
      'install',
      '--no-save',
      '--no-package-lock',
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      `@anthropic-ai/claude-agent-sdk@${CLAUDE_AGENT_SDK_VERSION}`,
    ],
    {
      cwd: dir,
      encoding: 'utf8',
      timeout: 8 * 60_000,
    },
  );
  if (r.status !== 0 || !works()) {
    throw new Error(
      `could not install @anthropic-ai/claude-agent-sdk@${CLAUDE_AGENT_SDK_VERSION} for the end-to-end test (npm exit ${r.status}): ${r.stderr || r.error?.message || ''}\n` +
        'Set AGENTSNAP_E2E_AGENT_SDK_DIR to its package directory, or AGENTSNAP_E2E_AGENT_SDK=skip to skip this test.',
    );
  }
  return pkg;
}

export const COPILOT_CLI_VERSION = '1.0.102';

/** Path of the copilot executable (pinned), or null when AGENTSNAP_E2E_COPILOT=skip. */
export function copilotBinary(): string | null {
  return installed({ name: 'copilot', pkg: '@github/copilot', version: COPILOT_CLI_VERSION, bin: '.bin/copilot', key: 'COPILOT' });
}

/** Where Copilot CLI unpacks its real program (≈235 MB; COPILOT_PKG_CACHE_HOME): once for every test home, beside the install. */
export function copilotPackageCache(): string {
  return path.join(ROOT, 'node_modules', '.cache', 'agentsnap-e2e', `copilot-${COPILOT_CLI_VERSION}`, '.cache', 'copilot');
}

export const OPENCODE_VERSION = '1.18.33';

/** Path of the opencode executable (pinned), or null when AGENTSNAP_E2E_OPENCODE=skip. */
export function opencodeBinary(): string | null {
  return installed({ name: 'opencode', pkg: 'opencode-ai', version: OPENCODE_VERSION, bin: '.bin/opencode', key: 'OPENCODE' });
}

/**
 * OpenCode runs an npm install of @opencode-ai/plugin into every config folder it uses, at every start when it is
 * missing (13–55 s, from the registry): the user config folder's copy is kept here between test runs.
 */
export function opencodeConfigCache(): string {
  return path.join(ROOT, 'node_modules', '.cache', 'agentsnap-e2e', `opencode-${OPENCODE_VERSION}-config`);
}

export const CLINE_VERSION = '3.0.65';

/** Path of the cline executable (pinned; a Bun-compiled binary its package links), or null when AGENTSNAP_E2E_CLINE=skip. */
export function clineBinary(): string | null {
  return installed({ name: 'cline', pkg: 'cline', version: CLINE_VERSION, bin: '.bin/cline', key: 'CLINE' });
}
