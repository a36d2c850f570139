import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { WorkflowClient } from '@nest-durable/client';
import request from 'supertest';
import { chainWorkflow, echoWorkflow, flakyWorkflow, OrderProcessingWorkflow } from '../apps/worker/src/workflows';
import { type RunningCoordinator, type RunningWorker, startCoordinator, startWorker } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';

/** The example workflows, end to end: real coordinator, real worker, real PostgreSQL, over HTTP. */
describe('example workflows end to end', () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator;
  let worker: RunningWorker;
  let client: WorkflowClient;

  beforeAll(async () => {
    db = await createTestDatabase('workflows');
    coordinator = await startCoordinator(db.url);
    worker = await startWorker(coordinator.url);
    client = new WorkflowClient({ url: coordinator.url });
  });

  afterAll(async () => {
    await worker?.close();
    await coordinator?.close();
    await db?.drop();
  });

  it('order-processing runs its three tasks and ships the order', async () => {
    const response = await request(coordinator.url)
      .post('/v1/runs')
      .send({ workflow: 'order-processing', version: '1.0.0', input: { orderId: 'o-1' } })
      .expect(201);
    expect(response.body).toMatchObject({ workflow: 'order-processing', version: '1.0.0' });
    // Queued, or already handed to the worker's waiting claim (docs/architecture.md, "Handing a new run to a waiting claim").
    expect([
      ['queued', 0],
      ['running', 1],
    ]).toContainEqual([response.body.status, response.body.revision]);

    const result = await request(coordinator.url).get(`/v1/runs/${response.body.id}/result?waitMs=10000`).expect(200);
    expect(result.body.status).toBe('completed');
    expect(result.body.output).toMatchObject({ orderId: 'o-1', status: 'shipped' });
    expect(result.body.tasks.map((task: { name: string }) => task.name)).toEqual(['reserve-inventory', 'charge-payment', 'ship-order']);
    expect(result.body.tasks.every((task: { status: string; attempts: number }) => task.status === 'completed' && task.attempts === 1)).toBe(true);
  });

  it('echo returns its input', async () => {
    const input = { nested: { list: [1, 'two', null, true] }, text: 'héllo' };
    const run = await client.start(echoWorkflow, input);
    const done = await client.waitForResult(run.id, { timeoutMs: 10_000 });
    expect(done).toMatchObject({ status: 'completed', output: input });
  });

  it('chain runs N sequential tasks', async () => {
    const run = await client.start(chainWorkflow, { steps: 12, stepMs: 1 });
    const done = await client.waitForResult(run.id, { timeoutMs: 10_000 });
    expect(done.status).toBe('completed');
    expect(done.output).toEqual({ steps: 12 });
    expect(done.tasks?.map((task) => task.key)).toEqual(Array.from({ length: 12 }, (_, i) => `step#${i + 1}`));
    expect(done.tasks?.map((task) => task.output)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
  });

  it('flaky retries its task until it succeeds', async () => {
    const run = await client.start(flakyWorkflow, { failTimes: 2 });
    const done = await client.waitForResult(run.id, { timeoutMs: 10_000 });
    expect(done).toMatchObject({ status: 'completed', output: { attempts: 3 } });
    expect(done.tasks).toEqual([expect.objectContaining({ key: 'unreliable-call#1', status: 'completed', attempts: 3 })]);
  });

  it('flaky fails the run once its task runs out of attempts', async () => {
    const run = await client.start(flakyWorkflow, { failTimes: 99 });
    const done = await client.waitForResult(run.id, { timeoutMs: 10_000 });
    expect(done.status).toBe('failed');
    expect(done.error).toMatchObject({ message: 'attempt 5 failed on purpose' });
    expect(done.tasks).toEqual([expect.objectContaining({ status: 'failed', attempts: 5 })]);
  });

  it('records every transition in the append-only history', async () => {
    const run = await client.start(OrderProcessingWorkflow, { orderId: 'o-history' });
    await client.waitForResult(run.id, { timeoutMs: 10_000 });
    const history = await db.sql<{ from_status: string | null; to_status: string; revision: number }>(
      'SELECT from_status, to_status, revision FROM run_transitions WHERE run_id = $1 ORDER BY id',
      [run.id],
    );
    expect(history).toEqual([
      { from_status: null, to_status: 'queued', revision: 0 },
      { from_status: 'queued', to_status: 'running', revision: 1 },
      { from_status: 'running', to_status: 'completed', revision: 2 },
    ]);
    await expect(db.sql('UPDATE run_transitions SET revision = 99 WHERE run_id = $1', [run.id])).rejects.toThrow('append-only');
  });

  it('splits a coalesced batch the coordinator refuses as too large, so every run still completes', async () => {
    const small = await startCoordinator(db.url, { bodyLimitBytes: 16 * 1024 });
    const smallWorker = await startWorker(small.url, { concurrency: 10 });
    try {
      const smallClient = new WorkflowClient({ url: small.url });
      // Each completion carries ~6 KB (with multi-byte characters): a few together exceed the 16 KiB limit.
      const runs = await Promise.all(Array.from({ length: 10 }, (_, i) => smallClient.start(echoWorkflow, { i, text: 'é'.repeat(3_000) })));
      const done = await Promise.all(runs.map((run) => smallClient.waitForResult(run.id, { timeoutMs: 20_000 })));
      expect(done.map((run) => run.status)).toEqual(Array.from({ length: 10 }, () => 'completed'));
    } finally {
      await smallWorker.close();
      await small.close();
    }
  });

  it('runs many runs concurrently, each exactly once', async () => {
    const runs = await Promise.all(Array.from({ length: 60 }, (_, i) => client.start(chainWorkflow, { steps: 3 + (i % 3) })));
    const done = await Promise.all(runs.map((run) => client.waitForResult(run.id, { timeoutMs: 20_000 })));
    expect(done.every((run) => run.status === 'completed' && run.revision === 2)).toBe(true);
    const [claims] = await db.sql<{ count: string }>(`SELECT count(*) FROM run_transitions WHERE to_status = 'running' AND run_id = ANY($1)`, [
      runs.map((run) => run.id),
    ]);
    expect(Number(claims.count)).toBe(60);
  });
});
