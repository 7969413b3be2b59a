// The agent's plan per step (issue 16): read from its plan tools' calls as the journal holds them, shown by
// `show N`, `log --json`, `replay`, and named by `undo N` when the undone steps had marked items done.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { agentsnapOnPath, cli, cliProcess, runProcess, tempRepo, type TempRepo } from '../support/helpers.js';
import { ADAPTERS } from '../../src/agents/registry.js';
import type { PlanItem } from '../../src/agents/adapter.js';
import { planLines } from '../../src/session/plan.js';
import { init } from '../../src/install/init.js';
import { openRepo } from '../../src/git/repo.js';
import { serverInfo } from '../../src/server/server.js';

async function wrappedSession(repo: TempRepo): Promise<{ id: string; env: Record<string, string> }> {
  const res = await cli(repo, ['snap', '--json']);
  assert.is(res.code, 0, res.stderr);
  const id = (JSON.parse(res.stdout) as { session: string }).session;
  return { id, env: { AGENTSNAP_SESSION: id, AGENTSNAP_WORKTREE: repo.dir } };
}

let calls = 0;
/** One hooked Claude Code call: pre, the work, post. */
async function call(
  repo: TempRepo,
  env: Record<string, string>,
  tool: string,
  input: unknown,
  work: () => void = () => undefined,
  response: unknown = {},
  cwd = repo.dir,
) {
  const common = { session_id: 'cc-plan', cwd, tool_name: tool, tool_use_id: `toolu_plan_${++calls}`, tool_input: input };
  const pre = await cliProcess(repo, ['hook', 'claude', 'PreToolUse', '--wrapped'], {
    env,
    input: JSON.stringify({ ...common, hook_event_name: 'PreToolUse' }),
  });
  assert.is(pre.code, 0, pre.stderr);
  work();
  const post = await cliProcess(repo, ['hook', 'claude', 'PostToolUse', '--wrapped'], {
    env,
    input: JSON.stringify({ ...common, hook_event_name: 'PostToolUse', tool_response: response }),
  });
  assert.is(post.code, 0, post.stderr);
}

const todos = (a: string, b: string) => ({
  todos: [
    { content: 'Write the parser', status: a, activeForm: 'Writing the parser' },
    { content: 'Add \u001b[31mtests\u001b[0m', status: b, activeForm: 'Adding tests' },
  ],
});

test('plan: show, log --json and replay give the plan as of each step; undo names the items the undone steps marked done', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const { id, env } = await wrappedSession(repo);
    await call(repo, env, 'TodoWrite', todos('in_progress', 'pending')); // step 2 (`snap` took step 1)
    await call(repo, env, 'Write', { file_path: path.join(repo.dir, 'parser.txt'), content: 'p\n' }, () => repo.write('parser.txt', 'p\n')); // 3
    await call(repo, env, 'TodoWrite', todos('completed', 'in_progress')); // 5
    await call(repo, env, 'Write', { file_path: path.join(repo.dir, 'test.txt'), content: 't\n' }, () => repo.write('test.txt', 't\n')); // 5
    await call(repo, env, 'TodoWrite', todos('completed', 'completed')); // 6

    const show2 = await cli(repo, ['show', '3', '--json', '--session', id]);
    assert.is(show2.code, 0, show2.stderr);
    const plan2 = (JSON.parse(show2.stdout) as { plan: { setAt: number; items: PlanItem[] } }).plan;
    assert.is(plan2.setAt, 2);
    assert.equal(
      plan2.items.map((t) => t.status),
      ['in_progress', 'pending'],
    );

    const show5 = await cli(repo, ['show', '5', '--session', id]);
    assert.is(show5.code, 0, show5.stderr);
    assert.match(show5.stdout, 'plan (as of this step, set by step 4):');
    assert.match(show5.stdout, '  - [x] Write the parser\n  - [~] Add [31mtests [0m');
    assert.not.match(show5.stdout, '\u001b', "the agent's escape sequences are not sent to the terminal");

    const log = await cli(repo, ['log', '--json', '--session', id]);
    const rows = JSON.parse(log.stdout) as { step: number; plan: { setAt: number } | null }[];
    assert.equal(
      rows.map((r) => r.plan?.setAt ?? null),
      [null, 2, 2, 4, 4, 6],
    );

    const replay = await cli(repo, ['replay', '--session', id]);
    assert.is(replay.code, 0, replay.stderr);
    assert.is((replay.stdout.match(/Plan after this step:/g) ?? []).length, 3, replay.stdout);

    // Undoing 5 and 6 takes back the tests (step 5) and the plan call that marked them done (step 6).
    const dry = await cli(repo, ['undo', '5', '--dry-run', '--session', id]);
    assert.match(dry.stdout, 'plan items the steps to undo had marked done');
    const undo = await cli(repo, ['undo', '5', '--session', id]);
    assert.is(undo.code, 0, undo.stderr);
    assert.match(undo.stdout, 'plan items the undone steps had marked done (the agent may still believe them done):\n  - [x] Add');
    assert.not.match(undo.stdout, 'Write the parser', "completed before step 5: not the undone steps' doing");
    const json = await cli(repo, ['redo', '--json', '--session', id]);
    assert.is(json.code, 0, json.stderr);
    const again = await cli(repo, ['undo', '5', '--json', '--session', id]);
    assert.equal(
      (JSON.parse(again.stdout) as { planUndone: PlanItem[] }).planUndone.map((t) => t.text),
      ['Add \u001b[31mtests\u001b[0m'],
    );
  } finally {
    repo.cleanup();
  }
});

test("plan: each agent's plan tools (Claude Code TodoWrite and TaskCreate/TaskUpdate, Codex update_plan, Gemini CLI write_todos)", () => {
  const claude = ADAPTERS.claude.nextPlan;
  assert.ok(claude);
  let plan: PlanItem[] = [];
  plan = claude(plan, 'TaskCreate', { subject: 'one', description: 'the first' }, 'Task #1 created successfully: one') ?? plan;
  plan = claude(plan, 'TaskCreate', { subject: 'two' }, { task: { id: '7', subject: 'two' } }) ?? plan;
  plan = claude(plan, 'TaskUpdate', { taskId: '1', status: 'completed' }, 'Updated task #1 status') ?? plan;
  assert.equal(plan, [
    { id: '1', text: 'one', status: 'completed' },
    { id: '7', text: 'two', status: 'pending' },
  ]);
  assert.equal(claude(plan, 'TaskUpdate', { taskId: '7', status: 'deleted' }, ''), [{ id: '1', text: 'one', status: 'completed' }]);
  assert.is(claude(plan, 'TaskUpdate', { taskId: '99', status: 'completed' }, ''), null, 'an unknown task changes nothing');
  assert.is(claude(plan, 'Write', { file_path: 'x' }, null), null);
  assert.equal(
    ADAPTERS.codex.nextPlan?.(
      [],
      'update_plan',
      {
        explanation: 'why',
        plan: [
          { step: 'Read the code', status: 'completed' },
          { step: 'Fix it', status: 'in_progress' },
        ],
      },
      null,
    ),
    [
      { text: 'Read the code', status: 'completed' },
      { text: 'Fix it', status: 'in_progress' },
    ],
  );
  assert.equal(ADAPTERS.gemini.nextPlan?.([], 'write_todos', { todos: [{ description: 'Plan', status: 'cancelled' }] }, null), [
    { text: 'Plan', status: 'cancelled' },
  ]);
  assert.is(ADAPTERS.gemini.nextPlan?.([], 'run_shell_command', { command: 'ls' }, null), null);
  assert.is(
    planLines([
      { text: 'Plan', status: 'cancelled' },
      { text: 'a\nb', status: 'pending' },
    ]),
    '- [-] Plan\n- [ ] a b',
  );
});

test("environment: show N and show --json give the directory of the call (when the agent left the session's), the agent and the command", async () => {
  const repo = tempRepo({ files: { 'sub/a.txt': 'one\n' } });
  try {
    const { id, env } = await wrappedSession(repo);
    await call(repo, env, 'Bash', { command: 'true' }); // step 2
    await call(repo, env, 'Bash', { command: 'true' }, () => undefined, {}, path.join(repo.dir, 'sub')); // step 3
    const two = JSON.parse((await cli(repo, ['show', '2', '--json', '--session', id])).stdout) as {
      environment: { cwd: string };
      cwd?: string;
    };
    const three = JSON.parse((await cli(repo, ['show', '3', '--json', '--session', id])).stdout) as {
      environment: { cwd: string };
      cwd?: string;
    };
    assert.is(two.cwd, undefined, "the session's own directory is not journaled per call");
    assert.is(three.cwd, path.join(repo.dir, 'sub'));
    assert.is(three.environment.cwd, path.join(repo.dir, 'sub'));
    assert.is(two.environment.cwd, JSON.parse((await cli(repo, ['show', '2', '--json', '--session', id])).stdout).environment.cwd);
    const text = await cli(repo, ['show', '3', '--session', id]);
    assert.match(text.stdout, `in ${path.join(repo.dir, 'sub')}`);
  } finally {
    repo.cleanup();
  }
});

test('environment: the names (never the values) of environment variables changed since the first call, per step; secrets never written', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const { id, env } = await wrappedSession(repo);
    const secret = 'hunter2-secret-value-9f3a';
    const secret2 = 'second-secret-value-77c1';
    const base = { ...env, API_TOKEN: secret, KEEP_ME: 'kept-value', PWD: repo.dir };
    await call(repo, base, 'Bash', { command: 'true' }); // step 2: the first call, the reference
    const changedEnv = { ...env, API_TOKEN: secret2, NEW_VAR: 'x', PWD: path.join(repo.dir, 'elsewhere') };
    await call(repo, changedEnv, 'Bash', { command: 'true' }); // 3: API_TOKEN changed, NEW_VAR added, KEEP_ME removed (PWD is the shell's)
    await call(repo, changedEnv, 'Bash', { command: 'true' }); // 4: as at 3
    await call(repo, base, 'Bash', { command: 'true' }); // 5: back as at the start

    type Env = { envChanged: { added: string[]; removed: string[]; changed: string[] } | null; envChangedAt: number | null };
    const showJson = async (n: number) => {
      const res = await cli(repo, ['show', String(n), '--json', '--session', id]);
      assert.is(res.code, 0, res.stderr);
      return JSON.parse(res.stdout) as { environment: Env; envChanged?: unknown };
    };
    assert.equal((await showJson(2)).environment.envChanged, null);
    const three = await showJson(3);
    assert.equal(three.environment.envChanged, { added: ['NEW_VAR'], removed: ['KEEP_ME'], changed: ['API_TOKEN'] });
    assert.is(three.environment.envChangedAt, 3);
    assert.equal((await showJson(4)).environment.envChanged, three.environment.envChanged, 'as of step 4: what step 3 saw');
    assert.is((await showJson(4)).environment.envChangedAt, 3);
    assert.equal((await showJson(5)).environment.envChanged, { added: [], removed: [], changed: [] });

    const text = await cli(repo, ['show', '3', '--session', id]);
    assert.match(text.stdout, 'environment since the first call: added NEW_VAR; removed KEEP_ME; changed API_TOKEN');
    assert.not.match((await cli(repo, ['show', '2', '--session', id])).stdout, 'environment since');

    const log = JSON.parse((await cli(repo, ['log', '--json', '--session', id])).stdout) as { step: number; envChanged?: unknown }[];
    assert.equal(
      log.map((r) => r.envChanged !== undefined),
      [false, false, true, false, true],
      'journaled only where it differs from the step before',
    );

    // The library API gives the same.
    const { show } = await import('../../src/index.js');
    const lib = await show({ cwd: repo.dir, env: repo.env as Record<string, string>, session: id, step: 4 });
    assert.equal(lib.environment.envChanged, three.environment.envChanged);

    // No value, in any file of the state dir or any object agentsnap wrote.
    const stateDir = path.join(repo.dir, '.git', 'agentsnap');
    const files = (fs.readdirSync(stateDir, { recursive: true }) as string[])
      .map((f) => path.join(stateDir, f))
      .filter((f) => fs.statSync(f).isFile());
    assert.ok(files.some((f) => f.endsWith('journal.jsonl')));
    for (const f of files) {
      const bytes = fs.readFileSync(f, 'latin1');
      for (const v of [secret, secret2, 'kept-value']) assert.not.ok(bytes.includes(v), `${v} in ${f}`);
    }
    const objects = repo.git(['cat-file', '--batch-all-objects', '--batch']);
    for (const v of [secret, secret2, 'kept-value']) assert.not.ok(objects.includes(v), `${v} in an object`);
  } finally {
    repo.cleanup();
  }
});

test("environment: the tools the agent had, from Claude Code's transcript (its api-request-shape lines), journaled when they change", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const { id, env } = await wrappedSession(repo);
    const file = path.join(repo.base, 'transcript.jsonl');
    const line = (v: unknown) => fs.appendFileSync(file, JSON.stringify(v) + '\n');
    const shape = (names: string[]) =>
      line({
        type: 'api-request-shape',
        sessionId: 's',
        shapeHash: names.join(),
        version: '2.1.332',
        shape: {
          system: [{ type: 'text', text: 'x'.repeat(5000) }],
          tools: names.map((name) => ({ name, description: `the ${name} tool`, input_schema: { type: 'object' } })),
        },
      });
    const claudeCall = async (toolUseId: string) => {
      line({
        type: 'assistant',
        uuid: `a-${toolUseId}`,
        version: '2.1.332',
        message: {
          id: `m-${toolUseId}`,
          role: 'assistant',
          model: 'claude-test-1',
          content: [{ type: 'tool_use', id: toolUseId, name: 'Bash', input: { command: 'true' } }],
        },
      });
      const common = {
        session_id: 'cc-tools',
        cwd: repo.dir,
        transcript_path: file,
        tool_name: 'Bash',
        tool_use_id: toolUseId,
        tool_input: { command: 'true' },
      };
      for (const ev of ['PreToolUse', 'PostToolUse']) {
        const r = await cliProcess(repo, ['hook', 'claude', ev, '--wrapped'], {
          env,
          input: JSON.stringify({ ...common, hook_event_name: ev, ...(ev === 'PostToolUse' ? { tool_response: {} } : {}) }),
        });
        assert.is(r.code, 0, r.stderr);
      }
      line({
        type: 'user',
        uuid: `r-${toolUseId}`,
        message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUseId, content: 'ok' }] },
      });
    };
    shape(['Bash', 'Read', 'Write']);
    await claudeCall('toolu_t1'); // step 2
    shape(['Bash', 'Read', 'Write']); // a new shape (the system prompt changed), the same tools
    await claudeCall('toolu_t2'); // 3
    shape(['Bash', 'Read', 'Write', 'mcp__db__query']);
    await claudeCall('toolu_t3'); // 4
    await claudeCall('toolu_t4'); // 5

    type Env = { tools: string[] | null; toolsAt: number | null };
    const envOf = async (n: number) =>
      (JSON.parse((await cli(repo, ['show', String(n), '--json', '--session', id])).stdout) as { environment: Env }).environment;
    assert.equal(await envOf(1), { ...(await envOf(1)), tools: null, toolsAt: null }, 'no call yet');
    assert.equal([(await envOf(2)).tools, (await envOf(2)).toolsAt], [['Bash', 'Read', 'Write'], 2]);
    assert.equal([(await envOf(3)).tools, (await envOf(3)).toolsAt], [['Bash', 'Read', 'Write'], 2], 'the same tools: nothing journaled');
    assert.equal([(await envOf(5)).tools, (await envOf(5)).toolsAt], [['Bash', 'Read', 'Write', 'mcp__db__query'], 4]);
    const log = JSON.parse((await cli(repo, ['log', '--json', '--session', id])).stdout) as { step: number; tools?: string[] }[];
    assert.equal(
      log.map((r) => r.tools ?? null),
      [null, ['Bash', 'Read', 'Write'], null, ['Bash', 'Read', 'Write', 'mcp__db__query'], null],
    );
    const text = await cli(repo, ['show', '4', '--session', id]);
    assert.match(text.stdout, 'tools (4, as of step 4): Bash, Read, Write, mcp__db__query');
    const journal = fs.readFileSync(path.join(repo.dir, '.git', 'agentsnap', 'sessions', id, 'journal.jsonl'), 'utf8');
    assert.not.match(journal, 'the Bash tool', 'names only, not the descriptions');
  } finally {
    repo.cleanup();
  }
});

test("environment: one environment seen through the Node hook and through the warm server's shell client is no change", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  const env = { ...repo.env, AGENTSNAP_SERVER: 'on', AGENTSNAP_SERVER_TRACE: '1', PATH: agentsnapOnPath(repo.base), SOME_SETTING: 'kept' };
  try {
    const initRes = await init({ agent: 'claude', cwd: repo.dir, env });
    const settings = JSON.parse(fs.readFileSync(initRes.file, 'utf8')) as { hooks: Record<string, { hooks: { command: string }[] }[]> };
    const hook = async (event: string, n: number) => {
      const payload = {
        hook_event_name: event,
        session_id: 'cc-paths',
        cwd: repo.dir,
        tool_name: 'Bash',
        tool_use_id: `toolu_p${n}`,
        tool_input: { command: 'true' },
        ...(event === 'PostToolUse' ? { tool_response: {} } : {}),
      };
      const r = await runProcess('/bin/sh', ['-c', settings.hooks[event]?.[0]?.hooks[0]?.command as string], {
        cwd: repo.dir,
        env,
        input: JSON.stringify(payload),
      });
      assert.is(r.code, 0, r.stderr);
    };
    // Call 1: no server yet, the Node hook (which starts one); calls 2 and 3: the shell client, answered by the server.
    await hook('PreToolUse', 1);
    await hook('PostToolUse', 1);
    const r = await openRepo(repo.dir, { env: repo.env });
    for (let i = 0; i < 600 && !serverInfo(r)?.ready; i++) await new Promise((res) => setTimeout(res, 50));
    if (!serverInfo(r)?.ready) assert.is((await cliProcess(repo, ['server', 'start'], { env })).code, 0);
    for (const n of [2, 3]) {
      await hook('PreToolUse', n);
      await hook('PostToolUse', n);
    }
    const trace = fs.readFileSync(path.join(repo.dir, '.git', 'agentsnap', 'run', 'main', 'server.log'), 'utf8');
    assert.is((trace.match(/call \d+: hook claude PreToolUse\n/g) ?? []).length, 2, trace);
    const id = (JSON.parse((await cli(repo, ['sessions', '--json'])).stdout) as { id: string }[])[0]?.id as string;
    const log = JSON.parse((await cli(repo, ['log', '--json', '--session', id])).stdout) as { step: number; envChanged?: unknown }[];
    assert.equal(
      log.map((x) => x.envChanged ?? null),
      [null, null, null],
      JSON.stringify(log.map((x) => x.envChanged)),
    );
  } finally {
    await cliProcess(repo, ['server', 'stop'], { env });
    repo.cleanup();
  }
});

test.run();
