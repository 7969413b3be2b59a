// End to end with the real Cline CLI (`cline`, pinned in support/agent-clis.ts: a Bun-compiled binary) under
// `agentsnap wrap` and with `init` hooks, driven offline by a scripted stand-in of the OpenAI Chat Completions API
// (support/openai-stub.ts, recorded as Cline's "openai-compatible" provider by `cline auth`): its real tools run in
// the repository and fire its real hooks. Cline's hub daemon, when a run starts one, is stopped in each test's
// cleanup (found by its HOME).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { agentsnapOnPath, cliProcess, tempRepo, treeFiles, type TempRepo } from '../support/helpers.js';
import type { ScriptedTurn } from '../support/model-stubs.js';
import { startChatCompletionsStub } from '../support/openai-stub.js';
import { clineBinary } from '../support/agent-clis.js';
import { loadSession } from '../../src/session/session.js';
import { openRepo } from '../../src/git/repo.js';

let cline: string | null = null;
try {
  cline = clineBinary();
  if (!cline) console.log('cline-e2e: skipped (AGENTSNAP_E2E_CLINE=skip)');
} catch (e) {
  console.log(`cline-e2e: skipped: ${(e as Error).message}`);
}

/** Runs a program without blocking this process (the stub answers from it), bounded in time. */
function run(
  program: string,
  args: string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'], timeout: 240_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Cline's provider, recorded once per HOME as a user does (`cline auth`), pointing at the stub. */
async function auth(home: string, repo: TempRepo, url: string): Promise<void> {
  const r = await run(cline as string, ['auth', '-p', 'openai', '-k', 'sk-e2e-test-key-not-real', '-m', 'test-model', '-b', url], {
    cwd: repo.dir,
    env: { ...repo.env, HOME: home },
  });
  assert.is(r.code, 0, r.stderr + r.stdout);
}

/** The hub daemons Cline left running under `home`: killed; how many there were. */
function stopDaemons(home: string): number {
  let n = 0;
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      if (!fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('--cline-hub-daemon')) continue;
      if (!fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`HOME=${home}`)) continue;
      process.kill(Number(pid), 'SIGKILL');
      n++;
    } catch {
      /* gone, or not ours */
    }
  }
  return n;
}

function filesOf(repo: TempRepo, commit: string): Record<string, string> {
  return Object.fromEntries([...treeFiles(repo, commit)].map(([p, v]) => [p, v.content.toString()]));
}

function worktreeFiles(repo: TempRepo): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string, rel: string) => {
    for (const name of fs.readdirSync(dir)) {
      if (name === '.git' || name === '.clinerules') continue;
      const p = path.join(dir, name);
      if (fs.statSync(p).isDirectory()) walk(p, `${rel}${name}/`);
      else out[`${rel}${name}`] = fs.readFileSync(p, 'utf8');
    }
  };
  walk(repo.dir, '');
  return out;
}

/** Every file under `dir` with its bytes (a link as its target), for byte-for-byte comparisons. */
function snapshotDir(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string, rel: string) => {
    let names: string[] = [];
    try {
      names = fs.readdirSync(d);
    } catch {
      return;
    }
    for (const name of names) {
      const p = path.join(d, name);
      const st = fs.lstatSync(p);
      if (st.isSymbolicLink()) out[`${rel}${name}`] = `-> ${fs.readlinkSync(p)}`;
      else if (st.isDirectory()) walk(p, `${rel}${name}/`);
      else out[`${rel}${name}`] = `${(st.mode & 0o777).toString(8)} ${fs.readFileSync(p, 'utf8')}`;
    }
  };
  walk(dir, '');
  return out;
}

test("cline under wrap --mcp: one step per call (write, shell, failing shell closed as failed), log says what each was, undo of the shell call and of the write, undo --chat offers the digest, agentsnap mcp offered; the user's cline dir and its own hook untouched, its hook still runs", async () => {
  if (!cline) return;
  const repo = tempRepo({ files: { 'a.txt': 'one\n', 'gone.txt': 'bye\n' } });
  const script: ScriptedTurn[] = [
    { text: 'Creating hello.txt.', tools: [{ name: 'editor', input: { path: path.join(repo.dir, 'hello.txt'), new_text: 'hello\n' } }] },
    { tools: [{ name: 'run_commands', input: { commands: ['rm gone.txt && echo two > a.txt'] } }] },
    { tools: [{ name: 'run_commands', input: { commands: ['echo partial > fail.txt; exit 3'] } }] },
    { text: 'All done.' },
  ];
  const start = { 'a.txt': 'one\n', 'gone.txt': 'bye\n' };
  const after1 = { ...start, 'hello.txt': 'hello\n' };
  const after2 = { 'a.txt': 'two\n', 'hello.txt': 'hello\n' };
  const after3 = { ...after2, 'fail.txt': 'partial\n' };
  const stub = await startChatCompletionsStub(script);
  const began = Date.now();
  try {
    await auth(repo.home, repo, stub.url);
    // A PostToolUse hook of the user's own, in their cline dir: it still runs, after agentsnap's.
    const userHooks = path.join(repo.home, '.cline', 'hooks');
    fs.mkdirSync(userHooks, { recursive: true });
    const seen = path.join(repo.base, 'user-hook-saw');
    fs.writeFileSync(path.join(userHooks, 'PostToolUse'), `#!/bin/sh\ncat >> '${seen}'\necho >> '${seen}'\n`, { mode: 0o755 });
    const userDirBefore = snapshotDir(path.join(repo.home, '.cline'));
    const res = await cliProcess(repo, ['wrap', '--mcp', '--', cline, 'Make the changes.'], { timeoutMs: 240_000 });
    assert.is(res.code, 0, res.stderr + res.stdout);
    assert.match(res.stdout, 'All done.');
    assert.not.match(res.stderr, 'agentsnap: warning');
    const id = /started session (\S+)/.exec(res.stderr)?.[1] as string;
    assert.ok(id, res.stderr);
    const s = loadSession(await openRepo(repo.dir, { env: repo.env }), id);
    assert.is(s.agent, 'cline');
    assert.equal(
      s.steps.map((st) => [st.tool, st.status]),
      [
        ['editor', 'done'],
        ['run_commands', 'done'],
        ['run_commands', 'failed'],
      ],
    );
    assert.equal(
      s.steps.map((st) => st.input),
      stub.calls.map((c) => c.input),
    );
    assert.equal(
      s.steps.map((st) => st.toolUseId),
      stub.calls.map((c) => c.id),
    );
    assert.match(String(s.steps[2]?.error), 'Command exited with code 3');
    [after1, after2, after3].forEach((files, i) =>
      assert.equal(filesOf(repo, s.steps[i]?.post as string), files, `files after step ${i + 1}`),
    );
    assert.equal(filesOf(repo, s.steps[0]?.pre as string), start);
    // --mcp: the model was offered agentsnap's tools.
    assert.match(stub.toolsOffered.flat().join(' '), /agentsnap.*list_steps/);
    // `log`: the agent's tool names and what each call was (its file, its command).
    const log = await cliProcess(repo, ['log']);
    assert.is(log.code, 0, log.stderr);
    assert.match(log.stdout, 'hello.txt');
    assert.match(log.stdout, 'rm gone.txt && echo two > a.txt');
    assert.match(log.stdout, 'echo partial > fail.txt; exit 3');
    // The injection was for the run only: the user's cline dir (its hook, its settings) byte for byte as it was apart
    // from Cline's own data, no project hook folder, the run's cline dir gone; the user's hook saw all three calls.
    const dataFree = (o: Record<string, string>) => Object.fromEntries(Object.entries(o).filter(([k]) => !k.startsWith('data/')));
    assert.equal(dataFree(snapshotDir(path.join(repo.home, '.cline'))), dataFree(userDirBefore));
    assert.is(userDirBefore['data/settings/cline_mcp_settings.json'], undefined);
    assert.not.ok(
      fs.existsSync(path.join(repo.home, '.cline', 'data', 'settings', 'cline_mcp_settings.json')),
      'the MCP server was declared for the run only',
    );
    assert.not.ok(fs.existsSync(path.join(repo.dir, '.clinerules')));
    assert.equal(
      fs.readdirSync(path.join(repo.dir, '.git', 'agentsnap', 'sessions', id)).filter((n) => n.startsWith('cline-')),
      [],
      "the run's cline dir and state are gone",
    );
    assert.is(fs.readFileSync(seen, 'utf8').split('"hookName":"tool_result"').length - 1, 3);
    // Undo back to before the shell call (step 2): a.txt and gone.txt back, hello.txt kept; then before the write.
    let u = await cliProcess(repo, ['undo', '2']);
    assert.is(u.code, 0, u.stderr);
    assert.equal(worktreeFiles(repo), after1);
    u = await cliProcess(repo, ['undo', '1']);
    assert.is(u.code, 0, u.stderr);
    assert.equal(worktreeFiles(repo), start);
    // Cline resumes only interactively (`cline --id`): undo --chat offers the digest of the session instead.
    const r = await cliProcess(repo, ['undo', '3', '--chat', '--json']);
    assert.is(r.code, 0, r.stderr);
    const chat = (JSON.parse(r.stdout) as { chat: { kind: string } }).chat;
    assert.is(chat.kind, 'digest', r.stdout);
    assert.is(stopDaemons(repo.home), 0, 'the wrapped run started no hub daemon (its local backend)');
  } finally {
    stopDaemons(repo.home);
    await stub.close();
    repo.cleanup();
    console.log(`cline-e2e: wrap test took ${((Date.now() - began) / 1000).toFixed(1)} s`);
  }
});

test("cline with init hooks, default (hub daemon) mode, two repositories one HOME, a daemon started with a stale wrapper's variables: each call lands in its own repository's session; a wrapped run beside that daemon records into its own session only; init --remove leaves both projects byte-identical", async () => {
  if (!cline) return;
  const a = tempRepo({ files: { 'a.txt': 'one\n', '.clinerules/style.md': 'be brief\n' } });
  const b = tempRepo({ files: { 'b.txt': 'one\n' } });
  const home = a.home;
  const mk = (repo: TempRepo): ScriptedTurn[] => [
    { tools: [{ name: 'editor', input: { path: path.join(repo.dir, 'hello.txt'), new_text: 'hello\n' } }] },
    { tools: [{ name: 'run_commands', input: { commands: ['echo x > c.txt; exit 4'] } }] },
    { text: 'All done.' },
  ];
  const stubA = await startChatCompletionsStub(mk(a));
  const stubB = await startChatCompletionsStub(mk(b));
  const began = Date.now();
  try {
    const pathWithAgentsnap = agentsnapOnPath(a.base);
    // An untracked file of the user's at the start and a git identity (Cline's checkpoints are commits): Cline then
    // writes its checkpoint refs into the repository.
    fs.writeFileSync(path.join(b.dir, 'notes.txt'), 'mine\n');
    b.git(['config', 'user.name', 'A User']);
    b.git(['config', 'user.email', 'user@example.invalid']);
    const before = { a: snapshotDir(a.dir), b: snapshotDir(b.dir) };
    for (const repo of [a, b]) {
      const init = await cliProcess(repo, ['init', 'cline'], { env: { PATH: pathWithAgentsnap } });
      assert.is(init.code, 0, init.stderr);
      assert.ok(fs.statSync(path.join(repo.dir, '.clinerules', 'hooks', 'PreToolUse')).mode & 0o100);
    }
    // The first run starts the hub daemon with its own environment: as if run from a wrapped agent's shell.
    const stale = { AGENTSNAP_SESSION: 'stale-session', AGENTSNAP_WORKTREE: b.dir, AGENTSNAP_HOOKS: 'cline' };
    await auth(home, a, stubA.url);
    let r = await run(cline, ['Make the changes.'], { cwd: a.dir, env: { ...a.env, HOME: home, PATH: pathWithAgentsnap, ...stale } });
    assert.is(r.code, 0, r.stderr + r.stdout);
    await auth(home, b, stubB.url);
    r = await run(cline, ['Make the changes.'], { cwd: b.dir, env: { ...b.env, HOME: home, PATH: pathWithAgentsnap } });
    assert.is(r.code, 0, r.stderr + r.stdout);
    for (const repo of [a, b]) {
      const list = JSON.parse((await cliProcess(repo, ['sessions', '--json'], { env: { HOME: home } })).stdout) as {
        id: string;
        agent: string;
        steps: number;
      }[];
      assert.equal(
        list.map((x) => [x.agent, x.steps]),
        [['cline', 2]],
        `${repo === a ? 'a' : 'b'}: ${JSON.stringify(list)}`,
      );
      const s = loadSession(await openRepo(repo.dir, { env: { ...repo.env, HOME: home } }), list[0]?.id as string);
      assert.equal(
        s.steps.map((st) => [st.tool, st.status]),
        [
          ['editor', 'done'],
          ['run_commands', 'failed'],
        ],
      );
      assert.equal(filesOf(repo, s.steps[0]?.post as string)['hello.txt'], 'hello\n');
      assert.is(
        repo.git(['status', '--porcelain']),
        `?? c.txt\n?? hello.txt\n${repo === b ? '?? notes.txt\n' : ''}`,
        'the hook files are kept out of commits',
      );
    }
    // Cline's refs/cline/checkpoints/… in b: agentsnap's pre-push hook keeps them off a remote that is not a backup one.
    assert.match(b.git(['for-each-ref', '--format=%(refname)', 'refs/cline/']), /^refs\/cline\/checkpoints\//);
    assert.is((await cliProcess(b, ['hooks', 'install'])).code, 0);
    const bare = path.join(b.base, 'origin.git');
    b.git(['init', '-q', '--bare', bare]);
    b.git(['remote', 'add', 'origin', bare]);
    const push = b.gitRaw(['push', '--mirror', 'origin']);
    assert.is.not(push.status, 0);
    assert.match(push.stderr, 'refusing to push refs an agent wrote into this repository to origin');
    assert.match((await cliProcess(b, ['doctor'], { env: { HOME: home } })).stdout, 'under refs/cline/ were written by an agent itself');
    // A wrapped run while that daemon (started outside wrap, with the stale variables) is up and init's hooks are in
    // the project: its calls are the wrapper's session's only (init's hooks stand aside), none reach init's session.
    fs.rmSync(path.join(a.dir, 'c.txt'));
    fs.rmSync(path.join(a.dir, 'hello.txt'));
    await auth(home, a, stubA.url);
    const w = await cliProcess(a, ['wrap', '--', cline, 'Make the changes.'], {
      env: { HOME: home, PATH: pathWithAgentsnap },
      timeoutMs: 240_000,
    });
    assert.is(w.code, 0, w.stderr + w.stdout);
    const wrapped = /started session (\S+)/.exec(w.stderr)?.[1] as string;
    const sessions = JSON.parse((await cliProcess(a, ['sessions', '--json'], { env: { HOME: home } })).stdout) as {
      id: string;
      agent: string;
      steps: number;
    }[];
    assert.equal(sessions.map((x) => [x.id === wrapped ? 'wrapped' : 'init', x.agent, x.steps]).sort(), [
      ['init', 'cline', 2],
      ['wrapped', 'cline', 2],
    ]);
    const ws = loadSession(await openRepo(a.dir, { env: { ...a.env, HOME: home } }), wrapped);
    assert.equal(
      ws.steps.map((st) => [st.tool, st.status]),
      [
        ['editor', 'done'],
        ['run_commands', 'failed'],
      ],
    );
    const daemons = stopDaemons(home);
    console.log(`cline-e2e: ${daemons} hub daemon(s) served these runs`);
    for (const repo of [a, b]) {
      fs.rmSync(path.join(repo.dir, 'c.txt'));
      fs.rmSync(path.join(repo.dir, 'hello.txt'));
      const remove = await cliProcess(repo, ['init', 'cline', '--remove'], { env: { PATH: pathWithAgentsnap } });
      assert.is(remove.code, 0, remove.stderr);
    }
    const clean = (o: Record<string, string>) => Object.fromEntries(Object.entries(o).filter(([k]) => !k.startsWith('.git/')));
    assert.equal(clean(snapshotDir(a.dir)), clean(before.a));
    assert.equal(clean(snapshotDir(b.dir)), clean(before.b));
    assert.is(fs.readFileSync(path.join(a.dir, '.git', 'info', 'exclude'), 'utf8'), before.a['.git/info/exclude']?.replace(/^\d+ /, ''));
  } finally {
    stopDaemons(home);
    await stubA.close();
    await stubB.close();
    a.cleanup();
    b.cleanup();
    console.log(`cline-e2e: init test took ${((Date.now() - began) / 1000).toFixed(1)} s`);
  }
});

test.run();
