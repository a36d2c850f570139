import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { RunView } from '@nest-durable/client';
import { defineWorkflow } from '@nest-durable/workflow';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { approvalWorkflow } from '../apps/worker/src/workflows/approval.workflow';
import { type RunningCoordinator, type RunningWorker, startCoordinator, startCustomWorker } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';

/** Debian's Chromium (.ci/run installs it when missing); playwright-core drives it, never a downloaded browser. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ROOT = join(__dirname, '..');
const SCREENSHOTS = join(ROOT, 'test-results', 'dashboard');
const CLIENT_TOKEN = 'dashboard-client-token-0123';
const WORKER_TOKEN = 'dashboard-worker-token-0123';
/** Long enough for a live change to arrive through the feed (or, without it, the pages' 5 s poll). */
const LIVE_MS = 15_000;
/** The coordinator's trace viewer: the run page links a run's trace id there. */
const TRACE_URL_TEMPLATE = 'https://jaeger.example.com/trace/{traceId}';

/** Its task fails while `fragile.failing` is set (one attempt, so the run fails); a retry once it is cleared completes. */
const fragile = { failing: true };
const fragileWorkflow = defineWorkflow<null, string>({
  name: 'dashboard-fragile',
  version: '1',
  handler: async (ctx) => {
    await ctx.task('prepare', () => 'prepared');
    return ctx.task(
      'call-partner',
      () => {
        if (fragile.failing) throw new Error('the partner API answered 502');
        return 'called';
      },
      { retry: { maxAttempts: 1 } },
    );
  },
});

/** Its task's first two attempts throw, the third succeeds: the waterfall shows three bars, each its own duration. */
const flakyWorkflow = defineWorkflow<null, string>({
  name: 'dashboard-flaky',
  version: '1',
  handler: (ctx) =>
    ctx.task(
      'charge',
      async ({ attempt }) => {
        await new Promise((resolve) => setTimeout(resolve, 40));
        if (attempt < 3) throw new Error(`card declined (attempt ${attempt})`);
        return 'charged';
      },
      { retry: { maxAttempts: 3, delayMs: 60, backoff: 'fixed', jitter: false } },
    ),
});

/** A task, a durable sleep, then two more tasks: the timeline shows all four in order. */
const stepsWorkflow = defineWorkflow<null, string>({
  name: 'dashboard-steps',
  version: '1',
  handler: async (ctx) => {
    await ctx.task('validate', () => true);
    // A patch marker among the steps: shown as the branch the run takes.
    if (!ctx.patched('audit')) throw new Error('a new run takes the patched branch');
    await ctx.sleep('cool-down', 50);
    await ctx.task('charge', () => 'charged');
    return ctx.task('notify', () => 'notified');
  },
});

/** Starts an `approval` child and waits for it: its page links to the child's. */
const parentWorkflow = defineWorkflow<null, unknown>({
  name: 'dashboard-parent',
  version: '1',
  handler: (ctx) => ctx.child('approval', approvalWorkflow, { timeoutMs: 3_600_000 }),
});

/** Holds dashboard-live's `import` task: each `next` waits for the test's `open`. */
const importGate = {
  waiting: [] as (() => void)[],
  next(): Promise<void> {
    return new Promise((resolve) => this.waiting.push(resolve));
  },
  open(): void {
    this.waiting.shift()?.();
  },
};

/**
 * The run page's live surface: a query handler (`label`, which the `rename` update changes; an empty label is
 * refused by the handler) and an exposed `stage`, a completion token made (its step shows it masked), a wait for
 * `go` (where updates apply), then a task that reports progress between two openings of the test's gate.
 */
const liveWorkflow = defineWorkflow<null, string>({
  name: 'dashboard-live',
  version: '1',
  updates: { rename: {} },
  handler: async (ctx) => {
    let label = 'draft';
    ctx.onQuery('label', () => label);
    ctx.handleUpdate('rename', (to: string) => {
      if (!to) throw new Error('a label cannot be empty');
      label = to;
      return `renamed to ${to}`;
    });
    ctx.expose('stage', 'waiting');
    await ctx.awaitExternal({ name: 'approval' });
    await ctx.waitForEvent('go');
    await ctx.task('import', async () => {
      await importGate.next();
      ctx.progress('1 of 2 imported');
      await importGate.next();
      return 'imported';
    });
    return label;
  },
});

/**
 * The web dashboard in a real browser (headless Chromium), against a real coordinator with authentication on
 * and a real worker: the token form, the runs table, a run's steps, retry and cancel from the page, and a page
 * that follows a run by itself. Each page is saved as a screenshot under test-results/dashboard.
 */
describe('dashboard', () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator;
  let worker: RunningWorker;
  let browser: Browser;
  let page: Page;
  let dashboardDir: string;

  beforeAll(async () => {
    // The bundle built from the sources as they are now, into a folder of the test's own.
    dashboardDir = mkdtempSync(join(tmpdir(), 'wf-dashboard-'));
    execFileSync(
      process.execPath,
      [join(ROOT, 'node_modules/vite/bin/vite.js'), 'build', 'apps/dashboard', '--outDir', dashboardDir, '--emptyOutDir', '--logLevel', 'error'],
      {
        cwd: ROOT,
        stdio: 'pipe',
      },
    );
    mkdirSync(SCREENSHOTS, { recursive: true });
    db = await createTestDatabase('dashboard');
    coordinator = await startCoordinator(db.url, {
      authDisabled: false,
      clientToken: CLIENT_TOKEN,
      workerToken: WORKER_TOKEN,
      dashboardDir,
      traceUrlTemplate: TRACE_URL_TEMPLATE,
    });
    worker = await startCustomWorker(coordinator.url, {
      workflows: [fragileWorkflow, stepsWorkflow, approvalWorkflow, parentWorkflow, flakyWorkflow, liveWorkflow],
      workerId: 'dashboard-worker',
      buildId: 'dashboard-build.7',
      claimWaitMs: 1_000,
      progressIntervalMs: 100,
      headers: { authorization: `Bearer ${WORKER_TOKEN}` },
    });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage'],
    });
    // The other tests' tab is signed in already, as the token form leaves it (that form has a test of its own).
    page = await signedInTab();
  }, 120_000);

  afterEach(() => {
    fragile.failing = true;
  });

  afterAll(async () => {
    await browser?.close();
    await worker?.close();
    await coordinator?.close();
    await db?.drop();
    if (dashboardDir) rmSync(dashboardDir, { recursive: true, force: true });
  });

  /** A tab of its own (a fresh session), 1,024 px wide: the narrowest screen the dashboard is laid out for. */
  const newTab = async () => {
    const tab = await browser.newPage({ viewport: { width: 1024, height: 800 } });
    tab.setDefaultTimeout(LIVE_MS);
    return tab;
  };
  /** A tab of its own whose session holds the client token at every load, as the token form leaves it. */
  const signedInTab = async () => {
    const tab = await newTab();
    // (A script's text: it runs in the browser, where sessionStorage is; the test's types are Node's.)
    await tab.addInitScript(`sessionStorage.setItem('wf.clientToken', ${JSON.stringify(CLIENT_TOKEN)})`);
    return tab;
  };
  const api = async <T = RunView>(method: string, path: string, body?: unknown): Promise<T> => {
    const response = await fetch(`${coordinator.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${CLIENT_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${await response.text()}`);
    return (response.status === 204 ? undefined : await response.json()) as T;
  };
  const start = (workflow: string, input: unknown = null) => api('POST', '/v1/runs', { workflow, version: '1', input });
  const runStatus = async (id: string) => (await api('GET', `/v1/runs/${id}`)).status;
  const screenshot = (name: string) => page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
  /** The run page's status, as the page shows it (the badge beside its title). */
  const shownStatus = (page: Page) => page.locator('.page-header .status').textContent();
  /** Marks the document: a marker still there later proves the page changed without a reload. */
  const markDocument = () => page.evaluate(() => Object.assign(globalThis, { dashboardTestMarker: true }));
  const stillSameDocument = () => page.evaluate(() => (globalThis as { dashboardTestMarker?: boolean }).dashboardTestMarker === true);
  /** The value of one of the run page's facts (Status, Tags, Ran for, …). */
  const fact = (term: string) =>
    page
      .locator('.facts div')
      .filter({ has: page.locator('dt', { hasText: new RegExp(`^${term}$`) }) })
      .locator('dd');
  /** A duration as the dashboard writes one under a minute ("850 ms", "12.3 s"), in milliseconds. */
  const shownMs = (text: string) => {
    const [, amount, unit] = /^(\d+(?:\.\d)?) (ms|s)\b/.exec(text) ?? [];
    if (!amount) throw new Error(`not a duration under a minute: ${text}`);
    return Number(amount) * (unit === 's' ? 1_000 : 1);
  };
  /** Follows the link of the top navigation, with a click as a user would. */
  const navigateTo = (pageName: string) => page.getByRole('navigation', { name: 'Dashboard pages' }).getByRole('link', { name: pageName, exact: true }).click();
  const confirmDialog = (label: string) => page.getByRole('dialog').getByRole('button', { name: label, exact: true }).click();

  it('serves index.html for every page under /ui without a token, its assets cached for good, and nothing outside its folder', async () => {
    const index = await fetch(`${coordinator.url}/ui/runs/01a22c37-316c-762f-a717-4521456009df`);
    expect([index.status, index.headers.get('cache-control')]).toEqual([200, 'no-cache']);
    const asset = /\/ui\/assets\/[\w.-]+\.js/.exec(await index.text())![0];
    const script = await fetch(`${coordinator.url}${asset}`);
    expect([script.status, script.headers.get('cache-control')]).toEqual([200, 'public, max-age=31536000, immutable']);
    expect((await fetch(`${coordinator.url}/ui/assets/missing.js`)).status).toBe(404);
    expect((await fetch(`${coordinator.url}/ui/assets/..%2f..%2fpackage.json`)).status).toBe(403);
    expect(await (await fetch(`${coordinator.url}/ui/config.json`)).json()).toEqual({ authRequired: true, traceUrlTemplate: TRACE_URL_TEMPLATE });
    // The API itself still wants the token.
    expect((await fetch(`${coordinator.url}/v1/runs`)).status).toBe(401);
  });

  it('asks once for the client token, refuses a wrong one, then keeps it for the session', async () => {
    const page = await newTab();
    await page.goto(`${coordinator.url}/ui/`);
    const token = page.getByLabel('Token');
    await token.fill('not-the-client-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'refused that token' }).waitFor();
    await page.getByLabel('Token').fill(CLIENT_TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    // A deep link loads the app (index.html for every path under /ui), which remembers the token.
    await page.goto(`${coordinator.url}/ui/runs`);
    await page.getByRole('heading', { name: 'Runs' }).waitFor();
    expect(await page.getByLabel('Token').count()).toBe(0);
    await page.close();
  });

  it('keeps the sign-in form after a network failure, and the token only once the coordinator accepted it', async () => {
    const tab = await newTab();
    const kept = () => tab.evaluate(`sessionStorage.getItem('wf.clientToken')`);
    await tab.goto(`${coordinator.url}/ui/`);
    await tab.getByLabel('Token').fill(CLIENT_TOKEN);
    await tab.context().setOffline(true);
    await tab.getByRole('button', { name: 'Sign in' }).click();
    await tab.getByRole('alert').waitFor();
    expect(await kept()).toBeNull();
    await tab.context().setOffline(false);
    await tab.getByRole('button', { name: 'Sign in' }).click();
    await tab.getByRole('heading', { name: 'Overview' }).waitFor();
    expect(await kept()).toBe(CLIENT_TOKEN);
    await tab.close();
  });

  it('shows a started run in the runs table without a reload', async () => {
    await page.goto(`${coordinator.url}/ui/runs`);
    await page.getByRole('heading', { name: 'Runs' }).waitFor();
    await markDocument();
    const run = await start('dashboard-steps');
    await page.locator(`tr[data-run-id="${run.id}"]`).waitFor();
    expect(await stillSameDocument()).toBe(true);
    await eventually('the run to complete', async () => (await runStatus(run.id)) === 'completed', LIVE_MS);
    await page.locator(`tr[data-run-id="${run.id}"] .status-completed`).waitFor();
    // A queued run of a version no online worker hosts is flagged: it will not start by itself.
    const stranded = await start('dashboard-unhosted');
    await page.locator(`tr[data-run-id="${stranded.id}"]`).getByText('no live worker hosts it').waitFor();
    expect(await page.locator(`tr[data-run-id="${run.id}"] .warn`).count()).toBe(0);
    await screenshot('runs');
    // Filters: the address keeps them, the table follows.
    await page.getByLabel('Status').selectOption('queued');
    await page.locator(`tr[data-run-id="${run.id}"]`).waitFor({ state: 'detached' });
    expect(await page.locator('tr[data-run-id]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-run-id')))).toEqual([stranded.id]);
    expect(new URL(page.url()).search).toBe('?status=queued');
    await page.getByLabel('Workflow').fill('dashboard-steps');
    await page.getByLabel('Workflow').press('Enter');
    await page.getByText('No runs match.').waitFor();
    await api('POST', `/v1/runs/${stranded.id}/cancel`);
  });

  it("shows a run's steps in order with their statuses", async () => {
    const run = await start('dashboard-steps');
    await eventually('the run to complete', async () => (await runStatus(run.id)) === 'completed', LIVE_MS);
    await page.goto(`${coordinator.url}/ui/runs/${run.id}`);
    await page.getByRole('heading', { name: `Run ${run.id}` }).waitFor();
    const steps = page.getByRole('list', { name: 'Steps' }).getByRole('listitem');
    await steps.nth(4).waitFor();
    const shown = await steps.evaluateAll((items) =>
      items.map(
        (item) =>
          `${item.querySelector('.step-kind')?.textContent} ${item.querySelector('.step-name')?.textContent} ${item.querySelector('.status')?.textContent}`,
      ),
    );
    expect(shown).toEqual(['task validate completed', 'patch audit completed', 'sleep cool-down completed', 'task charge completed', 'task notify completed']);
    expect(await steps.nth(1).textContent()).toContain('the run takes the patched branch');
    expect(await shownStatus(page)).toBe('completed');
    // The build of the worker that ran it.
    expect(
      await page
        .locator('.facts > div', { has: page.locator('dt', { hasText: /^Build$/ }) })
        .locator('dd')
        .textContent(),
    ).toBe('dashboard-build.7');
    await screenshot('run');
  });

  it("shows a failed run's error, and retries it from the page", async () => {
    const run = await start('dashboard-fragile');
    await eventually('the run to fail', async () => (await runStatus(run.id)) === 'failed', LIVE_MS);
    await page.goto(`${coordinator.url}/ui/runs/${run.id}`);
    await page.getByRole('alert', { name: 'Run error' }).filter({ hasText: 'the partner API answered 502' }).waitFor();
    const failedStep = page.locator('.step-failed');
    expect(await failedStep.locator('.step-name').textContent()).toBe('call-partner');
    expect(await failedStep.locator('.step-error').textContent()).toContain('the partner API answered 502');
    await screenshot('run-failed');

    fragile.failing = false;
    await markDocument();
    await page.getByRole('button', { name: 'Retry from failed step' }).click();
    await confirmDialog('Retry');
    await eventually('the page to show the retried run completed', async () => (await shownStatus(page)) === 'completed', LIVE_MS);
    expect(await stillSameDocument()).toBe(true);
    expect(await api('GET', `/v1/runs/${run.id}`)).toMatchObject({ status: 'completed', attempt: 2, output: 'called' });
  });

  it("shows a task's attempts as a waterfall on the run's time axis, each at its own start with its own duration", async () => {
    const run = await start('dashboard-flaky');
    await eventually('the run to complete', async () => (await runStatus(run.id)) === 'completed', LIVE_MS);
    await page.goto(`${coordinator.url}/ui/runs/${run.id}`);
    const step = page.locator('li.step[data-step="charge"]');
    await step.locator('.waterfall-bar').nth(2).waitFor();
    const bars = await step
      .locator('.waterfall-bar')
      .evaluateAll((elements) => elements.map((bar) => ({ attempt: bar.getAttribute('data-attempt'), tone: bar.className, box: bar.getBoundingClientRect() })));
    expect(bars.map((bar) => [bar.attempt, bar.tone])).toEqual([
      ['1', 'waterfall-bar bar-failed'],
      ['2', 'waterfall-bar bar-failed'],
      ['3', 'waterfall-bar bar-completed'],
    ]);
    // One axis: each attempt begins right of where the one before it ended (the 60 ms retry wait between them).
    for (let i = 1; i < bars.length; i++) expect(bars[i].box.left).toBeGreaterThan(bars[i - 1].box.left + bars[i - 1].box.width);
    // Durations per attempt, not summed.
    const attempts = await step.getByRole('list', { name: 'Attempts of charge' }).getByRole('listitem').allTextContents();
    expect(attempts.map((text) => text.replace(/\d+ ms$/, 'N ms'))).toEqual(['attempt 1: N ms', 'attempt 2: N ms', 'attempt 3: N ms']);
    for (const text of attempts) expect(shownMs(text.replace(/^attempt \d: /, ''))).toBeGreaterThanOrEqual(35);
    await screenshot('run-waterfall');
  });

  it('reruns a finished run as a new run with edited input, whose page links back to it', async () => {
    const failed = await api('POST', '/v1/runs', { workflow: 'dashboard-fragile', version: '1', input: { order: 'o-1' }, tags: { tenant: 'acme' } });
    await eventually('the run to fail', async () => (await runStatus(failed.id)) === 'failed', LIVE_MS);
    fragile.failing = false;
    await page.goto(`${coordinator.url}/ui/runs/${failed.id}`);
    await page.getByRole('button', { name: 'Rerun with new input…' }).click();
    const input = page.getByLabel('New input (JSON)');
    expect(JSON.parse(await input.inputValue())).toEqual({ order: 'o-1' });
    await input.fill('{"order": "o-1-fixed"}');
    await page.getByRole('button', { name: 'Start the new run' }).click();
    await confirmDialog('Start run');
    await eventually('the page to open the new run', async () => new URL(page.url()).pathname !== `/ui/runs/${failed.id}`, LIVE_MS);
    const rerunId = new URL(page.url()).pathname.split('/').pop()!;
    await fact('Rerun of').getByRole('link', { name: failed.id }).waitFor();
    expect(await api('GET', `/v1/runs/${rerunId}`)).toMatchObject({
      workflow: 'dashboard-fragile',
      input: { order: 'o-1-fixed' },
      tags: { tenant: 'acme', 'rerun-of': failed.id },
    });
    await eventually('the page to show the rerun completed', async () => (await shownStatus(page)) === 'completed', LIVE_MS);
  });

  it('filters the runs by tag, and cancels every matching run after a confirmation that says how many', async () => {
    const batch = `b-${randomUUID().slice(0, 8)}`;
    const parked: RunView[] = [];
    for (let i = 0; i < 3; i++) parked.push(await api('POST', '/v1/runs', { workflow: 'dashboard-parked', version: '1', input: null, tags: { batch } }));
    const other = await api('POST', '/v1/runs', { workflow: 'dashboard-parked', version: '1', input: null, tags: { batch: 'other' } });
    await page.goto(`${coordinator.url}/ui/runs?workflow=dashboard-parked`);
    // A tag in the table filters by itself.
    await page
      .locator(`tr[data-run-id="${parked[0].id}"]`)
      .getByRole('button', { name: `batch=${batch}` })
      .click();
    await page.locator(`tr[data-run-id="${other.id}"]`).waitFor({ state: 'detached' });
    expect(new URL(page.url()).searchParams.getAll('tag')).toEqual([`batch:${batch}`]);
    expect(new Set(await page.locator('tr[data-run-id]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-run-id'))))).toEqual(
      new Set(parked.map((run) => run.id)),
    );
    await page.getByRole('button', { name: 'Cancel matching runs…' }).click();
    await page.getByRole('dialog', { name: 'Cancel 3 runs?' }).waitFor();
    await screenshot('runs-bulk-cancel');
    await confirmDialog('Cancel 3 runs');
    await page.getByRole('status').filter({ hasText: 'Cancelled 3 runs.' }).waitFor();
    expect(await Promise.all(parked.map((run) => runStatus(run.id)))).toEqual(['cancelled', 'cancelled', 'cancelled']);
    expect(await runStatus(other.id)).toBe('queued');

    // A filter typed in: retrying matches only failed runs, and says so when there are none.
    await page.getByRole('button', { name: `Remove tag filter batch:${batch}` }).click();
    await page.getByLabel('Tag', { exact: true }).fill('batch=other');
    await page.getByRole('button', { name: 'Add tag filter' }).click();
    await page.locator(`tr[data-run-id="${other.id}"]`).waitFor();
    expect(new URL(page.url()).searchParams.getAll('tag')).toEqual(['batch:other']);
    await page.getByRole('button', { name: 'Retry matching runs…' }).click();
    await page.getByRole('status').filter({ hasText: 'No failed runs match this filter.' }).waitFor();
    await api('POST', `/v1/runs/${other.id}/cancel`);
  });

  it('retries every failed run the filter matches, each from its failed step', async () => {
    const wave = `w-${randomUUID().slice(0, 8)}`;
    const runs: RunView[] = [];
    for (let i = 0; i < 2; i++) runs.push(await api('POST', '/v1/runs', { workflow: 'dashboard-fragile', version: '1', input: null, tags: { wave } }));
    await eventually(
      'both runs to fail',
      async () => (await Promise.all(runs.map((run) => runStatus(run.id)))).every((status) => status === 'failed'),
      LIVE_MS,
    );
    fragile.failing = false;
    await page.goto(`${coordinator.url}/ui/runs?status=failed&tag=wave:${wave}`);
    await page.locator(`tr[data-run-id="${runs[1].id}"]`).waitFor();
    await page.getByRole('button', { name: 'Retry matching runs…' }).click();
    await confirmDialog('Retry 2 runs');
    await page.getByRole('status').filter({ hasText: 'Retried 2 runs.' }).waitFor();
    for (const run of runs) {
      await eventually('the retried run to complete', async () => (await runStatus(run.id)) === 'completed', LIVE_MS);
      expect((await api('GET', `/v1/runs/${run.id}`)).attempt).toBe(2);
    }
  });

  it("shows a run's tags, in the runs table and on its page", async () => {
    const run = await api('POST', '/v1/runs', { workflow: 'dashboard-tagged', version: '1', input: null, tags: { tenant: 'acme', channel: 'web' } });
    await page.goto(`${coordinator.url}/ui/runs?workflow=dashboard-tagged`);
    const row = page.locator(`tr[data-run-id="${run.id}"]`);
    await row.getByRole('listitem').first().waitFor();
    expect(await row.getByRole('list', { name: 'Tags' }).getByRole('listitem').allTextContents()).toEqual(['channel=web', 'tenant=acme']);
    await row.getByRole('link').click();
    await fact('Tags').getByRole('listitem').first().waitFor();
    expect(await fact('Tags').getByRole('listitem').allTextContents()).toEqual(['channel=web', 'tenant=acme']);
    await api('POST', `/v1/runs/${run.id}/cancel`);
  });

  it('says how long a retried run ran: its time running over both attempts, and apart from it its first start to its end', async () => {
    const run = await start('dashboard-fragile');
    await eventually('the first attempt to fail', async () => (await runStatus(run.id)) === 'failed', LIVE_MS);
    // The time between the attempts, which "Ran for" used to count in.
    const idleMs = 3_000;
    await new Promise((resolve) => setTimeout(resolve, idleMs));
    fragile.failing = false;
    await api('POST', `/v1/runs/${run.id}/retry`);
    await eventually('the second attempt to complete', async () => (await runStatus(run.id)) === 'completed', LIVE_MS);
    await page.goto(`${coordinator.url}/ui/runs/${run.id}`);
    // Known once the run's transitions are read.
    await fact('Ran for').filter({ hasText: 'running' }).waitFor();
    const ranFor = await fact('Ran for').textContent();
    expect(ranFor).toMatch(/^\d+(\.\d)? m?s running, 2 attempts$/);
    expect(shownMs(ranFor!)).toBeLessThan(idleMs);
    expect(shownMs((await fact('First start to end').textContent())!)).toBeGreaterThanOrEqual(idleMs);
  });

  it('cancels a run from the page, after a confirmation', async () => {
    const run = await start('approval', { timeoutMs: 3_600_000 });
    await eventually('the run to wait for its event', async () => (await runStatus(run.id)) === 'waiting', LIVE_MS);
    await page.goto(`${coordinator.url}/ui/runs/${run.id}`);
    await page.getByRole('button', { name: 'Cancel run' }).click();
    // Backing out of the confirmation changes nothing.
    await page.getByRole('dialog').getByRole('button', { name: 'Back' }).click();
    expect(await runStatus(run.id)).toBe('waiting');
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await confirmDialog('Cancel run');
    await page.getByRole('status').filter({ hasText: 'Cancelled.' }).waitFor();
    expect(await runStatus(run.id)).toBe('cancelled');
    await eventually('the page to show it cancelled', async () => (await shownStatus(page)) === 'cancelled', LIVE_MS);
  });

  it('works from the keyboard: Tab reaches an action, Enter asks to confirm, Escape backs out', async () => {
    const run = await start('approval', { timeoutMs: 3_600_000 });
    await eventually('the run to wait for its event', async () => (await runStatus(run.id)) === 'waiting', LIVE_MS);
    await page.goto(`${coordinator.url}/ui/runs/${run.id}`);
    await page.getByRole('button', { name: 'Cancel run' }).waitFor();
    // Expressions evaluated in the page (its DOM is not in the test's types).
    const focused = () => page.evaluate<string | undefined>('document.activeElement?.textContent?.trim()');
    let tabs = 0;
    while ((await focused()) !== 'Cancel run') {
      expect(++tabs).toBeLessThan(30);
      await page.keyboard.press('Tab');
    }
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Cancel this run and its unfinished children?' });
    await dialog.waitFor();
    expect(await page.evaluate<boolean>("document.activeElement?.closest('dialog') != null")).toBe(true);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect(await runStatus(run.id)).toBe('waiting');
    await api('POST', `/v1/runs/${run.id}/cancel`);
  });

  it("updates a waiting run's page by itself when its event arrives through the API", async () => {
    const run = await start('approval', { timeoutMs: 3_600_000 });
    await page.goto(`${coordinator.url}/ui/runs/${run.id}`);
    await eventually('the page to show it waiting', async () => (await shownStatus(page)) === 'waiting', LIVE_MS);
    await page.locator('.step-waiting .step-name', { hasText: 'approved' }).waitFor();
    await markDocument();
    await api('POST', `/v1/runs/${run.id}/events/approved`, { data: { by: 'ops' } });
    await eventually('the page to show it completed', async () => (await shownStatus(page)) === 'completed', LIVE_MS);
    expect(await stillSameDocument()).toBe(true);
    await page.locator('.step-completed .step-name', { hasText: 'approved' }).waitFor();
  });

  it("shows a run's values, queries one, sends updates (an answer, a refusal), its trace id linked, its token masked, and its progress live", async () => {
    const traceId = randomUUID().replaceAll('-', '');
    const started = await fetch(`${coordinator.url}/v1/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CLIENT_TOKEN}`, 'content-type': 'application/json', traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
      body: JSON.stringify({ workflow: 'dashboard-live', version: '1', input: null }),
    });
    const run = (await started.json()) as RunView;
    await eventually('the run to wait for go', async () => (await runStatus(run.id)) === 'waiting', LIVE_MS);
    await page.goto(`${coordinator.url}/ui/runs/${run.id}`);
    const values = page.getByRole('table', { name: 'Exposed values' });
    const shownValue = (name: string) =>
      values
        .locator('tr', { has: page.locator('td', { hasText: new RegExp(`^${name}$`) }) })
        .locator('td')
        .nth(1);
    expect(await shownValue('stage').textContent()).toBe('"waiting"');
    expect(await shownValue('label').textContent()).toBe('"draft"');

    await page.getByLabel('Query name').fill('stage');
    await page.getByRole('button', { name: 'Query', exact: true }).click();
    await page.getByLabel('Query answer').getByText('"waiting"').waitFor();

    const sendUpdate = async (input: string) => {
      await page.getByLabel('Update name').fill('rename');
      await page.getByLabel('Update input (JSON)').fill(input);
      await page.getByRole('button', { name: 'Send update' }).click();
      await confirmDialog('Send');
    };
    await sendUpdate('"final"');
    await page.getByLabel('Update answer').getByText('Update rename answered: "renamed to final"').waitFor();
    await sendUpdate('""');
    await page.getByRole('alert').filter({ hasText: 'update_failed' }).waitFor();
    const applied = page.getByRole('table', { name: 'Applied updates' }).locator('tbody tr');
    await applied.nth(1).waitFor();
    expect(await applied.evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('td')].slice(1).map((cell) => cell.textContent)))).toEqual([
      ['rename', 'completed', '"final"', '"renamed to final"'],
      ['rename', 'failed', '""', 'Error: a label cannot be empty'],
    ]);

    expect(await fact('Trace').locator('a').getAttribute('href')).toBe(TRACE_URL_TEMPLATE.replace('{traceId}', traceId));
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: coordinator.url });
    await fact('Trace').getByRole('button', { name: 'Copy the trace id' }).click();
    await fact('Trace').getByRole('status').getByText('copied').waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(traceId);

    // The token step says what it is, its token only masked: the page holds no part of the secret.
    const tokenStep = page.locator('.step', { has: page.locator('.step-kind', { hasText: /^token$/ }) });
    expect(await tokenStep.locator('.step-head').textContent()).toContain('completion token made (shown masked)');
    await tokenStep.getByText('Output').click();
    await tokenStep.getByText('wfct_••••••••').waitFor();
    const token = ((await api('GET', `/v1/runs/${run.id}`)).tasks ?? []).find((step) => step.kind === 'token')!.output as { token: string };
    expect(await page.content()).not.toContain(token.token.slice(5));

    // Progress reported while the task runs (once the page shows it running: no transition comes after it)
    // reaches the page through the feed, without a reload.
    await markDocument();
    expect(await page.getByText('No progress reported.').count()).toBe(1);
    const openGate = async () => {
      await eventually('the import task to wait at the gate', async () => importGate.waiting.length === 1, LIVE_MS);
      importGate.open();
    };
    await api('POST', `/v1/runs/${run.id}/events/go`, { data: null });
    await eventually('the page to show it running', async () => (await shownStatus(page)) === 'running', LIVE_MS);
    await openGate();
    await page.locator('[aria-label="Last progress"]', { hasText: '"1 of 2 imported"' }).waitFor();
    expect(await stillSameDocument()).toBe(true);
    await screenshot('run-live');
    await openGate();
    await eventually('the run to complete', async () => (await runStatus(run.id)) === 'completed', LIVE_MS);
  });

  it('pauses and resumes a workflow version, and sets and clears its limits, from the Workflows page', async () => {
    type Workflows = { items: { name: string; paused: boolean; limits: { concurrency: number | null }; apiLimits: { concurrency: number | null } }[] };
    const steps = async () => (await api<Workflows>('GET', '/v1/workflows')).items.find((item) => item.name === 'dashboard-steps')!;
    await page.goto(`${coordinator.url}/ui/`);
    await navigateTo('Workflows');
    const row = page.locator('tr[data-workflow="dashboard-steps@1"]');
    await row.getByRole('button', { name: 'Pause dashboard-steps@1' }).click();
    await confirmDialog('Pause');
    await page.getByRole('status').filter({ hasText: 'dashboard-steps@1: paused.' }).waitFor();
    expect((await steps()).paused).toBe(true);
    await row.getByText('paused', { exact: true }).waitFor();
    await screenshot('workflows');
    await row.getByRole('button', { name: 'Resume dashboard-steps@1' }).click();
    await confirmDialog('Resume');
    await row.getByRole('button', { name: 'Pause dashboard-steps@1' }).waitFor();
    expect((await steps()).paused).toBe(false);

    await row.getByRole('button', { name: 'Edit the limits of dashboard-steps@1' }).click();
    await row.getByLabel('Concurrency', { exact: true }).fill('3');
    await row.getByRole('button', { name: 'Save limits' }).click();
    await confirmDialog('Set limits');
    await row.getByText('3 (set here)').waitFor();
    expect((await steps()).apiLimits.concurrency).toBe(3);
    await row.getByRole('button', { name: 'Edit the limits of dashboard-steps@1' }).click();
    await row.getByRole('button', { name: 'Clear limits set here' }).click();
    await confirmDialog('Clear');
    await page.getByRole('status').filter({ hasText: 'dashboard-steps@1: limits cleared.' }).waitFor();
    expect((await steps()).limits.concurrency).toBeNull();
  });

  it('pauses, resumes, runs now and deletes a schedule from the Schedules page', async () => {
    type Schedule = { id: string; paused: boolean; lastRunId: string | null };
    const schedule = await api<Schedule>('POST', '/v1/schedules', { workflow: 'dashboard-steps', version: '1', cron: '0 0 3 * * *', timezone: 'UTC' });
    const current = () => api<Schedule>('GET', `/v1/schedules/${schedule.id}`);
    await page.goto(`${coordinator.url}/ui/`);
    await navigateTo('Schedules');
    const row = page.locator(`tr[data-schedule-id="${schedule.id}"]`);
    await row.getByText('0 0 3 * * * (UTC)').waitFor();
    await row.getByRole('button', { name: `Pause schedule ${schedule.id}` }).click();
    await confirmDialog('Pause');
    await row.getByText('paused').waitFor();
    expect((await current()).paused).toBe(true);
    await screenshot('schedules');
    await row.getByRole('button', { name: `Resume schedule ${schedule.id}` }).click();
    await confirmDialog('Resume');
    await row.getByRole('button', { name: `Pause schedule ${schedule.id}` }).waitFor();
    expect((await current()).paused).toBe(false);

    await row.getByRole('button', { name: `Run now schedule ${schedule.id}` }).click();
    await confirmDialog('Start run');
    await page.getByRole('status').filter({ hasText: 'Started run' }).waitFor();
    const { lastRunId } = await current();
    expect(await page.getByRole('status').textContent()).toBe(`Started run ${lastRunId}.`);

    await row.getByRole('button', { name: `Delete schedule ${schedule.id}` }).click();
    await confirmDialog('Delete');
    await row.waitFor({ state: 'detached' });
    expect((await fetch(`${coordinator.url}/v1/schedules/${schedule.id}`, { headers: { authorization: `Bearer ${CLIENT_TOKEN}` } })).status).toBe(404);
  });

  it('shows the overview, the workers and the dead letters', async () => {
    const run = await start('dashboard-steps');
    await eventually('the run to complete', async () => (await runStatus(run.id)) === 'completed', LIVE_MS);
    await page.goto(`${coordinator.url}/ui/`);
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    await page.locator('.chart canvas').waitFor();
    const counts = page.getByRole('table', { name: 'Runs created in the window, by workflow version and status' });
    await counts.getByRole('rowheader', { name: 'dashboard-steps@1' }).waitFor();
    // The worker serves the version: its queue is listed, hosted.
    const queue = page.getByRole('table', { name: 'Queue depths' }).getByRole('row', { name: /^dashboard-steps@1 / });
    expect(await queue.getByRole('cell').last().textContent()).toBe('yes');
    expect(await page.locator('.card', { hasText: 'Workers online' }).locator('.card-value').textContent()).toBe('1');
    await screenshot('overview');

    await navigateTo('Workers');
    await page.getByRole('rowheader', { name: 'dashboard-worker' }).waitFor();
    expect(await page.getByRole('row', { name: /dashboard-worker/ }).textContent()).toContain('dashboard-fragile@1');
    expect(await page.getByRole('row', { name: /dashboard-worker/ }).textContent()).toContain('dashboard-build.7');
    await screenshot('workers');

    await navigateTo('Dead letters');
    await page.getByRole('heading', { name: 'Dead letters' }).waitFor();
    await page.getByText('No dead letters.').waitFor();
    await screenshot('dead-letters');
  });

  it("tells runs and schedules apart by their short ids (the random end of a UUIDv7), the full id in each link's title", async () => {
    // Started within the same ~65 s, these ids share their first 8 hex digits (a timestamp): a label must come from elsewhere.
    const runs = [await start('dashboard-ids'), await start('dashboard-ids'), await start('dashboard-ids')];
    await page.goto(`${coordinator.url}/ui/runs?workflow=dashboard-ids`);
    const links = runs.map((run) => page.locator(`tr[data-run-id="${run.id}"]`).getByRole('link'));
    await links[0].waitFor();
    const labels = await Promise.all(links.map((link) => link.textContent()));
    expect(new Set(labels).size).toBe(runs.length);
    for (const [index, run] of runs.entries()) {
      expect(run.id.endsWith(labels[index]!)).toBe(true);
      expect(await links[index].getAttribute('title')).toBe(run.id);
    }
    await Promise.all(runs.map((run) => api('POST', `/v1/runs/${run.id}/cancel`)));

    const create = () => api<{ id: string }>('POST', '/v1/schedules', { workflow: 'dashboard-ids', version: '1', cron: '0 0 3 * * *', timezone: 'UTC' });
    const schedules = [await create(), await create()];
    await navigateTo('Schedules');
    const shown = schedules.map((schedule) => page.locator(`tr[data-schedule-id="${schedule.id}"] th .mono`));
    await shown[0].waitFor();
    const scheduleLabels = await Promise.all(shown.map((label) => label.textContent()));
    expect(new Set(scheduleLabels).size).toBe(schedules.length);
    expect(await shown[0].getAttribute('title')).toBe(schedules[0].id);
    await Promise.all(schedules.map((schedule) => api('DELETE', `/v1/schedules/${schedule.id}`)));
  });

  it('ignores a time range in the address that it does not know, and a custom bound that is not a time, and stays usable', async () => {
    const run = await start('dashboard-ranges');
    for (const search of ['?range=bogus', '?range=custom&from=garbage&to=2026-13-45T99:00']) {
      await page.goto(`${coordinator.url}/ui/runs${search}&workflow=dashboard-ranges`);
      await page.locator(`tr[data-run-id="${run.id}"]`).waitFor();
    }
    expect(await page.getByLabel('Created').inputValue()).toBe('custom');
    await navigateTo('Workflows');
    await page.getByRole('heading', { name: 'Workflows' }).waitFor();
    await api('POST', `/v1/runs/${run.id}/cancel`);
  });

  it('asks for the token again when the coordinator refuses it to the live feed, on a page that reads nothing else meanwhile', async () => {
    const run = await start('approval', { timeoutMs: 3_600_000 });
    const tab = await signedInTab();
    // The token is no longer accepted (as after CLIENT_TOKEN changed), and only the feed sends it again: the run
    // page reads the run once, then follows it through the feed alone. The coordinator's own 401 answers it.
    await tab.route('**/v1/feed?**', (route) => route.continue({ headers: { ...route.request().headers(), authorization: 'Bearer a-rotated-out-token' } }));
    await tab.goto(`${coordinator.url}/ui/runs/${run.id}`);
    await tab.getByRole('alert').filter({ hasText: 'refused that token' }).waitFor();
    expect(await tab.evaluate(`sessionStorage.getItem('wf.clientToken')`)).toBeNull();
    await tab.close();
    await api('POST', `/v1/runs/${run.id}/cancel`);
  });

  it('does not connect to the live feed again after it refused the request (a 4xx other than 401)', async () => {
    const refused = page.waitForResponse((response) => response.url().includes('/v1/feed?runId=abc'));
    await page.goto(`${coordinator.url}/ui/runs/abc`);
    expect((await refused).status()).toBe(400);
    await page.getByRole('alert').waitFor();
    // An absence is seen only by waiting: a retry came 0.5 s after the refusal, so none in 3 s means none.
    await expect(page.waitForRequest((request) => request.url().includes('/v1/feed'), { timeout: 3_000 })).rejects.toThrow('Timeout');
  });

  it('searches a UUID as a run id, and as an idempotency key when no run has that id', async () => {
    const key = randomUUID();
    const keyed = await api('POST', '/v1/runs', { workflow: 'dashboard-keys', version: '1', input: null, idempotencyKey: key });
    await page.goto(`${coordinator.url}/ui/runs?workflow=dashboard-keys`);
    const search = page.getByLabel('Run id or idempotency key');
    await search.fill(key);
    await search.press('Enter');
    await page.waitForURL((url) => url.searchParams.get('key') === key);
    await page.locator(`tr[data-run-id="${keyed.id}"]`).waitFor();
    // A run's id still opens its page.
    await search.fill(keyed.id);
    await search.press('Enter');
    await page.getByRole('heading', { name: `Run ${keyed.id}` }).waitFor();
    await api('POST', `/v1/runs/${keyed.id}/cancel`);
  });

  it("shows nothing of a run under another run's address: its data, notice and actions stay on its own page", async () => {
    const parent = await start('dashboard-parent');
    const childId = await eventually(
      'the child to start',
      async () => (await api('GET', `/v1/runs/${parent.id}`)).tasks?.find((step) => step.childId)?.childId,
      LIVE_MS,
    );
    await page.goto(`${coordinator.url}/ui/runs/${parent.id}`);
    // A notice of the parent's own.
    await page.getByLabel('Event name').fill('nudge');
    await page.getByRole('button', { name: 'Send event' }).click();
    await confirmDialog('Send');
    await page.getByRole('status').filter({ hasText: 'Event nudge kept' }).waitFor();
    // The child's answer is held until the page has been seen while it loads.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    await page.route(`**/v1/runs/${childId}`, async (route) => {
      await held;
      await route.continue();
    });
    await page.getByRole('list', { name: 'Steps' }).getByRole('link', { name: childId }).click();
    await page.getByText('Loading…').waitFor();
    expect(await page.getByRole('heading', { name: `Run ${parent.id}` }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Cancel run' }).count()).toBe(0);
    release();
    await page.getByRole('heading', { name: `Run ${childId}` }).waitFor();
    expect(await page.getByRole('status').count()).toBe(0);
    await page.unrouteAll();
    await api('POST', `/v1/runs/${parent.id}/cancel`);
  });

  it('pages through the runs, and the top bar brings back the first page, live again', async () => {
    const runs: RunView[] = [];
    // One after another: the newest is the last started. A page holds 25: the first one started is on the second page.
    for (let index = 0; index < 26; index++) runs.push(await start('dashboard-pages'));
    await page.goto(`${coordinator.url}/ui/runs`);
    const newest = page.locator(`tr[data-run-id="${runs.at(-1)!.id}"]`);
    const nextPage = page.getByRole('button', { name: 'Next page' });
    await newest.waitFor();
    await nextPage.click();
    await newest.waitFor({ state: 'detached' });
    await page.getByRole('button', { name: 'Previous page' }).click();
    await newest.waitFor();
    await nextPage.click();
    await newest.waitFor({ state: 'detached' });
    await navigateTo('Runs');
    await newest.waitFor();
    // Live again: a run started now shows up without a reload.
    runs.push(await start('dashboard-pages'));
    await page.locator(`tr[data-run-id="${runs.at(-1)!.id}"]`).waitFor();
    await Promise.all(runs.map((run) => api('POST', `/v1/runs/${run.id}/cancel`)));
  });

  it('after a refused action, reads the page again and drops the notice of the action before', async () => {
    const create = () => api<{ id: string }>('POST', '/v1/schedules', { workflow: 'dashboard-steps', version: '1', cron: '0 0 3 * * *', timezone: 'UTC' });
    const [kept, gone] = [await create(), await create()];
    await page.goto(`${coordinator.url}/ui/schedules`);
    const pause = (id: string) => page.getByRole('button', { name: `Pause schedule ${id}` });
    await pause(kept.id).click();
    await confirmDialog('Pause');
    await page.getByRole('status').filter({ hasText: 'paused' }).waitFor();
    // Deleted elsewhere: its row is stale until the page reads the list again.
    await api('DELETE', `/v1/schedules/${gone.id}`);
    await pause(gone.id).click();
    await confirmDialog('Pause');
    await page.getByRole('alert').filter({ hasText: 'schedule_not_found' }).waitFor();
    await page.locator(`tr[data-schedule-id="${gone.id}"]`).waitFor({ state: 'detached' });
    expect(await page.getByRole('status').count()).toBe(0);
    await api('DELETE', `/v1/schedules/${kept.id}`);
  });

  it('sends no event whose name is only spaces: it says so instead of asking to confirm', async () => {
    const run = await start('approval', { timeoutMs: 3_600_000 });
    await page.goto(`${coordinator.url}/ui/runs/${run.id}`);
    await page.getByLabel('Event name').fill('   ');
    await page.getByRole('button', { name: 'Send event' }).click();
    await page.getByRole('alert').filter({ hasText: 'The event needs a name.' }).waitFor();
    expect(await page.getByRole('dialog').count()).toBe(0);
    await api('POST', `/v1/runs/${run.id}/cancel`);
  });

  it('loads with no 404 from the coordinator: it declares its icon, so the browser asks for no /favicon.ico', async () => {
    // What the coordinator answered, seen on its own server (the browser fetches a favicon outside the page's requests).
    const answers: string[] = [];
    const record = (request: { url: string }, response: { statusCode: number; on: (event: 'finish', listener: () => void) => void }) =>
      response.on('finish', () => answers.push(`${response.statusCode} ${request.url}`));
    const server = coordinator.app.getHttpServer();
    server.on('request', record);
    const tab = await signedInTab();
    await tab.goto(`${coordinator.url}/ui/`);
    await tab.getByRole('heading', { name: 'Overview' }).waitFor();
    // An absence is seen only by waiting: Chromium asked for /favicon.ico within a second of the load.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    server.off('request', record);
    await tab.close();
    expect(answers.filter((answer) => answer.startsWith('404'))).toEqual([]);
  });
});
