// End to end with the real Claude Agent SDK (@anthropic-ai/claude-agent-sdk, pinned in support/agent-clis.ts): the
// README's example program itself — `query()` with `hooks: agentsnapHooks()` — run by node against the installed SDK
// and this checkout, its Claude Code driven offline by the Messages API stand-in (support/messages-stub.ts). Its real
// tools run in the repository and call agentsnap's hook functions in the program's process.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { cliProcess, ROOT, runProcess, tempRepo, type TempRepo } from '../support/helpers.js';
import { startMessagesStub, type ScriptedTurn } from '../support/messages-stub.js';
import { claudeStubEnv } from '../support/claude-code.js';
import { claudeAgentSdk } from '../support/agent-clis.js';

let sdk: string | null = null;
try {
  sdk = claudeAgentSdk();
  if (!sdk) console.log('agent-sdk-e2e: skipped (AGENTSNAP_E2E_AGENT_SDK=skip)');
} catch (e) {
  console.log(`agent-sdk-e2e: skipped: ${(e as Error).message}`);
}

/** A document's example: its code block that imports the SDK's query(). */
function example(doc = 'README.md'): string {
  const text = fs.readFileSync(path.join(ROOT, doc), 'utf8');
  const code = /```js\n(import \{ query \} from '@anthropic-ai\/claude-agent-sdk';\n[\s\S]*?)```/.exec(text)?.[1];
  assert.ok(code, `${doc} shows a Claude Agent SDK example`);
  return code;
}
const readmeExample = () => example();

/**
 * A program directory outside the worktree holding the example, with `agentsnap` (this checkout) and the SDK where
 * node resolves the example's imports, as `npm install agentsnap @anthropic-ai/claude-agent-sdk` puts them.
 */
function program(repo: TempRepo, sdkDir: string, code: string): string {
  const dir = path.join(repo.base, 'my-agent');
  const scope = path.join(dir, 'node_modules', '@anthropic-ai');
  fs.mkdirSync(scope, { recursive: true });
  fs.symlinkSync(ROOT, path.join(dir, 'node_modules', 'agentsnap'));
  fs.symlinkSync(sdkDir, path.join(scope, 'claude-agent-sdk'));
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'my-agent', private: true, type: 'module' }));
  fs.writeFileSync(path.join(dir, 'agent.mjs'), code);
  return dir;
}

function worktreeFiles(repo: TempRepo): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of fs.readdirSync(repo.dir)) if (name !== '.git') out[name] = fs.readFileSync(path.join(repo.dir, name), 'utf8');
  return out;
}

test("the README's and the reference's examples type-check against the SDK's own types (agentsnapHooks() is a valid options.hooks)", () => {
  if (!sdk) return;
  const repo = tempRepo({ noInit: true });
  try {
    const dir = program(repo, sdk, readmeExample());
    fs.writeFileSync(path.join(dir, 'agent.ts'), readmeExample());
    fs.writeFileSync(path.join(dir, 'reference.ts'), example('docs/reference.md'));
    const tsconfig = {
      compilerOptions: {
        strict: true,
        module: 'nodenext',
        moduleResolution: 'nodenext',
        target: 'es2022',
        noEmit: true,
        skipLibCheck: true,
        types: [],
      },
      files: ['agent.ts', 'reference.ts'],
    };
    fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(tsconfig));
    const r = spawnSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    assert.is(r.status, 0, `${r.stdout}${r.stderr}`);
    // It does check: a hook of the wrong shape is refused by the same compiler run.
    fs.rmSync(path.join(dir, 'reference.ts'));
    fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ ...tsconfig, files: ['agent.ts'] }));
    fs.writeFileSync(
      path.join(dir, 'agent.ts'),
      readmeExample().replace('agentsnapHooks()', '{ PreToolUse: [{ hooks: [async (input: { nope: number }) => ({})] }] }'),
    );
    const bad = spawnSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    assert.match(bad.stdout, 'HookCallback');
  } finally {
    repo.cleanup();
  }
});

// Twice: the hooks recording in the program's process (no server), and through the worktree's background server
// (already running: every call goes through the channel, none in the process).
for (const server of ['off', 'background'] as const)
  test(`the README example with the real SDK (server ${server}): a step per hooked call (write, shell, failing shell closed as failed), the read from the transcript, log says what each was; undo of the shell call and of the write; undo --chat resumed by the SDK`, async () => {
    if (!sdk) return;
    const repo = tempRepo({ files: { 'a.txt': 'one\n', 'gone.txt': 'bye\n' } });
    const d = (rel: string) => path.join(repo.dir, rel);
    const script: ScriptedTurn[] = [
      // A read is not hooked (init claude's matcher): journaled from the transcript at the next hooked call.
      { tools: [{ name: 'Read', input: { file_path: d('a.txt') } }] },
      { text: 'Creating hello.txt.', tools: [{ name: 'Write', input: { file_path: d('hello.txt'), content: 'hello\n' } }] },
      { tools: [{ name: 'Bash', input: { command: 'rm gone.txt && echo two > a.txt', description: 'change files' } }] },
      { tools: [{ name: 'Bash', input: { command: 'echo partial > fail.txt; exit 3', description: 'a failing command' } }] },
      { text: 'All done.' },
    ];
    const start = { 'a.txt': 'one\n', 'gone.txt': 'bye\n' };
    const afterWrite = { ...start, 'hello.txt': 'hello\n' };
    const afterShell = { 'a.txt': 'two\n', 'hello.txt': 'hello\n' };
    const stub = await startMessagesStub(script);
    const env = {
      ...claudeStubEnv(stub.url),
      AGENTSNAP_SERVER: server === 'off' ? 'off' : 'on',
      ...(server !== 'off' ? { AGENTSNAP_SERVER_TRACE: '1' } : {}),
    };
    try {
      if (server === 'background') {
        const started = await cliProcess(repo, ['server', 'start'], { env });
        assert.is(started.code, 0, started.stderr);
      }
      const dir = program(repo, sdk, readmeExample());
      const res = await runProcess(process.execPath, [path.join(dir, 'agent.mjs')], {
        cwd: repo.dir,
        env: { ...repo.env, ...env },
        input: null,
        timeoutMs: 180_000,
      });
      assert.is(res.code, 0, res.stderr + res.stdout);
      assert.match(res.stdout, 'result');
      assert.not.match(res.stdout + res.stderr, 'agentsnap: warning');
      assert.equal(worktreeFiles(repo), { ...afterShell, 'fail.txt': 'partial\n' });
      if (server === 'background') {
        // Every hooked call went to the server (its trace); none was recorded in the program's process.
        const trace = fs.readFileSync(path.join(repo.dir, '.git', 'agentsnap', 'run', 'main', 'server.log'), 'utf8');
        assert.is((trace.match(/call \d+: hook claude (PreToolUse|PostToolUse|PostToolUseFailure)\n/g) ?? []).length, 6, trace);
      }
      const sessions = JSON.parse((await cliProcess(repo, ['sessions', '--json'])).stdout) as { id: string; agent: string }[];
      assert.equal(
        sessions.map((s) => s.agent),
        ['claude'],
        "one session, Claude Code's",
      );
      const log = JSON.parse((await cliProcess(repo, ['log', '--json'])).stdout) as {
        step: number;
        tool: string;
        status: string;
        error: string | null;
        toolUseId: string;
        source?: string;
        pre: string;
        post: string;
      }[];
      const byCall = stub.toolUses.map((c) => log.find((s) => s.toolUseId === c.id));
      assert.equal(
        byCall.map((s) => [s?.tool, s?.status, s?.error ?? null, s?.source ?? 'hook']),
        [
          ['Read', 'done', null, 'transcript'],
          ['Write', 'done', null, 'hook'],
          ['Bash', 'done', null, 'hook'],
          ['Bash', 'failed', 'Exit code 3', 'hook'],
        ],
      );
      const text = await cliProcess(repo, ['log']);
      assert.is(text.code, 0, text.stderr);
      for (const what of ['hello.txt', 'rm gone.txt && echo two > a.txt', 'echo partial > fail.txt; exit 3'])
        assert.match(text.stdout, what);
      // Undo the shell call: a.txt and gone.txt back, fail.txt (a later step's) gone, hello.txt kept; then the write.
      const shell = byCall[2]?.step as number;
      const write = byCall[1]?.step as number;
      let u = await cliProcess(repo, ['undo', String(shell)]);
      assert.is(u.code, 0, u.stderr);
      assert.equal(worktreeFiles(repo), afterWrite);
      u = await cliProcess(repo, ['undo', String(write)]);
      assert.is(u.code, 0, u.stderr);
      assert.equal(worktreeFiles(repo), start);
      if (server === 'off') {
        // undo --chat before the failing call: a forked transcript, which the SDK resumes (options.resume) without it.
        const failing = byCall[3]?.step as number;
        const r = await cliProcess(repo, ['undo', String(failing), '--chat', '--json']);
        assert.is(r.code, 0, r.stderr);
        const chat = (JSON.parse(r.stdout) as { chat: { sessionId: string; file: string; original: string } }).chat;
        assert.ok(fs.existsSync(chat.file) && chat.file !== chat.original, r.stdout);
        fs.writeFileSync(
          path.join(dir, 'resume.mjs'),
          "import { query } from '@anthropic-ai/claude-agent-sdk';\nimport { agentsnapHooks } from 'agentsnap';\n" +
            "for await (const m of query({ prompt: 'Where are we?', options: { resume: process.argv[2], hooks: agentsnapHooks(), allowedTools: ['Write', 'Edit', 'Bash'] } })) console.log(m.type);\n",
        );
        const resumed = await startMessagesStub([
          { text: 'Resumed.' },
          { text: 'Resumed.' },
          { text: 'Resumed.' },
          { text: 'Resumed.' },
          { text: 'Resumed.' },
        ]);
        try {
          const c = await runProcess(process.execPath, [path.join(dir, 'resume.mjs'), chat.sessionId], {
            cwd: repo.dir,
            env: { ...repo.env, ...env, ...claudeStubEnv(resumed.url) },
            input: null,
            timeoutMs: 180_000,
          });
          assert.is(c.code, 0, c.stderr + c.stdout);
          const sent = JSON.stringify(resumed.requests[0]?.messages ?? []);
          const seen = stub.toolUses.map((t) => sent.includes(t.id));
          assert.equal(seen, [true, true, true, false], 'the model sees the calls before the failing one only');
          assert.match(sent, 'Where are we?');
        } finally {
          await resumed.close();
        }
      }
    } finally {
      if (server === 'background') await cliProcess(repo, ['server', 'stop'], { env });
      await stub.close();
      repo.cleanup();
    }
  });

test.run();
