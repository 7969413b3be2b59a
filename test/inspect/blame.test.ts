// blame and why (issue 17): each line attributed to the tool call that last wrote it, shell commands included,
// through git blame over the session's snapshot chain; the user's request from the agent's transcript.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { cli, cliProcess, tempRepo, type TempRepo } from '../support/helpers.js';

async function snap(repo: TempRepo, args: string[]): Promise<number> {
  const res = await cli(repo, ['snap', ...args, '--json']);
  assert.is(res.code, 0, res.stderr);
  return (JSON.parse(res.stdout) as { step: number }).step;
}

/** `blame <file>`'s rows with the time column and runs of spaces taken out. */
async function blameRows(repo: TempRepo, file: string): Promise<string[]> {
  const res = await cli(repo, ['blame', file]);
  assert.is(res.code, 0, res.stderr);
  return res.stdout
    .trimEnd()
    .split('\n')
    .map((l) => l.replace(/\s+\d\d:\d\d\s+/, ' ').replace(/\s+/g, ' '));
}

test('blame: lines by a shell call, an edit, a change between calls, before the session and not yet recorded; why tells one', async () => {
  const repo = tempRepo({ files: { 'f.txt': 'a\nb\n', 'crlf.txt': 'x\r\ny\r\n' } });
  try {
    const one = await snap(repo, ['--phase', 'pre', '--tool', 'Bash']);
    repo.write('f.txt', 'a\nB\n');
    await snap(repo, ['--phase', 'post', '--step', String(one), '--tool', 'Bash']);
    repo.write('f.txt', 'a\nB\nc\n'); // between calls
    const two = await snap(repo, ['--phase', 'pre', '--tool', 'Edit']);
    repo.write('f.txt', 'A\nB\nc\n');
    await snap(repo, ['--phase', 'post', '--step', String(two), '--tool', 'Edit']);
    repo.write('f.txt', 'A\nB\nc\nd\n'); // not recorded yet

    const rows = await blameRows(repo, 'f.txt');
    assert.equal(rows, [
      `step ${two} Edit 1) A`,
      `step ${one} Bash 2) B`,
      'your edit (between step 1 and 2) 3) c',
      'not recorded yet 4) d',
    ]);

    const json = await cli(repo, ['blame', 'f.txt', '--json']);
    const lines = (JSON.parse(json.stdout) as { lines: { line: number; text: string; step: number | null; origin: { kind: string } }[] })
      .lines;
    assert.equal(
      lines.map((l) => [l.line, l.text, l.origin.kind, l.step]),
      [
        [1, 'A', 'step', two],
        [2, 'B', 'step', one],
        [3, 'c', 'between', two],
        [4, 'd', 'not-recorded', null],
      ],
    );
    // A file the agent never touched: every line from before the session, CRLF and all (the blob is cleaned alike).
    const untouched = await cli(repo, ['blame', 'crlf.txt', '--json']);
    assert.equal(
      (JSON.parse(untouched.stdout) as { lines: { origin: { kind: string } }[] }).lines.map((l) => l.origin.kind),
      ['before-session', 'before-session'],
    );

    const w = await cli(repo, ['why', 'f.txt:2']);
    assert.is(w.code, 0, w.stderr);
    assert.match(w.stdout, 'f.txt:2  B\nwritten by step 1 (Bash, done) at ');
    const w4 = await cli(repo, ['why', 'f.txt:4']);
    assert.match(w4.stdout, 'in the worktree, not recorded by any snapshot yet');

    // An undo puts line 1 back: it is credited to whoever wrote it in the state put back (before the session).
    repo.write('f.txt', 'A\nB\nc\n');
    const undo = await cli(repo, ['undo', String(two)]);
    assert.is(undo.code, 0, undo.stderr);
    const after = await cli(repo, ['blame', 'f.txt', '--json']);
    const kinds = (JSON.parse(after.stdout) as { lines: { text: string; origin: { kind: string } }[] }).lines.map((l) => [
      l.text,
      l.origin.kind,
    ]);
    assert.equal(kinds[0], ['a', 'before-session']);
    assert.equal(kinds[1], ['B', 'step']);

    // Mistakes: one clear message, exit 2, nothing else done.
    const missing = await cli(repo, ['blame', 'nope.txt']);
    assert.is(missing.code, 2);
    assert.match(missing.stderr, 'nope.txt is not in session');
    const dir = await cli(repo, ['blame', '.']);
    assert.is(dir.code, 2);
    const place = await cli(repo, ['why', 'f.txt']);
    assert.is(place.code, 2);
    assert.match(place.stderr, 'is not <file>:<line>');
    const far = await cli(repo, ['why', 'f.txt:99']);
    assert.is(far.code, 2);
    assert.match(far.stderr, 'f.txt has 3 lines, not 99');
  } finally {
    repo.cleanup();
  }
});

test("blame: a line an operation put back is the step's that wrote it (revert, then op undo of the revert), a user's line stays theirs", async () => {
  const repo = tempRepo({ files: { 'f.txt': 'a\n' } });
  try {
    const one = await snap(repo, ['--phase', 'pre', '--tool', 'Bash']);
    repo.write('f.txt', 'a\nby step one\n');
    await snap(repo, ['--phase', 'post', '--step', String(one), '--tool', 'Bash']);
    repo.write('f.txt', 'a\nby step one\nmine\n'); // between calls
    const two = await snap(repo, ['--phase', 'pre', '--tool', 'Edit']);
    repo.write('f.txt', 'a\nby step one\nmine\nby step two\n');
    await snap(repo, ['--phase', 'post', '--step', String(two), '--tool', 'Edit']);
    for (const args of [
      ['revert', String(two)],
      ['op', 'undo'],
    ]) {
      const r = await cli(repo, args);
      assert.is(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    }
    assert.is(fs.readFileSync(path.join(repo.dir, 'f.txt'), 'utf8'), 'a\nby step one\nmine\nby step two\n');
    const rows = await blameRows(repo, 'f.txt');
    assert.equal(rows, [
      'before the session 1) a',
      `step ${one} Bash 2) by step one`,
      'your edit (between step 1 and 2) 3) mine',
      `step ${two} Edit 4) by step two`,
    ]);
  } finally {
    repo.cleanup();
  }
});

test("blame: the user's request and the assistant's words from Claude Code's transcript", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const start = await cli(repo, ['snap', '--json']);
    const id = (JSON.parse(start.stdout) as { session: string }).session;
    const env = { AGENTSNAP_SESSION: id, AGENTSNAP_WORKTREE: repo.dir };
    const file = path.join(repo.home, '.claude', 'projects', 'p', 'sess.jsonl');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const lines = [
      {
        type: 'user',
        uuid: 'u-1',
        message: { role: 'user', content: 'Please say hello in hello.txt (token sk-ant-api03-SECRETSECRETSECRETSECRET)' },
      },
      { type: 'assistant', uuid: 'a-1', message: { role: 'assistant', content: [{ type: 'text', text: 'I will write the greeting.' }] } },
      {
        type: 'assistant',
        uuid: 'a-2',
        message: {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'toolu_blame', name: 'Write', input: { file_path: 'hello.txt' } }],
        },
      },
    ];
    fs.writeFileSync(file, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
    const common = {
      session_id: 'cc-b',
      transcript_path: file,
      cwd: repo.dir,
      tool_name: 'Write',
      tool_use_id: 'toolu_blame',
      tool_input: { file_path: path.join(repo.dir, 'hello.txt'), content: 'hello\n' },
    };
    const pre = await cliProcess(repo, ['hook', 'claude', 'PreToolUse', '--wrapped'], {
      env,
      input: JSON.stringify({ ...common, hook_event_name: 'PreToolUse' }),
    });
    assert.is(pre.code, 0, pre.stderr);
    repo.write('hello.txt', 'hello\n');
    const post = await cliProcess(repo, ['hook', 'claude', 'PostToolUse', '--wrapped'], {
      env,
      input: JSON.stringify({ ...common, hook_event_name: 'PostToolUse', tool_response: {} }),
    });
    assert.is(post.code, 0, post.stderr);

    const b = await cli(repo, ['blame', 'hello.txt', '--json']);
    assert.is(b.code, 0, b.stderr);
    const line = (JSON.parse(b.stdout) as { lines: { prompt: string | null; tool: string; what: string | null }[] }).lines[0];
    assert.is(line?.tool, 'Write');
    assert.match(line?.prompt ?? '', 'Please say hello in hello.txt');
    assert.not.match(line?.prompt ?? '', 'SECRETSECRET', 'redacted like the journal');
    const text = await cli(repo, ['blame', 'hello.txt']);
    assert.match(text.stdout, /^step \d+ Write +\d\d:\d\d Please say hello in hello.t… 1\) hello$/m);
    const w = await cli(repo, ['why', 'hello.txt:1']);
    assert.match(w.stdout, 'the user had asked: Please say hello in hello.txt');
    assert.match(w.stdout, 'the assistant said before the call: I will write the greeting.');
    assert.match(w.stdout, 'input: {"file_path":');
  } finally {
    repo.cleanup();
  }
});

test.run();
