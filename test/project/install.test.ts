// Issue 14, "Install and set-up": what a newcomer installs (package.json, the
// files the tarball ships, the tarball installed for real with npm), and the
// agent hooks `init` writes when `agentsnap-hook` is not on PATH, `doctor`
// on hooks that cannot run, `init --remove` leaving nothing behind.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { builtinModules } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROOT, cliProcess, hermeticEnv, runProcess, tempRepo, type TempRepo } from '../support/helpers.js';

const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as Record<string, unknown> & {
  engines: { node: string };
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

/** The files `npm pack` puts in the tarball (what the build made: no scripts run). */
function packedFiles(): string[] {
  const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' });
  assert.is(r.status, 0, r.stderr);
  return (JSON.parse(r.stdout) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
}

test('package.json: engines as strict as the dependencies need (yargs 18), and where the project lives', () => {
  const yargs = JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules', 'yargs', 'package.json'), 'utf8')) as {
    engines: { node: string };
  };
  assert.is(pkg.engines.node, '^20.19.0 || ^22.12.0 || >=23');
  assert.is(yargs.engines.node, '^20.19.0 || ^22.12.0 || >=23', 'yargs still needs what engines says');
  const repository = pkg.repository as { type: string; url: string };
  assert.is(repository.type, 'git');
  assert.match(repository.url, /^git\+https:\/\/github\.com\/[^/]+\/agentsnap\.git$/);
  assert.match(String(pkg.homepage), /^https:\/\/github\.com\/[^/]+\/agentsnap#readme$/);
  assert.match((pkg.bugs as { url: string }).url, /^https:\/\/github\.com\/[^/]+\/agentsnap\/issues$/);
  const keywords = pkg.keywords as string[];
  for (const k of ['undo', 'git', 'ai', 'agent', 'claude-code', 'codex', 'gemini-cli', 'snapshot']) assert.ok(keywords.includes(k), k);
});

test('the tarball ships no source maps (nor a comment pointing at one), and every module it imports is a dependency or built in', () => {
  const files = packedFiles();
  assert.equal(
    files.filter((f) => f.endsWith('.map')),
    [],
    'no .map files',
  );
  assert.ok(
    files.includes('dist/cli.bundle.cjs') &&
      files.includes('bin/cli-loader.js') &&
      files.includes('dist/index.js') &&
      files.includes('bin/agentsnap-hook'),
  );
  assert.equal(
    files.filter((f) => f.endsWith('.cache')),
    [],
    'no code cache of this machine is shipped (bin/cli-loader.js)',
  );
  assert.not.ok(
    files.some((f) => f.startsWith('src/') || f.startsWith('test/')),
    'no sources, no tests',
  );
  const builtin = new Set(builtinModules);
  const deps = new Set(Object.keys(pkg.dependencies));
  const needed = new Set<string>();
  for (const f of files.filter((x) => /\.(m?js)$/.test(x))) {
    const text = fs.readFileSync(path.join(ROOT, f), 'utf8');
    assert.not.match(text, /sourceMappingURL/, f);
    for (const m of text.matchAll(
      /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*)(['"])((?:@[\w.-]+\/)?[\w-][\w.-]*(?:\/[\w./-]+)?)\1/g,
    )) {
      const spec = m[2] as string;
      if (spec.startsWith('node:') || builtin.has(spec)) continue;
      // Ajv (in the MCP SDK) names its runtime helpers and formats for the code it generates as text
      // (`x.code = 'require("ajv/dist/runtime/…")'`, for standalone validators): strings, never run by the bundle.
      const before = text.slice(Math.max(0, (m.index ?? 0) - 1), m.index ?? 0);
      if (f === 'dist/mcp.bundle.js' && /^ajv(-formats)?\/dist\//.test(spec) && (before === "'" || before === '`')) continue;
      const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : (spec.split('/')[0] as string);
      assert.ok(!f.endsWith('.bundle.js'), `the bundle ${f} imports ${spec}: it should hold it`);
      needed.add(name);
      assert.ok(deps.has(name), `${f} imports ${spec}, which is not in dependencies`);
    }
  }
  // Each runtime dependency is imported by some shipped module (none is there only for the bundle's build).
  assert.equal([...deps].sort(), [...needed].sort());
});

test('the tarball installs with npm and runs: `npm pack`, `npm install -g --prefix`, --help, a snap, init with agentsnap-hook on PATH', async () => {
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'agentsnap-install-')));
  try {
    const pack = spawnSync('npm', ['pack', '--ignore-scripts', '--pack-destination', base], { cwd: ROOT, encoding: 'utf8' });
    assert.is(pack.status, 0, pack.stderr);
    const tarball = path.join(base, `agentsnap-${String(pkg.version)}.tgz`);
    assert.ok(fs.existsSync(tarball), `npm pack wrote ${tarball}: ${pack.stdout}`);
    const prefix = path.join(base, 'prefix');
    const npmEnv = { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };
    let install = spawnSync('npm', ['install', '-g', '--prefix', prefix, '--offline', tarball], { encoding: 'utf8', env: npmEnv });
    if (install.status !== 0)
      install = spawnSync('npm', ['install', '-g', '--prefix', prefix, '--prefer-offline', tarball], { encoding: 'utf8', env: npmEnv });
    if (install.status !== 0 && /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ENETUNREACH|network/i.test(install.stderr)) {
      console.log(
        `  (skipped the install: npm could reach neither its cache nor the registry for the dependencies: ${install.stderr.split('\n')[0]})`,
      );
      return;
    }
    assert.is(install.status, 0, install.stderr);
    const bin = path.join(prefix, 'bin');
    for (const name of ['agentsnap', 'agentsnap-hook']) assert.ok(fs.existsSync(path.join(bin, name)), `${name} installed in ${bin}`);
    const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
    try {
      const env = { ...repo.env, PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}` };
      const help = await runProcess(path.join(bin, 'agentsnap'), ['--help'], { cwd: repo.dir, env });
      assert.is(help.code, 0, help.stderr);
      assert.match(help.stdout, /agentsnap undo/);
      repo.write('b.txt', 'b\n');
      const snap = await runProcess(path.join(bin, 'agentsnap'), ['snap', '-q'], { cwd: repo.dir, env });
      assert.is(snap.code, 0, snap.stderr);
      assert.is(snap.stdout, '1\n');
      assert.is(repo.git(['rev-parse', '--verify', '-q', `refs/agent/${sessionOf(repo)}/1`]).length, 41);
      const init = await runProcess(path.join(bin, 'agentsnap'), ['init', 'claude'], { cwd: repo.dir, env });
      assert.is(init.code, 0, init.stderr);
      assert.not.match(init.stderr, /not on PATH/);
      assert.match(hookCommandOf(repo, 'PreToolUse'), /^command -v agentsnap-hook .* agentsnap-hook claude PreToolUse/);
      const doctor = await runProcess(path.join(bin, 'agentsnap'), ['doctor', '--json'], { cwd: repo.dir, env });
      assert.not.match(doctor.stdout, /do(es)? not resolve/);
    } finally {
      repo.cleanup();
    }
  } finally {
    fs.rmSync(base, { recursive: true, force: true });
  }
});

function sessionOf(repo: TempRepo): string {
  return repo.git(['for-each-ref', '--format=%(refname)', 'refs/agent/']).trim().split('\n')[0]!.split('/')[2]!;
}

function hookCommandOf(repo: TempRepo, event: string): string {
  const s = JSON.parse(repo.read('.claude/settings.local.json').toString()) as {
    hooks: Record<string, { hooks: { command: string }[] }[]>;
  };
  return s.hooks[event]!.at(-1)!.hooks[0]!.command;
}

/** A PATH with git and node but no agentsnap, as under `npx agentsnap init claude` or from a clone. */
function pathWithoutAgentsnap(base: string): string {
  const dir = path.join(base, 'plain-bin');
  fs.mkdirSync(dir, { recursive: true });
  for (const tool of ['git', 'sh', 'cat']) {
    const where = spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
    if (where && !fs.existsSync(path.join(dir, tool))) fs.symlinkSync(where, path.join(dir, tool));
  }
  return dir;
}

async function runHookCommand(repo: TempRepo, command: string, env: NodeJS.ProcessEnv, payload: Record<string, unknown>): Promise<void> {
  const r = await runProcess('/bin/sh', ['-c', command], { cwd: repo.dir, env, input: JSON.stringify(payload) });
  assert.is(r.code, 0, r.stderr);
  assert.is(r.stderr, '', 'the hook ran without a warning');
}

test("`init claude` with no agentsnap-hook on PATH writes this install's absolute paths and says so; the hooks then record; doctor reports hooks that cannot run", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const env = { PATH: pathWithoutAgentsnap(repo.base) };
    const r = await cliProcess(repo, ['init', 'claude'], { env });
    assert.is(r.code, 0, r.stderr);
    assert.match(r.stderr, /agentsnap-hook is not on PATH, so the hooks run this install by its path \(.*bin\/agentsnap-hook\)/);
    assert.match(r.stderr, /once a global install puts agentsnap-hook on PATH \(`npm install -g`/);
    const pre = hookCommandOf(repo, 'PreToolUse');
    assert.ok(pre.startsWith(path.join(ROOT, 'bin', 'agentsnap-hook')), pre);
    assert.match(pre, /--exec \S+ \S+bin\/agentsnap\.js claude PreToolUse/);
    // The hooks Claude Code would run, with the same PATH: one tool call is one step.
    const hookEnv = { ...repo.env, ...env };
    const call = {
      session_id: 'cc-abs',
      cwd: repo.dir,
      tool_name: 'Bash',
      tool_use_id: 'toolu_abs',
      tool_input: { command: 'echo b > b.txt' },
    };
    await runHookCommand(repo, pre, hookEnv, { ...call, hook_event_name: 'PreToolUse' });
    repo.write('b.txt', 'b\n');
    await runHookCommand(repo, hookCommandOf(repo, 'PostToolUse'), hookEnv, {
      ...call,
      hook_event_name: 'PostToolUse',
      tool_response: { stdout: '' },
    });
    const log = JSON.parse((await cliProcess(repo, ['log', '--json'])).stdout) as {
      tool: string;
      status: string;
      changed: { path: string }[];
    }[];
    assert.equal(
      log.map((s) => [s.tool, s.status, s.changed.map((c) => c.path)]),
      [['Bash', 'done', ['b.txt']]],
    );
    // Healthy while the paths exist.
    const ok = await cliProcess(repo, ['doctor', '--json'], { env });
    assert.not.match(ok.stdout, /do(es)? not resolve/);
    // An install that moved away (an npx cache cleaned): doctor says the hooks record nothing, and how to fix it.
    const moved = JSON.parse(
      repo.read('.claude/settings.local.json').toString().split(path.join(ROOT, 'bin')).join('/nonexistent/agentsnap/bin'),
    ) as unknown;
    repo.write('.claude/settings.local.json', JSON.stringify(moved));
    const bad = await cliProcess(repo, ['doctor'], { env });
    assert.is(bad.code, 1, bad.stdout + bad.stderr);
    assert.match(
      bad.stdout + bad.stderr,
      /the agentsnap hooks in \S+settings\.local\.json run \/nonexistent\/agentsnap\/bin\/agentsnap-hook.* not resolve/,
    );
    assert.match(bad.stdout + bad.stderr, /agentsnap init claude/);
    // The PATH form with no agentsnap-hook on PATH: reported too.
    const pathForm = await cliProcess(repo, ['init', 'claude'], {
      env: { PATH: `${path.dirname(agentsnapHookLink(repo))}${path.delimiter}${env.PATH}` },
    });
    assert.is(pathForm.code, 0, pathForm.stderr);
    assert.match(hookCommandOf(repo, 'PreToolUse'), /^command -v agentsnap-hook/);
    const noPath = await cliProcess(repo, ['doctor'], { env });
    assert.is(noPath.code, 1);
    assert.match(noPath.stdout + noPath.stderr, /agentsnap-hook \(not on PATH\)/);
  } finally {
    repo.cleanup();
  }
});

/** A directory holding only an `agentsnap-hook` link to this checkout's. */
function agentsnapHookLink(repo: TempRepo): string {
  const dir = path.join(repo.base, 'hook-bin');
  fs.mkdirSync(dir, { recursive: true });
  const link = path.join(dir, 'agentsnap-hook');
  if (!fs.existsSync(link)) fs.symlinkSync(path.join(ROOT, 'bin', 'agentsnap-hook'), link);
  return link;
}

test("`init --remove` deletes a settings file that held only agentsnap's entries and the .git/info/exclude lines init added; a file with your settings stays, excluded", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const exclude = path.join(repo.dir, '.git', 'info', 'exclude');
    const excludeBefore = fs.readFileSync(exclude, 'utf8');
    for (const agent of ['claude', 'codex', 'gemini']) {
      const add = await cliProcess(repo, ['init', agent]);
      assert.is(add.code, 0, add.stderr);
    }
    assert.is(repo.git(['status', '--porcelain']), '', "init's files are kept out of commits");
    for (const agent of ['claude', 'codex', 'gemini']) {
      const rm = await cliProcess(repo, ['init', '--remove', agent]);
      assert.is(rm.code, 0, rm.stderr);
    }
    for (const f of ['.claude', '.codex', '.gemini']) assert.not.ok(repo.exists(f), `${f} is gone`);
    assert.is(fs.readFileSync(exclude, 'utf8'), excludeBefore, 'info/exclude as it was');
    // Your own settings beside the hooks: the file stays, and stays out of commits.
    repo.write('.claude/settings.local.json', `${JSON.stringify({ permissions: { allow: ['Bash(ls)'] } }, null, 2)}\n`);
    assert.is((await cliProcess(repo, ['init', 'claude'])).code, 0);
    assert.is((await cliProcess(repo, ['init', '--remove', 'claude'])).code, 0);
    assert.equal(JSON.parse(repo.read('.claude/settings.local.json').toString()), { permissions: { allow: ['Bash(ls)'] } });
    assert.is(repo.git(['status', '--porcelain']), '', 'still excluded: it holds your settings');
  } finally {
    repo.cleanup();
  }
});

test("the demo's closing hints use the installed command", () => {
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'agentsnap-demo-hints-')));
  try {
    fs.mkdirSync(path.join(base, 'home'));
    const env = hermeticEnv(path.join(base, 'home'), { TMPDIR: base });
    const r = spawnSync(process.execPath, [path.join(ROOT, 'demo', 'run.js')], { env, encoding: 'utf8' });
    assert.is(r.status, 0, r.stderr);
    const hints = r.stdout.slice(r.stdout.indexOf('Try more in the demo repository:'));
    assert.match(hints, /\n {2}agentsnap diff 0 /);
    assert.not.match(hints, /node \S+agentsnap\.js/);
  } finally {
    fs.rmSync(base, { recursive: true, force: true });
  }
});

test.run();
