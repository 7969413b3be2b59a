// End to end with the real Claude Code binary under `agentsnap wrap`, driven
// offline by a scripted stand-in for the Messages API.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { agentsnapOnPath, cliProcess, runProcess, tempRepo, treeFiles } from '../support/helpers.js';
import { startMessagesStub, type ScriptedTurn } from '../support/messages-stub.js';
import { claudeBinary, claudeStubEnv } from '../support/claude-code.js';
import { loadSession } from '../../src/session/session.js';
import { openRepo } from '../../src/git/repo.js';
import { readJournal } from '../../src/session/journal.js';
import { checkPlanAndProcesses, leftServer } from '../support/states-e2e.js';

const claude = claudeBinary();

// Three times: hooks through the Node path, through the warm server the wrapper hosts (the shell client), and
// through a background server that was already running when wrap started (its engine warm: the fastest hooks).
for (const server of ['off', 'on', 'background'] as const)
  test(`claude under wrap (server ${server}): one step per tool call, right tools and statuses, post trees equal the files after each call`, async () => {
    if (!claude) return;
    const repo = tempRepo({ files: { 'a.txt': 'one\n', 'gone.txt': 'bye\n' } });
    const d = (rel: string) => path.join(repo.dir, rel);
    const script: ScriptedTurn[] = [
      // The first call is a read (no hook): journaled from the transcript, whenever its lines are flushed.
      { tools: [{ name: 'Read', input: { file_path: d('a.txt') } }] },
      { text: 'I will create hello.txt.', tools: [{ name: 'Write', input: { file_path: d('hello.txt'), content: 'hello\n' } }] },
      { tools: [{ name: 'Edit', input: { file_path: d('a.txt'), old_string: 'one', new_string: 'two' } }] },
      {
        tools: [
          { name: 'Read', input: { file_path: d('a.txt') } },
          { name: 'Write', input: { file_path: d('sub/new.txt'), content: 'nested\n' } },
        ],
      },
      { tools: [{ name: 'Bash', input: { command: 'rm gone.txt && echo made > made.txt', description: 'delete and create' } }] },
      { tools: [{ name: 'Bash', input: { command: 'echo partial > fail.txt; exit 3', description: 'a failing command' } }] },
      // The last call of the session is a read: journaled from the transcript when the session ends.
      { tools: [{ name: 'Read', input: { file_path: d('made.txt') } }] },
      { text: 'All done.' },
    ];
    // The files expected after each call, in order.
    const expected: Record<string, string>[] = [];
    let files: Record<string, string> = { 'a.txt': 'one\n', 'gone.txt': 'bye\n' };
    const after = (change: (f: Record<string, string>) => void) => {
      files = { ...files };
      change(files);
      expected.push(files);
    };
    after(() => undefined);
    after((f) => (f['hello.txt'] = 'hello\n'));
    after((f) => (f['a.txt'] = 'two\n'));
    after(() => undefined);
    after((f) => (f['sub/new.txt'] = 'nested\n'));
    after((f) => {
      delete f['gone.txt'];
      f['made.txt'] = 'made\n';
    });
    after((f) => (f['fail.txt'] = 'partial\n'));
    after(() => undefined);
    // Read is not hooked (CLAUDE_TOOL_MATCHER): its calls come from the transcript.
    const unhooked = new Set([0, 3, 7]);
    const failed = 6;
    const stub = await startMessagesStub(script);
    let env: Record<string, string> = {};
    try {
      env = {
        ...claudeStubEnv(stub.url),
        AGENTSNAP_SERVER: server === 'off' ? 'off' : 'on',
        ...(server !== 'off' ? { AGENTSNAP_SERVER_TRACE: '1' } : {}),
      };
      if (server === 'background') {
        const started = await cliProcess(repo, ['server', 'start'], { env });
        assert.is(started.code, 0, started.stderr);
      }
      const res = await cliProcess(repo, ['wrap', '--', claude, '-p', 'Make the changes.', '--dangerously-skip-permissions'], {
        env,
        timeoutMs: 120_000,
      });
      assert.is(res.code, 0, res.stderr);
      // With the server on, every hook call reached it (its trace), none took the Node path.
      // The two Read calls ran no hook: 5 hooked calls, a pre and a post each.
      const trace =
        server === 'background'
          ? fs.readFileSync(path.join(repo.dir, '.git', 'agentsnap', 'run', 'main', 'server.log'), 'utf8')
          : res.stderr;
      if (server !== 'off')
        assert.is((trace.match(/call \d+: hook claude (PreToolUse|PostToolUse|PostToolUseFailure) --wrapped\n/g) ?? []).length, 10, trace);
      assert.match(res.stdout, 'All done.');
      assert.match(res.stderr, 'claude hooks injected');
      assert.not.match(res.stderr, 'warning');
      const id = /started session (\S+)/.exec(res.stderr)?.[1] as string;
      const s = loadSession(await openRepo(repo.dir, { env: repo.env }), id);
      assert.is(s.agent, 'claude');
      assert.ok(s.ended);
      // The SessionStart hook wrap injects named the transcript before any step (the reads before the first hooked call
      // are journaled before an operation that comes first).
      const events = readJournal(path.join(repo.dir, '.git', 'agentsnap', 'sessions', id, 'journal.jsonl')).events as unknown as {
        type: string;
        path?: string;
      }[];
      const told = events.findIndex((e) => e.type === 'session.transcript');
      assert.ok(
        told > 0 && told < events.findIndex((e) => e.type === 'step.pre'),
        `session.transcript before the first step: ${events.map((e) => e.type).join(' ')}`,
      );
      assert.is(events[told]?.path, s.steps[0]?.transcript?.path);
      assert.is(s.steps.length, stub.toolUses.length, 'one step per tool call');
      // Through the server a hook can run before Claude Code has flushed the lines of its message: a Read sent in one
      // message with a Write, still unwritten then, is journaled after the Write (with the state before it). Match by call.
      const ordered =
        server === 'off' ? s.steps : stub.toolUses.map((c) => s.steps.find((st) => st.toolUseId === c.id) as (typeof s.steps)[number]);
      if (server === 'off')
        assert.equal(
          s.steps.map((st) => st.toolUseId),
          stub.toolUses.map((c) => c.id),
          'steps in call order',
        );
      ordered.forEach((st, i) => {
        const call = stub.toolUses[i];
        assert.is(st.tool, call?.name, `step ${st.step}`);
        assert.is(st.toolUseId, call?.id);
        assert.equal(
          st.input && typeof st.input === 'object'
            ? Object.fromEntries(Object.entries(call?.input ?? {}).map(([k]) => [k, (st.input as Record<string, unknown>)[k]]))
            : null,
          call?.input,
        );
        assert.is(st.status, i === failed ? 'failed' : 'done', `status of step ${st.step}`);
        assert.is(st.source, unhooked.has(i) ? 'transcript' : undefined, `source of step ${st.step}`);
        if (unhooked.has(i)) {
          assert.is(st.pre, st.post, 'a read takes no snapshot of its own');
          assert.equal(st.changed, []);
          assert.match(String(st.output), i === 0 ? 'one' : i === 3 ? 'two' : 'made');
          // Claude Code runs the next call only once a read has ended: no step overlaps one.
          for (const other of s.steps)
            assert.not.ok(other.overlaps.includes(st.step), `step ${other.step} overlaps the read of step ${st.step}`);
        }
        const tree = treeFiles(repo, st.post as string);
        const got = Object.fromEntries([...tree].map(([p, v]) => [p, v.content.toString()]));
        // A read journaled after the Write of its message still holds the state it saw, before that Write.
        assert.equal(got, expected[i], `files after step ${st.step}`);
        // The transcript line holding the call, and the transcript's length when it started.
        const tr = st.transcript;
        // Through the server a hook can run before Claude Code has written the call's line (its post fills
        // the uuid in when it is there by then); without the uuid, a rewind finds the line by tool_use_id.
        assert.ok(tr?.path && (tr.uuid || server !== 'off'), `transcript position of step ${st.step}`);
        const text = fs.readFileSync(tr.path, 'utf8');
        if (tr.offset !== undefined) assert.ok(tr.offset <= Buffer.byteLength(text));
        const line = text.split('\n').find((l) => l.includes(tr.uuid ? `"uuid":"${tr.uuid}"` : `"id":"${call?.id}"`)) ?? '';
        assert.ok(line.includes(call?.id ?? '?'), 'the uuid names the line holding the tool_use');
      });
      assert.is(ordered[failed]?.error, 'Exit code 3');
      assert.match(String(s.steps[0]?.agentVersion), /^claude-code \d/);
      const log = JSON.parse((await cliProcess(repo, ['log', '--session', id, '--json'])).stdout) as {
        tool: string;
        toolUseId: string;
        source?: string;
      }[];
      const byId = new Map(log.map((st) => [st.toolUseId, st]));
      assert.is(log.length, stub.toolUses.length);
      assert.equal(
        stub.toolUses.map((c) => [byId.get(c.id)?.tool, byId.get(c.id)?.source ?? 'hook']),
        stub.toolUses.map((c, i) => [c.name, unhooked.has(i) ? 'transcript' : 'hook']),
      );
      const replay = await cliProcess(repo, ['replay', '--session', id]);
      assert.match(replay.stdout, '## User\n\nMake the changes.');
      assert.match(replay.stdout, `### Step ${ordered[failed]?.step}: Bash (failed`);
    } finally {
      if (server === 'background') await cliProcess(repo, ['server', 'stop'], { env });
      await stub.close();
      repo.cleanup();
    }
  });

test('claude with init hooks and a background server a previous session started: every read journaled once, done, pre = post, overlapping nothing', async () => {
  if (!claude) return;
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  const d = (rel: string) => path.join(repo.dir, rel);
  const script: ScriptedTurn[] = [
    { tools: [{ name: 'Read', input: { file_path: d('a.txt') } }] },
    { tools: [{ name: 'Write', input: { file_path: d('hello.txt'), content: 'hello\n' } }] },
    {
      tools: [
        { name: 'Read', input: { file_path: d('hello.txt') } },
        { name: 'Edit', input: { file_path: d('a.txt'), old_string: 'one', new_string: 'two' } },
      ],
    },
    { tools: [{ name: 'Read', input: { file_path: d('a.txt') } }] },
    { text: 'All done.' },
  ];
  // The files each call saw (reads) or left (hooked calls).
  const expected: Record<string, string>[] = [
    { 'a.txt': 'one\n' },
    { 'a.txt': 'one\n', 'hello.txt': 'hello\n' },
    { 'a.txt': 'one\n', 'hello.txt': 'hello\n' },
    { 'a.txt': 'two\n', 'hello.txt': 'hello\n' },
    { 'a.txt': 'two\n', 'hello.txt': 'hello\n' },
  ];
  const reads = new Set([0, 2, 4]);
  const stub = await startMessagesStub(script);
  const env = {
    ...claudeStubEnv(stub.url),
    AGENTSNAP_SERVER: 'on',
    AGENTSNAP_SERVER_TRACE: '1',
    PATH: agentsnapOnPath(repo.base),
  };
  try {
    assert.is((await cliProcess(repo, ['init', 'claude'], { env })).code, 0);
    const started = await cliProcess(repo, ['server', 'start'], { env });
    assert.is(started.code, 0, started.stderr);
    // No wrapper: Claude Code runs the hooks init wrote, which the background server answers.
    const run = await runProcess(claude, ['-p', 'Make the changes.', '--dangerously-skip-permissions'], {
      cwd: repo.dir,
      env: { ...repo.env, ...env },
      timeoutMs: 120_000,
    });
    assert.is(run.code, 0, run.stderr);
    assert.match(run.stdout, 'All done.');
    // Every hooked call (Write, Edit: a pre and a post each) reached the background server.
    const trace = fs.readFileSync(path.join(repo.dir, '.git', 'agentsnap', 'run', 'main', 'server.log'), 'utf8');
    assert.is((trace.match(/call \d+: hook claude (PreToolUse|PostToolUse)\n/g) ?? []).length, 4, trace);
    const sessions = JSON.parse((await cliProcess(repo, ['sessions', '--json'], { env })).stdout) as { id: string }[];
    assert.is(sessions.length, 1);
    const s = loadSession(await openRepo(repo.dir, { env: repo.env }), sessions[0]?.id as string);
    assert.ok(s.ended, 'SessionEnd ended it');
    const calls = s.steps.filter((st) => st.kind === 'call');
    assert.is(calls.length, stub.toolUses.length, JSON.stringify(calls.map((st) => [st.step, st.tool, st.status])));
    stub.toolUses.forEach((c, i) => {
      const st = calls.find((x) => x.toolUseId === c.id);
      assert.ok(st, `call ${i} (${c.name}) is a step`);
      assert.is(st?.status, 'done', `status of call ${i} (${c.name})`);
      assert.is(st?.source, reads.has(i) ? 'transcript' : undefined);
      const got = Object.fromEntries([...treeFiles(repo, st?.post as string)].map(([p, v]) => [p, v.content.toString()]));
      assert.equal(got, expected[i], `files of call ${i} (${c.name})`);
      if (reads.has(i)) {
        assert.is(st?.pre, st?.post, 'a read takes no snapshot of its own');
        assert.equal(st?.changed, []);
        for (const other of calls)
          assert.not.ok(other.overlaps.includes(st?.step as number), `step ${other.step} overlaps the read of step ${st?.step}`);
      }
    });
  } finally {
    await cliProcess(repo, ['server', 'stop'], { env });
    await stub.close();
    repo.cleanup();
  }
});

test('claude under wrap: its plan (TodoWrite) per step, the server a Bash call left running (status, undo, undo --stop-processes), the tools it had', async () => {
  if (!claude) return;
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  const server = leftServer(repo);
  const todos = (a: string, b: string) => ({
    todos: [
      { content: 'Start the server', status: a, activeForm: 'Starting the server' },
      { content: 'Write the notes', status: b, activeForm: 'Writing the notes' },
    ],
  });
  const stub = await startMessagesStub([
    { tools: [{ name: 'TodoWrite', input: todos('in_progress', 'pending') }] },
    { tools: [{ name: 'Bash', input: { command: server.command, description: 'start the server' } }] },
    { tools: [{ name: 'Write', input: { file_path: path.join(repo.dir, 'notes.txt'), content: 'notes\n' } }] },
    { tools: [{ name: 'TodoWrite', input: todos('completed', 'completed') }] },
    { text: 'All done.' },
  ]);
  try {
    // TodoWrite is offered with these (2.1.332; the default is TaskCreate/TaskUpdate for some models, none for others).
    const env = {
      ...claudeStubEnv(stub.url),
      CLAUDE_CODE_ENABLE_TODO_TOOLS: '1',
      CLAUDE_CODE_ENABLE_TASKS: '0',
      ENABLE_TOOL_SEARCH: 'false',
    };
    const res = await cliProcess(
      repo,
      ['wrap', '--', claude, '-p', 'Start the server and write the notes.', '--dangerously-skip-permissions'],
      { env, timeoutMs: 120_000 },
    );
    assert.is(res.code, 0, res.stderr);
    assert.match(res.stdout, 'All done.');
    const id = /started session (\S+)/.exec(res.stderr)?.[1] as string;
    const s = loadSession(await openRepo(repo.dir, { env: repo.env }), id);
    assert.equal(
      s.steps.map((st) => st.tool),
      ['TodoWrite', 'Bash', 'Write', 'TodoWrite'],
    );
    const { environments } = await checkPlanAndProcesses(repo, id, server, {
      planStep: 1,
      serverStep: 2,
      doneStep: 4,
      items: ['Start the server', 'Write the notes'],
      firstItemMark: '~',
    });
    // The tools it offered its model, from its transcript, as of every step.
    const offered = (stub.requests[0]?.tools as { name: string }[]).map((t) => t.name);
    for (const e of environments) assert.equal(e.tools, offered);
    assert.ok(offered.includes('TodoWrite') && offered.includes('Bash'), offered.join(' '));
  } finally {
    server.kill();
    await stub.close();
    repo.cleanup();
  }
});

test.run();
