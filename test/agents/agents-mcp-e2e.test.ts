// End to end (issue 18) with the real pinned Codex CLI and Gemini CLI under `agentsnap wrap --mcp`, driven offline
// by scripted models that read their tool results: each lists its steps through agentsnap's MCP tools (Codex offers
// them as the namespace `mcp__agentsnap` and hooks them as `mcp__agentsnap__<tool>`; Gemini as `mcp_agentsnap_<tool>`),
// dry-runs the undo of its bad command, undoes it, and its next command builds on the restored file.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { cliProcess, tempRepo, treeFiles, worktreeFiles, type TempRepo } from '../support/helpers.js';
import { startGeminiStub, startResponsesStub, type ScriptStep } from '../support/model-stubs.js';
import { codexBinary, geminiBinary } from '../support/agent-clis.js';
import { loadSession } from '../../src/session/session.js';
import { openRepo } from '../../src/git/repo.js';
import { readJournal } from '../../src/session/journal.js';

const codex = codexBinary();
const gemini = geminiBinary();

/** The text of the newest function_call_output the Responses request sends back (what the model just got). */
function lastOutput(body: Record<string, unknown>): string {
  const input = Array.isArray(body.input) ? (body.input as { type?: string; output?: unknown }[]) : [];
  const out = [...input].reverse().find((i) => i.type === 'function_call_output')?.output;
  return typeof out === 'string'
    ? out
    : Array.isArray(out)
      ? (out as { text?: string }[]).map((x) => x.text ?? '').join('\n')
      : JSON.stringify(out ?? '');
}

const files = (m: Map<string, { content: Buffer }>) => Object.fromEntries([...m].map(([p, v]) => [p, v.content.toString()]));

test('codex under wrap --mcp: list_steps, undo dry run, undo through MCP; exact bytes back, journaled as the undo call, the next command builds on the restored state', async () => {
  if (!codex) return;
  const repo: TempRepo = tempRepo({ files: { 'a.txt': 'one\n' } });
  const seen: Record<string, string> = {};
  let bad = 0;
  const script: ScriptStep[] = [
    { tools: [{ name: 'exec_command', input: { cmd: "printf 'hello\\n' > hello.txt" } }] },
    { tools: [{ name: 'exec_command', input: { cmd: 'echo broken > a.txt' } }] },
    { tools: [{ name: 'list_steps', namespace: 'mcp__agentsnap', input: {} }] },
    (body) => {
      seen.list = lastOutput(body);
      bad = Number(/^(\d+)  Bash  \[done\]  \$ echo broken/m.exec(seen.list)?.[1] ?? 0);
      return { tools: [{ name: 'undo', namespace: 'mcp__agentsnap', input: { step: bad } }] };
    },
    (body) => {
      seen.dry = lastOutput(body);
      return { tools: [{ name: 'undo', namespace: 'mcp__agentsnap', input: { step: bad, dry_run: false } }] };
    },
    (body) => {
      seen.undo = lastOutput(body);
      return { tools: [{ name: 'exec_command', input: { cmd: "sed -i 's/one/fixed/' a.txt" } }] };
    },
    { text: 'All done.' },
  ];
  const stub = await startResponsesStub(script);
  try {
    const provider = `model_providers.stub={name="stub",base_url="${stub.url}/v1",wire_api="responses",env_key="OPENAI_API_KEY"}`;
    const res = await cliProcess(
      repo,
      [
        'wrap',
        '--mcp',
        '--',
        codex,
        'exec',
        '-c',
        provider,
        '-c',
        'model_provider=stub',
        '-m',
        'gpt-5',
        '--dangerously-bypass-approvals-and-sandbox',
        'Make the changes.',
      ],
      { env: { OPENAI_API_KEY: 'sk-e2e-test-key-not-real' }, timeoutMs: 180_000 },
    );
    assert.is(res.code, 0, res.stderr);
    assert.match(res.stdout, 'All done.');
    assert.match(res.stderr, 'MCP server agentsnap offered');
    const id = /started session (\S+)/.exec(res.stderr)?.[1] as string;

    assert.ok(bad > 0, `list_steps named the command: ${seen.list}`);
    assert.match(seen.dry ?? '', new RegExp(`Dry run: undo ${bad} would put the worktree back to before step ${bad}`));
    assert.match(seen.dry ?? '', /M a\.txt \(would be modified\)/);
    assert.match(seen.undo ?? '', new RegExp(`Undone: steps? ${bad}`));
    assert.match(seen.undo ?? '', /conversation still contains the undone tool calls/);

    const s = loadSession(await openRepo(repo.dir, { env: repo.env }), id);
    const undos = s.steps.filter((st) => st.tool === 'mcp__agentsnap__undo');
    assert.is(undos.length, 2, JSON.stringify(s.steps.map((st) => [st.step, st.tool, st.status])));
    const real = undos[1]!;
    assert.is(undos[0]!.operation, undefined, 'a dry run runs no operation');
    assert.is(real.operation?.kind, 'undo');
    assert.equal(real.changed, []);
    const before = s.steps.find((st) => st.step === bad)!;
    assert.equal(files(treeFiles(repo, real.post!)), { 'a.txt': 'one\n', 'hello.txt': 'hello\n' });
    assert.equal(files(treeFiles(repo, real.post!)), files(treeFiles(repo, before.pre!)));
    const events = readJournal(path.join(repo.dir, '.git', 'agentsnap', 'sessions', id, 'journal.jsonl')).events as unknown as Record<
      string,
      unknown
    >[];
    assert.is(events.find((e) => e.type === 'op.start')?.byStep, real.step);
    const next = s.steps.find((st) => st.step > real.step && st.tool === 'Bash')!;
    assert.equal(next.changedBefore, []);
    assert.equal(
      next.changed.map((c) => [c.change, c.path]),
      [['M', 'a.txt']],
    );
    assert.equal(files(worktreeFiles(repo)), { 'a.txt': 'fixed\n', 'hello.txt': 'hello\n' }, 'sed found the restored "one"');
  } finally {
    await stub.close();
    repo.cleanup();
  }
});

/** The text of the newest functionResponse a Gemini API request sends back. */
function lastGeminiOutput(body: Record<string, unknown>): string {
  const contents = Array.isArray(body.contents)
    ? (body.contents as { parts?: { functionResponse?: { response?: { output?: unknown } } }[] }[])
    : [];
  for (const c of [...contents].reverse()) {
    const r = c.parts?.find((p) => p.functionResponse)?.functionResponse?.response?.output;
    if (r !== undefined) return typeof r === 'string' ? r : JSON.stringify(r);
  }
  return '';
}

test('gemini under wrap --mcp: list_steps, undo dry run, undo through MCP (mcp_agentsnap_*); exact bytes back, journaled as the undo call, the next command builds on the restored state', async () => {
  if (!gemini) return;
  const repo: TempRepo = tempRepo({ files: { 'a.txt': 'one\n' } });
  const settingsText = '{"security":{"auth":{"selectedType":"gemini-api-key"}}}\n';
  fs.mkdirSync(path.join(repo.home, '.gemini'), { recursive: true });
  fs.writeFileSync(path.join(repo.home, '.gemini', 'settings.json'), settingsText);
  const seen: Record<string, string> = {};
  let bad = 0;
  const script: ScriptStep[] = [
    { tools: [{ name: 'write_file', input: { file_path: 'hello.txt', content: 'hello\n' } }] },
    { tools: [{ name: 'run_shell_command', input: { command: 'echo broken > a.txt' } }] },
    { tools: [{ name: 'mcp_agentsnap_list_steps', input: {} }] },
    (body) => {
      seen.list = lastGeminiOutput(body);
      bad = Number(/^(\d+)  run_shell_command  \[done\]  \$ echo broken/m.exec(seen.list)?.[1] ?? 0);
      return { tools: [{ name: 'mcp_agentsnap_undo', input: { step: bad } }] };
    },
    (body) => {
      seen.dry = lastGeminiOutput(body);
      return { tools: [{ name: 'mcp_agentsnap_undo', input: { step: bad, dry_run: false } }] };
    },
    (body) => {
      seen.undo = lastGeminiOutput(body);
      return { tools: [{ name: 'run_shell_command', input: { command: "sed -i 's/one/fixed/' a.txt" } }] };
    },
    { text: 'All done.' },
  ];
  const stub = await startGeminiStub(script);
  try {
    const env = { GEMINI_API_KEY: 'e2e-test-key-not-real', GOOGLE_GEMINI_BASE_URL: stub.url, GEMINI_CLI_TRUST_WORKSPACE: 'true' };
    const res = await cliProcess(repo, ['wrap', '--mcp', '--', gemini, '-p', 'Make the changes.', '--yolo', '-m', 'gemini-2.5-flash'], {
      env,
      timeoutMs: 180_000,
    });
    assert.is(res.code, 0, res.stderr);
    assert.match(res.stdout, 'All done.');
    assert.match(res.stderr, 'MCP server agentsnap offered');
    const id = /started session (\S+)/.exec(res.stderr)?.[1] as string;

    assert.ok(bad > 0, `list_steps named the command: ${seen.list}`);
    assert.match(seen.dry ?? '', new RegExp(`Dry run: undo ${bad} would put the worktree back to before step ${bad}`));
    assert.match(seen.undo ?? '', new RegExp(`Undone: steps? ${bad}`));
    assert.match(seen.undo ?? '', /conversation still contains the undone tool calls/);

    const s = loadSession(await openRepo(repo.dir, { env: repo.env }), id);
    const undos = s.steps.filter((st) => st.tool === 'mcp_agentsnap_undo');
    assert.is(undos.length, 2, JSON.stringify(s.steps.map((st) => [st.step, st.tool, st.status])));
    const real = undos[1]!;
    assert.is(real.operation?.kind, 'undo');
    assert.equal(real.changed, []);
    const before = s.steps.find((st) => st.step === bad)!;
    assert.equal(files(treeFiles(repo, real.post!)), { 'a.txt': 'one\n', 'hello.txt': 'hello\n' });
    assert.equal(files(treeFiles(repo, real.post!)), files(treeFiles(repo, before.pre!)));
    const events = readJournal(path.join(repo.dir, '.git', 'agentsnap', 'sessions', id, 'journal.jsonl')).events as unknown as Record<
      string,
      unknown
    >[];
    assert.is(events.find((e) => e.type === 'op.start')?.byStep, real.step);
    const next = s.steps.find((st) => st.step > real.step && st.tool === 'run_shell_command')!;
    assert.equal(next.changedBefore, []);
    assert.equal(
      next.changed.map((c) => [c.change, c.path]),
      [['M', 'a.txt']],
    );
    assert.equal(files(worktreeFiles(repo)), { 'a.txt': 'fixed\n', 'hello.txt': 'hello\n' });
    // The user's settings as they were: the server was only in the run's overlay.
    assert.is(fs.readFileSync(path.join(repo.home, '.gemini', 'settings.json'), 'utf8'), settingsText);
  } finally {
    await stub.close();
    repo.cleanup();
  }
});

test.run();
