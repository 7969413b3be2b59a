// git's config as agentsnap reads it: `git config -z --list` into a map keyed
// as git compares keys, and values parsed as git (or agentsnap) reads them.
// agentsnap's own settings built from it are settings/settings.ts'.
import { errors } from '../base/errors.js';
import { splitNul } from './run.js';
import type { Repo } from './repo.js';
import type { GitConfig } from './types.js';
export type { GitConfig } from './types.js';

/** Reads the effective git config once: `git config -z --list`. */
export async function readGitConfig(repo: Repo): Promise<GitConfig> {
  const res = await repo.git(['config', '-z', '--list'], { okCodes: [1] });
  return parseConfigList(res.stdout);
}

/**
 * A config key as git compares it: section and variable name in lower case,
 * a subsection (`filter.<driver>.clean`) as written, since git tells
 * subsections apart by case (`[filter "LFS"]` is not `[filter "lfs"]`).
 */
export function canonicalKey(key: string): string {
  const first = key.indexOf('.');
  const last = key.lastIndexOf('.');
  if (first === -1 || first === last) return key.toLowerCase();
  return key.slice(0, first).toLowerCase() + key.slice(first, last) + key.slice(last).toLowerCase();
}

/** Parses `git config -z --list` output. */
export function parseConfigList(out: Buffer): GitConfig {
  const map: GitConfig = new Map();
  for (const entry of splitNul(out)) {
    const nl = entry.indexOf('\n');
    const key = canonicalKey(nl === -1 ? entry : entry.slice(0, nl));
    const value = nl === -1 ? 'true' : entry.slice(nl + 1);
    const list = map.get(key);
    if (list) list.push(value);
    else map.set(key, [value]);
  }
  return map;
}

export function lastValue(cfg: GitConfig, key: string): string | undefined {
  const list = cfg.get(canonicalKey(key));
  return list?.[list.length - 1];
}

/**
 * A boolean as git itself reads it (git_parse_maybe_bool): true, yes, on; false, no, off and the empty value
 * (`key =`, what `git config key ""` writes: false, not true); else an integer with an optional k/m/g unit,
 * false when zero. A key given without `=` is true (parseConfigList). Null for what git rejects.
 */
export function gitBool(value: string): boolean | null {
  const v = value.toLowerCase();
  if (v === 'true' || v === 'yes' || v === 'on') return true;
  if (v === 'false' || v === 'no' || v === 'off' || v === '') return false;
  const m = /^([-+]?(?:0x[0-9a-f]+|0[0-7]*|[1-9][0-9]*))([kmg]?)$/.exec(v);
  if (!m) return null;
  return !/^[-+]?(?:0x0+|0+)$/.test(m[1]!); // zero in any base git reads (strtoimax, base 0)
}

export function parseBool(key: string, value: string | undefined, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  const v = value.trim().toLowerCase();
  if (['true', 'yes', 'on', '1', ''].includes(v)) return true;
  if (['false', 'no', 'off', '0'].includes(v)) return false;
  throw errors.invalidConfig(`${key} = ${JSON.stringify(value)} is not a boolean.`, {
    hint: `Set it to true or false: git config ${key} false`,
    data: { key, value },
  });
}

export function parseSize(key: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const m = /^\s*(\d+)\s*([kmg]?)i?b?\s*$/i.exec(value);
  if (!m) {
    throw errors.invalidConfig(`${key} = ${JSON.stringify(value)} is not a size.`, {
      hint: `Use a number of bytes with an optional k, m or g suffix: git config ${key} 10m`,
      data: { key, value },
    });
  }
  const unit = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[(m[2] ?? '').toLowerCase() as '' | 'k' | 'm' | 'g'];
  return Number(m[1]) * unit;
}

export function parseInteger(key: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^\s*\d+\s*$/.test(value)) {
    throw errors.invalidConfig(`${key} = ${JSON.stringify(value)} is not a whole number.`, { data: { key, value } });
  }
  return Number(value);
}
