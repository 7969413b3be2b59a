// What a tool call journals passes through here first: secrets are redacted
// (the journal sits in .git, readable by anyone who can read the repository)
// and long values are cut to a size budget. Pure functions, no I/O.

interface SecretShape {
  kind: string;
  re: RegExp;
  /** Replacement keeping a harmless prefix (e.g. "Bearer "); default: the whole match. */
  keep?: (match: string, ...groups: string[]) => string;
}

/** Common token shapes. Order matters: more specific shapes first. */
const SECRET_SHAPES: SecretShape[] = [
  { kind: 'private-key', re: /-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY-----[\s\S]*?(?:-----END \1PRIVATE KEY-----|$)/g },
  { kind: 'anthropic-key', re: /\bsk-ant-[A-Za-z0-9_-]{16,}/g },
  { kind: 'openai-key', re: /\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}/g },
  { kind: 'stripe-key', re: /\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}/g },
  { kind: 'github-token', re: /\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{20,})/g },
  { kind: 'gitlab-token', re: /\bglpat-[A-Za-z0-9_-]{20,}/g },
  { kind: 'npm-token', re: /\bnpm_[A-Za-z0-9]{36}\b/g },
  { kind: 'aws-access-key', re: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g },
  {
    kind: 'aws-secret-key',
    re: /(aws_secret_access_key["']?\s*[=:]\s*["']?)[A-Za-z0-9/+=]{40}/gi,
    keep: (_m, prefix) => `${prefix}[REDACTED:aws-secret-key]`,
  },
  { kind: 'slack-token', re: /\bxox[abposr]-[A-Za-z0-9-]{10,}/g },
  { kind: 'google-api-key', re: /\bAIza[0-9A-Za-z_-]{35}/g },
  { kind: 'jwt', re: /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g },
  {
    kind: 'bearer-token',
    re: /(\b[Bb]earer\s+)[A-Za-z0-9._~+/=-]{12,}/g,
    keep: (_m, prefix) => `${prefix}[REDACTED:bearer-token]`,
  },
  {
    kind: 'url-password',
    re: /(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:)[^\s@/]{3,}(@)/gi,
    keep: (_m, before, at) => `${before}[REDACTED:password]${at}`,
  },
];

/** Redacts secrets in one string. */
export function redactText(text: string, extra: RegExp[] = []): string {
  let out = text;
  for (const shape of SECRET_SHAPES) {
    shape.re.lastIndex = 0;
    out = out.replace(shape.re, (m: string, ...groups: unknown[]) =>
      shape.keep ? shape.keep(m, ...(groups.filter((g) => typeof g === 'string') as string[])) : `[REDACTED:${shape.kind}]`,
    );
  }
  for (const re of extra) {
    const g = re.global ? re : new RegExp(re.source, `${re.flags}g`);
    g.lastIndex = 0;
    out = out.replace(g, '[REDACTED]');
  }
  return out;
}

/** Redacts every string (values and keys) in a JSON-like value. */
export function redactValue<T>(value: T, extra: RegExp[] = []): T {
  return walk(value, (s) => redactText(s, extra), true) as T;
}

function walk(value: unknown, fn: (s: string) => string, keys: boolean): unknown {
  if (typeof value === 'string') return fn(value);
  if (Array.isArray(value)) return value.map((v) => walk(v, fn, keys));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) out[keys ? fn(k) : k] = walk(v, fn, keys);
    return out;
  }
  return value;
}

/**
 * Cuts a JSON-like value to about `limit` characters of string content,
 * keeping its shape (keys, numbers, booleans) so it stays readable: strings
 * share the budget in order, and what does not fit ends in a marker.
 */
export function truncateValue<T>(value: T, limit: number): T {
  if (limit <= 0) return value;
  let budget = limit;
  return walk(
    value,
    (s) => {
      if (s.length <= budget) {
        budget -= s.length;
        return s;
      }
      const kept = s.slice(0, budget);
      budget = 0;
      return `${kept}…[truncated ${s.length - kept.length} chars]`;
    },
    false,
  ) as T;
}

/** Redaction then truncation: what every journaled input and output goes through. */
export function sanitize<T>(value: T, opts: { limit: number; patterns?: RegExp[] }): T {
  if (value === undefined) return value;
  return truncateValue(redactValue(value, opts.patterns ?? []), opts.limit);
}
