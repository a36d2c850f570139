import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { UpdateFailedError, UpdatePendingError, UpdateRefusedError, WorkflowClient } from '@nest-durable/client';
import { defineWorkflow } from '@nest-durable/workflow';
import { Type } from '@sinclair/typebox';
import request from 'supertest';
import { loadWorkerConfig } from '../apps/worker/src/config/worker.config';
import { workerModuleOptions } from '../apps/worker/src/worker-app.module';
import { type RunningCoordinator, type RunningWorker, startCoordinator, startCustomWorker } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { TEST_REDIS_URL, testPrefix } from './support/redis';

/** Lets the `gated` runs' task end when a case says so. */
let openGate: () => void = () => undefined;

/**
 * A cart: `addItem` updates add to it (answering its size), `note` is declared but never handled; it sleeps an
 * hour (or, `gated`, runs one task until the test opens the gate and ends without waiting) and returns its items.
 */
const cart = (version: string) =>
  defineWorkflow<{ gated?: boolean }, string[]>({
    name: 'cart',
    version,
    updates: { addItem: { inputSchema: Type.Object({ sku: Type.String() }) }, note: {} },
    handler: async (ctx, input) => {
      const items: string[] = [];
      ctx.handleUpdate('addItem', async (item: { sku: string }) => {
        if (item.sku === 'out-of-stock') throw new Error(`${item.sku} cannot be added`);
        items.push(item.sku);
        return items.length;
      });
      ctx.onQuery('items', () => items);
      if (input.gated) {
        await ctx.task('work', () => new Promise<void>((resolve) => (openGate = resolve)));
        return items;
      }
      await ctx.sleep('shopping', 3_600_000);
      return items;
    },
  });

/**
 * Updates end to end: a worker taking runs by HTTP claims (version `http`) and one by Redis Streams (version
 * `streams`), against one coordinator that publishes to the streams.
 */
describe('updates', () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator;
  let workers: RunningWorker[];
  let client: WorkflowClient;

  beforeAll(async () => {
    db = await createTestDatabase('updates');
    const redis = { redisUrl: TEST_REDIS_URL, redisPrefix: testPrefix('updates') };
    coordinator = await startCoordinator(db.url, { dispatch: 'redis-streams', ...redis });
    const streams = loadWorkerConfig({
      COORDINATOR_URL: coordinator.url,
      SUBSCRIBER: 'redis-streams',
      REDIS_URL: redis.redisUrl,
      REDIS_PREFIX: redis.redisPrefix,
    });
    workers = await Promise.all([
      startCustomWorker(coordinator.url, { workflows: [cart('http')], registrationIntervalMs: 200, claimWaitMs: 1_000 }),
      startCustomWorker(coordinator.url, { ...workerModuleOptions(streams, [cart('streams')]), registrationIntervalMs: 200, claimWaitMs: 1_000 }),
    ]);
    client = new WorkflowClient({ url: coordinator.url });
    await eventually('both versions registered their updates', async () => {
      const [{ n }] = await db.sql<{ n: number }>(`SELECT count(*)::int AS n FROM workflows WHERE workflow = 'cart' AND updates IS NOT NULL`);
      return n === 2;
    });
  }, 60_000);

  afterAll(async () => {
    await Promise.all((workers ?? []).map((worker) => worker.close()));
    await coordinator?.close();
    await db?.drop();
  });

  const http = () => request(coordinator.url);
  const sleeping = async (version: string): Promise<string> => {
    const { id } = await client.start({ name: 'cart', version }, {});
    await eventually('the run sleeps', async () => (await client.get(id)).status === 'waiting');
    return id;
  };
  const sleepOf = async (id: string) =>
    (await db.sql<{ wake_at: Date; status: string }>(`SELECT wake_at, status FROM tasks WHERE run_id = $1 AND kind = 'sleep'`, [id]))[0];

  it.each(['http', 'streams'])(
    'wakes a sleeping run (%s), which applies each update at its sleep, answers it, and sleeps on to the same deadline',
    async (version) => {
      const id = await sleeping(version);
      const sleep = await sleepOf(id);

      // The second answer comes from a new execution of the run, which replays the update recorded before it.
      expect(await client.update(id, 'addItem', { sku: 'apple' })).toBe(1);
      await eventually('the run sleeps again', async () => (await client.get(id)).status === 'waiting');
      expect(await client.update(id, 'addItem', { sku: 'pear' })).toBe(2);

      await eventually('the run sleeps again', async () => (await client.get(id)).status === 'waiting');
      expect(await sleepOf(id)).toEqual(sleep);
      const run = await client.get(id);
      const updates = (run.tasks ?? []).filter((step) => step.kind === 'update');
      expect(updates.map(({ key, seq, status, output }) => ({ key, seq, status, output }))).toEqual([
        { key: 'update:addItem#1', seq: 0, status: 'completed', output: { updateId: expect.any(String), input: { sku: 'apple' }, output: 1 } },
        { key: 'update:addItem#2', seq: 0, status: 'completed', output: { updateId: expect.any(String), input: { sku: 'pear' }, output: 2 } },
      ]);

      // Its sleep ends: the replay applies both updates at the sleep again, and the run returns what they made.
      await client.wake(id);
      expect((await client.waitForResult(id, { timeoutMs: 10_000 })).output).toEqual(['apple', 'pear']);
    },
    20_000,
  );

  it('applies updates sent at once one at a time, in the order they were accepted', async () => {
    const id = await sleeping('streams');
    const skus = ['a', 'b', 'c', 'd'];
    const answers = await Promise.all(skus.map((sku) => client.update<number>(id, 'addItem', { sku })));
    expect([...answers].sort()).toEqual([1, 2, 3, 4]);
    const accepted = await db.sql<{ sku: string; output: number }>(
      `SELECT input->>'sku' AS sku, output::int AS output FROM run_updates WHERE run_id = $1 ORDER BY position`,
      [id],
    );
    // Each one's answer is its place in the arrival order.
    expect(accepted.map((row) => row.output)).toEqual([1, 2, 3, 4]);
    // What its query handler answers after them is recorded before the run waits again.
    await eventually('the run sleeps again', async () => (await client.get(id)).status === 'waiting');
    expect((await client.query(id, 'items')).value).toEqual(accepted.map((row) => row.sku));
    await client.wake(id);
    expect((await client.waitForResult(id, { timeoutMs: 10_000 })).output).toEqual(accepted.map((row) => row.sku));
  }, 20_000);

  it('answers 422 with the error when the handler throws (or there is none), and the run goes on', async () => {
    const id = await sleeping('http');
    const failed = await http()
      .post(`/v1/runs/${id}/updates/addItem`)
      .send({ input: { sku: 'out-of-stock' } });
    expect(failed.status).toBe(422);
    expect(failed.body).toMatchObject({
      reason: 'update_failed',
      update: { status: 'failed', name: 'addItem', error: { name: 'Error', message: 'out-of-stock cannot be added' } },
    });
    const unhandled = await client.update(id, 'note', 'hello').catch((error: unknown) => error);
    expect(unhandled).toBeInstanceOf(UpdateFailedError);
    expect((unhandled as UpdateFailedError).update?.error?.name).toBe('UpdateNotHandled');

    expect(await client.update(id, 'addItem', { sku: 'plum' })).toBe(1);
    await eventually('the run sleeps again', async () => (await client.get(id)).status === 'waiting');
  }, 20_000);

  it('refuses an unknown name, an input its schema refuses and an ended run with a reason, sending nothing', async () => {
    const id = await sleeping('http');
    const before = await db.sql(`SELECT revision, due_at FROM runs WHERE id = $1`, [id]);

    const unknown = await http().post(`/v1/runs/${id}/updates/removeItem`).send({ input: {} }).expect(404);
    expect(unknown.body).toMatchObject({ reason: 'update_not_declared', message: expect.stringContaining('addItem, note') });
    const invalid = await http()
      .post(`/v1/runs/${id}/updates/addItem`)
      .send({ input: { sku: 7 } })
      .expect(400);
    expect(invalid.body).toMatchObject({ reason: 'invalid_input', message: expect.stringContaining('input/sku') });
    await http()
      .post(`/v1/runs/${id}/updates/addItem`)
      .send({ input: { sku: 'x' }, colour: 'red' })
      .expect(400);
    await http()
      .post('/v1/runs/00000000-0000-7000-8000-000000000000/updates/addItem')
      .send({ input: { sku: 'x' } })
      .expect(404);

    expect(await db.sql(`SELECT revision, due_at FROM runs WHERE id = $1`, [id])).toEqual(before);
    expect(await db.sql(`SELECT id FROM run_updates WHERE run_id = $1`, [id])).toEqual([]);

    await client.cancel(id);
    const ended = await http()
      .post(`/v1/runs/${id}/updates/addItem`)
      .send({ input: { sku: 'x' } })
      .expect(409);
    expect(ended.body.reason).toBe('run_terminal');
    expect(await db.sql(`SELECT id FROM run_updates WHERE run_id = $1`, [id])).toEqual([]);
  }, 20_000);

  it('answers 202 past waitMs, then the update is polled; a run that ends without waiting refuses what it did not apply', async () => {
    const { id } = await client.start({ name: 'cart', version: 'http' }, { gated: true });
    await eventually('the run is in its task', async () => (await client.get(id)).status === 'running');

    const pending = await http()
      .post(`/v1/runs/${id}/updates/addItem`)
      .send({ input: { sku: 'late' }, waitMs: 0 })
      .expect(202);
    expect(pending.body).toMatchObject({ status: 'pending', name: 'addItem', input: { sku: 'late' } });
    await expect(client.update(id, 'addItem', { sku: 'later' }, { timeoutMs: 200 })).rejects.toBeInstanceOf(UpdatePendingError);
    const waiting = client.getUpdate(id, 'addItem', pending.body.id, 10_000);
    const refused = client.update(id, 'addItem', { sku: 'never' }).catch((error: unknown) => error);
    // Accepted before the run can end: sent after it, the update would be refused up front (409 run_terminal).
    await eventually('the third update is accepted', async () => (await db.sql(`SELECT id FROM run_updates WHERE run_id = $1`, [id])).length === 3);

    openGate();
    expect((await client.waitForResult(id, { timeoutMs: 10_000 })).output).toEqual([]);
    expect(await waiting).toMatchObject({ status: 'refused', answeredAt: expect.any(String) });
    await expect(client.getUpdate(id, 'addItem', pending.body.id)).resolves.toMatchObject({ status: 'refused' });
    expect(await refused).toBeInstanceOf(UpdateRefusedError);
    const statuses = await db.sql<{ status: string }>(`SELECT status FROM run_updates WHERE run_id = $1`, [id]);
    expect(statuses).toEqual([{ status: 'refused' }, { status: 'refused' }, { status: 'refused' }]);
    await http()
      .get(`/v1/runs/${id}/updates/addItem/${id}`)
      .expect(404, /update_not_found/);
    await http()
      .get(`/v1/runs/${id}/updates/note/${pending.body.id}`)
      .expect(404, /update_not_found/);
  }, 20_000);
});
