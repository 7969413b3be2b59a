// The whole-product generative test of issue 13 ("nothing is lost, ever"):
// operations (plain JSON, so fast-check prints and shrinks them), their
// interpreter against a real temp repository, an independent ground truth of
// what a snapshot must hold, and the invariants checked after every operation.
// Used by test/safety/nothing-lost.property.test.ts and by example tests that replay a shrunk case
// (test/restore/undo.checkpoint.test.ts).
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { BIN, ROOT, cli, runProcess, stopProcessesIn, tempRepo, type CliResult, type TempRepo } from './helpers.js';
import { runHook } from '../../src/runtime/hook.js';
import { openRepo } from '../../src/git/repo.js';
import { serverEngine } from '../../src/server/serve.js';
import { startWorktreeServer } from '../../src/runtime/server-api.js';
import { runSnap } from '../../src/cli/main.js';
import { startWorktreeSession } from '../../src/worktrees/worktree.js';

// ---------------------------------------------------------------------------
// Operations

/** Paths agents and users write (indexes into this list keep shrinking meaningful). */
export const POOL = [
  'a.txt',
  'b.txt',
  'd/c.txt',
  'd/e/f.txt',
  'g',
  'g/h.txt',
  '.env',
  'big.bin',
  'x.log',
  'keep.log',
  'local.db',
  'sub dir/ü.txt',
  // Below ENVIRONMENT_DIR: ignored, and held whole by snapshots where the environment family is on.
  'deps/m.js',
  'deps/p/q.js',
];
/** The environment family's directory (agentsnap.environment, ignored through info/exclude). */
export const ENVIRONMENT_DIR = 'deps';
export const CONTENTS: Buffer[] = [
  Buffer.from('one\n'),
  Buffer.from('two\r\nlines\r\n'),
  Buffer.from([0, 1, 2, 0xff, 0xfe, 10]),
  Buffer.alloc(0),
  Buffer.alloc(3000, 0x61), // above agentsnap.maxFileSize (2k): an untracked one is skipped as too-large
  Buffer.from('three\n'),
];
export const LINK_TARGETS = ['a.txt', 'd', '../outside', 'missing', 'd/c.txt'];
export const RULES = ['*.db', '*.log', 'd/', 'g', 'b.txt', '!keep.log', 'big.bin', 'sub dir/', '*.txt', 'e/'];
/** The git metadata files the gitmeta-symlink family replaces (by files, or symlinks inside or outside the worktree). */
export const META_FILES = ['.gitmodules', '.gitattributes'] as const;
export const META_CONTENT: Record<(typeof META_FILES)[number], string> = {
  '.gitmodules': '[submodule "nest"]\n\tpath = nest\n\turl = ./nest\n',
  // eol=crlf: git would convert on add; a snapshot records the bytes on disk.
  '.gitattributes': '*.txt text eol=crlf\n*.log filter=absent\n',
};
/** How a gitmeta edit leaves the file: a regular file, a symlink to a worktree file, to a file outside, to nothing; or removed. */
export const META_HOW = ['file', 'link-in', 'link-out', 'link-missing', 'rm'] as const;
/** Where nested-nocommit runs `git init` (directories of tracked files among them). */
export const NEST_DIRS = ['d', 'd/e', 'sub dir', 'n2'];
/** The user's own maintenance (usergc family): each may drop objects nothing references, or check the repository. */
export const GC_KINDS = ['gc', 'repack', 'prune', 'reflog', 'gcauto', 'worktreeprune', 'fsck'] as const;
export type GcKind = (typeof GC_KINDS)[number];
const GC_COMMANDS: Record<GcKind, string[]> = {
  gc: ['gc', '-q', '--prune=now'],
  repack: ['repack', '-a', '-d', '-q'],
  prune: ['prune', '--expire=now'],
  reflog: ['reflog', 'expire', '--all', '--expire=now', '--expire-unreachable=now'],
  // gc.auto=1 makes --auto act at the first loose objects; not detached, so it is over when the op is.
  gcauto: ['-c', 'gc.pruneExpire=now', '-c', 'gc.auto=1', '-c', 'gc.autoPackLimit=1', '-c', 'gc.autoDetach=false', 'gc', '--auto', '-q'],
  worktreeprune: ['worktree', 'prune', '--expire=now'],
  fsck: ['fsck', '--no-progress', '--no-dangling'],
};
/** Free bytes a diskfull `fill` leaves on the repository's tmpfs (0: completely full). */
export const FILL_LEAVE = [0, 8 << 10, 64 << 10, 512 << 10];
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
/** The size of the tmpfs a diskfull sequence's repository lives on. */
const TMPFS_SIZE = '16m';
/** Object formats of the whole repository, drawn once per sequence (AGENTSNAP_PROPERTY_FORMATS=sha1,sha256). */
export const FORMATS = ['sha1', 'sha256'] as const;
export type ObjectFormat = (typeof FORMATS)[number];

/** A change to the worktree, made by the agent (inside a call) or the user. */
export type FsEdit =
  | { k: 'write'; p: number; c: number }
  | { k: 'append'; f: number; c: number }
  | { k: 'rm'; f: number }
  | { k: 'mv'; f: number; p: number }
  | { k: 'chmod'; f: number }
  | { k: 'symlink'; p: number; t: number }
  | { k: 'mkdir'; p: number }
  | { k: 'rmdir'; d: number }
  | { k: 'gitignore'; r: number; add: boolean }
  | { k: 'mmap'; f: number }
  | { k: 'linkwrite'; l: number; c: number }
  | { k: 'lock'; e: number }
  | { k: 'unlock' }
  | { k: 'gitmeta'; m: number; how: number };

export type Op =
  // gc: the user's own git maintenance while the call is open (between its pre and post hooks).
  | { t: 'call'; tool: 'Write' | 'Bash'; edits: FsEdit[]; during: FsEdit | null; fail: boolean; gc?: GcKind | null }
  | { t: 'read' }
  | { t: 'edit'; e: FsEdit }
  | { t: 'exclude'; r: number; add: boolean }
  | { t: 'flag'; f: number; which: 'skip-worktree' | 'assume-unchanged'; on: boolean }
  | { t: 'hardlink'; f: number }
  | { t: 'nested'; k: 'init' | 'commit' | 'edit'; c: number }
  | { t: 'git'; k: 'add' | 'commit' | 'checkout' | 'stash' | 'unstash'; f: number }
  // exact: `--exact` (the worktree exactly as at the target); else the default of issue 32 (the agent's changes taken back, the user's kept).
  | { t: 'undo'; s: number | null; force: boolean; exact?: boolean }
  | { t: 'redo'; force: boolean; exact?: boolean }
  | { t: 'restore'; s: number; after: boolean; f: number; force: boolean; exact?: boolean }
  | { t: 'revert'; s: number }
  | { t: 'wsEdit'; e: FsEdit }
  | { t: 'apply' }
  | { t: 'usergc'; k: GcKind }
  | { t: 'fill'; level: number }
  | { t: 'free' }
  | { t: 'nestinit'; d: number; c: number }
  // The user's package manager writes below ENVIRONMENT_DIR: package n's index.js, package n+1 removed.
  | { t: 'install'; n: number; c: number }
  | { t: 'nestedit'; d: number; f: number; c: number };

/**
 * Op families, each switchable (AGENTSNAP_PROPERTY_OPS=call,edit,... keeps only
 * those; AGENTSNAP_PROPERTY_SKIP=mmap,hardlink drops those), so a family still
 * broken after a merge can be narrowed out while the rest stays green.
 */
export const FAMILIES = [
  'call',
  'read',
  'edit',
  'ignore',
  'flags',
  'hardlink',
  'mmap',
  'types',
  'unreadable',
  'nested',
  'git',
  'undo',
  'apply',
  'usergc',
  'diskfull',
  'gitmeta-symlink',
  'nested-nocommit',
  'environment',
] as const;
export type Family = (typeof FAMILIES)[number];
/**
 * Modes: hooks in-process with the server off; through the warm server hosted as `wrap` hosts it; through a
 * background server (`agentsnap server start`, found by the shell client from the working directory); or
 * with the server off and without root's read capabilities (so unreadable entries are unreadable).
 */
export const MODES = ['off', 'server', 'bgserver', 'nocaps'] as const;
export type Mode = (typeof MODES)[number];
/**
 * Where the repository is: a git repository (`.git` in the worktree), or a directory in no git repository that
 * agentsnap keeps a shadow repository for (issue 33; src/git/shadow.ts). In a shadow the user has no git of their
 * own: the families that are the user's git (git, flags, usergc), session worktrees (apply) and the repository on a
 * tmpfs (diskfull) are left out of its sequences, and so is the background server (`server start` refuses there).
 */
export const LAYOUTS = ['git', 'shadow'] as const;
export type Layout = (typeof LAYOUTS)[number];
/** Op families that need the user's own git repository. */
const GIT_ONLY_FAMILIES: readonly Family[] = ['git', 'flags', 'usergc', 'apply', 'diskfull'];

export function listFromEnv<T extends string>(all: readonly T[], keep: string | undefined, skip: string | undefined): T[] {
  const k = keep
    ? keep
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : [...all];
  const s = new Set(
    (skip ?? '')
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
  );
  for (const x of k) if (!(all as readonly string[]).includes(x)) throw new Error(`unknown name ${x} (known: ${all.join(', ')})`);
  return all.filter((x) => k.includes(x) && !s.has(x));
}

/** Checks that can be switched off while a known bug is open (AGENTSNAP_PROPERTY_SKIP_CHECKS=protect,reads). */
export const SKIP_CHECKS = new Set((process.env.AGENTSNAP_PROPERTY_SKIP_CHECKS ?? '').split(',').filter(Boolean));

export const hasPython = spawnSync('python3', ['-c', 'import mmap'], { stdio: 'ignore' }).status === 0;
const DROP_READ_CAPS = ['--inh-caps=-dac_override,-dac_read_search', '--bounding-set=-dac_override,-dac_read_search', '--'];
export const canDropCaps = process.getuid?.() === 0 && spawnSync('setpriv', [...DROP_READ_CAPS, 'true'], { stdio: 'ignore' }).status === 0;

/** Why the diskfull family cannot run here (it mounts a small tmpfs: root and mount permission), or null when it can. */
export const diskFullUnavailable: string | null = (() => {
  if (process.getuid?.() !== 0) return 'needs root to mount a small tmpfs';
  const probe = fs.mkdtempSync(path.join(os.tmpdir(), 'agentsnap-tmpfs-probe-'));
  try {
    const m = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', probe], { encoding: 'utf8' });
    if (m.status !== 0) return `mount -t tmpfs is not permitted here: ${(m.stderr || m.error?.message || '').trim()}`;
    spawnSync('umount', [probe]);
    return null;
  } finally {
    fs.rmSync(probe, { recursive: true, force: true });
  }
})();

const nat = (max: number) => fc.nat({ max });

export function fsEditArb(families: Family[]): fc.Arbitrary<FsEdit> {
  const has = (f: Family) => families.includes(f);
  const arbs: fc.Arbitrary<FsEdit>[] = [];
  arbs.push(
    fc.record({ k: fc.constant('write' as const), p: nat(POOL.length - 1), c: nat(CONTENTS.length - 1) }),
    fc.record({ k: fc.constant('append' as const), f: nat(20), c: nat(CONTENTS.length - 1) }),
    fc.record({ k: fc.constant('rm' as const), f: nat(20) }),
    fc.record({ k: fc.constant('mv' as const), f: nat(20), p: nat(POOL.length - 1) }),
    fc.record({ k: fc.constant('chmod' as const), f: nat(20) }),
  );
  if (has('types')) {
    arbs.push(
      fc.record({ k: fc.constant('symlink' as const), p: nat(POOL.length - 1), t: nat(LINK_TARGETS.length - 1) }),
      fc.record({ k: fc.constant('mkdir' as const), p: nat(POOL.length - 1) }),
      fc.record({ k: fc.constant('rmdir' as const), d: nat(10) }),
    );
  }
  if (has('ignore')) arbs.push(fc.record({ k: fc.constant('gitignore' as const), r: nat(RULES.length - 1), add: fc.boolean() }));
  if (has('mmap')) arbs.push(fc.record({ k: fc.constant('mmap' as const), f: nat(20) }));
  if (has('hardlink')) arbs.push(fc.record({ k: fc.constant('linkwrite' as const), l: nat(5), c: nat(CONTENTS.length - 1) }));
  if (has('unreadable')) arbs.push(fc.record({ k: fc.constant('lock' as const), e: nat(20) }), fc.constant({ k: 'unlock' as const }));
  if (has('gitmeta-symlink'))
    arbs.push(fc.record({ k: fc.constant('gitmeta' as const), m: nat(META_FILES.length - 1), how: nat(META_HOW.length - 1) }));
  return fc.oneof(...arbs);
}

export function opArb(families: Family[]): fc.Arbitrary<Op> {
  const has = (f: Family) => families.includes(f);
  const edit = fsEditArb(families);
  // Weights: tool calls and edits make the states the other operations work on.
  const arbs: { arbitrary: fc.Arbitrary<Op>; weight: number }[] = [];
  const add = (weight: number, arbitrary: fc.Arbitrary<Op>) => arbs.push({ arbitrary, weight });
  if (has('call')) {
    const call = {
      t: fc.constant('call' as const),
      tool: fc.constantFrom('Write' as const, 'Bash' as const),
      edits: fc.array(edit, { minLength: 1, maxLength: 3 }),
      during: fc.option(edit, { nil: null, freq: 4 }),
      fail: fc.boolean(),
    };
    // Without usergc the record has no gc key, so the sequences of the other families draw as before.
    if (has('usergc')) add(8, fc.record({ ...call, gc: fc.option(fc.constantFrom(...GC_KINDS), { nil: null, freq: 5 }) }));
    else add(8, fc.record(call));
  }
  if (has('read')) add(1, fc.constant({ t: 'read' as const }));
  if (has('edit')) add(4, fc.record({ t: fc.constant('edit' as const), e: edit }));
  if (has('ignore')) add(1, fc.record({ t: fc.constant('exclude' as const), r: nat(RULES.length - 1), add: fc.boolean() }));
  if (has('flags'))
    add(
      1,
      fc.record({
        t: fc.constant('flag' as const),
        f: nat(10),
        which: fc.constantFrom('skip-worktree' as const, 'assume-unchanged' as const),
        on: fc.boolean(),
      }),
    );
  if (has('hardlink')) add(1, fc.record({ t: fc.constant('hardlink' as const), f: nat(20) }));
  if (has('nested'))
    add(
      1,
      fc.record({
        t: fc.constant('nested' as const),
        k: fc.constantFrom('init' as const, 'commit' as const, 'edit' as const),
        c: nat(CONTENTS.length - 1),
      }),
    );
  if (has('git'))
    add(
      1,
      fc.record({
        t: fc.constant('git' as const),
        k: fc.constantFrom('add' as const, 'commit' as const, 'checkout' as const, 'stash' as const, 'unstash' as const),
        f: nat(20),
      }),
    );
  if (has('undo')) {
    // --exact one time in three: the default (keep the user's edits) is what users run.
    const exact = fc.constantFrom(false, false, true);
    add(3, fc.record({ t: fc.constant('undo' as const), s: fc.option(nat(20), { nil: null }), force: fc.boolean(), exact }));
    add(1, fc.record({ t: fc.constant('redo' as const), force: fc.boolean(), exact }));
    add(1, fc.record({ t: fc.constant('restore' as const), s: nat(20), after: fc.boolean(), f: nat(20), force: fc.boolean(), exact }));
    add(1, fc.record({ t: fc.constant('revert' as const), s: nat(20) }));
  }
  if (has('apply')) {
    add(1, fc.record({ t: fc.constant('wsEdit' as const), e: edit }));
    add(1, fc.constant({ t: 'apply' as const }));
  }
  if (has('usergc')) add(1, fc.record({ t: fc.constant('usergc' as const), k: fc.constantFrom(...GC_KINDS) }));
  if (has('diskfull')) {
    add(1, fc.record({ t: fc.constant('fill' as const), level: nat(FILL_LEAVE.length - 1) }));
    add(1, fc.constant({ t: 'free' as const }));
  }
  if (has('nested-nocommit')) {
    add(1, fc.record({ t: fc.constant('nestinit' as const), d: nat(NEST_DIRS.length - 1), c: nat(CONTENTS.length - 1) }));
    add(1, fc.record({ t: fc.constant('nestedit' as const), d: nat(NEST_DIRS.length - 1), f: nat(2), c: nat(CONTENTS.length - 1) }));
  }
  // A sequence with an install runs with agentsnap.environment set (see World.environment); one without, as before.
  if (has('environment')) add(1, fc.record({ t: fc.constant('install' as const), n: nat(2), c: nat(CONTENTS.length - 1) }));
  return fc.oneof(...arbs);
}

// ---------------------------------------------------------------------------
// Ground truth: an independent walk of the worktree

export interface Entry {
  mode: string;
  oid: string;
}
export interface View {
  /** What a snapshot of this moment must hold: path -> entry. */
  tree: Map<string, Entry>;
  /** What it must list as left out: path -> reason. */
  skipped: Map<string, string>;
  /** Files no agentsnap operation may touch (ignored, left out, inside nested repositories): path -> entry. */
  untouchable: Map<string, Entry>;
  /** Entries agentsnap cannot read (nocaps mode only): it must list them as left out (or fail the snapshot). */
  unreadable: string[];
  /** Directories it cannot open (nocaps mode only), empty ones too: listing one as left out is right (it cannot know what is in it). */
  unreadableDirs: string[];
  /** Paths a snapshot may list as skipped or not (a nested repository it cannot see for an unreadable directory). */
  maySkip: Set<string>;
  /**
   * Directories whose .gitignore is in the user's index with skip-worktree and absent from the disk:
   * git (and so this ground truth) still reads its rules from the index; a snapshot, which reads
   * the disk, does not (see compareSnapshot).
   */
  indexOnlyIgnoreDirs: string[];
  /** Ignored files agentsnap cannot read (nocaps mode only): untouchable, but see ignoredOnlyByUnseenRules. */
  unreadableIgnored: string[];
}

/** p is under a directory whose .gitignore a snapshot cannot see: unreadable to it, or gone from the disk under skip-worktree. */
function ignoredOnlyByUnseenRules(view: View, p: string): boolean {
  return (
    view.unreadable.some((u) => path.posix.basename(u) === '.gitignore' && under(p, [path.posix.dirname(u)])) ||
    view.indexOnlyIgnoreDirs.some((d) => under(p, [d]))
  );
}

export const blobOid = (content: Buffer, format: 'sha1' | 'sha256' = 'sha1') =>
  crypto.createHash(format).update(`blob ${content.length}\0`).update(content).digest('hex');

function lstat(abs: string): fs.Stats | null {
  try {
    return fs.lstatSync(abs);
  } catch {
    return null;
  }
}

/** The path is a restore temp file agentsnap itself names (`.<name>.agentsnap-<pid>-<8 hex>`). */
const isRestoreTemp = (rel: string) => /(^|\/)\.[^/]*\.agentsnap-\d+-[0-9a-f]{8}$/.test(rel);

/**
 * The ground truth. Written independently of agentsnap's scan (its own walk,
 * git only asked which paths the user's index tracks and which untracked ones
 * the ignore rules exclude, and the nested repositories' HEADs), because a
 * full scan of agentsnap on a fresh index would share the bugs the test
 * hunts: it seeds that index from the user's, flags and all (issue 13 item 1).
 * What it encodes is the README's promise: tracked paths as they are on disk
 * (whatever their index flags), untracked paths unless ignored, secrets and
 * files above the size cap listed as skipped, nested repositories as a gitlink
 * of their HEAD (or skipped without a commit), never anything inside them.
 */
export function groundTruth(repo: TempRepo, opts: { noCaps: boolean; format?: ObjectFormat; environment?: readonly string[] }): View {
  const format = opts.format ?? repo.objectFormat ?? 'sha1';
  const tracked = new Set(repo.git(['ls-files', '-z']).split('\0').filter(Boolean));
  const files: { rel: string; abs: string; st: fs.Stats; unreadable: boolean }[] = [];
  const nested: { rel: string; unreadable: boolean }[] = [];
  const nestedFiles: string[] = [];
  const unreadableDirs: string[] = [];
  // A `.git` in a directory that holds paths the user tracks does not make it a nested repository: git itself
  // (git add -A, status) reads it as a plain directory of the superproject, its .git left out, and so do
  // snapshots (the decision of issue 29's generative round: agentsnap reads the worktree as git does).
  const gitView = true;
  const trackedUnder = (dir: string) => [...tracked].some((t) => t.startsWith(`${dir}/`));
  const walk = (rel: string, inNested: boolean, unreadable: boolean) => {
    const absDir = path.join(repo.dir, rel);
    for (const name of fs.readdirSync(absDir).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      if (r === '.git' || (!inNested && name === '.git')) continue;
      const abs = path.join(repo.dir, r);
      const st = fs.lstatSync(abs);
      const unr = unreadable || (opts.noCaps && (st.isDirectory() ? (st.mode & 0o500) !== 0o500 : st.isFile() && (st.mode & 0o400) === 0));
      if (st.isDirectory()) {
        if (unr && !inNested) unreadableDirs.push(r);
        if (inNested) {
          if (name !== '.git') walk(r, true, unr);
          continue;
        }
        if (isNestedRepo(repo, abs) && !(gitView && trackedUnder(r))) {
          nested.push({ rel: r, unreadable: unr });
          walk(r, true, unr);
          continue;
        }
        walk(r, false, unr);
      } else if (inNested) nestedFiles.push(r);
      else if (!isRestoreTemp(r)) files.push({ rel: r, abs, st, unreadable: unr });
    }
  };
  walk('', false, false);
  const untracked = files.filter((f) => !tracked.has(f.rel)).map((f) => f.rel);
  const ignored = checkIgnored(repo, [...untracked, ...nested.map((n) => n.rel)]);
  // agentsnap.environment: what is below those directories is snapshotted whatever the rules say.
  for (const p of [...ignored]) if ((opts.environment ?? []).some((d) => p === d || p.startsWith(`${d}/`))) ignored.delete(p);
  const indexOnlyIgnoreDirs = repo
    .git(['ls-files', '-t', '-z'])
    .split('\0')
    .filter((l) => l.startsWith('S ') && path.posix.basename(l.slice(2)) === '.gitignore' && !lstat(path.join(repo.dir, l.slice(2))))
    .map((l) => path.posix.dirname(l.slice(2)));
  const view: View = {
    tree: new Map(),
    skipped: new Map(),
    untouchable: new Map(),
    unreadable: [],
    unreadableDirs,
    indexOnlyIgnoreDirs,
    unreadableIgnored: [],
    maySkip: new Set(),
  };
  const entryOf = (abs: string, st: fs.Stats): Entry =>
    st.isSymbolicLink()
      ? { mode: '120000', oid: blobOid(Buffer.from(fs.readlinkSync(abs)), format) }
      : { mode: st.mode & 0o100 ? '100755' : '100644', oid: blobOid(fs.readFileSync(abs), format) };
  for (const f of files) {
    const e = entryOf(f.abs, f.st);
    if (!tracked.has(f.rel)) {
      if (ignored.has(f.rel)) {
        view.untouchable.set(f.rel, e);
        if (f.unreadable) view.unreadableIgnored.push(f.rel);
        continue;
      }
      const reason = path.posix.basename(f.rel) === '.env' ? 'secret' : f.st.isFile() && f.st.size > 2048 ? 'too-large' : null;
      if (reason) {
        view.skipped.set(f.rel, reason);
        view.untouchable.set(f.rel, e);
        continue;
      }
    }
    // git cannot record a symlinked .gitmodules (update-index ignores it, fsck rejects a tree with one): tracked or
    // not, a snapshot leaves it out and lists it, and a restore never touches it (decided on the restore-edges branch).
    if (f.st.isSymbolicLink() && path.posix.basename(f.rel) === '.gitmodules') {
      view.skipped.set(f.rel, 'gitmodules-symlink');
      view.untouchable.set(f.rel, e);
      continue;
    }
    if (f.unreadable) {
      view.unreadable.push(f.rel);
      view.untouchable.set(f.rel, e);
      continue;
    }
    view.tree.set(f.rel, e);
  }
  for (const rel of nestedFiles) {
    const st = fs.lstatSync(path.join(repo.dir, rel));
    view.untouchable.set(rel, entryOf(path.join(repo.dir, rel), st));
  }
  for (const n of nested) {
    if (ignored.has(n.rel)) continue;
    // Below (or itself) a directory a snapshot cannot read (nocaps): it cannot tell a nested repository there, and
    // lists the unreadable directory instead; a listing as a nested repository is no less right.
    if (n.unreadable) {
      view.maySkip.add(n.rel);
      continue;
    }
    const head = nestedHead(repo, path.join(repo.dir, n.rel));
    if (nestedOtherFormat(repo, path.join(repo.dir, n.rel))) view.skipped.set(n.rel, 'nested-repo-other-format');
    else if (head) view.tree.set(n.rel, { mode: '160000', oid: head });
    else view.skipped.set(n.rel, 'nested-repo-without-commit');
  }
  return view;
}

/** Files under root (below readable directories, .git left out) that a process without read capabilities cannot read. */
function unreadableFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const name of fs.readdirSync(path.join(root, rel)).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      if (r === '.git') continue;
      const st = fs.lstatSync(path.join(root, r));
      if (st.isDirectory()) {
        if ((st.mode & 0o500) === 0o500) walk(r);
      } else if (st.isFile() && (st.mode & 0o400) === 0) out.push(r);
    }
  };
  walk('');
  return out;
}

/** Whether every parent of rel is a real directory or absent (git refuses pathspecs beyond a symlink). */
function reachablePath(repo: TempRepo, rel: string): boolean {
  let cur = repo.dir;
  for (const part of rel.split('/').slice(0, -1)) {
    cur = path.join(cur, part);
    const st = lstat(cur);
    if (!st) return true;
    if (!st.isDirectory()) return false;
  }
  return true;
}

/** GIT_DIR and GIT_WORK_TREE of a shadowed world's repository (layout shadow), for git spawned directly at its top. */
const SHADOW_GIT_ENV = new WeakMap<TempRepo, Record<string, string>>();
function gitEnv(repo: TempRepo): NodeJS.ProcessEnv {
  return { ...repo.env, ...(SHADOW_GIT_ENV.get(repo) ?? {}) };
}

function checkIgnored(repo: TempRepo, all: string[]): Set<string> {
  // A path below a symlink or file now is absent because its parent changed type: never "ignored".
  const paths = all.filter((p) => reachablePath(repo, p));
  if (paths.length === 0) return new Set();
  const r = spawnSync('git', ['check-ignore', '--stdin', '-z', '-v', '-n'], {
    cwd: repo.dir,
    env: gitEnv(repo),
    input: paths.join('\0') + '\0',
    encoding: 'utf8',
  });
  if (r.status !== 0 && r.status !== 1) throw new Error(`check-ignore failed: ${r.stderr}`);
  const parts = r.stdout.split('\0');
  const out = new Set<string>();
  // -v -n: source, line, pattern, path; a match of a negated pattern means not ignored.
  for (let i = 0; i + 3 < parts.length; i += 4) if (parts[i] !== '' && !parts[i + 2]!.startsWith('!')) out.add(parts[i + 3]!);
  return out;
}

/** A snapshot commit's entries (ls-tree -r, gitlinks included). */
export function treeEntries(repo: TempRepo, commitOrTree: string): Map<string, Entry> {
  const out = new Map<string, Entry>();
  for (const rec of repo.git(['ls-tree', '-r', '-z', commitOrTree]).split('\0').filter(Boolean)) {
    const tab = rec.indexOf('\t');
    const [mode, , oid] = rec.slice(0, tab).split(' ');
    out.set(rec.slice(tab + 1), { mode: mode!, oid: oid! });
  }
  return out;
}

const under = (p: string, prefixes: Iterable<string>) => {
  for (const x of prefixes) if (p === x || p.startsWith(`${x}/`) || x === '.' || x === '') return true;
  return false;
};

/** Differences between an expected and an actual map of entries, as readable lines. */
export function diffEntries(want: Map<string, Entry>, got: Map<string, Entry>, exempt: (p: string) => boolean = () => false): string[] {
  const out: string[] = [];
  for (const p of [...new Set([...want.keys(), ...got.keys()])].sort()) {
    if (exempt(p)) continue;
    const w = want.get(p);
    const g = got.get(p);
    if (!w) out.push(`  extra   ${p} (${g!.mode} ${g!.oid.slice(0, 8)})`);
    else if (!g) out.push(`  missing ${p} (${w.mode} ${w.oid.slice(0, 8)})`);
    else if (w.mode !== g.mode || w.oid !== g.oid)
      out.push(`  differs ${p} (want ${w.mode} ${w.oid.slice(0, 8)}, got ${g.mode} ${g.oid.slice(0, 8)})`);
  }
  return out;
}

// ---------------------------------------------------------------------------
// The world: one temp repository, one session, the runners of each mode

export class InvariantError extends Error {}

/**
 * The command said it ran out of space (DiskFull, exit 1, as docs/reference.md documents it). Its stderr only: what
 * it prints on stdout can be recorded text that says so (`log --json` of a step left unprotected by a full disk).
 */
const isDiskFull = (r: CliResult) => /DiskFull|the disk is full/.test(r.stderr);
/** A hook's warning or an error that says the disk is full. */
const saysNoSpace = (text: string) => /disk is full|No space left|Out of diskspace|ENOSPC/i.test(text);
/**
 * dir holds a repository of its own (a nested repository), as git itself decides it (dir.c's
 * is_nonbare_repository_dir): a `.git` that git takes for a repository (HEAD, objects/, refs/, or a gitfile to
 * one). A `.git` that is not one (a `git init` stopped by ENOSPC leaves .git/hooks and no HEAD) makes a plain
 * directory of the superproject, its .git left out (seed 2903: the ground truth recorded a gitlink there, and
 * `git rev-parse` run inside it walked up and named the superproject's HEAD). An explicit --git-dir never walks up.
 */
const isNestedRepo = (repo: TempRepo, abs: string): boolean =>
  !!lstat(path.join(abs, '.git')) &&
  repo.gitRaw([`--git-dir=${path.join(abs, '.git')}`, 'rev-parse', '--git-dir'], { cwd: abs }).status === 0;
/** The commit a nested repository's HEAD names (its own git dir: never the superproject's), or null before its first commit. */
const nestedHead = (repo: TempRepo, abs: string): string | null => {
  const r = repo.gitRaw([`--git-dir=${path.join(abs, '.git')}`, 'rev-parse', '-q', '--verify', 'HEAD^{commit}'], { cwd: abs });
  return r.status === 0 ? r.stdout.trim() : null;
};
/** Whether a nested repository's object format differs from the superproject's: git cannot record it as a gitlink. */
const nestedOtherFormat = (repo: TempRepo, abs: string): boolean => {
  const r = repo.gitRaw([`--git-dir=${path.join(abs, '.git')}`, 'rev-parse', '--show-object-format'], { cwd: abs });
  const mine = repo.gitRaw(['rev-parse', '--show-object-format'], { cwd: repo.dir }); // the sequence's own format
  return r.status === 0 && mine.status === 0 && r.stdout.trim() !== mine.stdout.trim();
};

interface JournalEv {
  type: string;
  [k: string]: unknown;
}

export class World {
  repo!: TempRepo;
  session = '';
  log: string[] = [];
  /** Blob ids the user had on disk at a snapshot instant or at the start of a restore, with where they were seen. */
  known = new Map<string, string>();
  private server: { close(): Promise<void>; runDir: string } | null = null;
  private transcript = '';
  private callN = 0;
  /** Unhooked reads written to the transcript since the last hooked call, with the session head's tree then. */
  private readsPending: { id: string; tree: string }[] = [];
  private wsPath = '';
  private outside = '';
  private links: string[] = [];
  private journalSeen = 0;
  private opIndex = 0;
  get opCount(): number {
    return this.opIndex;
  }

  /** The user ran their own gc/prune/repack/reflog expire (usergc): from then on check (e). */
  private gcRan = false;
  /** The file that fills the repository's tmpfs (diskfull), while it is there. */
  private ballast: string | null = null;
  private mounted = false;
  private unmountOnSignal: (() => void) | null = null;

  constructor(
    readonly mode: Mode,
    readonly families: Family[],
    readonly format: ObjectFormat = 'sha1',
    /** The repository lives on a small tmpfs (a diskfull sequence). */
    readonly onTmpfs = false,
    readonly layout: Layout = 'git',
    /** agentsnap.environment is ENVIRONMENT_DIR (ignored through info/exclude) from before the session starts. */
    readonly environment = false,
  ) {}

  /** The shadow repository's git dir (layout shadow), set up by setup(). */
  private shadowGitDir = '';

  /** The git dir the worktree's repository keeps its state in: `.git`, or the shadow repository's. */
  get gitDir(): string {
    return this.layout === 'shadow' ? this.shadowGitDir : path.join(this.repo.dir, '.git');
  }

  get noCaps(): boolean {
    return this.mode === 'nocaps';
  }

  /**
   * A write no file event reports (mmap, through an outside hard link) or a new
   * outside link happened since the last stat sweep. The warm server reads such
   * writes only after a sweep (README Guarantees: the window that stays, shown
   * by test/snapshot/incremental.sweep.test.ts "window: …"), so before the next snapshot
   * the hosted server is made to sweep: this test checks the closed cases, not
   * the window. A background server is another process: those ops are skipped
   * there (see invisibleSkipped).
   */
  private invisibleSinceSweep = false;

  private invisibleSkipped(): string | null {
    return this.mode === 'bgserver' ? 'skipped with a background server (no sweep to wait for: the window)' : null;
  }

  private async sweepIfNeeded(): Promise<void> {
    if (!this.invisibleSinceSweep || !this.server) return;
    this.invisibleSinceSweep = false;
    await (await serverEngine(this.server))?.sweep();
  }

  async setup(): Promise<void> {
    if (this.layout === 'shadow') return this.setupShadow();
    const repo = tempRepo({ noInit: true });
    this.repo = repo;
    if (this.onTmpfs) {
      const m = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${TMPFS_SIZE},mode=0755`, 'tmpfs', repo.dir], { encoding: 'utf8' });
      if (m.status !== 0) throw new Error(`mount tmpfs failed: ${m.stderr}`);
      this.mounted = true;
      // Stopped by a signal, the helpers remove the temp dir (removeOnSignal): the mount goes first, or that fails.
      this.unmountOnSignal = () => spawnSync('umount', ['-l', repo.dir]);
      for (const sig of SIGNALS) process.prependOnceListener(sig, this.unmountOnSignal);
    }
    repo.git(['init', '-q', '-b', 'main', `--object-format=${this.format}`]);
    for (const [rel, content] of Object.entries({
      '.gitignore': '*.db\n*.log\n!keep.log\n',
      'a.txt': 'a\n',
      'd/c.txt': 'c\n',
      g: 'g\n',
      'tracked.log': 'tracked although ignored\n',
    }))
      repo.write(rel, content);
    repo.git(['add', '-A']);
    repo.git(['commit', '-q', '-m', 'initial']);
    repo.git(['config', 'agentsnap.maxFileSize', '2k']);
    // A file tracked although the rules ignore it (add -A above left it out).
    repo.git(['add', '-f', 'tracked.log']);
    repo.git(['commit', '-qm', 'tracked although ignored']);
    repo.git(['checkout', '-q', '-b', 'other']);
    repo.write('a.txt', 'a on other\n');
    repo.write('o.txt', 'only on other\n');
    repo.git(['add', '-A']);
    repo.git(['commit', '-qm', 'other']);
    repo.git(['checkout', '-q', 'main']);
    repo.write('local.db', "the user's ignored database\n");
    repo.write('b.txt', 'untracked b\n');
    repo.write('a.txt', 'staged a\n');
    repo.git(['add', 'a.txt']);
    // On a tmpfs of its own (diskfull) the outside of hard links must be on that filesystem too: in .git.
    this.outside = this.mounted ? path.join(repo.dir, '.git', 'outside') : path.join(repo.base, 'outside');
    fs.mkdirSync(this.outside);
    await this.startSession();
  }

  /** A directory in no git repository (layout shadow): its files, the shadow repository agentsnap keeps for it, the session. */
  private async setupShadow(): Promise<void> {
    const plain = tempRepo({ noInit: true, objectFormat: this.format });
    for (const [rel, content] of Object.entries({
      '.gitignore': '*.db\n*.log\n!keep.log\n',
      'a.txt': 'a\n',
      'd/c.txt': 'c\n',
      g: 'g\n',
      'local.db': "the user's ignored database\n",
      'b.txt': 'untracked b\n',
    }))
      plain.write(rel, content);
    const made = await runProcess(process.execPath, [BIN, 'shadow', 'create', '--json'], { cwd: plain.dir, env: plain.env, input: '' });
    if (made.code !== 0) throw new Error(`shadow create exited ${made.code}: ${made.stderr}`);
    this.shadowGitDir = (JSON.parse(made.stdout) as { gitDir: string }).gitDir;
    // The harness's own git (ground truth, refs, the user's state) reads the shadow repository, as agentsnap does;
    // git run elsewhere (a nested repository) is left as it is.
    const named = { GIT_DIR: this.shadowGitDir, GIT_WORK_TREE: plain.dir };
    const at = <O extends { cwd?: string; env?: Record<string, string> }>(o?: O): O =>
      (o?.cwd === undefined || path.resolve(o.cwd) === plain.dir ? { ...o, env: { ...named, ...(o?.env ?? {}) } } : o) as O;
    this.repo = { ...plain, git: (args, o) => plain.git(args, at(o)), gitRaw: (args, o) => plain.gitRaw(args, at(o)) };
    SHADOW_GIT_ENV.set(this.repo, named);
    this.repo.git(['config', 'agentsnap.maxFileSize', '2k']);
    this.outside = path.join(plain.base, 'outside');
    fs.mkdirSync(this.outside);
    await this.startSession();
  }

  /** The transcript, the session as `wrap` starts it, the server of the mode, Claude Code's SessionStart. */
  private async startSession(): Promise<void> {
    const repo = this.repo;
    this.transcript = path.join(repo.home, '.claude', 'projects', 'p', 'sess.jsonl');
    fs.mkdirSync(path.dirname(this.transcript), { recursive: true });
    fs.writeFileSync(
      this.transcript,
      `${JSON.stringify({ type: 'user', uuid: 'u-0', timestamp: this.time(), message: { role: 'user', content: 'go' } })}\n`,
    );
    if (this.environment) {
      repo.git(['config', 'agentsnap.environment', ENVIRONMENT_DIR]);
      fs.mkdirSync(path.join(this.gitDir, 'info'), { recursive: true });
      fs.appendFileSync(path.join(this.gitDir, 'info', 'exclude'), `${ENVIRONMENT_DIR}/\n`);
    }
    // The session as `wrap` starts it (its baseline is a snapshot of this moment too).
    const view = this.view();
    const res = await this.agentsnap(['snap', '--json']);
    if (res.code !== 0) throw new Error(`snap failed: ${res.stderr}`);
    this.session = (JSON.parse(res.stdout) as { session: string }).session;
    this.checkSnapshotEvents(view, 'session start', () => true);
    if (this.families.includes('apply')) {
      const r = await openRepo(repo.dir, { env: repo.env });
      const ws = await startWorktreeSession(r, { session: 'ws' });
      this.wsPath = ws.meta.path;
    }
    if (this.mode === 'bgserver') {
      const start = await runProcess(process.execPath, [BIN, 'server', 'start'], {
        cwd: repo.dir,
        env: { ...repo.env, AGENTSNAP_SERVER: 'on' },
        input: '',
      });
      if (start.code !== 0) throw new Error(`server start exited ${start.code}: ${start.stderr}`);
    }
    if (this.mode === 'server') {
      const r = await openRepo(repo.dir, {
        env: { ...repo.env, AGENTSNAP_SERVER: 'on', ...(process.env.AGENTSNAP_SERVER_TRACE ? { AGENTSNAP_SERVER_TRACE: '1' } : {}) },
      });
      this.server = await startWorktreeServer(r, { hosted: true, snap: runSnap });
    }
    // Claude Code's start, as wrap hooks it: the transcript is known before the first hooked call.
    const started = await this.hook('SessionStart', { source: 'startup' });
    if (started) throw new Error(`SessionStart hook: ${started}`);
  }

  async teardown(): Promise<void> {
    try {
      await this.server?.close();
      if (this.mode === 'bgserver' && this.repo)
        await runProcess(process.execPath, [BIN, 'server', 'stop'], {
          cwd: this.repo.dir,
          env: { ...this.repo.env, AGENTSNAP_SERVER: 'on' },
          input: '',
        });
    } finally {
      if (this.repo) {
        if (this.mounted) {
          for (const sig of SIGNALS) if (this.unmountOnSignal) process.removeListener(sig, this.unmountOnSignal);
          // Nothing may hold the mount (a server, a detached pack) when it goes; lazily if something still does.
          stopProcessesIn(this.repo.base);
          if (spawnSync('umount', [this.repo.dir]).status !== 0) spawnSync('umount', ['-l', this.repo.dir]);
        }
        spawnSync('chmod', ['-R', 'u+rwx', this.repo.base]);
        this.repo.cleanup();
      }
    }
  }

  private clock = Date.parse('2026-12-01T08:00:00Z');
  private time(): string {
    this.clock += 1000;
    return new Date(this.clock).toISOString();
  }

  view(): View {
    return groundTruth(this.repo, {
      noCaps: this.noCaps,
      format: this.format,
      environment: this.environment ? [ENVIRONMENT_DIR] : [],
    });
  }

  // ----- running agentsnap

  private agentEnv(): Record<string, string> {
    return { AGENTSNAP_SESSION: this.session, AGENTSNAP_WORKTREE: this.repo.dir };
  }

  /**
   * An agentsnap CLI command as the mode runs it. Checked for every command: never exit 70 or an undocumented
   * code ((e) after the user's own git), and one that runs out of space exits 1 with DiskFull, the journal
   * byte-identical and no agentsnap ref added or moved.
   */
  async agentsnap(args: string[], opts: { cwd?: string } = {}): Promise<CliResult> {
    await this.sweepIfNeeded();
    const journalBefore = this.session ? this.journalBytes() : null;
    const refsBefore = this.agentRefs();
    const res = this.noCaps
      ? await runProcess('setpriv', [...DROP_READ_CAPS, process.execPath, BIN, ...args], {
          cwd: opts.cwd ?? this.repo.dir,
          env: this.repo.env,
          input: '',
        })
      : await cli(this.repo, args, opts);
    const what = `agentsnap ${args.join(' ')}`;
    if (![0, 1, 2, 3, 4, 5].includes(res.code)) {
      const label = this.ballast ? '(diskfull) on a full disk, ' : this.gcRan ? "(e) after the user's own git maintenance, " : '';
      throw new InvariantError(`${label}${what} exited ${res.code}: ${res.stderr}${res.stdout}`);
    }
    if (isDiskFull(res)) {
      if (res.code !== 1)
        throw new InvariantError(`(diskfull) ${what} ran out of space but exited ${res.code}, not 1: ${res.stderr}${res.stdout}`);
      if (journalBefore !== null && !journalBefore.equals(this.journalBytes()))
        throw new InvariantError(
          `(diskfull) ${what} ran out of space and changed the journal:\n${this.journalBytes().subarray(journalBefore.length).toString('utf8').slice(0, 2000)}`,
        );
      // A keep ref is put back when the command fails, but writing its old value can fail on the full disk too.
      const keepMasked = (refs: string) => refs.replace(/^(refs\/agentsnap\/sessions\/[^/]+\/keep\/\d+) [0-9a-f]+$/gm, '$1 (kept)');
      const refsAfter = this.agentRefs();
      if (keepMasked(refsAfter) !== keepMasked(refsBefore))
        throw new InvariantError(
          `(diskfull) ${what} ran out of space and changed agentsnap's refs:\n${this.userStateDiff(refsBefore, refsAfter)}`,
        );
    } else if (this.ballast && res.code === 1 && /No space left|ENOSPC|quota/i.test(res.stderr)) {
      throw new InvariantError(`(diskfull) ${what} ran out of space without saying DiskFull: ${res.stderr}${res.stdout}`);
    }
    return res;
  }

  private journalBytes(): Buffer {
    try {
      return fs.readFileSync(path.join(this.gitDir, 'agentsnap', 'sessions', this.session, 'journal.jsonl'));
    } catch {
      return Buffer.alloc(0);
    }
  }

  /** agentsnap's refs (refs/agent, refs/agentsnap) and what they point at. */
  private agentRefs(): string {
    return this.repo.git(['for-each-ref', '--format=%(refname) %(objectname)', 'refs/agent/', 'refs/agentsnap/']).trim();
  }

  /** One Claude Code hook, through the path the mode takes. Returns its warning (stderr), if any. */
  async hook(event: string, payload: Record<string, unknown>): Promise<string> {
    await this.sweepIfNeeded();
    const input = JSON.stringify({
      hook_event_name: event,
      cwd: this.repo.dir,
      session_id: 'cc-1',
      transcript_path: this.transcript,
      ...payload,
    });
    if (this.mode === 'off') {
      const out = await runHook({
        agent: 'claude',
        event,
        input,
        env: { ...this.repo.env, ...this.agentEnv() },
        cwd: this.repo.dir,
        wrapped: true,
      });
      return out.warning ?? '';
    }
    const serverOn = this.mode === 'server' || this.mode === 'bgserver';
    const env = { ...this.repo.env, ...this.agentEnv(), ...(serverOn ? { AGENTSNAP_SERVER: 'on' } : {}) };
    const run = this.server ? ['--run', this.server.runDir] : [];
    const res = serverOn
      ? await runProcess(
          '/bin/sh',
          [path.join(ROOT, 'bin', 'agentsnap-hook'), ...run, '--exec', process.execPath, BIN, 'claude', event, '--wrapped'],
          { cwd: this.repo.dir, env, input },
        )
      : await runProcess('setpriv', [...DROP_READ_CAPS, process.execPath, BIN, 'hook', 'claude', event, '--wrapped'], {
          cwd: this.repo.dir,
          env,
          input,
        });
    if (res.code !== 0) throw new InvariantError(`hook ${event} exited ${res.code}: ${res.stderr}`);
    return res.stderr.trim();
  }

  // ----- journal and user state

  journal(): JournalEv[] {
    const file = path.join(this.gitDir, 'agentsnap', 'sessions', this.session, 'journal.jsonl');
    return fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l, i) => {
        try {
          return JSON.parse(l) as JournalEv;
        } catch {
          // No crash happens in this test: a line that is not JSON is a torn write (a full disk) or a bug.
          throw new InvariantError(
            `the journal's line ${i + 1} is not JSON${this.ballast ? ' (a write torn by the full disk: a command that runs out of space must leave the journal unchanged)' : ''}: ${l.slice(0, 300)}`,
          );
        }
      });
  }

  /** Journal events appended since the last call. */
  newEvents(): JournalEv[] {
    const all = this.journal();
    const out = all.slice(this.journalSeen);
    this.journalSeen = all.length;
    return out;
  }

  /** The user's index, HEAD, refs (outside agentsnap's) and stash, as bytes. */
  userState(): string {
    const gitDir = this.gitDir;
    const read = (f: string) => {
      try {
        return fs.readFileSync(path.join(gitDir, f)).toString('base64');
      } catch {
        return '-';
      }
    };
    const refs = this.repo
      .git(['for-each-ref', '--format=%(refname) %(objectname)'])
      .split('\n')
      .filter((l) => l && !/^refs\/agent(snap)?\//.test(l))
      .join('\n');
    return [
      `index ${crypto.createHash('sha1').update(read('index')).digest('hex')}`,
      `HEAD ${read('HEAD')}`,
      refs,
      `stash-log ${read('logs/refs/stash')}`,
    ].join('\n');
  }

  private userStateDiff(before: string, after: string): string {
    const a = before.split('\n');
    const b = after.split('\n');
    return [
      ...a.filter((l) => !b.includes(l)).map((l) => `  - ${l.slice(0, 80)}`),
      ...b.filter((l) => !a.includes(l)).map((l) => `  + ${l.slice(0, 80)}`),
    ].join('\n');
  }

  /** Runs an agentsnap operation, asserting (d) the user's state and that nothing untouchable changed. */
  async guarded<T>(what: string, fn: () => Promise<T>, opts: { untouchable?: View } = {}): Promise<T> {
    const before = this.userState();
    const result = await fn();
    const after = this.userState();
    if (before !== after)
      throw new InvariantError(`(d) ${what} changed the user's index/HEAD/refs/stash:\n${this.userStateDiff(before, after)}`);
    if (opts.untouchable) {
      const now = this.view();
      const all = new Map([...now.untouchable, ...now.tree]);
      const lost = diffEntries(opts.untouchable.untouchable, all, (p) => !opts.untouchable!.untouchable.has(p));
      if (lost.length > 0)
        throw new InvariantError(`(b) ${what} touched files it must never touch (ignored, left out, nested):\n${lost.join('\n')}`);
    }
    return result;
  }

  remember(view: View, where: string): void {
    for (const [p, e] of view.tree) if (e.mode !== '160000' && !this.known.has(e.oid)) this.known.set(e.oid, `${p} ${where}`);
  }

  /** (a) for every snapshot event since the last look: its tree and skipped set equal the view of that moment. */
  checkSnapshotEvents(view: View, where: string, mine: (ev: JournalEv) => boolean, warning = ''): number {
    let n = 0;
    for (const ev of this.newEvents()) {
      if (!mine(ev)) continue;
      const commit = (ev.type === 'op.start' ? ev.safety : ev.type === 'session.start' ? ev.baseline : ev.commit) as
        | string
        | null
        | undefined;
      if (!commit || !['session.start', 'step.pre', 'step.post', 'step.checkpoint', 'op.start'].includes(ev.type)) continue;
      if (ev.source === 'transcript') continue;
      n++;
      const skipped = (ev.type === 'op.start' ? ev.safetySkipped : ev.skipped) as { path: string; reason: string }[] | undefined;
      this.compareSnapshot(
        view,
        commit,
        skipped ?? [],
        `${ev.type}${ev.step !== undefined ? ` of step ${String(ev.step)}` : ''} (${where})`,
      );
    }
    if (n === 0 && warning === '') return n;
    if (n === 0) {
      // A snapshot that failed must have failed for an entry it could not read, and said so: one the ground truth
      // counts as readable content, or an ignored one whose rules the snapshot cannot see (an ignore file it cannot
      // read, or one gone from the disk under skip-worktree: see compareSnapshot), for which it is untracked content.
      const unreadable = [...view.unreadable, ...view.unreadableIgnored.filter((u) => ignoredOnlyByUnseenRules(view, u))];
      if (unreadable.some((u) => warning.includes(u) || warning.includes(path.posix.dirname(u)))) return n;
      // On a full disk (diskfull) a hook may take no snapshot, if it says why.
      if (this.ballast && saysNoSpace(warning)) return n;
      throw new InvariantError(`${where}: no snapshot, warning: ${warning}`);
    }
    return n;
  }

  compareSnapshot(view: View, commit: string, skipped: { path: string; reason: string }[], label: string): void {
    const got = treeEntries(this.repo, commit);
    // An unreadable tracked file whose stat data says it is unchanged (a chmod 000) is recorded as git
    // trusts it: with its bytes, which are right (the test, as root, reads them): that is no loss.
    const exact = (u: string) => {
      const want = view.untouchable.get(u);
      const g = got.get(u);
      return !!want && !!g && want.oid === g.oid && want.mode === g.mode;
    };
    // An ignore file the product cannot read (nocaps, a chmod 000 .gitignore) gives no rules, as in git
    // (which warns and reads none): a file only its rules ignore may then be recorded, with its exact
    // bytes, or not (git's untracked cache may still hold the listing from when it was readable).
    // Either is no loss: the bytes are stored, and a restore never touches an ignored file.
    // Likewise a .gitignore the user marked skip-worktree that is gone from the disk: git reads its rules from
    // the index, a snapshot (which reads the disk, and records no file that is not on it) reads none.
    const ignoreUnreadable = (p: string) => ignoredOnlyByUnseenRules(view, p);
    const lines = diffEntries(
      view.tree,
      got,
      (p) => (view.unreadable.includes(p) || (!view.tree.has(p) && ignoreUnreadable(p))) && exact(p),
    );
    const gotSkipped = new Map(skipped.map((s) => [s.path, s.reason]));
    for (const [p, r] of view.skipped)
      if (gotSkipped.get(p) !== r)
        lines.push(`  not listed as skipped (${r}): ${p}${gotSkipped.has(p) ? ` (listed as ${gotSkipped.get(p)})` : ''}`);
    for (const [p, r] of gotSkipped)
      if (
        !view.skipped.has(p) &&
        !view.maySkip.has(p) &&
        !view.unreadable.some((u) => under(u, [p])) &&
        !(r === 'unreadable' && view.unreadableDirs.some((d) => under(p, [d])))
      )
        lines.push(`  listed as skipped (${r}) but should not be: ${p}`);
    for (const u of view.unreadable)
      if (!exact(u) && ![...gotSkipped.keys()].some((s) => under(u, [s])))
        lines.push(`  unreadable ${u}: neither failed nor listed as skipped`);
    if (lines.length > 0)
      throw new InvariantError(
        `(a) ${label}: the snapshot ${commit.slice(0, 10)} differs from the ground truth of that moment:\n${lines.join('\n')}`,
      );
  }

  /** (b) every blob the user had at a snapshot instant or restore start is still reachable (from any ref or index) or on disk. */
  checkNothingLost(current?: View): void {
    if (this.known.size === 0) return;
    const reachable = new Set(
      spawnSync('git', ['rev-list', '--objects', '--all', '--reflog', '--indexed-objects'], {
        cwd: this.repo.dir,
        env: gitEnv(this.repo),
        encoding: 'utf8',
        maxBuffer: 64 << 20,
      })
        .stdout.split('\n')
        .map((l) => l.split(' ')[0]!),
    );
    const now = current ?? this.view();
    const onDisk = new Set([...now.tree.values(), ...now.untouchable.values()].map((e) => e.oid));
    const lost = [...this.known].filter(([oid]) => !reachable.has(oid) && !onDisk.has(oid));
    if (lost.length > 0)
      throw new InvariantError(
        `(b) bytes the user had are in no object and not on disk:\n${lost.map(([oid, w]) => `  ${oid.slice(0, 10)} ${w}`).join('\n')}`,
      );
  }

  // ----- interpreting operations

  files(root = this.repo.dir): string[] {
    const out: string[] = [];
    const walk = (rel: string) => {
      let names: string[];
      try {
        names = fs.readdirSync(path.join(root, rel)).sort();
      } catch {
        return;
      }
      for (const name of names) {
        const r = rel ? `${rel}/${name}` : name;
        if (r === '.git' || r === 'nest') continue;
        const st = fs.lstatSync(path.join(root, r));
        if (st.isDirectory()) {
          if (!isNestedRepo(this.repo, path.join(root, r))) walk(r);
        } else out.push(r);
      }
    };
    walk('');
    return out;
  }

  dirs(root = this.repo.dir): string[] {
    const out: string[] = [];
    const walk = (rel: string) => {
      for (const name of fs.readdirSync(path.join(root, rel)).sort()) {
        const r = rel ? `${rel}/${name}` : name;
        if (r === '.git' || r === 'nest') continue;
        if (fs.lstatSync(path.join(root, r)).isDirectory() && !isNestedRepo(this.repo, path.join(root, r))) {
          out.push(r);
          walk(r);
        }
      }
    };
    walk('');
    return out;
  }

  /** Applies one edit under `root`; returns what it did (for the log), or null when it did not apply. */
  applyEdit(e: FsEdit, root = this.repo.dir): string | null {
    // Without the ignore family, no edit touches an ignore file (a deleted .gitignore is an ignore change too).
    const files = this.files(root).filter((f) => this.families.includes('ignore') || path.posix.basename(f) !== '.gitignore');
    const pickFile = (i: number) => (files.length ? files[i % files.length]! : null);
    const abs = (rel: string) => path.join(root, rel);
    const clear = (rel: string) => {
      // Every parent a real directory, nothing at rel.
      let cur = root;
      for (const part of rel.split('/').slice(0, -1)) {
        cur = path.join(cur, part);
        const st = lstat(cur);
        if (st && !st.isDirectory()) fs.rmSync(cur, { force: true });
        if (!lstat(cur)) fs.mkdirSync(cur);
        else fs.chmodSync(cur, 0o755);
      }
      fs.rmSync(abs(rel), { recursive: true, force: true });
    };
    switch (e.k) {
      case 'write': {
        const rel = POOL[e.p]!;
        clear(rel);
        fs.writeFileSync(abs(rel), CONTENTS[e.c]!);
        return `write ${rel} <${e.c}>`;
      }
      case 'append': {
        const rel = pickFile(e.f);
        if (!rel || lstat(abs(rel))?.isSymbolicLink()) return null;
        fs.chmodSync(abs(rel), fs.statSync(abs(rel)).mode | 0o600);
        fs.appendFileSync(abs(rel), CONTENTS[e.c]!.subarray(0, 100));
        return `append ${rel} <${e.c}>`;
      }
      case 'rm': {
        const rel = pickFile(e.f);
        if (!rel) return null;
        fs.rmSync(abs(rel), { force: true });
        return `rm ${rel}`;
      }
      case 'mv': {
        const rel = pickFile(e.f);
        const to = POOL[e.p]!;
        if (!rel || rel === to || to.startsWith(`${rel}/`) || rel.startsWith(`${to}/`)) return null;
        // Beside the worktree's files, not outside: the repository may be a mount of its own (diskfull).
        const tmp = path.join(root, `.mv-tmp-${process.pid}`);
        fs.renameSync(abs(rel), tmp);
        clear(to);
        fs.renameSync(tmp, abs(to));
        return `mv ${rel} ${to}`;
      }
      case 'chmod': {
        const rel = pickFile(e.f);
        if (!rel) return null;
        const st = fs.lstatSync(abs(rel));
        if (!st.isFile()) return null;
        fs.chmodSync(abs(rel), st.mode & 0o100 ? 0o644 : 0o755);
        return `chmod ${st.mode & 0o100 ? '644' : '755'} ${rel}`;
      }
      case 'symlink': {
        const rel = POOL[e.p]!;
        clear(rel);
        fs.symlinkSync(LINK_TARGETS[e.t]!, abs(rel));
        return `symlink ${rel} -> ${LINK_TARGETS[e.t]}`;
      }
      case 'mkdir': {
        const rel = POOL[e.p]!;
        clear(rel);
        fs.mkdirSync(abs(rel));
        fs.writeFileSync(path.join(abs(rel), 'inner.txt'), `inner of ${rel}\n`);
        return `mkdir ${rel} (with inner.txt)`;
      }
      case 'rmdir': {
        const dirs = this.dirs(root);
        if (!dirs.length) return null;
        const rel = dirs[e.d % dirs.length]!;
        fs.rmSync(abs(rel), { recursive: true, force: true });
        return `rm -rf ${rel}`;
      }
      case 'gitignore': {
        const rule = RULES[e.r]!;
        const file = abs('.gitignore');
        if (lstat(file) && !lstat(file)!.isFile()) fs.rmSync(file, { recursive: true, force: true });
        const lines = lstat(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
        const next = e.add ? [...lines.filter((l) => l !== rule), rule] : lines.filter((l) => l !== rule);
        if (next.join() === lines.join()) return null;
        fs.writeFileSync(file, next.map((l) => `${l}\n`).join(''));
        return `.gitignore ${e.add ? '+' : '-'}${rule}`;
      }
      case 'mmap': {
        if (!hasPython) return 'mmap skipped: no python3';
        if (this.invisibleSkipped()) return `mmap ${this.invisibleSkipped()}`;
        // tmpfs leaves mtime, size and inode as they were on a write through a mapping: no stat-based scan sees it
        // (git's own status neither) once the mapping is gone. README names this limit; seed 20261205 found it.
        if (this.onTmpfs) return 'mmap skipped on tmpfs (a write through a mapping leaves the stat unchanged there)';
        this.invisibleSinceSweep = true;
        const candidates = files.filter((f) => {
          const st = lstat(abs(f));
          return st?.isFile() && st.size > 0;
        });
        const rel = candidates[e.f % Math.max(1, candidates.length)];
        if (!rel) return null;
        // No chmod unless needed: it would raise the inotify event this write must not raise.
        if ((fs.statSync(abs(rel)).mode & 0o600) !== 0o600) fs.chmodSync(abs(rel), fs.statSync(abs(rel)).mode | 0o600);
        const r = spawnSync('python3', [
          '-c',
          'import mmap,sys\nf=open(sys.argv[1],"r+b")\nm=mmap.mmap(f.fileno(),0)\nm[0]=(m[0]+1)%256\nm.flush()\nm.close()\nf.close()',
          abs(rel),
        ]);
        if (r.status !== 0) throw new Error(`mmap write failed: ${r.stderr}`);
        return `mmap write ${rel}`;
      }
      case 'linkwrite': {
        const live = this.links.filter((l) => (lstat(l)?.nlink ?? 0) > 1);
        if (!live.length) return null;
        this.invisibleSinceSweep = true;
        const link = live[e.l % live.length]!;
        if ((fs.statSync(link).mode & 0o600) !== 0o600) fs.chmodSync(link, fs.statSync(link).mode | 0o600);
        const fd = fs.openSync(link, 'r+');
        try {
          const c = Buffer.concat([CONTENTS[e.c]!.subarray(0, 100), Buffer.from(` via ${path.basename(link)}\n`)]);
          fs.writeSync(fd, c, 0, c.length, 0);
          fs.ftruncateSync(fd, c.length);
        } finally {
          fs.closeSync(fd);
        }
        return `write through the outside hard link ${path.basename(link)}`;
      }
      case 'lock': {
        const entries = [...files, ...this.dirs(root)].sort();
        if (!entries.length) return null;
        const rel = entries[e.e % entries.length]!;
        if (lstat(abs(rel))?.isSymbolicLink()) return null;
        fs.chmodSync(abs(rel), 0o000);
        return `chmod 000 ${rel}`;
      }
      case 'unlock': {
        let n = 0;
        const walk = (dir: string) => {
          for (const name of fs.readdirSync(dir)) {
            if (name === '.git') continue;
            const a = path.join(dir, name);
            const st = fs.lstatSync(a);
            if (st.isSymbolicLink()) continue;
            if ((st.mode & 0o777) === 0) {
              fs.chmodSync(a, st.isDirectory() ? 0o755 : 0o644);
              n++;
            }
            if (st.isDirectory()) walk(a);
          }
        };
        walk(root);
        return n ? `chmod back ${n} entries` : null;
      }
      case 'gitmeta': {
        const name = META_FILES[e.m]!;
        const how = META_HOW[e.how]!;
        const file = abs(name);
        fs.rmSync(file, { recursive: true, force: true });
        if (how === 'file') fs.writeFileSync(file, META_CONTENT[name]);
        else if (how === 'link-in') fs.symlinkSync('a.txt', file);
        else if (how === 'link-out') {
          const target = path.join(this.outside, `meta${name}`);
          fs.writeFileSync(target, META_CONTENT[name]);
          fs.symlinkSync(target, file);
        } else if (how === 'link-missing') fs.symlinkSync('missing-meta', file);
        return `${name}: ${how === 'rm' ? 'rm' : how === 'file' ? 'a regular file' : `a symlink (${how})`}`;
      }
    }
  }

  /** applyEdit, except that on a full disk (diskfull) a write the disk refuses is part of what happens. */
  private tryEdit(e: FsEdit, root = this.repo.dir): string | null {
    try {
      return this.applyEdit(e, root);
    } catch (err) {
      if (this.ballast && saysNoSpace(`${(err as NodeJS.ErrnoException).code} ${(err as Error).message}`))
        return `(${e.k}: ENOSPC, the disk is full)`;
      throw err;
    }
  }

  /**
   * Paths anything but a tool call or an operation changed (the user's edits, git commands, ignore rules, apply…):
   * path -> the last step then. `outsideUnknown`: a view failed (a full disk), so the map may miss some.
   */
  private outsideTouched = new Map<string, number>();
  private outsideUnknown = false;

  private noteOutside(before: View): void {
    const after = this.view();
    const last = Math.max(0, ...this.stepNumbers());
    for (const p of new Set([...before.tree.keys(), ...after.tree.keys()])) {
      const a = before.tree.get(p);
      const b = after.tree.get(p);
      if (a?.oid !== b?.oid || a?.mode !== b?.mode) this.outsideTouched.set(p, last);
    }
  }

  /**
   * (c') The default undo, redo and restore keep a path as the user's only where something other than the
   * tool calls changed it after the target (for a checkpoint target, what the checkpoint itself recorded).
   */
  private checkKeptYours(kind: string, start: JournalEv, yours: string[]): void {
    if (this.outsideUnknown || yours.length === 0) return;
    // A call whose snapshot failed left its changes unrecorded: the product cannot tell them from the user's.
    if (this.journal().some((ev) => ev.type === 'step.unprotected')) return;
    const step = (start.target as { step?: number } | undefined)?.step;
    const isCheckpoint = step !== undefined && this.journal().some((ev) => ev.type === 'step.checkpoint' && ev.step === step);
    // A read journaled from the transcript holds the state of the last snapshot before it (a documented limit), not
    // the disk when it ran: the user's changes since that snapshot are after the target as the product sees it.
    const fromTranscript = (n: number) =>
      this.journal().some((ev) => ev.type === 'step.pre' && ev.step === n && ev.source === 'transcript');
    let since = step === undefined ? 0 : isCheckpoint ? step - 1 : step;
    if (step !== undefined && !isCheckpoint && fromTranscript(step)) {
      since = step - 1;
      while (since > 0 && fromTranscript(since)) since--;
    }
    const related = (a: string, b: string) => a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`);
    const bad = yours.filter((y) => ![...this.outsideTouched].some(([p, after]) => related(p, y) && after >= since));
    if (bad.length > 0)
      throw new InvariantError(
        `(c') ${kind} kept as the user's edits paths nothing but tool calls changed since its target (they must go back to it): ${bad.join(', ')}`,
      );
  }

  /** Paths the user changed between tool calls: path -> the entry they left (null: deleted) and the last step then. */
  private userChanges = new Map<string, { entry: Entry | null; afterStep: number }>();

  private noteUserChanges(before: View): void {
    const after = this.view();
    const last = Math.max(0, ...this.stepNumbers());
    for (const p of new Set([...before.tree.keys(), ...after.tree.keys()])) {
      const a = before.tree.get(p);
      const b = after.tree.get(p);
      if (a?.oid === b?.oid && a?.mode === b?.mode) continue;
      this.userChanges.set(p, { entry: b ?? null, afterStep: last });
    }
  }

  /**
   * (c) Protection: an undo or restore without --force that succeeded changed
   * no path whose bytes on disk are the user's own change made after its
   * target step (outside tool calls): those must refuse (exit 3) instead.
   */
  private checkProtected(kind: string, before: View, start: JournalEv): void {
    const step = (start.target as { step?: number; when?: string } | undefined)?.step;
    if (step === undefined) return;
    const planned = ((start.paths ?? []) as { path: string }[]).map((x) => x.path);
    const bad: string[] = [];
    for (const p of planned) {
      const u = this.userChanges.get(p);
      if (!u || u.afterStep < step) continue; // made before the target point: the target holds it
      const now = before.tree.get(p) ?? null;
      if ((now === null && u.entry === null) || (now && u.entry && now.oid === u.entry.oid && now.mode === u.entry.mode)) bad.push(p);
    }
    if (bad.length > 0)
      throw new InvariantError(
        `(c) ${kind} without --force overwrote changes the user made outside tool calls after its target (it must refuse): ${bad.join(', ')}`,
      );
  }

  private stepNumbers(): number[] {
    const steps = new Set<number>();
    for (const ev of this.journal())
      if ((ev.type === 'step.pre' || ev.type === 'step.checkpoint') && typeof ev.step === 'number' && ev.step >= 1) steps.add(ev.step);
    return [...steps].sort((a, b) => a - b);
  }

  /** The tree of the session head: the newest snapshot or operation result that moves it. */
  private headTree(): string {
    let tree = '';
    for (const ev of this.journal()) {
      if (ev.source === 'transcript') continue;
      if (['session.start', 'step.pre', 'step.post', 'step.checkpoint'].includes(ev.type) || (ev.type === 'op.done' && ev.tree))
        tree = ev.tree as string;
    }
    return tree;
  }

  private line(l: unknown): void {
    fs.appendFileSync(this.transcript, `${JSON.stringify(l)}\n`);
  }

  async run(op: Op): Promise<void> {
    this.opIndex++;
    const say = (s: string): void => {
      this.log.push(`${this.opIndex}. ${s}`);
    };
    // Everything but a tool call or an operation is a change outside the tool calls (checkKeptYours).
    const watch = !['call', 'read', 'undo', 'redo', 'restore', 'revert'].includes(op.t);
    let seen: View | null = null;
    try {
      if (watch && !this.outsideUnknown) {
        try {
          seen = this.view();
        } catch {
          this.outsideUnknown = true;
        }
      }
      await this.runOp(op, say);
      if (seen) {
        try {
          this.noteOutside(seen);
        } catch {
          this.outsideUnknown = true;
        }
      }
    } catch (err) {
      if (watch) this.outsideUnknown = true;
      // On a full disk the user's own writes (info/exclude, git init…) may fail: that is the world, not a finding. git
      // does not always say why (seed 18001: `git init` in the nest, "failed to write new configuration file"), so a
      // user's git command that fails while the tmpfs is nearly full counts too.
      const msg = `${(err as NodeJS.ErrnoException).code} ${(err as Error).message}`;
      if (
        !this.ballast ||
        err instanceof InvariantError ||
        !(saysNoSpace(msg) || (/^git .* failed \(\d+\)/.test(String((err as Error).message)) && this.nearlyFull()))
      )
        throw err;
      say(`(${op.t}: stopped by ENOSPC, the disk is full)`);
    }
  }

  private async runOp(op: Op, say: (s: string) => void): Promise<void> {
    switch (op.t) {
      case 'call':
        return this.call(op, say);
      case 'read': {
        const id = `toolu_r${++this.callN}`;
        this.line({
          type: 'assistant',
          uuid: `a-${id}`,
          timestamp: this.time(),
          version: '2.1.332',
          message: {
            id: `msg-${id}`,
            role: 'assistant',
            model: 'claude-test-1',
            content: [{ type: 'tool_use', id, name: 'Read', input: { file_path: path.join(this.repo.dir, 'a.txt') } }],
          },
        });
        this.line({
          type: 'user',
          uuid: `r-${id}`,
          timestamp: this.time(),
          message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: 'whatever' }] },
        });
        this.readsPending.push({ id, tree: this.headTree() });
        say(`unhooked Read ${id} (transcript only)`);
        return;
      }
      case 'edit': {
        const before = this.view();
        const d = this.tryEdit(op.e);
        this.noteUserChanges(before);
        say(`user: ${d ?? 'nothing to do'}`);
        return;
      }
      case 'exclude': {
        const file = path.join(this.gitDir, 'info', 'exclude');
        fs.mkdirSync(path.dirname(file), { recursive: true });
        const rule = RULES[op.r]!;
        const lines = fs.existsSync(file)
          ? fs
              .readFileSync(file, 'utf8')
              .split('\n')
              .filter((l) => l && !l.startsWith('#'))
          : [];
        const next = op.add ? [...lines.filter((l) => l !== rule), rule] : lines.filter((l) => l !== rule);
        fs.writeFileSync(file, next.map((l) => `${l}\n`).join(''));
        say(`user: info/exclude ${op.add ? '+' : '-'}${rule}`);
        return;
      }
      case 'flag': {
        const tracked = this.repo.git(['ls-files', '-z']).split('\0').filter(Boolean);
        const rel = tracked[op.f % tracked.length];
        if (!rel) return say('user: no tracked file to flag');
        this.repo.gitRaw(['update-index', op.on ? `--${op.which}` : `--no-${op.which}`, '--', rel]);
        return say(`user: git update-index --${op.on ? '' : 'no-'}${op.which} ${rel}`);
      }
      case 'hardlink': {
        if (this.invisibleSkipped()) return say(`user: hard link ${this.invisibleSkipped()}`);
        const files = this.files().filter((f) => lstat(path.join(this.repo.dir, f))?.isFile());
        if (!files.length) return say('user: no file to hard-link');
        this.invisibleSinceSweep = true;
        const rel = files[op.f % files.length]!;
        const link = path.join(this.outside, `L${this.links.length}`);
        fs.linkSync(path.join(this.repo.dir, rel), link);
        this.links.push(link);
        return say(`user: ln ${rel} ../outside/${path.basename(link)} (a hard link from outside)`);
      }
      case 'nested': {
        const nest = path.join(this.repo.dir, 'nest');
        // A half-made nest (git init stopped by ENOSPC) is no repository: git run inside it would act on the
        // superproject (add -A and commit there), so it is made again.
        if (op.k === 'init' || !isNestedRepo(this.repo, nest)) {
          if (isNestedRepo(this.repo, nest)) return say('user: nest exists');
          fs.rmSync(nest, { recursive: true, force: true });
          fs.mkdirSync(nest);
          this.repo.git(['init', '-q', '-b', 'main'], { cwd: nest });
          fs.writeFileSync(path.join(nest, 'n.txt'), CONTENTS[op.c]!);
          return say('user: git init nest (a nested repository, no commit yet) with n.txt');
        }
        if (op.k === 'commit') {
          this.repo.git(['add', '-A'], { cwd: nest });
          this.repo.gitRaw(['commit', '-qm', 'nested', '--allow-empty'], { cwd: nest });
          return say('user: commit in nest');
        }
        fs.writeFileSync(path.join(nest, 'n.txt'), CONTENTS[op.c]!);
        return say(`user: write nest/n.txt <${op.c}>`);
      }
      case 'git': {
        const before = this.view();
        await this.userGit(op, say);
        this.noteUserChanges(before);
        return;
      }
      case 'undo':
      case 'redo':
      case 'restore':
      case 'revert':
        return this.operation(op, say);
      case 'wsEdit': {
        if (!this.wsPath) return say('no session worktree');
        const d = this.tryEdit(op.e, this.wsPath);
        const res = await this.agentsnap(['snap', '--session', 'ws', '-q'], { cwd: this.wsPath });
        if (isDiskFull(res)) return say(`agent in session worktree ws: ${d ?? 'nothing'}; snap refused: the disk is full`);
        // A file it cannot read (nocaps, after a chmod 000 there) fails the snapshot naming it (UnreadableFile): that is right.
        const unreadable = this.noCaps ? unreadableFiles(this.wsPath) : [];
        if (res.code === 1 && unreadable.some((u) => res.stderr.includes(u)))
          return say(`agent in session worktree ws: ${d ?? 'nothing'}; snap refused (unreadable: ${unreadable.join(', ')})`);
        if (res.code !== 0) throw new InvariantError(`snap in the session worktree exited ${res.code}: ${res.stderr}`);
        return say(`agent in session worktree ws: ${d ?? 'nothing'}; snap`);
      }
      case 'apply':
        return this.apply(say);
      case 'usergc': {
        say(`user: ${this.userGc(op.k)}`);
        return this.checkAfterUserGit(`git ${op.k}`);
      }
      case 'fill':
        return say(this.fill(FILL_LEAVE[op.level] ?? 0));
      case 'free': {
        if (!this.ballast) return say('disk: nothing to free');
        fs.rmSync(this.ballast, { force: true });
        this.ballast = null;
        return say('disk: the space is free again');
      }
      case 'nestinit': {
        const rel = NEST_DIRS[op.d % NEST_DIRS.length]!;
        const abs = path.join(this.repo.dir, rel);
        if (!reachablePath(this.repo, `${rel}/n.txt`)) return say(`user: ${rel} is (below) a file or symlink: no git init`);
        if (isNestedRepo(this.repo, abs)) return say(`user: ${rel} is a repository already`);
        const before = this.view();
        fs.mkdirSync(abs, { recursive: true });
        this.repo.git(['init', '-q', '-b', 'main', `--object-format=${this.format}`], { cwd: abs });
        fs.writeFileSync(path.join(abs, 'n.txt'), CONTENTS[op.c]!);
        this.noteUserChanges(before);
        return say(`user: git init ${rel} (a nested repository, no commit) with n.txt <${op.c}>`);
      }
      case 'install': {
        const pkg = (n: number) => path.join(this.repo.dir, ENVIRONMENT_DIR, `pkg${n % 3}`);
        if (!reachablePath(this.repo, `${ENVIRONMENT_DIR}/pkg${op.n % 3}/index.js`))
          return say(`user: ${ENVIRONMENT_DIR} is (below) a file or symlink: no install`);
        const before = this.view();
        fs.mkdirSync(pkg(op.n), { recursive: true });
        fs.writeFileSync(path.join(pkg(op.n), 'index.js'), CONTENTS[op.c]!);
        if (reachablePath(this.repo, `${ENVIRONMENT_DIR}/pkg${(op.n + 1) % 3}/x`))
          fs.rmSync(pkg(op.n + 1), { recursive: true, force: true });
        this.noteUserChanges(before);
        return say(`user: install ${ENVIRONMENT_DIR}/pkg${op.n % 3} <${op.c}>, ${ENVIRONMENT_DIR}/pkg${(op.n + 1) % 3} removed`);
      }
      case 'nestedit': {
        const nests = NEST_DIRS.filter((d) => isNestedRepo(this.repo, path.join(this.repo.dir, d)) && reachablePath(this.repo, `${d}/x`));
        if (!nests.length) return say('user: no nested repository to edit');
        const rel = nests[op.d % nests.length]!;
        const name = ['n.txt', 'new.txt', 'c.txt'][op.f % 3]!;
        const file = path.join(this.repo.dir, rel, name);
        // A symlink there (the user's own, before the nested repository) is replaced: writing through a dangling one fails.
        if (lstat(file)?.isSymbolicLink()) fs.rmSync(file);
        if (lstat(file)?.isDirectory()) return say(`user: ${rel}/${name} is a directory (nothing written)`);
        fs.writeFileSync(file, CONTENTS[op.c]!);
        return say(`user: write ${rel}/${name} <${op.c}> (inside the nested repository)`);
      }
    }
  }

  /** The user's own git maintenance: runs it and says what it did; git fsck must find the repository sound. */
  private userGc(k: GcKind): string {
    this.gcRan = true;
    const r = this.repo.gitRaw(GC_COMMANDS[k]);
    const what = `git ${GC_COMMANDS[k].join(' ')}`;
    if (r.status === 0) return what;
    if (this.ballast && saysNoSpace(r.stderr)) return `${what} (failed: the disk is full)`;
    if (k === 'fsck')
      throw new InvariantError(
        `(e) the user's ${what} finds the repository broken (exit ${r.status}):\n${(r.stdout + r.stderr).slice(0, 3000)}`,
      );
    throw new InvariantError(
      `(e) the user's own ${what} fails (exit ${r.status}) with agentsnap's refs in the repository:\n${r.stderr.slice(0, 3000)}`,
    );
  }

  /**
   * (e) After the user's own git: log and doctor work, and a snapshot whose objects the user's gc removed
   * (the worst allowed outcome) is reported by them as lost/missing, never a later command failing.
   */
  private async checkAfterUserGit(what: string): Promise<void> {
    const log = await this.agentsnap(['log', '--session', this.session, '--json']);
    if (log.code !== 0)
      throw new InvariantError(`(e) after the user's ${what}, agentsnap log exits ${log.code}: ${log.stderr}${log.stdout}`);
    const commits = new Map<string, string>();
    for (const ev of this.journal()) {
      for (const key of ['commit', 'baseline', 'safety']) {
        const c = ev[key];
        if (typeof c === 'string' && /^[0-9a-f]{40,64}$/.test(c))
          commits.set(c, `${ev.type}${ev.step !== undefined ? ` of step ${String(ev.step)}` : ''}`);
      }
    }
    const gone: string[] = [];
    const all = spawnSync('git', ['rev-list', '--objects', '--missing=print', ...commits.keys()], {
      cwd: this.repo.dir,
      env: gitEnv(this.repo),
      encoding: 'utf8',
      maxBuffer: 64 << 20,
    });
    if (all.status === 0 && !/^\?/m.test(all.stdout)) return;
    // Something is gone: which snapshots.
    for (const [c, where] of commits) {
      const r = spawnSync('git', ['rev-list', '--objects', '--missing=print', c], {
        cwd: this.repo.dir,
        env: gitEnv(this.repo),
        encoding: 'utf8',
        maxBuffer: 64 << 20,
      });
      if (r.status !== 0 || /^\?/m.test(r.stdout)) gone.push(`${where} (${c.slice(0, 10)})`);
    }
    if (gone.length === 0) return;
    // doctor only then (it costs a CLI start and a walk of every session): exit 0 or 1, never 70 (agentsnap() checks).
    const doctor = await this.agentsnap(['doctor', '--json']);
    if (!/lost|missing/i.test(log.stdout + doctor.stdout + doctor.stderr)) {
      throw new InvariantError(
        `(e) after the user's ${what}, objects of these snapshots are gone and neither log nor doctor reports it: ${gone.join(', ')}`,
      );
    }
  }

  /** The repository's tmpfs has less free than a user's git command may need (FILL_LEAVE's largest, doubled). */
  private nearlyFull(): boolean {
    const st = fs.statfsSync(this.repo.dir);
    return st.bavail * st.bsize < 1 << 20;
  }

  /** diskfull: fills the repository's tmpfs with a ballast file in .git until `leave` bytes are free. */
  private fill(leave: number): string {
    if (!this.mounted) return 'disk: the repository is not on a tmpfs (no fill)';
    this.ballast ??= path.join(this.repo.dir, '.git', 'ballast');
    const fd = fs.openSync(this.ballast, 'a');
    const chunk = Buffer.alloc(64 << 10, 0x2e);
    try {
      for (;;) {
        const st = fs.statfsSync(this.repo.dir);
        const free = st.bavail * st.bsize;
        if (free <= leave) break;
        try {
          fs.writeSync(fd, chunk, 0, Math.min(chunk.length, Math.max(4096, free - leave)));
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ENOSPC') break;
          throw err;
        }
      }
    } finally {
      fs.closeSync(fd);
    }
    return `disk: fill the repository's tmpfs (${leave} bytes left free)`;
  }

  private async call(op: Extract<Op, { t: 'call' }>, say: (s: string) => void): Promise<void> {
    const id = `toolu_w${++this.callN}`;
    const input = op.tool === 'Write' ? { file_path: path.join(this.repo.dir, 'a.txt'), content: 'x' } : { command: 'edit things' };
    this.line({
      type: 'assistant',
      uuid: `a-${id}`,
      timestamp: this.time(),
      version: '2.1.332',
      message: { id: `msg-${id}`, role: 'assistant', model: 'claude-test-1', content: [{ type: 'tool_use', id, name: op.tool, input }] },
    });
    const common = { tool_name: op.tool, tool_use_id: id, tool_input: input };
    const reads = this.readsPending;
    this.readsPending = [];
    this.newEvents();
    const preView = this.view();
    const preWarn = await this.guarded(`pre hook of ${id}`, () => this.hook('PreToolUse', { ...common }));
    const desc: string[] = [];
    const nPre = this.checkSnapshotEvents(preView, `pre hook of ${id}`, (ev) => ev.type !== 'step.post', preWarn);
    // A snapshot instant only when there was a snapshot (one that failed for an unreadable entry, and said so, is none).
    if (nPre > 0) this.remember(preView, `before ${id}`);
    // The reads the transcript held before this call are journaled by now.
    // Each as a step done, in the state the session was in when it ran (pre = post = that head).
    if (nPre > 0 && reads.length > 0 && !SKIP_CHECKS.has('reads')) {
      const journal = this.journal();
      for (const r of reads) {
        const pre = journal.find((ev) => ev.type === 'step.pre' && ev.toolUseId === r.id);
        const post = pre && journal.find((ev) => ev.type === 'step.post' && ev.step === pre.step);
        if (!pre || !post) throw new InvariantError(`the unhooked read ${r.id} is not journaled (pre and post) at the next hooked call`);
        if (pre.tree !== r.tree || post.tree !== r.tree || post.status !== 'done') {
          throw new InvariantError(
            `the unhooked read ${r.id} is misrecorded: pre ${String(pre.tree).slice(0, 10)}, post ${String(post.tree).slice(0, 10)} ${String(post.status)}; the session head then was ${r.tree.slice(0, 10)}`,
          );
        }
      }
    }
    for (const e of op.edits) desc.push(this.tryEdit(e) ?? `(${e.k}: nothing to do)`);
    if (op.during) desc.push(`user meanwhile: ${this.tryEdit(op.during) ?? 'nothing to do'}`);
    if (op.gc) desc.push(`user meanwhile: ${this.userGc(op.gc)}`);
    this.line({
      type: 'user',
      uuid: `r-${id}`,
      timestamp: this.time(),
      message: {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: id, content: 'done', ...(op.fail ? { is_error: true } : {}) }],
      },
    });
    const postView = this.view();
    const event = op.fail ? 'PostToolUseFailure' : 'PostToolUse';
    const postWarn = await this.guarded(`post hook of ${id}`, () =>
      this.hook(event, { ...common, ...(op.fail ? { error: 'Exit code 1' } : { tool_response: { ok: true } }) }),
    );
    say(`agent ${op.tool} call ${id}${op.fail ? ' (fails)' : ''}: ${desc.join('; ')}`);
    if (this.checkSnapshotEvents(postView, `post hook of ${id}`, () => true, postWarn) > 0) this.remember(postView, `after ${id}`);
    this.checkNothingLost(postView);
    if (op.gc) await this.checkAfterUserGit(`git ${op.gc} during ${id}`);
  }

  private async userGit(op: Extract<Op, { t: 'git' }>, say: (s: string) => void): Promise<void> {
    const g = (args: string[]) => this.repo.gitRaw(args);
    switch (op.k) {
      case 'add': {
        const files = this.files();
        const rel = files[op.f % Math.max(1, files.length)];
        if (!rel) return say('user: nothing to add');
        const r = g(['add', '--', rel]);
        return say(`user: git add ${rel}${r.status ? ' (refused)' : ''}`);
      }
      case 'commit': {
        const r = g(['commit', '-qm', `user commit ${this.opIndex}`]);
        return say(`user: git commit${r.status ? ' (nothing to commit)' : ''}`);
      }
      case 'checkout': {
        const head = this.repo.git(['symbolic-ref', '-q', '--short', 'HEAD']).trim();
        const to = head === 'main' ? 'other' : 'main';
        const r = g(['checkout', '-q', to]);
        return say(`user: git checkout ${to}${r.status ? ' (refused by git)' : ''}`);
      }
      case 'stash': {
        const r = g(['stash', 'push', '-q', '-m', `stash ${this.opIndex}`]);
        return say(`user: git stash${r.status ? ' (failed)' : ''}`);
      }
      case 'unstash': {
        const r = g(['stash', 'pop', '-q']);
        return say(`user: git stash pop${r.status ? ' (failed)' : ''}`);
      }
    }
  }

  private async operation(op: Extract<Op, { t: 'undo' | 'redo' | 'restore' | 'revert' }>, say: (s: string) => void): Promise<void> {
    const steps = this.stepNumbers();
    const pick = (i: number) => (steps.length ? steps[i % steps.length]! : 1);
    const force = 'force' in op && op.force ? ['--force'] : [];
    const exact = 'exact' in op && op.exact ? ['--exact'] : [];
    let args: string[];
    let restorePath: string | null = null;
    switch (op.t) {
      case 'undo':
        args = ['undo', ...(op.s === null ? [] : [String(pick(op.s))])];
        break;
      case 'redo':
        args = ['redo'];
        break;
      case 'restore': {
        const s = pick(op.s);
        const candidates = [...new Set([...this.files(), ...[...treeEntries(this.repo, `refs/agent/${this.session}/${s}`).keys()]])].sort();
        restorePath = candidates[op.f % Math.max(1, candidates.length)] ?? 'a.txt';
        args = ['restore', String(s), ...(op.after ? ['--after'] : []), '--', restorePath];
        break;
      }
      case 'revert':
        args = ['revert', String(pick(op.s))];
        break;
    }
    args = [...args.slice(0, 1), '--session', this.session, '--json', ...force, ...exact, ...args.slice(1)];
    this.newEvents();
    const before = this.view();
    const res = await this.guarded(args.join(' '), () => this.agentsnap(args), { untouchable: before });
    say(
      `agentsnap ${args.filter((a) => a !== '--json' && a !== '--session' && a !== this.session).join(' ')} -> exit ${res.code}${isDiskFull(res) ? ' (DiskFull)' : ''}`,
    );
    if (![0, 1, 3, 4].includes(res.code)) throw new InvariantError(`${args.join(' ')} exited ${res.code}: ${res.stderr}${res.stdout}`);
    if (isDiskFull(res)) this.checkNotHalfApplied(args[0]!, before);
    const events = this.newEvents();
    const start = events.find((ev) => ev.type === 'op.start');
    const done = [...events].reverse().find((ev) => ev.type === 'op.done');
    if (start && res.code === 0 && force.length === 0 && (op.t === 'undo' || op.t === 'restore') && !SKIP_CHECKS.has('protect'))
      this.checkProtected(args[0]!, before, start);
    if (start) {
      // The restore start: the safety snapshot holds all the user had (a), so it is kept (b).
      this.remember(before, `at the start of ${args[0]}`);
      const safetySkipped = (start.safetySkipped ?? []) as { path: string; reason: string }[];
      this.compareSnapshot(before, start.safety as string, safetySkipped, `safety snapshot of ${args[0]}`);
    }
    if (res.code === 0 && start && done && done.status === 'done') {
      const after = this.view();
      // undo answers {files, chat}; redo, restore and revert the operation itself.
      const parsed = JSON.parse(res.stdout) as {
        left?: { path: string }[];
        kept?: string[];
        yours?: { path: string }[];
        files?: { left?: { path: string }[]; kept?: string[]; yours?: { path: string }[] };
      };
      const out = parsed.files ?? parsed;
      // (c') what it kept as the user's own was changed outside the tool calls since its target: an operation that
      // "keeps" a path only tool calls changed there has not taken the agent's change back.
      if (exact.length === 0 && op.t !== 'revert' && !SKIP_CHECKS.has('keptyours'))
        this.checkKeptYours(
          args[0]!,
          start,
          (out.yours ?? []).map((y) => y.path),
        );
      const left = [
        ...(out.left ?? []).map((l) => l.path),
        ...((done.left ?? []) as { path: string }[]).map((l) => l.path),
        ...(out.kept ?? []),
      ];
      const scope = (p: string) => (restorePath === null ? false : !under(p, [restorePath]));
      // A file ignored before the operation is never touched: if the restored rules no longer ignore it, it is
      // there as it was (extra beside the target), which is right.
      const untouched = (p: string) => {
        const was = before.untouchable.get(p);
        const now = after.tree.get(p);
        return !!was && !!now && was.oid === now.oid && was.mode === now.mode;
      };
      const exempt = (p: string) => under(p, left) || scope(p) || after.unreadable.includes(p) || untouched(p);
      // (c) the worktree now equals the target, except what the operation reported it left.
      const target = treeEntries(this.repo, start.to as string);
      for (const [p] of after.skipped) target.delete(p);
      // A target file that is on disk but ignored now (an exclude rule added since) is there all the same.
      const onDisk = new Map(after.tree);
      for (const [p, e] of after.untouchable) if (target.has(p) && !onDisk.has(p)) onDisk.set(p, e);
      const diff = diffEntries(target, onDisk, exempt);
      this.checkLeftOutKept(before, args[0]!, target);
      if (!SKIP_CHECKS.has('keptskipped'))
        this.checkSkippedReported(args[0]!, start.to as string, this.scannedTarget(start), after, left, scope);
      if (diff.length > 0)
        throw new InvariantError(
          `(c) after ${args[0]} the worktree differs from its target ${String(start.to).slice(0, 10)} outside the paths it reported as left (${left.join(', ') || 'none'}):\n${diff.join('\n')}`,
        );
      // (a) its result commit is the worktree as it now is.
      if (done.commit) {
        const result = treeEntries(this.repo, done.commit as string);
        // The ignore-rules tolerance of compareSnapshot holds for a result commit too: with a .gitignore it cannot
        // read, or one gone from the disk under skip-worktree, a file only its rules ignore may be in it, exact.
        const ruleless = (p: string) => {
          const want = after.untouchable.get(p);
          const g = result.get(p);
          const noRules =
            after.unreadable.some((u) => path.posix.basename(u) === '.gitignore' && under(p, [path.posix.dirname(u)])) ||
            after.indexOnlyIgnoreDirs.some((d) => under(p, [d]));
          return !after.tree.has(p) && noRules && !!want && !!g && want.oid === g.oid && want.mode === g.mode;
        };
        const lines = diffEntries(after.tree, result, (p) => under(p, left) || after.unreadable.includes(p) || ruleless(p));
        if (lines.length > 0)
          throw new InvariantError(`(a) the result commit of ${args[0]} differs from the worktree it left:\n${lines.join('\n')}`);
      }
    }
    this.checkNothingLost();
  }

  /**
   * (c) A path a snapshot skips now (a nested repository without a commit, a secret, a file above the size cap)
   * that the target did not hold and did not skip either is kept by the operation: it must say so (as left,
   * with its reason), never report the worktree as back at its target while that path is there.
   */
  /**
   * The snapshot whose skipped list is the target's: op.start's toCommit; for a revert (a merged tree, no commit)
   * the state before the reverted step, as the product reads it (its pre, or a checkpoint's parent).
   */
  private scannedTarget(start: Record<string, unknown>): string | null {
    if (typeof start.toCommit === 'string') return start.toCommit;
    const n = (start.target as { step?: number } | undefined)?.step;
    if (start.kind !== 'revert' || n === undefined) return null;
    const evs = this.journal();
    const pre = evs.find((ev) => ev.type === 'step.pre' && ev.step === n);
    if (pre && typeof pre.commit === 'string') return pre.commit;
    const cp = evs.find((ev) => ev.type === 'step.checkpoint' && ev.step === n);
    return cp && typeof cp.commit === 'string' ? this.repo.git(['rev-parse', `${cp.commit}^1`]).trim() : null;
  }

  private checkSkippedReported(
    what: string,
    to: string,
    toCommit: string | null,
    after: View,
    left: string[],
    outOfScope: (p: string) => boolean,
  ): void {
    // op.start's `to` is the target's tree; the snapshot event that names what it skipped names its commit.
    const targetEv =
      toCommit === null
        ? undefined
        : this.journal().find((ev) => ev.commit === toCommit || ev.baseline === toCommit || ev.safety === toCommit);
    const targetSkipped = new Set(
      (((targetEv?.type === 'op.start' ? targetEv.safetySkipped : targetEv?.skipped) as { path: string }[] | undefined) ?? []).map(
        (x) => x.path,
      ),
    );
    const target = treeEntries(this.repo, to);
    const silent = [...after.skipped]
      .filter(
        ([p]) =>
          !target.has(p) && ![...target.keys()].some((t) => under(t, [p])) && !targetSkipped.has(p) && !under(p, left) && !outOfScope(p),
      )
      .map(([p, r]) => `${p} (${r})`);
    if (silent.length > 0)
      throw new InvariantError(
        `(c) ${what} kept paths its target does not hold, skipped by snapshots, without reporting them as left: ${silent.join(', ')}`,
      );
  }

  /** (diskfull) An operation that ran out of space changed nothing in the worktree: never a half-applied change. */
  private checkNotHalfApplied(what: string, before: View): void {
    const now = this.view();
    const diff = diffEntries(new Map([...before.tree, ...before.untouchable]), new Map([...now.tree, ...now.untouchable]));
    if (diff.length > 0)
      throw new InvariantError(`(diskfull) ${what} ran out of space (DiskFull) and left the worktree half-changed:\n${diff.join('\n')}`);
  }

  /**
   * (b) A path the operation deleted although its target does not name it must
   * have been absent from the target because it was not there, never because
   * the target left it out: under the target's rules (restored by now) it is
   * neither ignored nor a file snapshots skip.
   */
  checkLeftOutKept(before: View, what: string, target: Map<string, Entry>): void {
    const gone = [...before.tree.keys(), ...before.untouchable.keys()].filter((p) => !target.has(p) && !lstat(path.join(this.repo.dir, p)));
    if (gone.length === 0) return;
    const ignoredNow = checkIgnored(this.repo, gone);
    // Below the environment directory every target holds what was there, whatever the rules say (agentsnap.environment).
    const held = (p: string) => this.environment && under(p, [ENVIRONMENT_DIR]);
    const bad = gone.filter((p) => (ignoredNow.has(p) && !held(p)) || path.posix.basename(p) === '.env');
    if (bad.length > 0)
      throw new InvariantError(
        `(b) ${what} deleted files its target left out (ignored or skipped there), not files absent from it: ${bad.join(', ')}`,
      );
  }

  private async apply(say: (s: string) => void): Promise<void> {
    if (!this.wsPath) return say('no session worktree');
    const before = this.view();
    const res = await this.guarded('apply ws', () => this.agentsnap(['apply', 'ws', '--json']), { untouchable: before });
    say(`agentsnap apply ws -> exit ${res.code}${isDiskFull(res) ? ' (DiskFull)' : ''}`);
    if (![0, 1, 3, 4].includes(res.code)) throw new InvariantError(`apply exited ${res.code}: ${res.stderr}${res.stdout}`);
    if (isDiskFull(res)) this.checkNotHalfApplied('apply', before);
    if (res.code === 0) {
      const out = JSON.parse(res.stdout) as { safety: string | null; empty: boolean; deleted?: string[] };
      // Only what the session deleted, never what it left out (ignored by the rules it brought).
      const ignoredNow = checkIgnored(this.repo, out.deleted ?? []);
      const bad = (out.deleted ?? []).filter((p) => ignoredNow.has(p) || path.posix.basename(p) === '.env');
      if (bad.length > 0)
        throw new InvariantError(
          `(b) apply deleted files the session only left out (ignored by its rules), not files it deleted: ${bad.join(', ')}`,
        );
      if (out.safety) {
        this.remember(before, 'at the start of apply');
        const lines = diffEntries(before.tree, treeEntries(this.repo, out.safety), (p) => before.unreadable.includes(p));
        if (lines.length > 0)
          throw new InvariantError(`(a) the safety snapshot of apply differs from the worktree before it:\n${lines.join('\n')}`);
      }
    }
    this.checkNothingLost();
  }
}

/** Runs one sequence in a fresh world; throws (with the log) at the first broken invariant. */
export async function runSequence(
  modeDrawn: Mode,
  familiesDrawn: Family[],
  opsDrawn: Op[],
  onLog?: (log: string[]) => void,
  format: ObjectFormat = 'sha1',
  layout: Layout = 'git',
): Promise<void> {
  // In a shadow repository's directory: none of the user's own git, and no background server (see LAYOUTS).
  const shadow = layout === 'shadow';
  const mode: Mode = shadow && modeDrawn === 'bgserver' ? 'off' : modeDrawn;
  const families = shadow ? familiesDrawn.filter((f) => !GIT_ONLY_FAMILIES.includes(f)) : familiesDrawn;
  const ops = shadow
    ? opsDrawn
        .filter((o) => !['git', 'flag', 'usergc', 'apply', 'wsEdit', 'fill', 'free'].includes(o.t))
        .map((o) => (o.t === 'call' && o.gc ? { ...o, gc: null } : o))
    : opsDrawn;
  // Only a sequence that fills the disk mounts a tmpfs for its repository.
  const w = new World(
    mode,
    families,
    format,
    ops.some((o) => o.t === 'fill') && diskFullUnavailable === null,
    layout,
    families.includes('environment') && ops.some((o) => o.t === 'install'),
  );
  try {
    await w.setup();
    for (const op of ops) {
      try {
        await w.run(op);
      } catch (e) {
        const msg = e instanceof Error ? e.message : String(e);
        const here = `${w.opCount}. `;
        const log = w.log.at(-1)?.startsWith(here)
          ? [...w.log.slice(0, -1), `${w.log.at(-1)}   <- failed here`]
          : [...w.log, `${here}${JSON.stringify(op)}   <- failed here`];
        throw new InvariantError(
          `${msg}\n  mode ${mode}; object format ${format}; layout ${layout}; the sequence:\n    ${log.join('\n    ')}`,
        );
      }
    }
    onLog?.(w.log);
  } finally {
    await w.teardown();
  }
}
