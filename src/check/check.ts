// Per-step checks and bisect over steps (issue 17): a command run against the
// state after a step in a throwaway worktree of that snapshot (never the
// user's), its result journaled per step (`step.check`), reused for the same
// command and the same tree. One worktree serves a whole run: each state is a
// forced checkout of its snapshot plus `git clean -fd` (ignored files stay:
// shared `node_modules` and build caches, as agentsnap.worktreeShare wants).
import fs from 'node:fs';
import { lockFileIn, readStateFile } from '../base/state-dir.js';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { errors, isAgentsnapError } from '../base/errors.js';
import { acquireLock, ownerAlive, type Lock } from '../base/lock.js';
import { packageRoot } from '../base/package-root.js';
import { openRepo, type Repo } from '../git/repo.js';
import type { Settings } from '../settings/settings.js';
import { treeOf } from '../git/plumbing.js';
import { eventBase, type StepCheckEvent } from '../session/journal.js';
import type { Session, Step } from '../session/model.js';
import { redactText } from '../session/redact.js';
import { recordEvent } from '../worktrees/parallel.js';
import picomatch from 'picomatch';
import { copyEntry, NO_CLONE, removeSessionWorktree, worktreeConfig, type WorktreeConfig } from '../worktrees/worktree.js';

export const CHECK_EVENT: StepCheckEvent['type'] = 'step.check';

export interface CheckResult {
  /** The state checked: after this step (0: the baseline). */
  step: number;
  command: string;
  tree: string;
  exitCode: number;
  /** 'pass' (0), 'skip' (125, as git bisect run), 'fail' (anything else). */
  verdict: 'pass' | 'fail' | 'skip';
  durationMs: number;
  /** The last lines of its output (stdout and stderr), redacted. */
  output: string;
  time: string;
  /** Taken from an earlier run of the same command on the same tree. */
  reused?: boolean;
}

const OUTPUT_LINES = 20;
const OUTPUT_CHARS = 4000;

export function verdictOf(code: number): CheckResult['verdict'] {
  return code === 0 ? 'pass' : code === 125 ? 'skip' : 'fail';
}

/** Every check journaled for the session, oldest first. */
export function recordedChecks(s: Session): CheckResult[] {
  return s.extraEvents
    .filter((e) => e.type === CHECK_EVENT)
    .map((c) => ({
      step: c.step,
      command: c.command,
      tree: c.tree,
      exitCode: c.exitCode,
      verdict: verdictOf(c.exitCode),
      durationMs: c.durationMs,
      output: c.output,
      time: c.time,
      ...(c.reused ? { reused: true } : {}),
    }));
}

/** The newest check of each step (any command), for `log`. */
export function latestCheckByStep(s: Session): Map<number, CheckResult> {
  const m = new Map<number, CheckResult>();
  for (const c of recordedChecks(s)) m.set(c.step, c);
  return m;
}

/** The snapshot commit of the state after step `n` (0: the baseline). */
export function stateAfter(s: Session, n: number): { commit: string; step: Step | null } {
  if (n === 0) return { commit: s.baseline, step: null };
  const st = s.steps.find((x) => x.step === n);
  if (!st) throw errors.stepOutOfRange(`session ${s.id} has no step ${n}.`, { data: { session: s.id, step: n } });
  if (!st.post) throw errors.invalidArgument(`step ${n} has no state after it yet (still running, or unprotected).`, { data: { step: n } });
  return { commit: st.post, step: st };
}

function lastLines(text: string, patterns: RegExp[]): string {
  const lines = redactText(text, patterns).replace(/\s+$/, '').split('\n');
  const tail = lines.slice(-OUTPUT_LINES).join('\n');
  return tail.length > OUTPUT_CHARS ? tail.slice(-OUTPUT_CHARS) : tail;
}

/** The process group of the check command running now, for the signal handlers (see openCheckWorktree). */
interface Running {
  pgid: number | null;
}

function killGroup(pgid: number | null, sig: NodeJS.Signals): void {
  if (pgid === null) return;
  try {
    process.kill(-pgid, sig);
  } catch {
    /* the group is gone */
  }
}

/**
 * Runs `cmd` in its own process group. When the shell ends, what it left in its group (a server started with
 * `&`, a watcher) is killed: it runs in a worktree about to be removed, and would hold the output pipes open,
 * so the check would never end.
 */
function runCommand(
  cmd: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
  running: Running,
): Promise<{ code: number; output: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const child = spawn('/bin/sh', ['-c', cmd], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    running.pgid = child.pid ?? null;
    const chunks: Buffer[] = [];
    let size = 0;
    const keep = (d: Buffer) => {
      chunks.push(d);
      size += d.length;
      // Only the end is kept: a chatty test run must not fill memory.
      while (size > 256 * 1024 && chunks.length > 1) size -= (chunks.shift() as Buffer).length;
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('error', (e) => {
      running.pgid = null;
      reject(e);
    });
    let exit: { code: number; ms: number } | null = null;
    let pipesLeft: NodeJS.Timeout | null = null;
    const done = () => {
      if (!exit) return;
      if (pipesLeft) clearTimeout(pipesLeft);
      running.pgid = null;
      resolve({ code: exit.code, output: Buffer.concat(chunks).toString('utf8'), ms: exit.ms });
    };
    child.on('exit', (code, signal) => {
      exit = { code: code ?? (signal ? 128 : 1), ms: Date.now() - t0 };
      killGroup(child.pid ?? null, 'SIGKILL');
      // A process that left the group (setsid) may still hold the pipes: not waited for beyond a moment.
      pipesLeft = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        done();
      }, 2000);
      pipesLeft.unref();
    });
    child.on('close', done);
  });
}

/**
 * Variables that point git at a repository, worktree or index: set by a git hook (GIT_INDEX_FILE, GIT_DIR) or
 * by the user's shell, they would make a check's `git` commands act on the user's index, HEAD and branches
 * instead of the check worktree's.
 */
const REPO_LOCATING_GIT_VARS = [
  'GIT_DIR',
  'GIT_WORK_TREE',
  'GIT_INDEX_FILE',
  'GIT_COMMON_DIR',
  'GIT_OBJECT_DIRECTORY',
  'GIT_ALTERNATE_OBJECT_DIRECTORIES',
  'GIT_PREFIX',
  'GIT_IMPLICIT_WORK_TREE',
  'GIT_NAMESPACE',
  'GIT_SHALLOW_FILE',
  'GIT_GRAFT_FILE',
];

/** The environment of a check's commands (setup included): the caller's, without git's repository variables or the session's. */
function checkEnv(callerEnv: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...callerEnv };
  for (const k of REPO_LOCATING_GIT_VARS) delete env[k];
  // Not a session of its own: an agent run inside a check must not join the user's session.
  delete env.AGENTSNAP_SESSION;
  delete env.AGENTSNAP_WORKTREE;
  return env;
}

/** Whether a journaled command (redacted when journaled) is `command`: compared as both are journaled. */
function sameCommand(recorded: string, command: string, patterns: RegExp[]): boolean {
  return recorded === command || recorded === redactText(command, patterns);
}

/** A throwaway worktree for checks; `close()` removes it. */
export interface CheckWorktree {
  run(n: number, command: string): Promise<CheckResult>;
  /** What did not work out as configured (a directory not shared). */
  warnings: string[];
  close(): Promise<void>;
}

export interface CheckOptions {
  settings: Settings;
  /** Run again even when the same command already ran on the same tree. */
  fresh?: boolean;
  /** Journal each new result (default true). */
  record?: boolean;
}

export async function openCheckWorktree(repo: Repo, s: Session, opts: CheckOptions): Promise<CheckWorktree> {
  const cfg = await worktreeConfig(repo);
  fs.mkdirSync(cfg.dir, { recursive: true, mode: 0o700 });
  const dir = fs.mkdtempSync(path.join(cfg.dir, 'check-'));
  await repo.git(['worktree', 'add', '-q', '--detach', '--no-checkout', dir, s.baseline]);
  const wt = await openRepo(dir, { env: repo.callerEnv });
  const warnings: string[] = [];
  let shared: string[];
  try {
    // Shared before the first checkout: clean -fd leaves ignored directories alone.
    shared = await shareInto(repo, dir, cfg, warnings);
  } catch (e) {
    await removeSessionWorktree(repo, { path: dir, shared: [] }).catch(() => undefined); // cleanup under the failure that is rethrown below: that failure is the one reported
    throw e;
  }
  // Stopped midway (Ctrl-C, SIGTERM, SIGHUP): the command's group (its own, so not reached by a terminal's
  // Ctrl-C) is killed and the worktree removed before the signal does what it would have done.
  const running: Running = { pgid: null };
  let closing: Promise<void> | null = null;
  const remove = () =>
    (closing ??= (async () => {
      killGroup(running.pgid, 'SIGKILL');
      // The symlinks to the user's shared directories go first, only while they are symlinks (never followed).
      await removeSessionWorktree(repo, { path: dir, shared: shared.map((p) => ({ path: p, how: 'symlink' as const })) });
    })());
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  const onSignal = (sig: NodeJS.Signals) => {
    unlisten();
    void remove()
      .catch(() => undefined) // the signal ends the process anyway; what is left, gc removes
      .finally(() => {
        // Nobody else listens: the signal's own action (ending the process) as without us.
        if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
      });
  };
  const unlisten = () => {
    for (const sig of signals) process.removeListener(sig, onSignal);
  };
  for (const sig of signals) process.on(sig, onSignal);
  const known = opts.fresh ? [] : recordedChecks(s);
  let setUp = false;
  const env = checkEnv(repo.callerEnv);
  const journal = (r: CheckResult) => {
    const ev: StepCheckEvent = {
      ...eventBase(s.id),
      type: CHECK_EVENT,
      step: r.step,
      command: redactText(r.command, opts.settings.redactPatterns),
      tree: r.tree,
      exitCode: r.exitCode,
      durationMs: r.durationMs,
      output: r.output,
      ...(r.reused ? { reused: true } : {}),
    };
    return recordEvent(repo, s.id, opts.settings, ev);
  };
  return {
    warnings,
    async run(n, command) {
      const { commit } = stateAfter(s, n);
      const tree = await treeOf(repo, commit);
      const before = known.find((c) => sameCommand(c.command, command, opts.settings.redactPatterns) && c.tree === tree);
      if (before) {
        // Journaled again (marked reused): the newest check of the session is the one asked for last.
        const reused: CheckResult = { ...before, step: n, reused: true, time: new Date().toISOString() };
        if (opts.record !== false) await journal(reused);
        return reused;
      }
      await wt.git(['checkout', '-q', '--detach', '-f', commit]);
      await wt.git(['clean', '-q', '-f', '-d', ...shared.flatMap((p) => ['-e', `/${p}`])]);
      if (!setUp && cfg.setup) {
        setUp = true;
        const res = await runCommand(cfg.setup, dir, env, running);
        if (res.code !== 0) {
          throw errors.worktreeSetupFailed(`the worktree setup command (agentsnap.worktreeSetup) failed with exit code ${res.code}.`, {
            hint: 'Fix the command or unset it: git config --unset agentsnap.worktreeSetup.',
            data: { command: cfg.setup, exitCode: res.code, output: lastLines(res.output, opts.settings.redactPatterns) },
          });
        }
      }
      const res = await runCommand(command, dir, { ...env, AGENTSNAP_CHECK_STEP: String(n) }, running);
      const result: CheckResult = {
        step: n,
        command,
        tree,
        exitCode: res.code,
        verdict: verdictOf(res.code),
        durationMs: res.ms,
        output: lastLines(res.output, opts.settings.redactPatterns),
        time: new Date().toISOString(),
      };
      known.push(result);
      if (opts.record !== false) await journal(result);
      return result;
    },
    async close() {
      unlisten();
      await remove();
    },
  };
}

/**
 * `agentsnap.worktreeShare` directories of the user's worktree in the check worktree, as session worktrees get
 * them: copy-on-write clones, else symlinks where agentsnap.worktreeShareSymlink allows (a check's writes there
 * reach the user's copy), else left out with a warning. Returns the symlinked ones (files to git: kept by clean).
 */
async function shareInto(repo: Repo, dir: string, cfg: WorktreeConfig, warnings: string[]): Promise<string[]> {
  if (cfg.share.length === 0) return [];
  const isShare = picomatch(cfg.share, { dot: true });
  const res = await repo.git(['ls-files', '-z', '--others', '--ignored', '--exclude-standard', '--directory']);
  const linked: string[] = [];
  for (const entry of res.stdout.toString('utf8').split('\0')) {
    if (!entry.endsWith('/')) continue;
    const rel = entry.slice(0, -1);
    if (!isShare(rel)) continue;
    const src = path.join(repo.worktree, rel);
    const dst = path.join(dir, rel);
    try {
      copyEntry(src, dst, true);
      continue;
    } catch (e) {
      fs.rmSync(dst, { recursive: true, force: true });
      if (!NO_CLONE.has((e as NodeJS.ErrnoException).code ?? '')) throw e;
    }
    if (cfg.shareSymlink) {
      fs.mkdirSync(path.dirname(dst), { recursive: true });
      fs.symlinkSync(src, dst);
      linked.push(rel);
    } else
      warnings.push(
        `${rel} not shared with the check worktree: this filesystem has no copy-on-write clones (agentsnap.worktreeShareSymlink=true shares it by symlink)`,
      );
  }
  return linked;
}

/** `git config agentsnap.check '<cmd>'`: the command checked in the background after each step (only ever from git config). */
export function autoCheckCommand(settings: Settings): string | null {
  const values = settings.gitConfig?.get('agentsnap.check');
  const cmd = values?.[values.length - 1];
  return cmd && cmd.trim() ? cmd : null;
}

function autoCheckLock(repo: Pick<Repo, 'stateDir'>, id: string): string {
  return lockFileIn(repo, `check-${id}.lock`);
}

/**
 * After a step, when agentsnap.check is set: starts the background runner (`agentsnap check --auto`) unless one
 * runs for the session already (it takes the newest step itself when it is done). Costs the tool call one
 * spawn, not waited for; nothing when agentsnap.check is unset.
 */
export function maybeStartAutoCheck(repo: Pick<Repo, 'stateDir' | 'worktree' | 'callerEnv'>, id: string, settings: Settings): void {
  if (!autoCheckCommand(settings)) return;
  try {
    const owner = JSON.parse(readStateFile(autoCheckLock(repo, id))?.toString('utf8') ?? 'null') as {
      pid: number;
      start: string | null;
      host: string;
    } | null;
    if (owner && ownerAlive(owner)) return;
  } catch {
    /* a torn or foreign lock file (not JSON, a link): start a runner, which takes the lock or finds it busy */
  }
  try {
    const child = spawn(process.execPath, [path.join(packageRoot(), 'bin', 'agentsnap.js'), 'check', '--auto', '--session', id], {
      cwd: repo.worktree,
      env: repo.callerEnv,
      detached: true,
      stdio: 'ignore',
    });
    child.unref();
    // Low priority: the agent's own work comes first.
    if (child.pid) os.setPriority(child.pid, 10);
  } catch {
    /* a background check is a convenience: `agentsnap check` runs it by hand */
  }
}

/**
 * The background runner: checks the state after the session's newest step with agentsnap.check, one at a time,
 * at low priority, and again while newer steps came meanwhile (older unchecked ones are superseded: skipped).
 * Exits at once when another runner holds the session's check lock.
 */
export async function runAutoCheck(repo: Repo, id: string, settings: Settings, load: () => Session): Promise<CheckResult[]> {
  const command = autoCheckCommand(settings);
  if (!command) return [];
  const done: CheckResult[] = [];
  for (;;) {
    let lock: Lock;
    try {
      lock = await acquireLock(autoCheckLock(repo, id), { timeoutMs: 0, purpose: 'check' });
    } catch (e) {
      if (isAgentsnapError(e) && e.code === 'Busy') return done; // another runner: it takes the newest step
      throw e;
    }
    try {
      for (;;) {
        const s = load();
        const newest = newestCheckable(s);
        if (newest === null) break;
        const tree = await treeOf(repo, stateAfter(s, newest).commit);
        if (recordedChecks(s).some((c) => sameCommand(c.command, command, settings.redactPatterns) && c.tree === tree)) break;
        const wt = await openCheckWorktree(repo, s, { settings });
        try {
          done.push(await wt.run(newest, command));
        } finally {
          await wt.close();
        }
      }
    } finally {
      lock.release();
    }
    // A step recorded between the last look and the release: its trigger saw this runner and left it to us.
    const s = load();
    const newest = newestCheckable(s);
    if (newest === null) return done;
    const tree = await treeOf(repo, stateAfter(s, newest).commit);
    if (recordedChecks(s).some((c) => sameCommand(c.command, command, settings.redactPatterns) && c.tree === tree)) return done;
  }
}

function newestCheckable(s: Session): number | null {
  for (let i = s.steps.length - 1; i >= 0; i--) {
    const st = s.steps[i] as Step;
    if (st.post && st.source !== 'transcript' && st.status !== 'open') return st.step;
  }
  return null;
}
