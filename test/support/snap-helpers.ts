// Helpers shared by the snapshot test files: run `snap` and parse its JSON,
// inspect what agentsnap left in .git. Stateless; every helper takes the repo.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as assert from 'uvu/assert';
import { cli, indexBytes, type CliResult, type TempRepo } from './helpers.js';
import { openContext } from '../../src/session/context.js';

export interface SnapJson {
  session: string;
  step: number;
  commit: string;
  tree: string;
  phase: 'pre' | 'post' | 'checkpoint';
  ref: string;
  startedSession: boolean;
  changed: { path: string; change: string; added: number | null; deleted: number | null }[];
  skipped: { path: string; reason: string; size?: number }[];
}

/** `agentsnap snap --json ...args`, asserting success and that the user's index did not change. */
export async function snapJson(
  repo: TempRepo,
  args: string[] = [],
  opts: { cwd?: string; env?: Record<string, string> } = {},
): Promise<SnapJson> {
  const before = indexBytes(repo);
  const res = await cli(repo, ['snap', '--json', ...args], opts);
  assert.is(res.code, 0, `snap failed: ${res.stdout} ${res.stderr}`);
  assert.equal(indexBytes(repo), before, 'the user index changed');
  return JSON.parse(res.stdout) as SnapJson;
}

/** The parsed `--json` error object of a failed command. */
export function jsonError(res: CliResult): {
  code: string;
  message: string;
  hint?: string;
  exitCode: number;
  data: Record<string, unknown>;
} {
  const parsed = JSON.parse(res.stdout) as {
    error: { code: string; message: string; hint?: string; exitCode: number; data: Record<string, unknown> };
  };
  return parsed.error;
}

export function gitCommonDir(repo: TempRepo, cwd = repo.dir): string {
  return path.resolve(cwd, repo.git(['rev-parse', '--git-common-dir'], { cwd }).trim());
}

/** Files agentsnap must never leave behind: temporary packs and lock files anywhere under the common dir. */
export function leftovers(repo: TempRepo): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    let names: string[];
    try {
      names = fs.readdirSync(dir);
    } catch {
      return;
    }
    for (const name of names) {
      const abs = path.join(dir, name);
      const st = fs.lstatSync(abs);
      if (st.isDirectory()) walk(abs);
      else if (name.startsWith('tmp_') || name.endsWith('.lock') || name === 'lock' || /\.(tmp|seed|stale|diff)-/.test(name)) out.push(abs);
    }
  };
  walk(gitCommonDir(repo));
  return out;
}

/** Ids of loose objects in the repository. */
export function looseObjects(repo: TempRepo): Set<string> {
  const dir = path.join(gitCommonDir(repo), 'objects');
  const out = new Set<string>();
  for (const sub of fs.readdirSync(dir)) {
    if (!/^[0-9a-f]{2}$/.test(sub)) continue;
    for (const name of fs.readdirSync(path.join(dir, sub))) out.add(sub + name);
  }
  return out;
}

export function assertFsckClean(repo: TempRepo): void {
  const r = repo.gitRaw(['fsck', '--strict', '--no-progress']);
  assert.is(r.status, 0, `git fsck failed: ${r.stdout} ${r.stderr}`);
  assert.not.match(r.stdout + r.stderr, /error|warning|missing|broken/i);
}

export function journalFile(repo: TempRepo, session: string): string {
  return path.join(gitCommonDir(repo), 'agentsnap', 'sessions', session, 'journal.jsonl');
}

export function journalEvents(repo: TempRepo, session: string): Record<string, unknown>[] {
  return fs
    .readFileSync(journalFile(repo, session), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** The blob bytes stored at `rel` in `commit`. */
export function blobAt(repo: TempRepo, commit: string, rel: string): Buffer {
  const r = repo.gitRaw(['rev-parse', `${commit}:${rel}`]);
  assert.is(r.status, 0, `${rel} missing from ${commit}`);
  return spawnSync('git', ['cat-file', 'blob', r.stdout.trim()], { cwd: repo.dir, env: repo.env }).stdout;
}

/** Mode and object id of `rel` in `commit`, or null when absent. */
export function entryAt(repo: TempRepo, commit: string, rel: string): { mode: string; type: string; oid: string } | null {
  const out = repo.git(['ls-tree', '-z', commit, '--', rel]);
  const rec = out.split('\0').find(Boolean);
  if (!rec) return null;
  const [mode, type, oid] = rec.slice(0, rec.indexOf('\t')).split(' ');
  return { mode: mode ?? '', type: type ?? '', oid: oid ?? '' };
}

/** Starts a session with a chosen id through the library (the CLI's snap uses existing sessions only). */
export async function startNamedSession(repo: TempRepo, id: string): Promise<string> {
  const { openRepo } = await import('../../src/git/repo.js');
  const { startSession } = await import('../../src/session/session.js');
  const r = await openRepo(repo.dir, { env: repo.env });
  const res = await startSession(await openContext(r), { id });
  return res.commit;
}

/** One recorded Bash step through the CLI: pre, the change, post; returns its number. */
export async function recordStep(repo: TempRepo, change: () => void, env: Record<string, string> = {}): Promise<number> {
  const pre = await cli(repo, ['snap', '--phase', 'pre', '--tool', 'Bash', '--json'], { env });
  assert.is(pre.code, 0, pre.stderr);
  const n = (JSON.parse(pre.stdout) as { step: number }).step;
  change();
  const post = await cli(repo, ['snap', '--phase', 'post', '--step', String(n), '--tool', 'Bash'], { env });
  assert.is(post.code, 0, post.stderr);
  return n;
}
