// The page of `agentsnap ui` as a person reads it (issue 32 item 16), in the real
// browser the ui tests use (Playwright with Debian's Chromium; skipped with the
// reason where there is none): times in the viewer's own time zone, a link to
// each step, Redo offered only when there is something to redo, a long line
// that does not widen the page, a failed check's first failure. Every wait is
// Playwright's polling of the page with a generous bound: no sleeps.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chromium as playwright, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { cli, tempRepo, type TempRepo } from '../support/helpers.js';
import { chromium, CHROMIUM_ARGS } from '../support/chromium.js';
import { openSession, show, undo } from '../../src/index.js';
import { startUiServer, type UiServer } from '../../src/ui/server.js';

const browserPath = chromium();
const WAIT = 120_000;
const LONG_LINE = `${'x'.repeat(1000)} ${'y'.repeat(999)}`;

/** A check in the runner's manner: a passing test, the failing one, then the closing summary. */
const CHECK_SCRIPT = [
  'if test -e broken.txt; then',
  "  printf 'ok 1 - reads the config\\nnot ok 2 - broken.txt must not exist\\n  at check.sh:2\\n'",
  '  i=0; while [ $i -lt 6 ]; do echo "# detail line $i"; i=$((i+1)); done',
  "  printf '# tests 2\\n# pass 1\\n# fail 1\\n'",
  '  exit 1',
  'fi',
  "printf 'ok 1 - reads the config\\nok 2 - broken.txt must not exist\\n# tests 2\\n# pass 2\\n# fail 0\\n'",
  '',
].join('\n');

/** Step 1 writes a file with a 2000-character line; step 2 creates broken.txt, which fails the check. */
async function record(repo: TempRepo): Promise<string> {
  const s = await openSession(repo.dir, { env: repo.env, agent: 'scripted-agent' });
  await s.toolCall('Write', { file_path: 'long.txt', content: 'a long line' }, () => {
    repo.write('long.txt', `${LONG_LINE}\n`);
    return { type: 'create' };
  });
  await s.toolCall('Write', { file_path: 'broken.txt', content: 'oops\n' }, () => {
    repo.write('broken.txt', 'oops\n');
    return { type: 'create' };
  });
  await s.end();
  const check = await cli(repo, ['check', '--session', s.id, '--each', '--run', 'sh check.sh']);
  assert.is(check.code, 1, `the state after step 2 fails: exit 1\n${check.stdout}${check.stderr}`);
  return s.id;
}

type Ctx = {
  repo: TempRepo;
  ui: UiServer;
  id: string;
  open: (hash: string, opts?: { timezoneId?: string; viewport?: { width: number; height: number } }) => Promise<Page>;
};

async function withPage(fn: (ctx: Ctx) => Promise<void>): Promise<void> {
  const repo = tempRepo({ files: { README: 'readme\n', 'check.sh': CHECK_SCRIPT } });
  let browser: Browser | null = null;
  let ui: UiServer | null = null;
  const contexts: BrowserContext[] = [];
  try {
    const id = await record(repo);
    ui = await startUiServer({ cwd: repo.dir, env: repo.env });
    const url = ui.url;
    const launched = await playwright.launch({ executablePath: browserPath.path as string, args: CHROMIUM_ARGS, timeout: WAIT });
    browser = launched;
    const open = async (hash: string, opts: { timezoneId?: string; viewport?: { width: number; height: number } } = {}): Promise<Page> => {
      const context = await launched.newContext({ viewport: { width: 1400, height: 900 }, locale: 'en-US', ...opts });
      contexts.push(context);
      const page = await context.newPage();
      page.setDefaultTimeout(WAIT);
      await page.goto(`${url}${hash}`);
      await page.waitForSelector('body[data-ready="true"]');
      return page;
    };
    await fn({ repo, ui, id, open });
  } finally {
    for (const c of contexts) await c.close();
    await browser?.close();
    await ui?.close();
    repo.cleanup();
  }
}

const run = browserPath.path ? test : test.skip;
if (!browserPath.path) console.log(`ui-web-page: skipped: ${browserPath.reason}`);

run('ui page: a step shows its time in the viewer’s own time zone (Asia/Tokyo, then UTC)', async () => {
  await withPage(async ({ repo, id, open }) => {
    const startedAt = (await show({ cwd: repo.dir, env: repo.env, session: id, step: 1 })).step.startedAt;
    const at = new Date(startedAt);
    const inZone = (timeZone: string) =>
      new Intl.DateTimeFormat('en-US', { dateStyle: 'medium', timeStyle: 'medium', timeZone }).format(at);
    assert.is.not(inZone('Asia/Tokyo'), inZone('UTC'), 'the two zones differ (9 hours apart)');
    for (const zone of ['Asia/Tokyo', 'UTC']) {
      const page = await open(`#session=${id}&step=1`, { timezoneId: zone });
      await page.locator('#step-meta div').first().waitFor();
      const meta = await page.locator('#step-meta').innerText();
      assert.ok(meta.includes(inZone(zone)), `${zone}: ${JSON.stringify(inZone(zone))} in ${JSON.stringify(meta)}`);
      assert.not.ok(meta.includes(startedAt), 'not the raw ISO time of the journal');
    }
  });
});

run('ui page: the address names the open session and step; opening that address shows that step', async () => {
  await withPage(async ({ id, open }) => {
    // Opened by a link: that step is the one on show.
    const page = await open(`#session=${id}&step=2`);
    await page.locator('#timeline li.step.selected[data-step="2"]').waitFor();
    assert.match(await page.locator('#step-title').innerText(), /^Step 2\b/);
    assert.match(await page.locator('#diff').innerText(), 'broken.txt');
    // Opening another step puts it in the address.
    await page.locator('#timeline li.step[data-step="1"] button').click();
    await page.locator('#timeline li.step.selected[data-step="1"]').waitFor();
    assert.is(new URL(page.url()).hash, `#session=${id}&step=1`);
    // Without a link: the session is named, no step is open.
    const plain = await open('');
    assert.is(await plain.locator('#step-view').isHidden(), true);
    assert.is(new URL(plain.url()).hash, `#session=${id}`);
  });
});

run('ui page: Redo is disabled, saying why, while there is nothing to redo; enabled after an undo', async () => {
  await withPage(async ({ repo, id, open }) => {
    const before = await open(`#session=${id}`);
    const redo = before.locator('#redo');
    assert.is(await redo.isDisabled(), true, 'no undo yet');
    assert.match((await redo.getAttribute('title')) ?? '', /Nothing to redo/);

    await undo({ cwd: repo.dir, env: repo.env, session: id, step: 2 });
    assert.is(repo.exists('broken.txt'), false, 'the undo took step 2 back');
    const after = await open(`#session=${id}`);
    await after.locator('#redo:not([disabled])').waitFor();
    assert.match((await after.locator('#redo').getAttribute('title')) ?? '', /before the last undo/);
  });
});

run(
  'ui page: a 2000-character line scrolls inside its pane of the diff (side by side and inline, wide and narrow window); the page keeps the window’s width',
  async () => {
    await withPage(async ({ id, open }) => {
      for (const width of [1400, 1000]) {
        const page = await open(`#session=${id}&step=1`, { viewport: { width, height: 900 } });
        for (const mode of ['side-by-side', 'line-by-line']) {
          await page.locator(`input[name="diff-mode"][value="${mode}"]`).check();
          await page
            .locator(mode === 'side-by-side' ? '#diff .d2h-file-side-diff' : '#diff .d2h-file-diff')
            .first()
            .waitFor();
          assert.match(await page.locator('#diff').innerText(), 'xxxxxxxxxx');
          const widths = await page.evaluate(() => {
            // The pane holding the long line (the old side of a new file is empty).
            const panes = [...document.querySelectorAll('#diff .d2h-file-side-diff, #diff .d2h-file-diff')] as HTMLElement[];
            const pane = panes.reduce((a, b) => (b.scrollWidth > a.scrollWidth ? b : a));
            return {
              page: document.documentElement.scrollWidth,
              window: window.innerWidth,
              detailRight: (document.querySelector('#detail') as HTMLElement).getBoundingClientRect().right,
              paneRight: Math.max(...panes.map((p) => p.getBoundingClientRect().right)),
              paneScroll: pane.scrollWidth,
              paneClient: pane.clientWidth,
            };
          });
          const at = `${mode}, ${width} px: ${JSON.stringify(widths)}`;
          assert.ok(widths.page <= widths.window, `the page is no wider than the window: ${at}`);
          assert.ok(widths.detailRight <= widths.window, `the detail pane ends inside the window: ${at}`);
          assert.ok(widths.paneRight <= widths.window, `the diff's pane ends inside the window: ${at}`);
          assert.ok(widths.paneScroll > widths.paneClient, `the long line scrolls inside its pane: ${at}`);
        }
      }
    });
  },
);

run('ui page: a failed check shows its first failure, not the runner’s closing summary', async () => {
  await withPage(async ({ id, open }) => {
    const page = await open(`#session=${id}&step=2`);
    const first = page.locator('#step-meta .check-line.fail .first-failure');
    await first.waitFor();
    const text = await first.innerText();
    assert.match(text, /^not ok 2 - broken\.txt must not exist/, JSON.stringify(text));
    assert.not.match(text, '# fail 1', 'not the summary');
    assert.not.match(text, 'ok 1 - reads the config', 'not the passing test before it');
    // The whole output is still there, folded.
    assert.is(await page.locator('#step-meta .check-output').count(), 1);
    assert.is(await page.locator('#step-meta .check-output').getAttribute('open'), null, 'folded');
  });
});

test.run();
