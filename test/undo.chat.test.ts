// Conversation rewind with synthetic Claude Code transcripts in the documented
// format (see /work/shared/reference/claude-code-hooks.md). The end-to-end test
// with the real `claude` binary is test/claude-undo-e2e.test.ts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { cli, cliProcess, tempRepo, type TempRepo } from './helpers.js';
import { openRepo, recordPost, recordPre, snap, startSession } from '../src/index.js';

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
    line({ ...base, type: 'user', uuid, parentUuid: parent, message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUseId, content: 'ok' }] } });
  const lines = [
    line({ type: 'queue-operation', operation: 'enqueue', sessionId: SID }),
    line({ ...base, type: 'user', uuid: 'u1', parentUuid: null, message: { role: 'user', content: 'make the files' } }),
    assistant('a1', 'u1', 'msg_1', { type: 'text', text: 'Writing a.txt' }),
    assistant('a2', 'a1', 'msg_1', { type: 'tool_use', id: 'toolu_1', name: 'Write', input: { file_path: `${repo.dir}/a.txt`, content: 'one\n' } }),
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
    await recordPre(r, id, { tool, toolUseId, input: { command: 'x' }, transcript: transcript ? { path: transcript, offset: 0, uuid } : null });
    change();
    await recordPost(r, id, { toolUseId });
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
    const lines = fs.readFileSync(forked, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(lines.map((l) => l.uuid ?? l.type), ['queue-operation', 'u1', 'a1', 'a2', 'r1']);
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
    fs.writeFileSync(original, fs.readFileSync(original, 'utf8').replaceAll(`"cwd":${JSON.stringify(repo.dir)}`, `"cwd":${JSON.stringify(odd)}`));
    const id = await recordCalls(repo, original);
    const r = await cli(repo, ['undo', '3', '--chat', '--session', id]);
    assert.is(r.code, 0, r.stderr);
    const line = /^resume it with: {2}(.*) && claude --resume [0-9a-f-]{36}$/m.exec(r.stdout);
    assert.ok(line, r.stdout);
    const sh = spawnSync('/bin/sh', ['-c', `${line![1]} && pwd`], { cwd: repo.base, encoding: 'utf8' });
    assert.is(sh.status, 0, sh.stderr);
    assert.is(sh.stdout.trim(), odd);
    const json = JSON.parse((await cli(repo, ['undo', '3', '--chat', '--session', id, '--json'])).stdout) as { chat: { cwd: string; shellCommand: string } };
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
        line({ type: 'assistant', isSidechain: true, agentId: agent, sessionId: SID, uuid: `${agent}-${i}`, parentUuid: null, message: { id: `msg_${agent}_${i}`, role: 'assistant', content: [{ type: 'tool_use', id, name: 'Write', input: {} }] } }),
      );
      fs.writeFileSync(path.join(subDir, `agent-${agent}.jsonl`), lines.join('\n') + '\n');
      fs.writeFileSync(path.join(subDir, `agent-${agent}.meta.json`), JSON.stringify({ agentType: 'general-purpose', toolUseId: spawnedBy, spawnDepth: 1 }));
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
      await recordPre(r, id, { tool: 'Write', toolUseId, input: {}, transcript: { path: original, offset: 0, ...(uuid ? { uuid } : {}) } });
      await recordPost(r, id, { toolUseId });
    }
    // Steps: 1 the snap checkpoint, 2 toolu_1, 3 toolu_2 (the Agent call), 4 and 5 inside subagents.
    for (const step of ['4', '5']) {
      const res = await cli(repo, ['undo', step, '--chat', '--session', id]);
      assert.is(res.code, 0, res.stderr);
      const m = /claude --resume ([0-9a-f-]{36})/.exec(res.stdout);
      assert.ok(m, res.stdout);
      const kept = fs.readFileSync(path.join(path.dirname(original), `${m![1]}.jsonl`), 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as { uuid?: string; type: string }).uuid ?? 'q');
      assert.equal(kept, ['q', 'u1', 'a1', 'a2', 'r1'], `step ${step}: cut before the message holding the Agent call`);
      assert.match(res.stdout, `step ${step} was made by a subagent: the conversation is cut before step 3, the Agent call that started it`);
      // The fork is a whole session: the subagent conversations of the calls it keeps come with it.
      const forkSubs = path.join(path.dirname(original), m![1] as string, 'subagents');
      assert.equal(fs.readdirSync(forkSubs).sort(), ['agent-a0.jsonl', 'agent-a0.meta.json', 'agent-a0b.jsonl', 'agent-a0b.meta.json']);
      const copied = JSON.parse(fs.readFileSync(path.join(forkSubs, 'agent-a0b.jsonl'), 'utf8')) as { sessionId: string; message: { content: { id: string }[] } };
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

test('undo --chat of a Codex session says truthfully why its conversation cannot be forked (its transcript is recorded)', async () => {
  const repo = tempRepo({ files: { 'base.txt': 'base\n' } });
  try {
    const r = await openRepo(repo.dir, { env: repo.env });
    const rollout = path.join(repo.home, '.codex', 'sessions', '2026', '12', '01', 'rollout-2026-12-01T10-00-00-abc.jsonl');
    fs.mkdirSync(path.dirname(rollout), { recursive: true });
    fs.writeFileSync(rollout, JSON.stringify({ type: 'session_meta', payload: { id: 'abc' } }) + '\n');
    const id = (await startSession(r, { agent: 'codex' })).session;
    for (const [n, f] of [['1', 'a.txt'], ['2', 'b.txt']] as const) {
      await recordPre(r, id, { tool: 'apply_patch', toolUseId: `call_${n}`, input: { command: 'x' }, transcript: { path: rollout, offset: 0 } });
      fs.writeFileSync(path.join(repo.dir, f), `${n}\n`);
      await recordPost(r, id, { toolUseId: `call_${n}` });
    }
    const res = await cliProcess(repo, ['undo', '2', '--chat', '--session', id]);
    assert.is(res.code, 0, res.stderr);
    assert.not.match(res.stderr, /no transcript is recorded/);
    assert.match(res.stderr, /Codex CLI/);
    assert.match(res.stderr, /cannot be forked/);
    assert.match(res.stderr, rollout);
    assert.match(res.stdout, /still hold their changes/);
  } finally {
    repo.cleanup();
  }
});

test.run();
