// In-process editing of a git tree: a base tree read lazily (only the
// directories on edited paths), entries set or removed, and the changed
// trees written as loose objects. Shared by the incremental engine (a
// watcher's dirty paths) and snapshotTree's in-process path (the dirty paths
// `git status` reports against a copy of the user's index).
import fs from 'node:fs';
import path from 'node:path';
import type { Repo } from '../git/repo.js';
import { gitBool, lastValue, type GitConfig } from '../git/config.js';
import type { ObjectReader } from '../git/cat-file.js';
import { encodeTree, parseTree, type ObjectStore, type TreeEntry } from '../git/objects.js';
import { pathsInput } from '../base/names.js';

export interface Leaf {
  mode: string;
  oid: string;
}

/** A directory of the tree, read lazily; oid null once changed (rewritten on the next write). */
class DirNode {
  entries: Map<string, Leaf | DirNode> | null = null;
  constructor(public oid: string | null) {
    if (oid === null) this.entries = new Map();
  }
}

const TREE_MODE = '40000';
export const DEFAULT_LARGE_FILE = 4 * 1024 * 1024;

export class TreeEditor {
  private root: DirNode;
  /** Directories read into memory (callers bound their cache with it). */
  loadedDirs = 0;

  constructor(
    private readonly reader: ObjectReader,
    private readonly store: ObjectStore,
    tree: string,
  ) {
    this.root = new DirNode(tree);
  }

  private async load(node: DirNode): Promise<Map<string, Leaf | DirNode>> {
    if (node.entries) return node.entries;
    const obj = await this.reader.read(node.oid as string);
    if (obj.type !== 'tree') throw new Error(`${node.oid} is a ${obj.type}, not a tree`);
    const entries = new Map<string, Leaf | DirNode>();
    for (const e of parseTree(obj.body, this.store.objectFormat)) {
      // A name that is not UTF-8 would be written back changed.
      if (e.name.includes('\uFFFD')) throw new Error(`a name that is not UTF-8 in tree ${node.oid}`);
      entries.set(e.name, e.mode === TREE_MODE ? new DirNode(e.oid) : { mode: e.mode, oid: e.oid });
    }
    node.entries = entries;
    this.loadedDirs++;
    return entries;
  }

  /** The directories from the root down to rel's parent, created (and marked changed) when `create`. */
  private async pathTo(rel: string, create: boolean): Promise<DirNode[] | null> {
    const parts = rel.split('/');
    const chain: DirNode[] = [this.root];
    for (let i = 0; i < parts.length - 1; i++) {
      const entries = await this.load(chain[chain.length - 1] as DirNode);
      const name = parts[i] as string;
      let child = entries.get(name);
      if (!(child instanceof DirNode)) {
        if (!create) return null;
        child = new DirNode(null);
        entries.set(name, child);
        for (const d of chain) d.oid = null;
      }
      chain.push(child);
    }
    return chain;
  }

  /** Removes rel (a file, or a directory with everything below it). */
  async remove(rel: string): Promise<void> {
    const chain = await this.pathTo(rel, false);
    if (!chain) return;
    const entries = await this.load(chain[chain.length - 1] as DirNode);
    const name = rel.slice(rel.lastIndexOf('/') + 1);
    if (!entries.has(name)) return;
    entries.delete(name);
    for (const d of chain) d.oid = null;
  }

  /** Sets rel to a blob entry (replacing a directory or a file in its way). */
  async set(rel: string, leaf: Leaf): Promise<void> {
    const chain = (await this.pathTo(rel, true)) as DirNode[];
    const entries = await this.load(chain[chain.length - 1] as DirNode);
    const name = rel.slice(rel.lastIndexOf('/') + 1);
    const old = entries.get(name);
    if (old && !(old instanceof DirNode) && old.mode === leaf.mode && old.oid === leaf.oid) return;
    entries.set(name, leaf);
    for (const d of chain) d.oid = null;
  }

  /** Writes the changed trees; returns the root tree's id. */
  write(): string {
    return this.writeNode(this.root, true) as string;
  }

  private writeNode(node: DirNode, isRoot: boolean): string | null {
    if (node.oid !== null) return node.oid;
    const entries = node.entries as Map<string, Leaf | DirNode>;
    const list: TreeEntry[] = [];
    for (const [name, e] of [...entries]) {
      if (e instanceof DirNode) {
        const oid = this.writeNode(e, false);
        if (oid === null) {
          entries.delete(name); // git keeps no empty directories
          continue;
        }
        list.push({ mode: TREE_MODE, name, oid });
      } else list.push({ mode: e.mode, name, oid: e.oid });
    }
    if (list.length === 0 && !isRoot) return null;
    node.oid = this.store.write('tree', list.length === 0 ? Buffer.alloc(0) : encodeTree(list));
    return node.oid;
  }
}

/**
 * The blob entry of a worktree file as it is on disk (raw bytes, mode as git
 * records it), written to the store; null when it went away; a string (the
 * reason) when git must be asked instead.
 */
export async function blobOf(
  repo: Repo,
  store: ObjectStore,
  rel: string,
  symlink: boolean,
  largeFileBytes = DEFAULT_LARGE_FILE,
): Promise<Leaf | null | string> {
  const abs = path.join(repo.worktree, rel);
  if (symlink) {
    // git cannot record a symlinked .gitmodules (a tree with one fails fsck): the full scan lists it as left out.
    if (path.posix.basename(rel) === '.gitmodules') return `${rel} is a symlinked .gitmodules`;
    try {
      return { mode: '120000', oid: store.write('blob', fs.readlinkSync(abs, { encoding: 'buffer' })) };
    } catch (e) {
      return `cannot read link ${rel} (${(e as NodeJS.ErrnoException).code})`;
    }
  }
  let fd: number;
  try {
    fd = fs.openSync(abs, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  } catch (e) {
    return `cannot open ${rel} (${(e as NodeJS.ErrnoException).code})`;
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) return `${rel} changed type while read`;
    const mode = st.mode & 0o100 ? '100755' : '100644';
    if (st.size > largeFileBytes) {
      const [oid] = await hashRaw(repo, [rel]);
      return { mode, oid: oid as string };
    }
    const body = Buffer.alloc(st.size);
    let off = 0;
    while (off < st.size) {
      const n = fs.readSync(fd, body, off, st.size - off, off);
      if (n === 0) break;
      off += n;
    }
    if (off !== st.size) return `${rel} changed while read`;
    return { mode, oid: store.write('blob', body) };
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * git settings under which what git records for a worktree file is not its
 * raw bytes and lstat mode (or a path is not its own name): trees are then
 * left to git.
 */
export function unsupportedConfig(cfg: GitConfig): string | null {
  const bool = (key: string, dflt: boolean) => {
    const v = lastValue(cfg, key);
    if (v === undefined) return dflt;
    // As git reads it (2 and 1k are true, the empty value false); a value git rejects: the answer that declines.
    return gitBool(v) ?? !dflt;
  };
  if (!bool('core.filemode', true)) return 'core.fileMode=false';
  if (!bool('core.symlinks', true)) return 'core.symlinks=false';
  if (bool('core.ignorecase', false)) return 'core.ignoreCase=true';
  if (bool('core.precomposeunicode', false)) return 'core.precomposeUnicode=true';
  if (bool('core.sparsecheckout', false)) return 'sparse checkout';
  for (const key of cfg.keys()) if (key.startsWith('include.') || key.startsWith('includeif.')) return 'git config includes other files';
  return null;
}

/**
 * Whether `hash-object --stdin-paths` reads p back as written: it is line
 * based, unquotes a line that starts with `"` (C style) and strips a CR before
 * the LF, so such a name would hash another file (or fail).
 */
export function stdinPathSafe(p: string): boolean {
  return !p.includes('\n') && !p.startsWith('"') && !p.endsWith('\r');
}

export async function hashRaw(repo: Repo, paths: string[]): Promise<string[]> {
  // --stdin-paths is line based: other paths are hashed one by one.
  const simple = paths.filter(stdinPathSafe);
  const out = new Map<string, string>();
  if (simple.length > 0) {
    const res = await repo.git(['hash-object', '-w', '--no-filters', '--stdin-paths'], { input: pathsInput(simple, '\n') });
    const oids = res.stdout.toString('utf8').trim().split('\n');
    simple.forEach((p, i) => out.set(p, oids[i] ?? ''));
  }
  for (const p of paths.filter((x) => !stdinPathSafe(x))) {
    const res = await repo.git(['hash-object', '-w', '--no-filters', '--', p]);
    out.set(p, res.stdout.toString('utf8').trim());
  }
  return paths.map((p) => out.get(p) ?? '');
}
