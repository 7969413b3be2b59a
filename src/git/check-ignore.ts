// A persistent `git check-ignore --stdin -z --no-index -v -n`: git's own
// answer to "is this path ignored" (.gitignore at every level, negations,
// excluded parent directories, info/exclude, core.excludesFile) for a
// long-lived engine, without a process per question. -v -n gives one record
// per path asked, so answers can be matched to questions; GIT_FLUSH=1 makes
// git answer each one at once.
//
// git reads the ignore files as it goes: the caller restarts the checker
// (close + new) whenever an ignore file or the config may have changed.
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import type { Repo } from './repo.js';
import { errors } from '../base/errors.js';
import { spawnGit } from './run.js';

interface Pending {
  path: string;
  resolve: (ignored: boolean) => void;
  reject: (e: Error) => void;
}

export class IgnoreChecker {
  private child: ChildProcessWithoutNullStreams | null = null;
  private buf = '';
  private fields: string[] = [];
  private readonly queue: Pending[] = [];
  private stderr = '';
  private closed = false;
  private exited = false;

  /** `kept`: paths answered "not ignored" without asking git (the environment directories a snapshot holds whole). */
  constructor(
    private readonly repo: Repo,
    private readonly kept: (rel: string) => boolean = () => false,
  ) {}

  private start(): ChildProcessWithoutNullStreams {
    if (this.child) return this.child;
    const child = spawnGit(['check-ignore', '--stdin', '-z', '--no-index', '-v', '-n'], {
      cwd: this.repo.worktree,
      env: this.repo.env,
      extraEnv: { GIT_DIR: this.repo.gitDir, GIT_WORK_TREE: this.repo.worktree, GIT_FLUSH: '1' },
    });
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d: string) => {
      this.buf += d;
      this.drain();
    });
    child.stderr.on('data', (d: Buffer) => {
      this.stderr = (this.stderr + d.toString('utf8')).slice(-4096);
    });
    child.stdin.on('error', () => {
      /* the close handler rejects what is pending */
    });
    child.on('close', (code, signal) => {
      this.exited = true;
      if (this.child === child) this.child = null;
      for (const p of this.queue.splice(0)) {
        p.reject(errors.gitFailed(`git check-ignore exited (${signal ?? code}): ${this.stderr.trim()}`, { data: { path: p.path } }));
      }
    });
    this.child = child;
    return child;
  }

  private drain(): void {
    let nul: number;
    while ((nul = this.buf.indexOf('\0')) >= 0) {
      this.fields.push(this.buf.slice(0, nul));
      this.buf = this.buf.slice(nul + 1);
      if (this.fields.length < 4) continue;
      const [source, , pattern] = this.fields;
      this.fields = [];
      const p = this.queue.shift();
      if (!p) continue;
      p.resolve(!!source && !(pattern ?? '').startsWith('!'));
    }
  }

  /** Whether git ignores `rel` (a path relative to the worktree, not behind a symlink, tracked or not). */
  isIgnored(rel: string): Promise<boolean> {
    if (this.closed) return Promise.reject(errors.gitFailed('ignore checker is closed'));
    if (this.kept(rel)) return Promise.resolve(false);
    const child = this.start();
    return new Promise((resolve, reject) => {
      this.queue.push({ path: rel, resolve, reject });
      // A pathspec to git: "./" keeps a name starting with ":" a plain path (answers come in order).
      child.stdin.write(`./${rel}\0`);
    });
  }

  /** Of `paths`, the ignored ones. */
  async ignored(paths: string[]): Promise<Set<string>> {
    const answers = await Promise.all(paths.map((p) => this.isIgnored(p)));
    return new Set(paths.filter((_, i) => answers[i]));
  }

  close(): Promise<void> {
    this.closed = true;
    const child = this.child;
    if (!child || this.exited) return Promise.resolve();
    return new Promise((resolve) => {
      child.once('close', () => resolve());
      child.stdin.end();
    });
  }
}
