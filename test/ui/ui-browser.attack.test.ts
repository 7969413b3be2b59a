// `agentsnap ui` attacked in a real browser (issue 20): hostile text from the
// agent (file names, tool names, inputs, outputs, messages, diffs), what another
// server on 127.0.0.1 sees of the page's cookie, the file the browser is opened
// on, a double click on Confirm. Playwright drives Debian's Chromium; skipped,
// with the reason, where there is none. No sleeps: Playwright's polling with a
// generous bound, or bounded polls of what is on disk.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import http from 'node:http';
import { pathToFileURL } from 'node:url';
import { chromium as playwright, type Browser } from 'playwright-core';
import { cli, tempRepo } from '../support/helpers.js';
import { recordScriptedSession, request } from '../support/ui-helpers.js';
import { chromium, CHROMIUM_ARGS } from '../support/chromium.js';
import { openSession } from '../../src/index.js';
import { startUiServer } from '../../src/ui/server.js';
import { launchFile } from '../../src/ui/open.js';

const browserPath = chromium();
const WAIT = 120_000;
const run = browserPath.path ? test : test.skip;
if (!browserPath.path) console.log(`ui-browser.attack: skipped: ${browserPath.reason}`);

async function withBrowser(fn: (b: Browser) => Promise<void>): Promise<void> {
  const browser = await playwright.launch({ executablePath: browserPath.path as string, args: CHROMIUM_ARGS, timeout: WAIT });
  try {
    await fn(browser);
  } finally {
    await browser.close();
  }
}

/** Breaks out of text into markup, in every context a renderer could put it (text, attribute, URL). */
const HOSTILE = (tag: string) => `"><img src=x onerror="window.__pwned='${tag}'"><script>window.__pwned='${tag}'</script>`;

run(
  'ui in Chromium: hostile file names, tool names, inputs, outputs, messages and diff lines stay text (no element of theirs in the page, no script of theirs run)',
  async () => {
    const repo = tempRepo({ files: { README: 'readme\n' } });
    let ui: { close(): Promise<void> } | null = null;
    try {
      const s = await openSession(repo.dir, { env: repo.env, agent: `agent${HOSTILE('agent')}` });
      const evilName = `x"><img src=y onerror="window.__pwned='name'">.txt`;
      await s.toolCall(
        `Tool${HOSTILE('tool')}`,
        { file_path: evilName, command: `javascript:window.__pwned='input'//${HOSTILE('input')}` },
        () => {
          repo.write(evilName, `<script>window.__pwned='diff'</script>\n${HOSTILE('diff')}\n`);
          return { stdout: HOSTILE('stdout'), stderr: HOSTILE('stderr') };
        },
      );
      await s.checkpoint(`checkpoint ${HOSTILE('message')}`);
      await s
        .toolCall('Bash', { command: 'false' }, () => {
          throw new Error(`failed ${HOSTILE('error')}`);
        })
        .catch(() => undefined);
      await s.end();
      const server = await startUiServer({ cwd: repo.dir, env: repo.env });
      ui = server;
      await withBrowser(async (browser) => {
        const page = await browser.newPage();
        page.setDefaultTimeout(WAIT);
        const problems: string[] = [];
        page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
        page.on('dialog', (d) => {
          problems.push(`dialog: ${d.message()}`);
          void d.dismiss();
        });
        await page.goto(server.url);
        await page.waitForSelector('body[data-ready="true"]');
        const foreign = () =>
          page.evaluate(() => ({
            pwned: (window as unknown as { __pwned?: string }).__pwned ?? null,
            elements: [
              ...document.querySelectorAll('img, iframe, object, embed, a[href^="javascript"], script:not([src]), [onerror], [onclick]'),
            ].map((e) => e.outerHTML),
          }));
        assert.equal(await foreign(), { pwned: null, elements: [] }, 'the timeline');
        assert.match(await page.locator('#timeline').innerText(), 'onerror="window.__pwned=\'tool\'"', 'the tool name shows, as text');
        for (const n of ['1', '2', '3']) {
          await page.locator(`#timeline li.step[data-step="${n}"] button`).click();
          await page
            .locator('#step-title')
            .filter({ hasText: `Step ${n}` })
            .waitFor();
          await page.waitForFunction(() => document.querySelector('#conversation')?.children.length);
          if (n === '1') {
            await page.locator('#diff .d2h-file-wrapper').first().waitFor();
            assert.match(await page.locator('#diff').innerText(), "<script>window.__pwned='diff'</script>", 'the diff line, as text');
            assert.match(await page.locator('#output').innerText(), 'onerror="window.__pwned=\'stdout\'"');
          }
          assert.equal(await foreign(), { pwned: null, elements: [] }, `step ${n}`);
        }
        await page.locator('#search').fill('pwned');
        await page.locator('#search-list li button').first().waitFor();
        await page.locator('#cmp-from').selectOption('0');
        await page.locator('#cmp-go').click();
        await page.locator('#diff .d2h-file-wrapper').first().waitFor();
        assert.equal(await foreign(), { pwned: null, elements: [] }, 'search and compare');
        assert.equal(problems, []);
      });
    } finally {
      await ui?.close();
      repo.cleanup();
    }
  },
);

run(
  "ui in Chromium: another server on 127.0.0.1 the browser visits gets the page's cookie (cookies ignore ports), and with it neither the page nor the API",
  async () => {
    const repo = tempRepo({ files: { README: 'readme\n' } });
    await recordScriptedSession(repo);
    const ui = await startUiServer({ cwd: repo.dir, env: repo.env });
    const seen: string[] = [];
    const evil = http.createServer((req, res) => {
      seen.push(req.headers.cookie ?? '');
      res.end('<!doctype html><title>another local server</title>');
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', () => resolve()));
    const evilPort = (evil.address() as { port: number }).port;
    try {
      await withBrowser(async (browser) => {
        const page = await browser.newPage();
        page.setDefaultTimeout(WAIT);
        await page.goto(ui.url);
        await page.waitForSelector('body[data-ready="true"]');
        await page.goto(`http://127.0.0.1:${evilPort}/`);
      });
      const cookies = seen.join('; ');
      assert.match(cookies, `agentsnap_ui_${ui.port}=`, 'the browser sent it: this is what the test is about');
      const Host = `127.0.0.1:${ui.port}`;
      for (const part of cookies
        .split(';')
        .map((c) => c.trim())
        .filter(Boolean)) {
        const value = part.slice(part.indexOf('=') + 1);
        assert.not.ok(value.includes(ui.token), 'the token itself');
        const pageWith = await request(ui.port, 'GET', '/', { Host, Cookie: part });
        assert.is(pageWith.status, 401, 'the page');
        assert.not.ok(pageWith.body.includes(ui.token));
        assert.is(
          (await request(ui.port, 'GET', '/api/sessions', { Host, 'X-Agentsnap-Token': value, Cookie: part })).status,
          401,
          'the API',
        );
      }
    } finally {
      await new Promise<void>((resolve) => evil.close(() => resolve()));
      await ui.close();
      repo.cleanup();
    }
  },
);

run('ui in Chromium: the file the browser is opened on (instead of the URL, which holds the token) leads to the page', async () => {
  const repo = tempRepo({ files: { README: 'readme\n' } });
  await recordScriptedSession(repo);
  const ui = await startUiServer({ cwd: repo.dir, env: { ...repo.env } });
  const launch = launchFile(ui.url, { TMPDIR: repo.base });
  try {
    await withBrowser(async (browser) => {
      const page = await browser.newPage();
      page.setDefaultTimeout(WAIT);
      await page.goto(pathToFileURL(launch.file).href);
      await page.waitForSelector('body[data-ready="true"]');
      assert.is(new URL(page.url()).origin, `http://127.0.0.1:${ui.port}`);
      assert.ok((await page.locator('#timeline li.step').count()) > 0);
    });
  } finally {
    launch.close();
    await ui.close();
    repo.cleanup();
  }
});

run(
  'ui in Chromium: a double click on Confirm runs the operation once (two undos would take the undo of the first one as well)',
  async () => {
    const repo = tempRepo({ files: { README: 'readme\n' } });
    const { session } = await recordScriptedSession(repo);
    // Two undos, so that a second redo would have something to take back too.
    assert.is((await cli(repo, ['undo', '--session', session])).code, 0);
    assert.is((await cli(repo, ['undo', '--session', session])).code, 0);
    const ui = await startUiServer({ cwd: repo.dir, env: repo.env });
    const ops = async (): Promise<number> => {
      const r = await cli(repo, ['status', '--json', '--session', session]);
      assert.is(r.code, 0, r.stderr);
      return (JSON.parse(r.stdout) as { ops: unknown[] }).ops.length;
    };
    try {
      const before = await ops();
      await withBrowser(async (browser) => {
        const page = await browser.newPage();
        page.setDefaultTimeout(WAIT);
        await page.goto(ui.url);
        await page.waitForSelector('body[data-ready="true"]');
        await page.locator('#redo').click();
        await page.locator('#dialog-body .dry').waitFor();
        await page.locator('#dialog-confirm:not([disabled])').dblclick();
        await page.locator('#dialog-body .done').waitFor();
      });
      assert.is(await ops(), before + 1, 'one redo');
    } finally {
      await ui.close();
      repo.cleanup();
    }
  },
);

run(
  "ui in Chromium: an agent's call between the dry run and Confirm: the dialog shows the new plan (nothing done) and the next Confirm does that one",
  async () => {
    const repo = tempRepo({ files: { README: 'readme\n' } });
    const s = await openSession(repo.dir, { env: repo.env, agent: 'scripted-agent' });
    await s.toolCall('Write', { file_path: 'a.txt' }, () => repo.write('a.txt', 'a\n'));
    const ui = await startUiServer({ cwd: repo.dir, env: repo.env });
    try {
      await withBrowser(async (browser) => {
        const page = await browser.newPage();
        page.setDefaultTimeout(WAIT);
        await page.goto(ui.url);
        await page.waitForSelector('body[data-ready="true"]');
        await page.locator('#timeline li.step[data-step="1"] button').click();
        await page.locator('#act-undo').click();
        await page.locator('#dialog-body .dry').waitFor();
        assert.not.match(await page.locator('#dialog-body').innerText(), 'b.txt');
        await s.toolCall('Write', { file_path: 'b.txt' }, () => repo.write('b.txt', 'b\n'));
        await page.locator('#dialog-confirm:not([disabled])').click();
        await page.locator('#dialog-body .plan-changed').waitFor();
        assert.match(await page.locator('#dialog-body').innerText(), 'b.txt', 'the new plan names the new file');
        assert.ok(repo.exists('a.txt') && repo.exists('b.txt'), 'nothing done');
        await page.locator('#dialog-confirm:not([disabled])').click();
        await page.locator('#dialog-body .done').waitFor();
      });
      assert.not.ok(repo.exists('a.txt') || repo.exists('b.txt'), 'the plan confirmed the second time');
    } finally {
      await s.end();
      await ui.close();
      repo.cleanup();
    }
  },
);

run(
  'ui in Chromium: a dry run that answers after its dialog was cancelled and another opened is dropped: Confirm runs the operation the dialog names',
  async () => {
    const repo = tempRepo({ files: { README: 'readme\n' } });
    const { session, failing } = await recordScriptedSession(repo);
    const ui = await startUiServer({ cwd: repo.dir, env: repo.env });
    try {
      await withBrowser(async (browser) => {
        const page = await browser.newPage();
        page.setDefaultTimeout(WAIT);
        // The undo's dry run is held until the test lets it go (a slow dry run on a big repository).
        let release!: () => void;
        const held = new Promise<void>((r) => (release = r));
        let holding = true;
        await page.route('**/api/undo', async (route) => {
          if (holding) {
            holding = false;
            await held;
          }
          await route.continue();
        });
        await page.goto(ui.url);
        await page.waitForSelector('body[data-ready="true"]');
        await page.locator(`#timeline li.step[data-step="${failing + 1}"] button`).click();
        await page.locator('#act-undo').click();
        await page.locator('#dialog-body').filter({ hasText: 'Dry run…' }).waitFor();
        await page.locator('#dialog-cancel').click();
        await page.locator('#act-revert').click();
        await page.locator('#dialog-body .dry').waitFor();
        assert.match(await page.locator('#dialog-title').innerText(), 'Revert only step');
        const late = page.waitForResponse((r) => r.url().endsWith('/api/undo'));
        release();
        await late;
        // Whatever the late answer did to the dialog, it is done once the page has run its handlers; a round trip
        // through the page's own fetch is after them.
        await page.evaluate(() => fetch('/favicon.svg').then((r) => r.text()));
        assert.match(await page.locator('#dialog-title').innerText(), 'Revert only step');
        await page.locator('#dialog-confirm:not([disabled])').click();
        await page.locator('#dialog-body .done').waitFor();
      });
      const st = await cli(repo, ['status', '--json', '--session', session]);
      const ops = (JSON.parse(st.stdout) as { ops: { kind: string }[] }).ops;
      assert.equal(
        ops.map((o) => o.kind),
        ['revert'],
        'the operation the dialog named, and only it',
      );
    } finally {
      await ui.close();
      repo.cleanup();
    }
  },
);

run(
  "ui in Chromium: a step's answer that comes after another session's step was selected is dropped (the diff on show is the selected step's)",
  async () => {
    const repo = tempRepo({ files: { README: 'readme\n' } });
    const a = await openSession(repo.dir, { env: repo.env, agent: 'agent-a' });
    await a.toolCall('Write', { file_path: 'from-a.txt' }, () => repo.write('from-a.txt', 'a\n'));
    await a.end();
    const b = await openSession(repo.dir, { env: repo.env, agent: 'agent-b' });
    await b.toolCall('Write', { file_path: 'from-b.txt' }, () => repo.write('from-b.txt', 'b\n'));
    await b.end();
    const ui = await startUiServer({ cwd: repo.dir, env: repo.env });
    try {
      await withBrowser(async (browser) => {
        const page = await browser.newPage();
        page.setDefaultTimeout(WAIT);
        let release!: () => void;
        const held = new Promise<void>((r) => (release = r));
        await page.route('**/api/show?*', async (route) => {
          if (route.request().url().includes(`session=${a.id}`)) await held;
          await route.continue();
        });
        await page.goto(ui.url);
        await page.waitForSelector('body[data-ready="true"]');
        await page.locator(`#session-list li[data-session="${a.id}"] button`).click();
        await page.locator('#session-head').filter({ hasText: a.id }).waitFor();
        await page.locator('#timeline li.step[data-step="1"] button').click();
        await page.locator(`#session-list li[data-session="${b.id}"] button`).click();
        await page.locator('#session-head').filter({ hasText: b.id }).waitFor();
        await page.locator('#timeline li.step[data-step="1"] button').click();
        await page.locator('#diff').filter({ hasText: 'from-b.txt' }).waitFor();
        const late = page.waitForResponse((r) => r.url().includes('/api/show') && r.url().includes(`session=${a.id}`));
        release();
        await late;
        await page.evaluate(() => fetch('/favicon.svg').then((r) => r.text()));
        const diff = await page.locator('#diff').innerText();
        assert.match(diff, 'from-b.txt');
        assert.not.match(diff, 'from-a.txt', "session A's step under session B");
        assert.equal(await page.locator('#restore-path option').allInnerTexts(), ['from-b.txt']);
      });
    } finally {
      await ui.close();
      repo.cleanup();
    }
  },
);

run(
  "ui in Chromium: an undo while an agent's call is still running says so: what the call wrote is taken for the user's edits, kept and listed",
  async () => {
    const repo = tempRepo({ files: { README: 'readme\n' } });
    const s = await openSession(repo.dir, { env: repo.env, agent: 'scripted-agent' });
    await s.toolCall('Write', { file_path: 'a.txt' }, () => repo.write('a.txt', 'a\n'));
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const call = s.toolCall('Bash', { command: 'make' }, async () => {
      repo.write('b.txt', 'b\n');
      started();
      await held;
      return 'ok';
    });
    await running;
    const ui = await startUiServer({ cwd: repo.dir, env: repo.env });
    try {
      await withBrowser(async (browser) => {
        const page = await browser.newPage();
        page.setDefaultTimeout(WAIT);
        await page.goto(ui.url);
        await page.waitForSelector('body[data-ready="true"]');
        await page.locator('#timeline li.step[data-step="1"] button').click();
        await page.locator('#act-undo').click();
        await page.locator('#dialog-body .dry').waitFor();
        const note = page.locator('#dialog-body .running');
        await note.waitFor();
        assert.match(await note.innerText(), 'step 2');
        assert.match(await note.innerText(), 'taken for your edits');
        // The new undo (issue 32 item 1): b.txt, which no recorded call changed, is kept as the user's and listed.
        assert.match(await page.locator('#dialog-body').innerText(), /b\.txt: your edit/);
        assert.is(await page.locator('#dialog-body .refusal').count(), 0);
      });
      assert.ok(repo.exists('a.txt') && repo.exists('b.txt'), 'nothing written');
    } finally {
      release();
      await call;
      await s.end();
      await ui.close();
      repo.cleanup();
    }
  },
);

test.run();
