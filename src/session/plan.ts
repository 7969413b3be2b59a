// The agent's plan (its task list) as of each step, derived from the journal
// when asked: the steps of the agent's plan tools, folded in order by its
// adapter's `nextPlan`. Nothing is recorded for it on the tool-call path.
import type { PlanItem } from '../agents/adapter.js';
import { ADAPTERS, adapterOf, adapterOfProduct } from '../agents/registry.js';
import type { Session, Step } from './model.js';

export type { PlanItem } from '../agents/adapter.js';

export interface PlanState {
  items: PlanItem[];
  /** The step that last changed it. */
  setAt: number;
}

/** A call that wrote the plan: ended, not failed (a failed plan call changed nothing). */
function counts(st: Step): boolean {
  return st.kind === 'call' && st.status !== 'failed' && st.status !== 'interrupted';
}

/** The plan after every step that changed it, in step order. */
export function planHistory(s: Session): PlanState[] {
  const out: PlanState[] = [];
  let items: PlanItem[] = [];
  for (const st of s.steps) {
    if (!counts(st)) continue;
    const adapter = adapterOf(s.agent) ?? adapterOfProduct(st.agentVersion);
    // A session that names no agent (started by `snap`, hooks joining it): the plan tools' names tell.
    const readers = adapter ? [adapter] : Object.values(ADAPTERS);
    let next: PlanItem[] | null = null;
    for (const a of readers) if (!next) next = a.nextPlan?.(items, st.tool, st.input, st.output) ?? null;
    if (!next) continue;
    items = next;
    out.push({ items, setAt: st.step });
  }
  return out;
}

/** The plan as of step `step` (after it); null: no plan tool ran by then. */
export function planAt(s: Session, step: number, history = planHistory(s)): PlanState | null {
  let found: PlanState | null = null;
  for (const p of history) if (p.setAt <= step) found = p;
  return found;
}

/** The items the steps from `from` to `to` marked completed: completed after `to`, not before `from`. */
export function planItemsDone(s: Session, from: number, to: number): PlanItem[] {
  const history = planHistory(s);
  const before = planAt(s, from - 1, history)?.items ?? [];
  const after = planAt(s, to, history)?.items ?? [];
  const key = (t: PlanItem) => t.id ?? t.text;
  const doneBefore = new Set(before.filter((t) => t.status === 'completed').map(key));
  return after.filter((t) => t.status === 'completed' && !doneBefore.has(key(t)));
}

/**
 * A plan as Markdown-ish check lines: `- [x] done`, `- [~] in progress`, `- [ ] pending`, `- [-] cancelled`;
 * the agent's text on one line, control characters (a terminal's escape sequences) blanked.
 */
export function planLines(items: readonly PlanItem[]): string {
  const mark = (st: string) => (st === 'completed' ? 'x' : st === 'in_progress' ? '~' : st === 'cancelled' ? '-' : ' ');
  return items.length === 0
    ? '(empty)'
    : items.map((t) => `- [${mark(t.status)}] ${t.text.replace(/[\s\x00-\x1f\x7f-\x9f]+/g, ' ').trim()}`).join('\n');
}
