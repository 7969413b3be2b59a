// Shared by the tests of a session a background server begins and ends for
// `wrap` (test/wrap/wrap-served.test.ts, test/wrap/wrap-served.attack.test.ts): the server a
// first wrap leaves, its status, a ground-truth full scan and the journal.
import fs from 'node:fs';
import path from 'node:path';
import * as assert from 'uvu/assert';
import { cliProcess, tempRepo, type TempRepo } from './helpers.js';
import { gitCommonDir } from './snap-helpers.js';

/** The environment of a wrap that may be served, and that leaves a server behind (the test env switches both off). */
export const ON = { AGENTSNAP_SERVER: 'on', AGENTSNAP_SERVER_AFTER_WRAP: '1' };

export interface ServerStatus {
  running: boolean;
  hosted: boolean | null;
  pid: number | null;
  watches: number | null;
}

export async function serverStatus(repo: TempRepo): Promise<ServerStatus> {
  const res = await cliProcess(repo, ['server', 'status', '--json'], { env: ON });
  return JSON.parse(res.stdout) as ServerStatus;
}

/** Waits until the background server the last wrap left watches the worktree (bounded: a failure is only slower). */
export async function untilWatching(repo: TempRepo): Promise<ServerStatus> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const s = await serverStatus(repo);
    if ((s.running && s.watches !== null) || Date.now() > deadline) return s;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The tree a full scan gives now: every file of the worktree but ignored ones, through a throwaway index. */
export function groundTruth(repo: TempRepo): string {
  const index = path.join(path.dirname(repo.dir), `truth-${process.hrtime.bigint()}`);
  const env = { GIT_INDEX_FILE: index };
  repo.git(['add', '-A'], { env });
  const tree = repo.git(['write-tree'], { env }).trim();
  fs.rmSync(index, { force: true });
  return tree;
}

export interface JournalEvent {
  type: string;
  tree?: string | null;
  exitCode?: number | null;
  signal?: string | null;
  owner?: { pid: number } | null;
}

export function journal(repo: TempRepo, session: string): JournalEvent[] {
  const file = path.join(gitCommonDir(repo), 'agentsnap', 'sessions', session, 'journal.jsonl');
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as JournalEvent);
}

/** The tree of the session's last snapshot (its head: the end's commit, or the last step's when the end found nothing new). */
export function headTree(repo: TempRepo, session: string): string {
  return repo.git(['rev-parse', `refs/agentsnap/sessions/${session}/head^{tree}`]).trim();
}

export function sessionOf(stderr: string): string {
  const m = /started session (\S+) /.exec(stderr);
  assert.ok(m, `a session line in: ${stderr}`);
  return (m as RegExpExecArray)[1] as string;
}

/** A repository with a background server left by a first wrap, watching. */
export async function withServer(extraEnv: Record<string, string> = {}): Promise<TempRepo> {
  const repo = tempRepo({ files: { 'a.txt': 'a\n', 'src/b.txt': 'b\n', '.gitignore': 'ignored/\n' } });
  const first = await cliProcess(repo, ['wrap', '-q', '--', 'true'], { env: { ...ON, ...extraEnv } });
  assert.is(first.code, 0, first.stderr);
  const s = await untilWatching(repo);
  assert.ok(s.running && s.hosted === false, `a background server runs after the wrap: ${JSON.stringify(s)}`);
  return repo;
}

export function runDir(repo: TempRepo): string {
  return path.join(gitCommonDir(repo), 'agentsnap', 'run', 'main');
}
