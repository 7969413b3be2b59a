import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { cli, cliProcess, tempRepo, treeFiles, worktreeFiles, type TempRepo } from '../support/helpers.js';
import { readJournal } from '../../src/session/journal.js';
import { loadSession } from '../../src/session/session.js';
import { openRepo } from '../../src/git/repo.js';

function journalOf(repo: TempRepo, session: string) {
  return readJournal(path.join(repo.dir, '.git', 'agentsnap', 'sessions', session, 'journal.jsonl')).events as unknown as Record<
    string,
    unknown
  >[];
}

/** A session as `wrap` would start it, and the environment its hooks see. */
async function wrappedSession(repo: TempRepo): Promise<{ id: string; env: Record<string, string> }> {
  const res = await cli(repo, ['snap', '--json']);
  assert.is(res.code, 0, res.stderr);
  const id = (JSON.parse(res.stdout) as { session: string }).session;
  return { id, env: { AGENTSNAP_SESSION: id, AGENTSNAP_WORKTREE: repo.dir } };
}

function hook(
  repo: TempRepo,
  env: Record<string, string>,
  event: string,
  payload: unknown,
  opts: { cwd?: string; wrapped?: boolean } = {},
) {
  return cliProcess(repo, ['hook', 'claude', event, ...(opts.wrapped === false ? [] : ['--wrapped'])], {
    env,
    input: typeof payload === 'string' ? payload : JSON.stringify(payload),
    ...(opts.cwd ? { cwd: opts.cwd } : {}),
  });
}

function transcriptWith(repo: TempRepo, toolUseId: string): { file: string; size: number } {
  const file = path.join(repo.home, '.claude', 'projects', 'p', 'sess.jsonl');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const lines = [
    { type: 'user', uuid: 'u-1', message: { role: 'user', content: 'write hello.txt please' } },
    {
      type: 'assistant',
      uuid: 'a-2',
      version: '2.1.332',
      message: {
        role: 'assistant',
        model: 'claude-test-1',
        content: [{ type: 'tool_use', id: toolUseId, name: 'Write', input: { file_path: 'hello.txt' } }],
      },
    },
  ];
  const text = lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
  fs.writeFileSync(file, text);
  return { file, size: Buffer.byteLength(text) };
}

test('claude hooks: pre and post of one call become one step with the payload fields journaled', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const { id, env } = await wrappedSession(repo);
    const tr = transcriptWith(repo, 'toolu_01A');
    const common = { session_id: 'cc-1', transcript_path: tr.file, cwd: repo.dir, tool_name: 'Write', tool_use_id: 'toolu_01A' };
    const pre = await hook(repo, env, 'PreToolUse', {
      ...common,
      hook_event_name: 'PreToolUse',
      tool_input: { file_path: path.join(repo.dir, 'hello.txt'), content: 'hello\n' },
    });
    assert.is(pre.code, 0, pre.stderr);
    assert.is(pre.stdout, '');
    assert.is(pre.stderr, '');
    repo.write('hello.txt', 'hello\n');
    const post = await hook(repo, env, 'PostToolUse', {
      ...common,
      hook_event_name: 'PostToolUse',
      tool_input: {},
      tool_response: { type: 'create', filePath: 'hello.txt' },
      duration_ms: 12,
    });
    assert.is(post.code, 0, post.stderr);
    assert.is(post.stdout, '');
    const ev = journalOf(repo, id);
    const preEv = ev.find((e) => e.type === 'step.pre') as Record<string, unknown>;
    assert.is(preEv.tool, 'Write');
    assert.is(preEv.toolUseId, 'toolu_01A');
    assert.equal(preEv.input, { file_path: path.join(repo.dir, 'hello.txt'), content: 'hello\n' });
    assert.equal(preEv.transcript, { path: tr.file, offset: tr.size, uuid: 'a-2' });
    assert.is(preEv.agentVersion, 'claude-code 2.1.332');
    assert.is(preEv.model, 'claude-test-1');
    const postEv = ev.find((e) => e.type === 'step.post') as Record<string, unknown>;
    assert.is(postEv.step, preEv.step);
    assert.is(postEv.status, 'done');
    assert.is(postEv.durationMs, 12);
    assert.equal(postEv.output, { type: 'create', filePath: 'hello.txt' });
    assert.equal(treeFiles(repo, postEv.commit as string), worktreeFiles(repo));
  } finally {
    repo.cleanup();
  }
});

test("a hooked session goes by the conversation's first prompt: journaled once, shown by sessions, status and log --all-sessions, accepted as --session", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const { id, env } = await wrappedSession(repo);
    const tr = transcriptWith(repo, 'toolu_01A');
    const common = { session_id: 'cc-1', transcript_path: tr.file, cwd: repo.dir, tool_name: 'Write', tool_use_id: 'toolu_01A' };
    for (const n of [1, 2]) {
      const pre = await hook(repo, env, 'PreToolUse', {
        ...common,
        tool_use_id: `toolu_0${n}`,
        hook_event_name: 'PreToolUse',
        tool_input: {},
      });
      assert.is(pre.code, 0, pre.stderr);
      repo.write('hello.txt', `hello ${n}\n`);
      const post = await hook(repo, env, 'PostToolUse', {
        ...common,
        tool_use_id: `toolu_0${n}`,
        hook_event_name: 'PostToolUse',
        tool_input: {},
      });
      assert.is(post.code, 0, post.stderr);
    }
    const prompts = journalOf(repo, id).filter((e) => e.type === 'step.pre' && e.prompt !== undefined);
    assert.equal(
      prompts.map((e) => e.prompt),
      ['write hello.txt please'],
      'the first step journals it, the next one reads nothing',
    );
    const sessions = JSON.parse((await cli(repo, ['sessions', '--json'])).stdout) as { id: string; name: string | null }[];
    assert.is(sessions.find((s) => s.id === id)?.name, 'write hello.txt please');
    const status = await cli(repo, ['status']);
    assert.match(status.stdout, `session ${id} (write hello.txt please)  `);
    const all = await cli(repo, ['log', '--all-sessions']);
    assert.match(all.stdout, `${id} write hello.txt please  `);
    const byName = await cli(repo, ['log', '--session', 'write hello.txt please', '--json']);
    assert.is(byName.code, 0, byName.stderr);
    const steps = (JSON.parse(byName.stdout) as { step?: number }[]).map((r) => r.step).filter((n) => n !== undefined);
    assert.ok(steps.includes(1) && steps.includes(2), JSON.stringify(steps));
  } finally {
    repo.cleanup();
  }
});

test('PostToolUseFailure still takes the post snapshot, with status failed', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const { id, env } = await wrappedSession(repo);
    const common = {
      session_id: 'cc',
      cwd: repo.dir,
      tool_name: 'Bash',
      tool_use_id: 'toolu_B',
      tool_input: { command: 'echo x > out.txt; exit 3' },
    };
    await hook(repo, env, 'PreToolUse', { ...common, hook_event_name: 'PreToolUse' });
    repo.write('out.txt', 'x\n');
    const post = await hook(repo, env, 'PostToolUseFailure', {
      ...common,
      hook_event_name: 'PostToolUseFailure',
      error: 'Exit code 3',
      is_interrupt: false,
      duration_ms: 5,
    });
    assert.is(post.code, 0);
    const st = loadSession(await openRepo(repo.dir, { env: repo.env }), id).steps.find((s) => s.toolUseId === 'toolu_B');
    assert.is(st?.status, 'failed');
    assert.is(st?.error, 'Exit code 3');
    assert.equal(
      st?.changed.map((c) => c.path),
      ['out.txt'],
    );
  } finally {
    repo.cleanup();
  }
});

test('concurrent hook calls get unique steps and each post closes its own call', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const { id, env } = await wrappedSession(repo);
    const ids = ['t1', 't2', 't3', 't4'];
    const pres = await Promise.all(
      ids.map((t) =>
        hook(repo, env, 'PreToolUse', { hook_event_name: 'PreToolUse', tool_name: `Tool_${t}`, tool_use_id: t, tool_input: {} }),
      ),
    );
    for (const r of pres) assert.is(r.code, 0, r.stderr);
    const posts = await Promise.all(
      [...ids].reverse().map((t) =>
        hook(repo, env, 'PostToolUse', {
          hook_event_name: 'PostToolUse',
          tool_name: `Tool_${t}`,
          tool_use_id: t,
          tool_response: { from: t },
        }),
      ),
    );
    for (const r of posts) assert.is(r.stderr, '');
    const s = loadSession(await openRepo(repo.dir, { env: repo.env }), id);
    const calls = s.steps.filter((st) => st.kind === 'call');
    assert.equal(calls.map((st) => st.step).sort(), [2, 3, 4, 5]);
    for (const st of calls) {
      assert.is(st.status, 'done');
      assert.is(st.tool, `Tool_${st.toolUseId}`);
      assert.equal(st.output, { from: st.toolUseId });
    }
  } finally {
    repo.cleanup();
  }
});

test('a hook never breaks the agent: bad payload, unknown session, usage mistakes all exit 0 with one warning line', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const { env } = await wrappedSession(repo);
    const bad = await hook(repo, env, 'PreToolUse', '{not json');
    assert.is(bad.code, 0);
    assert.is(bad.stdout, '');
    assert.is(bad.stderr.trim().split('\n').length, 1);
    assert.match(bad.stderr, /^agentsnap: warning: /);
    const gone = await hook(repo, { AGENTSNAP_SESSION: 'no-such-session', AGENTSNAP_WORKTREE: repo.dir }, 'PreToolUse', {
      tool_name: 'Bash',
      tool_use_id: 'x',
    });
    assert.is(gone.code, 0);
    assert.is(gone.stdout, '');
    assert.match(gone.stderr, 'no-such-session');
    const odd = await cliProcess(repo, ['hook', '--bogus-flag'], { env, input: '' });
    assert.is(odd.code, 0);
    assert.is(odd.stdout, '');
    const other = await hook(repo, env, 'Notification', { hook_event_name: 'Notification', message: 'hi' });
    assert.is(other.code, 0);
    assert.is(other.stderr, '');
  } finally {
    repo.cleanup();
  }
});

test('a snapshot that fails marks its step unprotected and lets the tool run', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const { id, env } = await wrappedSession(repo);
    // A private index git cannot use makes every snapshot of the session fail.
    const index = path.join(repo.dir, '.git', 'agentsnap', 'sessions', id, 'index');
    fs.rmSync(index, { force: true });
    fs.mkdirSync(index);
    const pre = await hook(repo, env, 'PreToolUse', {
      hook_event_name: 'PreToolUse',
      tool_name: 'Edit',
      tool_use_id: 'u1',
      tool_input: { file_path: 'a.txt' },
    });
    assert.is(pre.code, 0);
    assert.is(pre.stdout, '');
    assert.match(pre.stderr, 'marked unprotected');
    const post = await hook(repo, env, 'PostToolUse', {
      hook_event_name: 'PostToolUse',
      tool_name: 'Edit',
      tool_use_id: 'u1',
      tool_response: {},
    });
    assert.is(post.code, 0);
    assert.is(post.stderr, '', 'the post of an unprotected call has nothing more to record');
    const unprotected = journalOf(repo, id).filter((e) => e.type === 'step.unprotected');
    assert.is(unprotected.length, 1);
    assert.is(unprotected[0]?.toolUseId, 'u1');
    const log = await cli(repo, ['log', '--session', id]);
    assert.match(log.stdout, 'unprotected');
  } finally {
    repo.cleanup();
  }
});

test('snapshots are of the session worktree whatever cwd the payload or the hook process has', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n', 'sub/b.txt': 'b\n' } });
  try {
    const { id, env } = await wrappedSession(repo);
    const elsewhere = path.join(repo.base, 'elsewhere');
    fs.mkdirSync(elsewhere);
    await hook(
      repo,
      env,
      'PreToolUse',
      { hook_event_name: 'PreToolUse', tool_name: 'Bash', tool_use_id: 'c1', cwd: elsewhere },
      { cwd: path.join(repo.dir, 'sub') },
    );
    repo.write('sub/b.txt', 'changed\n');
    await hook(
      repo,
      env,
      'PostToolUse',
      { hook_event_name: 'PostToolUse', tool_name: 'Bash', tool_use_id: 'c1', cwd: elsewhere },
      { cwd: elsewhere },
    );
    const st = loadSession(await openRepo(repo.dir, { env: repo.env }), id).steps.find((s) => s.toolUseId === 'c1');
    assert.equal(
      st?.changed.map((c) => c.path),
      ['sub/b.txt'],
    );
    assert.equal(treeFiles(repo, st?.post as string), worktreeFiles(repo));
  } finally {
    repo.cleanup();
  }
});

test('secrets are redacted and long outputs truncated before journaling', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    repo.git(['config', 'agentsnap.outputLimit', '1k']);
    repo.git(['config', '--add', 'agentsnap.redactPattern', 'internal-[0-9]{6}']);
    const { id, env } = await wrappedSession(repo);
    const anthropic = 'sk-ant-api03-Qz8vR2xN5mT7wK1pL4jH9sD3fG6bV0cX2zA5qW8eR1tY4uI7oP0aS3dF6gH9jK2lZ5xC8vB1nM4-AbCdEfAA';
    const github = 'ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3sXy';
    const aws = 'AKIAIOSFODNN7EXAMPLE';
    const pem = '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq8f3kq\nx9W2v1Y=\n-----END RSA PRIVATE KEY-----';
    const command = `curl -H "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U" -H "x-api-key: ${anthropic}" https://api.example.com && git push https://x:${github}@github.com/o/r && echo ${aws} internal-123456`;
    await hook(repo, env, 'PreToolUse', {
      hook_event_name: 'PreToolUse',
      tool_name: 'Bash',
      tool_use_id: 's1',
      tool_input: { command, key: pem },
    });
    await hook(repo, env, 'PostToolUse', {
      hook_event_name: 'PostToolUse',
      tool_name: 'Bash',
      tool_use_id: 's1',
      tool_response: { stdout: `token ${github}\n${'x'.repeat(5000)}`, stderr: '' },
    });
    const text = fs.readFileSync(path.join(repo.dir, '.git', 'agentsnap', 'sessions', id, 'journal.jsonl'), 'utf8');
    for (const secret of [
      anthropic,
      github,
      aws,
      'MIIEowIBAAKCAQEA7bq8f3kq',
      'dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
      'internal-123456',
    ]) {
      assert.not.ok(text.includes(secret), `journal leaks ${secret.slice(0, 12)}…`);
    }
    assert.ok(text.includes('[REDACTED:anthropic-key]'));
    assert.ok(text.includes('Bearer [REDACTED:'));
    const st = loadSession(await openRepo(repo.dir, { env: repo.env }), id).steps.find((s) => s.toolUseId === 's1');
    const stdout = (st?.output as { stdout: string }).stdout;
    assert.ok(stdout.length < 1100, `output kept ${stdout.length} chars`);
    assert.match(stdout, /…\[truncated \d+ chars\]$/);
  } finally {
    repo.cleanup();
  }
});

test('a step left open is closed as interrupted when the wrapped command exits', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const script = path.join(repo.base, 'agent.sh');
    fs.writeFileSync(
      script,
      `#!/bin/sh\necho '{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":"open-1"}' | node "$AGENTSNAP_BIN" hook claude PreToolUse --wrapped\necho half > a.txt\nexit 0\n`,
      { mode: 0o755 },
    );
    const res = await cliProcess(repo, ['wrap', '--agent', 'generic', '--', script]);
    assert.is(res.code, 0, res.stderr);
    const id = /started session (\S+)/.exec(res.stderr)?.[1] as string;
    const st = loadSession(await openRepo(repo.dir, { env: repo.env }), id).steps.find((s) => s.toolUseId === 'open-1');
    assert.is(st?.status, 'interrupted');
    assert.equal(
      st?.changed.map((c) => c.path),
      ['a.txt'],
    );
  } finally {
    repo.cleanup();
  }
});

test('a hook written by init stands aside while wrap injects its own; without a wrapper it maps the agent session', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const { id, env } = await wrappedSession(repo);
    const aside = await hook(
      repo,
      { ...env, AGENTSNAP_HOOKS: 'claude' },
      'PreToolUse',
      { hook_event_name: 'PreToolUse', tool_name: 'Bash', tool_use_id: 'd1' },
      { wrapped: false },
    );
    assert.is(aside.code, 0);
    assert.is(journalOf(repo, id).filter((e) => e.type === 'step.pre').length, 0);
    // No wrapper: the agent's session_id picks (or starts) the agentsnap session, in the payload's cwd.
    const bare = { session_id: 'claude-sess-9', cwd: repo.dir };
    for (const [event, tid] of [
      ['PreToolUse', 'm1'],
      ['PostToolUse', 'm1'],
      ['PreToolUse', 'm2'],
      ['PostToolUse', 'm2'],
    ] as const) {
      const r = await cliProcess(repo, ['hook', 'claude', event], {
        input: JSON.stringify({ ...bare, hook_event_name: event, tool_name: 'Bash', tool_use_id: tid }),
        cwd: repo.base,
      });
      assert.is(r.stderr, '');
    }
    const list = JSON.parse((await cli(repo, ['sessions', '--json'])).stdout) as { id: string; agent: string | null; steps: number }[];
    const mapped = list.filter((s) => s.agent === 'claude');
    assert.is(mapped.length, 1);
    assert.is(mapped[0]?.steps, 2);
    const end = await cliProcess(repo, ['hook', 'claude', 'SessionEnd'], {
      input: JSON.stringify({ ...bare, hook_event_name: 'SessionEnd' }),
    });
    assert.is(end.stderr, '');
    const after = JSON.parse((await cli(repo, ['sessions', '--json'])).stdout) as { id: string; status: string }[];
    assert.is(after.find((s) => s.id === mapped[0]?.id)?.status, 'ended');
  } finally {
    repo.cleanup();
  }
});

test.run();
