// Conversation rewind with synthetic Claude Code transcripts in the documented
// format (see /work/shared/reference/claude-code-hooks.md). The end-to-end test
// with the real `claude` binary is test/agents/claude-undo-e2e.test.ts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { cli, cliProcess, tempRepo, type TempRepo } from '../support/helpers.js';
import { openRepo, recordPost, recordPre, snap, startSession } from '../../src/index.js';
import { syntheticToolUseId } from '../../src/agents/gemini.js';
import { openContext } from '../../src/session/context.js';

const SID = '2907b720-0000-4000-8000-000000000001';

function line(o: Record<string, unknown>): string {
  return JSON.stringify(o);
}

/** A transcript: prompt, message 1 (text + Write toolu_1), its result, message 2 (Bash toolu_2 + Bash toolu_3), results, text. */
function writeTranscript(repo: TempRepo): string {
  const dir = path.join(repo.home, '.claude', 'projects', repo.dir.replace(/\//g, '-'));
  fs.mkdirSync(dir, { recursive: true });
  const base = { sessionId: SID, cwd: repo.dir, version: '2.1.328' };
  const assistant = (uuid: string, parent: string, id: string, block: Record<string, unknown>) =>
    line({ ...base, type: 'assistant', uuid, parentUuid: parent, message: { id, role: 'assistant', content: [block] } });
  const result = (uuid: string, parent: string, toolUseId: string) =>
    line({
      ...base,
      type: 'user',
      uuid,
      parentUuid: parent,
      message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUseId, content: 'ok' }] },
    });
  const lines = [
    line({ type: 'queue-operation', operation: 'enqueue', sessionId: SID }),
    line({ ...base, type: 'user', uuid: 'u1', parentUuid: null, message: { role: 'user', content: 'make the files' } }),
    assistant('a1', 'u1', 'msg_1', { type: 'text', text: 'Writing a.txt' }),
    assistant('a2', 'a1', 'msg_1', {
      type: 'tool_use',
      id: 'toolu_1',
      name: 'Write',
      input: { file_path: `${repo.dir}/a.txt`, content: 'one\n' },
    }),
    result('r1', 'a2', 'toolu_1'),
    assistant('a3', 'r1', 'msg_2', { type: 'tool_use', id: 'toolu_2', name: 'Bash', input: { command: 'echo two > b.txt' } }),
    assistant('a4', 'a3', 'msg_2', { type: 'tool_use', id: 'toolu_3', name: 'Bash', input: { command: 'echo three > c.txt' } }),
    result('r2', 'a4', 'toolu_2'),
    result('r3', 'r2', 'toolu_3'),
    assistant('a5', 'r3', 'msg_3', { type: 'text', text: 'Done.' }),
  ];
  const file = path.join(dir, `${SID}.jsonl`);
  fs.writeFileSync(file, lines.join('\n') + '\n');
  return file;
}

async function recordCalls(repo: TempRepo, transcript: string | null): Promise<string> {
  const r = await openRepo(repo.dir, { env: repo.env });
  const start = await snap({ cwd: repo.dir, env: repo.env });
  const id = start.session;
  const calls: [string, string, string, string, () => void][] = [
    ['Write', 'toolu_1', 'a2', 'a.txt', () => fs.writeFileSync(path.join(repo.dir, 'a.txt'), 'one\n')],
    ['Bash', 'toolu_2', 'a3', 'b.txt', () => fs.writeFileSync(path.join(repo.dir, 'b.txt'), 'two\n')],
    ['Bash', 'toolu_3', 'a4', 'c.txt', () => fs.writeFileSync(path.join(repo.dir, 'c.txt'), 'three\n')],
  ];
  for (const [tool, toolUseId, uuid, , change] of calls) {
    await recordPre(await openContext(r), id, {
      tool,
      toolUseId,
      input: { command: 'x' },
      transcript: transcript ? { path: transcript, offset: 0, uuid } : null,
    });
    change();
    await recordPost(await openContext(r), id, { toolUseId });
  }
  return id;
}

test('undo N --chat forks the transcript before step N (cut before its whole assistant message) and prints the resume command', async () => {
  const repo = tempRepo({ files: { 'base.txt': 'base\n' } });
  try {
    const original = writeTranscript(repo);
    const originalBytes = fs.readFileSync(original);
    const id = await recordCalls(repo, original);
    // Step 1 is checkpoint (the snap that started the session), the calls are steps 2 to 4.
    const r = await cli(repo, ['undo', '4', '--chat', '--session', id]);
    assert.is(r.code, 0, r.stderr);
    const m = /claude --resume ([0-9a-f-]{36})/.exec(r.stdout);
    assert.ok(m, r.stdout);
    const forked = path.join(path.dirname(original), `${m![1]}.jsonl`);
    const lines = fs
      .readFileSync(forked, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(
      lines.map((l) => l.uuid ?? l.type),
      ['queue-operation', 'u1', 'a1', 'a2', 'r1'],
    );
    assert.ok(lines.every((l) => l.sessionId === m![1]));
    assert.match(r.stdout, /shared its assistant message with 1 other tool call/);
    assert.match(r.stdout, new RegExp(`cd ${repo.dir} && claude --resume`));
    assert.equal(fs.readFileSync(original), originalBytes, 'the original transcript is unchanged');
    assert.ok(repo.exists('c.txt'), '--chat leaves the files alone');
  } finally {
    repo.cleanup();
  }
});

test('undo N --both restores the files and forks the conversation', async () => {
  const repo = tempRepo({ files: { 'base.txt': 'base\n' } });
  try {
    const original = writeTranscript(repo);
    const id = await recordCalls(repo, original);
    const r = await cli(repo, ['undo', '2', '--both', '--session', id, '--json']);
    assert.is(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { files: { changes: { path: string }[] }; chat: { kind: string; file: string; lines: number } };
    assert.equal(out.files.changes.map((c) => c.path).sort(), ['a.txt', 'b.txt', 'c.txt']);
    assert.not.ok(repo.exists('a.txt'));
    assert.is(out.chat.kind, 'transcript');
    assert.is(out.chat.lines, 2, 'cut before message 1 (its text block and tool call)');
  } finally {
    repo.cleanup();
  }
});

test('the printed resume command runs as is in a shell when the directory has spaces and quotes', async () => {
  const repo = tempRepo({ files: { 'base.txt': 'base\n' } });
  try {
    const original = writeTranscript(repo);
    const odd = path.join(repo.dir, "it's a $dir");
    fs.mkdirSync(odd);
    fs.writeFileSync(
      original,
      fs.readFileSync(original, 'utf8').replaceAll(`"cwd":${JSON.stringify(repo.dir)}`, `"cwd":${JSON.stringify(odd)}`),
    );
    const id = await recordCalls(repo, original);
    const r = await cli(repo, ['undo', '3', '--chat', '--session', id]);
    assert.is(r.code, 0, r.stderr);
    const line = /^resume it with: {2}(.*) && claude --resume [0-9a-f-]{36}$/m.exec(r.stdout);
    assert.ok(line, r.stdout);
    const sh = spawnSync('/bin/sh', ['-c', `${line![1]} && pwd`], { cwd: repo.base, encoding: 'utf8' });
    assert.is(sh.status, 0, sh.stderr);
    assert.is(sh.stdout.trim(), odd);
    const json = JSON.parse((await cli(repo, ['undo', '3', '--chat', '--session', id, '--json'])).stdout) as {
      chat: { cwd: string; shellCommand: string };
    };
    assert.is(json.chat.cwd, odd);
    assert.match(json.chat.shellCommand, / && claude --resume [0-9a-f-]{36}$/);
  } finally {
    repo.cleanup();
  }
});

test('undo --chat of a call a subagent made cuts the main conversation before the Agent call that started it', async () => {
  const repo = tempRepo({ files: { 'base.txt': 'base\n' } });
  try {
    // As Claude Code 2.1.332 writes them: the subagent's lines in <session>/subagents/agent-<id>.jsonl,
    // and in agent-<id>.meta.json the id of the Agent call that started it (subagents of subagents nest the same way).
    const original = writeTranscript(repo);
    const subDir = path.join(path.dirname(original), SID, 'subagents');
    fs.mkdirSync(subDir, { recursive: true });
    const sub = (agent: string, spawnedBy: string, calls: string[]) => {
      const lines = calls.map((id, i) =>
        line({
          type: 'assistant',
          isSidechain: true,
          agentId: agent,
          sessionId: SID,
          uuid: `${agent}-${i}`,
          parentUuid: null,
          message: { id: `msg_${agent}_${i}`, role: 'assistant', content: [{ type: 'tool_use', id, name: 'Write', input: {} }] },
        }),
      );
      fs.writeFileSync(path.join(subDir, `agent-${agent}.jsonl`), lines.join('\n') + '\n');
      fs.writeFileSync(
        path.join(subDir, `agent-${agent}.meta.json`),
        JSON.stringify({ agentType: 'general-purpose', toolUseId: spawnedBy, spawnDepth: 1 }),
      );
    };
    sub('a1', 'toolu_2', ['toolu_sub1', 'toolu_agent2']); // started by call toolu_2 (message 2)
    sub('a2', 'toolu_agent2', ['toolu_sub2']); // started inside subagent a1
    sub('a0', 'toolu_1', ['toolu_agent0']); // started by call toolu_1, which the fork keeps
    sub('a0b', 'toolu_agent0', ['toolu_sub0']); // started inside a0
    const r = await openRepo(repo.dir, { env: repo.env });
    const id = (await snap({ cwd: repo.dir, env: repo.env })).session;
    const calls: [string, string | null][] = [
      ['toolu_1', 'a2'],
      ['toolu_2', 'a3'],
      ['toolu_sub1', null],
      ['toolu_sub2', null],
    ];
    for (const [toolUseId, uuid] of calls) {
      await recordPre(await openContext(r), id, {
        tool: 'Write',
        toolUseId,
        input: {},
        transcript: { path: original, offset: 0, ...(uuid ? { uuid } : {}) },
      });
      await recordPost(await openContext(r), id, { toolUseId });
    }
    // Steps: 1 the snap checkpoint, 2 toolu_1, 3 toolu_2 (the Agent call), 4 and 5 inside subagents.
    for (const step of ['4', '5']) {
      const res = await cli(repo, ['undo', step, '--chat', '--session', id]);
      assert.is(res.code, 0, res.stderr);
      const m = /claude --resume ([0-9a-f-]{36})/.exec(res.stdout);
      assert.ok(m, res.stdout);
      const kept = fs
        .readFileSync(path.join(path.dirname(original), `${m![1]}.jsonl`), 'utf8')
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { uuid?: string; type: string }).uuid ?? 'q');
      assert.equal(kept, ['q', 'u1', 'a1', 'a2', 'r1'], `step ${step}: cut before the message holding the Agent call`);
      assert.match(
        res.stdout,
        `step ${step} was made by a subagent: the conversation is cut before step 3, the Agent call that started it`,
      );
      // The fork is a whole session: the subagent conversations of the calls it keeps come with it.
      const forkSubs = path.join(path.dirname(original), m![1] as string, 'subagents');
      assert.equal(fs.readdirSync(forkSubs).sort(), ['agent-a0.jsonl', 'agent-a0.meta.json', 'agent-a0b.jsonl', 'agent-a0b.meta.json']);
      const copied = JSON.parse(fs.readFileSync(path.join(forkSubs, 'agent-a0b.jsonl'), 'utf8')) as {
        sessionId: string;
        message: { content: { id: string }[] };
      };
      assert.is(copied.sessionId, m![1]);
      assert.is(copied.message.content[0]?.id, 'toolu_sub0');
      assert.equal(fs.readFileSync(path.join(forkSubs, 'agent-a0.meta.json')), fs.readFileSync(path.join(subDir, 'agent-a0.meta.json')));
    }
  } finally {
    repo.cleanup();
  }
});

test('without a transcript, undo --chat prints a digest of the session before step N', async () => {
  const repo = tempRepo({ files: { 'base.txt': 'base\n' } });
  try {
    const id = await recordCalls(repo, null);
    const r = await cli(repo, ['undo', '3', '--chat', '--session', id]);
    assert.is(r.code, 0, r.stderr);
    assert.match(r.stdout, /step 2 Write: x \(done\) -> A a.txt/);
    assert.not.match(r.stdout, /step 3 Bash/);
    assert.match(r.stdout, /Steps 3 to 4 are taken back in the conversation only/);
    assert.match(r.stdout, /still hold their changes/, 'the files were not restored: the digest does not say they were');
    assert.not.match(r.stdout, /were undone|as they were before step/);
    assert.match(r.stderr, /no conversation to fork \(no transcript is recorded for this session\)/);
    // After an undo of the files, the digest says so.
    assert.is((await cli(repo, ['undo', '3', '--session', id])).code, 0);
    const after = await cli(repo, ['undo', '3', '--chat', '--session', id]);
    assert.is(after.code, 0, after.stderr);
    assert.match(after.stdout, /Steps 3 to 4 were undone: the files in .* are as they were before step 3/);
  } finally {
    repo.cleanup();
  }
});

/** A Codex 0.171 rollout: session_meta, the prompt, a response with text + call_1, its output, a response with call_2 + call_3, outputs, the end. */
function writeRollout(repo: TempRepo, id: string, context = false): string {
  const rollout = path.join(repo.home, '.codex', 'sessions', '2026', '11', '30', `rollout-2026-11-30T10-00-00-${id}.jsonl`);
  fs.mkdirSync(path.dirname(rollout), { recursive: true });
  let ordinal = 0;
  const rec = (type: string, payload: Record<string, unknown>) =>
    JSON.stringify({ timestamp: '2026-11-30T10:00:00.000Z', ordinal: ordinal++, type, payload });
  const item = (payload: Record<string, unknown>) => rec('response_item', payload);
  const call = (n: string) =>
    item({
      type: 'function_call',
      id: `fc_${n}`,
      name: 'exec_command',
      arguments: JSON.stringify({ cmd: `echo ${n}` }),
      call_id: `call_${n}`,
    });
  const output = (n: string) => item({ type: 'function_call_output', call_id: `call_${n}`, output: 'Process exited with code 0' });
  const lines = [
    rec('session_meta', { session_id: id, id, cwd: repo.dir, cli_version: '0.171.0', big: 0 }).replace(
      '"big":0',
      '"big":12345678901234567890',
    ),
    rec('event_msg', { type: 'task_started', turn_id: 't1' }),
    ...(context
      ? [
          item({ type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'You are Codex.' }] }),
          item({
            type: 'message',
            role: 'user',
            content: [{ type: 'input_text', text: `<environment_context>\n  <cwd>${repo.dir}</cwd>\n</environment_context>` }],
          }),
          rec('turn_context', { turn_id: 't1', cwd: repo.dir }),
        ]
      : []),
    item({ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'make the files' }] }),
    rec('event_msg', { type: 'item_completed', thread_id: id, item: { type: 'UserMessage', id: 'u1' } }),
    rec('event_msg', { type: 'item_completed', thread_id: id, item: { type: 'AgentMessage', id: 'msg_1' } }),
    item({ type: 'message', role: 'assistant', id: 'msg_1', content: [{ type: 'output_text', text: 'Writing a.txt' }] }),
    call('1'),
    rec('token_usage_record', { thread_id: id, session_id: id, response_id: 'resp_1' }),
    output('1'),
    rec('event_msg', { type: 'token_count' }),
    call('2'),
    call('3'),
    rec('token_usage_record', { thread_id: id, session_id: id, response_id: 'resp_2' }),
    output('2'),
    output('3'),
    item({ type: 'message', role: 'assistant', id: 'msg_3', content: [{ type: 'output_text', text: 'Done.' }] }),
    rec('event_msg', { type: 'task_complete' }),
  ];
  fs.writeFileSync(rollout, lines.join('\n') + '\n');
  return rollout;
}

async function recordCodexCalls(repo: TempRepo, rollout: string): Promise<string> {
  const r = await openRepo(repo.dir, { env: repo.env });
  const id = (await startSession(await openContext(r), { agent: 'codex' })).session;
  for (const [n, f] of [
    ['1', 'a.txt'],
    ['2', 'b.txt'],
    ['3', 'c.txt'],
  ] as const) {
    await recordPre(await openContext(r), id, {
      tool: 'Bash',
      toolUseId: `call_${n}`,
      input: { command: `echo ${n}` },
      transcript: { path: rollout, offset: 0 },
    });
    fs.writeFileSync(path.join(repo.dir, f), `${n}\n`);
    await recordPost(await openContext(r), id, { toolUseId: `call_${n}` });
  }
  return id;
}

test('undo N --chat of a Codex session writes a new rollout cut before step N under a new thread id, resumable with codex resume', async () => {
  const repo = tempRepo({ files: { 'base.txt': 'base\n' } });
  try {
    const oldId = '01a231fc-1d01-71f2-837d-4137f85c75ee';
    const rollout = writeRollout(repo, oldId);
    const originalBytes = fs.readFileSync(rollout);
    const id = await recordCodexCalls(repo, rollout);
    // Steps 1 to 3 are call_1 to call_3; call_3 shares its model response with call_2.
    const res = await cliProcess(repo, ['undo', '3', '--chat', '--session', id]);
    assert.is(res.code, 0, res.stderr);
    const m = /^resume it with: {2}cd (.*) && codex resume ([0-9a-f-]{36})$/m.exec(res.stdout);
    assert.ok(m, res.stdout);
    assert.is(m![1], repo.dir);
    const newId = m![2] as string;
    assert.match(newId, /^[0-9a-f]{8}-[0-9a-f]{4}-7/, 'a UUID v7, as Codex names its threads');
    assert.match(res.stdout, /shared its model response with 1 other tool call/);
    const json = JSON.parse((await cliProcess(repo, ['undo', '3', '--chat', '--session', id, '--json'])).stdout) as {
      chat: { file: string; agent: string; sessionId: string };
    };
    assert.is(json.chat.agent, 'codex');
    const forked = json.chat.file;
    const d = new Date();
    const day = `${d.getFullYear()}/${String(d.getMonth() + 1).padStart(2, '0')}/${String(d.getDate()).padStart(2, '0')}`;
    assert.ok(forked.startsWith(path.join(repo.home, '.codex', 'sessions', ...day.split('/')) + path.sep), forked);
    assert.match(path.basename(forked), new RegExp(`^rollout-\\d{4}-\\d{2}-\\d{2}T\\d{2}-\\d{2}-\\d{2}-${json.chat.sessionId}\\.jsonl$`));
    const text = fs.readFileSync(forked, 'utf8');
    const recs = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; payload: Record<string, unknown> });
    assert.is(recs.length, 10, 'everything before the response holding call_2 and call_3');
    assert.equal(recs[0]?.payload.id, json.chat.sessionId);
    assert.equal(recs[0]?.payload.session_id, json.chat.sessionId);
    // Marked as Codex's own `codex fork` marks a fork (0.171.0): the parent's id and where the copy ends, after `id`.
    assert.is(recs[0]?.payload.forked_from_id, oldId);
    assert.is(recs[0]?.payload.forked_from_ordinal_exclusive, 10);
    assert.equal(Object.keys(recs[0]?.payload ?? {}).slice(0, 4), ['session_id', 'id', 'forked_from_id', 'forked_from_ordinal_exclusive']);
    assert.ok(text.includes('12345678901234567890'), 'lines are copied, not re-serialised (big integers stay exact)');
    assert.is(text.split(oldId).length, 2, 'every other mention of the old thread id is the new one');
    assert.not.ok(text.includes('call_2') || text.includes('call_3'));
    assert.ok(text.includes('call_1'));
    assert.is((fs.statSync(forked).mode & 0o777).toString(8), '600');
    // Cut before step 1: before its whole model response (the text that came with the call too).
    const first = JSON.parse((await cliProcess(repo, ['undo', '1', '--chat', '--session', id, '--json'])).stdout) as {
      chat: { file: string; lines: number };
    };
    assert.is(first.chat.lines, 4, 'session_meta, task_started, the prompt and its event');
    assert.not.ok(fs.readFileSync(first.chat.file, 'utf8').includes('Writing a.txt'));
    assert.equal(fs.readFileSync(rollout), originalBytes, 'the original rollout is unchanged');
    assert.ok(repo.exists('c.txt'), '--chat leaves the files alone');
  } finally {
    repo.cleanup();
  }
});

test('undo N --compact of a Codex session: a new rollout with the context Codex gave the model, the digest as a user message, and the rollout from step N on', async () => {
  const repo = tempRepo({ files: { 'base.txt': 'base\n' } });
  try {
    const oldId = '01a231fc-1d01-71f2-837d-4137f85c75ee';
    const rollout = writeRollout(repo, oldId, true);
    const originalBytes = fs.readFileSync(rollout);
    const id = await recordCodexCalls(repo, rollout);
    const res = await cliProcess(repo, ['undo', '2', '--compact', '--session', id, '--json']);
    assert.is(res.code, 0, res.stderr);
    const chat = (
      JSON.parse(res.stdout) as {
        chat: {
          kind: string;
          agent: string;
          file: string;
          sessionId: string;
          digest: string;
          resumeCommand: string;
          before: { messages: number };
          after: { messages: number };
        };
      }
    ).chat;
    assert.is(chat.kind, 'transcript', res.stdout);
    assert.is(chat.agent, 'codex');
    assert.is(chat.resumeCommand, `codex resume ${chat.sessionId}`);
    const recs = fs
      .readFileSync(chat.file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { ordinal: number; type: string; payload: Record<string, unknown> });
    const shape = recs.map((r) =>
      r.type === 'response_item'
        ? `${String(r.payload.type)}:${String(r.payload.role ?? r.payload.call_id)}`
        : `${r.type}${r.type === 'event_msg' ? `:${String(r.payload.type)}` : ''}`,
    );
    assert.equal(shape, [
      'session_meta',
      'event_msg:task_started',
      'message:developer',
      'message:user',
      'turn_context',
      'message:user',
      'function_call:call_2',
      'function_call:call_3',
      'token_usage_record',
      'function_call_output:call_2',
      'function_call_output:call_3',
      'message:assistant',
      'event_msg:task_complete',
    ]);
    assert.equal(
      recs.map((r) => r.ordinal),
      recs.map((_, i) => i),
      'ordinals renumbered',
    );
    assert.is(recs[0]?.payload.id, chat.sessionId);
    assert.is(recs[0]?.payload.forked_from_id, oldId, 'forked from the original');
    assert.is(recs[0]?.payload.forked_from_ordinal_exclusive, undefined, 'not a copy of the original up to an ordinal');
    const digest = JSON.stringify(recs[5]?.payload.content);
    assert.ok(digest.includes('make the files') && digest.includes('Writing a.txt'), digest);
    assert.match(chat.digest, /step 1 Bash: echo 1 -> A a\.txt/);
    assert.not.ok(JSON.stringify(recs).includes('call_1'), 'call 1 is only in the digest, as a step');
    assert.is(chat.before.messages, 9);
    assert.is(chat.after.messages, 6);
    assert.equal(fs.readFileSync(rollout), originalBytes, 'the original rollout is unchanged');
    assert.ok(repo.exists('c.txt'), '--compact leaves the files alone');
  } finally {
    repo.cleanup();
  }
});

test('undo --chat of a Codex call the rollout does not hold prints the digest and says why', async () => {
  const repo = tempRepo({ files: { 'base.txt': 'base\n' } });
  try {
    const rollout = path.join(repo.home, '.codex', 'sessions', '2026', '12', '01', 'rollout-2026-12-01T10-00-00-abc.jsonl');
    fs.mkdirSync(path.dirname(rollout), { recursive: true });
    fs.writeFileSync(rollout, JSON.stringify({ type: 'session_meta', payload: { id: 'abc' } }) + '\n');
    const id = await recordCodexCalls(repo, rollout);
    const res = await cliProcess(repo, ['undo', '2', '--chat', '--session', id]);
    assert.is(res.code, 0, res.stderr);
    assert.match(res.stderr, /the tool call of step 2 is not in the Codex rollout/);
    assert.match(res.stderr, rollout);
    assert.match(res.stdout, /still hold their changes/);
  } finally {
    repo.cleanup();
  }
});

/** A Gemini CLI 0.61 chat: metadata, the prompt, three turns (the second with two calls, the third repeating the first call), results. */
function writeGeminiChat(repo: TempRepo): { file: string; calls: { name: string; args: Record<string, unknown> }[] } {
  const tmp = path.join(repo.home, '.gemini', 'tmp', 'repo');
  fs.mkdirSync(path.join(tmp, 'chats'), { recursive: true });
  fs.writeFileSync(path.join(tmp, '.project_root'), repo.dir);
  const file = path.join(tmp, 'chats', 'session-2026-11-30T10-00-f814ecc2.jsonl');
  const calls = [
    { name: 'write_file', args: { file_path: 'a.txt', content: '1\n' } },
    { name: 'run_shell_command', args: { command: 'echo 2 > b.txt' } },
    { name: 'run_shell_command', args: { command: 'echo 3 > c.txt' } },
    { name: 'write_file', args: { file_path: 'a.txt', content: '1\n' } },
  ];
  const turn = (id: string, text: string, cs: typeof calls) => ({
    id,
    timestamp: '2026-11-30T10:00:01.000Z',
    type: 'gemini',
    content: text,
    toolCalls: cs.map((c, i) => ({
      id: `${c.name}_${id}_${i}`,
      name: c.name,
      args: c.args,
      result: [{ functionResponse: { id: `${c.name}_${id}_${i}`, name: c.name, response: { output: 'ok' } } }],
    })),
  });
  const result = (id: string) => ({ id, type: 'user', content: [{ functionResponse: { name: 'x', response: { output: 'ok' } } }] });
  const records = [
    {
      sessionId: 'f814ecc2-1067-40d9-bf19-64c619bdc0e5',
      projectHash: 'abc',
      startTime: '2026-11-30T10:00:00.000Z',
      lastUpdated: '2026-11-30T10:00:00.000Z',
      kind: 'main',
    },
    { id: 'p1', type: 'user', content: [{ text: 'make the files' }] },
    { $set: { lastUpdated: '2026-11-30T10:00:00.500Z' } },
    { ...turn('m1', 'Writing a.txt', []), toolCalls: undefined },
    turn('m1', 'Writing a.txt', calls.slice(0, 1)),
    result('r1'),
    turn('m2', '', calls.slice(1, 3)),
    result('r2'),
    { id: 'gone', type: 'user', content: [{ text: 'rewound away' }] },
    { $rewindTo: 'gone' },
    turn('m3', '', calls.slice(3)),
    result('r3'),
    { id: 'm4', type: 'gemini', content: 'Done.' },
  ];
  fs.writeFileSync(file, records.map((r) => JSON.stringify(r)).join('\n') + '\n');
  return { file, calls };
}

test('undo N --chat of a Gemini CLI session writes a new chat cut before step N in the same chats directory, resumable with gemini --resume', async () => {
  const repo = tempRepo({ files: { 'base.txt': 'base\n' } });
  try {
    const { file, calls } = writeGeminiChat(repo);
    const originalBytes = fs.readFileSync(file);
    const r = await openRepo(repo.dir, { env: repo.env });
    const id = (await startSession(await openContext(r), { agent: 'gemini' })).session;
    for (const [i, c] of calls.entries()) {
      const toolUseId = syntheticToolUseId(c.name, c.args);
      await recordPre(await openContext(r), id, { tool: c.name, toolUseId, input: c.args, transcript: { path: file, offset: 0 } });
      fs.writeFileSync(path.join(repo.dir, `f${i}.txt`), `${i}\n`);
      await recordPost(await openContext(r), id, { toolUseId });
    }
    const chatOf = async (step: number) => {
      const res = await cliProcess(repo, ['undo', String(step), '--chat', '--session', id, '--json']);
      assert.is(res.code, 0, res.stderr);
      const chat = (
        JSON.parse(res.stdout) as {
          chat: { kind: string; agent: string; file: string; sessionId: string; cwd: string; shellCommand: string; sharedWith: number };
        }
      ).chat;
      assert.is(chat.kind, 'transcript', res.stderr);
      const lines = fs
        .readFileSync(chat.file, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      return { chat, lines };
    };
    // Step 3 shares its turn (m2) with step 2.
    const { chat, lines } = await chatOf(3);
    assert.is(chat.agent, 'gemini');
    assert.is(path.dirname(chat.file), path.dirname(file));
    assert.match(
      path.basename(chat.file),
      new RegExp(`^session-\\d{4}-\\d{2}-\\d{2}T\\d{2}-\\d{2}-${chat.sessionId.slice(0, 8)}\\.jsonl$`),
    );
    assert.is(lines[0]?.sessionId, chat.sessionId);
    assert.is(lines[0]?.projectHash, 'abc');
    assert.equal(
      lines.slice(1).map((l) => l.id),
      ['p1', 'm1', 'r1'],
      'the fold up to the turn holding step 3, its last version of each message',
    );
    assert.is((lines[2]?.toolCalls as unknown[]).length, 1);
    assert.is(chat.sharedWith, 1);
    assert.is(chat.cwd, repo.dir, 'resumed from the project directory');
    assert.is(chat.shellCommand, `cd ${repo.dir} && gemini --resume ${chat.sessionId}`);
    // Step 4 repeats step 1's call: its own occurrence (m3) is the cut, after the rewound message is gone.
    const fourth = await chatOf(4);
    assert.equal(
      fourth.lines.slice(1).map((l) => l.id),
      ['p1', 'm1', 'r1', 'm2', 'r2'],
    );
    const first = await chatOf(1);
    assert.equal(
      first.lines.slice(1).map((l) => l.id),
      ['p1'],
    );
    const text = await cliProcess(repo, ['undo', '3', '--chat', '--session', id]);
    assert.match(text.stdout, /shared its model turn with 1 other tool call/);
    assert.match(text.stdout, /resume it with: {2}cd .* && gemini --resume [0-9a-f-]{36}$/m);
    assert.equal(fs.readFileSync(file), originalBytes, 'the original chat is unchanged');
  } finally {
    repo.cleanup();
  }
});

test('undo N --compact forks the conversation with everything before step N as one digest and the rest kept; files untouched; sizes before/after', async () => {
  const repo = tempRepo({ files: { 'base.txt': 'base\n' } });
  try {
    const original = writeTranscript(repo);
    const originalBytes = fs.readFileSync(original);
    const r = await openRepo(repo.dir, { env: repo.env });
    const id = (await snap({ cwd: repo.dir, env: repo.env })).session;
    const calls: [string, string, string, () => void, boolean][] = [
      ['Write', 'toolu_1', 'a2', () => fs.writeFileSync(path.join(repo.dir, 'a.txt'), 'one\n'), true],
      ['Bash', 'toolu_2', 'a3', () => fs.writeFileSync(path.join(repo.dir, 'b.txt'), 'two\n'), false],
      ['Bash', 'toolu_3', 'a4', () => fs.writeFileSync(path.join(repo.dir, 'c.txt'), 'three\n'), false],
    ];
    for (const [tool, toolUseId, uuid, change, fails] of calls) {
      await recordPre(await openContext(r), id, {
        tool,
        toolUseId,
        input: { command: `run ${toolUseId}` },
        transcript: { path: original, offset: 0, uuid },
      });
      change();
      await recordPost(await openContext(r), id, { toolUseId, ...(fails ? { status: 'failed' as const, error: 'Exit code 3' } : {}) });
    }
    // Step 1 is the snap's checkpoint; steps 2-4 the calls. Compact before step 4 (toolu_3, which shares message 2 with toolu_2).
    const res = await cliProcess(repo, ['undo', '3', '--compact', '--session', id, '--json']);
    assert.is(res.code, 0, res.stderr);
    const chat = (
      JSON.parse(res.stdout) as {
        chat: {
          kind: string;
          file: string;
          sessionId: string;
          digest: string;
          before: { messages: number; chars: number };
          after: { messages: number; chars: number };
        };
      }
    ).chat;
    assert.is(chat.kind, 'transcript');
    const lines = fs
      .readFileSync(chat.file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(
      lines.slice(2).map((l) => l.uuid),
      ['a3', 'a4', 'r2', 'r3', 'a5'],
      'everything from the message holding step 3 on',
    );
    assert.is(lines[0]?.type, 'system');
    assert.is(lines[0]?.subtype, 'compact_boundary');
    assert.is(lines[0]?.parentUuid, null);
    assert.is(lines[1]?.isCompactSummary, true);
    assert.is(lines[1]?.parentUuid, lines[0]?.uuid);
    assert.is(lines[2]?.parentUuid, lines[1]?.uuid, 'the first kept line hangs below the summary');
    assert.is(lines[3]?.parentUuid, 'a3');
    assert.ok(lines.every((l) => l.sessionId === chat.sessionId));
    const digest = (lines[1]?.message as { content: string }).content;
    assert.is(digest, chat.digest);
    assert.match(digest, 'make the files', "the user's request");
    assert.match(digest, 'Writing a.txt', "the agent's words");
    assert.match(digest, /step 2 Write: .* FAILED: Exit code 3 -> A a\.txt/, 'a failure and its error');
    assert.not.match(digest, /- step 3/, 'step 3 on is kept as it happened, not digested');
    assert.not.match(digest, 'toolu_2');
    assert.equal(chat.before, { messages: 7, chars: chat.before.chars });
    assert.equal(chat.after, { messages: 5, chars: chat.after.chars });
    assert.ok(chat.after.chars < chat.before.chars + digest.length);
    assert.equal(fs.readFileSync(original), originalBytes, 'the original transcript is unchanged');
    assert.ok(repo.exists('c.txt') && repo.exists('a.txt'), '--compact leaves the files alone');
    // Step 4 shares its assistant message with step 3: the cut is the same, and step 3 stays as it happened, out of the digest.
    const later = await cliProcess(repo, ['undo', '4', '--compact', '--session', id]);
    assert.is(later.code, 0, later.stderr);
    assert.match(later.stdout, /^conversation compacted before step 4: .* \(the original is unchanged; the files are untouched\)$/m);
    assert.match(later.stdout, /before: 7 messages, \d+ characters; after: \d+ messages, \d+ characters \(-?\d+% shorter\)/);
    assert.match(later.stdout, /resume it with: {2}cd .* && claude --resume [0-9a-f-]{36}$/m);
    const f4 = /claude --resume ([0-9a-f-]{36})$/m.exec(later.stdout)![1] as string;
    const compacted4 = fs.readFileSync(path.join(path.dirname(original), `${f4}.jsonl`), 'utf8');
    assert.match(compacted4, /- step 2 Write/);
    assert.not.match(compacted4, /- step 3/);
    assert.match(
      later.stdout,
      "step 4's tool call shared its assistant message with 1 other tool call; the conversation is kept from that whole message",
    );
    // --compact goes alone.
    for (const other of ['--chat', '--both', '--stop-processes']) {
      const bad = await cliProcess(repo, ['undo', '3', '--compact', other, '--session', id]);
      assert.is(bad.code, 2, bad.stderr);
      assert.match(bad.stderr, `--compact and ${other} exclude each other`);
    }
  } finally {
    repo.cleanup();
  }
});

test("a fork keeps Claude Code's file history consistent (2.1.220+ file-history-delta lines) and links the backups it names under the fork's id", async () => {
  const repo = tempRepo({ files: { 'base.txt': 'base\n' } });
  try {
    const original = writeTranscript(repo);
    // As 2.1.332 writes them (CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING=1 in -p mode): a snapshot of the prompt's
    // message after it, a delta after each call's assistant line for a file first changed in the turn.
    const lines = fs.readFileSync(original, 'utf8').trim().split('\n');
    const snapshot = JSON.stringify({
      type: 'file-history-snapshot',
      messageId: 'u1',
      snapshot: { messageId: 'u1', trackedFileBackups: {}, timestamp: 't' },
      isSnapshotUpdate: false,
    });
    const delta = (msg: string, file: string, backup: string | null) =>
      JSON.stringify({
        type: 'file-history-delta',
        messageId: msg,
        snapshotMessageId: 'u1',
        trackingPath: file,
        backup: { backupFileName: backup, version: 1, backupTime: 't', realParentDir: repo.dir },
        timestamp: 't',
      });
    const withHistory = [
      lines[0],
      lines[1],
      snapshot,
      lines[2],
      lines[3],
      delta('a2', 'a.txt', 'aaaa1111@v1'),
      lines[4],
      lines[5],
      delta('a3', 'b.txt', 'bbbb2222@v1'),
      ...lines.slice(6),
    ];
    fs.writeFileSync(original, withHistory.join('\n') + '\n');
    const history = path.join(repo.home, '.claude', 'file-history', SID);
    fs.mkdirSync(history, { recursive: true });
    fs.writeFileSync(path.join(history, 'aaaa1111@v1'), 'a before\n');
    fs.writeFileSync(path.join(history, 'bbbb2222@v1'), 'b before\n');
    const id = await recordCalls(repo, original);
    const res = await cliProcess(repo, ['undo', '3', '--chat', '--session', id, '--json']);
    assert.is(res.code, 0, res.stderr);
    const chat = (JSON.parse(res.stdout) as { chat: { file: string; sessionId: string } }).chat;
    const kept = fs
      .readFileSync(chat.file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(
      kept.map((l) => l.uuid ?? `${l.type}${l.trackingPath ? `:${l.trackingPath}` : ''}`),
      ['queue-operation', 'u1', 'file-history-snapshot', 'a1', 'a2', 'file-history-delta:a.txt', 'r1'],
    );
    const forkHistory = path.join(repo.home, '.claude', 'file-history', chat.sessionId);
    assert.equal(fs.readdirSync(forkHistory), ['aaaa1111@v1'], 'the backups of the kept deltas only');
    assert.is(fs.readFileSync(path.join(forkHistory, 'aaaa1111@v1'), 'utf8'), 'a before\n');
    // Compacting before step 3 summarizes u1: its snapshot goes, and with it every delta that adds to it.
    const c = await cliProcess(repo, ['undo', '3', '--compact', '--session', id, '--json']);
    assert.is(c.code, 0, c.stderr);
    const compacted = fs.readFileSync((JSON.parse(c.stdout) as { chat: { file: string } }).chat.file, 'utf8');
    assert.not.match(compacted, 'file-history');
  } finally {
    repo.cleanup();
  }
});

test('undo N --compact of a Gemini CLI session: a new chat whose messages before step N are one digest, the rest kept', async () => {
  const repo = tempRepo({ files: { 'base.txt': 'base\n' } });
  try {
    const { file, calls } = writeGeminiChat(repo);
    const originalBytes = fs.readFileSync(file);
    const r = await openRepo(repo.dir, { env: repo.env });
    const id = (await startSession(await openContext(r), { agent: 'gemini' })).session;
    for (const c of calls) {
      const toolUseId = syntheticToolUseId(c.name, c.args);
      await recordPre(await openContext(r), id, { tool: c.name, toolUseId, input: c.args, transcript: { path: file, offset: 0 } });
      await recordPost(await openContext(r), id, { toolUseId });
    }
    const res = await cliProcess(repo, ['undo', '3', '--compact', '--session', id, '--json']);
    assert.is(res.code, 0, res.stderr);
    const chat = (
      JSON.parse(res.stdout) as {
        chat: { kind: string; file: string; sessionId: string; digest: string; before: { messages: number }; after: { messages: number } };
      }
    ).chat;
    assert.is(chat.kind, 'transcript', res.stdout);
    const lines = fs
      .readFileSync(chat.file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.is(lines[0]?.sessionId, chat.sessionId);
    assert.equal(
      lines.slice(2).map((l) => l.id),
      ['m2', 'r2', 'm3', 'r3', 'm4'],
    );
    assert.is(lines[1]?.type, 'user');
    assert.equal(lines[1]?.content, [{ text: chat.digest }]);
    assert.match(chat.digest, 'make the files');
    assert.match(chat.digest, /step 1 write_file/);
    assert.equal([chat.before.messages, chat.after.messages], [8, 6]);
    assert.equal(fs.readFileSync(file), originalBytes, 'the original chat is unchanged');
  } finally {
    repo.cleanup();
  }
});

test.run();
