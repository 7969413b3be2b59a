// `agentsnap ui` at the HTTP level (issue 20): every security rule of the page's
// server, and its endpoints over a real session in a real repository.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { BIN, cli, tempRepo, type TempRepo } from '../support/helpers.js';
import { CHECK, recordClaudeSession, recordScriptedSession, request, SECRET, type Reply } from '../support/ui-helpers.js';
import { startUiServer, type UiServer } from '../../src/ui/server.js';

interface Fixture {
  repo: TempRepo;
  ui: UiServer;
  session: string;
  failing: number;
  host: string;
  origin: string;
  /** The Cookie header the page's first load sets (it serves the page's files). */
  cookie: string;
  get(p: string, headers?: Record<string, string>): Promise<Reply>;
  post(name: string, body: unknown, headers?: Record<string, string>): Promise<Reply>;
}

async function fixture(): Promise<Fixture> {
  const repo = tempRepo({ files: { README: 'readme\n' } });
  const { session, failing } = await recordScriptedSession(repo);
  const ui = await startUiServer({ cwd: repo.dir, env: repo.env });
  const host = `127.0.0.1:${ui.port}`;
  const origin = `http://${host}`;
  const auth = { Host: host, 'X-Agentsnap-Token': ui.token };
  const page = await request(ui.port, 'GET', `/?token=${ui.token}`, { Host: host });
  const cookie = String(page.headers['set-cookie']).split(';')[0] as string;
  return {
    repo,
    ui,
    session,
    failing,
    host,
    origin,
    cookie,
    get: (p, headers = {}) => request(ui.port, 'GET', p, { ...auth, ...headers }),
    post: (name, body, headers = {}) =>
      request(ui.port, 'POST', `/api/${name}`, { ...auth, Origin: origin, ...headers }, JSON.stringify(body)),
  };
}

async function withFixture(fn: (f: Fixture) => Promise<void>): Promise<void> {
  const f = await fixture();
  try {
    await fn(f);
  } finally {
    await f.ui.close();
    f.repo.cleanup();
  }
}

const noCors = (r: Reply, what: string) => {
  const cors = Object.keys(r.headers).filter((h) => h.startsWith('access-control-'));
  assert.equal(cors, [], `${what}: no CORS header`);
};

test('ui: binds 127.0.0.1 only (not ::1, not another address of this machine); the CLI prints a URL with the token and stops on SIGTERM', async () => {
  const repo = tempRepo({ files: { README: 'readme\n' } });
  const child = spawn(process.execPath, [BIN, 'ui', '--no-open'], { cwd: repo.dir, env: repo.env, stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    let out = '';
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /http:\/\/127\.0\.0\.1:(\d+)\/\?token=([A-Za-z0-9_-]{43})\n/.exec(out);
        if (m) resolve(m[0].trim());
      });
      child.once('exit', (code) => reject(new Error(`agentsnap ui exited ${code} before printing its URL: ${out}${err}`)));
    });
    const u = new URL(url);
    const port = Number(u.port);
    const page = await request(port, 'GET', `/${u.search}`, { Host: u.host });
    assert.is(page.status, 200, page.body);
    const refused = (host: string) =>
      new Promise<string>((resolve) => {
        const s = net.connect({ host, port }, () => {
          s.destroy();
          resolve('connected');
        });
        s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
      });
    assert.is(await refused('::1'), 'ECONNREFUSED', 'not on ::1');
    const others = Object.values(os.networkInterfaces())
      .flat()
      .filter((a) => a && a.family === 'IPv4' && !a.internal)
      .map((a) => a!.address);
    for (const a of others) assert.is(await refused(a), 'ECONNREFUSED', `not on ${a}`);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    assert.is(await exited, 0, err);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    repo.cleanup();
  }
});

test('ui: the token is required for the page (401 without it or wrong), sets an HttpOnly SameSite=Strict cookie; every /api call needs it in its header, a cookie alone is not enough', async () => {
  await withFixture(async (f) => {
    const host = { Host: f.host };
    assert.is((await request(f.ui.port, 'GET', '/', host)).status, 401);
    assert.is((await request(f.ui.port, 'GET', '/?token=wrong', host)).status, 401);
    assert.is((await request(f.ui.port, 'GET', `/?token=${f.ui.token.slice(0, -1)}x`, host)).status, 401);
    assert.is((await request(f.ui.port, 'GET', '/app.js', host)).status, 401, "the page's files too");
    const page = await request(f.ui.port, 'GET', `/?token=${f.ui.token}`, host);
    assert.is(page.status, 200);
    assert.match(page.body, `<meta name="agentsnap-token" content="${f.ui.token}">`);
    const cookie = String(page.headers['set-cookie']);
    assert.match(cookie, new RegExp(`^agentsnap_ui_${f.ui.port}=[A-Za-z0-9_-]{43};`));
    assert.not.match(cookie, f.ui.token, 'the cookie is not the token (ui.attack.test.ts)');
    assert.match(cookie, 'HttpOnly');
    assert.match(cookie, 'SameSite=Strict');
    const withCookie = { ...host, Cookie: cookie.split(';')[0] as string };
    assert.is((await request(f.ui.port, 'GET', '/app.js', withCookie)).status, 200, "the cookie serves the page's files");
    assert.is((await request(f.ui.port, 'GET', '/api/sessions', withCookie)).status, 401, 'the API wants the header, not the cookie');
    assert.is((await request(f.ui.port, 'GET', '/api/sessions', { ...host, 'X-Agentsnap-Token': 'nope' })).status, 401);
    assert.is((await f.get('/api/sessions')).status, 200);
    assert.is(
      (
        await request(f.ui.port, 'GET', '/app.js', {
          ...host,
          Cookie: (cookie.split(';')[0] as string).replace(`_${f.ui.port}=`, `_${f.ui.port + 1}=`),
        })
      ).status,
      401,
      "another port's cookie",
    );
    // Two servers, two tokens (random, from crypto).
    const other = await startUiServer({ cwd: f.repo.dir, env: f.repo.env });
    try {
      assert.is.not(other.token, f.ui.token);
      assert.is(
        (await request(other.port, 'GET', '/api/sessions', { Host: `127.0.0.1:${other.port}`, 'X-Agentsnap-Token': f.ui.token })).status,
        401,
      );
    } finally {
      await other.close();
    }
  });
});

test('ui: a request whose Host is not 127.0.0.1:<port> or localhost:<port> is refused (DNS rebinding), token or not', async () => {
  await withFixture(async (f) => {
    for (const host of [
      'evil.example',
      `evil.example:${f.ui.port}`,
      `127.0.0.1:${f.ui.port + 1}`,
      '127.0.0.1',
      `localhost.evil.example:${f.ui.port}`,
      `[::1]:${f.ui.port}`,
    ]) {
      const r = await f.get('/api/sessions', { Host: host });
      assert.is(r.status, 421, `Host ${host}`);
      assert.not.match(r.body, f.session, 'nothing of the repository in the answer');
      const page = await request(f.ui.port, 'GET', `/?token=${f.ui.token}`, { Host: host });
      assert.is(page.status, 421, `page, Host ${host}`);
    }
    assert.is((await f.get('/api/sessions', { Host: `localhost:${f.ui.port}` })).status, 200);
  });
});

test("ui: a mutating request whose Origin is not the page's own is refused (CSRF), and nothing is written", async () => {
  await withFixture(async (f) => {
    const before = f.repo.read('README').toString();
    for (const origin of ['http://evil.example', `http://localhost:${f.ui.port}`, `https://127.0.0.1:${f.ui.port}`, 'null']) {
      const r = await f.post('undo', { session: f.session, step: 1 }, { Origin: origin });
      assert.is(r.status, 403, `Origin ${origin}`);
    }
    // No Origin at all: refused too.
    const bare = await request(
      f.ui.port,
      'POST',
      '/api/undo',
      { Host: f.host, 'X-Agentsnap-Token': f.ui.token },
      JSON.stringify({ session: f.session, step: 1 }),
    );
    assert.is(bare.status, 403);
    assert.is(f.repo.read('README').toString(), before, 'the worktree is untouched');
    assert.ok(f.repo.exists('src.txt'));
    // The page's own origin (localhost when the page was opened as localhost) goes through.
    const own = await f.post(
      'undo',
      { session: f.session, step: 1, dryRun: true },
      { Host: `localhost:${f.ui.port}`, Origin: `http://localhost:${f.ui.port}` },
    );
    assert.is(own.status, 200, own.body);
    // Other methods: refused whatever they carry.
    assert.is(
      (await request(f.ui.port, 'PUT', '/api/undo', { Host: f.host, 'X-Agentsnap-Token': f.ui.token, Origin: f.origin }, '{}')).status,
      405,
    );
    assert.is((await f.get('/api/undo')).status, 405, 'an operation is never a GET');
  });
});

test("ui: no CORS headers, a preflight gets none; every answer has CSP default-src 'self' with no external source", async () => {
  await withFixture(async (f) => {
    const pre = await request(f.ui.port, 'OPTIONS', '/api/undo', {
      Host: f.host,
      Origin: 'http://evil.example',
      'Access-Control-Request-Method': 'POST',
      'Access-Control-Request-Headers': 'x-agentsnap-token',
    });
    assert.ok(pre.status >= 400, `preflight refused: ${pre.status}`);
    noCors(pre, 'preflight');
    const replies = [
      await request(f.ui.port, 'GET', `/?token=${f.ui.token}`, { Host: f.host, Origin: 'http://evil.example' }),
      await f.get('/app.js', { Cookie: f.cookie }),
      await f.get('/api/sessions', { Origin: 'http://evil.example' }),
      await f.get('/api/nothing-here'),
      await request(f.ui.port, 'GET', '/', { Host: f.host }),
    ];
    for (const r of replies) {
      noCors(r, `status ${r.status}`);
      const csp = String(r.headers['content-security-policy']);
      assert.match(csp, /(^|; )default-src 'self'(;|$)/);
      assert.not.match(csp, /https?:|\*|unsafe/, `no external or unsafe source: ${csp}`);
      assert.is(r.headers['x-content-type-options'], 'nosniff');
      assert.is(r.headers['x-frame-options'], 'DENY', 'no framing (a Confirm click cannot be hijacked)');
      assert.match(csp, "frame-ancestors 'none'");
    }
    // The page's own files name nothing outside it: no CDN, no external font.
    const page = replies[0]!.body;
    for (const m of page.matchAll(/(?:src|href)="([^"]*)"/g)) assert.not.match(m[1] as string, /^(https?:)?\/\//, `page loads ${m[1]}`);
    for (const css of ['app.css', 'diff2html.css']) {
      const text = (await f.get(`/${css}`, { Cookie: f.cookie })).body;
      assert.not.match(text, /@import|url\(\s*['"]?(https?:)?\/\//, `${css} loads nothing from outside`);
    }
  });
});

test("ui: what the API shows is redacted as the journal is (a token in a call's input never reaches the page)", async () => {
  await withFixture(async (f) => {
    const answers = [
      await f.get(`/api/log?session=${f.session}`),
      await f.get(`/api/show?session=${f.session}&step=3`),
      await f.get(`/api/replay?session=${f.session}`),
      await f.get('/api/search?q=curl'),
    ];
    for (const r of answers) {
      assert.is(r.status, 200, r.body);
      assert.not.ok(r.body.includes(SECRET), `the secret in ${r.body.slice(0, 200)}`);
    }
    assert.match(answers[0]!.body, '[REDACTED:github-token]');
    assert.match(answers[3]!.body, '[REDACTED:github-token]', 'search finds the call, redacted');
  });
});

test('ui endpoints: sessions, log with checks/overlaps/changes between steps, show, diff, replay, status, search, filters, stamp', async () => {
  await withFixture(async (f) => {
    const sessions = (await f.get('/api/sessions')).json() as { id: string; steps: number }[];
    assert.equal(
      sessions.map((s) => [s.id, s.steps]),
      [[f.session, 5]],
    );
    const log = (await f.get(`/api/log?session=${f.session}`)).json();
    assert.equal(
      log.rows.map((r: any) => [r.step.step, r.step.tool, r.check?.verdict ?? null]),
      [
        [1, 'Task', 'pass'],
        [2, 'Read', 'pass'],
        [3, 'Bash', 'pass'],
        [4, 'Write', 'fail'],
        [5, 'Bash', 'pass'],
      ],
    );
    assert.is(log.rows[3].check.command, CHECK);
    assert.equal(log.rows[1].step.overlaps, [1], 'Read ran inside Task');
    assert.equal(
      log.rows[3].step.changedBefore.map((c: any) => c.path),
      ['notes.txt'],
      "the user's edit between steps 3 and 4",
    );
    assert.ok(typeof log.rows[2].what === 'string' && log.rows[2].what.includes('curl'), log.rows[2].what);
    // Filters: by file (from the worktree's top) and by tool.
    assert.equal(
      (await f.get(`/api/log?session=${f.session}&path=src.txt`)).json().rows.map((r: any) => r.step.step),
      [1, 3],
    );
    assert.equal(
      (await f.get(`/api/log?session=${f.session}&tool=Write`)).json().rows.map((r: any) => r.step.step),
      [4],
    );
    // One step: its diff, input and output.
    const show = (await f.get(`/api/show?session=${f.session}&step=${f.failing}`)).json();
    assert.match(show.diff, 'diff --git a/broken.txt b/broken.txt');
    assert.match(show.diff, '+oops');
    assert.equal(show.step.input, { file_path: 'broken.txt', content: 'oops\n' });
    assert.equal(show.step.output, { type: 'create' });
    // Two states; and a state against the worktree.
    const d = (await f.get(`/api/diff?session=${f.session}&from=0&to=5`)).json();
    assert.match(d.diff, 'b/src.txt');
    assert.match(d.diff, '-readme');
    assert.is((await f.get(`/api/diff?session=${f.session}&from=5&to=worktree`)).json().diff, '');
    // The conversation (here: the steps, in order; a generic agent keeps no transcript).
    const replay = (await f.get(`/api/replay?session=${f.session}`)).json();
    assert.equal(
      replay.entries.filter((e: any) => e.type === 'step').map((e: any) => e.step),
      [1, 2, 3, 4, 5],
    );
    const status = (await f.get(`/api/status?session=${f.session}`)).json();
    assert.is(status.session, f.session);
    assert.equal(
      (await f.get('/api/search?q=broken.txt')).json().rows.map((r: any) => [r.session, r.step.step]),
      [
        [f.session, 4],
        [f.session, 5],
      ],
    );
    // The live refresh's stamp moves when the journal does.
    const s1 = (await f.get('/api/stamp')).json().stamp;
    assert.is((await f.get('/api/stamp')).json().stamp, s1, 'stable while nothing happens');
    const next = await cli(f.repo, ['snap', '-m', 'a new session']);
    assert.is(next.code, 0, next.stderr);
    assert.is.not((await f.get('/api/stamp')).json().stamp, s1);
    // Mistakes: named, with the API's error.
    const bad = await f.get(`/api/show?session=${f.session}&step=abc`);
    assert.is(bad.status, 400);
    assert.is(bad.json().error.code, 'InvalidArgument');
    const out = await f.get(`/api/show?session=${f.session}&step=99`);
    assert.is(out.status, 400);
    assert.is(out.json().error.code, 'StepOutOfRange');
    assert.is((await f.get('/api/nope')).status, 404);
    for (const p of ['/../package.json', '/%2e%2e/package.json', '/..%2fpackage.json', '/%2e%2e%2f%2e%2e%2fpackage.json', '/.git/config']) {
      assert.is((await f.get(p, { Cookie: f.cookie })).status, 404, `only the page's own files: ${p}`);
    }
    assert.is((await f.post('undo', 'x'.repeat(70_000))).status, 413);
  });
});

test("ui operations: undo dry run changes nothing, undo, refusal over the user's edit (409, nothing written), redo with force; restore one file; revert one step", async () => {
  await withFixture(async (f) => {
    const dry = await f.post('undo', { session: f.session, step: f.failing, dryRun: true });
    assert.is(dry.status, 200, dry.body);
    const plan = dry.json().files;
    assert.is(plan.dryRun, true);
    assert.equal(
      plan.changes.map((c: any) => [c.change, c.path]),
      [['M', 'README']],
    );
    assert.is(f.repo.read('README').toString(), 'docs\n', 'a dry run writes nothing');
    const done = await f.post('undo', { session: f.session, step: f.failing });
    assert.is(done.status, 200, done.body);
    assert.equal(done.json().files.undone, [4, 5]);
    assert.is(f.repo.read('README').toString(), 'readme\n');
    assert.not.ok(f.repo.exists('broken.txt'));
    assert.is(f.repo.read('notes.txt').toString(), 'the user was here\n', "the user's change before step 4 stays");
    assert.equal((await f.get(`/api/status?session=${f.session}`)).json().undone, [4, 5]);

    // The user edits a file the redo would overwrite: the dry run says it would refuse, the real run refuses.
    f.repo.write('README', 'mine\n');
    const redoDry = (await f.post('redo', { session: f.session, dryRun: true })).json();
    assert.is(redoDry.wouldRefuse, true);
    // The undo changed README and so did the user: both changed it, refused without --merge or --force (issue 32).
    assert.equal(
      redoDry.both.map((o: any) => o.path),
      ['README'],
    );
    const refused = await f.post('redo', { session: f.session });
    assert.is(refused.status, 409);
    assert.is(refused.json().error.code, 'Refused');
    assert.ok(refused.json().error.hint, 'with a hint (the force option)');
    assert.is(f.repo.read('README').toString(), 'mine\n', 'nothing written');
    const forced = await f.post('redo', { session: f.session, force: true });
    assert.is(forced.status, 200, forced.body);
    assert.is(f.repo.read('README').toString(), 'docs\n');
    assert.ok(forced.json().safety, "the user's edit is in a safety snapshot");

    // Revert only step 5 (broken.txt back, README as before it); restore one file as before step 3.
    const revDry = (await f.post('revert', { session: f.session, step: 5, dryRun: true })).json();
    assert.equal(revDry.changes.map((c: any) => c.path).sort(), ['README', 'broken.txt']);
    assert.not.ok(f.repo.exists('broken.txt'), 'a dry run writes nothing');
    const rev = await f.post('revert', { session: f.session, step: 5 });
    assert.is(rev.status, 200, rev.body);
    assert.is(f.repo.read('broken.txt').toString(), 'oops\n');
    assert.is(f.repo.read('README').toString(), 'readme\n');
    const rdry = (await f.post('restore', { session: f.session, step: 3, paths: ['src.txt'], dryRun: true })).json();
    assert.equal(
      rdry.changes.map((c: any) => c.path),
      ['src.txt'],
    );
    assert.is(f.repo.read('src.txt').toString(), 'v2\n');
    assert.is((await f.post('restore', { session: f.session, step: 3, paths: ['src.txt'] })).status, 200);
    assert.is(f.repo.read('src.txt').toString(), 'v1\n');
    assert.is((await f.post('restore', { session: f.session, step: 3, paths: [] })).status, 400, 'a restore names its paths');
  });
});

test("ui: --session names the page's first session (a wrong one fails at the start, exit 1); a port in use: exit 5", async () => {
  await withFixture(async (f) => {
    const page = await request(f.ui.port, 'GET', `/?token=${f.ui.token}`, { Host: f.host });
    assert.match(page.body, `<meta name="agentsnap-session" content="${f.session}">`, "this worktree's most recent session by default");
    const wrong = await cli(f.repo, ['ui', '--no-open', '--session', 'no-such-session']);
    assert.is(wrong.code, 1, wrong.stderr);
    const busy = await cli(f.repo, ['ui', '--no-open', '--port', String(f.ui.port)]);
    assert.is(busy.code, 5, busy.stderr);
    assert.match(busy.stderr, `port ${f.ui.port}`);
  });
});

test("ui: the conversation of a Claude Code session (replay) reaches the page in order, the user's words redacted", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  const { session, step } = await recordClaudeSession(repo);
  const ui = await startUiServer({ cwd: repo.dir, env: repo.env });
  try {
    const r = await request(ui.port, 'GET', `/api/replay?session=${session}`, {
      Host: `127.0.0.1:${ui.port}`,
      'X-Agentsnap-Token': ui.token,
    });
    assert.is(r.status, 200, r.body);
    assert.not.ok(r.body.includes(SECRET), 'the secret the user typed');
    const entries = r.json().entries as { type: string; text?: string; step?: number }[];
    assert.equal(
      entries.map((e) => e.type),
      ['session', 'step', 'user', 'assistant', 'step'],
    );
    assert.match(entries[2]!.text!, 'Please fix the greeting; the deploy token is [REDACTED:github-token].');
    assert.is(entries[4]!.step, step);
  } finally {
    await ui.close();
    repo.cleanup();
  }
});

test('ui: the page files ship in dist/ui-page (built, no build step for users) and package.json ships dist', () => {
  const dir = path.join(path.dirname(new URL(import.meta.url).pathname), '..', '..', 'dist', 'ui-page');
  for (const f of ['index.html', 'app.js', 'app.css', 'diff2html.css']) assert.ok(fs.existsSync(path.join(dir, f)), `dist/ui-page/${f}`);
  const pkg = JSON.parse(fs.readFileSync(path.join(dir, '..', '..', 'package.json'), 'utf8')) as { files: string[] };
  assert.ok(pkg.files.includes('dist'));
});

test.run();
