// agentsnap's settings: git config `agentsnap.*` (repository, global and system
// levels, the git way) over an optional checked-in `.agentsnap.json` holding
// data only (patterns, caps), and the server policy. Nothing read from the
// repository is ever executed. Read once per command into its context
// (session/context.ts); a long-running host keeps them while their files are
// unchanged (settingsCache).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { errors } from '../base/errors.js';
import { unsafePath } from '../base/fsutil.js';
import { lastValue, parseBool, parseInteger, parseSize, readGitConfig, type GitConfig } from '../git/config.js';
import type { Repo } from '../git/repo.js';

export interface Settings {
  /** Extra picomatch globs for untracked files to leave out. */
  exclude: string[];
  /** Untracked files larger than this (bytes) are left out; 0 means no cap. */
  maxFileSize: number;
  excludeSecrets: boolean;
  lockTimeoutMs: number;
  /** git's own settings that change how content enters git (see snapshot: exact bytes). */
  autocrlf: string | null;
  /** The `filter.<driver>.*` drivers configured, names as written (git matches them by case); snapshots switch them off. */
  filterDrivers: string[];
  attributesFile: string | null;
  /** Tool inputs and outputs are journaled up to this many characters (agentsnap.outputLimit). */
  outputLimit: number;
  /** Extra regular expressions whose matches are redacted before journaling (agentsnap.redactPattern, multi-valued). */
  redactPatterns: RegExp[];
  /** `wrap --auto`: milliseconds the worktree must stay quiet after a change before a checkpoint (agentsnap.autoQuiet). */
  autoQuietMs: number;
  /** `wrap --auto`: milliseconds between checks for changes the file watcher missed; 0 = none (agentsnap.autoPoll). */
  autoPollMs: number;
  /** Whether a warm server may answer hooks and `snap` (agentsnap.server; env AGENTSNAP_SERVER wins). */
  server: boolean;
  /** A background server exits after this many milliseconds without a call (agentsnap.serverIdle). */
  serverIdleMs: number;
  /** Whether a `wrap` whose worktree had no background server leaves one running for the next session (agentsnap.serverAfterWrap; env AGENTSNAP_SERVER_AFTER_WRAP wins). */
  serverAfterWrap: boolean;
  /**
   * Directories (worktree-relative, no trailing slash) snapshotted whole, their ignore rules not applied
   * (agentsnap.environment, multi-valued or comma-separated): the dependencies an agent installed.
   */
  environment: string[];
  /** The effective git config these settings were read from (snapshotTree's in-process path checks it). */
  gitConfig?: GitConfig;
}

export const PROJECT_FILE = '.agentsnap.json';

/** Untracked files that look like secrets are left out of snapshots unless agentsnap.excludeSecrets=false. */
export const SECRET_PATTERNS = [
  '**/.env',
  '**/.env.*',
  '**/*.pem',
  '**/*.key',
  '**/*.p12',
  '**/*.pfx',
  '**/*.keystore',
  '**/*.jks',
  '**/id_rsa*',
  '**/id_dsa*',
  '**/id_ecdsa*',
  '**/id_ed25519*',
  '**/.npmrc',
  '**/.pypirc',
  '**/.netrc',
  '**/.git-credentials',
  '**/credentials.json',
  '**/*.tfvars',
  '**/.aws/credentials',
];

/** Templates of .env files are meant to be shared and are not secrets. */
export const SECRET_ALLOW = ['**/.env.example', '**/.env.sample', '**/.env.template', '**/*.pub'];

export const DEFAULT_OUTPUT_LIMIT = 32 * 1024;

function parseRegexes(key: string, values: string[]): RegExp[] {
  return values.map((value) => {
    try {
      return new RegExp(value, 'g');
    } catch (e) {
      throw errors.invalidConfig(`${key} = ${JSON.stringify(value)} is not a valid regular expression: ${(e as Error).message}`, {
        hint: `Fix it with: git config --unset-all ${key}; git config --add ${key} '<regex>'`,
        data: { key, value },
      });
    }
  });
}

export const DEFAULT_MAX_FILE_SIZE = 10 * 1024 * 1024;

interface ProjectFile {
  exclude?: string[];
  maxFileSize?: string | number;
}

function readProjectFile(worktree: string): ProjectFile {
  const file = path.join(worktree, PROJECT_FILE);
  let text: string;
  try {
    const st = fs.lstatSync(file);
    if (!st.isFile() || st.size > 256 * 1024) return {};
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return {}; // no project settings file: the defaults
    // Taken for none, its exclusions would be dropped in silence (and the files they keep out snapshotted).
    throw errors.unreadableFile(`cannot read ${PROJECT_FILE}: ${(e as Error).message}`, {
      hint: `Make ${file} readable, or remove it.`,
      data: { file },
    });
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw errors.invalidConfig(`${PROJECT_FILE} is not valid JSON.`, {
      hint: `Fix or remove ${file}.`,
      data: { file },
    });
  }
  if (!data || typeof data !== 'object' || Array.isArray(data)) return {};
  const out: ProjectFile = {};
  const d = data as Record<string, unknown>;
  if (Array.isArray(d.exclude)) out.exclude = d.exclude.filter((x): x is string => typeof x === 'string');
  if (typeof d.maxFileSize === 'string' || typeof d.maxFileSize === 'number') out.maxFileSize = d.maxFileSize;
  return out;
}

export function settingsFrom(cfg: GitConfig, worktree: string): Settings {
  const project = readProjectFile(worktree);
  const projectSize = project.maxFileSize === undefined ? undefined : String(project.maxFileSize);
  const filterDrivers = new Set<string>();
  for (const key of cfg.keys()) {
    const m = /^filter\.(.+)\.(clean|process|smudge|required)$/.exec(key);
    if (m?.[1]) filterDrivers.add(m[1]);
  }
  return {
    exclude: [...(project.exclude ?? []), ...(cfg.get('agentsnap.exclude') ?? [])],
    maxFileSize: parseSize('agentsnap.maxFileSize', lastValue(cfg, 'agentsnap.maxfilesize') ?? projectSize, DEFAULT_MAX_FILE_SIZE),
    excludeSecrets: parseBool('agentsnap.excludeSecrets', lastValue(cfg, 'agentsnap.excludesecrets'), true),
    lockTimeoutMs: parseInteger('agentsnap.lockTimeout', lastValue(cfg, 'agentsnap.locktimeout'), 30_000),
    autocrlf: lastValue(cfg, 'core.autocrlf') ?? null,
    filterDrivers: [...filterDrivers],
    attributesFile: lastValue(cfg, 'core.attributesfile') ?? null,
    outputLimit: parseSize('agentsnap.outputLimit', lastValue(cfg, 'agentsnap.outputlimit'), DEFAULT_OUTPUT_LIMIT),
    redactPatterns: parseRegexes('agentsnap.redactPattern', cfg.get('agentsnap.redactpattern') ?? []),
    autoQuietMs: parseInteger('agentsnap.autoQuiet', lastValue(cfg, 'agentsnap.autoquiet'), 2_000),
    autoPollMs: parseInteger('agentsnap.autoPoll', lastValue(cfg, 'agentsnap.autopoll'), 10_000),
    server: parseBool('agentsnap.server', lastValue(cfg, 'agentsnap.server'), true),
    serverIdleMs: parseInteger('agentsnap.serverIdle', lastValue(cfg, 'agentsnap.serveridle'), 600_000),
    serverAfterWrap: parseBool('agentsnap.serverAfterWrap', lastValue(cfg, 'agentsnap.serverafterwrap'), true),
    environment: parseEnvironment(cfg.get('agentsnap.environment') ?? []),
    gitConfig: cfg,
  };
}

/**
 * `agentsnap.environment`: directories below the worktree's top, as git paths (`node_modules`, `web/.venv`). One
 * that could name something outside the worktree, the repository's own metadata, or everything is refused: a
 * snapshot of it would not be what the user meant.
 */
export function parseEnvironment(values: string[], from: 'config' | 'flag' = 'config'): string[] {
  const out: string[] = [];
  for (const raw of values.flatMap((v) => v.split(','))) {
    const dir = raw.trim().replace(/\/+$/, '');
    if (dir === '') continue;
    if (dir.startsWith('/') || unsafePath(dir) || /[\0\n]/.test(dir))
      throw (from === 'flag' ? errors.invalidArgument : errors.invalidConfig)(
        `${from === 'flag' ? '--environment' : 'agentsnap.environment'}: "${raw.trim()}" is not a directory below the worktree's top.`,
        {
          hint: 'Name directories relative to the top of the worktree, such as node_modules or .venv (no "..", no absolute paths, not .git).',
          data: { key: from === 'flag' ? '--environment' : 'agentsnap.environment', value: raw },
        },
      );
    if (!out.includes(dir)) out.push(dir);
  }
  return out;
}

/** Whether a path is one of the environment directories or below one. */
export function environmentMatcher(dirs: readonly string[]): (rel: string) => boolean {
  if (dirs.length === 0) return () => false;
  return (rel) => dirs.some((d) => rel === d || rel.startsWith(`${d}/`));
}

/** Reads the settings (git config and `.agentsnap.json`): once per command, into its context (session/context.ts). */
export async function loadSettings(repo: Repo): Promise<Settings> {
  const settings = settingsFrom(await readGitConfig(repo), repo.worktree);
  settings.exclude.push(...worktreeExcludes(repo));
  return settings;
}

/**
 * Settings read once and kept while none of the files they come from changed
 * (checked by stat on every call; a config file pulled in with include.path
 * is not watched: `agentsnap server stop` picks such a change up). For a
 * long-running host (the warm server), which builds a context per call.
 */
export function settingsCache(repo: Repo): () => Promise<Settings> {
  let key = '';
  let cached: Promise<Settings> | null = null;
  const env = repo.env;
  const home = env.HOME ?? os.homedir();
  const files = [
    path.join(repo.commonDir, 'config'),
    path.join(repo.gitDir, 'config.worktree'),
    path.join(repo.gitDir, WORKTREE_EXCLUDE_FILE),
    path.join(repo.worktree, PROJECT_FILE),
    env.GIT_CONFIG_GLOBAL ?? path.join(home, '.gitconfig'),
    env.GIT_CONFIG_GLOBAL ? '' : path.join(env.XDG_CONFIG_HOME ?? path.join(home, '.config'), 'git', 'config'),
    env.GIT_CONFIG_NOSYSTEM ? '' : (env.GIT_CONFIG_SYSTEM ?? '/etc/gitconfig'),
  ].filter(Boolean);
  return () => {
    const now = files
      .map((f) => {
        try {
          const st = fs.statSync(f, { bigint: true });
          return `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
        } catch {
          return '-'; // absent (or unreadable): a file that appears later changes the key
        }
      })
      .join('|');
    if (!cached || now !== key) {
      key = now;
      cached = loadSettings(repo);
      cached.catch(() => {
        // the caller gets this failure through `cached`: a later call reads the settings again
        cached = null;
      });
    }
    return cached;
  };
}

/**
 * Per-worktree excludes: `<worktree git dir>/agentsnap-exclude`, one picomatch
 * pattern a line. Agentsnap writes it into the linked worktrees it creates
 * (for the symlinks of shared directories, which the project's ignore rules
 * such as `node_modules/` do not match); git's own info/exclude is shared by
 * every worktree, so it cannot hold these.
 */
export const WORKTREE_EXCLUDE_FILE = 'agentsnap-exclude';

export function worktreeExcludes(repo: Pick<Repo, 'gitDir' | 'commonDir'>): string[] {
  if (repo.gitDir === repo.commonDir) return [];
  try {
    return fs
      .readFileSync(path.join(repo.gitDir, WORKTREE_EXCLUDE_FILE), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e; // no worktree excludes written: none
    return [];
  }
}

/**
 * Whether agentsnap may use a server here: `AGENTSNAP_SERVER` (0/off/false,
 * 1/on/true) wins over `git config agentsnap.server` (default true). The
 * server only runs where it can read its clients' calls from /proc (Linux).
 */
export function serverEnabled(env: NodeJS.ProcessEnv, settings: Pick<Settings, 'server'>): boolean {
  return serverEnabledWithoutConfig(env) ?? settings.server;
}

/**
 * Whether a wrapper that hosted this worktree's server leaves a background one
 * for the next session: only where a server may run, `AGENTSNAP_SERVER_AFTER_WRAP`
 * winning over `git config agentsnap.serverAfterWrap` (default true).
 */
export function serverAfterWrap(env: NodeJS.ProcessEnv, settings: Pick<Settings, 'server' | 'serverAfterWrap'>): boolean {
  if (!serverEnabled(env, settings)) return false;
  const fromEnv = env.AGENTSNAP_SERVER_AFTER_WRAP;
  return fromEnv !== undefined && fromEnv !== '' ? parseBool('AGENTSNAP_SERVER_AFTER_WRAP', fromEnv, true) : settings.serverAfterWrap;
}

/** What platform and environment alone decide (null: the config decides), before a repository is opened. */
export function serverEnabledWithoutConfig(env: NodeJS.ProcessEnv): boolean | null {
  if (process.platform !== 'linux') return false;
  const fromEnv = env.AGENTSNAP_SERVER;
  return fromEnv !== undefined && fromEnv !== '' ? parseBool('AGENTSNAP_SERVER', fromEnv, true) : null;
}
