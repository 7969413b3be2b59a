// What a whole session of the real Claude Code costs under `agentsnap wrap`,
// fixed costs included (issue 19): 24 read-only calls, then 24 one-file
// edits, each run once unwrapped and once wrapped, interleaved, against a
// scripted stand-in for the Messages API (test/support/messages-stub.ts, the
// one the end-to-end tests use). The per-call cost is (wrapped − unwrapped) / 24,
// compared with a raw pre+post pair: two runs of the raw git sequence.
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { agentsnapCmd, interleave, median, type Cmd } from './measure.js';
import { removeAgentsnapState } from './repos.js';
import { rawGitSubject, timeRow, type Row, type Scenario, type ScenarioContext, type Target } from './scenarios.js';
import { stopServer, waitServerQuiet } from './server.js';
import { claudeBinary } from '../test/support/claude-code.js';
import { startMessagesStub, type ScriptedTurn } from '../test/support/messages-stub.js';

const CALLS = 24;
const EDIT_FILE = 'bench-claude/notes.txt';

/** Runs a command without blocking the event loop (the stand-in API answers in this process); wall time in ms. */
function timedAsync(cmd: Cmd): Promise<{ ms: number; code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(cmd.file, cmd.args, { cwd: cmd.cwd, env: cmd.env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 10 * 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ ms: Number(process.hrtime.bigint() - t0) / 1e6, code, stderr });
    });
  });
}

function script(kind: 'read' | 'edit', file: string): ScriptedTurn[] {
  // Claude Code's Edit needs the file read first: both scripts start with one Read, which cancels out.
  const turns: ScriptedTurn[] = [{ tools: [{ name: 'Read', input: { file_path: file } }] }];
  for (let i = 1; i <= CALLS; i++) {
    turns.push({
      tools: [
        kind === 'read'
          ? { name: 'Read', input: { file_path: file } }
          : { name: 'Edit', input: { file_path: file, old_string: `v${i - 1}.`, new_string: `v${i}.` } },
      ],
    });
  }
  turns.push({ text: 'Done.' });
  return turns;
}

function sessionScenario(id: string, kind: 'read' | 'edit', what: string, target: Target): Scenario {
  return {
    id,
    async run(ctx: ScenarioContext): Promise<Row[]> {
      const { repo, env } = ctx;
      // A few minutes a size: only where the target applies, unless named in --only.
      if (!target.sizes.includes(repo.size) && !ctx.explicit.has(id)) return [];
      let claude: string | null;
      try {
        claude = claudeBinary();
      } catch (e) {
        ctx.log(`  ${what}: skipped: ${(e as Error).message.split('\n')[0]}`);
        return [];
      }
      if (!claude) {
        ctx.log(`  ${what}: skipped (AGENTSNAP_E2E_CLAUDE=skip)`);
        return [];
      }
      stopServer(env, repo.dir);
      removeAgentsnapState(repo, env);
      const file = path.join(repo.dir, EDIT_FILE);
      const reset = () => {
        fs.mkdirSync(path.dirname(file), { recursive: true });
        fs.writeFileSync(file, 'v0.\n');
      };
      const stub = await startMessagesStub(script(kind, file));
      const claudeEnv = {
        IS_SANDBOX: '1',
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        DISABLE_AUTOUPDATER: '1',
        ANTHROPIC_BASE_URL: stub.url,
        ANTHROPIC_API_KEY: 'sk-ant-api03-bench-key-not-real',
      };
      const argv = [claude, '-p', 'Make the changes.', '--dangerously-skip-permissions'];
      const bare: Cmd = { file: claude, args: argv.slice(1), cwd: repo.dir, env: { ...env.env, ...claudeEnv } };
      const wrapped = agentsnapCmd(env, repo.dir, ['wrap', '--', ...argv], claudeEnv);
      const check = (r: { ms: number; code: number | null; stderr: string }, name: string) => {
        if (r.code !== 0) throw new Error(`${name} exited ${r.code}: ${r.stderr.trim().split('\n').slice(-3).join(' | ')}`);
        if (kind === 'edit' && fs.readFileSync(file, 'utf8') !== `v${CALLS}.\n`) throw new Error(`${name}: the edits did not all land`);
        return r.ms;
      };
      const raw = rawGitSubject(ctx);
      // A wrapped run leaves a background server for the next (agentsnap.serverAfterWrap): no sample is taken while
      // it sets up its watches or sweeps.
      const settle = () => {
        if (!waitServerQuiet(env, repo.dir)) ctx.log('  (the background server did not settle within 180 s)');
      };
      try {
        const runs = Math.max(1, Math.min(ctx.runs, 5));
        ctx.log(`  ${what} (${runs} runs of ${CALLS + 1} calls each, unwrapped and wrapped)`);
        const samples = await interleave(
          [
            { name: 'claude', prepare: () => (settle(), reset()), run: async () => check(await timedAsync(bare), 'claude') },
            {
              name: 'wrapped',
              prepare: () => (settle(), reset()),
              run: async () => check(await timedAsync(wrapped), 'agentsnap wrap -- claude'),
            },
            {
              name: 'raw pair',
              run: async (i) => {
                settle();
                raw.prepare?.(2 * i);
                const pre = await raw.run(2 * i);
                raw.prepare?.(2 * i + 1);
                return pre + (await raw.run(2 * i + 1));
              },
            },
          ],
          runs,
        );
        const bareMs = median(samples.get('claude') ?? []);
        const wrappedMs = median(samples.get('wrapped') ?? []);
        const pairMs = median(samples.get('raw pair') ?? []);
        const perCall = Math.max(0, wrappedMs - bareMs) / CALLS;
        const r = timeRow(ctx, {
          what,
          agentsnapMs: perCall,
          baseline: 'raw git pre+post pair',
          baselineMs: pairMs,
          samples: (samples.get('wrapped') ?? []).length,
          target,
          notes: [
            `real Claude Code, ${CALLS} calls: ${(bareMs / 1000).toFixed(2)} s unwrapped, ${(wrappedMs / 1000).toFixed(2)} s wrapped (session fixed cost included)`,
          ],
        });
        return [r];
      } finally {
        await stub.close();
        fs.rmSync(path.dirname(file), { recursive: true, force: true });
        stopServer(env, repo.dir);
        removeAgentsnapState(repo, env);
      }
    },
  };
}

export const claudeReadSession = sessionScenario('claude-read', 'read', 'real Claude Code: read-only call, per call', {
  maxRatio: 0.1,
  issue: 19,
  sizes: [10_000],
});
export const claudeEditSession = sessionScenario('claude-edit', 'edit', 'real Claude Code: one-file edit, per call', {
  maxRatio: 0.5,
  issue: 19,
  sizes: [10_000],
});
