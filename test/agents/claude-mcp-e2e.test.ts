// End to end (issue 18): the real pinned Claude Code under `agentsnap wrap --mcp`, driven offline by a scripted
// model that reads its tool results: it lists its steps through agentsnap's MCP tools, dry-runs the undo of its
// Edit, undoes it, re-reads the file and edits it again from the restored state.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import path from 'node:path';
import { cliProcess, tempRepo, treeFiles, worktreeFiles } from '../support/helpers.js';
import { startMessagesStub, type MessagesRequest, type ScriptStep } from '../support/messages-stub.js';
import { claudeBinary, claudeStubEnv } from '../support/claude-code.js';
import { loadSession } from '../../src/session/session.js';
import { openRepo } from '../../src/git/repo.js';
import { readJournal } from '../../src/session/journal.js';

const claude = claudeBinary();

/** The text of the newest tool_result in the conversation (what the model just got back). */
function lastToolResult(req: MessagesRequest): string {
  for (const m of [...(req.messages ?? [])].reverse()) {
    if (m.role !== 'user' || !Array.isArray(m.content)) continue;
    for (const b of [...(m.content as { type: string; content?: unknown }[])].reverse()) {
      if (b.type !== 'tool_result') continue;
      const c = b.content;
      return typeof c === 'string'
        ? c
        : Array.isArray(c)
          ? (c as { text?: string }[]).map((x) => x.text ?? '').join('\n')
          : JSON.stringify(c);
    }
  }
  return '';
}

const files = (m: Map<string, { content: Buffer }>) => Object.fromEntries([...m].map(([p, v]) => [p, v.content.toString()]));

for (const server of ['off', 'on'] as const)
  test(`claude under wrap --mcp (server ${server}): list_steps, undo dry run, undo through MCP; exact bytes back, journaled as the undo call, the next calls build on the restored state`, async () => {
    if (!claude) return;
    const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
    const d = (rel: string) => path.join(repo.dir, rel);
    const seen: Record<string, string> = {};
    let editStep = 0;
    const script: ScriptStep[] = [
      { tools: [{ name: 'Write', input: { file_path: d('hello.txt'), content: 'hello\n' } }] },
      { tools: [{ name: 'Read', input: { file_path: d('a.txt') } }] },
      { tools: [{ name: 'Edit', input: { file_path: d('a.txt'), old_string: 'one', new_string: 'broken' } }] },
      // MCP tools are deferred behind ToolSearch (claude-code-hooks.md): the model loads them first.
      { tools: [{ name: 'ToolSearch', input: { query: 'select:mcp__agentsnap__list_steps,mcp__agentsnap__undo' } }] },
      { text: 'Let me see my steps.', tools: [{ name: 'mcp__agentsnap__list_steps', input: {} }] },
      (req) => {
        seen.list = lastToolResult(req);
        editStep = Number(/^(\d+)  Edit  \[done\]/m.exec(seen.list)?.[1] ?? 0);
        return { tools: [{ name: 'mcp__agentsnap__undo', input: { step: editStep } }] };
      },
      (req) => {
        seen.dry = lastToolResult(req);
        return { tools: [{ name: 'mcp__agentsnap__undo', input: { step: editStep, dry_run: false } }] };
      },
      (req) => {
        seen.undo = lastToolResult(req);
        return { tools: [{ name: 'Read', input: { file_path: d('a.txt') } }] };
      },
      (req) => {
        seen.reread = lastToolResult(req);
        return { tools: [{ name: 'Edit', input: { file_path: d('a.txt'), old_string: 'one', new_string: 'fixed' } }] };
      },
      (req) => {
        seen.edit = lastToolResult(req);
        return { text: 'All done.' };
      },
    ];
    const stub = await startMessagesStub(script);
    try {
      const env = {
        ...claudeStubEnv(stub.url),
        AGENTSNAP_SERVER: server,
      };
      const res = await cliProcess(repo, ['wrap', '--mcp', '--', claude, '-p', 'Make the changes.', '--dangerously-skip-permissions'], {
        env,
        timeoutMs: 180_000,
      });
      assert.is(res.code, 0, `${res.stderr}\n${res.stdout}`);
      assert.match(res.stdout, 'All done.');
      assert.not.match(res.stderr, 'warning');
      const id = /started session (\S+)/.exec(res.stderr)?.[1] as string;

      // What the model read back.
      assert.ok(editStep > 0, `list_steps named the Edit: ${seen.list}`);
      assert.match(seen.list ?? '', /Write  \[done\].*A hello\.txt/);
      assert.match(seen.dry ?? '', new RegExp(`Dry run: undo ${editStep} would put the worktree back to before step ${editStep}`));
      assert.match(seen.dry ?? '', /M a\.txt \(would be modified\)/);
      assert.match(seen.undo ?? '', new RegExp(`Undone: steps? ${editStep}`));
      assert.match(seen.undo ?? '', /M a\.txt \(modified\)/);
      assert.match(seen.undo ?? '', /conversation still contains the undone tool calls/);
      assert.match(seen.reread ?? '', /one/);
      assert.not.match(seen.edit ?? '', /error|modified since/i);

      const s = loadSession(await openRepo(repo.dir, { env: repo.env }), id);
      const byId = new Map(stub.toolUses.map((c) => [c.id, c]));
      const stepOf = (name: string, nth = 0) => s.steps.filter((st) => byId.get(st.toolUseId ?? '')?.name === name)[nth]!;
      const edit = stepOf('Edit');
      assert.is(edit.step, editStep);
      const undos = s.steps.filter((st) => st.tool === 'mcp__agentsnap__undo');
      assert.is(undos.length, 2, JSON.stringify(s.steps.map((st) => [st.step, st.tool, st.status])));
      const [dry, real] = undos as [(typeof undos)[0], (typeof undos)[0]];
      assert.is(dry.operation, undefined, 'a dry run runs no operation');
      assert.equal(real.operation?.kind, 'undo');
      assert.is(real.status, 'done');
      assert.equal(real.changed, [], "the restore is the operation's, not an edit of the call");
      // The state after the undo call: exactly the files before the Edit.
      assert.equal(files(treeFiles(repo, real.post!)), { 'a.txt': 'one\n', 'hello.txt': 'hello\n' });
      assert.equal(files(treeFiles(repo, real.post!)), files(treeFiles(repo, edit.pre!)));
      const events = readJournal(path.join(repo.dir, '.git', 'agentsnap', 'sessions', id, 'journal.jsonl')).events as unknown as Record<
        string,
        unknown
      >[];
      const start = events.find((e) => e.type === 'op.start')!;
      assert.is(start.byStep, real.step);
      assert.ok(
        (start.undoes as number[]).includes(editStep) && !(start.undoes as number[]).includes(real.step),
        JSON.stringify(start.undoes),
      );
      const at = (pred: (e: Record<string, unknown>) => boolean) => events.findIndex(pred);
      assert.ok(
        at((e) => e.type === 'step.pre' && e.step === real.step) < at((e) => e.type === 'op.start'),
        'the operation inside the call',
      );
      assert.ok(at((e) => e.type === 'op.done') < at((e) => e.type === 'step.post' && e.step === real.step));
      // The next calls build on the restored state.
      const fix = stepOf('Edit', 1);
      assert.equal(fix.changedBefore, []);
      assert.equal(files(treeFiles(repo, fix.pre!)), { 'a.txt': 'one\n', 'hello.txt': 'hello\n' });
      assert.equal(
        fix.changed.map((c) => [c.change, c.path]),
        [['M', 'a.txt']],
      );
      assert.equal(files(worktreeFiles(repo)), { 'a.txt': 'fixed\n', 'hello.txt': 'hello\n' });
      const st = JSON.parse((await cliProcess(repo, ['status', '--session', id, '--json'])).stdout) as { undone: number[] };
      assert.ok(st.undone.includes(editStep));
      const log = await cliProcess(repo, ['log', '--session', id]);
      assert.match(log.stdout, /mcp__agentsnap__undo/);
    } finally {
      await stub.close();
      repo.cleanup();
    }
  });

test.run();
