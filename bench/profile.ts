// `--profile`: where one `agentsnap snap` spends its time. Every git process
// agentsnap starts reports its start and exit through GIT_TRACE2_EVENT
// (agentsnap passes that variable through), so the gaps are agentsnap's own.
import fs from 'node:fs';
import path from 'node:path';
import { agentsnapCmd, timed, type BenchEnv } from './measure.js';
import type { BenchRepo } from './repos.js';

interface TraceEvent {
  event: string;
  sid: string;
  time: string;
  argv?: string[];
  t_abs?: number;
}

export function profileSnap(repo: BenchRepo, env: BenchEnv): string {
  const traceFile = path.join(env.base, `trace2-${repo.size}.jsonl`);
  fs.rmSync(traceFile, { force: true });
  fs.writeFileSync(path.join(repo.dir, repo.editFile), `${repo.editOriginal}// profile ${Date.now()}\n`);
  const t0 = Date.now();
  const { ms } = timed([agentsnapCmd(env, repo.dir, ['snap', '-q'], { GIT_TRACE2_EVENT: traceFile })]);
  const procs = new Map<string, { argv: string[]; start: number; ms: number }>();
  for (const line of fs.readFileSync(traceFile, 'utf8').split('\n')) {
    if (!line) continue;
    const ev = JSON.parse(line) as TraceEvent;
    if (ev.event === 'start' && ev.argv) procs.set(ev.sid, { argv: ev.argv, start: Date.parse(ev.time), ms: NaN });
    if (ev.event === 'exit' && ev.t_abs !== undefined) {
      const p = procs.get(ev.sid);
      if (p) p.ms = ev.t_abs * 1000;
    }
  }
  fs.rmSync(traceFile, { force: true });
  const lines = [
    `profile: one \`agentsnap snap\` at ${repo.size.toLocaleString('en-US')} files: ${ms.toFixed(0)} ms wall; git processes:`,
    '  start ms   took ms  command',
  ];
  let busy = 0;
  for (const p of [...procs.values()].sort((a, b) => a.start - b.start)) {
    // Drop `-c key=value` noise; keep the subcommand and its flags.
    const args: string[] = [];
    for (let i = 1; i < p.argv.length; i++) {
      if (p.argv[i] === '-c') i++;
      else args.push(p.argv[i] ?? '');
    }
    busy += p.ms;
    lines.push(`  ${String(p.start - t0).padStart(8)}  ${p.ms.toFixed(1).padStart(8)}  git ${args.join(' ').slice(0, 100)}`);
  }
  lines.push(`  (sum of git process time ${busy.toFixed(0)} ms; trace2 timestamps have ms resolution)`);
  return lines.join('\n');
}
