// A long-lived `git update-ref --stdin` for the warm server: each update is
// still one all-or-nothing transaction (start, update…, prepare, commit), and
// git reports every command as it goes, so a transaction costs a pipe round
// trip instead of a process start. Anything unexpected ends the process; the
// caller then uses the one-shot path (updateRefs), which also recovers stale
// ref locks.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { errors } from '../base/errors.js';
import type { RefUpdate } from './plumbing.js';

export class RefUpdater {
  private child: ChildProcessWithoutNullStreams | null = null;
  private out = '';
  private err = '';
  private waiter: { done: (ok: boolean) => void } | null = null;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly cwd: string,
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  private start(): ChildProcessWithoutNullStreams {
    // GIT_FLUSH: git reports each command as it completes, not when its input ends.
    const child = spawn('git', ['update-ref', '--stdin'], {
      cwd: this.cwd,
      env: { ...this.env, GIT_FLUSH: '1' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (d: Buffer) => {
      this.out += d.toString('utf8');
      if (this.waiter && this.out.includes('commit: ok\n')) this.waiter.done(true);
    });
    child.stderr.on('data', (d: Buffer) => {
      this.err += d.toString('utf8');
    });
    const gone = () => {
      if (this.child === child) this.child = null;
      this.waiter?.done(false);
    };
    child.on('error', gone);
    child.on('close', gone);
    child.stdin.on('error', () => {
      /* the close handler reports it */
    });
    this.child = child;
    return child;
  }

  /** One transaction; rejects (GitFailed) when git refused it or went away. */
  update(updates: RefUpdate[]): Promise<void> {
    const run = async () => {
      if (updates.length === 0) return;
      const child = this.child ?? this.start();
      this.out = '';
      this.err = '';
      const lines = ['start'];
      for (const u of updates) lines.push(u.value === null ? `delete ${u.ref}` : `update ${u.ref} ${u.value}`);
      lines.push('prepare', 'commit', '');
      const ok = await new Promise<boolean>((resolve) => {
        // A git that neither answers nor exits (it should never happen) is given up on.
        const timer = setTimeout(() => resolve(false), 30_000);
        this.waiter = {
          done: (v) => {
            clearTimeout(timer);
            resolve(v);
          },
        };
        child.stdin.write(lines.join('\n'));
      });
      this.waiter = null;
      if (!ok) {
        this.close();
        throw errors.gitFailed(`git update-ref failed: ${this.err.trim().split('\n').slice(-1)[0] || 'it exited'}`, {
          data: { stderr: this.err },
        });
      }
    };
    const p = this.chain.then(run, run);
    this.chain = p.catch(() => undefined); // the caller gets this failure through `p`: the chain only keeps the order
    return p;
  }

  close(): void {
    const child = this.child;
    this.child = null;
    if (child) {
      child.stdin.end();
      child.kill();
    }
  }
}
