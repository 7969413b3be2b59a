// Claude Code's read-only tools are not hooked: their calls are journaled from
// the transcript, before the next hooked call's step and at session end.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { cli, tempRepo, treeFiles, type TempRepo } from './helpers.js';
import { runHook } from '../src/hook.js';
import { loadSession } from '../src/session.js';
import { openRepo } from '../src/repo.js';
import { readJournal } from '../src/journal.js';

/** A Claude Code transcript written line by line, as the agent does. */
class Transcript {
  readonly file: string;
  private n = 0;
  private clock = Date.now();
  constructor(repo: TempRepo, name = 'sess') {
    this.file = path.join(repo.home, '.claude', 'projects', 'p', `${name}.jsonl`);
    fs.mkdirSync(path.dirname(this.file), { recursive: true });
    fs.writeFileSync(this.file, `${JSON.stringify({ type: 'user', uuid: 'u-0', timestamp: this.time(), message: { role: 'user', content: 'go' } })}\n`);
  }
  private time(): string {
    this.clock += 1000;
    return new Date(this.clock).toISOString();
  }
  private line(l: unknown): void {
    fs.appendFileSync(this.file, `${JSON.stringify(l)}\n`);
  }
  /** The assistant line holding one call. */
  use(id: string, name: string, input: unknown, messageId = `msg-${++this.n}`): void {
    this.line({ type: 'assistant', uuid: `a-${id}`, timestamp: this.time(), version: '2.1.332', message: { id: messageId, role: 'assistant', model: 'claude-test-1', content: [{ type: 'tool_use', id, name, input }] } });
  }
  result(id: string, content: unknown, isError = false): void {
    this.line({ type: 'user', uuid: `r-${id}`, timestamp: this.time(), message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content, ...(isError ? { is_error: true } : {}) }] } });
  }
  raw(text: string): void {
    fs.appendFileSync(this.file, text);
  }
}

async function wrappedSession(repo: TempRepo): Promise<{ id: string; env: Record<string, string> }> {
  const res = await cli(repo, ['snap', '--json']);
  assert.is(res.code, 0, res.stderr);
  const id = (JSON.parse(res.stdout) as { session: string }).session;
  return { id, env: { ...repo.env, AGENTSNAP_SESSION: id, AGENTSNAP_WORKTREE: repo.dir } };
}

async function hook(repo: TempRepo, env: Record<string, string>, event: string, payload: Record<string, unknown>, wrapped = true) {
  const out = await runHook({ agent: 'claude', event, input: JSON.stringify({ hook_event_name: event, cwd: repo.dir, ...payload }), env, cwd: repo.dir, wrapped });
  assert.is(out.warning, null, String(out.warning));
  return out;
}

/** A hooked Write of `rel`: pre, the write, post. */
async function hookedWrite(repo: TempRepo, env: Record<string, string>, tr: Transcript, id: string, rel: string, content: string, messageId?: string) {
  const input = { file_path: path.join(repo.dir, rel), content };
  tr.use(id, 'Write', input, messageId);
  const common = { session_id: 'cc-1', transcript_path: tr.file, tool_name: 'Write', tool_use_id: id, tool_input: input };
  await hook(repo, env, 'PreToolUse', common);
  repo.write(rel, content);
  tr.result(id, `File created successfully at: ${rel}`);
  await hook(repo, env, 'PostToolUse', { ...common, tool_response: { type: 'create' } });
}

/** The session, without the checkpoint `snap` took to start it. */
async function session(repo: TempRepo, id: string) {
  const s = loadSession(await openRepo(repo.dir, { env: repo.env }), id);
  return { ...s, steps: s.steps.filter((st) => st.kind === 'call') };
}

test('unhooked Read calls between two hooked calls become steps in call order, with input, output and the state they saw', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const { id, env } = await wrappedSession(repo);
    const tr = new Transcript(repo);
    await hookedWrite(repo, env, tr, 'toolu_w1', 'b.txt', 'bee\n');
    tr.use('toolu_r1', 'Read', { file_path: path.join(repo.dir, 'a.txt') });
    tr.result('toolu_r1', '     1\tone\n');
    tr.use('toolu_r2', 'Grep', { pattern: 'nothing' });
    tr.result('toolu_r2', [{ type: 'text', text: 'No matches found' }], true);
    await hookedWrite(repo, env, tr, 'toolu_w2', 'c.txt', 'sea\n');
    const s = await session(repo, id);
    assert.equal(s.steps.map((st) => [st.step, st.tool, st.toolUseId, st.source ?? 'hook', st.status]), [
      [2, 'Write', 'toolu_w1', 'hook', 'done'],
      [3, 'Read', 'toolu_r1', 'transcript', 'done'],
      [4, 'Grep', 'toolu_r2', 'transcript', 'failed'],
      [5, 'Write', 'toolu_w2', 'hook', 'done'],
    ]);
    const [w1, r1, r2] = s.steps;
    assert.equal(r1?.input, { file_path: path.join(repo.dir, 'a.txt') });
    assert.is(r1?.output, '     1\tone\n');
    assert.is(r2?.output, 'No matches found');
    assert.is(r2?.error, 'No matches found');
    // No snapshot of their own: the state the session was in (after the first Write).
    assert.is(r1?.pre, w1?.post);
    assert.is(r1?.post, w1?.post);
    assert.equal([...treeFiles(repo, r1?.pre as string).keys()].sort(), ['a.txt', 'b.txt']);
    assert.is(r1?.durationMs, 1000);
    assert.is(r1?.transcript?.uuid, 'a-toolu_r1');
    assert.is(r1?.agentVersion, 'claude-code 2.1.332');
    assert.is(repo.git(['rev-parse', `refs/agent/${id}/3`]).trim(), w1?.post);
    // Marked in the journal, and shown by log.
    const events = readJournal(path.join(repo.dir, '.git', 'agentsnap', 'sessions', id, 'journal.jsonl')).events as unknown as Record<string, unknown>[];
    assert.is(events.filter((e) => e.source === 'transcript').length, 4);
    const log = JSON.parse((await cli(repo, ['log', '--session', id, '--json'])).stdout) as { step: number; tool: string; source?: string }[];
    assert.equal(log.map((st) => [st.tool, st.source ?? null]), [[null, null], ['Write', null], ['Read', 'transcript'], ['Grep', 'transcript'], ['Write', null]]);
    // Undo to a read: the state its pre names (b.txt there, c.txt not).
    const undo = await cli(repo, ['undo', '3', '--session', id]);
    assert.is(undo.code, 0, undo.stderr);
    assert.ok(fs.existsSync(path.join(repo.dir, 'b.txt')));
    assert.not.ok(fs.existsSync(path.join(repo.dir, 'c.txt')));
  } finally {
    repo.cleanup();
  }
});

test('a Read written to the transcript only after the hooked Write of its message ran gets the state before that Write, not after', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const { id, env } = await wrappedSession(repo);
    const tr = new Transcript(repo);
    // Claude Code ran [Read a.txt, Write b.txt] of one message, but the hooks of the Write ran before the message reached the transcript.
    const input = { file_path: path.join(repo.dir, 'b.txt'), content: 'bee\n' };
    const common = { session_id: 'cc-1', transcript_path: tr.file, tool_name: 'Write', tool_use_id: 'toolu_w1', tool_input: input };
    await hook(repo, env, 'PreToolUse', common);
    repo.write('b.txt', 'bee\n');
    await hook(repo, env, 'PostToolUse', { ...common, tool_response: { type: 'create' } });
    tr.use('toolu_r1', 'Read', { file_path: path.join(repo.dir, 'a.txt') }, 'msg-both');
    tr.use('toolu_w1', 'Write', input, 'msg-both');
    tr.result('toolu_r1', '     1\tone\n');
    tr.result('toolu_w1', 'File created successfully at: b.txt');
    await hookedWrite(repo, env, tr, 'toolu_w2', 'c.txt', 'sea\n');
    const s = await session(repo, id);
    const w1 = s.steps.find((st) => st.toolUseId === 'toolu_w1');
    const r1 = s.steps.find((st) => st.toolUseId === 'toolu_r1');
    assert.ok(r1, 'the read is journaled');
    assert.is(r1?.pre, w1?.pre, 'the state the read saw: before the Write');
    assert.is(r1?.post, w1?.pre);
    assert.equal([...treeFiles(repo, r1?.pre as string).keys()].sort(), ['a.txt']);
    assert.is(repo.git(['rev-parse', `refs/agent/${id}/${r1?.step}`]).trim(), w1?.pre);
  } finally {
    repo.cleanup();
  }
});

test('a read still running when the next hooked call of its message starts is journaled before that call, and ended later', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const { id, env } = await wrappedSession(repo);
    const tr = new Transcript(repo);
    // One assistant message: Read then Write; the Write's hooks run while the Read has no result yet.
    tr.use('toolu_r1', 'Read', { file_path: 'a.txt' }, 'msg-x');
    await hookedWrite(repo, env, tr, 'toolu_w1', 'b.txt', 'bee\n', 'msg-x');
    let s = await session(repo, id);
    assert.equal(s.steps.map((st) => [st.toolUseId, st.status]), [['toolu_r1', 'open'], ['toolu_w1', 'done']]);
    assert.equal(s.steps[1]?.overlaps, [s.steps[0]?.step], 'the Write ran beside the read');
    tr.result('toolu_r1', 'one');
    await hookedWrite(repo, env, tr, 'toolu_w2', 'c.txt', 'sea\n');
    s = await session(repo, id);
    assert.equal(s.steps.map((st) => [st.toolUseId, st.status]), [['toolu_r1', 'done'], ['toolu_w1', 'done'], ['toolu_w2', 'done']]);
    assert.is(s.steps[0]?.output, 'one');
    assert.is(s.steps[0]?.preTree, s.steps[1]?.preTree, 'started in the state before the Write');
    assert.is(s.steps[0]?.post, s.steps[0]?.pre, 'no snapshot of its own, and the session head stays after the Write');
    assert.is(s.head, s.steps[2]?.post);
    // A read started after the hooked call (later in its message) waits for its result: never ahead of the call.
    tr.use('toolu_w3', 'Write', { file_path: path.join(repo.dir, 'd.txt'), content: 'd\n' }, 'msg-y');
    tr.use('toolu_r3', 'Read', { file_path: 'a.txt' }, 'msg-y');
    const c3 = { session_id: 'cc-1', transcript_path: tr.file, tool_name: 'Write', tool_use_id: 'toolu_w3', tool_input: {} };
    await hook(repo, env, 'PreToolUse', c3);
    s = await session(repo, id);
    assert.equal(s.steps.map((st) => st.toolUseId), ['toolu_r1', 'toolu_w1', 'toolu_w2', 'toolu_w3']);
  } finally {
    repo.cleanup();
  }
});

test('SessionEnd journals the trailing reads (hooks written by init), each once', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const env = { ...repo.env };
    const tr = new Transcript(repo);
    const input = { file_path: path.join(repo.dir, 'b.txt'), content: 'b\n' };
    tr.use('toolu_r0', 'Read', { file_path: 'a.txt' });
    tr.result('toolu_r0', 'one');
    tr.use('toolu_w1', 'Write', input);
    const common = { session_id: 'cc-init', transcript_path: tr.file, tool_name: 'Write', tool_use_id: 'toolu_w1', tool_input: input };
    const pre = await hook(repo, env, 'PreToolUse', common, false);
    repo.write('b.txt', 'b\n');
    tr.result('toolu_w1', 'ok');
    await hook(repo, env, 'PostToolUse', { ...common, tool_response: {} }, false);
    tr.use('toolu_r1', 'Read', { file_path: 'b.txt' });
    tr.result('toolu_r1', 'b');
    tr.use('toolu_r2', 'WebSearch', { query: 'x' });
    tr.result('toolu_r2', 'results');
    const end = await hook(repo, env, 'SessionEnd', { session_id: 'cc-init', transcript_path: tr.file }, false);
    assert.is(end.action, 'end');
    const s = await session(repo, pre.session as string);
    assert.ok(s.ended);
    assert.equal(s.steps.map((st) => st.toolUseId), ['toolu_r0', 'toolu_w1', 'toolu_r1', 'toolu_r2']);
  } finally {
    repo.cleanup();
  }
});

test('a transcript that is missing, truncated or garbled never breaks a hook: nothing imported, the call recorded', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const { id, env } = await wrappedSession(repo);
    const gone = path.join(repo.home, 'no-such.jsonl');
    const input = { file_path: path.join(repo.dir, 'b.txt'), content: 'b\n' };
    const common = { session_id: 'cc-1', transcript_path: gone, tool_name: 'Write', tool_use_id: 'toolu_w1', tool_input: input };
    assert.is((await hook(repo, env, 'PreToolUse', common)).action, 'pre');
    assert.is((await hook(repo, env, 'PostToolUse', { ...common, tool_response: {} })).action, 'post');
    const tr = new Transcript(repo, 'torn');
    tr.raw('{"type":"assistant","uuid":"a-toolu_r1","message":{"id":"m","role":"assistant","content":[{"type":"tool_use","id":"toolu_r1","name":"Read","inp');
    fs.appendFileSync(tr.file, '\nnot json at all\n\u0000\u0001\n');
    const c2 = { ...common, transcript_path: tr.file, tool_use_id: 'toolu_w2' };
    assert.is((await hook(repo, env, 'PreToolUse', c2)).action, 'pre');
    assert.is((await hook(repo, env, 'PostToolUse', { ...c2, tool_response: {} })).action, 'post');
    fs.writeFileSync(tr.file, '');
    const c3 = { ...common, transcript_path: tr.file, tool_use_id: 'toolu_w3' };
    assert.is((await hook(repo, env, 'PreToolUse', c3)).action, 'pre');
    assert.equal((await session(repo, id)).steps.map((st) => st.toolUseId), ['toolu_w1', 'toolu_w2', 'toolu_w3']);
  } finally {
    repo.cleanup();
  }
});

test.run();
