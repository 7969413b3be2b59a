// Cline's adapter without the real binary (test/agents/cline-e2e.test.ts runs it): its hook payloads (real ones, from
// Cline 3.0.65, trimmed) read into the common call shape, what its calls were for `log`, init's hook files.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cli, tempRepo } from '../support/helpers.js';
import { describeCall, findAgent, INIT_AGENTS, AGENT_REPO_REFS } from '../../src/agents/registry.js';
import { parseHookCall } from '../../src/runtime/hook.js';
import { cline } from '../../src/agents/cline.js';

const common = {
  clineVersion: '',
  timestamp: '2026-12-05T07:37:44.026Z',
  taskId: 'conv_1796456263289_nyeq6kq',
  sessionContext: { rootSessionId: '1796456262917_2u5vb' },
  workspaceRoots: ['/repo'],
  workspaceInfo: {
    rootPath: '/repo',
    hint: 'repo',
    latestGitCommitHash: '6c3b9af2e82b46d00b4e3ec8a5006e1cc270827d',
    latestGitBranchName: 'master',
  },
  userId: 'unknown',
  agent_id: 'agent_1796456263128_2n2l2t',
  parent_agent_id: null,
};
const commands = ["printf 'x\\n' > f.txt; exit 3"];
const prePayload = {
  ...common,
  hookName: 'tool_call',
  iteration: 3,
  tool_call: { id: 'call_3_0', name: 'run_commands', input: { commands } },
  preToolUse: { toolName: 'run_commands', parameters: { commands: JSON.stringify(commands) } },
};
const failedOutput = [{ query: commands[0], result: '[Command exited with code 3]', error: 'Command exited with code 3', success: false }];
const failedPost = {
  ...common,
  hookName: 'tool_result',
  iteration: 3,
  tool_result: {
    id: 'call_3_0',
    name: 'run_commands',
    input: { commands },
    output: failedOutput,
    durationMs: 61,
    startedAt: '…',
    endedAt: '…',
  },
  postToolUse: {
    toolName: 'run_commands',
    parameters: { commands: JSON.stringify(commands) },
    result: JSON.stringify(failedOutput),
    success: true,
    executionTimeMs: 61,
  },
};
const editPost = {
  ...common,
  hookName: 'tool_result',
  iteration: 1,
  tool_result: {
    id: 'call_1_0',
    name: 'editor',
    input: { path: '/repo/a.txt', new_text: 'alpha\n' },
    output: { query: 'edit:/repo/a.txt', result: 'File created successfully at: /repo/a.txt', success: true },
    durationMs: 7,
  },
  postToolUse: {
    toolName: 'editor',
    parameters: { path: '/repo/a.txt', new_text: 'alpha\n' },
    result: '{"query":"edit:/repo/a.txt"}',
    success: true,
    executionTimeMs: 7,
  },
};

test('cline is recognised from its command and offered to init; it declares refs/cline/ as refs it writes', () => {
  assert.equal(findAgent(['cline', 'do it']), { agent: 'cline', index: 0 });
  assert.equal(findAgent(['/opt/node_modules/.bin/cline']), { agent: 'cline', index: 0 });
  assert.equal(findAgent(['npx', 'cline@3.0.65', 'go']), { agent: 'cline', index: 1 });
  assert.ok(INIT_AGENTS.includes('cline'));
  assert.ok(AGENT_REPO_REFS.includes('refs/cline/'));
});

test('a Cline pre: tool, call id, the real array input (not the JSON string of preToolUse.parameters), session and workspace from the payload', () => {
  const call = parseHookCall('cline', 'PreToolUse', prePayload);
  assert.is(call.phase, 'pre');
  assert.is(call.tool, 'run_commands');
  assert.is(call.toolUseId, 'call_3_0');
  assert.equal(call.input, { commands });
  assert.is(call.agentSessionId, '1796456262917_2u5vb');
  assert.is(call.cwd, '/repo', "the workspace, not the hub daemon's directory");
});

test('a failed run_commands call (postToolUse.success true, output[0].success false) is closed as failed with its error', () => {
  const call = parseHookCall('cline', 'PostToolUse', failedPost);
  assert.is(call.phase, 'post');
  assert.is(call.status, 'failed');
  assert.is(call.error, 'Command exited with code 3');
  assert.is(call.toolUseId, 'call_3_0');
  assert.is(call.durationMs, 61);
  assert.equal(call.output, failedOutput);
  const ok = parseHookCall('cline', 'PostToolUse', editPost);
  assert.is(ok.status, 'done');
  assert.is(ok.error, null);
  assert.is(ok.tool, 'editor');
});

test('log reads what a Cline call was: its commands (array or JSON string), its file', () => {
  assert.equal(describeCall('cline', null, 'run_commands', { commands: ['mkdir -p d', 'rm base.txt'] }), {
    kind: 'shell',
    command: 'mkdir -p d\nrm base.txt',
  });
  assert.equal(describeCall('cline', null, 'run_commands', { commands: '["rm base.txt"]' }), { kind: 'shell', command: 'rm base.txt' });
  assert.equal(describeCall('cline', null, 'editor', { path: '/repo/a.txt', new_text: 'x' }), { kind: 'paths', paths: ['/repo/a.txt'] });
});

test("init cline writes executable hook files kept out of commits; --remove leaves the project byte-identical; a hook of the user's of that name is left alone", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n', '.clinerules/style.md': 'be brief\n' } });
  try {
    const exclude = path.join(repo.dir, '.git', 'info', 'exclude');
    const excludeBefore = fs.readFileSync(exclude, 'utf8');
    const res = await cli(repo, ['init', 'cline']);
    assert.is(res.code, 0, res.stderr);
    for (const ev of ['PreToolUse', 'PostToolUse']) {
      const file = path.join(repo.dir, '.clinerules', 'hooks', ev);
      assert.is(fs.statSync(file).mode & 0o777, 0o755);
      assert.match(fs.readFileSync(file, 'utf8'), `cline ${ev}`);
    }
    const status = repo.git(['status', '--porcelain']).trim();
    assert.is(status, '', 'the hook files are not up for commit');
    assert.is((await cli(repo, ['init', 'cline'])).code, 0, 'again: the same');
    const doc = await cli(repo, ['doctor']);
    assert.match(doc.stdout + doc.stderr, /cline: agentsnap hooks configured in .*\.clinerules\/hooks\/PreToolUse/);
    assert.is((await cli(repo, ['init', 'cline', '--remove'])).code, 0);
    assert.not.ok(fs.existsSync(path.join(repo.dir, '.clinerules', 'hooks')));
    assert.is(fs.readFileSync(path.join(repo.dir, '.clinerules', 'style.md'), 'utf8'), 'be brief\n');
    assert.is(fs.readFileSync(exclude, 'utf8'), excludeBefore);
    // The user's own PreToolUse stays as it is, and init says so.
    const mine = path.join(repo.dir, '.clinerules', 'hooks', 'PreToolUse');
    fs.mkdirSync(path.dirname(mine), { recursive: true });
    fs.writeFileSync(mine, '#!/bin/sh\necho mine\n', { mode: 0o755 });
    const again = await cli(repo, ['init', 'cline']);
    assert.match(again.stderr + again.stdout, 'PreToolUse exists and is not agentsnap');
    assert.is(fs.readFileSync(mine, 'utf8'), '#!/bin/sh\necho mine\n');
    assert.is((await cli(repo, ['init', 'cline', '--remove'])).code, 0);
    assert.is(fs.readFileSync(mine, 'utf8'), '#!/bin/sh\necho mine\n');
    assert.not.ok(fs.existsSync(path.join(repo.dir, '.clinerules', 'hooks', 'PostToolUse')));
  } finally {
    repo.cleanup();
  }
});

test("refs Cline writes into the repository (refs/cline/checkpoints/…) are refused on a push to a non-backup remote, as agentsnap's are; agentsnap.agentRefs changes the list; branches still go", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    assert.is((await cli(repo, ['hooks', 'install'])).code, 0);
    assert.is((await cli(repo, ['snap'])).code, 0, 'agentsnap refs too: --mirror names both kinds');
    const bare = path.join(repo.base, 'origin.git');
    repo.git(['init', '-q', '--bare', bare]);
    repo.git(['remote', 'add', 'origin', bare]);
    // What Cline leaves: a checkpoint commit of the worktree under refs/cline/checkpoints/<session>/<n>.
    const checkpoint = repo.git(['commit-tree', '-m', 'checkpoint', 'HEAD^{tree}']).trim();
    repo.git(['update-ref', 'refs/cline/checkpoints/1796456262917_2u5vb/1', checkpoint]);
    for (const args of [
      ['origin', 'refs/cline/checkpoints/1796456262917_2u5vb/1'],
      ['--mirror', 'origin'],
      ['origin', 'refs/cline/*:refs/cline/*'],
    ]) {
      const r = repo.gitRaw(['push', ...args]);
      assert.is.not(r.status, 0, `git push ${args.join(' ')}`);
      assert.match(r.stderr, 'refusing to push refs an agent wrote into this repository to origin');
      assert.match(r.stderr, 'refs/cline/checkpoints/1796456262917_2u5vb/1');
      assert.match(r.stderr, 'agentsnap.agentRefs');
      if (args[0] === '--mirror') assert.match(r.stderr, "refusing to push agentsnap's refs to origin");
    }
    assert.is(repo.gitRaw(['--git-dir', bare, 'show-ref']).stdout, '', 'nothing reached the remote');
    // doctor counts them as the agent's, not the user's.
    const doc = await cli(repo, ['doctor']);
    assert.match(doc.stdout + doc.stderr, '1 ref(s) under refs/cline/ were written by an agent itself');
    const main = repo.gitRaw(['push', '-q', 'origin', 'main']);
    assert.is(main.status, 0, main.stderr);
    // Configured: an empty list lets them go.
    repo.git(['config', 'agentsnap.agentRefs', '']);
    const r = repo.gitRaw(['push', '-q', 'origin', 'refs/cline/checkpoints/1796456262917_2u5vb/1']);
    assert.is(r.status, 0, r.stderr);
    assert.match(repo.git(['--git-dir', bare, 'show-ref']), 'refs/cline/checkpoints/1796456262917_2u5vb/1');
  } finally {
    repo.cleanup();
  }
});

test('init cline --mcp: Cline has no project MCP file: refused with the way to do it, nothing written; wrap -- cline --config: refused before Cline starts (CLINE_DIR is the way)', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const r = await cli(repo, ['init', 'cline', '--mcp']);
    assert.is(r.code, 2, r.stderr);
    assert.match(r.stderr, 'Cline has no project MCP configuration');
    assert.match(r.stderr, 'agentsnap wrap --mcp -- cline');
    assert.not.ok(fs.existsSync(path.join(repo.dir, '.clinerules')));
    // A stand-in `cline` that would leave a mark if it ran.
    const bin = path.join(repo.base, 'bin');
    fs.mkdirSync(bin);
    const mark = path.join(repo.base, 'ran');
    fs.writeFileSync(path.join(bin, 'cline'), `#!/bin/sh\ntouch '${mark}'\n`, { mode: 0o755 });
    const w = await cli(repo, ['wrap', '--', path.join(bin, 'cline'), '--config', path.join(repo.base, 'cfg'), 'go']);
    assert.is.not(w.code, 0);
    assert.match(w.stderr, '--config');
    assert.match(w.stderr, 'CLINE_DIR');
    assert.not.ok(fs.existsSync(mark), 'Cline was not started');
    assert.not.match(w.stderr, /\n\s+at /, 'no stack trace');
  } finally {
    repo.cleanup();
  }
});

test("a killed wrapper's run cline dir is finished by the next wrapper: what Cline created there moves to the user's cline dir, the run's dir and state go", () => {
  const repo = tempRepo({ noInit: true });
  try {
    const sessions = path.join(repo.base, 'sessions');
    const sessionDir = path.join(sessions, 'S1');
    const overlay = path.join(sessionDir, 'cline-dir-1-x');
    const clineDir = path.join(repo.home, '.cline');
    fs.mkdirSync(path.join(clineDir, 'data'), { recursive: true });
    fs.mkdirSync(path.join(overlay, 'hooks'), { recursive: true });
    fs.symlinkSync(path.join(clineDir, 'data'), path.join(overlay, 'data'));
    fs.writeFileSync(path.join(overlay, 'hooks', 'PreToolUse'), '#!/bin/sh\n');
    fs.mkdirSync(path.join(overlay, 'worktrees'));
    fs.writeFileSync(path.join(overlay, 'worktrees', 'w.txt'), 'made by Cline\n');
    // An owner that is gone: a pid no process has.
    const owner = { pid: 2 ** 22 + 7, start: 1, host: os.hostname(), purpose: 'cline run' };
    fs.writeFileSync(path.join(sessionDir, 'cline-run-1-x.json'), JSON.stringify({ owner, overlay, clineDir }));
    const lines = cline.recover?.(sessions) ?? [];
    assert.match(lines.join('\n'), 'finished the Cline run of session S1');
    assert.not.ok(fs.existsSync(overlay));
    assert.not.ok(fs.existsSync(path.join(sessionDir, 'cline-run-1-x.json')));
    assert.is(fs.readFileSync(path.join(clineDir, 'worktrees', 'w.txt'), 'utf8'), 'made by Cline\n');
    assert.ok(fs.existsSync(path.join(clineDir, 'data')), 'the link was removed, not what it pointed to');
    assert.not.ok(fs.existsSync(path.join(clineDir, 'hooks')));
  } finally {
    repo.cleanup();
  }
});

test.run();
