// `agentsnap init <agent> --mcp` and `agentsnap wrap --mcp` (issue 18): agentsnap's MCP server declared in each
// agent's project configuration (and taken out exactly), or offered for one run through the agent's own per-run
// mechanism, editing no file of the user's. The declared command is then started as the agent would start it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { agentsnapOnPath, cliProcess, step, tempRepo, type TempRepo } from '../support/helpers.js';

/** Starts a declared MCP server as an agent would (command, args, its cwd and environment) and lists its tools and steps. */
async function startDeclared(
  repo: TempRepo,
  server: { command: string; args: string[] },
  env: NodeJS.ProcessEnv,
): Promise<{ tools: string[]; steps: string }> {
  const client = new Client({ name: 'agent', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: server.command,
      args: server.args,
      cwd: repo.dir,
      env: env as Record<string, string>,
      stderr: 'pipe',
    }),
  );
  try {
    const { tools } = await client.listTools();
    const res = (await client.callTool({ name: 'list_steps', arguments: {} })) as { content: { text: string }[] };
    return { tools: tools.map((t) => t.name), steps: res.content.map((c) => c.text).join('\n') };
  } finally {
    await client.close();
  }
}

const read = (repo: TempRepo, rel: string) => fs.readFileSync(path.join(repo.dir, rel), 'utf8');
const exclude = (repo: TempRepo) => {
  try {
    return fs.readFileSync(path.join(repo.dir, '.git', 'info', 'exclude'), 'utf8');
  } catch {
    return '';
  }
};

test("init claude --mcp: agentsnap in .mcp.json beside the user's servers, kept out of commits, idempotent; the declared server runs; --remove gives the file back byte for byte", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  const env = { ...repo.env, PATH: agentsnapOnPath(repo.base) };
  try {
    const mine = `${JSON.stringify({ mcpServers: { other: { command: 'other-server', args: ['--x'] } } }, null, 2)}\n`;
    repo.write('.mcp.json', mine);
    const excludeBefore = exclude(repo);
    const res = await cliProcess(repo, ['init', 'claude', '--mcp'], { env });
    assert.is(res.code, 0, res.stderr);
    assert.match(res.stderr, /declared the MCP server agentsnap in .*\.mcp\.json/);
    assert.match(res.stderr, /approve agentsnap/);
    const cfg = JSON.parse(read(repo, '.mcp.json')) as { mcpServers: Record<string, { type?: string; command: string; args: string[] }> };
    assert.equal(cfg.mcpServers.other, { command: 'other-server', args: ['--x'] });
    assert.equal(cfg.mcpServers.agentsnap, { type: 'stdio', command: 'agentsnap', args: ['mcp'] });
    assert.ok(fs.existsSync(path.join(repo.dir, '.claude', 'settings.local.json')), 'the hooks too');
    assert.match(exclude(repo), /^\/\.mcp\.json$/m);
    assert.is(repo.git(['status', '--porcelain']), '', 'nothing to commit');
    const again = await cliProcess(repo, ['init', 'claude', '--mcp'], { env });
    assert.is(again.code, 0, again.stderr);
    assert.match(again.stderr, /already declares the MCP server agentsnap/);

    await step(repo, () => repo.write('a.txt', 'two\n'), 'Edit');
    const started = await startDeclared(repo, cfg.mcpServers.agentsnap!, env);
    assert.ok(started.tools.includes('undo'), started.tools.join(','));
    assert.match(started.steps, /^1  Edit  \[done\]/m);

    const rm = await cliProcess(repo, ['init', '--remove', 'claude'], { env });
    assert.is(rm.code, 0, rm.stderr);
    assert.match(rm.stderr, /removed the MCP server agentsnap from/);
    assert.is(read(repo, '.mcp.json'), mine, "exactly the user's file again");
    assert.not.ok(fs.existsSync(path.join(repo.dir, '.claude')), 'hooks gone too');
    // The file stays (it holds the user's server), so it stays excluded; a file that was only agentsnap's goes, and its line.
    fs.rmSync(path.join(repo.dir, '.mcp.json'));
    fs.writeFileSync(path.join(repo.dir, '.git', 'info', 'exclude'), excludeBefore);
    assert.is((await cliProcess(repo, ['init', 'claude', '--mcp'], { env })).code, 0);
    assert.is((await cliProcess(repo, ['init', '--remove', 'claude'], { env })).code, 0);
    assert.not.ok(fs.existsSync(path.join(repo.dir, '.mcp.json')));
    assert.is(exclude(repo), excludeBefore);
  } finally {
    repo.cleanup();
  }
});

test('init --mcp without agentsnap on PATH declares this install by its paths; a committed .mcp.json or another server named agentsnap is refused before anything is written', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const res = await cliProcess(repo, ['init', 'claude', '--mcp'], { env: { PATH: path.dirname(process.execPath) + ':/usr/bin:/bin' } });
    assert.is(res.code, 0, res.stderr);
    const cfg = JSON.parse(read(repo, '.mcp.json')) as { mcpServers: { agentsnap: { command: string; args: string[] } } };
    assert.is(cfg.mcpServers.agentsnap.command, process.execPath);
    assert.match(cfg.mcpServers.agentsnap.args[0]!, /bin\/agentsnap\.js$/);
    assert.equal(cfg.mcpServers.agentsnap.args.slice(1), ['mcp']);
    assert.is((await cliProcess(repo, ['init', '--remove', 'claude'])).code, 0);

    // Another server of that name: the user's.
    const theirs = `${JSON.stringify({ mcpServers: { agentsnap: { command: 'something-else' } } }, null, 2)}\n`;
    repo.write('.mcp.json', theirs);
    const refused = await cliProcess(repo, ['init', 'claude', '--mcp']);
    assert.is(refused.code, 3, refused.stderr);
    assert.match(refused.stderr, /already declares an MCP server named agentsnap that is not agentsnap's/);
    assert.is(read(repo, '.mcp.json'), theirs);
    assert.not.ok(fs.existsSync(path.join(repo.dir, '.claude')), 'refused before the hooks were written');
    const removed = await cliProcess(repo, ['init', '--remove', 'claude']);
    assert.is(removed.code, 0, removed.stderr);
    assert.is(read(repo, '.mcp.json'), theirs, "--remove leaves a server that is not agentsnap's");

    // Committed.
    repo.write('.mcp.json', '{}\n');
    repo.git(['add', '.mcp.json']);
    repo.git(['commit', '-q', '-m', 'shared servers']);
    const committed = await cliProcess(repo, ['init', 'claude', '--mcp']);
    assert.is(committed.code, 3, committed.stderr);
    assert.match(committed.stderr, /\.mcp\.json is committed/);
    assert.match(committed.stderr, /claude mcp add --scope local agentsnap -- agentsnap mcp/);
    assert.is(read(repo, '.mcp.json'), '{}\n');
  } finally {
    repo.cleanup();
  }
});

test("init codex --mcp: a marked [mcp_servers.agentsnap] table appended to .codex/config.toml; --remove takes exactly it out; a table of the user's of that name is refused", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  const env = { ...repo.env, PATH: agentsnapOnPath(repo.base) };
  try {
    const mine = 'model = "o4"\n\n[mcp_servers.docs]\ncommand = "docs-server"\n';
    repo.write('.codex/config.toml', mine);
    const res = await cliProcess(repo, ['init', 'codex', '--mcp'], { env });
    assert.is(res.code, 0, res.stderr);
    const text = read(repo, '.codex/config.toml');
    assert.ok(text.startsWith(mine), text);
    assert.match(text, /^\[mcp_servers\.agentsnap\]\ncommand = "agentsnap"\nargs = \["mcp"\]\n$/m);
    assert.ok(fs.existsSync(path.join(repo.dir, '.codex', 'hooks.json')));
    assert.is((await cliProcess(repo, ['init', 'codex', '--mcp'], { env })).code, 0);
    assert.is(read(repo, '.codex/config.toml'), text, 'idempotent');
    // A table the user added after it stays where it is.
    fs.appendFileSync(path.join(repo.dir, '.codex', 'config.toml'), '\n[profiles.fast]\nmodel = "mini"\n');
    assert.is((await cliProcess(repo, ['init', '--remove', 'codex'], { env })).code, 0);
    assert.is(read(repo, '.codex/config.toml'), `${mine}\n[profiles.fast]\nmodel = "mini"\n`);

    repo.write('.codex/config.toml', '[mcp_servers.agentsnap]\ncommand = "mine"\n');
    const refused = await cliProcess(repo, ['init', 'codex', '--mcp'], { env });
    assert.is(refused.code, 3, refused.stderr);
    assert.match(refused.stderr, /already declares an MCP server named agentsnap that init did not write/);
    assert.is(read(repo, '.codex/config.toml'), '[mcp_servers.agentsnap]\ncommand = "mine"\n');
    assert.not.ok(fs.existsSync(path.join(repo.dir, '.codex', 'hooks.json')), 'nothing written');

    // Only agentsnap's: the file goes with --remove.
    fs.rmSync(path.join(repo.dir, '.codex'), { recursive: true });
    assert.is((await cliProcess(repo, ['init', 'codex', '--mcp'], { env })).code, 0);
    assert.is((await cliProcess(repo, ['init', '--remove', 'codex'], { env })).code, 0);
    assert.not.ok(fs.existsSync(path.join(repo.dir, '.codex')));
  } finally {
    repo.cleanup();
  }
});

test("init gemini --mcp: mcpServers.agentsnap in .gemini/settings.json beside its hooks and the user's settings; --remove gives the file back", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  const env = { ...repo.env, PATH: agentsnapOnPath(repo.base) };
  try {
    const mine = `${JSON.stringify({ theme: 'dark', mcpServers: { other: { command: 'o' } } }, null, 2)}\n`;
    repo.write('.gemini/settings.json', mine);
    const res = await cliProcess(repo, ['init', 'gemini', '--mcp'], { env });
    assert.is(res.code, 0, res.stderr);
    const cfg = JSON.parse(read(repo, '.gemini/settings.json')) as {
      theme: string;
      hooks: Record<string, unknown>;
      mcpServers: Record<string, unknown>;
    };
    assert.is(cfg.theme, 'dark');
    assert.ok(cfg.hooks.BeforeTool);
    assert.equal(cfg.mcpServers, { other: { command: 'o' }, agentsnap: { command: 'agentsnap', args: ['mcp'] } });
    assert.is((await cliProcess(repo, ['init', '--remove', 'gemini'], { env })).code, 0);
    assert.is(read(repo, '.gemini/settings.json'), mine);
    fs.rmSync(path.join(repo.dir, '.gemini'), { recursive: true });
    assert.is((await cliProcess(repo, ['init', 'gemini', '--mcp'], { env })).code, 0);
    assert.is((await cliProcess(repo, ['init', '--remove', 'gemini'], { env })).code, 0);
    assert.not.ok(fs.existsSync(path.join(repo.dir, '.gemini')), "a file that was only agentsnap's goes");
  } finally {
    repo.cleanup();
  }
});

/** A stand-in agent named `name` on PATH: it writes its arguments (and for Gemini its run's settings) next to the repo. */
function fakeAgent(repo: TempRepo, name: string): string {
  const dir = path.join(repo.base, 'fake-bin');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, name);
  const script = [
    `const fs = require('node:fs');`,
    `fs.writeFileSync(${JSON.stringify(path.join(repo.base, `${name}-argv.json`))}, JSON.stringify(process.argv.slice(2)));`,
    `const home = process.env.GEMINI_CLI_HOME;`,
    `if (home) fs.copyFileSync(home + '/.gemini/settings.json', ${JSON.stringify(path.join(repo.base, `${name}-settings.json`))});`,
  ].join('\n');
  fs.writeFileSync(file, `#!${process.execPath}\n${script}\n`, { mode: 0o755 });
  return `${dir}${path.delimiter}${repo.env.PATH ?? ''}`;
}

const argvOf = (repo: TempRepo, name: string) => JSON.parse(fs.readFileSync(path.join(repo.base, `${name}-argv.json`), 'utf8')) as string[];

test('wrap --mcp -- claude: --mcp-config=<json> for the run (this install, this session and worktree), the prompt left as it is, no file written; the server it names runs', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const env = { PATH: fakeAgent(repo, 'claude') };
    const res = await cliProcess(repo, ['wrap', '--mcp', '--', 'claude', 'fix the bug', '-p'], { env });
    assert.is(res.code, 0, res.stderr);
    assert.match(res.stderr, /MCP server agentsnap offered/);
    const id = /started session (\S+)/.exec(res.stderr)![1]!;
    const argv = argvOf(repo, 'claude');
    const at = argv.findIndex((a) => a.startsWith('--mcp-config='));
    assert.is(at, 0, argv.join(' '));
    const cfg = JSON.parse(argv[at]!.slice('--mcp-config='.length)) as {
      mcpServers: { agentsnap: { type: string; command: string; args: string[] } };
    };
    const server = cfg.mcpServers.agentsnap;
    assert.is(server.command, process.execPath);
    assert.equal(server.args.slice(1), ['mcp', '--session', id, '--worktree', repo.dir]);
    assert.equal(argv.slice(-2), ['fix the bug', '-p'], 'the prompt is still the prompt');
    assert.ok(argv.includes('--settings'), 'the hooks as usual');
    assert.is(repo.git(['status', '--porcelain', '--ignored']), '', "no file of the user's written");
    // Started anywhere, with any environment: it acts on this worktree and session.
    const started = await startDeclared(repo, server, { ...repo.env, AGENTSNAP_SESSION: '' });
    assert.ok(started.tools.includes('list_steps'));
    assert.match(started.steps, new RegExp(`session ${id}`));
    // Without --mcp, no MCP config.
    assert.is((await cliProcess(repo, ['wrap', '--', 'claude', '-p', 'x'], { env })).code, 0);
    assert.not.ok(argvOf(repo, 'claude').some((a) => a.startsWith('--mcp-config')));
  } finally {
    repo.cleanup();
  }
});

test("wrap --mcp -- codex: -c mcp_servers.agentsnap.command/args for the run; wrap --mcp -- gemini: mcpServers.agentsnap in the run's overlay settings only", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const codex = await cliProcess(repo, ['wrap', '--mcp', '--', 'codex', 'exec', 'do it'], { env: { PATH: fakeAgent(repo, 'codex') } });
    assert.is(codex.code, 0, codex.stderr);
    const id = /started session (\S+)/.exec(codex.stderr)![1]!;
    const argv = argvOf(repo, 'codex');
    const value = (key: string) => {
      const i = argv.findIndex((a, j) => argv[j - 1] === '-c' && a.startsWith(`${key}=`));
      assert.ok(i > 0, `${key} in ${argv.join(' ')}`);
      return JSON.parse(argv[i]!.slice(key.length + 1)) as unknown; // TOML basic strings and arrays of them are JSON
    };
    assert.is(value('mcp_servers.agentsnap.command'), process.execPath);
    assert.equal((value('mcp_servers.agentsnap.args') as string[]).slice(1), ['mcp', '--session', id, '--worktree', repo.dir]);
    assert.equal(argv.slice(-2), ['exec', 'do it']);

    // Gemini: the user's own settings stay as they are, before and after.
    const userSettings = path.join(repo.home, '.gemini', 'settings.json');
    fs.mkdirSync(path.dirname(userSettings), { recursive: true });
    const mine = `${JSON.stringify({ theme: 'dark' }, null, 2)}\n`;
    fs.writeFileSync(userSettings, mine);
    const gemini = await cliProcess(repo, ['wrap', '--mcp', '--', 'gemini', '-p', 'x'], { env: { PATH: fakeAgent(repo, 'gemini') } });
    assert.is(gemini.code, 0, gemini.stderr);
    const run = JSON.parse(fs.readFileSync(path.join(repo.base, 'gemini-settings.json'), 'utf8')) as {
      theme: string;
      mcpServers: { agentsnap: { command: string; args: string[] } };
    };
    assert.is(run.theme, 'dark');
    assert.is(run.mcpServers.agentsnap.command, process.execPath);
    assert.equal(run.mcpServers.agentsnap.args.slice(1, 3), ['mcp', '--session']);
    assert.is(fs.readFileSync(userSettings, 'utf8'), mine);
    assert.is(repo.git(['status', '--porcelain', '--ignored']), '');
  } finally {
    repo.cleanup();
  }
});

test('wrap --mcp with an agent agentsnap has no per-run MCP mechanism for: a warning naming the command to add', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  try {
    const res = await cliProcess(repo, ['wrap', '--mcp', '--', 'true']);
    assert.is(res.code, 0, res.stderr);
    assert.match(res.stderr, /--mcp: agentsnap knows no per-run MCP configuration of true; add .*agentsnap\.js.* mcp/);
  } finally {
    repo.cleanup();
  }
});

test.run();
