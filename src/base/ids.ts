import { randomBytes } from 'node:crypto';
import { errors } from './errors.js';

const SESSION_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** Why `id` is not a valid session id, or undefined when it is. */
export function sessionIdProblem(id: string): string | undefined {
  if (!SESSION_ID.test(id)) return 'use 1 to 64 letters, digits, ".", "_" or "-"';
  if (id.startsWith('.') || id.startsWith('-')) return 'it may not start with "." or "-"';
  if (id.includes('..')) return 'it may not contain ".."';
  if (id.endsWith('.lock') || id.endsWith('.')) return 'it may not end with ".lock" or "."';
  if (id === '@') return '"@" alone is not allowed';
  return undefined;
}

/** Validates a session id; session ids become ref path components, so this guards against ref injection. */
export function assertSessionId(id: string): string {
  const problem = sessionIdProblem(id);
  if (problem) {
    throw errors.invalidSessionId(`invalid session id ${JSON.stringify(id)}: ${problem}.`, {
      hint: 'Pick another id, or leave --session out to get a generated one.',
      data: { session: id },
    });
  }
  return id;
}

/**
 * A new session id: milliseconds since the epoch in base 36 (8 characters
 * until 2059, so ids sort by creation time) and 4 random characters.
 */
export function newSessionId(now: number = Date.now()): string {
  const time = now.toString(36).padStart(8, '0');
  const rand = randomBytes(4).readUInt32BE(0).toString(36).padStart(7, '0').slice(-4);
  return `${time}-${rand}`;
}
