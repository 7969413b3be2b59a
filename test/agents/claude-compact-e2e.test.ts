// End to end with the real Claude Code binary: `undo N --compact` resumed
// with `claude --resume`, and a fork's file history (2.1.220+
// file-history-delta lines and their backups) used by the binary's own
// rewind (`--rewind-files`, what /rewind runs) inside the resumed session.
// Skipped with AGENTSNAP_E2E_CLAUDE=skip (see test/support/claude-code.ts).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { cliProcess, runProcess, tempRepo } from '../support/helpers.js';
import { startMessagesStub, type MessagesRequest, type ScriptedTurn } from '../support/messages-stub.js';
import { claudeBinary, claudeStubEnv } from '../support/claude-code.js';
import { loadSession } from '../../src/session/session.js';
import { openRepo } from '../../src/git/repo.js';

const claude = claudeBinary();
const TIMEOUT_MS = 120_000;

function agentEnv(url: string): Record<string, string> {
  return {
    ...claudeStubEnv(url),
    // File history (what /rewind restores from) is on in -p mode only with this.
    CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING: '1',
  };
}

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

const resumeStub = () => startMessagesStub(Array.from({ length: 10 }, () => ({ text: 'Resumed.' })));

test('claude: undo N --compact resumes with the digest in place of calls before N, and calls N on as they were', async () => {
  if (!claude) return;
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  const d = (rel: string) => path.join(repo.dir, rel);
  const script: ScriptedTurn[] = [
    { text: 'Creating hello.txt first.', tools: [{ name: 'Write', input: { file_path: d('hello.txt'), content: 'hello\n' } }] },
    { tools: [{ name: 'Bash', input: { command: 'echo fail > f.txt; exit 3', description: 'a failing call' } }] },
    { tools: [{ name: 'Edit', input: { file_path: d('a.txt'), old_string: 'one', new_string: 'two' } }] },
    { tools: [{ name: 'Write', input: { file_path: d('b.txt'), content: 'b\n' } }] },
    { text: 'All done.' },
  ];
  const stub = await startMessagesStub(script);
  try {
    const res = await cliProcess(repo, ['wrap', '--', claude, '-p', 'Make the changes.', '--dangerously-skip-permissions'], {
      env: agentEnv(stub.url),
      timeoutMs: TIMEOUT_MS,
    });
    assert.is(res.code, 0, res.stderr);
    const id = /started session (\S+)/.exec(res.stderr)?.[1] as string;
    const s = loadSession(await openRepo(repo.dir, { env: repo.env }), id);
    const ids = stub.toolUses.map((t) => t.id);
    assert.equal(
      s.steps.map((st) => st.toolUseId),
      ids,
    );
    const transcript = s.steps[0]?.transcript?.path as string;
    const bytes = fs.readFileSync(transcript);
    const r = await cliProcess(repo, ['undo', '3', '--compact', '--json']);
    assert.is(r.code, 0, r.stderr);
    const chat = (
      JSON.parse(r.stdout) as {
        chat: {
          kind: string;
          sessionId: string;
          cwd: string;
          digest: string;
          before: { messages: number; chars: number };
          after: { messages: number; chars: number };
        };
      }
    ).chat;
    assert.is(chat.kind, 'transcript', r.stdout);
    assert.is(chat.cwd, repo.dir);
    assert.ok(chat.after.messages < chat.before.messages, JSON.stringify([chat.before, chat.after]));
    assert.match(chat.digest, 'Make the changes.');
    assert.match(chat.digest, /step 2 Bash: .* FAILED: Exit code 3 -> A f\.txt/);
    assert.equal(fs.readFileSync(transcript), bytes, 'the original transcript is unchanged');
    assert.ok(fs.existsSync(d('b.txt')), 'files untouched');
    const resumed = await resumeStub();
    try {
      const c = await runProcess(claude, ['--resume', chat.sessionId, '-p', 'Where are we?', '--dangerously-skip-permissions'], {
        cwd: repo.dir,
        env: { ...repo.env, ...agentEnv(resumed.url) },
        input: null,
        timeoutMs: TIMEOUT_MS,
      });
      assert.is(c.code, 0, c.stderr + c.stdout);
      assert.match(c.stdout, 'Resumed.');
      const req = resumed.requests[0];
      const sent = toolIdsSent(req);
      assert.equal(sent.uses, ids.slice(2), 'the model sees calls 3 and 4 only');
      assert.equal(sent.results, ids.slice(2));
      const text = JSON.stringify(req?.messages);
      assert.ok(text.includes(JSON.stringify(chat.digest).slice(1, 200)), 'the digest is sent in place of what it replaced');
      for (const gone of ids.slice(0, 2)) assert.not.ok(text.includes(gone), `call ${gone} is not sent`);
    } finally {
      await resumed.close();
    }
  } finally {
    await stub.close();
    repo.cleanup();
  }
});

test("claude: a fork's file history works for the binary's own rewind (--rewind-files, what /rewind runs) inside the resumed session", async () => {
  if (!claude) return;
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  const d = (rel: string) => path.join(repo.dir, rel);
  const script: ScriptedTurn[] = [
    { tools: [{ name: 'Write', input: { file_path: d('hello.txt'), content: 'hello\n' } }] },
    { tools: [{ name: 'Edit', input: { file_path: d('a.txt'), old_string: 'one', new_string: 'two' } }] },
    { tools: [{ name: 'Edit', input: { file_path: d('a.txt'), old_string: 'two', new_string: 'three' } }] },
    { text: 'All done.' },
  ];
  const stub = await startMessagesStub(script);
  try {
    const res = await cliProcess(repo, ['wrap', '--', claude, '-p', 'Make the changes.', '--dangerously-skip-permissions'], {
      env: agentEnv(stub.url),
      timeoutMs: TIMEOUT_MS,
    });
    assert.is(res.code, 0, res.stderr);
    const id = /started session (\S+)/.exec(res.stderr)?.[1] as string;
    const transcript = loadSession(await openRepo(repo.dir, { env: repo.env }), id).steps[0]?.transcript?.path as string;
    const text = fs.readFileSync(transcript, 'utf8');
    assert.match(text, '"file-history-delta"', 'this version writes file-history-delta lines');
    // Files and conversation back to before call 3.
    const r = await cliProcess(repo, ['undo', '3', '--both', '--json']);
    assert.is(r.code, 0, r.stderr);
    const chat = (JSON.parse(r.stdout) as { chat: { file: string; sessionId: string } }).chat;
    assert.is(fs.readFileSync(d('a.txt'), 'utf8'), 'two\n');
    const lines = fs
      .readFileSync(chat.file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const prompt = lines.find((l) => l.type === 'user' && JSON.stringify(l.message).includes('Make the changes.'))?.uuid as string;
    assert.ok(prompt);
    const uuids = new Set(lines.map((l) => l.uuid));
    const snapshots = new Set(lines.filter((l) => l.type === 'file-history-snapshot').map((l) => l.messageId));
    const deltas = lines.filter((l) => l.type === 'file-history-delta');
    assert.equal(
      deltas.map((l) => l.trackingPath),
      ['hello.txt', 'a.txt'],
      'the deltas of the kept calls',
    );
    for (const l of deltas) {
      assert.ok(snapshots.has(l.snapshotMessageId) && uuids.has(l.messageId), 'each delta names a kept snapshot and message');
    }
    // Claude Code's rewind inside the resumed fork: back to the prompt, i.e. before every call of the session.
    const c = await runProcess(claude, ['--resume', chat.sessionId, '--rewind-files', prompt], {
      cwd: repo.dir,
      env: { ...repo.env, ...agentEnv('http://127.0.0.1:9') },
      input: null,
      timeoutMs: TIMEOUT_MS,
    });
    assert.is(c.code, 0, c.stderr + c.stdout);
    assert.match(c.stdout, 'Files rewound');
    assert.is(fs.readFileSync(d('a.txt'), 'utf8'), 'one\n');
    assert.not.ok(fs.existsSync(d('hello.txt')), 'the file call 1 created is gone');
  } finally {
    await stub.close();
    repo.cleanup();
  }
});

test.run();
