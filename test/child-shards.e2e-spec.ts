import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ClaimedRun } from '@nest-durable/client';
import { defineWorkflow } from '@nest-durable/workflow';
import { WorkflowClient } from '@nest-durable/client';
import request from 'supertest';
import { chainWorkflow, parentWorkflow } from '../apps/worker/src/workflows';
import { type RunningCoordinator, type RunningWorker, startCoordinator, startCustomWorker } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';

/** Starts `chain` as a child routed to `input.shard` (null: no shard), waiting for it or not. */
const routingParentWorkflow = defineWorkflow<{ shard: string | null; wait: boolean }, { child?: { steps: number }; childId?: string }>({
  name: 'routing-parent',
  version: '1',
  handler: async (ctx, input) =>
    input.wait
      ? { child: await ctx.child('routed', chainWorkflow, { steps: 1 }, { shard: input.shard }) }
      : { childId: await ctx.startChild('routed', chainWorkflow, { steps: 1 }, { shard: input.shard }) },
});

/**
 * Child runs and routing shards: a child runs in its parent's shard unless it names its own, so
 * workers that serve only a shard can run whole run trees.
 */
describe('child runs and shards', () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator;
  const workers: RunningWorker[] = [];
  let client: WorkflowClient;

  beforeAll(async () => {
    db = await createTestDatabase('child_shards');
    coordinator = await startCoordinator(db.url, { claimPollIntervalMs: 100 });
    const workflows = [parentWorkflow, routingParentWorkflow, chainWorkflow];
    for (const [workerId, shards] of [
      ['eu-worker', ['eu-west']],
      ['us-worker', ['us-east']],
      ['plain-worker', []],
    ] as const) {
      workers.push(await startCustomWorker(coordinator.url, { workflows, workerId, shards: [...shards], claimWaitMs: 1_000 }));
    }
    client = new WorkflowClient({ url: coordinator.url });
  });

  afterAll(async () => {
    await Promise.all(workers.map((worker) => worker.close()));
    await coordinator?.close();
    await db?.drop();
  });

  /** The workers that executed the run (from its history). */
  const executedBy = async (runId: string) =>
    (await db.sql<{ worker_id: string }>(`SELECT worker_id FROM run_transitions WHERE run_id = $1 AND to_status = 'running'`, [runId])).map(
      (row) => row.worker_id,
    );
  const childOf = async (parentId: string) => {
    const [row] = await db.sql<{ id: string; queue: string }>(`SELECT id, queue FROM runs WHERE parent_id = $1`, [parentId]);
    return row;
  };

  it("runs a child without a shard of its own in its parent's shard, on the worker serving only that shard", async () => {
    const parent = await client.start(parentWorkflow, { steps: 2 }, { shard: 'eu-west' });
    const done = await client.waitForResult(parent.id, { timeoutMs: 15_000 });
    expect(done).toMatchObject({ status: 'completed', output: { steps: 2 } });

    const child = await childOf(parent.id);
    expect(await executedBy(child.id)).toEqual(['eu-worker']);
    expect(child.queue).toBe('chain:1:eu-west');
    expect(await client.get(child.id)).toMatchObject({ status: 'completed', shard: 'eu-west' });
    expect(done.shard).toBe('eu-west');
  });

  it('routes a child to the shard it names, or to no shard with null', async () => {
    for (const [shard, queue, worker] of [
      ['us-east', 'chain:1:us-east', 'us-worker'],
      [null, 'chain:1', 'plain-worker'],
    ] as const) {
      const parent = await client.start(routingParentWorkflow, { shard, wait: true }, { shard: 'eu-west' });
      expect(await client.waitForResult(parent.id, { timeoutMs: 15_000 })).toMatchObject({ status: 'completed', output: { child: { steps: 1 } } });
      const child = await childOf(parent.id);
      expect(child.queue).toBe(queue);
      expect(await client.get(child.id)).toMatchObject({ status: 'completed', shard });
      expect(await executedBy(child.id)).toEqual([worker]);
      expect(new Set(await executedBy(parent.id))).toEqual(new Set(['eu-worker']));
    }
  });

  it('routes a child started without waiting the same way', async () => {
    const parent = await client.start(routingParentWorkflow, { shard: 'us-east', wait: false }, { shard: 'eu-west' });
    const done = await client.waitForResult(parent.id, { timeoutMs: 15_000 });
    expect(done.status).toBe('completed');
    const { childId } = done.output as { childId: string };
    expect(await client.waitForResult(childId, { timeoutMs: 15_000 })).toMatchObject({ status: 'completed', shard: 'us-east' });
    expect(await executedBy(childId)).toEqual(['us-worker']);
  });

  it('refuses a child shard that is not an identifier', async () => {
    const parent = await client.start(routingParentWorkflow, { shard: 'eu west', wait: true }, { shard: 'eu-west' });
    const done = await client.waitForResult(parent.id, { timeoutMs: 15_000 });
    expect(done.status).toBe('failed');
    expect(done.error?.message).toMatch(/shard/);
    expect(await childOf(parent.id)).toBeUndefined();
  });

  it('the child-start endpoint refuses a bad shard with 400 invalid_shard and changes nothing', async () => {
    // A workflow no test worker serves, claimed by the test acting as a worker.
    const parent = await client.start({ name: 'unserved', version: '1' }, null, { shard: 'eu-west' });
    const claimed = await request(coordinator.url)
      .post('/v1/worker/claims')
      .send({ workerId: 'test', workflows: [{ name: 'unserved', version: '1', shard: 'eu-west' }], limit: 1, waitMs: 0 })
      .expect(200);
    const [run] = claimed.body.runs as ClaimedRun[];
    const child = { expectedRevision: run.revision, key: 'child:c#1', seq: 0, name: 'c', workflow: 'chain', version: '1', input: { steps: 1 }, wait: false };

    const refused = await request(coordinator.url)
      .post(`/v1/worker/runs/${run.id}/children`)
      .send({ ...child, shard: 'eu west' })
      .expect(400);
    expect(refused.body.reason).toBe('invalid_shard');
    expect(await childOf(parent.id)).toBeUndefined();
    expect(await client.get(parent.id)).toMatchObject({ status: 'running', revision: run.revision, tasks: [] });

    await request(coordinator.url)
      .post(`/v1/worker/runs/${run.id}/children`)
      .send({ ...child, shard: null })
      .expect(200);
    expect(await childOf(parent.id)).toMatchObject({ queue: 'chain:1' });
  });
});
