import { WorkflowClient, type WorkerView } from '@nest-durable/client';
import { defineWorkflow } from '@nest-durable/workflow';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { type RunningCoordinator, type RunningWorker, startCoordinator, startCustomWorker } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { snapshotTables } from './support/snapshot';

/** Lets the running `hold` task finish (a task, not a wait: a suspended run frees its worker). */
let release: () => void = () => undefined;
const released = new Promise<void>((resolve) => (release = resolve));
const hold = defineWorkflow<null, string>({
  name: 'registry-hold',
  version: '2.0',
  handler: (ctx) =>
    ctx.task('hold', async () => {
      await released;
      return 'done';
    }),
});
const other = defineWorkflow({ name: 'registry-other', version: '1', handler: async () => null });

/** The worker registry: workers register themselves; GET /v1/workers lists them, online or not. */
describe('worker registry', () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator;
  let client: WorkflowClient;
  const workers: RunningWorker[] = [];

  beforeAll(async () => {
    db = await createTestDatabase('worker_registry');
    coordinator = await startCoordinator(db.url);
    client = new WorkflowClient({ url: coordinator.url });
  });

  afterAll(async () => {
    await Promise.all(workers.map((worker) => worker.close()));
    await coordinator?.close();
    await db?.drop();
  });

  const find = async (id: string): Promise<WorkerView | undefined> => (await client.listWorkers()).items.find((worker) => worker.id === id);

  it('lists a started worker online with its subscriber, load and workflows, and records the workflow versions', async () => {
    const worker = await startCustomWorker(coordinator.url, {
      workerId: 'registry-a',
      workflows: [hold, other],
      shards: ['eu', 'us'],
      concurrency: 7,
      registrationIntervalMs: 200,
    });
    workers.push(worker);
    const seen = await eventually('registry-a listed', () => find('registry-a'));
    expect(seen).toMatchObject({
      id: 'registry-a',
      subscriber: 'http',
      failedOver: false,
      concurrency: 7,
      runsHeld: 0,
      online: true,
      workflows: [
        { name: 'registry-hold', version: '2.0', shards: ['eu', 'us'] },
        { name: 'registry-other', version: '1', shards: ['eu', 'us'] },
      ],
    });
    expect(Date.parse(seen.lastSeenAt)).toBeGreaterThanOrEqual(Date.parse(seen.startedAt));
    const versions = await db.sql(`SELECT workflow, version FROM workflows ORDER BY workflow`);
    expect(versions).toEqual([
      { workflow: 'registry-hold', version: '2.0' },
      { workflow: 'registry-other', version: '1' },
    ]);

    // Its load follows: a run it holds shows at the next registration.
    const run = await client.start(hold, null, { shard: 'eu' });
    await eventually('a run held', async () => (await find('registry-a'))?.runsHeld === 1);
    release();
    await client.waitForResult(run.id, { timeoutMs: 10_000 });
    await eventually('no run held', async () => (await find('registry-a'))?.runsHeld === 0);
  });

  it('counts a worker that stopped registering as offline, and keeps listing it', async () => {
    const worker = await startCustomWorker(coordinator.url, { workerId: 'registry-b', workflows: [other], registrationIntervalMs: 100 });
    await eventually('registry-b online', async () => (await find('registry-b'))?.online);
    await worker.close();
    // Three intervals (300 ms) after its last registration.
    const offline = await eventually('registry-b offline', async () => {
      const seen = await find('registry-b');
      return seen?.online === false && seen;
    });
    expect(offline.workflows).toEqual([{ name: 'registry-other', version: '1', shards: [] }]);
    const list = (await client.listWorkers()).items.map((w) => [w.id, w.online]);
    // Online ones first.
    expect(list.indexOf(list.find(([id]) => id === 'registry-b')!)).toBe(list.length - 1);
  });
});

describe('worker registry with authentication', () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator;

  beforeAll(async () => {
    db = await createTestDatabase('worker_registry_auth');
    coordinator = await startCoordinator(db.url, { authDisabled: false, clientToken: 'client-secret', workerToken: 'worker-secret' });
  });

  afterAll(async () => {
    await coordinator?.close();
    await db?.drop();
  });

  it('takes registrations with the worker token only, and lists workers with the client token only', async () => {
    const body = { subscriber: 'http', failedOver: false, concurrency: 2, runsHeld: 0, intervalMs: 1000, workflows: [{ name: 'w', version: '1', shards: [] }] };
    const register = (token: string) => request(coordinator.url).put('/v1/worker/workers/w1').set('authorization', `Bearer ${token}`).send(body);
    const list = (token: string) => request(coordinator.url).get('/v1/workers').set('authorization', `Bearer ${token}`);
    expect((await register('client-secret')).status).toBe(401);
    expect((await list('worker-secret')).status).toBe(401);
    expect((await register('worker-secret')).status).toBe(204);
    const listed = await list('client-secret');
    expect(listed.status).toBe(200);
    expect(listed.body.items.map((w: WorkerView) => [w.id, w.online])).toEqual([['w1', true]]);
  });

  it('refuses a bad registration with a reason and records nothing', async () => {
    const good = { subscriber: 'http', failedOver: false, concurrency: 2, runsHeld: 0, intervalMs: 1000, workflows: [{ name: 'w', version: '1', shards: [] }] };
    const before = await snapshotTables(db);
    const cases: [object, string][] = [
      [{ ...good, concurrency: 0 }, 'invalid_concurrency'],
      [{ ...good, intervalMs: 10 }, 'invalid_intervalMs'],
      [{ ...good, workflows: [] }, 'invalid_workflows'],
      [{ ...good, workflows: [{ name: 'bad name', version: '1', shards: [] }] }, 'invalid_workflow'],
      [{ ...good, workflows: [{ name: 'w', version: '1', shards: ['eu', 'eu'] }] }, 'invalid_shards'],
      [{ ...good, extra: 1 }, 'unknown_field'],
    ];
    for (const [body, reason] of cases) {
      const response = await request(coordinator.url).put('/v1/worker/workers/registry-x').set('authorization', 'Bearer worker-secret').send(body);
      expect({ status: response.status, reason: response.body.reason }).toEqual({ status: 400, reason });
    }
    expect(await snapshotTables(db)).toEqual(before);
  });
});
