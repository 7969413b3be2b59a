// Installs agentsnap's git hook script (hooks/agentsnap-hook in the package)
// into the repository's effective hooks directory under each hook name it
// handles. A hook that is already there (hand-written, husky, lefthook, the
// pre-commit framework) is renamed to `<hook>.agentsnap-orig` (bytes and mode
// kept by the rename) and run by agentsnap's script after its checks, with the
// same arguments and stdin; uninstall renames it back.
import fs from 'node:fs';
import path from 'node:path';
import { errors } from '../base/errors.js';
import { packageRoot } from '../base/package-root.js';
import type { Repo } from '../git/repo.js';
import { exists } from '../base/fsutil.js';
import { migrateLegacyNotes, setNotesRewrite } from '../blame/notes.js';
import { AGENT_REPO_REFS } from '../agents/registry.js';
import { refuseInShadow } from '../git/shadow.js';

/** The git hooks agentsnap installs; one script serves them all (it dispatches on its name). */
export const HOOK_NAMES = ['pre-commit', 'pre-merge-commit', 'pre-push', 'reference-transaction'] as const;
export type HookName = (typeof HOOK_NAMES)[number];
/**
 * Hooks older versions installed, taken out by `hooks install` and `hooks uninstall` (issue 32 item 11): post-commit
 * and post-rewrite wrote blame notes as each commit was made, one `sh` per commit a rebase replays (2.5× its time);
 * the notes are now worked out when `blame` asks and written by `gc` (blame/notes.ts).
 */
export const RETIRED_HOOKS = ['post-commit', 'post-rewrite'] as const;
export type RetiredHookName = (typeof RETIRED_HOOKS)[number];
/**
 * Installed only with `hooks install --strict` (issue 32 item 11): git runs reference-transaction about ten times for
 * each commit a rebase replays, so any such hook, even one that only exits, makes a rebase several times slower.
 * Without it a snapshot can still become a local branch (reset, fast-forward merge, branch -f), but no commit is made
 * on one (pre-commit) and none is pushed (pre-push).
 */
export const STRICT_HOOKS: readonly HookName[] = ['reference-transaction'];

/** Suffix of a pre-existing hook kept aside and chained (matched by the pre-commit check: `*.agentsnap-*`). */
export const CHAINED_SUFFIX = '.agentsnap-orig';
const TMP_SUFFIX = '.agentsnap-tmp';
/** A line only agentsnap's hook script contains. */
const MARKER = '# agentsnap-hook:';

/** The hook script shipped with the package. */
export function packagedHookScript(): string {
  return path.join(packageRoot(), 'hooks', 'agentsnap-hook');
}

/** The packaged script as installed: the ref prefixes agents write themselves (AGENT_REPO_REFS) filled in. */
function readPackaged(): Buffer {
  const file = packagedHookScript();
  try {
    return Buffer.from(fs.readFileSync(file, 'latin1').replace('@AGENT_REPO_REFS@', AGENT_REPO_REFS.join(' ')), 'latin1');
  } catch (e) {
    throw errors.internal(`agentsnap's hook script is missing from the package: ${file}`, {
      hint: 'Reinstall agentsnap.',
      cause: e,
    });
  }
}

/** The hooks directory git uses for this repository (core.hooksPath respected), absolute. */
export async function hooksDir(repo: Repo): Promise<string> {
  const res = await repo.git(['rev-parse', '--git-path', 'hooks']);
  return path.resolve(repo.worktree, res.stdout.toString('utf8').trim());
}

export type HookState =
  /** agentsnap's script, identical to the package's. */
  | 'current'
  /** agentsnap's script from another version. */
  | 'outdated'
  /** No hook of that name. */
  | 'missing'
  /** Another program's hook is there instead (agentsnap's was never installed or was replaced). */
  | 'foreign';

export interface HookStatus {
  name: HookName;
  path: string;
  state: HookState;
  /** Installed only with `hooks install --strict` (STRICT_HOOKS): missing is not a problem. */
  strictOnly: boolean;
  /** The hook agentsnap chains to, when one was there before. */
  chained: string | null;
}

export interface HooksReport {
  dir: string;
  /** core.hooksPath when set. */
  hooksPath: string | null;
  hooks: HookStatus[];
  /** Every hook is agentsnap's current script (a strict-only one may be missing instead). */
  installed: boolean;
  /** The strict-only hooks are agentsnap's too (`hooks install --strict`). */
  strict: boolean;
  /** Hooks of an older agentsnap still installed under a name it no longer uses (RETIRED_HOOKS): `hooks install` takes them out. */
  retired: string[];
}

function isOurs(file: string): boolean {
  try {
    const st = fs.lstatSync(file);
    if (!st.isFile()) return false;
    const head = fs.readFileSync(file).subarray(0, 4096).toString('utf8');
    return head.includes(MARKER);
  } catch {
    return false; // absent or unreadable: not ours, so never overwritten
  }
}

function stateOf(file: string, packaged: Buffer): HookState {
  if (!exists(file)) return 'missing';
  if (!isOurs(file)) return 'foreign';
  return fs.readFileSync(file).equals(packaged) ? 'current' : 'outdated';
}

async function configuredHooksPath(repo: Repo): Promise<string | null> {
  const res = await repo.git(['config', '--get', 'core.hooksPath'], { okCodes: [1] });
  return res.code === 0 ? res.stdout.toString('utf8').trim() : null;
}

/** `agentsnap hooks status`: what is installed where, and whether it is current. */
export async function hooksStatus(repo: Repo): Promise<HooksReport> {
  const dir = await hooksDir(repo);
  const packaged = readPackaged();
  const hooks = HOOK_NAMES.map((name): HookStatus => {
    const file = path.join(dir, name);
    const chained = `${file}${CHAINED_SUFFIX}`;
    return {
      name,
      path: file,
      state: stateOf(file, packaged),
      strictOnly: STRICT_HOOKS.includes(name),
      chained: exists(chained) ? chained : null,
    };
  });
  const retired = RETIRED_HOOKS.map((name) => path.join(dir, name)).filter(isOurs);
  const strictOnes = hooks.filter((h) => h.strictOnly);
  const strict = strictOnes.every((h) => h.state === 'current' || h.state === 'outdated');
  return {
    dir,
    hooksPath: await configuredHooksPath(repo),
    hooks,
    installed: retired.length === 0 && hooks.every((h) => h.state === 'current' || (h.strictOnly && !strict && h.state !== 'outdated')),
    strict,
    retired,
  };
}

export interface InstallResult extends HooksReport {
  /** What install or uninstall did to each hook. */
  actions: {
    name: HookName | RetiredHookName;
    action: 'installed' | 'updated' | 'unchanged' | 'chained' | 'removed' | 'restored' | 'absent';
  }[];
}

/** Files in the hooks directory that git tracks (a checked-in core.hooksPath): agentsnap will not overwrite those. */
async function trackedFiles(repo: Repo, files: string[]): Promise<string[]> {
  const inside = files.filter(
    (f) => !path.relative(repo.worktree, f).startsWith('..') && !path.isAbsolute(path.relative(repo.worktree, f)),
  );
  if (inside.length === 0) return [];
  const rel = inside.map((f) => path.relative(repo.worktree, f));
  const res = await repo.git(['ls-files', '-z', '--', ...rel], { extraEnv: { GIT_LITERAL_PATHSPECS: '1' }, okCodes: [128] });
  if (res.code !== 0) return [];
  return res.stdout.toString('utf8').split('\0').filter(Boolean);
}

function writeHook(file: string, content: Buffer): void {
  const tmp = `${file}${TMP_SUFFIX}`;
  fs.writeFileSync(tmp, content, { mode: 0o755 });
  fs.chmodSync(tmp, 0o755);
  fs.renameSync(tmp, file);
}

/**
 * `agentsnap hooks install`: idempotent; chains whatever hook was there. `strict`: true installs the strict-only
 * hooks too, false takes agentsnap's out (putting back what they chained), undefined leaves them as they are.
 */
export async function installHooks(repo: Repo, opts: { force?: boolean; strict?: boolean } = {}): Promise<InstallResult> {
  refuseInShadow(repo, '`hooks install`');
  const dir = await hooksDir(repo);
  const packaged = readPackaged();
  const all = HOOK_NAMES.map((name) => {
    const file = path.join(dir, name);
    return { name, file, chained: `${file}${CHAINED_SUFFIX}`, state: stateOf(file, packaged) };
  });
  const strictNow = all.filter((p) => STRICT_HOOKS.includes(p.name)).every((p) => p.state === 'current' || p.state === 'outdated');
  const wantStrict = opts.strict ?? strictNow;
  const plans = all.filter((p) => wantStrict || !STRICT_HOOKS.includes(p.name));
  const retired = RETIRED_HOOKS.map((name) => {
    const file = path.join(dir, name);
    return { name, file, chained: `${file}${CHAINED_SUFFIX}` };
  });
  const dropped = [
    ...(wantStrict ? [] : all.filter((p) => STRICT_HOOKS.includes(p.name) && isOurs(p.file))),
    ...retired.filter((p) => isOurs(p.file)),
  ];
  // Check everything before changing anything: never half-install.
  for (const p of plans) {
    if (p.state === 'foreign' && exists(p.chained)) {
      throw errors.conflict(`${p.file} is not agentsnap's, and ${p.chained} already holds the hook agentsnap chained before.`, {
        hint: `Another tool replaced agentsnap's hook. Decide which one to keep: move one of the two files away, then run \`agentsnap hooks install\` again.`,
        data: { hook: p.file, chained: p.chained },
      });
    }
  }
  const tracked = await trackedFiles(
    repo,
    [...plans.filter((p) => p.state !== 'current'), ...dropped].map((p) => p.file),
  );
  if (tracked.length > 0 && !opts.force) {
    throw errors.refused(`the hooks directory ${dir} is checked in: installing would change tracked files (${tracked.join(', ')}).`, {
      hint: 'Install with --force to change them anyway (they will show in `git status`), or point core.hooksPath elsewhere.',
      data: { dir, tracked },
    });
  }
  try {
    fs.mkdirSync(dir, { recursive: true });
  } catch (e) {
    throw errors.invalidConfig(`cannot create the hooks directory ${dir}: ${(e as Error).message}`, {
      hint: 'Check core.hooksPath (`git config core.hooksPath`).',
      data: { dir },
      cause: e,
    });
  }
  const actions: InstallResult['actions'] = [];
  for (const p of plans) {
    if (p.state === 'current') {
      actions.push({ name: p.name, action: 'unchanged' });
    } else if (p.state === 'outdated') {
      writeHook(p.file, packaged);
      actions.push({ name: p.name, action: 'updated' });
    } else if (p.state === 'foreign') {
      fs.renameSync(p.file, p.chained);
      writeHook(p.file, packaged);
      actions.push({ name: p.name, action: 'chained' });
    } else {
      writeHook(p.file, packaged);
      actions.push({ name: p.name, action: 'installed' });
    }
  }
  for (const p of dropped) actions.push({ name: p.name, action: removeOurs(p.file, p.chained) });
  // Blame notes (written by gc, blame/notes.ts) follow their commits through amend and rebase; an older version's
  // notes get the blobs that let a copied one be mapped (nothing notes a rebase afresh once its hooks are out).
  await setNotesRewrite(repo, true);
  await migrateLegacyNotes(repo);
  return { ...(await hooksStatus(repo)), actions };
}

/** Takes agentsnap's hook script out, putting back the hook it chained, byte for byte. */
function removeOurs(file: string, chained: string): 'restored' | 'removed' {
  if (exists(chained)) {
    fs.renameSync(chained, file);
    return 'restored';
  }
  fs.unlinkSync(file);
  return 'removed';
}

/** `agentsnap hooks uninstall`: removes agentsnap's scripts and puts chained hooks back exactly. */
export async function uninstallHooks(repo: Repo): Promise<InstallResult> {
  const dir = await hooksDir(repo);
  const actions: InstallResult['actions'] = [];
  for (const name of HOOK_NAMES) {
    const file = path.join(dir, name);
    // Not ours (or absent): left, and any chained file with it rather than overwrite something.
    actions.push({ name, action: isOurs(file) ? removeOurs(file, `${file}${CHAINED_SUFFIX}`) : 'absent' });
  }
  for (const name of RETIRED_HOOKS) {
    const file = path.join(dir, name);
    if (isOurs(file)) actions.push({ name, action: removeOurs(file, `${file}${CHAINED_SUFFIX}`) });
  }
  await setNotesRewrite(repo, false);
  return { ...(await hooksStatus(repo)), actions };
}
