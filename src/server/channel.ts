// The client side of the warm server's channel, once for every Node client:
// bin/agentsnap.js (`snap`), bin/wrap-client.js (`wrap`) and tree-client.ts
// (a wrapper's snapshot). The bin/ shims load it as dist/channel.cjs, which
// scripts/bundle-cli.mjs bundles from this file (node: imports only, so a call
// pays no module loading); bin/agentsnap-hook is its POSIX-sh counterpart for
// hooks and follows the same record and the same trust rule (test/server/channel.conformance.test.ts
// runs every client against the same cases).
//
// The run directory: `<git common dir>/agentsnap/run/main` for the main
// worktree, `run/wt-<name of its git dir>` for a linked one (server.ts runDirOf).
//
// TRUST: a client uses a run directory only when
//   - the worktree top, its `.git` (directory or gitfile), the git dir and the common dir are owned by the
//     client's effective uid (what git's safe.directory check asks, and stricter; the Node path that is taken
//     otherwise runs git, which checks for itself),
//   - `<common>/agentsnap`, `…/run` and the run dir are directories (not symlinks) owned by the euid, mode 0700,
//   - `req` (and the claimed `slot.<n>`) are FIFOs owned by the euid, `pid` a regular file owned by the euid,
//   - the pid in it is an integer > 0 whose /proc/<pid> is owned by the euid.
// Anything else: the client takes the Node path as if no server ran, silently. Inside such a directory only
// this uid can create files; the files a client writes there are still opened O_CREAT|O_EXCL|O_NOFOLLOW.
//
// THE CALL, version 2:
//   1. claim a reply slot: create `claim.<n>` exclusively (its content: the client's pid);
//   2. write the request record to `in.<n>` (a fresh file: O_CREAT|O_EXCL|O_NOFOLLOW, 0600):
//        "agentsnap-call 2 <argc>\n" <argc NUL-terminated arguments> <payload bytes to end of file>
//      The arguments are what was asked, as `agentsnap <arguments>` takes them: `hook <agent> <event> …`,
//      `snap …`, `wrap …`, `wrap-end`, `tree`. The payload: a hook's stdin, or the JSON of a wrap-end or tree call.
//      The server learns what was asked from this record only (the caller's environment and working directory it
//      reads from /proc/<pid>/, a process of its own uid); without a valid record the call is refused.
//   3. send "<slot> <pid>\n" on `req` (one short line: written atomically);
//   4. read `slot.<n>` until the line "<pid> <reply>": `ok`, `warn <text>` (hooks), `exit <code> <out b64|-> <err b64|->`,
//      `spawn <json b64> <err b64|->` (a wrap's beginning), or `refused` (no valid record: the client falls back).
//      End of file (the server went away) means no answer: the client falls back.
import fs from 'node:fs';
import path from 'node:path';

/** Reply slots: concurrent calls beyond this many take the Node path. */
export const SLOTS = 16;

/** The version in the request record's header line. */
export const RECORD_VERSION = 2;
const RECORD_MAGIC = 'agentsnap-call';

/** The paths the trust check looks at; top and dotGit are null where git opened the repository already (tree-client.ts). */
export interface RunDirPlace {
  top: string | null;
  dotGit: string | null;
  gitDir: string;
  commonDir: string;
  run: string;
}

/** The run dir of a worktree: `run/main`, or `run/wt-<name>` for a linked worktree's git dir. */
export function runDirName(gitDir: string, linked: boolean): string {
  return linked ? `wt-${path.basename(gitDir)}` : 'main';
}

/**
 * The path a gitfile (prefix `gitdir: `) or a `commondir` file names, or null. git takes the text after the prefix
 * with trailing CR/LF dropped (spaces and inner line breaks kept); a client trusts only what it and the sh client
 * read alike: exactly `<prefix><path>` and an optional newline. Anything else takes the Node path, which runs git.
 */
function pathFileLine(text: string, prefix: string): string | null {
  const m = /^([^\r\n]+)\n?$/.exec(text);
  return m && (m[1] as string).startsWith(prefix) && (m[1] as string).length > prefix.length ? (m[1] as string).slice(prefix.length) : null;
}

/** Where the run dir of the worktree around `cwd` would be (found as the sh client finds it, without git), or null. */
export function locateRunDir(cwd: string): RunDirPlace | null {
  let dir = cwd;
  for (;;) {
    const dotGit = path.join(dir, '.git');
    let st: fs.Stats | null = null;
    try {
      st = fs.statSync(dotGit);
    } catch {
      /* not here */
    }
    if (st) {
      let gitDir = dotGit;
      if (st.isFile()) {
        const named = pathFileLine(fs.readFileSync(dotGit, 'utf8'), 'gitdir: ');
        if (named === null) return null;
        gitDir = path.resolve(dir, named);
      }
      let commonDir = gitDir;
      let linked = false;
      let common: string | null = null;
      try {
        common = fs.readFileSync(path.join(gitDir, 'commondir'), 'utf8');
      } catch {
        /* the main worktree */
      }
      if (common !== null) {
        const named = pathFileLine(common, '');
        if (named === null) return null;
        commonDir = path.resolve(gitDir, named);
        linked = true;
      }
      return { top: dir, dotGit, gitDir, commonDir, run: path.join(commonDir, 'agentsnap', 'run', runDirName(gitDir, linked)) };
    }
    const up = path.dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
}

const euid = (): number => (typeof process.geteuid === 'function' ? process.geteuid() : -1);

/** lstat (never following a symlink), or null. */
function look(p: string): fs.Stats | null {
  try {
    return fs.lstatSync(p);
  } catch {
    return null; // nothing there: the caller refuses the channel
  }
}

function ownedDir(p: string, uid: number, mode: number | null): boolean {
  const st = look(p);
  return !!st && st.isDirectory() && st.uid === uid && (mode === null || (st.mode & 0o7777) === mode);
}

function ownedFifo(p: string, uid: number): boolean {
  const st = look(p);
  return !!st && st.isFIFO() && st.uid === uid;
}

/**
 * The bytes of `file` when it is a regular file (never through a symlink, never waiting on a FIFO an agent step put
 * in its place), else null.
 */
export function readPlainBytes(file: string): Buffer | null {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch {
    return null; // a link, a FIFO or nothing: no plain file, so no trusted server (the Node path)
  }
  try {
    return fs.fstatSync(fd).isFile() ? fs.readFileSync(fd) : null;
  } catch {
    return null; // unreadable: no plain file, so no trusted server (the Node path)
  } finally {
    fs.closeSync(fd);
  }
}

/** readPlainBytes as text. */
export function readPlainFile(file: string): string | null {
  return readPlainBytes(file)?.toString('utf8') ?? null;
}

/**
 * The pid of the server behind `place`'s run dir when the whole place passes the trust check (see the header),
 * else null: the caller takes the Node path.
 */
export function trustedServerPid(place: RunDirPlace): number | null {
  const uid = euid();
  if (uid < 0) return null;
  if (place.top !== null && !ownedDir(place.top, uid, null)) return null;
  if (place.dotGit !== null) {
    const st = look(place.dotGit);
    if (!st || !(st.isDirectory() || st.isFile()) || st.uid !== uid) return null;
  }
  if (!ownedDir(place.gitDir, uid, null) || !ownedDir(place.commonDir, uid, null)) return null;
  const state = path.join(place.commonDir, 'agentsnap');
  const runs = path.join(state, 'run');
  if (path.dirname(place.run) !== runs) return null;
  if (!ownedDir(state, uid, 0o700) || !ownedDir(runs, uid, 0o700) || !ownedDir(place.run, uid, 0o700)) return null;
  if (!ownedFifo(path.join(place.run, 'req'), uid)) return null;
  const pidFile = path.join(place.run, 'pid');
  const st = look(pidFile);
  if (!st || !st.isFile() || st.uid !== uid) return null;
  const text = readPlainFile(pidFile)?.trim() ?? '';
  if (!/^[1-9][0-9]{0,9}$/.test(text)) return null;
  const pid = Number(text);
  const proc = look(`/proc/${pid}`);
  return proc && proc.uid === uid ? pid : null;
}

/** Whether the user switched the server off (AGENTSNAP_SERVER=0/off/false/no). */
export function serverSwitchedOff(env: NodeJS.ProcessEnv): boolean {
  return /^(0|off|false|no)$/i.test(env.AGENTSNAP_SERVER ?? '');
}

/** The run dir of the worktree around `cwd` with its server's pid, when it passes the trust check; else null. */
export function trustedRunDir(cwd: string): { run: string; pid: number } | null {
  if (process.platform !== 'linux') return null;
  let place: RunDirPlace | null;
  try {
    place = locateRunDir(cwd);
  } catch {
    return null; // no repository to find: no server, the Node path as if none ran
  }
  if (!place) return null;
  const pid = trustedServerPid(place);
  return pid === null ? null : { run: place.run, pid };
}

/** The request record (see the header): what was asked, then the payload. */
export function encodeRecord(args: readonly string[], payload: string | Buffer | null): Buffer {
  for (const a of args) if (a.includes('\0')) throw new Error('an argument holds a NUL byte');
  const head = Buffer.from(`${RECORD_MAGIC} ${RECORD_VERSION} ${args.length}\n${args.map((a) => `${a}\0`).join('')}`);
  return payload === null ? head : Buffer.concat([head, Buffer.isBuffer(payload) ? payload : Buffer.from(payload)]);
}

/** A request record's arguments and payload, or null when `buf` is none (another version, a bad header, too few arguments). */
export function decodeRecord(buf: Buffer): { args: string[]; payload: Buffer } | null {
  const nl = buf.indexOf(10);
  if (nl < 0 || nl > 64) return null;
  const m = new RegExp(`^${RECORD_MAGIC} ${RECORD_VERSION} ([1-9][0-9]{0,3})$`).exec(buf.toString('latin1', 0, nl));
  if (!m) return null;
  const argc = Number(m[1]);
  const args: string[] = [];
  let at = nl + 1;
  for (let i = 0; i < argc; i++) {
    const end = buf.indexOf(0, at);
    if (end < 0) return null;
    args.push(buf.toString('utf8', at, end));
    at = end + 1;
  }
  return { args, payload: buf.subarray(at) };
}

const CREATE_FRESH = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW;

/** Writes `data` to a file that must not exist yet (never through a symlink), 0600. */
function writeFresh(file: string, data: string | Buffer): void {
  const fd = fs.openSync(file, CREATE_FRESH, 0o600);
  try {
    const bytes = typeof data === 'string' ? Buffer.from(data) : data;
    for (let at = 0; at < bytes.length; ) at += fs.writeSync(fd, bytes, at);
  } finally {
    fs.closeSync(fd);
  }
}

/** Claims a free reply slot (an exclusive create of claim.<n>); its number, or -1 when all are taken. */
function claimSlot(run: string): number {
  for (let n = 0; n < SLOTS; n++) {
    try {
      writeFresh(path.join(run, `claim.${n}`), `${process.pid}\n`);
      return n;
    } catch {
      /* taken */
    }
  }
  return -1;
}

/**
 * Opens slot n's reply FIFO for reading. The server holds it open for writing: end of file means it is gone. A
 * read-only open would wait forever for a writer if it died after the pid check, so open read-write first (never
 * waits), then read-only (a writer, ours, exists), and drop ours: only the server's end is left.
 */
function openReply(run: string, slot: number): number {
  const slotFile = path.join(run, `slot.${slot}`);
  const ours = fs.openSync(slotFile, fs.constants.O_RDWR | fs.constants.O_NOFOLLOW);
  try {
    return fs.openSync(slotFile, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  } finally {
    fs.closeSync(ours);
  }
}

/** The reply meant for this process from its slot (blocking reads on a pool thread); null at end of file (the server went away). */
async function readReply(fd: number): Promise<string | null> {
  const prefix = `${process.pid} `;
  const buf = Buffer.alloc(64 * 1024);
  let text = '';
  for (;;) {
    const nl = text.indexOf('\n');
    if (nl >= 0) {
      const line = text.slice(0, nl);
      text = text.slice(nl + 1);
      if (line.startsWith(prefix)) return line.slice(prefix.length);
      continue; // a reply meant for a client killed before it read it
    }
    const n = await new Promise<number>((resolve, reject) =>
      fs.read(fd, buf, 0, buf.length, null, (e, got) => (e ? reject(e) : resolve(got))),
    );
    if (n === 0) return null;
    text += buf.toString('latin1', 0, n);
  }
}

/**
 * The tests' hook point between the trust check and the run dir's first use (test/server/channel.attack.test.ts swaps a
 * path component there; server.ts prepareRunDir has one between its check and its chmod):
 * AGENTSNAP_TEST_CHANNEL_PAUSE names a FIFO, read to its end once per process.
 */
export function pauseForTest(): void {
  const fifo = process.env.AGENTSNAP_TEST_CHANNEL_PAUSE;
  if (!fifo) return;
  delete process.env.AGENTSNAP_TEST_CHANNEL_PAUSE;
  try {
    fs.readFileSync(fifo);
  } catch {
    /* no such hook point */
  }
}

/** A reply: its kind (`ok`, `warn`, `exit`, `spawn`, `refused`) and its fields. */
export interface Reply {
  kind: string;
  fields: string[];
}

export interface CallOptions {
  /** How long to wait for a free slot while `serving()` holds (a session's end must not be given up for a burst of hooks). */
  slotWaitMs?: number;
  serving?: () => boolean;
}

/**
 * One call of `agentsnap <args>` to the server of the trusted run dir `run` (trustedRunDir, or trustedServerPid),
 * with `payload`: the reply, or null when none came (no slot, the server went away, it refused): the caller then
 * does the work itself.
 */
export async function callServer(
  run: string,
  args: readonly string[],
  payload: string | Buffer | null,
  opts: CallOptions = {},
): Promise<Reply | null> {
  pauseForTest();
  let claim: string | null = null;
  let input: string | null = null;
  let reply = -1;
  let pinned = -1;
  try {
    // The run dir is used through a descriptor of the directory itself, checked again (ours, 0700): whoever may rename
    // a directory above it (another user who owns the repository's parent) cannot swap it after the trust check.
    pinned = fs.openSync(run, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW);
    const dirSt = fs.fstatSync(pinned);
    if (!dirSt.isDirectory() || dirSt.uid !== euid() || (dirSt.mode & 0o7777) !== 0o700) return null;
    run = `/proc/self/fd/${pinned}`;
    if (!ownedFifo(path.join(run, 'req'), euid())) return null;
    const deadline = Date.now() + (opts.slotWaitMs ?? 0);
    let slot = claimSlot(run);
    while (slot < 0 && Date.now() <= deadline && (opts.serving?.() ?? false)) {
      await new Promise((r) => setTimeout(r, 20));
      slot = claimSlot(run);
    }
    if (slot < 0) return null;
    claim = path.join(run, `claim.${slot}`);
    if (!ownedFifo(path.join(run, `slot.${slot}`), euid())) return null;
    input = path.join(run, `in.${slot}`);
    // The slot is ours: a record a killed client of ours left there goes (unlink never follows a symlink).
    fs.rmSync(input, { force: true });
    writeFresh(input, encodeRecord(args, payload));
    reply = openReply(run, slot);
    const req = fs.openSync(path.join(run, 'req'), fs.constants.O_WRONLY | fs.constants.O_NONBLOCK | fs.constants.O_NOFOLLOW);
    try {
      fs.writeSync(req, `${slot} ${process.pid}\n`);
    } finally {
      fs.closeSync(req);
    }
    const line = await readReply(reply);
    if (line === null) return null;
    const [kind = '', ...fields] = line.split(' ');
    if (kind === 'refused') return null;
    // Answered: the server removes the record and the claim (a next call must not take this slot before that).
    claim = null;
    input = null;
    return { kind, fields };
  } catch {
    return null; // no reply (the server went, or the channel broke): the caller takes the Node path
  } finally {
    if (reply >= 0) fs.closeSync(reply);
    if (input) fs.rmSync(input, { force: true });
    if (claim) fs.rmSync(claim, { force: true });
    if (pinned >= 0) fs.closeSync(pinned);
  }
}

/** A base64 reply field's bytes (`-` is none). */
export function replyBytes(b64: string | undefined): Buffer | null {
  return b64 && b64 !== '-' ? Buffer.from(b64, 'base64') : null;
}

/** Whether this process is in its terminal's foreground process group (then the terminal signals the agent too); without /proc, whether stdin is a terminal. */
export function inTerminalForeground(): boolean {
  try {
    const stat = fs.readFileSync('/proc/self/stat', 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const [pgrp, ttyNr, tpgid] = [Number(f[2]), Number(f[4]), Number(f[5])];
    return ttyNr !== 0 && pgrp === tpgid;
  } catch {
    return process.stdin.isTTY === true; // no /proc: what stdin says
  }
}
