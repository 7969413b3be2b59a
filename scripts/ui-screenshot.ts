// The README's screenshot of `agentsnap ui` (docs/ui.png): the session the
// browser tests use (test/support/ui-helpers.ts: a scripted agent, a failing check),
// the failing step selected, taken with the tests' Playwright set-up (Debian's
// Chromium, test/support/chromium.ts). Run: npm run build && npm run screenshot:ui
import path from 'node:path';
import { chromium as playwright } from 'playwright-core';
import { ROOT, tempRepo } from '../test/support/helpers.js';
import { recordScriptedSession } from '../test/support/ui-helpers.js';
import { chromium, CHROMIUM_ARGS } from '../test/support/chromium.js';
import { startUiServer } from '../src/ui/server.js';

const out = path.resolve(process.argv[2] ?? path.join(ROOT, 'docs', 'ui.png'));
const browserPath = chromium();
if (!browserPath.path) {
  console.error(`ui-screenshot: ${browserPath.reason}`);
  process.exit(1);
}
const repo = tempRepo({ files: { README: 'readme\n' } });
try {
  const { failing } = await recordScriptedSession(repo);
  const ui = await startUiServer({ cwd: repo.dir, env: repo.env });
  const browser = await playwright.launch({ executablePath: browserPath.path, args: CHROMIUM_ARGS });
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 760 }, deviceScaleFactor: 1 });
    await page.goto(ui.url);
    await page.waitForSelector('body[data-ready="true"]');
    await page.locator(`#timeline li.step[data-step="${failing}"] button`).click();
    await page.locator('#diff .d2h-file-side-diff').first().waitFor();
    // The temp directory's name says nothing to a reader.
    await page.locator('#where').evaluate((e) => (e.textContent = '~/projects/demo'));
    await page.screenshot({ path: out });
    console.log(`ui-screenshot: wrote ${path.relative(process.cwd(), out)}`);
  } finally {
    await browser.close();
    await ui.close();
  }
} finally {
  repo.cleanup();
}
