// A persistent `git cat-file --batch` reader: one git process answers every
// object read of a long-lived engine (the incremental snapshotter reads the
// trees along changed paths), instead of one process per read.
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import type { Repo } from './repo.js';
import { errors } from '../base/errors.js';
import { spawnGit } from './run.js';

export interface GitObject {
  type: string;
  body: Buffer;
}

interface Pending {
  oid: string;
  resolve: (o: GitObject) => void;
  reject: (e: Error) => void;
}

export class ObjectReader {
  private child: ChildProcessWithoutNullStreams | null = null;
  private buf: Buffer = Buffer.alloc(0);
  private readonly queue: Pending[] = [];
  private stderr = '';
  private closed = false;
  private readonly exited = new WeakSet<ChildProcessWithoutNullStreams>();

  constructor(private readonly repo: Repo) {}

  private start(): ChildProcessWithoutNullStreams {
    if (this.child) return this.child;
    const child = spawnGit(['cat-file', '--batch'], { cwd: this.repo.worktree, env: { ...this.repo.env, GIT_DIR: this.repo.gitDir } });
    child.stdout.on('data', (d: Buffer) => {
      this.buf = this.buf.length === 0 ? d : Buffer.concat([this.buf, d]);
      this.drain();
    });
    child.stderr.on('data', (d: Buffer) => {
      this.stderr = (this.stderr + d.toString('utf8')).slice(-4096);
    });
    child.stdin.on('error', () => {
      /* the exit handler rejects what is pending */
    });
    const fail = (why: string) => {
      if (this.child === child) this.child = null;
      this.buf = Buffer.alloc(0);
      const pending = this.queue.splice(0);
      for (const p of pending)
        p.reject(errors.gitFailed(`git cat-file --batch ${why}: ${this.stderr.trim() || 'no output'}`, { data: { oid: p.oid } }));
    };
    child.on('error', (e) => fail(`could not run (${e.message})`));
    child.on('close', (code, signal) => {
      this.exited.add(child);
      fail(`exited (${signal ?? code})`);
    });
    this.child = child;
    return child;
  }

  private drain(): void {
    for (;;) {
      const p = this.queue[0];
      if (!p) return;
      const nl = this.buf.indexOf(0x0a);
      if (nl < 0) return;
      const header = this.buf.toString('latin1', 0, nl);
      if (header.endsWith(' missing') || header.endsWith(' ambiguous')) {
        this.buf = this.buf.subarray(nl + 1);
        this.queue.shift();
        p.reject(errors.gitFailed(`object ${p.oid} is ${header.endsWith(' missing') ? 'missing' : 'ambiguous'}`, { data: { oid: p.oid } }));
        continue;
      }
      const m = /^([0-9a-f]+) (\S+) (\d+)$/.exec(header);
      if (!m) {
        this.queue.shift();
        p.reject(errors.gitFailed(`unexpected cat-file output: ${header.slice(0, 100)}`));
        this.child?.kill();
        return;
      }
      const size = Number(m[3]);
      if (this.buf.length < nl + 1 + size + 1) return;
      const body = Buffer.from(this.buf.subarray(nl + 1, nl + 1 + size));
      this.buf = this.buf.subarray(nl + 1 + size + 1);
      this.queue.shift();
      p.resolve({ type: m[2] ?? '', body });
    }
  }

  /** Reads one object by id. */
  read(oid: string): Promise<GitObject> {
    if (this.closed) return Promise.reject(errors.gitFailed('object reader is closed'));
    if (!/^[0-9a-f]{40,64}$/.test(oid)) return Promise.reject(errors.gitFailed(`not an object id: ${oid}`));
    const child = this.start();
    return new Promise((resolve, reject) => {
      this.queue.push({ oid, resolve, reject });
      child.stdin.write(`${oid}\n`);
    });
  }

  /** Ends the git process; pending reads fail. */
  close(): Promise<void> {
    this.closed = true;
    const child = this.child;
    if (!child || this.exited.has(child)) return Promise.resolve();
    return new Promise((resolve) => {
      child.once('close', () => resolve());
      child.stdin.end();
    });
  }
}
