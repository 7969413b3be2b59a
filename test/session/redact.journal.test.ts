// Issue 13 item 7: everything journaled goes through the same redaction as a
// hook's input (src/session/redact.ts): `snap -m` messages, tool names, the inputs,
// outputs and errors the library is given, unprotected reasons, a resumed
// session's command. The commit messages of snapshot commits carry no secret either.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { cli, cliProcess, tempRepo, type TempRepo } from '../support/helpers.js';
import { openRepo } from '../../src/git/repo.js';
import { recordPost, recordPre, recordUnprotected } from '../../src/session/session.js';
import { startWorktreeSession } from '../../src/worktrees/worktree.js';
import { openContext } from '../../src/session/context.js';

const TOKEN = 'ghp_16C7e42F292c6912E7710c838347Ae178B4a';
const ANTHROPIC = 'sk-ant-api03-Xy7_pQ2-mN8vL3kJ6hG9fD1sA4zX7cV0bN3mQ6wE9rT2yU5iO8pA1sD4fG7hJ0kL3zX6cV9bN2mQ5wE8r-T1yU4iAA';

function journalBytes(repo: TempRepo, session: string): string {
  return fs.readFileSync(path.join(repo.dir, '.git', 'agentsnap', 'sessions', session, 'journal.jsonl'), 'utf8');
}

/** Every commit message under refs/agent* (steps, heads, safety snapshots). */
function commitMessages(repo: TempRepo): string {
  return repo.git(['log', '--format=%B', '--glob=refs/agent/*', '--glob=refs/agentsnap/*']);
}

test('a secret in `snap -m` or `snap --tool` is redacted in the journal and in the snapshot commit messages', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const first = await cli(repo, ['snap', '--json', '-m', `deploy with ${TOKEN}`, '--tool', `tool ${ANTHROPIC}`]);
    assert.is(first.code, 0, first.stderr);
    const id = (JSON.parse(first.stdout) as { session: string }).session;
    repo.write('a.txt', 'b\n');
    const second = await cli(repo, ['snap', '--session', id, '-m', `second ${TOKEN}`]);
    assert.is(second.code, 0, second.stderr);
    const pre = await cli(repo, ['snap', '--session', id, '--phase', 'pre', '--tool', `Bash ${TOKEN}`, '-m', `call ${ANTHROPIC}`]);
    assert.is(pre.code, 0, pre.stderr);
    const journal = journalBytes(repo, id);
    assert.not.ok(journal.includes(TOKEN), 'github token in the journal');
    assert.not.ok(journal.includes(ANTHROPIC), 'anthropic key in the journal');
    assert.ok(journal.includes('deploy with [REDACTED:github-token]'), 'the rest of the message is kept');
    const messages = commitMessages(repo);
    assert.not.ok(messages.includes(TOKEN), `github token in a commit message:\n${messages}`);
    assert.not.ok(messages.includes(ANTHROPIC), 'anthropic key in a commit message');
    assert.match(messages, 'checkpoint: second [REDACTED:github-token]');
    const log = await cli(repo, ['log', '--session', id]);
    assert.not.ok(log.stdout.includes(TOKEN));
  } finally {
    repo.cleanup();
  }
});

test('configured agentsnap.redactPattern applies to messages as to hook inputs', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    repo.git(['config', 'agentsnap.redactPattern', 'ACME-[0-9]+']);
    const res = await cli(repo, ['snap', '--json', '-m', 'ticket ACME-123456']);
    assert.is(res.code, 0, res.stderr);
    const id = (JSON.parse(res.stdout) as { session: string }).session;
    assert.not.ok(journalBytes(repo, id).includes('ACME-123456'));
    assert.not.ok(commitMessages(repo).includes('ACME-123456'));
  } finally {
    repo.cleanup();
  }
});

test("the library's recordPre/recordPost/recordUnprotected redact what they are given", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const res = await cli(repo, ['snap', '--json']);
    const id = (JSON.parse(res.stdout) as { session: string }).session;
    const r = await openRepo(repo.dir, { env: repo.env });
    const pre = await recordPre(await openContext(r), id, {
      tool: 'Bash',
      input: { command: `curl -H "Authorization: token ${TOKEN}"`, [TOKEN]: 1 },
      message: TOKEN,
      model: TOKEN,
      agentVersion: TOKEN,
    });
    await recordPost(await openContext(r), id, { step: pre.step, output: { stdout: ANTHROPIC }, error: `failed with ${ANTHROPIC}` });
    await recordUnprotected(await openContext(r), id, { phase: 'pre', tool: `x ${TOKEN}`, reason: `git said ${TOKEN}`, input: [TOKEN] });
    const journal = journalBytes(repo, id);
    assert.not.ok(journal.includes(TOKEN), 'github token in the journal');
    assert.not.ok(journal.includes(ANTHROPIC), 'anthropic key in the journal');
    assert.not.ok(commitMessages(repo).includes(TOKEN));
  } finally {
    repo.cleanup();
  }
});

test('a resumed wrap --session journals its command redacted', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const first = await cliProcess(repo, ['wrap', '--session', 'r1', '--', 'sh', '-c', `true ${TOKEN}`]);
    assert.is(first.code, 0, first.stderr);
    const second = await cliProcess(repo, ['wrap', '--session', 'r1', '--', 'sh', '-c', `true ${ANTHROPIC}`]);
    assert.is(second.code, 0, second.stderr);
    const journal = journalBytes(repo, 'r1');
    assert.not.ok(journal.includes(TOKEN));
    assert.not.ok(journal.includes(ANTHROPIC));
  } finally {
    repo.cleanup();
  }
});

test("a worktree session's name is written redacted", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const r = await openRepo(repo.dir, { env: repo.env });
    const started = await startWorktreeSession(r, { session: 'named1', name: `task ${TOKEN}` });
    const dir = path.join(repo.dir, '.git', 'agentsnap', 'sessions', 'named1');
    for (const f of fs.readdirSync(dir)) {
      const file = path.join(dir, f);
      if (fs.statSync(file).isFile()) assert.not.ok(fs.readFileSync(file).includes(TOKEN), `${f} holds the token`);
    }
    assert.match(started.meta.name ?? '', 'task [REDACTED:github-token]');
  } finally {
    repo.cleanup();
  }
});

test.run();
