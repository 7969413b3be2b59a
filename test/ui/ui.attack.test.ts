// `agentsnap ui` attacked at the HTTP level (issue 20): what a hostile local
// user, a hostile page on another port of 127.0.0.1 or a careless user can do.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { BIN, tempRepo } from '../support/helpers.js';
import { recordScriptedSession, request } from '../support/ui-helpers.js';
import { startUiServer } from '../../src/ui/server.js';
import { openSession } from '../../src/index.js';

const WAIT = 120_000;

/** Polls `probe` until it returns a value (not undefined), bounded by WAIT. */
async function until<T>(what: string, probe: () => T | undefined): Promise<T> {
  const end = Date.now() + WAIT;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** One raw HTTP exchange (what no HTTP client library lets a test forge), the whole answer as text. */
function raw(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host: '127.0.0.1', port }, () => s.write(text));
    let out = '';
    s.on('data', (d: Buffer) => (out += d.toString()));
    s.on('end', () => resolve(out));
    s.on('error', reject);
  });
}

const cookieOf = (setCookie: string | string[] | undefined) => {
  const m = /agentsnap_ui_\d+=([^;]*)/.exec(String(setCookie));
  assert.ok(m, `a cookie is set: ${String(setCookie)}`);
  return m![1] as string;
};

test("ui: the cookie is no key to the page or the API (browsers send 127.0.0.1's cookies to every port of it, so any local server the browser visits gets it)", async () => {
  const repo = tempRepo({ files: { README: 'readme\n' } });
  const ui = await startUiServer({ cwd: repo.dir, env: repo.env });
  try {
    const Host = `127.0.0.1:${ui.port}`;
    const page = await request(ui.port, 'GET', `/?token=${ui.token}`, { Host });
    assert.is(page.status, 200);
    const value = cookieOf(page.headers['set-cookie']);
    const Cookie = `agentsnap_ui_${ui.port}=${value}`;
    assert.is((await request(ui.port, 'GET', '/app.js', { Host, Cookie })).status, 200, "the cookie still serves the page's own files");
    const again = await request(ui.port, 'GET', '/', { Host, Cookie });
    assert.is(again.status, 401, 'the page (it holds the token) needs the token in its URL');
    assert.not.ok(again.body.includes(ui.token));
    assert.is(
      (await request(ui.port, 'GET', '/api/sessions', { Host, 'X-Agentsnap-Token': value })).status,
      401,
      "the cookie's value is not the token",
    );
  } finally {
    await ui.close();
    repo.cleanup();
  }
});

test('ui: the browser is opened on a private file that leads to the page, never on the URL itself (any local user reads argv with ps); the file goes at Ctrl-C, which frees the port', async () => {
  const repo = tempRepo({ files: { README: 'readme\n' } });
  // A stand-in xdg-open: records its argv and what it was asked to open, as a browser would read it.
  const bin = path.join(repo.base, 'fake-bin');
  fs.mkdirSync(bin);
  const seen = path.join(repo.base, 'seen');
  fs.writeFileSync(
    path.join(bin, 'xdg-open'),
    `#!/bin/sh\nprintf '%s\\n' "$@" > '${seen}.argv.tmp'\nif [ -f "$1" ]; then cat "$1" > '${seen}.content'; stat -c %a "$1" > '${seen}.mode'; fi\nmv '${seen}.argv.tmp' '${seen}.argv'\n`,
    { mode: 0o755 },
  );
  const child = spawn(process.execPath, [BIN, 'ui'], {
    cwd: repo.dir,
    env: { ...repo.env, PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}` },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const url = await until('the URL on stdout', () => /http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]{43}/.exec(out)?.[0]);
    const token = new URL(url).searchParams.get('token') as string;
    const argv = await until('the opener to run', () =>
      fs.existsSync(`${seen}.argv`) ? fs.readFileSync(`${seen}.argv`, 'utf8') : undefined,
    );
    assert.not.ok(argv.includes(token), `the token is in the opener's argv: ${argv}`);
    const opened = argv.trim();
    assert.ok(path.isAbsolute(opened), `a file: ${opened}`);
    assert.is(fs.readFileSync(`${seen}.mode`, 'utf8').trim(), '600', 'only its owner reads it');
    const dirMode = (fs.statSync(path.dirname(opened)).mode & 0o777).toString(8);
    assert.is(dirMode, '700', 'in a directory of its own');
    assert.match(fs.readFileSync(`${seen}.content`, 'utf8'), url.replace(/&/g, '&amp;'), 'it leads to the page');
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGINT');
    assert.is(await exited, 0, err);
    assert.not.ok(fs.existsSync(opened), 'the file is gone at exit');
    assert.not.ok(fs.existsSync(path.dirname(opened)), 'and its directory');
    // Ctrl-C freed the port: it can be bound again at once.
    const port = Number(new URL(url).port);
    const again = net.createServer();
    await new Promise<void>((resolve, reject) => {
      again.once('error', reject);
      again.listen(port, '127.0.0.1', () => resolve());
    });
    await new Promise<void>((resolve) => again.close(() => resolve()));
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    repo.cleanup();
  }
});

test('ui --port 80 without the right to bind it: a clear message and exit 2, not an internal error', async () => {
  const probe = spawnSync('setpriv', [
    '--inh-caps=-net_bind_service',
    '--bounding-set=-net_bind_service',
    '--',
    process.execPath,
    '-e',
    "require('net').createServer().listen(80,'127.0.0.1',()=>process.exit(0)).on('error',e=>process.exit(e.code==='EACCES'?3:1))",
  ]);
  if (probe.status !== 3) {
    console.log('  (skipped: needs setpriv and a port 80 that an unprivileged process may not bind)');
    return;
  }
  const repo = tempRepo({ files: { README: 'readme\n' } });
  try {
    const r = spawnSync(
      'setpriv',
      ['--inh-caps=-net_bind_service', '--bounding-set=-net_bind_service', '--', process.execPath, BIN, 'ui', '--no-open', '--port', '80'],
      { cwd: repo.dir, env: repo.env, encoding: 'utf8' },
    );
    assert.is(r.status, 2, r.stderr);
    assert.match(r.stderr, 'port 80');
    assert.not.match(r.stderr, /internal error|bug in agentsnap/);
    assert.match(r.stderr, /--port|above 1023|leave it out/);
  } finally {
    repo.cleanup();
  }
});

test('ui: an absolute-form request whose authority is another host is refused (its target is that host, RFC 9112 3.2.2), and so is a second Host header', async () => {
  const repo = tempRepo({ files: { README: 'readme\n' } });
  const ui = await startUiServer({ cwd: repo.dir, env: repo.env });
  try {
    const host = `127.0.0.1:${ui.port}`;
    const ask = (target: string, hosts: string[]) =>
      raw(
        ui.port,
        `GET ${target} HTTP/1.1\r\n${hosts.map((h) => `Host: ${h}\r\n`).join('')}X-Agentsnap-Token: ${ui.token}\r\nConnection: close\r\n\r\n`,
      );
    const status = (reply: string) => Number(/^HTTP\/1\.1 (\d+)/.exec(reply)?.[1]);
    assert.is(status(await ask('/api/sessions', [host])), 200);
    assert.is(status(await ask(`http://${host}/api/sessions`, [host])), 200, 'absolute form naming us');
    assert.is(status(await ask('http://evil.example/api/sessions', [host])), 421, 'absolute form naming another host');
    assert.is(status(await ask(`http://evil.example:${ui.port}/api/sessions`, [host])), 421);
    assert.is(status(await ask('/api/sessions', [host, 'evil.example'])), 400, 'two Host headers');
  } finally {
    await ui.close();
    repo.cleanup();
  }
});

test('ui: requests that never finish (half a header, a body that never comes) hold up no one else, and close() still ends', async () => {
  const repo = tempRepo({ files: { README: 'readme\n' } });
  const { session } = await recordScriptedSession(repo);
  const ui = await startUiServer({ cwd: repo.dir, env: repo.env });
  const stuck: net.Socket[] = [];
  try {
    const host = `127.0.0.1:${ui.port}`;
    const open = (text: string) =>
      new Promise<void>((resolve, reject) => {
        const s = net.connect({ host: '127.0.0.1', port: ui.port }, () => s.write(text, () => resolve()));
        s.on('error', () => {});
        s.once('error', reject);
        stuck.push(s);
      });
    await open(`GET /api/sessions HTTP/1.1\r\nHost: ${host}\r\nX-Agentsnap-To`);
    await open(
      `POST /api/undo HTTP/1.1\r\nHost: ${host}\r\nOrigin: http://${host}\r\nX-Agentsnap-Token: ${ui.token}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"session":`,
    );
    const r = await request(ui.port, 'GET', `/api/log?session=${session}`, { Host: host, 'X-Agentsnap-Token': ui.token });
    assert.is(r.status, 200, r.body);
    assert.is(r.json().rows.length, 5);
  } finally {
    await ui.close();
    for (const s of stuck) s.destroy();
    repo.cleanup();
  }
});

test("ui: a Confirm does what its dry run showed or nothing: when an agent's call changed the plan in between, 409 PlanChanged with the new dry run, nothing written", async () => {
  const repo = tempRepo({ files: { README: 'readme\n' } });
  const s = await openSession(repo.dir, { env: repo.env, agent: 'scripted-agent' });
  await s.toolCall('Write', { file_path: 'a.txt' }, () => repo.write('a.txt', 'a\n'));
  const ui = await startUiServer({ cwd: repo.dir, env: repo.env });
  try {
    const host = `127.0.0.1:${ui.port}`;
    const post = (body: unknown) =>
      request(ui.port, 'POST', '/api/undo', { Host: host, Origin: `http://${host}`, 'X-Agentsnap-Token': ui.token }, JSON.stringify(body));
    const dry = await post({ session: s.id, step: 1, dryRun: true });
    assert.is(dry.status, 200, dry.body);
    const shown = dry.json();
    assert.equal(
      shown.files.changes.map((c: any) => c.path),
      ['a.txt'],
    );
    assert.type(shown.planId, 'string', 'a dry run names its plan');
    // The agent goes on while the user reads the dialog: a call of its own, not an edit of the user's.
    await s.toolCall('Write', { file_path: 'b.txt' }, () => repo.write('b.txt', 'b\n'));
    const confirm = await post({ session: s.id, step: 1, expect: shown.planId });
    assert.is(confirm.status, 409, confirm.body);
    assert.is(confirm.json().error.code, 'PlanChanged');
    assert.equal(
      confirm
        .json()
        .dryRun.files.changes.map((c: any) => c.path)
        .sort(),
      ['a.txt', 'b.txt'],
      'with the new dry run',
    );
    assert.ok(repo.exists('a.txt') && repo.exists('b.txt'), 'nothing written');
    // Confirming the new plan does it.
    const again = await post({ session: s.id, step: 1, expect: confirm.json().dryRun.planId });
    assert.is(again.status, 200, again.body);
    assert.not.ok(repo.exists('a.txt') || repo.exists('b.txt'));
  } finally {
    await s.end();
    await ui.close();
    repo.cleanup();
  }
});

test("ui: the timeline's answers are bounded by the number of steps, not by what the calls wrote (a Write of 200 KB is in show, not in log or search)", async () => {
  const repo = tempRepo({ files: { README: 'readme\n' } });
  const s = await openSession(repo.dir, { env: repo.env, agent: 'scripted-agent' });
  const big = 'x'.repeat(200_000);
  for (let i = 0; i < 5; i++) await s.toolCall('Write', { file_path: `f${i}.txt`, content: big }, () => repo.write(`f${i}.txt`, big));
  await s.end();
  const ui = await startUiServer({ cwd: repo.dir, env: repo.env });
  try {
    const a = { Host: `127.0.0.1:${ui.port}`, 'X-Agentsnap-Token': ui.token };
    const log = await request(ui.port, 'GET', `/api/log?session=${s.id}`, a);
    assert.is(log.status, 200);
    assert.ok(log.body.length < 100_000, `log: ${log.body.length} bytes for 5 steps`);
    assert.equal(
      log.json().rows.map((r: any) => [r.step.step, r.step.tool, r.what !== null]),
      [1, 2, 3, 4, 5].map((n) => [n, 'Write', true]),
    );
    assert.is(log.json().session.steps.length, 5, "the session's steps are there, for the filters");
    const search = await request(ui.port, 'GET', '/api/search?q=f3.txt', a);
    assert.is(search.status, 200);
    assert.ok(search.body.length < 100_000, `search: ${search.body.length} bytes`);
    assert.equal(
      search.json().rows.map((r: any) => r.step.step),
      [4],
    );
    const show = await request(ui.port, 'GET', `/api/show?session=${s.id}&step=4`, a);
    const input = show.json().step.input;
    assert.is(input.file_path, 'f3.txt', 'one step shows its input');
    assert.ok(typeof input.content === 'string' && input.content.length > 1000 && /^x+/.test(input.content), 'as the journal keeps it');
  } finally {
    await ui.close();
    repo.cleanup();
  }
});

test('ui: the repository removed while the page is open: the live stamp fails (the page says disconnected) instead of reading as "no sessions"', async () => {
  const repo = tempRepo({ files: { README: 'readme\n' } });
  await recordScriptedSession(repo);
  const ui = await startUiServer({ cwd: repo.dir, env: repo.env });
  try {
    const a = { Host: `127.0.0.1:${ui.port}`, 'X-Agentsnap-Token': ui.token };
    assert.is((await request(ui.port, 'GET', '/api/stamp', a)).status, 200);
    fs.rmSync(repo.dir, { recursive: true, force: true });
    const r = await request(ui.port, 'GET', '/api/stamp', a);
    assert.is(r.status, 400, r.body);
    assert.match(r.json().error.message, repo.dir);
  } finally {
    await ui.close();
    repo.cleanup();
  }
});

test("ui: the page's files only, however the path is spelled (double-encoded, backslashes, NUL, a second slash, a trailing one)", async () => {
  const repo = tempRepo({ files: { README: 'readme\n' } });
  const ui = await startUiServer({ cwd: repo.dir, env: repo.env });
  try {
    const Host = `127.0.0.1:${ui.port}`;
    const q = `?token=${ui.token}`;
    assert.is((await request(ui.port, 'GET', `/app.js${q}`, { Host })).status, 200);
    for (const p of [
      '/%252e%252e/package.json',
      '/..%5cpackage.json',
      '/..\\package.json',
      '/app.js%00.png',
      '/%00',
      '//etc/passwd',
      '/app.js/',
      '/.%2e/.%2e/package.json',
      '/%2fetc%2fpasswd',
      '/~',
      '/favicon.svg%20',
    ]) {
      const r = await request(ui.port, 'GET', `${p}${q}`, { Host });
      assert.ok(r.status === 404 || r.status === 400, `${p}: ${r.status}`);
      assert.not.match(r.body, '"name"', `${p}: nothing of package.json`);
    }
  } finally {
    await ui.close();
    repo.cleanup();
  }
});

test.run();
