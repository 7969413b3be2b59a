// Shared by test/ui/ui.test.ts and test/ui/ui-browser.test.ts: a session recorded from
// a scripted agent (the library's openSession/toolCall path, as an agent
// embedding agentsnap records its calls) whose third step breaks the check, and
// plain HTTP requests with any Host/Origin/headers (fetch would not let a test
// forge Host).
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import * as assert from 'uvu/assert';
import { cli, cliProcess, type TempRepo } from './helpers.js';
import { openSession } from '../../src/index.js';

export const SECRET = 'ghp_16C7e42F292c6912E7710c838347Ae178B4a';
/** The check: fails while broken.txt exists. */
export const CHECK = 'test ! -e broken.txt';

export interface Recorded {
  session: string;
  /** The step whose state fails the check. */
  failing: number;
}

/**
 * Steps: 1 Task (writes src.txt) with 2 Read inside it (overlapping), 3 Bash (src.txt v2, its
 * command holds a secret), then the user edits notes.txt outside any call, 4 Write (creates
 * broken.txt: the check fails there), 5 Bash (removes broken.txt, edits README: passes again). `check --each` journals a result per state.
 */
export async function recordScriptedSession(repo: TempRepo): Promise<Recorded> {
  const s = await openSession(repo.dir, { env: repo.env, agent: 'scripted-agent' });
  await s.toolCall('Task', { description: 'write the source' }, async () => {
    repo.write('src.txt', 'v1\n');
    await s.toolCall('Read', { file_path: 'README' }, () => 'readme\n');
    return 'written';
  });
  await s.toolCall('Bash', { command: `curl -H "Authorization: token ${SECRET}" https://example.invalid && make` }, () => {
    repo.write('src.txt', 'v2\n');
    return { stdout: 'built ok\n', stderr: '' };
  });
  repo.write('notes.txt', 'the user was here\n');
  await s.toolCall('Write', { file_path: 'broken.txt', content: 'oops\n' }, () => {
    repo.write('broken.txt', 'oops\n');
    return { type: 'create' };
  });
  await s.toolCall('Bash', { command: 'rm broken.txt && sed -i s/readme/docs/ README' }, () => {
    repo.rm('broken.txt');
    repo.write('README', 'docs\n');
    return { stdout: '', stderr: '' };
  });
  await s.end();
  const check = await cli(repo, ['check', '--session', s.id, '--each', '--run', CHECK]);
  assert.is(check.code, 1, `a failing state: exit 1\n${check.stdout}${check.stderr}`);
  return { session: s.id, failing: 4 };
}

export interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  json(): any;
}

/** One request to 127.0.0.1:port with exactly these headers (Host included when given). */
export function request(
  port: number,
  method: string,
  pathAndQuery: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: pathAndQuery,
        headers: { ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}), ...headers },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text, json: () => JSON.parse(text) });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * A session of Claude Code's hooks (`hook claude … --wrapped`, as under `wrap`) with its transcript: the user's
 * prompt (holding a secret), the assistant's words, then an Edit of a.txt (step 2, after the snap's checkpoint 1).
 */
export async function recordClaudeSession(repo: TempRepo): Promise<{ session: string; step: number }> {
  const start = await cli(repo, ['snap', '--json', '-m', 'before the agent']);
  assert.is(start.code, 0, start.stderr);
  const id = (JSON.parse(start.stdout) as { session: string }).session;
  const env = { AGENTSNAP_SESSION: id, AGENTSNAP_WORKTREE: repo.dir };
  const transcript = path.join(repo.home, 't.jsonl');
  const lines: unknown[] = [
    {
      type: 'user',
      uuid: 'u1',
      timestamp: '2030-01-01T00:00:00Z',
      message: { role: 'user', content: `Please fix the greeting; the deploy token is ${SECRET}.` },
    },
    { type: 'assistant', uuid: 'a1', message: { role: 'assistant', content: [{ type: 'text', text: 'I will edit a.txt first.' }] } },
    {
      type: 'assistant',
      uuid: 'a2',
      message: { role: 'assistant', content: [{ type: 'tool_use', id: 'tu1', name: 'Edit', input: { file_path: 'a.txt' } }] },
    },
  ];
  fs.writeFileSync(transcript, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  const pre = await cliProcess(repo, ['hook', 'claude', 'PreToolUse', '--wrapped'], {
    env,
    input: JSON.stringify({
      tool_name: 'Edit',
      tool_use_id: 'tu1',
      tool_input: { file_path: 'a.txt', old_string: 'one', new_string: 'two' },
      transcript_path: transcript,
    }),
  });
  assert.is(pre.code, 0, pre.stderr);
  repo.write('a.txt', 'two\n');
  const post = await cliProcess(repo, ['hook', 'claude', 'PostToolUse', '--wrapped'], {
    env,
    input: JSON.stringify({ tool_name: 'Edit', tool_use_id: 'tu1', tool_response: { ok: true } }),
  });
  assert.is(post.code, 0, post.stderr);
  return { session: id, step: 2 };
}
