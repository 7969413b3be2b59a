// A Write's pre and post hook through the warm server, as `agentsnap server run` hosts it (in this process, engine
// up), with every call of src/ that runs in this process recorded (runtime-calls.ts): the path of a hook call at
// run time. The hooks go through the shell client (bin/agentsnap-hook), as a wrapped agent's do: build first.
import path from 'node:path';
import { ROOT, runProcess, tempRepo, type TempRepo } from './helpers.js';
import { openRepo } from '../../src/git/repo.js';
import { startWorktreeServer } from '../../src/runtime/server-api.js';
import { serverEngine } from '../../src/server/serve.js';
import { runSnap } from '../../src/cli/main.js';
import { runtimeCalls, type RuntimeCalls } from './runtime-calls.js';

const CLIENT = path.join(ROOT, 'bin', 'agentsnap-hook');
const JS = path.join(ROOT, 'bin', 'agentsnap.js');

async function toolCall(repo: TempRepo, runDir: string, id: string, content: string): Promise<void> {
  for (const event of ['PreToolUse', 'PostToolUse'] as const) {
    if (event === 'PostToolUse') repo.write('a.txt', content);
    const payload = JSON.stringify({
      session_id: 'agent-1',
      cwd: repo.dir,
      hook_event_name: event,
      tool_name: 'Write',
      tool_input: { file_path: path.join(repo.dir, 'a.txt'), content },
      tool_use_id: id,
      ...(event === 'PostToolUse' ? { tool_response: { ok: true } } : {}),
    });
    const res = await runProcess('/bin/sh', [CLIENT, '--run', runDir, '--exec', process.execPath, JS, 'claude', event], {
      cwd: repo.dir,
      env: repo.env,
      input: payload,
    });
    if (res.code !== 0 || res.stderr !== '') throw new Error(`hook ${event} exited ${res.code}: ${res.stderr}`);
  }
}

/** Which functions of src/ a tool call's two hooks run in the server, and who calls whom (the session already begun). */
export async function hookCallPath(): Promise<RuntimeCalls> {
  const repo = tempRepo();
  try {
    repo.write('a.txt', 'one\n');
    repo.git(['add', '.']);
    repo.git(['commit', '-qm', 'init']);
    const server = await startWorktreeServer(await openRepo(repo.dir, { env: { ...repo.env, AGENTSNAP_SERVER: 'on' } }), {
      hosted: true,
      snap: runSnap,
    });
    try {
      if (!(await serverEngine(server))) throw new Error('the server engine did not start');
      await toolCall(repo, server.runDir, 'toolu_0', 'zero\n'); // the session's start is not a plain call's path
      let n = 0;
      return await runtimeCalls(() => toolCall(repo, server.runDir, `toolu_${++n}`, `call ${n}\n`));
    } finally {
      await server.close();
    }
  } finally {
    repo.cleanup();
  }
}
