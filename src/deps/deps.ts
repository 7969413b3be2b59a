// deps/ (issue 33 part 2): which files are dependency manifests and lockfiles, and the package manager's own
// command that brings the installed dependencies (node_modules, a virtual environment, a module cache) in line
// with them. Pure data and pure functions over paths: the one table of ecosystems. Nothing here reads the disk
// or prints; what exists after an operation is asked through `exists`.
import path from 'node:path';

/** The ecosystems agentsnap knows, by the family of files that decide what is installed. */
export type Ecosystem = 'node' | 'python' | 'pip' | 'cargo' | 'go';

/** A dependency file by its base name: the ecosystem it belongs to. requirements*.txt is matched apart (REQUIREMENTS). */
const FILES: Readonly<Record<string, Ecosystem>> = {
  'package.json': 'node',
  'package-lock.json': 'node',
  'npm-shrinkwrap.json': 'node',
  'pnpm-lock.yaml': 'node',
  'yarn.lock': 'node',
  'bun.lockb': 'node',
  'bun.lock': 'node',
  'pyproject.toml': 'python',
  'uv.lock': 'python',
  'poetry.lock': 'python',
  Pipfile: 'python',
  'Pipfile.lock': 'python',
  'Cargo.toml': 'cargo',
  'Cargo.lock': 'cargo',
  'go.mod': 'go',
  'go.sum': 'go',
};

/** requirements.txt, requirements-dev.txt, requirements_test.txt… (pip). */
const REQUIREMENTS = /^requirements.*\.txt$/;

/**
 * The lockfiles of a family, first found wins, each with the command that installs exactly what it locks. A
 * manifest without a lockfile beside it uses the nearest one above it (a workspace member: `packages/x/package.json`
 * with the workspace's lockfile at the top), else the manifest's own command (MANIFESTS).
 */
const LOCKS: Readonly<Record<'node' | 'python', readonly { file: string; command: string[] }[]>> = {
  node: [
    { file: 'pnpm-lock.yaml', command: ['pnpm', 'install', '--frozen-lockfile'] },
    { file: 'yarn.lock', command: ['yarn', 'install', '--frozen-lockfile'] },
    { file: 'bun.lock', command: ['bun', 'install'] },
    { file: 'bun.lockb', command: ['bun', 'install'] },
    { file: 'package-lock.json', command: ['npm', 'ci'] },
    { file: 'npm-shrinkwrap.json', command: ['npm', 'ci'] },
  ],
  python: [
    { file: 'uv.lock', command: ['uv', 'sync'] },
    { file: 'poetry.lock', command: ['poetry', 'install'] },
    { file: 'Pipfile.lock', command: ['pipenv', 'sync'] },
  ],
};

/**
 * A family's manifests with no lockfile anywhere above them: the command that installs from the manifest. npm's
 * without writing a package-lock.json: the operation just left the worktree without one (an undo that took back
 * the agent's first `npm install`), and a new file there would be a change of nobody's in the next undo's way.
 */
const MANIFESTS: Readonly<Record<'node' | 'python', readonly { file: string; command: string[] }[]>> = {
  node: [{ file: 'package.json', command: ['npm', 'install', '--no-package-lock'] }],
  python: [
    { file: 'Pipfile', command: ['pipenv', 'install'] },
    { file: 'pyproject.toml', command: ['pip', 'install', '-e', '.'] },
  ],
};

/** What each ecosystem's command brings in line, for a sentence ("so node_modules matches"). */
export const INSTALLED: Readonly<Record<Ecosystem, string>> = {
  node: 'node_modules',
  python: 'the Python environment',
  pip: 'the Python environment',
  cargo: "cargo's registry cache",
  go: "go's module cache",
};

/** A path below a directory a package manager installs into (node_modules, a virtualenv's site-packages). */
const INSTALLED_DIR = /(^|\/)(node_modules|site-packages)\//;

/**
 * The ecosystem of a dependency manifest or lockfile (by base name, in any directory but one a package manager
 * installs into), or null for any other file.
 */
export function dependencyEcosystem(file: string): Ecosystem | null {
  // A package's own package.json inside what a package manager installed is what it installed, not a project's manifest.
  if (INSTALLED_DIR.test(file)) return null;
  const base = file.slice(file.lastIndexOf('/') + 1);
  if (Object.hasOwn(FILES, base)) return FILES[base] as Ecosystem;
  return REQUIREMENTS.test(base) ? 'pip' : null;
}

/** The paths among `paths` that are dependency manifests or lockfiles (a step's "dependencies changed"). */
export function dependencyFiles(paths: readonly string[]): string[] {
  return paths.filter((p) => dependencyEcosystem(p) !== null);
}

/** One command to run after files moved: in `dir` (worktree-relative, `.` for the top), for these changed `files`. */
export interface DepsToSync {
  /** The directory to run it in, relative to the worktree (`.`: the top of the worktree). */
  dir: string;
  /** The dependency files the operation changed (worktree-relative) that this command is for. */
  files: string[];
  ecosystem: Ecosystem;
  /**
   * The package manager's command (argv, no shell); null when the manifest is gone after the operation (a
   * project the agent had created): nothing to install, what was installed is left (see INSTALLED).
   */
  command: string[] | null;
  /** What the command brings in line (INSTALLED). */
  installed: string;
}

/** `dir` joined with a base name, as a worktree-relative path. */
function inDir(dir: string, base: string): string {
  return dir === '.' ? base : `${dir}/${base}`;
}

/** The nearest directory from `dir` up to the worktree's top holding one of `choices`, and that choice. */
function nearest(
  dir: string,
  choices: readonly { file: string; command: string[] }[],
  exists: (p: string) => boolean,
): { dir: string; command: string[] } | null {
  for (let d = dir; ; d = d.includes('/') ? d.slice(0, d.lastIndexOf('/')) : '.') {
    const hit = choices.find((c) => exists(inDir(d, c.file)));
    if (hit) return { dir: d, command: hit.command };
    if (d === '.') return null;
  }
}

/** Where and what to run for one changed file, given what exists after the operation. */
function commandFor(file: string, ecosystem: Ecosystem, exists: (p: string) => boolean): { dir: string; command: string[] | null } {
  const dir = path.posix.dirname(file);
  switch (ecosystem) {
    case 'node':
    case 'python': {
      const own = LOCKS[ecosystem].find((l) => exists(inDir(dir, l.file)));
      if (own) return { dir, command: own.command };
      const manifest = MANIFESTS[ecosystem].find((m) => exists(inDir(dir, m.file)));
      if (!manifest) return { dir, command: null };
      return nearest(dir, LOCKS[ecosystem], exists) ?? { dir, command: manifest.command };
    }
    case 'pip':
      return { dir, command: exists(file) ? ['pip', 'install', '-r', path.posix.basename(file)] : null };
    case 'cargo':
      return { dir, command: exists(inDir(dir, 'Cargo.toml')) || exists(inDir(dir, 'Cargo.lock')) ? ['cargo', 'fetch'] : null };
    case 'go':
      return { dir, command: exists(inDir(dir, 'go.mod')) ? ['go', 'mod', 'download'] : null };
  }
}

/**
 * The commands that bring the installed dependencies in line after an operation changed `changed` (worktree-relative
 * paths), one per directory and command, in the order of their directories. `exists` says whether a worktree-relative
 * path exists after the operation (for a dry run: as it would).
 */
export function depsToSync(changed: readonly string[], exists: (p: string) => boolean): DepsToSync[] {
  const byKey = new Map<string, DepsToSync>();
  for (const file of changed) {
    const ecosystem = dependencyEcosystem(file);
    if (ecosystem === null) continue;
    const { dir, command } = commandFor(file, ecosystem, exists);
    const key = JSON.stringify([dir, ecosystem, command]);
    const entry = byKey.get(key);
    if (entry) entry.files.push(file);
    else byKey.set(key, { dir, files: [file], ecosystem, command, installed: INSTALLED[ecosystem] });
  }
  return [...byKey.values()].sort((a, b) => (a.dir === b.dir ? 0 : a.dir === '.' ? -1 : b.dir === '.' ? 1 : a.dir < b.dir ? -1 : 1));
}
