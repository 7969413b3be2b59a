// Qwen Code's adapter without the real binary (test/agents/qwen-e2e.test.ts runs it): recognised from its command,
// what its calls were for `log`, and `init qwen --remove` after Qwen stamped "$version" into the file.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import os from 'node:os';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { cli, cliProcess, tempRepo } from '../support/helpers.js';
import { describeCall, findAgent, INIT_AGENTS } from '../../src/agents/registry.js';
import { forkQwenChat } from '../../src/agents/qwen-chat.js';

test('qwen is recognised from its command (bare, a path, through npx) and offered to init', () => {
  assert.equal(findAgent(['qwen', '--yolo', 'go']), { agent: 'qwen', index: 0 });
  assert.equal(findAgent(['/opt/bin/qwen']), { agent: 'qwen', index: 0 });
  assert.equal(findAgent(['npx', '@qwen-code/qwen-code@0.24.4', '--yolo']), { agent: 'qwen', index: 1 });
  assert.ok(INIT_AGENTS.includes('qwen'));
});

test('log reads what a Qwen call was: its command, its file', () => {
  assert.equal(
    describeCall('qwen', null, 'run_shell_command', { command: 'rm a && echo b > c', description: 'x' }),
    describeCall('generic', null, 'Bash', { command: 'rm a && echo b > c' }),
  );
  const write = describeCall('qwen', null, 'write_file', { file_path: '/r/a.txt', content: 'x' });
  assert.match(JSON.stringify(write), '/r/a.txt');
});

test('init qwen --remove: a settings file holding only the "$version" Qwen stamped into it goes; one of the user\'s stays byte for byte', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const file = path.join(repo.dir, '.qwen', 'settings.json');
    assert.is((await cli(repo, ['init', 'qwen'])).code, 0);
    // What Qwen does to the file on its first run: "$version" added, the file rewritten.
    const stamped = { ...(JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>), $version: 4 };
    fs.writeFileSync(file, JSON.stringify(stamped, null, 4));
    assert.is((await cli(repo, ['init', 'qwen', '--remove'])).code, 0);
    assert.not.ok(fs.existsSync(path.join(repo.dir, '.qwen')), 'only ours (and Qwen\'s "$version") was in it');
    const mine = `${JSON.stringify({ $version: 4, ui: { hideTips: true } }, null, 2)}\n`;
    fs.mkdirSync(path.dirname(file));
    fs.writeFileSync(file, mine);
    assert.is((await cli(repo, ['init', 'qwen'])).code, 0);
    assert.is((await cli(repo, ['init', 'qwen', '--remove'])).code, 0);
    assert.is(fs.readFileSync(file, 'utf8'), mine);
  } finally {
    repo.cleanup();
  }
});

test('a Qwen conversation forked before a call keeps the records before the line holding it, under the new id; the original is untouched', () => {
  const repo = tempRepo({ noInit: true });
  try {
    const chats = path.join(repo.home, '.qwen', 'projects', '-r', 'chats');
    fs.mkdirSync(chats, { recursive: true });
    const rec = (type: string, uuid: string, message?: unknown) =>
      JSON.stringify({ type, uuid, parentUuid: null, sessionId: 'old', cwd: '/r', ...(message ? { message } : {}) });
    const call = (id: string) => ({ role: 'model', parts: [{ functionCall: { id, name: 'write_file', args: {} } }] });
    const original = path.join(chats, 'old.jsonl');
    const text =
      [
        rec('user', 'u1', { role: 'user', parts: [{ text: 'go' }] }),
        rec('assistant', 'a1', call('call_1')),
        rec('tool_result', 't1'),
        rec('assistant', 'a2', call('call_2')),
        rec('tool_result', 't2'),
      ].join('\n') + '\n';
    fs.writeFileSync(original, text);
    const fork = forkQwenChat({ step: 2, transcript: { path: original }, toolUseId: 'call_2' }, { cwd: '/elsewhere', newId: 'new-id' });
    assert.is(fork.file, path.join(chats, 'new-id.jsonl'));
    assert.is(fork.resumeCommand, 'qwen --resume new-id');
    assert.is(fork.cwd, '/r');
    const kept = fs
      .readFileSync(fork.file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { uuid: string; sessionId: string });
    assert.equal(
      kept.map((r) => [r.uuid, r.sessionId]),
      [
        ['u1', 'new-id'],
        ['a1', 'new-id'],
        ['t1', 'new-id'],
      ],
    );
    assert.is(fs.readFileSync(original, 'utf8'), text);
    assert.throws(
      () => forkQwenChat({ step: 3, transcript: { path: original }, toolUseId: 'call_9' }, { cwd: '/r' }),
      /not in the Qwen Code conversation/,
    );
  } finally {
    repo.cleanup();
  }
});

/** A stand-in `qwen` program: copies the system settings file wrap names for it to `seen.json`, then stamps "$version" into ~/.qwen/settings.json as Qwen does. */
function fakeQwen(base: string): string {
  const bin = path.join(base, 'fake-bin', 'qwen');
  fs.mkdirSync(path.dirname(bin), { recursive: true });
  const stamp = `const f=process.env.HOME+'/.qwen/settings.json';const s=JSON.parse(fs.readFileSync(f,'utf8'));fs.writeFileSync(f,JSON.stringify({...s,$version:4},null,2))`;
  fs.writeFileSync(
    bin,
    `#!${process.execPath}\nconst fs=require('fs');fs.copyFileSync(process.env.QWEN_CODE_SYSTEM_SETTINGS_PATH, ${JSON.stringify(path.join(base, 'seen.json'))});${stamp}\n`,
    { mode: 0o755 },
  );
  return bin;
}

test("wrap -- qwen: the hooks go in a run-only system settings file (the caller's own system settings kept in it), gone afterwards; ~/.qwen/settings.json stamped by Qwen is put back byte for byte", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const qwen = fakeQwen(repo.base);
    const userSettings = '{"ui": {"hideTips": true}}\n';
    fs.mkdirSync(path.join(repo.home, '.qwen'));
    fs.writeFileSync(path.join(repo.home, '.qwen', 'settings.json'), userSettings);
    const system = path.join(repo.base, 'system.json');
    fs.writeFileSync(system, '{"model": {"name": "x"}}\n');
    const r = await cliProcess(repo, ['wrap', '--', qwen], { env: { QWEN_CODE_SYSTEM_SETTINGS_PATH: system } });
    assert.is(r.code, 0, r.stderr);
    const seen = JSON.parse(fs.readFileSync(path.join(repo.base, 'seen.json'), 'utf8')) as {
      model: unknown;
      hooks: Record<string, { hooks: { command: string }[] }[]>;
    };
    assert.equal(seen.model, { name: 'x' });
    assert.equal(Object.keys(seen.hooks), ['PreToolUse', 'PostToolUse', 'PostToolUseFailure']);
    assert.match(seen.hooks.PreToolUse?.[0]?.hooks[0]?.command ?? '', / qwen PreToolUse/);
    assert.is(
      (seen.hooks.PreToolUse?.[0]?.hooks[0] as { timeout?: number } | undefined)?.timeout,
      600,
      'seconds: a first snapshot may take more than its 60 s default',
    );
    assert.is(fs.readFileSync(system, 'utf8'), '{"model": {"name": "x"}}\n', "the caller's system settings are not edited");
    assert.is(fs.readFileSync(path.join(repo.home, '.qwen', 'settings.json'), 'utf8'), userSettings);
  } finally {
    repo.cleanup();
  }
});

test('wrap -- qwen with a system settings file that is not JSON: one clear message, exit 1, the agent not started, the file untouched', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const qwen = fakeQwen(repo.base);
    const system = path.join(repo.base, 'system.json');
    fs.writeFileSync(system, 'not json');
    const r = await cliProcess(repo, ['wrap', '--', qwen], { env: { QWEN_CODE_SYSTEM_SETTINGS_PATH: system } });
    assert.is(r.code, 1, r.stderr);
    assert.match(r.stderr, 'is not a JSON object; agentsnap cannot add its hooks to it for this run');
    assert.not.match(r.stderr, /\n\s+at /);
    assert.not.ok(fs.existsSync(path.join(repo.base, 'seen.json')), 'qwen was not started');
    assert.is(fs.readFileSync(system, 'utf8'), 'not json');
  } finally {
    repo.cleanup();
  }
});

test('a wrapper killed during a qwen run: the next wrap removes its run settings file and puts back the settings Qwen stamped', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const qwen = fakeQwen(repo.base);
    const userFile = path.join(repo.home, '.qwen', 'settings.json');
    const userSettings = '{"ui": {"hideTips": true}}\n';
    fs.mkdirSync(path.dirname(userFile));
    fs.writeFileSync(userFile, `${JSON.stringify({ ui: { hideTips: true }, $version: 4 }, null, 2)}\n`);
    // What the killed wrapper left: its state (a dead owner) and its run settings file.
    const dir = path.join(repo.dir, '.git', 'agentsnap', 'sessions', 'killed-run');
    fs.mkdirSync(dir, { recursive: true });
    const settingsFile = path.join(dir, 'qwen-settings-1-x.json');
    fs.writeFileSync(settingsFile, '{}\n');
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    const owner = { pid: dead, start: null, host: os.hostname(), since: new Date().toISOString(), purpose: 'qwen run' };
    fs.writeFileSync(path.join(dir, 'qwen-run-1-x.json'), JSON.stringify({ owner, settingsFile, saved: { [userFile]: userSettings } }));
    const r = await cliProcess(repo, ['wrap', '--', qwen]);
    assert.is(r.code, 0, r.stderr);
    assert.match(r.stderr, 'finished the Qwen Code run of session killed-run');
    assert.is(fs.readFileSync(userFile, 'utf8'), userSettings);
    assert.equal(fs.readdirSync(dir), []);
  } finally {
    repo.cleanup();
  }
});

test.run();
