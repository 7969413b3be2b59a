// `agentsnap mcp` (issue 18): a real MCP client of the SDK over stdio against the built CLI (bin/agentsnap.js →
// dist/cli.bundle.js → dist/mcp.bundle.js), in hermetic temp repositories.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { BIN, cli, cliProcess, sessionOf, step, tempRepo, worktreeFiles, type TempRepo } from './helpers.js';
import { journalEvents } from './snap-helpers.js';

interface ToolText {
  text: string;
  isError: boolean;
}

/** An MCP client connected to `agentsnap mcp` started in `cwd` (default: the worktree). */
async function connect(repo: TempRepo, opts: { cwd?: string; env?: Record<string, string>; args?: string[] } = {}): Promise<{ client: Client; call: (name: string, args?: Record<string, unknown>) => Promise<ToolText>; close: () => Promise<void> }> {
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
    assert.equal([...byName.keys()].sort(), ['bisect', 'check', 'diff', 'list_steps', 'redo', 'restore_file', 'search_history', 'show_step', 'undo'].sort());
    for (const name of ['list_steps', 'show_step', 'diff', 'search_history']) {
      assert.is(byName.get(name)!.annotations?.readOnlyHint, true, name);
      assert.is(byName.get(name)!.annotations?.destructiveHint, false, name);
    }
    for (const name of ['undo', 'redo', 'restore_file']) {
      assert.is(byName.get(name)!.annotations?.destructiveHint, true, name);
      assert.is(byName.get(name)!.annotations?.readOnlyHint, false, name);
    }
    const undo = byName.get('undo')!;
    assert.is(undo.inputSchema.type, 'object');
    assert.equal(Object.keys(undo.inputSchema.properties ?? {}).sort(), ['dry_run', 'force', 'step']);
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

test('list_steps, undo as a dry run (nothing changes), then undo: the worktree bytes as before the step, the journal shows it', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n', 'keep.bin': Buffer.from([0, 1, 2, 255]) } });
  try {
    await step(repo, () => repo.write('a.txt', 'two\n'), 'Edit');
    const before2 = worktreeFiles(repo);
    await step(repo, () => {
      repo.write('a.txt', 'three\n');
      repo.write('new/b.txt', 'bee\n', 0o755);
      repo.rm('keep.bin');
    }, 'Bash');
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
      assert.match(dry.text, /It would be REFUSED: these changes were made outside the recorded tool calls/);
      assert.match(dry.text, /M a\.txt \(since the last snapshot\)/);
      assert.match(dry.text, /force: true/);

      const res = await c.call('undo', { step: 1, dry_run: false });
      assert.is(res.isError, true);
      assert.match(res.text, /undo 1 would overwrite a change made outside the recorded tool calls/);
      assert.match(res.text, /a\.txt/);
      assert.match(res.text, /force: true/);
      assert.not.match(res.text, /--force/);
      assert.is(repo.read('a.txt').toString(), 'the user typed this\n', 'refused: the user\'s edit is untouched');

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

test.run();
