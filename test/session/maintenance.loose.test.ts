// After a session through the warm server ends and its maintenance is done,
// no object is left loose that a pack already holds (issue 7's disk
// scenario: 200 calls through the hooks left 99-132 such objects, the store
// growing 2.06-2.57x the reference instead of 0.53x).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runProcess, sessionOf, tempRepo, type TempRepo } from '../support/helpers.js';
import { openRepo } from '../../src/git/repo.js';
import { startWorktreeServer } from '../../src/runtime/server-api.js';
import { runSnap } from '../../src/cli/main.js';
import { PACK_EVERY } from '../../src/session/maintenance.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLIENT = path.join(ROOT, 'bin', 'agentsnap-hook');
const JS = path.join(ROOT, 'bin', 'agentsnap.js');

function countObjects(repo: TempRepo): Record<string, number> {
  return Object.fromEntries(
    repo
      .git(['count-objects', '-v'])
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        const [k = '', v = ''] = l.split(': ');
        return [k, Number(v)];
      }),
  );
}

/** A Claude Code hook through the shell client, as `wrap` and init write it. */
function hook(repo: TempRepo, runDir: string, event: string, body: Record<string, unknown>) {
  const input = JSON.stringify({ session_id: 'agent-1', cwd: repo.dir, hook_event_name: event, ...body });
  return runProcess('/bin/sh', [CLIENT, '--run', runDir, '--exec', process.execPath, JS, 'claude', event], {
    cwd: repo.dir,
    env: { ...repo.env, AGENTSNAP_SERVER: 'on' },
    input,
  });
}

test('a session through the warm server, ended after a pack: no loose object is also in a pack (prune-packable 0)', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n', 'src/b.txt': 'b\n' } });
  const server = await startWorktreeServer(await openRepo(repo.dir, { env: { ...repo.env, AGENTSNAP_SERVER: 'on' } }), {
    hosted: true,
    snap: runSnap,
  });
  try {
    let packedAtLastCall = false;
    for (let i = 0; i < 2 * PACK_EVERY && !packedAtLastCall; i++) {
      const file = path.join(repo.dir, 'src', `f${i}.txt`);
      const id = `toolu_${i}`;
      const input = { file_path: file, content: `${i}\n` };
      const pre = await hook(repo, server.runDir, 'PreToolUse', { tool_name: 'Write', tool_input: input, tool_use_id: id });
      assert.is(pre.code, 0, pre.stderr);
      repo.write(`src/f${i}.txt`, `${i}\n`);
      // A stat that a later write could leave as it is (racy): the engine reads the file again at the next snapshot.
      // A timestamp ahead of the clock makes it racy whatever time the test takes.
      const ahead = new Date(Date.now() + 3600_000);
      fs.utimesSync(file, ahead, ahead);
      const post = await hook(repo, server.runDir, 'PostToolUse', {
        tool_name: 'Write',
        tool_input: input,
        tool_use_id: id,
        tool_response: { ok: true },
      });
      assert.is(post.code, 0, post.stderr);
      const state = JSON.parse(
        fs.readFileSync(path.join(repo.dir, '.git', 'agentsnap', 'sessions', sessionOf(repo), 'state.json'), 'utf8'),
      ) as { unpacked: number };
      packedAtLastCall = state.unpacked === 0;
    }
    assert.ok(packedAtLastCall, 'the session packed at a post');
    // The SessionEnd hook packs inline: its maintenance is done when it returns.
    const end = await hook(repo, server.runDir, 'SessionEnd', { transcript_path: '', reason: 'other' });
    assert.is(end.code, 0, end.stderr);
    const counts = countObjects(repo);
    assert.is(counts['prune-packable'], 0, `loose objects already in a pack: ${JSON.stringify(counts)}`);
    assert.ok((counts['packs'] ?? 0) >= 1, 'packed');
    assert.is(repo.git(['fsck', '--no-progress', '--connectivity-only']).trim(), '');
  } finally {
    await server.close();
    repo.cleanup();
  }
});

test.run();
