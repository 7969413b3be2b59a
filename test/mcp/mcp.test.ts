// `agentsnap mcp` (issue 18): a real MCP client of the SDK over stdio against the built CLI (bin/agentsnap.js →
// dist/cli.bundle.cjs → dist/mcp.bundle.js), in hermetic temp repositories.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  BIN,
  agentsnapOnPath,
  cli,
  cliProcess,
  runProcess,
  sessionOf,
  step,
  tempRepo,
  treeFiles,
  worktreeFiles,
  type TempRepo,
} from '../support/helpers.js';
import { journalEvents } from '../support/snap-helpers.js';
import { init } from '../../src/install/init.js';
import { loadSession } from '../../src/session/session.js';
import { openRepo } from '../../src/git/repo.js';
import { serverInfo } from '../../src/server/server.js';

interface ToolText {
  text: string;
  isError: boolean;
}

/** An MCP client connected to `agentsnap mcp` started in `cwd` (default: the worktree). */
async function connect(
  repo: TempRepo,
  opts: { cwd?: string; env?: Record<string, string>; args?: string[] } = {},
): Promise<{ client: Client; call: (name: string, args?: Record<string, unknown>) => Promise<ToolText>; close: () => Promise<void> }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'mcp', ...(opts.args ?? [])],
    cwd: opts.cwd ?? repo.dir,
    env: { ...(repo.env as Record<string, string>), ...(opts.env ?? {}) },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'agentsnap-test', version: '1.0.0' });
  await client.connect(transport);
  const call = async (name: string, args: Record<string, unknown> = {}): Promise<ToolText> => {
    const res = (await client.callTool({ name, arguments: args })) as { content: { type: string; text: string }[]; isError?: boolean };
    return { text: res.content.map((c) => c.text).join('\n'), isError: !!res.isError };
  };
  return { client, call, close: () => client.close() };
}

test('tools/list: every tool with its JSON schema, the read-only ones marked read-only, undo/redo/restore destructive', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  const c = await connect(repo);
  try {
    const { tools } = await c.client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    assert.equal(
      [...byName.keys()].sort(),
      [
        'bisect',
        'check',
        'diff',
        'list_operations',
        'list_steps',
        'redo',
        'restore_file',
        'search_history',
        'show_step',
        'undo',
        'undo_operation',
      ].sort(),
    );
    for (const name of ['list_steps', 'show_step', 'diff', 'search_history', 'list_operations']) {
      assert.is(byName.get(name)!.annotations?.readOnlyHint, true, name);
      assert.is(byName.get(name)!.annotations?.destructiveHint, false, name);
    }
    for (const name of ['undo', 'redo', 'restore_file', 'undo_operation']) {
      assert.is(byName.get(name)!.annotations?.destructiveHint, true, name);
      assert.is(byName.get(name)!.annotations?.readOnlyHint, false, name);
    }
    const undo = byName.get('undo')!;
    assert.is(undo.inputSchema.type, 'object');
    assert.equal(Object.keys(undo.inputSchema.properties ?? {}).sort(), ['dry_run', 'exact', 'force', 'merge', 'step']);
    assert.is((undo.inputSchema.properties as Record<string, { default?: unknown }>).dry_run!.default, true);
    assert.match(undo.description ?? '', /dry_run/);
    assert.match(undo.description ?? '', /conversation still holds the undone calls/);
    assert.equal(byName.get('restore_file')!.inputSchema.required, ['step', 'paths']);
    // check takes no command: its command is the user's git config.
    assert.not.ok('command' in (byName.get('check')!.inputSchema.properties ?? {}));
    assert.not.ok('run' in (byName.get('check')!.inputSchema.properties ?? {}));
  } finally {
    await c.close();
    repo.cleanup();
  }
});

test("list_operations names a revert; undo_operation dry-runs it, then takes it back: the reverted change is back, the user's edit kept", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n', 'mine.txt': 'mine\n' } });
  try {
    await step(repo, () => repo.write('a.txt', 'two\n'), 'Edit');
    await step(repo, () => repo.write('b.txt', 'bee\n'), 'Write');
    const reverted = await cli(repo, ['revert', '1']);
    assert.is(reverted.code, 0, reverted.stderr);
    assert.is(repo.read('a.txt').toString(), 'one\n');
    repo.write('mine.txt', 'mine, edited by the user\n');
    const c = await connect(repo);
    try {
      const list = await c.call('list_operations');
      assert.is(list.isError, false, list.text);
      assert.match(list.text, /^1  revert  revert step 1  — 1 file  \[done\]$/m);

      const dry = await c.call('undo_operation');
      assert.is(dry.isError, false, dry.text);
      assert.match(dry.text, /^Dry run: would take back operation 1 \(revert step 1\)\. Nothing was changed\./);
      assert.match(dry.text, /M a\.txt \(would be modified\)/);
      assert.match(dry.text, /dry_run: false/);
      assert.is(repo.read('a.txt').toString(), 'one\n', 'a dry run changes nothing');

      const done = await c.call('undo_operation', { id: '1', dry_run: false });
      assert.is(done.isError, false, done.text);
      assert.match(done.text, /^Taken back \(operation 2\): operation 1 \(revert step 1\)\./);
      assert.is(repo.read('a.txt').toString(), 'two\n', "step 1's change is back");
      assert.is(repo.read('b.txt').toString(), 'bee\n');
      assert.is(repo.read('mine.txt').toString(), 'mine, edited by the user\n', "the user's edit is kept");

      const after = await c.call('list_operations');
      assert.match(after.text, /^1  revert  revert step 1  — 1 file  \[taken back by 2\]$/m);
      assert.match(after.text, /^2  op-undo  /m);
      const unknown = await c.call('undo_operation', { id: '9' });
      assert.is(unknown.isError, true);
      assert.match(unknown.text, /no operation "9"/);
    } finally {
      await c.close();
    }
  } finally {
    repo.cleanup();
  }
});

test('list_steps, undo as a dry run (nothing changes), then undo: the worktree bytes as before the step, the journal shows it', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n', 'keep.bin': Buffer.from([0, 1, 2, 255]) } });
  try {
    await step(repo, () => repo.write('a.txt', 'two\n'), 'Edit');
    const before2 = worktreeFiles(repo);
    await step(
      repo,
      () => {
        repo.write('a.txt', 'three\n');
        repo.write('new/b.txt', 'bee\n', 0o755);
        repo.rm('keep.bin');
      },
      'Bash',
    );
    await step(repo, () => repo.write('c.txt', 'sea\n'), 'Write');
    const after = worktreeFiles(repo);
    const c = await connect(repo);
    try {
      const list = await c.call('list_steps');
      assert.is(list.isError, false, list.text);
      assert.match(list.text, /^1  Edit  \[done\].*M a\.txt \+1 -1/m);
      assert.match(list.text, /^2  Bash  \[done\].*A new\/b\.txt/m);
      assert.match(list.text, /^3  Write  \[done\].*A c\.txt/m);

      const dry = await c.call('undo', { step: 2 });
      assert.is(dry.isError, false, dry.text);
      assert.match(dry.text, /Dry run: undo 2 would put the worktree back to before step 2, undoing steps 2-3/);
      assert.match(dry.text, /M a\.txt \(would be modified\)/);
      assert.match(dry.text, /D new\/b\.txt \(would be deleted\)/);
      assert.match(dry.text, /A keep\.bin \(would be added\)/);
      assert.match(dry.text, /dry_run: false/);
      assert.equal(worktreeFiles(repo), after, 'a dry run changes nothing');

      const res = await c.call('undo', { step: 2, dry_run: false });
      assert.is(res.isError, false, res.text);
      assert.match(res.text, /Undone: steps 2-3 \(operation 1\)/);
      assert.match(res.text, /D c\.txt \(deleted\)/);
      assert.match(res.text, /conversation still contains the undone tool calls/);
      assert.equal(worktreeFiles(repo), before2, 'exactly the bytes (and modes) before step 2');

      const id = sessionOf(repo);
      const ev = journalEvents(repo, id);
      const start = ev.find((e) => e.type === 'op.start') as Record<string, unknown>;
      assert.is(start.kind, 'undo');
      assert.equal(start.target, { when: 'before', step: 2 });
      assert.equal(start.undoes, [2, 3]);
      assert.ok(ev.some((e) => e.type === 'op.done' && e.status === 'done'));
      assert.not.ok('byStep' in start, 'no open call asked for it here');

      const again = await c.call('list_steps');
      assert.match(again.text, /^2  Bash  \[done, undone\]/m);
      assert.match(again.text, /Undone: steps 2-3/);
      // The CLI sees the same.
      const log = await cli(repo, ['status', '--json']);
      assert.equal((JSON.parse(log.stdout) as { undone: number[] }).undone, [2, 3]);

      // redo: a dry run, then for real.
      const redoDry = await c.call('redo');
      assert.match(redoDry.text, /Dry run: redo would take back operation 1/);
      assert.equal(worktreeFiles(repo), before2);
      const redo = await c.call('redo', { dry_run: false });
      assert.is(redo.isError, false, redo.text);
      assert.match(redo.text, /steps 2-3 are back/);
      assert.equal(worktreeFiles(repo), after);
    } finally {
      await c.close();
    }
  } finally {
    repo.cleanup();
  }
});

test('a refusal (the user edited the file meanwhile) comes back as text with the reason and force; nothing changes; force goes ahead', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    await step(repo, () => repo.write('a.txt', 'agent\n'), 'Edit');
    repo.write('a.txt', 'the user typed this\n');
    const c = await connect(repo);
    try {
      const dry = await c.call('undo', { step: 1 });
      assert.is(dry.isError, false, dry.text);
      assert.match(dry.text, /It would be REFUSED: changed both by the agent and by the user since/);
      assert.match(dry.text, /M a\.txt: by step 1 and by the user \(since the last snapshot\)/);
      assert.match(dry.text, /force: true/);

      const res = await c.call('undo', { step: 1, dry_run: false });
      assert.is(res.isError, true);
      assert.match(res.text, /undo 1 would take back the agent's changes to a path you changed too/);
      assert.match(res.text, /merge: true/);
      assert.match(res.text, /a\.txt/);
      assert.match(res.text, /force: true/);
      assert.not.match(res.text, /--force/);
      assert.is(repo.read('a.txt').toString(), 'the user typed this\n', "refused: the user's edit is untouched");

      const forced = await c.call('undo', { step: 1, dry_run: false, force: true });
      assert.is(forced.isError, false, forced.text);
      assert.match(forced.text, /Overwritten \(force\), kept in the safety snapshot/);
      assert.match(forced.text, /refs\/agentsnap\/sessions\/.+\/ops\/1/);
      assert.is(repo.read('a.txt').toString(), 'one\n');
    } finally {
      await c.close();
    }
  } finally {
    repo.cleanup();
  }
});

test('errors are tool errors with message and hint, and the server keeps answering: bad arguments, no session, no check configured', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const c = await connect(repo);
    try {
      const none = await c.call('list_steps');
      assert.is(none.isError, true);
      assert.match(none.text, /no agentsnap session in this worktree/);
      assert.match(none.text, /hint: /);
      await step(repo, () => repo.write('a.txt', 'two\n'));
      const cmd = await c.call('check', { command: 'touch /tmp/pwned' });
      assert.is(cmd.isError, true);
      assert.match(cmd.text, /check has no argument "command"/);
      const unset = await c.call('check');
      assert.is(unset.isError, true);
      assert.match(unset.text, /no check command is configured/);
      assert.match(unset.text, /git config agentsnap\.check/);
      const bad = await c.call('undo', { step: 'two' });
      assert.is(bad.isError, true);
      assert.match(bad.text, /step must be a whole number/);
      const outside = await c.call('restore_file', { step: 1, paths: ['../outside.txt'] });
      assert.is(outside.isError, true);
      assert.match(outside.text, /outside the worktree/);
      const far = await c.call('show_step', { step: 9 });
      assert.is(far.isError, true);
      assert.match(far.text, /no step 9/);
      const unknown = await c.call('rm_rf');
      assert.is(unknown.isError, true);
      // Still serving.
      const ok = await c.call('show_step', { step: 1 });
      assert.is(ok.isError, false, ok.text);
      assert.match(ok.text, /^step 1  Bash  \[done\]/);
      assert.match(ok.text, /-one\n\+two/);
    } finally {
      await c.close();
    }
  } finally {
    repo.cleanup();
  }
});

test('check runs git config agentsnap.check on a recorded state; show_step, diff, search_history and restore_file', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n', 'b.txt': 'bee\n' } });
  try {
    await step(repo, () => repo.write('a.txt', 'two\n'), 'Edit');
    await step(repo, () => repo.write('b.txt', 'secret word: zebra\n'), 'Write');
    assert.is((await cli(repo, ['snap', '-m', 'notes about the zebra'])).code, 0);
    repo.git(['config', 'agentsnap.check', 'grep -q two a.txt']);
    // Started in a subdirectory: paths are still the worktree root's.
    repo.write('sub/x.txt', 'x\n');
    const c = await connect(repo, { cwd: path.join(repo.dir, 'sub') });
    try {
      const chk = await c.call('check', { step: 0 });
      assert.is(chk.isError, false, chk.text);
      assert.match(chk.text, /state after step 0: fail \(exit 1; `grep -q two a\.txt`/);
      const chk2 = await c.call('check');
      assert.match(chk2.text, /state after step 3: pass/);
      const d = await c.call('diff', { from: '0', to: '1' });
      assert.match(d.text, /\+two/);
      const found = await c.call('search_history', { text: 'ZEBRA' });
      assert.is(found.isError, false, found.text);
      assert.match(found.text, /^3  checkpoint  \[done\]/m);
      assert.not.match(found.text, /^[12] /m);
      const r = await c.call('restore_file', { step: 1, paths: ['a.txt'], dry_run: false });
      assert.is(r.isError, false, r.text);
      assert.match(r.text, /M a\.txt \(modified\)/);
      assert.is(repo.read('a.txt').toString(), 'one\n');
      assert.is(repo.read('b.txt').toString(), 'secret word: zebra\n');
    } finally {
      await c.close();
    }
  } finally {
    repo.cleanup();
  }
});

test('outside a git worktree the server does not start: an error on stderr, exit 1', async () => {
  const repo = tempRepo({ noInit: true });
  try {
    const res = await cliProcess(repo, ['mcp']);
    assert.is(res.code, 1, res.stderr);
    assert.match(res.stderr, /not a git repository|no git repository/i);
  } finally {
    repo.cleanup();
  }
});

/** A Claude Code transcript as the hooks see it: each call's assistant line before its pre, its result before its post. */
class Transcript {
  readonly file: string;
  private clock = Date.now();
  constructor(repo: TempRepo, name: string) {
    this.file = path.join(repo.home, '.claude', 'projects', 'p', `${name}.jsonl`);
    fs.mkdirSync(path.dirname(this.file), { recursive: true });
    fs.writeFileSync(
      this.file,
      `${JSON.stringify({ type: 'user', uuid: 'u-0', timestamp: this.time(), message: { role: 'user', content: 'go' } })}\n`,
    );
  }
  private time(): string {
    this.clock += 1000;
    return new Date(this.clock).toISOString();
  }
  use(id: string, name: string, input: unknown): void {
    fs.appendFileSync(
      this.file,
      `${JSON.stringify({ type: 'assistant', uuid: `a-${id}`, timestamp: this.time(), version: '2.1.332', message: { id: `msg-${id}`, role: 'assistant', model: 'claude-test-1', content: [{ type: 'tool_use', id, name, input }] } })}\n`,
    );
  }
  result(id: string, content: unknown): void {
    fs.appendFileSync(
      this.file,
      `${JSON.stringify({ type: 'user', uuid: `r-${id}`, timestamp: this.time(), message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content }] } })}\n`,
    );
  }
}

const show = (m: Map<string, { mode: string; content: Buffer }>) =>
  Object.fromEntries([...m].map(([k, v]) => [k, `${v.mode} ${v.content.toString('utf8')}`]));

type HookRunner = (event: string, payload: Record<string, unknown>) => Promise<void>;

/** One tool call as Claude Code makes it: transcript line, PreToolUse hook, the tool, its result, PostToolUse hook. */
async function agentCall(
  tr: Transcript,
  hook: HookRunner,
  id: string,
  tool: string,
  input: Record<string, unknown>,
  run: () => Promise<unknown>,
): Promise<unknown> {
  const common = { session_id: 'cc-mcp', transcript_path: tr.file, tool_name: tool, tool_use_id: id, tool_input: input };
  tr.use(id, tool, input);
  await hook('PreToolUse', common);
  const out = await run();
  tr.result(id, out);
  await hook('PostToolUse', { ...common, tool_response: out });
  return out;
}

/** Hooks as `wrap` injects them (`agentsnap hook claude <event> --wrapped`), each a process on the Node path. */
function wrappedHooks(repo: TempRepo, env: Record<string, string>): HookRunner {
  return async (event, payload) => {
    const res = await cliProcess(repo, ['hook', 'claude', event, '--wrapped'], {
      env,
      input: JSON.stringify({ hook_event_name: event, cwd: repo.dir, ...payload }),
    });
    assert.is(res.code, 0, res.stderr);
    assert.is(res.stderr, '', 'no warning');
  };
}

/** The hook commands `init claude` wrote, run through /bin/sh as Claude Code runs them. */
function initHooks(repo: TempRepo, settingsFile: string, env: NodeJS.ProcessEnv): HookRunner {
  const settings = JSON.parse(fs.readFileSync(settingsFile, 'utf8')) as { hooks: Record<string, { hooks: { command: string }[] }[]> };
  return async (event, payload) => {
    const command = settings.hooks[event]?.[0]?.hooks[0]?.command as string;
    const res = await runProcess('/bin/sh', ['-c', command], {
      cwd: repo.dir,
      env,
      input: JSON.stringify({ hook_event_name: event, cwd: repo.dir, ...payload }),
    });
    assert.is(res.code, 0, res.stderr);
    assert.is(res.stderr, '', 'no warning');
  };
}

/**
 * The agent's own undo through MCP, inside one of its hooked calls: Write (step a), list_steps (a+1), undo to before
 * the Write (a+2: pre hook, the MCP undo, post hook), then an Edit building on the restored state (a+3).
 */
async function undoInsideOwnCall(
  repo: TempRepo,
  hook: HookRunner,
  mcp: Awaited<ReturnType<typeof connect>>,
  tr: Transcript,
  id: () => string,
) {
  // init's own files (.claude/, excluded by .git/info/exclude) are in no snapshot.
  const files = () => worktreeFiles(repo, (rel) => rel.startsWith('.claude'));
  const start = files();
  const write = { file_path: path.join(repo.dir, 'a.txt'), content: 'agent wrote this\n' };
  await agentCall(tr, hook, 'toolu_w', 'Write', write, async () => {
    repo.write('a.txt', write.content);
    repo.write('b.txt', 'new\n');
    return 'ok';
  });
  const listed = (await agentCall(tr, hook, 'toolu_l', 'mcp__agentsnap__list_steps', {}, () => mcp.call('list_steps'))) as ToolText;
  assert.is(listed.isError, false, listed.text);
  const s0 = loadSession(await openRepo(repo.dir, { env: repo.env }), id());
  const w = s0.steps.find((x) => x.toolUseId === 'toolu_w')!;
  assert.match(listed.text, new RegExp(`^${w.step}  Write  \\[done\\].*M a\\.txt`, 'm'));
  const undoInput = { step: w.step, dry_run: false };
  const undone = (await agentCall(tr, hook, 'toolu_u', 'mcp__agentsnap__undo', undoInput, () => mcp.call('undo', undoInput))) as ToolText;
  assert.is(undone.isError, false, undone.text);
  assert.match(undone.text, new RegExp(`Undone: steps ${w.step}-${w.step + 1} \\(operation 1\\)`));
  assert.match(undone.text, /M a\.txt \(modified\)/);
  assert.match(undone.text, /D b\.txt \(deleted\)/);
  assert.match(undone.text, /conversation still contains the undone tool calls/);
  assert.equal(files(), start, 'the worktree exactly as before the Write');

  const s = loadSession(await openRepo(repo.dir, { env: repo.env }), id());
  const u = s.steps.find((x) => x.toolUseId === 'toolu_u')!;
  assert.is(u.step, w.step + 2);
  assert.is(u.tool, 'mcp__agentsnap__undo');
  assert.is(u.status, 'done');
  assert.equal(u.operation?.op, 1);
  assert.is(u.operation?.kind, 'undo');
  assert.equal(u.changed, [], "the restore is the operation's, not the call's own edit");
  assert.equal(show(treeFiles(repo, u.post!)), show(start), 'its post is the restored state');
  const ev = journalEvents(repo, id());
  const opStart = ev.find((e) => e.type === 'op.start') as Record<string, unknown>;
  assert.is(opStart.byStep, u.step);
  assert.equal(opStart.undoes, [w.step, w.step + 1]);
  const order = ev
    .filter((e) => ['step.pre', 'step.post', 'op.start', 'op.done'].includes(e.type as string) && (e.step === u.step || e.op === 1))
    .map((e) => e.type);
  assert.equal(order, ['step.pre', 'op.start', 'op.done', 'step.post'], 'the operation inside the call');

  // The agent's next call builds on the restored state: nothing outside tool calls before it, only its own change.
  const edit = { file_path: path.join(repo.dir, 'a.txt'), old_string: 'one', new_string: 'uno' };
  await agentCall(tr, hook, 'toolu_e', 'Edit', edit, async () => {
    assert.is(repo.read('a.txt').toString(), 'one\n', 'the Edit reads the restored file');
    repo.write('a.txt', 'uno\n');
    return 'ok';
  });
  const s2 = loadSession(await openRepo(repo.dir, { env: repo.env }), id());
  const e = s2.steps.find((x) => x.toolUseId === 'toolu_e')!;
  assert.equal(e.changedBefore, []);
  assert.equal(
    e.changed.map((c) => [c.change, c.path]),
    [['M', 'a.txt']],
  );
  assert.equal(treeFiles(repo, e.pre!), start);
  const st = JSON.parse((await cli(repo, ['status', '--json'])).stdout) as { undone: number[] };
  assert.equal(st.undone, [w.step, w.step + 1]);

  // A bare undo takes back the Edit, then skips the call that ran the undo (redo is what takes that back).
  const u1 = await cli(repo, ['undo', '--json']);
  assert.is(u1.code, 0, u1.stderr);
  assert.is((JSON.parse(u1.stdout) as { files: { target: { step: number } } }).files.target.step, e.step);
  assert.equal(files(), start);
  const u2 = await cli(repo, ['undo', '--json', '--dry-run']);
  if (w.step > 1) {
    assert.is(u2.code, 0, u2.stderr);
    assert.ok((JSON.parse(u2.stdout) as { files: { target: { step: number } } }).files.target.step < w.step, u2.stdout);
  } else {
    // Nothing before the Write: the undo call is not picked (it would bring the undone Write back).
    assert.is(u2.code, 1, u2.stdout);
    assert.match(u2.stdout, /every step is undone, or ran an undo, redo or restore itself/);
  }
  return { write: w, undo: u, edit: e };
}

test('the agent undoes through MCP inside its own hooked call (wrap hooks, Node path): the call is journaled as the undo, the undone steps marked, the next call builds on the restored state', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const res = await cli(repo, ['snap', '--json']);
    assert.is(res.code, 0, res.stderr);
    const id = (JSON.parse(res.stdout) as { session: string }).session;
    const env = { AGENTSNAP_SESSION: id, AGENTSNAP_WORKTREE: repo.dir };
    // Claude Code starts its MCP servers with its own environment: wrap's variables name the session.
    const mcp = await connect(repo, { env });
    try {
      await undoInsideOwnCall(repo, wrappedHooks(repo, env), mcp, new Transcript(repo, 'wrapped'), () => id);
    } finally {
      await mcp.close();
    }
  } finally {
    repo.cleanup();
  }
});

test('the same through init hooks answered by a background server that stays up: no lock is held while the tool runs (the MCP undo does not wait), the session found as the most recent', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  const env = { ...repo.env, AGENTSNAP_SERVER: 'on', AGENTSNAP_SERVER_TRACE: '1', PATH: agentsnapOnPath(repo.base) };
  try {
    const initRes = await init({ agent: 'claude', cwd: repo.dir, env });
    const started = await cliProcess(repo, ['server', 'start'], { env });
    assert.is(started.code, 0, started.stderr);
    // A lock held by the server would make the undo wait for it, then fail Busy: a short timeout (5 s, nothing else contends here) tells at once.
    repo.git(['config', 'agentsnap.lockTimeout', '5000']);
    const mcp = await connect(repo, { env: { AGENTSNAP_SERVER: 'on' } });
    try {
      const id = () => sessionOf(repo);
      await undoInsideOwnCall(repo, initHooks(repo, initRes.file, env), mcp, new Transcript(repo, 'init'), id);
      assert.ok(serverInfo(await openRepo(repo.dir, { env: repo.env })), 'the background server still runs');
      const trace = fs.readFileSync(path.join(repo.dir, '.git', 'agentsnap', 'run', 'main', 'server.log'), 'utf8');
      assert.ok((trace.match(/call \d+: hook claude PreToolUse\n/g) ?? []).length >= 4, trace);
    } finally {
      await mcp.close();
    }
  } finally {
    await cliProcess(repo, ['server', 'stop'], { env });
    repo.cleanup();
  }
});

test.run();
