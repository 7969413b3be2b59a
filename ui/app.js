// The page of `agentsnap ui`. Plain DOM, no framework; bundled with diff2html
// by scripts/bundle-ui.mjs into dist/ui/app.js. Everything the journal holds is
// the agent's text: it goes into the page as textContent only, never as HTML
// (diff2html escapes the diffs it renders).
import { html as diffHtml } from 'diff2html';

const TOKEN = document.querySelector('meta[name="agentsnap-token"]').content;
const FIRST_SESSION = document.querySelector('meta[name="agentsnap-session"]').content;
const POLL_MS = 2000;

const $ = (id) => document.getElementById(id);

/** An element with text and attributes: `el('span', {class: 'x'}, 'text', child)`. */
function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    e.append(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
  return e;
}

/** replaceChildren without the nulls (the DOM would print them as "null"). */
function fill(node, ...children) {
  node.replaceChildren(...children.filter((c) => c !== null && c !== undefined && c !== false));
}

class ApiError extends Error {
  constructor(status, error, body) {
    super(error?.message ?? `HTTP ${status}`);
    this.status = status;
    this.error = error ?? {};
    this.body = body ?? {};
  }
}

async function api(name, params = {}, body) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === '') continue;
    for (const x of Array.isArray(v) ? v : [v]) q.append(k, String(x));
  }
  const res = await fetch(`/api/${name}${q.size ? `?${q}` : ''}`, {
    method: body ? 'POST' : 'GET',
    headers: { 'X-Agentsnap-Token': TOKEN, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
    credentials: 'same-origin',
  });
  const value = await res.json();
  if (!res.ok) throw new ApiError(res.status, value.error, value);
  return value;
}

const state = {
  sessions: [],
  session: null,
  rows: [],
  undone: new Set(),
  step: null,
  replay: null,
  diffText: '',
  diffTitle: '',
  stamp: null,
  /** The real run of an operation, while it runs: the next action waits for it. */
  running: null,
};

/** A journal time (ISO, UTC) in the viewer's own locale and time zone; the text as it is if it is no time. */
const LOCAL_TIME = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
function localTime(iso) {
  const t = new Date(iso);
  return Number.isNaN(t.getTime()) ? String(iso) : LOCAL_TIME.format(t);
}

// ---- the link to what is open: #session=<id>&step=<n> ----

/** The session and step the page's address names, if any (a link someone shared, a reload). */
function linkTarget() {
  const h = new URLSearchParams(location.hash.slice(1));
  const step = h.get('step');
  return { session: h.get('session') || null, step: step !== null && /^\d+$/.test(step) ? Number(step) : undefined };
}

/** The address says which session and step is open (replaced, not pushed: opening steps fills no history). */
function setLink(session, step) {
  const h = new URLSearchParams();
  if (session) h.set('session', session);
  if (step !== null && step !== undefined) h.set('step', String(step));
  history.replaceState(null, '', `#${h}`);
}

function showError(where, e) {
  fill(where, el('div', { class: 'error' }, e.message, e.error?.hint ? el('div', { class: 'hint' }, e.error.hint) : null));
}

// ---- sessions ----

async function loadSessions() {
  state.sessions = await api('sessions');
  const list = $('session-list');
  fill(
    list,
    ...state.sessions.map((s) =>
      el(
        'li',
        { class: `session${s.id === state.session ? ' selected' : ''}`, 'data-session': s.id },
        el(
          'button',
          { type: 'button', onclick: () => selectSession(s.id) },
          el('span', { class: 'sid' }, s.name ? `${s.name}` : s.id),
          el('span', { class: `sstatus status-${s.status}` }, s.status),
          el('span', { class: 'ssteps' }, `${s.steps} steps`),
          s.agent ? el('span', { class: 'sagent' }, s.agent) : null,
        ),
      ),
    ),
  );
  if (state.sessions.length === 0) fill(list, el('li', { class: 'none' }, 'No sessions yet: start one with agentsnap wrap -- <agent>.'));
}

async function selectSession(id, step) {
  state.session = id;
  state.replay = null;
  state.step = null;
  for (const li of document.querySelectorAll('#session-list li.session')) li.classList.toggle('selected', li.dataset.session === id);
  fill($('filter-tool'), el('option', { value: '' }, 'every tool'));
  await loadTimeline();
  if (step !== undefined) await selectStep(step);
  else {
    setLink(id, null);
    showEmpty();
  }
}

// ---- timeline ----

function checkMark(check) {
  if (!check) return el('span', { class: 'check none' }, '');
  if (check.verdict === 'pass') return el('span', { class: 'check pass', title: `check passed: ${check.command}` }, '✓');
  if (check.verdict === 'fail')
    return el('span', { class: 'check fail', title: `check failed (exit ${check.exitCode}): ${check.command}` }, '✗');
  return el('span', { class: 'check skip', title: `check skipped: ${check.command}` }, '~');
}

function changesText(changed) {
  return changed.map((c) => `${c.change} ${c.path}`).join(', ');
}

async function loadTimeline() {
  const seq = ++seqs.timeline;
  const session = state.session;
  const file = $('filter-file').value.trim();
  const tool = $('filter-tool').value;
  let res;
  let st;
  try {
    [res, st] = await Promise.all([api('log', { session, path: file || undefined, tool: tool || undefined }), api('status', { session })]);
  } catch (e) {
    if (seq === seqs.timeline) showError($('timeline'), e);
    return;
  }
  if (seq !== seqs.timeline || session !== state.session) return;
  state.session = res.session.id;
  state.rows = res.rows;
  state.undone = new Set(st.undone);
  showRedo(st.redoable ?? null);
  const s = res.session;
  fill(
    $('session-head'),
    el('h2', {}, `Session ${s.id}`),
    el('div', { class: 'meta' }, `${s.agent ?? 'no agent named'} · ${s.steps.length} steps · ${st.status}`),
  );
  $('where').textContent = s.worktree;
  // The tool filter offers every tool of the session (kept while a filter is on).
  const tools = $('filter-tool');
  const known = new Set([...tools.options].map((o) => o.value));
  for (const t of new Set(s.steps.map((x) => x.tool ?? (x.kind === 'checkpoint' ? 'checkpoint' : '-'))))
    if (!known.has(t)) tools.append(el('option', { value: t }, t));
  const list = $('timeline');
  const items = [];
  // Steps and operations in the order they happened (an older server sends rows only).
  const byStep = new Map(res.rows.map((r) => [r.step.step, r]));
  for (const entry of res.timeline ?? res.rows.map((r) => ({ step: r.step.step }))) {
    if (entry.op) {
      items.push(opItem(entry.op));
      continue;
    }
    const row = byStep.get(entry.step);
    if (!row) continue;
    const x = row.step;
    if (x.step > 1 && x.changedBefore.length > 0) {
      items.push(
        el(
          'li',
          { class: 'between', title: changesText(x.changedBefore) },
          `✎ changed outside tool calls before step ${x.step}: ${changesText(x.changedBefore)}`,
        ),
      );
    }
    const marks = [];
    if (x.overlaps.length > 0)
      marks.push(
        el('span', { class: 'overlap', title: `started while ${x.overlaps.join(', ')} still ran` }, `⇉ overlaps ${x.overlaps.join(', ')}`),
      );
    if (state.undone.has(x.step)) marks.push(el('span', { class: 'undone' }, 'undone'));
    if (x.unprotectedReason) marks.push(el('span', { class: 'unprotected', title: x.unprotectedReason }, 'unprotected'));
    // Its installed dependencies are not in the snapshots: an undo over it says what to run (issue 33).
    if (row.depsChanged?.length > 0) marks.push(el('span', { class: 'deps', title: row.depsChanged.join(', ') }, 'dependencies changed'));
    const classes = ['step', `status-${x.status}`];
    if (row.check?.verdict === 'fail') classes.push('check-failed');
    if (x.overlaps.length > 0) classes.push('overlapping');
    if (state.undone.has(x.step)) classes.push('is-undone');
    if (state.step === x.step) classes.push('selected');
    items.push(
      el(
        'li',
        { class: classes.join(' '), 'data-step': x.step },
        el(
          'button',
          { type: 'button', onclick: () => selectStep(x.step) },
          checkMark(row.check),
          el('span', { class: 'num' }, String(x.step)),
          el('span', { class: 'tool' }, x.tool ?? (x.kind === 'checkpoint' ? 'checkpoint' : '-')),
          el('span', { class: 'what' }, row.what ?? x.message ?? ''),
          el('span', { class: 'status' }, x.status),
          ...marks,
        ),
      ),
    );
  }
  if (items.length === 0) items.push(el('li', { class: 'none' }, s.steps.length === 0 ? 'No steps yet.' : 'No step matches the filter.'));
  fill(list, ...items);
  fillCompare(s);
}

/** Redo is offered only when there is an undo to take back; else it says why not. */
function showRedo(redoable) {
  const button = $('redo');
  button.disabled = redoable === null;
  button.title =
    redoable === null
      ? 'Nothing to redo: no undo of this session is left to take back'
      : `Back to the state before the last undo (operation ${redoable})`;
}

/** An operation's row in the timeline: its id, kind and what it did; taken back ones dimmed. */
function opItem(op) {
  const state = op.status !== 'done' ? op.status : op.undoneBy !== null ? `undone by op ${op.undoneBy}` : 'done';
  const edits = op.edits.length > 0 ? ` · your edits before it: ${changesText(op.edits)}` : '';
  return el(
    'li',
    { class: `op op-${op.kind}${op.undoneBy !== null ? ' is-undone' : ''}`, 'data-op': op.id, title: `${localTime(op.time)}${edits}` },
    `⟲ op ${op.id} · ${op.kind} · ${op.what} · ${op.files === 1 ? '1 file' : `${op.files} files`} · ${state}`,
  );
}

function fillCompare(s) {
  const states = [['0', '0 (start of the session)']];
  for (const x of s.steps) {
    if (!x.post) continue;
    states.push([`${x.step}:pre`, `before step ${x.step}`], [String(x.step), `after step ${x.step}`]);
  }
  const from = $('cmp-from');
  const to = $('cmp-to');
  const keepFrom = from.value;
  const keepTo = to.value;
  from.replaceChildren(...states.map(([v, t]) => el('option', { value: v }, t)));
  to.replaceChildren(...states.map(([v, t]) => el('option', { value: v }, t)), el('option', { value: 'worktree' }, 'the worktree now'));
  if (keepFrom) from.value = keepFrom;
  to.value = keepTo || 'worktree';
}

// ---- one step ----

/**
 * Which answer may still fill a view: each load of the timeline, and of the detail pane (a step, a comparison),
 * takes a number; an answer for an older one (another session, step or filter chosen since) is dropped.
 */
const seqs = { timeline: 0, detail: 0 };

function showEmpty() {
  seqs.detail++;
  $('empty').hidden = false;
  $('step-view').hidden = true;
}

function renderDiff() {
  const mode = document.querySelector('input[name="diff-mode"]:checked').value;
  $('diff-title').textContent = state.diffTitle;
  const box = $('diff');
  if (!state.diffText.trim()) {
    fill(box, el('div', { class: 'none' }, 'No change.'));
    return;
  }
  // diff2html builds the markup and escapes every line of the diff.
  box.innerHTML = diffHtml(state.diffText, { outputFormat: mode, drawFileList: true, matching: 'lines' });
}

function pretty(v) {
  if (v === null || v === undefined) return '(none)';
  if (typeof v === 'string') return v;
  if (typeof v === 'object' && (typeof v.stdout === 'string' || typeof v.stderr === 'string')) {
    return [v.stdout, v.stderr ? `stderr:\n${v.stderr}` : ''].filter(Boolean).join('\n') || '(no output)';
  }
  return JSON.stringify(v, null, 2);
}

async function conversationAround(stepNo, session) {
  // Cached per session: an answer for a session left since must not stand for the one on show.
  let entries = state.replay?.session === session ? state.replay.entries : null;
  if (!entries) {
    entries = (await api('replay', { session })).entries;
    if (session === state.session) state.replay = { session, entries };
  }
  const at = entries.findIndex((e) => e.type === 'step' && e.step === stepNo);
  if (at < 0) return [];
  // From after the step before this one to before the next step: what was said around the call.
  let start = at;
  while (start > 0 && entries[start - 1].type !== 'step' && entries[start - 1].type !== 'session') start--;
  let end = at + 1;
  while (end < entries.length && entries[end].type !== 'step') end++;
  return entries.slice(start, end);
}

async function selectStep(n) {
  const seq = ++seqs.detail;
  const session = state.session;
  const stale = () => seq !== seqs.detail || session !== state.session || state.step !== n;
  state.step = n;
  setLink(session, n);
  for (const li of document.querySelectorAll('#timeline li.step')) li.classList.toggle('selected', Number(li.dataset.step) === n);
  $('empty').hidden = true;
  $('step-view').hidden = false;
  for (const id of ['actions', 'step-meta', 'step-extra']) $(id).hidden = false;
  const row = state.rows.find((r) => r.step.step === n);
  $('step-title').textContent = `Step ${n}${row ? `: ${row.step.tool ?? row.step.kind}` : ''}`;
  try {
    const res = await api('show', { session, step: n });
    if (stale()) return;
    const x = res.step;
    const meta = [x.status, x.startedAt ? localTime(x.startedAt) : null, x.durationMs !== null ? `${x.durationMs} ms` : null, res.what]
      .filter(Boolean)
      .join(' · ');
    const check = row?.check;
    fill(
      $('step-meta'),
      el('div', {}, meta),
      check
        ? el(
            'div',
            { class: `check-line ${check.verdict}` },
            `${check.verdict === 'pass' ? '✓' : check.verdict === 'fail' ? '✗' : '~'} check ${check.verdict}: ${check.command} (exit ${check.exitCode})`,
            // A failed check: its first failure first (not the runner's closing summary), the whole output folded.
            check.firstFailure ? el('pre', { class: 'first-failure' }, check.firstFailure.join('\n')) : null,
            check.output && check.firstFailure
              ? el('details', { class: 'check-output' }, el('summary', {}, 'whole output'), el('pre', {}, check.output))
              : check.output
                ? el('pre', {}, check.output)
                : null,
          )
        : null,
      x.error ? el('div', { class: 'error' }, `error: ${x.error}`) : null,
    );
    state.diffText = res.diff;
    state.diffTitle = `What step ${n} changed`;
    renderDiff();
    // A step recorded without input (`snap -m`, `wrap --auto`) is named by what describes it: its message, its files.
    $('input').textContent = x.input === null || x.input === undefined ? (res.what ?? pretty(x.input)) : pretty(x.input);
    $('output').textContent = pretty(x.output);
    const paths = [...new Set(x.changed.map((c) => c.path))];
    fill($('restore-path'), ...paths.map((p) => el('option', { value: p }, p)));
    $('act-restore').disabled = paths.length === 0;
    $('restore-path').disabled = paths.length === 0;
  } catch (e) {
    if (stale()) return;
    showError($('diff'), e);
  }
  try {
    const conv = await conversationAround(n, session);
    if (stale()) return;
    fill(
      $('conversation'),
      ...(conv.length === 0
        ? [el('div', { class: 'none' }, 'No conversation recorded around this step.')]
        : conv.map((e) => {
            if (e.type === 'user' || e.type === 'assistant')
              return el(
                'div',
                { class: `msg ${e.type}` },
                el('b', {}, e.type === 'user' ? 'User' : 'Assistant'),
                el('div', { class: 'text' }, e.text),
              );
            if (e.type === 'step')
              return el('div', { class: `msg stepref${e.step === n ? ' this' : ''}` }, `step ${e.step}: ${e.tool ?? e.kind} (${e.status})`);
            if (e.type === 'call') return el('div', { class: 'msg call' }, `tool call ${e.tool ?? ''} (not recorded)`);
            return el('div', { class: 'msg' }, e.type);
          })),
    );
  } catch (e) {
    if (!stale()) showError($('conversation'), e);
  }
}

// ---- actions: dry run first, then a confirmation ----

function planList(title, items) {
  if (!items || items.length === 0) return null;
  return el('div', { class: 'plan-part' }, el('h4', {}, title), el('ul', {}, ...items.map((t) => el('li', {}, t))));
}

function describePlan(r) {
  return [
    planList(
      r.dryRun ? 'Would change' : 'Changed',
      r.changes.map((c) => `${c.change} ${c.path}`),
    ) ?? el('p', {}, r.dryRun ? 'Would change no file.' : 'Changed no file.'),
    planList(
      'Your changes made outside tool calls, which this overwrites',
      r.outside.map((o) => `${o.change} ${o.path} (${o.when})`),
    ),
    planList(
      'Changed by the agent and by you since: refused without Force (Force puts back the target; your version stays in the safety snapshot)',
      (r.both ?? []).map((b) => `${b.change} ${b.path}: by ${b.by.join(', ')} and by you (${b.yours.join(', ')})`),
    ),
    planList(
      'Unprotected steps crossed',
      r.unprotected.map((u) => `step ${u.step}${u.reason ? `: ${u.reason}` : ''}`),
    ),
    planList(
      'Left as they are',
      r.left.map((l) => `${l.path}: ${l.reason}`),
    ),
    planList(
      'Not undoable outside the worktree',
      (r.notUndoable ?? []).map((n) => `step ${n.step}: ${n.effect} (${n.command})`),
    ),
  ];
}

/** Processes the steps to undo started and left running (an undo puts files back, not processes), as the CLI lists them. */
function processList(res) {
  return planList(
    (res.files ?? res).dryRun === false
      ? 'Still running, started by the undone steps (files are put back, processes are not)'
      : 'Still running, started by the steps to undo (files are put back, processes are not)',
    (res.processes ?? []).map(
      (p) => `pid ${p.pid} (step ${p.step}): ${p.command}${p.ports?.length ? ` · listening on ${p.ports.join(', ')}` : ''}`,
    ),
  );
}

function refusalOf(r, open = []) {
  const why = [];
  if (r.outside.length > 0) {
    why.push(
      open.length > 0
        ? `files were changed outside the recorded tool calls (your own edits, or what the call still running, step ${open.join(', ')}, wrote so far)`
        : 'files were changed outside the recorded tool calls (your own edits?)',
    );
  }
  if ((r.both ?? []).length > 0) {
    why.push(
      `${r.both.map((b) => b.path).join(', ')} changed by the agent and by you since${open.length > 0 ? ` (or by the call still running, step ${open.join(', ')})` : ''}`,
    );
  }
  if (r.unprotected.length > 0) why.push('it crosses steps that have no snapshot (unprotected)');
  return why.length ? why.join('; ') : 'it would be refused';
}

let dialogDone = null;
/** Which dialog is on show: an answer for an earlier one (cancelled, another opened since) is dropped. */
let dialogSeq = 0;

function closeDialog() {
  $('dialog-back').hidden = true;
  dialogDone = null;
  dialogSeq++;
}

/** The confirmation dialog of one operation: its dry run, a refusal with its reason and the force option, then the real run. */
// biome-ignore lint/complexity/noExcessiveLinesPerFunction: one dialog's life in order (dry run, refusal and force, Confirm, result), each part awaiting the user; its closures share the dialog's sequence number, which tells a stale answer.
async function runAction(kind, label, body) {
  const seq = ++dialogSeq;
  const current = () => seq === dialogSeq;
  // The session of the dialog's dry run, whatever the page shows by the time of Confirm.
  const session = state.session;
  const back = $('dialog-back');
  const bodyBox = $('dialog-body');
  const force = $('force');
  const forceLine = $('force-line');
  const confirm = $('dialog-confirm');
  $('dialog-title').textContent = label;
  // An operation still running (its dialog closed meanwhile): this one's dry run comes after it, never instead of it.
  fill(bodyBox, el('p', {}, state.running ? 'Waiting for the operation still running…' : 'Dry run…'));
  forceLine.hidden = true;
  force.checked = false;
  confirm.hidden = false;
  confirm.disabled = true;
  confirm.textContent = 'Confirm';
  $('dialog-cancel').textContent = 'Cancel';
  back.hidden = false;
  while (state.running) await state.running;
  if (!current()) return;
  fill(bodyBox, el('p', {}, 'Dry run…'));
  const showRefusal = (text, hint, dryRun) => {
    bodyBox.prepend(
      el(
        'div',
        { class: 'refusal', role: 'alert' },
        el('b', {}, dryRun ? 'Would be refused without Force: ' : 'Refused, nothing was written: '),
        text,
        hint ? el('div', { class: 'hint' }, hint) : null,
      ),
    );
    forceLine.hidden = false;
    confirm.disabled = !force.checked;
  };
  force.onchange = () => {
    confirm.disabled = !force.checked;
  };
  // What Confirm confirms: the plan of the dry run on show (the server does nothing when it changed since).
  let expect = null;
  let openSteps = [];
  const showDry = (dry, changed, open) => {
    const plan = dry.files ?? dry;
    expect = dry.planId;
    fill(
      bodyBox,
      changed
        ? el(
            'div',
            { class: 'plan-changed', role: 'alert' },
            el('b', {}, 'The plan changed since the dry run, nothing was done: '),
            'this is the new one. Confirm again to go ahead.',
          )
        : null,
      open.length > 0
        ? el(
            'div',
            { class: 'running', role: 'alert' },
            el('b', {}, 'An agent is working: '),
            `step ${open.join(', ')} has not ended. What it writes meanwhile is taken for your edits (kept; refused where the undo would put that file back), and it may go on writing after this.`,
          )
        : null,
      el('p', { class: 'dry' }, 'Dry run: nothing has changed yet.'),
      ...describePlan(plan),
      processList(dry),
    );
    if (plan.wouldRefuse) showRefusal(refusalOf(plan, open), null, true);
    else confirm.disabled = false;
  };
  try {
    // The session's calls still running, beside the dry run: what they write reads as "outside" to it.
    const [dry, st] = await Promise.all([api(kind, {}, { ...body, session, dryRun: true }), api('status', { session }).catch(() => null)]);
    if (!current()) return;
    openSteps = st?.open ?? [];
    showDry(dry, false, openSteps);
  } catch (e) {
    if (!current()) return;
    fill(bodyBox, el('div', { class: 'error' }, e.message, e.error?.hint ? el('div', { class: 'hint' }, e.error.hint) : null));
    confirm.hidden = true;
    return;
  }
  dialogDone = async () => {
    if (!current() || state.running) return;
    confirm.disabled = true;
    let finish = () => {};
    state.running = new Promise((resolve) => {
      finish = resolve;
    });
    let done = false;
    try {
      const res = await api(kind, {}, { ...body, session, dryRun: false, force: force.checked, expect });
      done = true;
      // Its dialog closed meanwhile (another may be on show): the timeline tells what was done.
      if (!current()) return;
      const r = res.files ?? res;
      fill(
        bodyBox,
        el('p', { class: 'done' }, `Done: ${kind} (operation ${r.op}).`),
        ...describePlan(r),
        processList(res),
        r.safety ? el('p', { class: 'hint' }, `Safety snapshot of what was there: ${r.safety}`) : null,
      );
      confirm.hidden = true;
      $('dialog-cancel').textContent = 'Close';
    } catch (e) {
      if (!current()) return;
      if (e.status === 409 && e.error?.code === 'PlanChanged' && e.body?.dryRun) {
        force.checked = false;
        forceLine.hidden = true;
        showDry(e.body.dryRun, true, openSteps);
        return;
      }
      if (e.status === 409 && e.error?.code === 'Refused') showRefusal(e.message, e.error.hint);
      else bodyBox.prepend(el('div', { class: 'error' }, e.message, e.error?.hint ? el('div', { class: 'hint' }, e.error.hint) : null));
      confirm.disabled = !force.checked && !forceLine.hidden;
      if (forceLine.hidden) confirm.disabled = false;
    } finally {
      state.running = null;
      finish();
      // The page's reload is no part of the operation: an action clicked while it runs is answered, not dropped.
      if (done) await refresh(true);
    }
  };
}

// ---- search ----

async function search() {
  const q = $('search').value.trim();
  const box = $('search-results');
  if (!q) {
    box.hidden = true;
    return;
  }
  box.hidden = false;
  try {
    const res = await api('search', { q });
    fill(
      $('search-list'),
      ...(res.rows.length === 0
        ? [el('li', { class: 'none' }, 'Nothing found.')]
        : res.rows.map((r) =>
            el(
              'li',
              {},
              el(
                'button',
                { type: 'button', onclick: () => selectSession(r.session, r.step.step) },
                el('span', { class: 'sid' }, r.session),
                ` #${r.step.step} ${r.step.tool ?? ''} `,
                el('span', { class: 'what' }, r.what ?? ''),
              ),
            ),
          )),
    );
  } catch (e) {
    showError($('search-list'), e);
  }
}

// ---- live refresh ----

async function refresh(force) {
  let s;
  try {
    s = (await api('stamp')).stamp;
    $('live').textContent = '● live';
    $('live').className = 'ok';
  } catch {
    $('live').textContent = '● disconnected';
    $('live').className = 'bad';
    return;
  }
  if (!force && s === state.stamp) return;
  state.stamp = s;
  state.replay = null;
  await loadSessions();
  if (!state.session && state.sessions.length > 0) await selectSession(state.sessions[0].id);
  else if (state.session) await loadTimeline();
  if (force && state.step !== null) await selectStep(state.step);
}

async function poll() {
  try {
    if (!state.running && $('dialog-back').hidden) await refresh(false);
  } finally {
    setTimeout(poll, POLL_MS);
  }
}

// ---- wiring ----

function debounce(fn, ms) {
  let t = null;
  return () => {
    clearTimeout(t);
    t = setTimeout(fn, ms);
  };
}

$('filter-file').addEventListener(
  'input',
  debounce(() => loadTimeline(), 300),
);
$('filter-tool').addEventListener('change', () => loadTimeline());
$('search').addEventListener('input', debounce(search, 300));
for (const r of document.querySelectorAll('input[name="diff-mode"]')) r.addEventListener('change', renderDiff);
$('act-undo').addEventListener('click', () => runAction('undo', `Undo to before step ${state.step}`, { step: state.step }));
$('act-revert').addEventListener('click', () => runAction('revert', `Revert only step ${state.step}`, { step: state.step }));
$('act-restore').addEventListener('click', () => {
  const p = $('restore-path').value;
  const after = $('restore-when').value === 'after';
  runAction('restore', `Restore ${p} as ${after ? 'after' : 'before'} step ${state.step}`, { step: state.step, paths: [p], after });
});
$('redo').addEventListener('click', () => runAction('redo', 'Redo: back to the state before the last undo', {}));
$('dialog-cancel').addEventListener('click', () => {
  $('dialog-cancel').textContent = 'Cancel';
  closeDialog();
});
$('dialog-confirm').addEventListener('click', () => dialogDone?.());
// A link pasted into the address bar of the open page: show what it names.
window.addEventListener('hashchange', () => {
  const link = linkTarget();
  if (link.session && state.sessions.some((s) => s.id === link.session) && (link.session !== state.session || link.step !== state.step))
    selectSession(link.session, link.step);
});
$('cmp-go').addEventListener('click', async () => {
  const from = $('cmp-from').value;
  const to = $('cmp-to').value;
  $('empty').hidden = true;
  $('step-view').hidden = false;
  $('step-title').textContent = `Compare ${from} → ${to}`;
  const seq = ++seqs.detail;
  // Comparing is no step: its actions, input, output and conversation go until a step is selected again.
  state.step = null;
  setLink(state.session, null);
  for (const li of document.querySelectorAll('#timeline li.step.selected')) li.classList.remove('selected');
  for (const id of ['actions', 'step-meta', 'step-extra']) $(id).hidden = true;
  try {
    const res = await api('diff', { session: state.session, from, to });
    if (seq !== seqs.detail) return;
    state.diffText = res.diff;
    state.diffTitle = `From ${$('cmp-from').selectedOptions[0].textContent} to ${$('cmp-to').selectedOptions[0].textContent}`;
    renderDiff();
  } catch (e) {
    if (seq === seqs.detail) showError($('diff'), e);
  }
});

(async () => {
  await loadSessions();
  const link = linkTarget();
  const linked = link.session && state.sessions.some((s) => s.id === link.session) ? link.session : null;
  const first = linked || FIRST_SESSION || state.sessions.find((s) => s.worktreeKind === 'main')?.id || state.sessions[0]?.id;
  if (first) await selectSession(first, linked ? link.step : undefined);
  state.stamp = (await api('stamp')).stamp;
  $('live').textContent = '● live';
  $('live').className = 'ok';
  document.body.dataset.ready = 'true';
  setTimeout(poll, POLL_MS);
})().catch((e) => {
  document.body.prepend(el('div', { class: 'error' }, `agentsnap ui: ${e.message}`));
});
