import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PassThrough } from 'node:stream';
import { type DurableError, type JsonValue, QueryNotFoundError, type WatchEvent, WorkflowClient } from '@nest-durable/client';
import { defineWorkflow } from '@nest-durable/workflow';
import { loadWorkerConfig } from '../apps/worker/src/config/worker.config';
import { workerModuleOptions } from '../apps/worker/src/worker-app.module';
import { runCli } from '../packages/client/src/cli/program';
import { type RunningCoordinator, type RunningWorker, startCoordinator, startCustomWorker } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { TEST_REDIS_URL, testPrefix } from './support/redis';

/** An order whose stage a query handler answers, with its total exposed; it waits for `shipped` in between. */
const order = defineWorkflow<{ total: number }, string>({
  name: 'query-order',
  version: '1',
  handler: async (ctx, { total }) => {
    let stage = 'charging';
    ctx.onQuery('stage', () => stage);
    ctx.expose('total', total);
    await ctx.task('charge', () => ({ charged: total }));
    stage = 'awaiting-shipment';
    await ctx.waitForEvent('shipped');
    stage = 'shipped';
    return 'done';
  },
});

/** The test lets the import go on step by step: each `open` releases one waiting `next`. */
const gate = {
  waiting: [] as (() => void)[],
  next(): Promise<void> {
    return new Promise((resolve) => this.waiting.push(resolve));
  },
  open(): void {
    this.waiting.shift()?.();
  },
};

/**
 * A long task reporting progress: `steps` values, each held until the test saw it, then a burst of 1,000 (coalesced
 * to its last), then a progress too large (refused at the call: its reason is exposed).
 */
const importer = defineWorkflow<{ steps: number }, string>({
  name: 'query-import',
  version: '1',
  handler: async (ctx, { steps }) => {
    await ctx.task('import', async () => {
      for (let done = 1; done <= steps; done++) {
        ctx.progress({ done, of: steps });
        await gate.next();
      }
      for (let burst = 1; burst <= 1000; burst++) ctx.progress({ burst });
      return steps;
    });
    try {
      ctx.progress('x'.repeat(5000));
    } catch (error) {
      ctx.expose('refused', (error as DurableError).reason);
    }
    return 'imported';
  },
});

/** Watches the run, opening the gate at each stepped progress it sees; every event, in order. */
async function watchOpeningGate(client: WorkflowClient, id: string): Promise<WatchEvent[]> {
  const events: WatchEvent[] = [];
  for await (const event of client.watch(id)) {
    events.push(event);
    if (event.type === 'progress' && (event.progress as { done?: number }).done !== undefined) gate.open();
  }
  return events;
}

const progressOf = (events: WatchEvent[]): JsonValue[] => events.flatMap((event) => (event.type === 'progress' ? [event.progress] : []));

/** Runs `wf` in this process; resolves with its exit code and output. */
async function wf(url: string, ...args: string[]): Promise<{ code: number; stdout: string }> {
  const [stdout, stderr] = [new PassThrough(), new PassThrough()];
  const chunks: Buffer[] = [];
  stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
  const code = await runCli(args, { url }, { stdout, stderr });
  return { code, stdout: Buffer.concat(chunks).toString() };
}

/**
 * Queries, exposed values and progress (issue 37) against a real coordinator and worker: a query answers from what
 * the run recorded (exposed values, query handlers' answers, task results), while it waits and after it ended;
 * progress reaches `client.watch` live through the feed, each value as it comes (HTTP claims and Redis Streams),
 * coalesced within the worker's interval and kept on the run.
 */
describe('queries and progress', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase('queries');
  });

  afterAll(async () => {
    await db?.drop();
  });

  describe('HTTP claims', () => {
    let coordinator: RunningCoordinator;
    let worker: RunningWorker;
    let client: WorkflowClient;

    beforeAll(async () => {
      coordinator = await startCoordinator(db.url);
      worker = await startCustomWorker(coordinator.url, { workflows: [order, importer], claimWaitMs: 1_000, progressIntervalMs: 100, shutdownGraceMs: 100 });
      client = new WorkflowClient({ url: coordinator.url });
    });

    afterAll(async () => {
      await worker?.close();
      await coordinator?.close();
    });

    const get = (path: string) => fetch(`${coordinator.url}${path}`).then(async (response) => ({ status: response.status, body: await response.json() }));

    it('answers from exposed values, query handlers and task results while the run waits and after it ended; a replay rewrites nothing', async () => {
      const run = await client.start(order, { total: 1200 });
      await eventually('the run waits for its shipment', async () => (await client.get(run.id)).status === 'waiting');

      expect(await client.query(run, 'stage')).toMatchObject({ runId: run.id, name: 'stage', source: 'value', value: 'awaiting-shipment' });
      const total = await client.query(run.id, 'total');
      expect(total).toMatchObject({ source: 'value', value: 1200 });
      expect(await client.query(run, 'charge')).toMatchObject({ source: 'task', value: { charged: 1200 } });

      await client.sendEvent(run.id, 'shipped');
      expect(await client.waitForResult(run, { timeoutMs: 10_000 })).toMatchObject({ status: 'completed', output: 'done' });
      // The handler's last answer landed with the outcome; the total exposed again by the replay was not rewritten.
      expect(await client.query(run, 'stage')).toMatchObject({ value: 'shipped' });
      expect(await client.query(run, 'total')).toEqual(total);
      expect(await db.sql(`SELECT name FROM run_values WHERE run_id = $1 ORDER BY name`, [run.id])).toEqual([{ name: 'stage' }, { name: 'total' }]);
      expect(await wf(coordinator.url, 'runs', 'query', run.id, 'stage')).toEqual({ code: 0, stdout: '"shipped"\n' });
      // The list has every exposed value by name (not the task's result, which only a query by name finds).
      const listed = await client.values(run);
      expect(listed).toEqual({
        runId: run.id,
        values: [
          { name: 'stage', value: 'shipped', updatedAt: expect.any(String) },
          { name: 'total', value: 1200, updatedAt: total.updatedAt },
        ],
      });
      const stageAt = listed.values[0].updatedAt;
      expect(await wf(coordinator.url, 'runs', 'queries', run.id)).toEqual({
        code: 0,
        stdout: `stage\t${stageAt}\t"shipped"\ntotal\t${total.updatedAt}\t1200\n`,
      });
    });

    it('refuses a query of an unknown name or run (404, each its reason), and a malformed one (400)', async () => {
      const run = await client.start(order, { total: 5 });
      await eventually('the run waits', async () => (await client.get(run.id)).status === 'waiting');

      await expect(client.query(run, 'nothing')).rejects.toBeInstanceOf(QueryNotFoundError);
      expect(await get(`/v1/runs/0190a0b4-0000-7000-8000-000000000000/queries`)).toMatchObject({ status: 404, body: { reason: 'run_not_found' } });
      expect(await get(`/v1/runs/not-a-run/queries`)).toMatchObject({ status: 400, body: { reason: 'invalid_run_id' } });
      expect(await get(`/v1/runs/${run.id}/queries/nothing`)).toMatchObject({ status: 404, body: { reason: 'query_not_found' } });
      expect(await get(`/v1/runs/0190a0b4-0000-7000-8000-000000000000/queries/stage`)).toMatchObject({ status: 404, body: { reason: 'run_not_found' } });
      expect(await get(`/v1/runs/${run.id}/queries/${'q'.repeat(300)}`)).toMatchObject({ status: 400, body: { reason: 'invalid_query_name' } });
      expect(await get(`/v1/runs/not-a-run/queries/stage`)).toMatchObject({ status: 400, body: { reason: 'invalid_run_id' } });
      await client.cancel(run.id);
    });

    it('streams progress to client.watch as it comes, coalesces a burst, refuses one too large, and keeps the last on the run', async () => {
      const run = await client.start(importer, { steps: 3 });
      const events = await watchOpeningGate(client, run.id);

      // Each stepped value was seen while the task still held (the worker waited for it), then the burst's last alone.
      expect(progressOf(events)).toEqual([{ done: 1, of: 3 }, { done: 2, of: 3 }, { done: 3, of: 3 }, { burst: 1000 }]);
      const last = events.at(-1);
      expect(last?.type === 'run' && last.run).toMatchObject({ status: 'completed', progress: { burst: 1000 } });
      expect(await client.get(run.id)).toMatchObject({ progress: { burst: 1000 }, progressAt: expect.any(String) });
      expect(await client.query(run, 'refused')).toMatchObject({ value: 'progress_too_large' });

      // `wf runs watch` of the ended run prints its status, steps and kept progress, and exits 0.
      const watched = await wf(coordinator.url, '--json', 'runs', 'watch', run.id);
      expect(watched.code).toBe(0);
      const lines = watched.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { type: string; progress?: JsonValue });
      expect(lines.filter((line) => line.type === 'progress').map((line) => line.progress)).toEqual([{ burst: 1000 }]);
    });

    it('refuses a worker report of progress over the size limit (400 progress_too_large), writing nothing', async () => {
      const response = await fetch(`${coordinator.url}/v1/worker/reports`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          reports: [{ type: 'values', runId: '0190a0b4-0000-7000-8000-000000000000', values: { expectedRevision: 1, progress: 'x'.repeat(5000) } }],
        }),
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ reason: 'progress_too_large' });
    });
  });

  describe('Redis Streams', () => {
    let coordinator: RunningCoordinator;
    let worker: RunningWorker;

    beforeAll(async () => {
      const prefix = testPrefix('queries-streams');
      coordinator = await startCoordinator(db.url, { dispatch: 'redis-streams', redisUrl: TEST_REDIS_URL, redisPrefix: prefix, streamPartitions: 2 });
      const config = loadWorkerConfig({
        COORDINATOR_URL: coordinator.url,
        SUBSCRIBER: 'redis-streams',
        REDIS_URL: TEST_REDIS_URL,
        REDIS_PREFIX: prefix,
        REDIS_BLOCK_MS: '500',
        WORKER_ID: 'queries-streams',
      });
      worker = await startCustomWorker(coordinator.url, { ...workerModuleOptions(config, [importer]), progressIntervalMs: 100 });
    });

    afterAll(async () => {
      await worker?.close();
      await coordinator?.close();
    });

    it('streams each progress to client.watch as it comes', async () => {
      const client = new WorkflowClient({ url: coordinator.url });
      const run = await client.start(importer, { steps: 2 });
      const events = await watchOpeningGate(client, run.id);
      expect(progressOf(events)).toEqual([{ done: 1, of: 2 }, { done: 2, of: 2 }, { burst: 1000 }]);
      expect(events.at(-1)).toMatchObject({ type: 'run', run: { status: 'completed' } });
    });
  });
});
