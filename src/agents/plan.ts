// Helpers the adapters' plan readers share (`nextPlan` in adapter.ts): the
// agents' plan tools send lists of items of the same shape under their own names.
import type { PlanItem } from './adapter.js';

/** A JSON object (not an array, not null): what the agents' payloads and transcripts are made of. */
export type Obj = Record<string, unknown>;
export const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);
export const obj = (v: unknown): Record<string, unknown> | null =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
export const str = (v: unknown): string | null => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : null);

/** A whole plan sent as a list (TodoWrite's `todos`, update_plan's `plan`, write_todos' `todos`); null when `list` is none. */
export function planFromList(list: unknown, textKeys: readonly string[]): PlanItem[] | null {
  if (!Array.isArray(list)) return null;
  return list.flatMap((t) => {
    const o = obj(t);
    const text = o ? (textKeys.map((k) => str(o[k])).find((v) => v !== null) ?? null) : null;
    if (!o || text === null) return [];
    const id = str(o.id);
    return [{ text, status: str(o.status) ?? 'pending', ...(id !== null ? { id } : {}) }];
  });
}
