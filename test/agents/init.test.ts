import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { agentsnapOnPath, cli, tempRepo } from '../support/helpers.js';
import { CLAUDE_READ_ONLY_TOOLS, CLAUDE_TOOL_MATCHER } from '../../src/agents/claude.js';

test('init claude merges hooks into .claude/settings.local.json idempotently, keeps it uncommitted, and --remove restores the file', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const mine = {
      permissions: { allow: ['Bash(ls)'] },
      hooks: { PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: 'my-check' }] }] },
    };
    const original = `${JSON.stringify(mine, null, 2)}\n`;
    repo.write('.claude/settings.local.json', original);
    // agentsnap-hook on PATH, as after a global install (without it: test/project/install.test.ts).
    const installed = { env: { PATH: agentsnapOnPath(repo.base) } };
    const first = await cli(repo, ['init', 'claude'], installed);
    assert.is(first.code, 0, first.stderr);
    const once = repo.read('.claude/settings.local.json').toString();
    const second = await cli(repo, ['init', 'claude'], installed);
    assert.is(second.code, 0);
    assert.match(second.stderr, 'already has');
    assert.is(repo.read('.claude/settings.local.json').toString(), once, 'idempotent');
    const s = JSON.parse(once) as { permissions: unknown; hooks: Record<string, { matcher?: string; hooks: { command: string }[] }[]> };
    assert.equal(s.permissions, mine.permissions);
    assert.equal(Object.keys(s.hooks).sort(), ['PostToolUse', 'PostToolUseFailure', 'PreToolUse', 'SessionEnd']);
    assert.is(s.hooks.PreToolUse?.[0]?.hooks[0]?.command, 'my-check');
    assert.match(s.hooks.PreToolUse?.[1]?.hooks[0]?.command ?? '', 'agentsnap-hook claude PreToolUse');
    for (const ev of ['PreToolUse', 'PostToolUse', 'PostToolUseFailure']) assert.is(s.hooks[ev]?.at(-1)?.matcher, CLAUDE_TOOL_MATCHER);
    assert.is(s.hooks.SessionEnd?.[0]?.matcher, undefined);
    assert.is(repo.git(['status', '--porcelain']), '', 'the settings file is ignored, not committed');
    const removed = await cli(repo, ['init', 'claude', '--remove']);
    assert.is(removed.code, 0);
    assert.equal(JSON.parse(repo.read('.claude/settings.local.json').toString()), mine);
    const bad = await cli(repo, ['init', 'aider']);
    assert.is(bad.code, 2);
  } finally {
    repo.cleanup();
  }
});

test('the claude tool matcher leaves out exactly the read-only tools, as a JavaScript regex (how Claude Code reads it)', () => {
  const re = new RegExp(CLAUDE_TOOL_MATCHER);
  for (const t of CLAUDE_READ_ONLY_TOOLS) assert.not.ok(re.test(t), t);
  for (const t of [
    'Bash',
    'Edit',
    'Write',
    'MultiEdit',
    'NotebookEdit',
    'Task',
    'Agent',
    'BashOutput',
    'mcp__github__create_file',
    'mcp__x__Read',
    'ReadWrite',
    'Reader',
    'read',
    'FutureTool',
  ]) {
    assert.ok(re.test(t), t);
  }
});

test('init claude upgrades the `*` entries an older agentsnap wrote instead of adding a second set; --remove takes either', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const old = (ev: string) => [{ matcher: '*', hooks: [{ type: 'command', command: `'/x/agentsnap-hook' claude ${ev}` }] }];
    const before = {
      hooks: {
        PreToolUse: old('PreToolUse'),
        PostToolUse: old('PostToolUse'),
        PostToolUseFailure: old('PostToolUseFailure'),
        SessionEnd: [{ hooks: [{ type: 'command', command: `'/x/agentsnap-hook' claude SessionEnd` }] }],
      },
    };
    repo.write('.claude/settings.local.json', JSON.stringify(before));
    const res = await cli(repo, ['init', 'claude']);
    assert.is(res.code, 0, res.stderr);
    const s = JSON.parse(repo.read('.claude/settings.local.json').toString()) as {
      hooks: Record<string, { matcher?: string; hooks: { command: string }[] }[]>;
    };
    for (const ev of ['PreToolUse', 'PostToolUse', 'PostToolUseFailure']) {
      assert.is(s.hooks[ev]?.length, 1, ev);
      assert.is(s.hooks[ev]?.[0]?.matcher, CLAUDE_TOOL_MATCHER);
    }
    assert.is(s.hooks.SessionEnd?.length, 1);
    repo.write('.claude/settings.local.json', JSON.stringify(before));
    assert.is((await cli(repo, ['init', 'claude', '--remove'])).code, 0);
    assert.not.ok(repo.exists('.claude/settings.local.json'), "a file that held only agentsnap's hooks is removed (it was left as `{}`)");
  } finally {
    repo.cleanup();
  }
});

test.run();
