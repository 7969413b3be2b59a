// CPU per tool call (clients + server and its git children), robust to machine load.
import fs from 'node:fs';
import path from 'node:path';
import { benchEnv, ROOT } from './measure.js';
import { benchRepo, removeAgentsnapState } from './repos.js';
import { installClaudeHooks, toolCall } from './hooks.js';
import { serverStatus, stopServer } from './server.js';

const TICK = 100; // clock ticks per second (getconf CLK_TCK)
function stat(pid: number | 'self'): number[] | null {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return s
      .slice(s.lastIndexOf(')') + 2)
      .split(' ')
      .map(Number);
  } catch {
    return null;
  }
}
function treeCpu(root: number): number {
  // root and all live descendants: utime+stime+cutime+cstime (fields 14-17 => idx 11..14 after ')')
  const kids = new Map<number, number[]>();
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const f = stat(Number(d));
    if (!f) continue;
    const ppid = f[1]!;
    (kids.get(ppid) ?? kids.set(ppid, []).get(ppid)!).push(Number(d));
  }
  let sum = 0;
  const q = [root];
  while (q.length) {
    const p = q.pop()!;
    const f = stat(p);
    if (f) sum += f[11]! + f[12]! + f[13]! + f[14]!;
    q.push(...(kids.get(p) ?? []));
  }
  return (sum / TICK) * 1000;
}
const selfChildren = () => {
  const f = stat('self')!;
  return ((f[13]! + f[14]!) / TICK) * 1000;
};

const N = Number(process.argv[2] ?? 40);
const env = benchEnv();
const repo = await benchRepo(
  path.join(ROOT, '.bench'),
  { size: 10000, layout: 'classic', label: '10,000', key: '10000' } as never,
  env,
  () => {},
);
stopServer(env, repo.dir);
removeAgentsnapState(repo, env);
const setup = installClaudeHooks(repo, env, 'Edit');
const file = path.join(repo.dir, repo.editFile);
const sessionId = `cpu-${process.pid}`;
const spec = (i: number) => ({
  sessionId,
  tool: 'Edit' as const,
  input: { file_path: file, old_string: 'x', new_string: `y${i}` },
  response: {},
});
const work = (i: number) => () => fs.writeFileSync(file, `${repo.editOriginal}// edited ${i}\n`);
for (let i = 0; i < 3; i++) toolCall(setup, spec(i), work(i));
const srv = serverStatus(env, repo.dir);
const pid = srv.pid!;
const s0 = treeCpu(pid),
  c0 = selfChildren();
let wall = 0;
for (let i = 3; i < N + 3; i++) wall += toolCall(setup, spec(i), work(i)).ms;
const s1 = treeCpu(pid),
  c1 = selfChildren();
console.log(
  JSON.stringify({
    root: ROOT,
    server: pid,
    serverCpuMsPerCall: (s1 - s0) / N,
    clientCpuMsPerCall: (c1 - c0) / N,
    wallMsPerCall: wall / N,
  }),
);
stopServer(env, repo.dir);
fs.writeFileSync(file, repo.editOriginal);
env.dispose();
