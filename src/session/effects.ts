// Effects a snapshot cannot take back: a tool call that pushed, published,
// deployed, changed remote state or wrote outside the repository. Recognised
// from the recorded tool input (a heuristic: it names the likely cases, it
// cannot prove a command harmless). Pure: no I/O.
import path from 'node:path';
import type { Step } from './model.js';

/** A shell command, when the tool input holds one (Bash, shell, exec tools of the supported agents). */
export function shellCommandOf(input: unknown): string | null {
  if (!input || typeof input !== 'object') return typeof input === 'string' ? input : null;
  const o = input as Record<string, unknown>;
  for (const key of ['command', 'cmd', 'script']) {
    const v = o[key];
    if (typeof v === 'string') return v;
    if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return (v as string[]).join(' ');
  }
  return null;
}

/** Rules over one simple command (words already split). */
const RULES: { test: (w: string[], line: string) => boolean; what: string }[] = [
  { test: (w) => w[0] === 'git' && gitSub(w) === 'push', what: 'git push' },
  { test: (w) => w[0] === 'git' && gitSub(w) === 'send-email', what: 'git send-email' },
  { test: (w) => ['npm', 'yarn', 'pnpm', 'bun'].includes(w[0] ?? '') && w.includes('publish'), what: 'package publish' },
  {
    test: (w) =>
      ['npm', 'yarn', 'pnpm'].includes(w[0] ?? '') &&
      (w.includes('unpublish') || w.includes('deprecate') || (w.includes('dist-tag') && (w.includes('add') || w.includes('rm')))),
    what: 'registry change',
  },
  { test: (w) => w[0] === 'cargo' && (w[1] === 'publish' || w[1] === 'yank'), what: 'cargo publish' },
  { test: (w) => w[0] === 'twine' && w[1] === 'upload', what: 'package upload' },
  { test: (w) => ['poetry', 'flit', 'hatch', 'uv'].includes(w[0] ?? '') && w[1] === 'publish', what: 'package publish' },
  { test: (w) => w[0] === 'gem' && w[1] === 'push', what: 'gem push' },
  {
    test: (w) => ['docker', 'podman'].includes(w[0] ?? '') && (w[1] === 'push' || (w[1] === 'image' && w[2] === 'push')),
    what: 'image push',
  },
  {
    test: (w) =>
      ['kubectl', 'oc'].includes(w[0] ?? '') &&
      ['apply', 'create', 'delete', 'patch', 'replace', 'scale', 'rollout', 'set', 'edit', 'label', 'annotate'].includes(w[1] ?? ''),
    what: 'cluster change',
  },
  {
    test: (w) => w[0] === 'helm' && ['install', 'upgrade', 'uninstall', 'rollback', 'delete'].includes(w[1] ?? ''),
    what: 'helm release change',
  },
  {
    test: (w) => ['terraform', 'tofu', 'terragrunt'].includes(w[0] ?? '') && ['apply', 'destroy', 'import'].includes(w[1] ?? ''),
    what: 'infrastructure change',
  },
  { test: (w) => w[0] === 'pulumi' && ['up', 'destroy', 'update'].includes(w[1] ?? ''), what: 'infrastructure change' },
  {
    test: (w) =>
      ['vercel', 'netlify', 'firebase', 'fly', 'flyctl', 'wrangler', 'serverless', 'sls'].includes(w[0] ?? '') &&
      w.some((x) => x === 'deploy' || x === 'publish' || x === '--prod'),
    what: 'deploy',
  },
  { test: (w) => w[0] === 'gcloud' && w.some((x) => ['deploy', 'create', 'delete', 'update'].includes(x)), what: 'cloud change' },
  {
    test: (w) => w[0] === 'aws' && w.slice(1).some((x) => /^(put|create|delete|update|deploy|cp|mv|rm|sync|invoke|publish|send)/.test(x)),
    what: 'cloud change',
  },
  {
    test: (w) =>
      w[0] === 'gh' &&
      ((w[1] === 'pr' && ['create', 'merge', 'close', 'comment', 'edit', 'review'].includes(w[2] ?? '')) ||
        (w[1] === 'release' && ['create', 'delete', 'upload', 'edit'].includes(w[2] ?? '')) ||
        (w[1] === 'issue' && ['create', 'close', 'comment', 'edit'].includes(w[2] ?? '')) ||
        (w[1] === 'repo' && ['create', 'delete', 'edit'].includes(w[2] ?? '')) ||
        w[1] === 'api'),
    what: 'GitHub change',
  },
  { test: (w) => w[0] === 'curl' && curlChanges(w), what: 'network request that may change remote state' },
  {
    test: (w) => w[0] === 'wget' && w.some((x) => /^--(post-data|post-file|method|body-data|body-file)/.test(x)),
    what: 'network request that may change remote state',
  },
  {
    test: (w) => ['http', 'https', 'xh'].includes(w[0] ?? '') && ['POST', 'PUT', 'PATCH', 'DELETE'].includes((w[1] ?? '').toUpperCase()),
    what: 'network request that may change remote state',
  },
  { test: (w) => ['ssh', 'mosh'].includes(w[0] ?? ''), what: 'command on another host' },
  {
    test: (w) => ['scp', 'rsync', 'sftp'].includes(w[0] ?? '') && w.slice(1).some((x) => !x.startsWith('-') && /^[^/\s]+:/.test(x)),
    what: 'copy to or from another host',
  },
  {
    test: (w, line) =>
      /\b(db:migrate|db:rollback|db:reset|db:drop|db:seed|migrate deploy|migrate dev|migrate reset|db push)\b/.test(line) ||
      ((w.includes('manage.py') ||
        w[0] === 'alembic' ||
        w[0] === 'flyway' ||
        w[0] === 'liquibase' ||
        w[0] === 'knex' ||
        w[0] === 'sequelize' ||
        w[0] === 'goose' ||
        w[0] === 'migrate' ||
        w[0] === 'dbmate') &&
        w.some((x) => /^(migrate|upgrade|downgrade|up|down|db:migrate|migrate:latest|rollback)$/.test(x))),
    what: 'database migration',
  },
  {
    test: (w) =>
      ['psql', 'mysql', 'sqlite3', 'mongosh', 'mongo', 'redis-cli'].includes(w[0] ?? '') &&
      w.some((x) => /^(-c|-e|--command|--execute|--eval)$/.test(x)),
    what: 'database command',
  },
];

function gitSub(w: string[]): string | undefined {
  // Skip global options such as -C dir, -c k=v, --git-dir=...
  let i = 1;
  while (i < w.length) {
    const x = w[i] ?? '';
    if (x === '-C' || x === '-c') i += 2;
    else if (x.startsWith('-')) i += 1;
    else return x;
  }
  return undefined;
}

function curlChanges(w: string[]): boolean {
  for (let i = 1; i < w.length; i++) {
    const x = w[i] ?? '';
    if ((x === '-X' || x === '--request') && /^(POST|PUT|PATCH|DELETE)$/i.test(w[i + 1] ?? '')) return true;
    if (/^-X(POST|PUT|PATCH|DELETE)$/i.test(x) || /^--request=(POST|PUT|PATCH|DELETE)$/i.test(x)) return true;
    if (/^(-d|--data|--data-raw|--data-binary|--data-urlencode|--json|-F|--form|-T|--upload-file)(=|$)/.test(x) || /^-d./.test(x))
      return true;
  }
  return false;
}

/** Splits a command line into simple commands and those into words (quotes respected, no expansion). */
export function simpleCommands(line: string): string[][] {
  const out: string[][] = [];
  let words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: '"' | "'" | null = null;
  const endWord = () => {
    if (inWord) words.push(word);
    word = '';
    inWord = false;
  };
  const endCommand = () => {
    endWord();
    if (words.length > 0) out.push(words);
    words = [];
  };
  for (let i = 0; i < line.length; i++) {
    const ch = line[i] ?? '';
    if (quote) {
      if (ch === quote) quote = null;
      else if (ch === '\\' && quote === '"' && i + 1 < line.length) word += line[++i];
      else word += ch;
      continue;
    }
    if (ch === '"' || ch === "'") {
      quote = ch;
      inWord = true;
    } else if (ch === '\\' && i + 1 < line.length) {
      word += line[++i];
      inWord = true;
    } else if (ch === ' ' || ch === '\t') endWord();
    else if (ch === '\n' || ch === ';' || ch === '&' || ch === '|' || ch === '(' || ch === ')' || ch === '`') endCommand();
    else if (ch === '>' || ch === '<') {
      // Keep redirections as their own words so writes to absolute paths can be seen.
      endWord();
      let op = ch;
      while (line[i + 1] === '>' || line[i + 1] === '&') op += line[++i];
      words.push(op);
    } else {
      word += ch;
      inWord = true;
    }
  }
  endCommand();
  // Drop leading environment assignments and wrappers (sudo, env, time, nohup, npx).
  return out.map((w) => {
    let i = 0;
    while (
      i < w.length &&
      (/^[A-Za-z_][A-Za-z0-9_]*=/.test(w[i] ?? '') ||
        ['sudo', 'env', 'time', 'nohup', 'exec', 'command', 'npx', 'bunx'].includes(w[i] ?? ''))
    )
      i++;
    return w.slice(i);
  });
}

function outside(p: string, worktree: string): boolean {
  if (!path.isAbsolute(p)) return false;
  if (p === '/dev/null' || p.startsWith('/dev/') || p.startsWith('/proc/')) return false;
  const tmp = ['/tmp/', '/var/tmp/'];
  if (tmp.some((t) => p.startsWith(t))) return false;
  const rel = path.relative(worktree, p);
  return rel === '..' || rel.startsWith('../') || path.isAbsolute(rel);
}

function absoluteWrites(w: string[], worktree: string): string | null {
  for (let i = 0; i < w.length; i++) {
    const x = w[i] ?? '';
    if (/^>>?$|^&>>?$/.test(x) && outside(w[i + 1] ?? '', worktree)) return w[i + 1] ?? null;
  }
  const cmd = w[0] ?? '';
  if (['cp', 'mv', 'install', 'ln', 'tee', 'touch', 'rm', 'mkdir', 'rmdir', 'chmod', 'chown', 'truncate', 'dd'].includes(cmd)) {
    const args = w.slice(1).filter((x) => !x.startsWith('-'));
    const targets = cmd === 'cp' || cmd === 'mv' || cmd === 'install' || cmd === 'ln' ? args.slice(-1) : args;
    for (const t of targets) {
      const p = t.startsWith('of=') ? t.slice(3) : t;
      if (outside(p, worktree)) return p;
    }
  }
  return null;
}

/** Why a step's effects cannot be undone by restoring files, or null when nothing suggests so. */
export function outsideEffect(step: Pick<Step, 'tool' | 'input'>, worktree: string): string | null {
  const input = step.input;
  // File tools writing outside the worktree.
  if (input && typeof input === 'object') {
    const o = input as Record<string, unknown>;
    for (const key of ['file_path', 'path', 'notebook_path']) {
      const p = o[key];
      if (typeof p === 'string' && /write|edit|create|notebook|patch/i.test(step.tool ?? '') && outside(p, worktree))
        return `writes ${p} outside the repository`;
    }
  }
  const line = shellCommandOf(input);
  if (!line) return null;
  for (const w of simpleCommands(line)) {
    if (w.length === 0) continue;
    for (const r of RULES) if (r.test(w, w.join(' '))) return r.what;
    const abs = absoluteWrites(w, worktree);
    if (abs) return `writes ${abs} outside the repository`;
  }
  return null;
}

/** The command to quote in messages: the shell command, or the tool name. */
export function effectLabel(step: Pick<Step, 'tool' | 'input'>): string {
  const line = shellCommandOf(step.input);
  const text = line ?? step.tool ?? 'tool call';
  const one = text.replace(/\s+/g, ' ').trim();
  return one.length > 80 ? `${one.slice(0, 77)}...` : one;
}
