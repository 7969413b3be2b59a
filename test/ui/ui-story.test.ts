// Issue 32 item 6 on the web page, in the real browser the ui tests use (test/support/chromium.ts; skipped, with the
// reason, where no Chromium can be had): a step recorded without input (`snap -m`) is named in its Input box by its
// text, not "(none)". Every wait is Playwright's polling of the page with a generous bound: no sleeps.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chromium as playwright, type Browser } from 'playwright-core';
import { cli, tempRepo } from '../support/helpers.js';
import { chromium, CHROMIUM_ARGS } from '../support/chromium.js';
import { startUiServer, type UiServer } from '../../src/ui/server.js';

const browserPath = chromium();
const WAIT = 120_000;
const run = browserPath.path ? test : test.skip;
if (!browserPath.path) console.log(`ui-story: skipped: ${browserPath.reason}`);

run("ui: the Input of a `snap -m` checkpoint is its text, not '(none)'", async () => {
  const repo = tempRepo({ files: { 'a.txt': 'one\n' } });
  let browser: Browser | null = null;
  let ui: UiServer | null = null;
  try {
    repo.write('a.txt', 'two\n');
    const snap = await cli(repo, ['snap', '-m', 'before the refactor', '--json']);
    assert.is(snap.code, 0, snap.stderr);
    const n = (JSON.parse(snap.stdout) as { step: number }).step;
    ui = await startUiServer({ cwd: repo.dir, env: repo.env });
    browser = await playwright.launch({ executablePath: browserPath.path as string, args: CHROMIUM_ARGS, timeout: WAIT });
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    page.setDefaultTimeout(WAIT);
    await page.goto(ui.url);
    await page.waitForSelector('body[data-ready="true"]');
    await page.locator(`#timeline li.step[data-step="${n}"] button`).click();
    // The step's view is filled once its show answer came: its meta line, its diff title.
    await page.locator('#diff-title', { hasText: `What step ${n} changed` }).waitFor();
    assert.is((await page.locator('#input').innerText()).trim(), 'before the refactor');
  } finally {
    await browser?.close();
    await ui?.close();
    repo.cleanup();
  }
});

test.run();
