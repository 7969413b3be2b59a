// Environment snapshots (issue 33 part 2, `agentsnap.environment node_modules`): what holding a node_modules of
// ~50k files in every snapshot costs. Two throwaway clones of the bench repository (objects shared) get the same
// generated node_modules (ENV_DIRS packages of ENV_FILES_PER_DIR files, ignored through info/exclude); one has the
// setting. Rows: the first snapshot of a session, a call that touches no dependency, a call that installs a
// package (INSTALL_FILES new files, INSTALL_CHANGED changed), its undo, and the disk a session of DISK_STEPS
// one-file steps adds. The clone without the setting is the baseline: what the same calls cost today.
import fs from 'node:fs';
import path from 'node:path';
import { agentsnapCmd, git, interleave, median, run, timed, type Cmd } from './measure.js';
import { timeRow, type Row, type Scenario, type ScenarioContext } from './scenarios.js';
import { stopServer, waitServerQuiet } from './server.js';

const ENV_DIRS = 2_500;
const ENV_FILES_PER_DIR = 20;
const INSTALL_FILES = 500;
const INSTALL_CHANGED = 50;
const DISK_STEPS = 100;

/** A clone sharing the bench repository's objects, its node_modules generated, the setting on or off. */
function clone(ctx: ScenarioContext, name: string, environment: boolean): string {
  const { repo, env } = ctx;
  const dir = path.join(env.base, `environment-${name}-${repo.key}`);
  fs.rmSync(dir, { recursive: true, force: true });
  git(env, env.base, ['clone', '-q', '--shared', repo.dir, dir]);
  for (const [k, v] of [
    ['maintenance.auto', 'false'],
    ['gc.auto', '0'],
    ['agentsnap.gcAuto', 'never'],
  ])
    git(env, dir, ['config', k as string, v as string]);
  if (environment) git(env, dir, ['config', 'agentsnap.environment', 'node_modules']);
  fs.appendFileSync(path.join(dir, '.git', 'info', 'exclude'), 'node_modules/\n');
  for (let d = 0; d < ENV_DIRS; d++) {
    const pkg = path.join(dir, 'node_modules', `pkg-${d}`);
    fs.mkdirSync(path.join(pkg, 'lib'), { recursive: true });
    fs.writeFileSync(path.join(pkg, 'package.json'), `{"name":"pkg-${d}","version":"1.0.${d % 7}","main":"lib/f0.js"}\n`);
    for (let f = 1; f < ENV_FILES_PER_DIR; f++)
      fs.writeFileSync(path.join(pkg, 'lib', `f${f}.js`), `// pkg-${d} file ${f}\nmodule.exports = ${d * ENV_FILES_PER_DIR + f};\n`);
  }
  return dir;
}

/** Removes every session and snapshot ref, so the next snapshot is a session's first. */
function forgetSessions(ctx: ScenarioContext, dir: string): void {
  const refs = git(ctx.env, dir, ['for-each-ref', '--format=delete %(refname)', 'refs/agent/']);
  if (refs.trim()) git(ctx.env, dir, ['update-ref', '--stdin'], refs);
  fs.rmSync(path.join(dir, '.git', 'agentsnap'), { recursive: true, force: true });
}

/** A package the agent installs: INSTALL_FILES new files, INSTALL_CHANGED files of installed packages rewritten. */
function install(dir: string, i: number): void {
  const pkg = path.join(dir, 'node_modules', `new-${i}`, 'lib');
  fs.mkdirSync(pkg, { recursive: true });
  for (let f = 0; f < INSTALL_FILES; f++) fs.writeFileSync(path.join(pkg, `n${f}.js`), `module.exports = ${i * 1000 + f};\n`);
  for (let c = 0; c < INSTALL_CHANGED; c++)
    fs.appendFileSync(path.join(dir, 'node_modules', `pkg-${(i * INSTALL_CHANGED + c) % ENV_DIRS}`, 'lib', 'f1.js'), `// upgraded ${i}\n`);
}

function kib(dir: string): number {
  let total = 0;
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else total += fs.lstatSync(p).blocks * 512;
    }
  };
  walk(dir);
  return total / 1024;
}

/**
 * KiB of objects a session of DISK_STEPS one-file steps adds, its baseline included, in a clone of its own (the
 * other rows' objects would be packed with the session's at its 50th snapshot: counted, they made it negative).
 */
function diskAfterSteps(ctx: ScenarioContext, name: string, environment: boolean): number {
  const dir = clone(ctx, `disk-${name}`, environment);
  try {
    const cmd = (args: string[]): Cmd => agentsnapCmd(ctx.env, dir, args);
    const before = kib(path.join(dir, '.git', 'objects'));
    run(cmd(['snap', '-q']));
    for (let i = 0; i < DISK_STEPS; i++) {
      run(cmd(['snap', '--phase', 'pre', '--tool', 'Edit', '-q']));
      fs.writeFileSync(path.join(dir, ctx.repo.editFile), `${ctx.repo.editOriginal}// disk step ${i}\n`);
      run(cmd(['snap', '--phase', 'post', '-q']));
    }
    return kib(path.join(dir, '.git', 'objects')) - before;
  } finally {
    stopServer(ctx.env, dir);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export const environmentScenario: Scenario = {
  id: 'environment',
  async run(ctx: ScenarioContext): Promise<Row[]> {
    const { repo, env } = ctx;
    if (repo.size > 10_000 && !ctx.explicit.has('environment')) return [];
    ctx.log(`  environment: a node_modules of ${ENV_DIRS * ENV_FILES_PER_DIR} files, with and without agentsnap.environment`);
    const withEnv = clone(ctx, 'with', true);
    const without = clone(ctx, 'without', false);
    const cmd = (dir: string, args: string[]): Cmd => agentsnapCmd(env, dir, args);
    const editFile = (dir: string, tag: string) =>
      fs.writeFileSync(path.join(dir, repo.editFile), `${repo.editOriginal}// edited by the bench: ${tag} ${process.hrtime.bigint()}\n`);
    try {
      const runs = Math.min(ctx.runs, 3);
      const first = await interleave(
        [withEnv, without].map((dir) => ({
          name: dir === withEnv ? 'env' : 'plain',
          prepare: () => forgetSessions(ctx, dir),
          run: () => timed([cmd(dir, ['snap', '-q'])]).ms,
        })),
        runs,
        0,
      );
      // From here on each clone's calls go through its warm server (`server start`), as init's and wrap's do: its
      // engine re-reads only what changed, below node_modules too. Its first snapshot (a full scan) untimed.
      for (const dir of [withEnv, without]) {
        forgetSessions(ctx, dir);
        run(cmd(dir, ['server', 'start']));
        run(cmd(dir, ['snap', '-q']));
        run(cmd(dir, ['snap', '--phase', 'pre', '--tool', 'Bash', '-q']));
        run(cmd(dir, ['snap', '--phase', 'post', '-q']));
        if (!waitServerQuiet(env, dir)) ctx.log('  (the server did not settle within 180 s)');
      }
      // The call's two hooks timed, the agent's change between them not.
      const call = (dir: string, name: string, change: (i: number) => void) => ({
        name,
        run: (i: number) => {
          const pre = timed([cmd(dir, ['snap', '--phase', 'pre', '--tool', 'Bash', '-q'])]).ms;
          change(i);
          return pre + timed([cmd(dir, ['snap', '--phase', 'post', '-q'])]).ms;
        },
      });
      const calls = await interleave(
        [call(withEnv, 'env', (i) => editFile(withEnv, `env ${i}`)), call(without, 'plain', (i) => editFile(without, `plain ${i}`))],
        ctx.runs,
      );
      const installs = await interleave(
        [call(withEnv, 'env', (i) => install(withEnv, i)), call(without, 'plain', (i) => install(without, 100 + i))],
        runs,
        0,
      );
      const undo = (dir: string, name: string) => ({ name, run: () => timed([cmd(dir, ['undo'])]).ms });
      const undos = await interleave([undo(withEnv, 'env'), undo(without, 'plain')], 1, 0);
      const disk: Record<string, number> = {
        env: diskAfterSteps(ctx, 'env', true),
        plain: diskAfterSteps(ctx, 'plain', false),
      };
      const rowOf = (samples: Map<string, number[]>, what: string, notes: string[]) =>
        timeRow(ctx, {
          what,
          agentsnapMs: median(samples.get('env') ?? []),
          baseline: 'the same without agentsnap.environment',
          baselineMs: median(samples.get('plain') ?? []),
          samples: (samples.get('env') ?? []).length,
          target: null,
          notes,
        });
      return [
        rowOf(first, `first snapshot, node_modules of ${ENV_DIRS * ENV_FILES_PER_DIR} files held whole`, []),
        rowOf(calls, 'tool call touching no dependency (pre + post), node_modules held whole', [
          'through the warm server: its watcher covers node_modules, so a call re-reads only what changed',
        ]),
        rowOf(installs, `tool call installing a package (${INSTALL_FILES} files new, ${INSTALL_CHANGED} changed)`, []),
        rowOf(undos, 'undo of that install', ['with the setting node_modules comes back; without it, it stays as the agent left it']),
        timeRow(ctx, {
          what: `disk: objects a session of ${DISK_STEPS} one-file steps adds, its first snapshot included (KiB)`,
          agentsnapMs: disk.env ?? NaN,
          baseline: 'the same without agentsnap.environment (KiB)',
          baselineMs: disk.plain ?? NaN,
          samples: 1,
          target: null,
          notes: ['node_modules is stored once, by the first snapshot; steps that do not touch it add nothing there'],
        }),
      ];
    } finally {
      for (const dir of [withEnv, without]) {
        const lingering = stopServer(env, dir);
        if (lingering) ctx.log(`  ${lingering}`);
        fs.rmSync(dir, { recursive: true, force: true });
      }
    }
  },
};
