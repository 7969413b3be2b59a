import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cli, tempRepo } from './helpers.js';

test('init claude merges hooks into .claude/settings.local.json idempotently, keeps it uncommitted, and --remove restores the file', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const mine = { permissions: { allow: ['Bash(ls)'] }, hooks: { PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: 'my-check' }] }] } };
    const original = `${JSON.stringify(mine, null, 2)}\n`;
    repo.write('.claude/settings.local.json', original);
    const first = await cli(repo, ['init', 'claude']);
    assert.is(first.code, 0, first.stderr);
    const once = repo.read('.claude/settings.local.json').toString();
    const second = await cli(repo, ['init', 'claude']);
    assert.is(second.code, 0);
    assert.match(second.stderr, 'already has');
    assert.is(repo.read('.claude/settings.local.json').toString(), once, 'idempotent');
    const s = JSON.parse(once) as { permissions: unknown; hooks: Record<string, { matcher?: string; hooks: { command: string }[] }[]> };
    assert.equal(s.permissions, mine.permissions);
    assert.equal(Object.keys(s.hooks).sort(), ['PostToolUse', 'PostToolUseFailure', 'PreToolUse', 'SessionEnd']);
    assert.is(s.hooks.PreToolUse?.[0]?.hooks[0]?.command, 'my-check');
    assert.match(s.hooks.PreToolUse?.[1]?.hooks[0]?.command ?? '', 'agentsnap-hook claude PreToolUse');
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

test.run();
