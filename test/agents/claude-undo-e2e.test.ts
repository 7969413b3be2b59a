// End to end with the real Claude Code binary: a wrapped session with several
// tool calls, then undo / redo / undo --chat / undo --both, and the printed
// `claude --resume <id>` actually run against the scripted Messages API
// stand-in, to see what the model is sent after the rewind.
// Skipped with AGENTSNAP_E2E_CLAUDE=skip (see test/support/claude-code.ts).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { cliProcess, indexBytes, runProcess, tempRepo, type CliResult, type TempRepo } from '../support/helpers.js';
import { startMessagesStub, type MessagesRequest, type ScriptedTurn } from '../support/messages-stub.js';
import { claudeBinary, claudeStubEnv } from '../support/claude-code.js';
import { loadSession } from '../../src/session/session.js';
import { openRepo } from '../../src/git/repo.js';

const claude = claudeBinary();
const TIMEOUT_MS = 120_000;

function agentEnv(url: string): Record<string, string> {
  return {
    ...claudeStubEnv(url),
  };
}

/** Everything under the worktree but .git: files (mode and bytes), symlinks (target) and directories, so empty ones count too. */
function disk(repo: TempRepo): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const name of fs.readdirSync(path.join(repo.dir, rel)).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      if (r === '.git') continue;
      const abs = path.join(repo.dir, r);
      const st = fs.lstatSync(abs);
      if (st.isDirectory()) {
        out[`${r}/`] = 'dir';
        walk(r);
      } else if (st.isSymbolicLink()) out[r] = `link -> ${fs.readlinkSync(abs)}`;
      else out[r] = `${st.mode & 0o100 ? 'exec' : 'file'} ${fs.readFileSync(abs).toString('base64')}`;
    }
  };
  walk('');
  return out;
}

const file = (content: string, exec = false) => `${exec ? 'exec' : 'file'} ${Buffer.from(content).toString('base64')}`;

/** tool_use ids the model is sent (assistant tool_use blocks and user tool_result blocks). */
function toolIdsSent(req: MessagesRequest | undefined): { uses: string[]; results: string[] } {
  const uses: string[] = [];
  const results: string[] = [];
  for (const m of req?.messages ?? []) {
    if (!Array.isArray(m.content)) continue;
    for (const b of m.content as Record<string, unknown>[]) {
      if (b?.type === 'tool_use') uses.push(String(b.id));
      if (b?.type === 'tool_result') results.push(String(b.tool_use_id));
    }
  }
  return { uses, results };
}

function lastUserText(req: MessagesRequest | undefined): string {
  const user = [...(req?.messages ?? [])].reverse().find((m) => m.role === 'user');
  if (!user) return '';
  if (typeof user.content === 'string') return user.content;
  return (user.content as Record<string, unknown>[]).map((b) => (b?.type === 'text' ? String(b.text) : '')).join('\n');
}

/** Runs a shell command line (the printed resume command) with `claude` on PATH. */
function shell(line: string, opts: { cwd: string; env: NodeJS.ProcessEnv }): Promise<CliResult> {
  return runProcess('/bin/sh', ['-c', line], { ...opts, input: null, timeoutMs: TIMEOUT_MS });
}

test('claude under wrap: undo N restores the bytes before call N, redo returns, --chat and --both fork a conversation that resumes without the undone calls', async () => {
  if (!claude) return;
  const repo = tempRepo({ files: { 'a.txt': 'one\n', 'gone.txt': 'bye\n', 'run.sh': '#!/bin/sh\necho run\n' } });
  const d = (rel: string) => path.join(repo.dir, rel);
  // A `claude` on PATH, as the printed resume command expects.
  const binDir = path.join(repo.base, 'bin');
  fs.mkdirSync(binDir);
  fs.symlinkSync(claude, path.join(binDir, 'claude'));
  const script: ScriptedTurn[] = [
    { text: 'Creating hello.txt.', tools: [{ name: 'Write', input: { file_path: d('hello.txt'), content: 'hello\n' } }] },
    { tools: [{ name: 'Edit', input: { file_path: d('a.txt'), old_string: 'one', new_string: 'two' } }] },
    {
      tools: [
        {
          name: 'Bash',
          input: {
            command: 'mkdir -p out/deep && printf made > out/deep/made.txt && rm gone.txt && chmod +x run.sh && ln -s a.txt link',
            description: 'create and delete',
          },
        },
      ],
    },
    // Calls 4 and 5 share one assistant message.
    {
      tools: [
        { name: 'Write', input: { file_path: d('sub/new.txt'), content: 'nested\n' } },
        { name: 'Bash', input: { command: 'rm -r out && printf x > hello.txt', description: 'delete a tree, overwrite a file' } },
      ],
    },
    { text: 'All done.' },
  ];
  // The worktree after each call: states[0] before the first, states[k] after call k.
  const states: Record<string, string>[] = [];
  let cur: Record<string, string> = { 'a.txt': file('one\n'), 'gone.txt': file('bye\n'), 'run.sh': file('#!/bin/sh\necho run\n') };
  const next = (change: (f: Record<string, string>) => void) => {
    states.push(cur);
    cur = { ...cur };
    change(cur);
  };
  next((f) => (f['hello.txt'] = file('hello\n')));
  next((f) => (f['a.txt'] = file('two\n')));
  next((f) => {
    f['out/'] = 'dir';
    f['out/deep/'] = 'dir';
    f['out/deep/made.txt'] = file('made');
    delete f['gone.txt'];
    f['run.sh'] = file('#!/bin/sh\necho run\n', true);
    f['link'] = 'link -> a.txt';
  });
  next((f) => {
    f['sub/'] = 'dir';
    f['sub/new.txt'] = file('nested\n');
  });
  next((f) => {
    for (const k of ['out/', 'out/deep/', 'out/deep/made.txt']) delete f[k];
    f['hello.txt'] = file('x');
  });
  states.push(cur);

  const stub = await startMessagesStub(script);
  try {
    const env = agentEnv(stub.url);
    const res = await cliProcess(repo, ['wrap', '--', claude, '-p', 'Make the changes.', '--dangerously-skip-permissions'], {
      env,
      timeoutMs: TIMEOUT_MS,
    });
    assert.is(res.code, 0, res.stderr);
    assert.match(res.stdout, 'All done.');
    const id = /started session (\S+)/.exec(res.stderr)?.[1] as string;
    const s = loadSession(await openRepo(repo.dir, { env: repo.env }), id);
    assert.equal(
      s.steps.map((st) => [st.step, st.tool, st.toolUseId, st.status]),
      stub.toolUses.map((t, i) => [i + 1, t.name, t.id, 'done']),
    );
    const ids = stub.toolUses.map((t) => t.id);
    assert.equal(disk(repo), states[5], 'after the session');
    const transcript = s.steps[0]?.transcript?.path as string;
    const transcriptBytes = fs.readFileSync(transcript);
    const headBefore = repo.git(['rev-parse', 'HEAD']);
    const indexBefore = indexBytes(repo);

    // undo 3: back to the bytes before call 3 (the Bash that created, deleted, chmod-ed and linked).
    let r = await cliProcess(repo, ['undo', '3']);
    assert.is(r.code, 0, r.stderr);
    assert.match(r.stdout, 'the worktree is back to before step 3');
    assert.equal(disk(repo), states[2], 'undo 3 = before call 3');
    // redo: back to where the session ended.
    r = await cliProcess(repo, ['redo']);
    assert.is(r.code, 0, r.stderr);
    assert.equal(disk(repo), states[5], 'redo returns');

    // undo 3 --chat: the files stay; a fork of the transcript and the command to resume it.
    r = await cliProcess(repo, ['undo', '3', '--chat'], { cwd: d('sub') });
    assert.is(r.code, 0, r.stderr);
    assert.equal(disk(repo), states[5], '--chat leaves the files alone');
    const resume = /^resume it with: {2}(cd (\S+) && claude --resume ([0-9a-f-]{36}))$/m.exec(r.stdout);
    assert.ok(resume, r.stdout);
    assert.is(resume![2], repo.dir, 'resumed from the directory the conversation ran in');
    const forkId = resume![3] as string;
    assert.ok(fs.existsSync(path.join(path.dirname(transcript), `${forkId}.jsonl`)), 'the fork is next to the original');
    assert.equal(fs.readFileSync(transcript), transcriptBytes, 'the original transcript is unchanged');

    // Run the printed command, as a user would, from the repository directory.
    const resumed = await startMessagesStub([{ text: 'Resumed.' }, { text: 'Resumed.' }, { text: 'Resumed.' }, { text: 'Resumed.' }]);
    try {
      const sh = await shell(`${resume![1]} -p 'Where are we?' --dangerously-skip-permissions`, {
        cwd: repo.dir,
        env: { ...repo.env, ...agentEnv(resumed.url), PATH: `${binDir}:${process.env.PATH ?? ''}` },
      });
      assert.is(sh.code, 0, sh.stderr + sh.stdout);
      assert.match(sh.stdout, 'Resumed.');
      assert.is(resumed.requests.length, 1, 'one model request');
      const req = resumed.requests[0];
      const sent = toolIdsSent(req);
      assert.equal(sent.uses, ids.slice(0, 2), 'the model sees calls 1 and 2 only');
      assert.equal(sent.results, ids.slice(0, 2));
      assert.match(lastUserText(req), 'Where are we?');
      assert.match(JSON.stringify(req?.messages), 'Make the changes.', 'the first prompt is kept');
    } finally {
      await resumed.close();
    }
    assert.equal(fs.readFileSync(transcript), transcriptBytes, 'the original transcript is still unchanged');

    // undo 5 --chat: call 5 shares its assistant message with call 4, so the cut is before both, and it says so.
    r = await cliProcess(repo, ['undo', '5', '--chat']);
    assert.is(r.code, 0, r.stderr);
    assert.match(r.stdout, "step 5's tool call shared its assistant message with 1 other tool call");
    const shared = /claude --resume ([0-9a-f-]{36})$/m.exec(r.stdout);
    assert.ok(shared, r.stdout);
    const sharedStub = await startMessagesStub([
      { text: 'Resumed.' },
      { text: 'Resumed.' },
      { text: 'Resumed.' },
      { text: 'Resumed.' },
      { text: 'Resumed.' },
    ]);
    try {
      const c = await shell(`claude --resume ${shared![1]} -p 'And now?' --dangerously-skip-permissions`, {
        cwd: repo.dir,
        env: { ...repo.env, ...agentEnv(sharedStub.url), PATH: `${binDir}:${process.env.PATH ?? ''}` },
      });
      assert.is(c.code, 0, c.stderr + c.stdout);
      const sent = toolIdsSent(sharedStub.requests[0]);
      assert.equal(sent.uses, ids.slice(0, 3), 'the model sees calls 1 to 3 only');
      assert.equal(sent.results, ids.slice(0, 3));
    } finally {
      await sharedStub.close();
    }

    // undo 2 --both: files before call 2, and a conversation resumed under wrap, in the same agentsnap session.
    r = await cliProcess(repo, ['undo', '2', '--both']);
    assert.is(r.code, 0, r.stderr);
    assert.equal(disk(repo), states[1], 'undo 2 --both = before call 2');
    const both = /^resume it with: {2}cd (\S+) && claude --resume ([0-9a-f-]{36})$/m.exec(r.stdout);
    assert.ok(both, r.stdout);
    assert.is(both![1], repo.dir);
    // The resumed model makes one more call. The stand-in picks its answer by the number of assistant messages
    // sent: call 1's, and the "No response requested." that Claude Code adds to close the turn cut after its result.
    const again = await startMessagesStub([
      { text: 'unused' },
      { text: 'unused' },
      { tools: [{ name: 'Write', input: { file_path: d('again.txt'), content: 'again\n' } }] },
      { text: 'Resumed and done.' },
    ]);
    try {
      const w = await cliProcess(
        repo,
        ['wrap', '--session', id, '--', claude, '--resume', both![2] as string, '-p', 'Go on.', '--dangerously-skip-permissions'],
        { env: agentEnv(again.url), timeoutMs: TIMEOUT_MS },
      );
      assert.is(w.code, 0, w.stderr);
      assert.match(w.stdout, 'Resumed and done.');
      const first = toolIdsSent(again.requests[0]);
      assert.equal(first.uses, ids.slice(0, 1), 'the model sees call 1 only');
      assert.equal(first.results, ids.slice(0, 1));
      assert.equal(disk(repo), { ...states[1], 'again.txt': file('again\n') });
      const s2 = loadSession(await openRepo(repo.dir, { env: repo.env }), id);
      const last = s2.steps[s2.steps.length - 1];
      assert.is(last?.tool, 'Write');
      assert.is(last?.toolUseId, again.toolUses[0]?.id);
      assert.ok((last?.step ?? 0) > 5, `new calls get new step numbers (got ${last?.step})`);
      assert.is(last?.status, 'done');
      assert.equal(
        last?.changed.map((c) => `${c.change} ${c.path}`),
        ['A again.txt'],
        'the new call starts from the restored state',
      );
      assert.ok(last?.transcript?.path?.endsWith(`${both![2]}.jsonl`), 'the resumed calls point into the fork');
      // A fork of the fork: before that new call.
      const again2 = await cliProcess(repo, ['undo', String(last?.step), '--chat', '--json']);
      assert.is(again2.code, 0, again2.stderr);
      const fork2 = (JSON.parse(again2.stdout) as { chat: { file: string; original: string } }).chat;
      assert.is(fork2.original, last?.transcript?.path);
      const text2 = fs.readFileSync(fork2.file, 'utf8');
      assert.ok(text2.includes(ids[0] as string) && text2.includes('Go on.'));
      assert.not.ok(text2.includes(again.toolUses[0]?.id as string), 'the new call is cut');
    } finally {
      await again.close();
    }
    assert.equal(fs.readFileSync(transcript), transcriptBytes, 'the original transcript is never changed');
    assert.is(repo.git(['rev-parse', 'HEAD']), headBefore);
    assert.equal(indexBytes(repo), indexBefore, "the user's index is untouched");
  } finally {
    await stub.close();
    repo.cleanup();
  }
});

test('claude runs `agentsnap undo` through its own Bash tool: no deadlock, the next calls start from the restored state, and the user can redo', async () => {
  if (!claude) return;
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  const d = (rel: string) => path.join(repo.dir, rel);
  const script: ScriptedTurn[] = [
    { tools: [{ name: 'Write', input: { file_path: d('b.txt'), content: 'b\n' } }] },
    { tools: [{ name: 'Bash', input: { command: 'rm a.txt && mkdir -p dir && echo c > dir/c.txt', description: 'rearrange' } }] },
    // The wrapper tells the agent's shell where agentsnap is.
    { tools: [{ name: 'Bash', input: { command: '"$AGENTSNAP_NODE" "$AGENTSNAP_BIN" undo 2', description: 'undo my last change' } }] },
    { tools: [{ name: 'Write', input: { file_path: d('d.txt'), content: 'd\n' } }] },
    { text: 'Undone and redone differently.' },
  ];
  const stub = await startMessagesStub(script);
  try {
    const res = await cliProcess(repo, ['wrap', '--', claude, '-p', 'Go.', '--dangerously-skip-permissions'], {
      env: agentEnv(stub.url),
      timeoutMs: TIMEOUT_MS,
    });
    assert.is(res.code, 0, res.stderr);
    assert.match(res.stdout, 'Undone and redone differently.');
    const id = /started session (\S+)/.exec(res.stderr)?.[1] as string;
    const s = loadSession(await openRepo(repo.dir, { env: repo.env }), id);
    assert.equal(disk(repo), { 'a.txt': file('one\n'), 'b.txt': file('b\n'), 'd.txt': file('d\n') });
    assert.equal(
      s.steps.map((st) => [st.step, st.tool, st.status]),
      [
        [1, 'Write', 'done'],
        [2, 'Bash', 'done'],
        [3, 'Bash', 'done'],
        [4, 'Write', 'done'],
      ],
    );
    assert.equal(
      s.steps[3]?.changed.map((c) => `${c.change} ${c.path}`),
      ['A d.txt'],
      'step 4 starts from the restored state',
    );
    // The agent saw the undo's report.
    assert.match(JSON.stringify(stub.requests[3]?.messages), 'the worktree is back to before step 2');
    // The user takes the agent's undo back: the worktree as it was just before it (step 4's d.txt goes with it).
    const r = await cliProcess(repo, ['redo']);
    assert.is(r.code, 0, r.stderr);
    assert.equal(disk(repo), { 'b.txt': file('b\n'), 'dir/': 'dir', 'dir/c.txt': file('c\n') });
  } finally {
    await stub.close();
    repo.cleanup();
  }
});

test('subagents: a fork keeps the subagent conversations of the calls it keeps; undo of a call a subagent made cuts before the Agent call that started it', async () => {
  if (!claude) return;
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  const d = (rel: string) => path.join(repo.dir, rel);
  const MARK = 'SUBAGENT-TASK-7f3a';
  const script: ScriptedTurn[] = [
    { tools: [{ name: 'Write', input: { file_path: d('b.txt'), content: 'b\n' } }] },
    { tools: [{ name: 'Agent', input: { description: 'write c', prompt: `${MARK}: write c.txt`, subagent_type: 'general-purpose' } }] },
    { tools: [{ name: 'Write', input: { file_path: d('d.txt'), content: 'd\n' } }] },
    { text: 'Main done.' },
  ];
  const sub: ScriptedTurn[] = [
    { tools: [{ name: 'Write', input: { file_path: d('c.txt'), content: 'c\n' } }] },
    { text: 'Subagent done.' },
  ];
  const stub = await startMessagesStub(script, { conversations: [{ marker: MARK, script: sub }] });
  try {
    const res = await cliProcess(repo, ['wrap', '--', claude, '-p', 'Go.', '--dangerously-skip-permissions'], {
      env: agentEnv(stub.url),
      timeoutMs: TIMEOUT_MS,
    });
    assert.is(res.code, 0, res.stderr);
    assert.match(res.stdout, 'Main done.');
    const id = /started session (\S+)/.exec(res.stderr)?.[1] as string;
    const s = loadSession(await openRepo(repo.dir, { env: repo.env }), id);
    const [write, agent, subWrite, last] = stub.toolUses.map((t) => t.id);
    assert.equal(
      s.steps.map((st) => [st.step, st.tool, st.toolUseId]),
      [
        [1, 'Write', write],
        [2, 'Agent', agent],
        [3, 'Write', subWrite],
        [4, 'Write', last],
      ],
    );
    assert.ok(fs.existsSync(d('c.txt')));
    const transcript = s.steps[0]?.transcript?.path as string;
    const subagents = (dir: string) => (fs.readdirSync(dir, { recursive: true }) as string[]).filter((n) => n.endsWith('.jsonl'));
    const original = subagents(path.join(transcript.replace(/\.jsonl$/, ''), 'subagents'));
    assert.is(original.length, 1, 'Claude Code keeps the subagent in <session>/subagents/');

    // undo 4 --chat keeps the Agent call: the fork gets the subagent's conversation too, and resumes with it.
    let r = await cliProcess(repo, ['undo', '4', '--chat']);
    assert.is(r.code, 0, r.stderr);
    const keep = /claude --resume ([0-9a-f-]{36})$/m.exec(r.stdout);
    assert.ok(keep, r.stdout);
    assert.equal(subagents(path.join(path.dirname(transcript), keep![1] as string, 'subagents')), original);
    const kept = await startMessagesStub([{ text: 'Resumed.' }, { text: 'Resumed.' }, { text: 'Resumed.' }, { text: 'Resumed.' }]);
    try {
      const c = await cliProcess(
        repo,
        ['wrap', '--session', id, '--', claude, '--resume', keep![1] as string, '-p', 'Still there?', '--dangerously-skip-permissions'],
        {
          env: agentEnv(kept.url),
          timeoutMs: TIMEOUT_MS,
        },
      );
      assert.is(c.code, 0, c.stderr);
      const sent = toolIdsSent(kept.requests[0]);
      assert.equal(sent.uses, [write, agent]);
      assert.equal(sent.results, [write, agent]);
    } finally {
      await kept.close();
    }

    // undo 3 --both: step 3 was the subagent's Write.
    r = await cliProcess(repo, ['undo', '3', '--both']);
    assert.is(r.code, 0, r.stderr);
    assert.not.ok(fs.existsSync(d('c.txt')), "the subagent's file is undone");
    assert.match(r.stdout, 'step 3 was made by a subagent: the conversation is cut before step 2, the Agent call that started it');
    const m = /claude --resume ([0-9a-f-]{36})$/m.exec(r.stdout);
    assert.ok(m, r.stdout);
    const resumed = await startMessagesStub([{ text: 'Resumed.' }, { text: 'Resumed.' }, { text: 'Resumed.' }]);
    try {
      const c = await cliProcess(
        repo,
        ['wrap', '--session', id, '--', claude, '--resume', m![1] as string, '-p', 'Again?', '--dangerously-skip-permissions'],
        {
          env: agentEnv(resumed.url),
          timeoutMs: TIMEOUT_MS,
        },
      );
      assert.is(c.code, 0, c.stderr);
      const sent = toolIdsSent(resumed.requests[0]);
      assert.equal(sent.uses, [write], 'the model no longer sees the Agent call');
      assert.equal(sent.results, [write]);
    } finally {
      await resumed.close();
    }
  } finally {
    await stub.close();
    repo.cleanup();
  }
});

test.run();
