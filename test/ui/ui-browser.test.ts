// `agentsnap ui` in a real browser (issue 20): playwright-core drives Debian's
// Chromium (test/support/chromium.ts installs the OS package when missing and
// possible; nothing is downloaded by Playwright). Skipped, with the reason, where
// no Chromium can be had. Every wait is Playwright's polling of the page with a
// generous bound, or a bounded poll of the file on disk: no sleeps.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chromium as playwright, type Browser, type Page } from 'playwright-core';
import { tempRepo, type TempRepo } from '../support/helpers.js';
import { recordClaudeSession, recordScriptedSession, SECRET } from '../support/ui-helpers.js';
import { chromium, CHROMIUM_ARGS } from '../support/chromium.js';
import { openSession } from '../../src/index.js';
import { startUiServer, type UiServer } from '../../src/ui/server.js';

const browserPath = chromium();
const WAIT = 120_000;

/** Polls until the file holds `want` (a user observes the bytes on disk), bounded. */
async function fileBecomes(repo: TempRepo, rel: string, want: string | null): Promise<void> {
  const until = Date.now() + WAIT;
  for (;;) {
    const now = repo.exists(rel) ? repo.read(rel).toString() : null;
    if (now === want) return;
    if (Date.now() > until) assert.is(now, want, `${rel} on disk`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

type Ctx = { repo: TempRepo; ui: UiServer; page: Page; failing: number; requests: string[]; problems: string[] };

async function session(
  fn: (ctx: Ctx) => Promise<void>,
  record: (repo: TempRepo) => Promise<{ failing: number }> = recordScriptedSession,
  files: Record<string, string> = { README: 'readme\n' },
): Promise<void> {
  const repo = tempRepo({ files });
  let browser: Browser | null = null;
  let ui: UiServer | null = null;
  try {
    const { failing } = await record(repo);
    ui = await startUiServer({ cwd: repo.dir, env: repo.env });
    browser = await playwright.launch({ executablePath: browserPath.path as string, args: CHROMIUM_ARGS, timeout: WAIT });
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    page.setDefaultTimeout(WAIT);
    const requests: string[] = [];
    const problems: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console: ${m.text()}`);
    });
    await page.goto(ui.url);
    await page.waitForSelector('body[data-ready="true"]');
    try {
      await fn({ repo, ui, page, failing, requests, problems });
    } catch (e) {
      // What the user would have seen when a wait ran out: the dialog's text and the page's errors.
      const seen = await page
        .locator('#dialog-body')
        .innerText({ timeout: 5_000 })
        .catch((x: Error) => `(unreadable: ${x.message})`);
      if (e instanceof Error) e.message += `\n  dialog: ${JSON.stringify(seen)}\n  page problems: ${JSON.stringify(problems)}`;
      throw e;
    }
  } finally {
    await browser?.close();
    await ui?.close();
    repo.cleanup();
  }
}

const run = browserPath.path ? test : test.skip;
if (!browserPath.path) console.log(`ui-browser: skipped: ${browserPath.reason}`);

run(
  'ui in Chromium: find the failing step by its red mark, see its diff, undo to before it (dry run, confirm), a refusal when a file was edited meanwhile, redo with force',
  async () => {
    await session(async ({ repo, ui, page, failing, requests, problems }) => {
      // The one red step of the timeline is the one whose check failed.
      const red = page.locator('#timeline li.step.check-failed');
      assert.is(await red.count(), 1);
      assert.is(await red.getAttribute('data-step'), String(failing));
      assert.is((await red.locator('.check').textContent())?.trim(), '✗');
      const border = await red.locator('button').evaluate((b) => getComputedStyle(b).borderLeftColor);
      assert.is(border, 'rgb(207, 34, 46)', 'marked red');
      assert.is(await page.locator('#timeline li.step .check.pass').count(), 4, 'the other states passed');
      assert.ok((await page.locator('#timeline li.between').count()) >= 1, 'changes between steps are marked');
      assert.ok((await page.locator('#timeline li.step.overlapping').count()) === 1, 'the overlapping call is marked');

      // Its diff, side by side then inline (diff2html), its input and output.
      await red.locator('button').click();
      await page.locator('#diff .d2h-file-side-diff').first().waitFor();
      assert.match(await page.locator('#diff').innerText(), 'broken.txt');
      assert.match(await page.locator('#diff').innerText(), 'oops');
      await page.locator('input[name="diff-mode"][value="line-by-line"]').check();
      await page.locator('#diff .d2h-file-diff').first().waitFor();
      assert.is(await page.locator('#diff .d2h-file-side-diff').count(), 0);
      assert.match(await page.locator('#input').innerText(), '"file_path": "broken.txt"');
      assert.match(await page.locator('#step-meta').innerText(), '✗ check fail');

      // Undo to before it: the dry run first (nothing written), then the confirmation.
      await page.locator('#act-undo').click();
      await page.locator('#dialog-body .dry').waitFor();
      assert.match(await page.locator('#dialog-body').innerText(), 'M README');
      assert.is(repo.read('README').toString(), 'docs\n', 'nothing happens before the confirmation');
      await page.locator('#dialog-confirm:not([disabled])').click();
      await page.locator('#dialog-body .done').waitFor();
      await fileBecomes(repo, 'README', 'readme\n');
      await page.locator('#dialog-cancel').click();
      await page.locator(`#timeline li.step.is-undone[data-step="${failing}"]`).waitFor();

      // Redo: its dry run is clean; then the user edits README before confirming: the real run refuses, with its reason.
      await page.locator('#redo').click();
      await page.locator('#dialog-body .dry').waitFor();
      assert.is(await page.locator('#dialog-body .refusal').count(), 0);
      repo.write('README', 'mine\n');
      await page.locator('#dialog-confirm:not([disabled])').click();
      const refusal = page.locator('#dialog-body .refusal');
      await refusal.waitFor();
      assert.match(await refusal.innerText(), /README|outside|changed/);
      assert.is(await page.locator('#dialog-confirm').isDisabled(), true, 'no going ahead without the force box');
      assert.is(repo.read('README').toString(), 'mine\n', 'the refusal wrote nothing');
      await page.locator('#force').check();
      await page.locator('#dialog-confirm:not([disabled])').click();
      await page.locator('#dialog-body .done').waitFor();
      await fileBecomes(repo, 'README', 'docs\n');
      await fileBecomes(repo, 'broken.txt', null);
      await page.locator('#dialog-cancel').click();
      await page.locator(`#timeline li.step[data-step="${failing}"]:not(.is-undone)`).waitFor();
      // Both operations are rows of the timeline, after the steps, in the order they ran (issue 32 item 2).
      await page.locator('#timeline li.op[data-op="2"]').waitFor();
      assert.match(await page.locator('#timeline li.op[data-op="1"]').innerText(), /op 1 · undo · undo \d+: back to before step \d+/);
      assert.match(await page.locator('#timeline li.op[data-op="2"]').innerText(), 'op 2 · redo · redo: back to before operation 1');
      const order = await page
        .locator('#timeline li')
        .evaluateAll((lis) => lis.map((li) => li.getAttribute('data-op') ?? (li.getAttribute('data-step') ? 's' : '')));
      assert.equal(order.filter((x) => x !== '').slice(-2), ['1', '2'], 'after every step');

      // The page asked nothing of any other origin, and broke no rule of its CSP (the refusal's 409 is the one error logged).
      const origin = new URL(ui.url).origin;
      assert.equal(
        requests.filter((u) => !u.startsWith(`${origin}/`)),
        [],
      );
      assert.equal(
        problems.filter((p) => !p.includes('status of 409 (Conflict)')),
        [],
      );
    });
  },
);

run('ui in Chromium: refreshes by itself when an agent records a new session; search and the file filter narrow the steps', async () => {
  await session(async ({ repo, page, problems }) => {
    assert.is(await page.locator('#session-list li.session').count(), 1);
    const s = await openSession(repo.dir, { env: repo.env, agent: 'second-agent' });
    await s.toolCall('Write', { file_path: 'later.txt' }, () => repo.write('later.txt', 'later\n'));
    await s.end();
    await page.locator('#session-list li.session:nth-child(2)').waitFor();
    await page.locator('#filter-file').fill('src.txt');
    await page.waitForFunction(() => document.querySelectorAll('#timeline li.step').length === 2);
    assert.equal(await page.locator('#timeline li.step').evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.step)), ['1', '3']);
    await page.locator('#search').fill('later.txt');
    await page.locator('#search-list li button').first().waitFor();
    assert.match(await page.locator('#search-list').innerText(), s.id);
    assert.equal(problems, []);
  });
});

run(
  'ui in Chromium: a step of a Claude Code session shows the conversation around it (redacted); compare two states; revert one step; restore one file',
  async () => {
    await session(
      async ({ repo, page, problems }) => {
        await page.locator('#timeline li.step[data-step="2"] button').click();
        const conv = page.locator('#conversation');
        await conv.locator('.msg.user').waitFor();
        const text = await conv.innerText();
        assert.match(text, 'Please fix the greeting; the deploy token is [REDACTED:github-token].');
        assert.match(text, 'I will edit a.txt first.');
        assert.not.ok(text.includes(SECRET));
        assert.ok(text.indexOf('Please fix') < text.indexOf('step 2: Edit'), 'in order: the prompt, then the call');
        await page.locator('#cmp-from').selectOption('0');
        await page.locator('#cmp-to').selectOption('2');
        await page.locator('#cmp-go').click();
        await page.locator('#diff .d2h-file-wrapper').first().waitFor();
        assert.match(await page.locator('#diff').innerText(), 'a.txt');
        assert.is(await page.locator('#actions').isVisible(), false, 'no step actions while comparing');

        // Revert only step 2, then restore its one file as after it: each through its dry run and Confirm.
        await page.locator('#timeline li.step[data-step="2"] button').click();
        await page.locator('#actions').waitFor();
        await page.locator('#act-revert').click();
        await page.locator('#dialog-body .dry').waitFor();
        assert.match(await page.locator('#dialog-body').innerText(), 'M a.txt');
        assert.is(repo.read('a.txt').toString(), 'two\n');
        await page.locator('#dialog-confirm:not([disabled])').click();
        await page.locator('#dialog-body .done').waitFor();
        await fileBecomes(repo, 'a.txt', 'one\n');
        await page.locator('#dialog-cancel').click();
        await page.locator('#restore-path').selectOption('a.txt');
        await page.locator('#restore-when').selectOption('after');
        await page.locator('#act-restore').click();
        await page.locator('#dialog-body .dry').waitFor();
        assert.match(await page.locator('#dialog-title').innerText(), 'Restore a.txt as after step 2');
        await page.locator('#dialog-confirm:not([disabled])').click();
        await page.locator('#dialog-body .done').waitFor();
        await fileBecomes(repo, 'a.txt', 'two\n');
        assert.equal(problems, []);
      },
      async (repo) => ({ failing: (await recordClaudeSession(repo)).step }),
      { 'a.txt': 'one\n' },
    );
  },
);

run('ui in Chromium: Redo clicked while the page still reloads after an undo opens its dry run (the click is not dropped)', async () => {
  await session(async ({ repo, page, failing, problems }) => {
    await page.locator(`#timeline li.step[data-step="${failing}"] button`).click();
    await page.locator('#actions').waitFor();
    await page.locator('#act-undo').click();
    await page.locator('#dialog-body .dry').waitFor();
    // The page's reload after the undo is held at its first request until the Redo dialog is on show: no race, a gate.
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let held = 0;
    await page.route('**/api/show*', async (route) => {
      held++;
      await gate;
      await route.continue();
    });
    await page.locator('#dialog-confirm:not([disabled])').click();
    await page.locator('#dialog-body .done').waitFor();
    await fileBecomes(repo, 'README', 'readme\n');
    await page.locator('#dialog-cancel').click();
    await page.locator('#redo').click();
    await page.locator('#dialog-body .dry').waitFor();
    assert.match(await page.locator('#dialog-title').innerText(), 'Redo');
    // The reload reaches the gate (it is held, not skipped), then goes on (the route stays: it lets all through now).
    for (const until = Date.now() + WAIT; held === 0; ) {
      if (Date.now() > until) assert.unreachable('the reload after the undo never asked for the step');
      await new Promise((r) => setTimeout(r, 50));
    }
    release();
    await page.locator('#dialog-confirm:not([disabled])').click();
    await page.locator('#dialog-body .done').waitFor();
    await fileBecomes(repo, 'README', 'docs\n');
    await page.locator('#dialog-cancel').click();
    await page.locator(`#timeline li.step[data-step="${failing}"]:not(.is-undone)`).waitFor();
    assert.equal(problems, []);
  });
});

test.run();
