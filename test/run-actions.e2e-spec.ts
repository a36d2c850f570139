import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { type RunView, TAGS_MAX, type TaskView, WorkflowClient } from '@nest-durable/client';
import { defineWorkflow, WorkflowError } from '@nest-durable/workflow';
import request from 'supertest';
import { loadWorkerConfig } from '../apps/worker/src/config/worker.config';
import { workerModuleOptions } from '../apps/worker/src/worker-app.module';
import { type RunningCoordinator, type RunningWorker, startCoordinator, startCustomWorker } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { TEST_REDIS_URL, testPrefix } from './support/redis';
import { snapshotTables } from './support/snapshot';
import { buildClientPackage, stopAllWf, wf } from './support/wf-process';

/** Attempts 1 and 2 of its task throw, the third succeeds: each attempt takes about 30 ms, 40 ms apart. */
const flaky = defineWorkflow<null, string>({
  name: 'actions-flaky',
  version: '1',
  handler: (ctx) =>
    ctx.task(
      'charge',
      async ({ attempt }) => {
        await new Promise((resolve) => setTimeout(resolve, 30));
        if (attempt < 3) throw new Error(`declined ${attempt}`);
        return 'charged';
      },
      { retry: { maxAttempts: 3, delayMs: 40, backoff: 'fixed', jitter: false } },
    ),
});

/** Its task fails twice, each time waiting 250 ms to retry: longer than the worker waits in process, so the run suspends. */
const backoff = defineWorkflow<null, string>({
  name: 'actions-backoff',
  version: '1',
  handler: (ctx) =>
    ctx.task(
      'reserve',
      async ({ attempt }) => {
        await new Promise((resolve) => setTimeout(resolve, 30));
        if (attempt < 3) throw new Error(`no stock yet (${attempt})`);
        return 'reserved';
      },
      { retry: { maxAttempts: 3, delayMs: 250, backoff: 'fixed', jitter: false } },
    ),
});

/** How often `prepare` ran: a retry from the failed step must not run it again. */
const executions = { prepare: 0 };
/** While set, `ship` fails (nonRetryable): the run fails at its second step. */
const shipping = { broken: true };
const twoSteps = defineWorkflow<{ order: string }, string>({
  name: 'actions-two-steps',
  version: '1',
  handler: async (ctx, input) => {
    const prepared = await ctx.task('prepare', () => {
      executions.prepare++;
      return `prepared ${input.order}`;
    });
    return ctx.task('ship', () => {
      if (shipping.broken) throw new WorkflowError('the carrier is down', { nonRetryable: true });
      return `${prepared}, shipped`;
    });
  },
});

/**
 * The run actions the dashboard's run and runs pages use (issue 37): per-attempt task times, a rerun as a new run
 * with edited input, and cancels and retries of every run a filter matches; real PostgreSQL, Redis Streams dispatch.
 */
describe('run actions', () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator;
  let worker: RunningWorker;
  let client: WorkflowClient;

  beforeAll(async () => {
    [db] = await Promise.all([createTestDatabase('run_actions'), buildClientPackage()]);
    const prefix = testPrefix('run-actions');
    coordinator = await startCoordinator(db.url, { dispatch: 'redis-streams', redisUrl: TEST_REDIS_URL, redisPrefix: prefix });
    const config = loadWorkerConfig({
      COORDINATOR_URL: coordinator.url,
      SUBSCRIBER: 'redis-streams',
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: prefix,
      REDIS_BLOCK_MS: '500',
      WORKER_ID: 'actions-worker',
    });
    // Retry waits over 100 ms suspend the run (backoff's); flaky's 40 ms ones are waited in the worker.
    worker = await startCustomWorker(coordinator.url, { ...workerModuleOptions(config, [flaky, twoSteps, backoff]), inProcessRetryMaxMs: 100 });
    client = new WorkflowClient({ url: coordinator.url });
    await eventually('the worker registered', async () => (await client.listWorkers()).items.some((w) => w.id === 'actions-worker' && w.online));
  }, 60_000);

  afterEach(async () => {
    await stopAllWf();
    shipping.broken = true;
  });

  afterAll(async () => {
    await worker?.close();
    await coordinator?.close();
    await db?.drop();
  });

  const http = () => request(coordinator.url);
  const finish = (id: string) => client.waitForResult(id, { timeoutMs: 20_000 });
  /** Runs of a version no worker hosts: they stay queued until cancelled. */
  const park = (count: number, tags: Record<string, string>) =>
    client.startMany(Array.from({ length: count }, () => ({ workflow: { name: 'actions-parked', version: '1' }, tags })));
  const statuses = async (runs: { id: string }[]) => Promise.all(runs.map(async (run) => (await client.get(run.id)).status));

  it("records each attempt of a task retried in the worker with its own start and duration, on the coordinator's clock", async () => {
    const run = await finish((await client.start(flaky, null)).id);
    expect(run.status).toBe('completed');
    const charge = run.tasks!.find((task) => task.name === 'charge') as TaskView;
    expect(charge).toMatchObject({ attempts: 3, status: 'completed' });
    const attempts = charge.attemptTimes!;
    expect(attempts.map((attempt) => attempt.attempt)).toEqual([1, 2, 3]);
    for (const attempt of attempts) expect(attempt.durationMs).toBeGreaterThanOrEqual(25);
    // The first attempt starts the task; each starts after the one before ended and the retry's 40 ms wait.
    expect(attempts[0].startedAt).toBe(charge.startedAt);
    for (let i = 1; i < attempts.length; i++) {
      const previousEnd = Date.parse(attempts[i - 1].startedAt) + attempts[i - 1].durationMs;
      expect(Date.parse(attempts[i].startedAt) - previousEnd).toBeGreaterThanOrEqual(35);
    }
    const lastEnd = Date.parse(attempts[2].startedAt) + attempts[2].durationMs;
    expect(lastEnd).toBeLessThanOrEqual(Date.parse(charge.finishedAt!) + 1);
  });

  it('keeps the attempts of executions that ended in a retry wait, and shows them with the task on the same axis', async () => {
    const run = await finish((await client.start(backoff, null)).id);
    expect(run.status).toBe('completed');
    const reserve = run.tasks!.find((task) => task.key === 'reserve#1') as TaskView;
    const wait = run.tasks!.find((task) => task.key === 'retry:reserve#1') as TaskView;
    expect(wait).not.toHaveProperty('attemptTimes'); // shown with the task, once it has its result
    const attempts = reserve.attemptTimes!;
    expect(attempts.map((attempt) => attempt.attempt)).toEqual([1, 2, 3]);
    for (const attempt of attempts) expect(attempt.durationMs).toBeGreaterThanOrEqual(25);
    // Each execution began after the 250 ms wait that ended the one before it.
    for (let i = 1; i < attempts.length; i++) {
      const previousEnd = Date.parse(attempts[i - 1].startedAt) + attempts[i - 1].durationMs;
      expect(Date.parse(attempts[i].startedAt) - previousEnd).toBeGreaterThanOrEqual(200);
    }
  });

  it('retries a failed run from its failed step (its completed steps kept) and reruns it as a new run with edited input', async () => {
    const failed = await finish((await client.start(twoSteps, { order: 'o-1' }, { tags: { tenant: 'acme' }, priority: 5 })).id);
    expect(failed).toMatchObject({ status: 'failed', error: { message: 'the carrier is down' } });
    expect(executions.prepare).toBe(1);
    // A task of one attempt is its own start and duration: no attempt times are sent or shown for it.
    expect(failed.tasks!.find((task) => task.name === 'prepare')).not.toHaveProperty('attemptTimes');

    // A rerun is a new run of the same version, priority and tags, linked by its rerun-of tag.
    const rerun = (
      await http()
        .post(`/v1/runs/${failed.id}/rerun`)
        .send({ input: { order: 'o-1-fixed' } })
        .expect(201)
    ).body as RunView;
    expect(rerun).toMatchObject({ workflow: 'actions-two-steps', version: '1', priority: 5, input: { order: 'o-1-fixed' } });
    expect(rerun.tags).toEqual({ tenant: 'acme', 'rerun-of': failed.id });
    expect((await client.list({ tags: { 'rerun-of': failed.id } })).runs.map((run) => run.id)).toEqual([rerun.id]);
    expect(await finish(rerun.id)).toMatchObject({ status: 'failed' });
    expect(executions.prepare).toBe(2);

    // The retry continues the failed run: prepare's recorded result is kept, ship runs again.
    shipping.broken = false;
    await client.retry(failed.id);
    expect(await finish(failed.id)).toMatchObject({ status: 'completed', attempt: 2, output: 'prepared o-1, shipped' });
    expect(executions.prepare).toBe(2);

    // Without a body, a rerun takes the old run's input.
    const again = await client.rerun(failed.id);
    expect(again).toMatchObject({ input: { order: 'o-1' }, tags: { tenant: 'acme', 'rerun-of': failed.id } });
    expect(await finish(again.id)).toMatchObject({ status: 'completed', output: 'prepared o-1, shipped' });
  });

  it('refuses a rerun of an unfinished run, of no run, or with bad input, and creates nothing', async () => {
    const [queued] = await park(1, { kind: 'refusal' });
    const done = await finish((await client.start(flaky, null)).id);
    const before = await snapshotTables(db);
    const refusals: [string, object, number, string][] = [
      [`/v1/runs/${queued.id}/rerun`, {}, 409, 'run_not_finished'],
      ['/v1/runs/0190a2b4-0000-7000-8000-000000000000/rerun', {}, 404, 'run_not_found'],
      [`/v1/runs/${done.id}/rerun`, { input: 1, idempotencyKey: 'k' }, 400, 'unknown_field'],
      [`/v1/runs/${done.id}/rerun`, { tags: Object.fromEntries(Array.from({ length: TAGS_MAX }, (_, i) => [`k${i}`, 'v'])) }, 400, 'invalid_tags'],
    ];
    for (const [path, body, status, reason] of refusals) {
      const response = await http().post(path).send(body).expect(status);
      expect(response.body).toMatchObject({ statusCode: status, reason });
      expect(response.body.message).toEqual(expect.any(String));
    }
    expect(await snapshotTables(db)).toEqual(before);
    await client.cancel(queued.id);
  });

  it('counts, then cancels page by page, the unfinished runs a filter matches, and none created after the count', async () => {
    const matching = await park(5, { batch: 'b1' });
    const other = await park(2, { batch: 'b2' });
    const filter = { workflow: 'actions-parked', tags: { batch: 'b1' } };

    const count = await client.cancelRuns(filter, { dryRun: true });
    expect(count).toMatchObject({ matched: 5, capped: false, acted: 0 });
    const late = await park(1, { batch: 'b1' });

    const pages = [await client.cancelRuns(filter, { before: count.before!, limit: 2 })];
    for (let before = pages[0].before; before; before = pages[pages.length - 1].before) pages.push(await client.cancelRuns(filter, { before, limit: 2 }));
    expect(pages.map(({ matched, acted }) => [matched, acted])).toEqual([
      [2, 2],
      [2, 2],
      [1, 1],
    ]);
    expect(await statuses(matching)).toEqual(Array(5).fill('cancelled'));
    expect(await statuses([...other, ...late])).toEqual(['queued', 'queued', 'queued']);
    // A second pass finds nothing left to cancel.
    expect(await client.cancelRuns(filter, { before: count.before!, dryRun: true })).toMatchObject({ matched: 0 });
    await client.cancelRuns({ workflow: 'actions-parked' });
  });

  it('retries every failed run a filter matches: each continues from its failed step', async () => {
    const runs = await Promise.all(['a', 'b', 'c'].map((order) => client.start(twoSteps, { order }, { tags: { wave: 'w1' } })));
    for (const run of runs) expect(await finish(run.id)).toMatchObject({ status: 'failed' });
    const prepared = executions.prepare;
    shipping.broken = false;

    expect(await client.retryRuns({ tags: { wave: 'w1' } }, { dryRun: true })).toMatchObject({ matched: 3 });
    expect(await client.retryRuns({ tags: { wave: 'w1' } })).toMatchObject({ matched: 3, acted: 3, before: null });
    for (const run of runs) expect(await finish(run.id)).toMatchObject({ status: 'completed', attempt: 2 });
    expect(executions.prepare).toBe(prepared);
  });

  it('refuses a bulk cancel or retry with a bad filter, limit or cursor (400 with its reason), and changes nothing', async () => {
    const [queued] = await park(1, { kind: 'bulk-refusal' });
    // The run's wake-up is published and its outbox row deleted in the background: settled before the snapshot.
    await eventually('the outbox drained', async () => (await db.sql(`SELECT 1 FROM outbox`)).length === 0);
    const before = await snapshotTables(db);
    const refusals: [string, object, string][] = [
      ['no filter', {}, 'invalid_filter'],
      ['an idempotency key without its workflow', { filter: { idempotencyKey: 'k' } }, 'invalid_idempotencyKey'],
      ['a limit of 0', { filter: {}, limit: 0 }, 'invalid_limit'],
      ['a limit over 1,000', { filter: {}, limit: 1001 }, 'invalid_limit'],
      ['a tag that is not key:value', { filter: { tag: ['tenant'] } }, 'invalid_tag'],
      ['an unknown status', { filter: { status: 'stuck' } }, 'invalid_status'],
      ['a field the filter does not have', { filter: { queue: 'q' } }, 'unknown_field'],
      ['a before that is no run id', { filter: {}, before: 'x' }, 'invalid_before'],
    ];
    for (const path of ['/v1/runs/cancel', '/v1/runs/retry']) {
      for (const [what, body, reason] of refusals) {
        const response = await http().post(path).send(body);
        expect({ what, status: response.status, reason: response.body.reason }).toEqual({ what, status: 400, reason });
        expect(response.body.message).toEqual(expect.any(String));
      }
    }
    expect(await snapshotTables(db)).toEqual(before);
    await client.cancel(queued.id);
  });

  it('wf runs bulk-cancel says how many match and cancels only with --yes; wf runs rerun starts the new run', async () => {
    const parked = await park(3, { batch: 'cli' });
    const env = { WF_URL: coordinator.url };
    const counted = await wf(['runs', 'bulk-cancel', '--tag', 'batch:cli'], env);
    expect(counted).toMatchObject({ code: 0, stdout: '3 unfinished runs match; pass --yes to cancel them\n' });
    expect(await statuses(parked)).toEqual(['queued', 'queued', 'queued']);
    const cancelled = await wf(['runs', 'bulk-cancel', '--tag', 'batch:cli', '--yes'], env);
    expect(cancelled).toMatchObject({ code: 0, stdout: '3 unfinished runs match; cancelled 3\n' });
    expect(await statuses(parked)).toEqual(['cancelled', 'cancelled', 'cancelled']);

    const rerun = await wf(['--json', 'runs', 'rerun', parked[0].id, '--input', '{"n":2}'], env);
    expect(rerun.code).toBe(0);
    expect(JSON.parse(rerun.stdout)).toMatchObject({ workflow: 'actions-parked', input: { n: 2 }, tags: { batch: 'cli', 'rerun-of': parked[0].id } });
    await client.cancelRuns({ workflow: 'actions-parked' });
  });
});
