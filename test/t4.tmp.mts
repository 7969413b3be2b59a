import { tempRepo } from './helpers.ts';
import { openRepo } from '../src/repo.ts';
import { startWorktreeServer } from '../src/serve.ts';
import { spawnSync, spawn } from 'node:child_process';
const repo = tempRepo();
for (let i = 0; i < 200; i++) repo.write(`d${i % 20}/f${i}.txt`, `x${i}\n`);
repo.git(['add', '.']); repo.git(['commit', '-qm', 'init']);
const env = { ...repo.env, AGENTSNAP_SERVER: 'on' };
const r = await openRepo(repo.dir, { env });
const server = await startWorktreeServer(r, { hosted: true, onError: (e) => console.error('ERR', e) });
await new Promise((res) => setTimeout(res, 500));
const call = (ev: string, id: string) => new Promise<number>((res) => {
  const t0 = process.hrtime.bigint();
  const c = spawn('/bin/sh', ['-c', `/bin/sh /work/main/bin/agentsnap-hook --run ${server.runDir} --exec ${process.execPath} /work/main/bin/agentsnap.js claude ${ev}`], { cwd: repo.dir, env, stdio: ['pipe', 'inherit', 'inherit'] });
  c.stdin.end(JSON.stringify({ session_id: 'a1', cwd: repo.dir, hook_event_name: ev, tool_name: 'Read', tool_input: {file_path: 'x'}, tool_use_id: id }));
  c.on('close', () => res(Number(process.hrtime.bigint() - t0) / 1e6));
});
const nop = () => new Promise<number>((res) => { const t0 = process.hrtime.bigint(); const c = spawn('/bin/sh', ['-c', 'cat >/dev/null'], { stdio: ['pipe', 'inherit', 'inherit'] }); c.stdin.end('{}'); c.on('close', () => res(Number(process.hrtime.bigint() - t0) / 1e6)); });
const times: number[] = []; const base: number[] = [];
for (let i = 0; i < 40; i++) { const a = await call('PreToolUse', 't' + i); const b = await call('PostToolUse', 't' + i); times.push(a + b); base.push(await nop()); }
times.sort((a, b) => a - b); base.sort((a, b) => a - b);
console.log('read-only call median', times[20].toFixed(1), 'ms; sh -c cat median', base[20].toFixed(1));
await server.close();
