import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { type RunView, WorkflowClient } from '@nest-durable/client';
import { defineWorkflow } from '@nest-durable/workflow';
import { loadWorkerConfig } from '../apps/worker/src/config/worker.config';
import { workerModuleOptions } from '../apps/worker/src/worker-app.module';
import { type RunningCoordinator, type RunningWorker, startCoordinator, startCustomWorker } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { TEST_REDIS_URL, testPrefix } from './support/redis';
import { buildClientPackage, stopAllWf, wf } from './support/wf-process';

const echo = defineWorkflow<string, string>({ name: 'build-echo', version: '1', handler: async (ctx, input) => ctx.task('echo', () => input) });

/** Its task holds while `gate.holding` is set, until its worker lets it go (shutdown aborts its signal). */
const gate = { holding: true };
const hold = defineWorkflow<null, string>({
  name: 'build-hold',
  version: '1',
  handler: (ctx) =>
    ctx.task('work', ({ signal }) => {
      if (!gate.holding) return 'done';
      return new Promise<string>((_, reject) => signal.addEventListener('abort', () => reject(new Error('let go')), { once: true }));
    }),
});

/**
 * Each run records the build id of the worker that executed it last (issue 34): real coordinators and workers
 * configured with build ids; the run shows it in the API (GET /v1/runs/:id), in `wf runs get`, and the worker's
 * registration in GET /v1/workers. Every route a run reaches a worker by records it: a start handed to a waiting
 * claim, a claim, a run taken over by a second worker after the first let it go, and in the Redis modes a take
 * and a hand-off offer.
 */
describe('build ids', () => {
  let db: TestDatabase;
  const running: (RunningCoordinator | RunningWorker)[] = [];

  beforeAll(async () => {
    [db] = await Promise.all([createTestDatabase('build_ids'), buildClientPackage()]);
  }, 60_000);

  afterEach(async () => {
    await stopAllWf();
    // Workers first, then their coordinators.
    for (const app of running.splice(0).reverse()) await app.close();
    gate.holding = true;
  });

  afterAll(async () => {
    await db?.drop();
  });

  const finish = (client: WorkflowClient, id: string) => client.waitForResult(id, { timeoutMs: 20_000 });
  const claimedVia = async (id: string) => (await db.sql<{ claimed_via: string | null }>(`SELECT claimed_via FROM runs WHERE id = $1`, [id]))[0].claimed_via;

  describe('HTTP subscriber', () => {
    let coordinator: RunningCoordinator;
    let client: WorkflowClient;

    beforeAll(async () => {
      coordinator = await startCoordinator(db.url);
      client = new WorkflowClient({ url: coordinator.url });
    });

    afterAll(async () => {
      await coordinator?.close();
    });

    const worker = async (workerId: string, buildId: string) => {
      const started = await startCustomWorker(coordinator.url, { workflows: [echo, hold], workerId, buildId, claimWaitMs: 1_000, shutdownGraceMs: 100 });
      running.push(started);
      return started;
    };

    it("a finished run shows the build id of the worker that ran it, in the API and in `wf runs get`; the registry shows the worker's", async () => {
      await worker('orders-a', '1.4.0+sha.5e3c1f2');
      const started = await client.start(echo, 'hello');
      const done = await finish(client, started.id);
      expect(done).toMatchObject({ status: 'completed', output: 'hello', buildId: '1.4.0+sha.5e3c1f2' });
      expect((await client.get(started.id)).buildId).toBe('1.4.0+sha.5e3c1f2');

      const shown = await wf(['runs', 'get', started.id], { WF_URL: coordinator.url });
      expect(shown).toMatchObject({ code: 0, stderr: '' });
      expect(shown.stdout).toMatch(/^build\s+1\.4\.0\+sha\.5e3c1f2$/m);
      expect((JSON.parse((await wf(['runs', 'get', started.id, '--json'], { WF_URL: coordinator.url })).stdout) as RunView).buildId).toBe('1.4.0+sha.5e3c1f2');

      const registered = await eventually('orders-a registered', async () => (await client.listWorkers()).items.find((w) => w.id === 'orders-a'));
      expect(registered.buildId).toBe('1.4.0+sha.5e3c1f2');
      const workers = await wf(['workers'], { WF_URL: coordinator.url });
      expect(workers.stdout).toMatch(/^orders-a\s+online\s+1\.4\.0\+sha\.5e3c1f2\s/m);
    });

    it('a run re-executed by a second worker of another build shows the second build', async () => {
      const first = await worker('orders-old', '1.4.0');
      const started = await client.start(hold, null);
      await eventually('the first worker to execute it', async () => {
        const run = await client.get(started.id);
        return run.status === 'running' && run.buildId === '1.4.0';
      });
      // Shut down, the first worker gives the run back (released after its grace), and the second one takes it.
      await first.close();
      expect((await client.get(started.id)).status).toBe('queued');
      gate.holding = false;
      await worker('orders-new', '1.5.0');
      const done = await finish(client, started.id);
      expect(done).toMatchObject({ status: 'completed', output: 'done', buildId: '1.5.0' });
      const shown = await wf(['runs', 'get', started.id], { WF_URL: coordinator.url });
      expect(shown.stdout).toMatch(/^build\s+1\.5\.0$/m);
      const claims = await db.sql<{ worker_id: string }>(`SELECT worker_id FROM run_transitions WHERE run_id = $1 AND to_status = 'running' ORDER BY id`, [
        started.id,
      ]);
      // The last two holders. A claim of the previous test's worker, closed but not yet seen gone by the coordinator,
      // may have been handed the run first and given it back (a hand-off its worker never answered is undone).
      expect(claims.map((claim) => claim.worker_id).slice(-2)).toEqual(['orders-old', 'orders-new']);
    });

    it('a run queued before any worker is claimed with its build id (the claim statement, not a hand-off)', async () => {
      const started = await client.start(echo, 'queued first');
      await worker('orders-late', '2.0.0-rc.1');
      const done = await finish(client, started.id);
      expect(done.buildId).toBe('2.0.0-rc.1');
    });
  });

  describe.each(['redis-zset', 'redis-streams'] as const)('%s subscriber', (mode) => {
    it('records the build id on a run a start hands to an idle worker (its offer) and on one it takes for a wake-up', async () => {
      const prefix = testPrefix(`build-ids-${mode}`);
      const coordinator = await startCoordinator(db.url, { dispatch: mode, redisUrl: TEST_REDIS_URL, redisPrefix: prefix, streamPartitions: 2 });
      running.push(coordinator);
      const config = loadWorkerConfig({
        COORDINATOR_URL: coordinator.url,
        SUBSCRIBER: mode,
        REDIS_URL: TEST_REDIS_URL,
        REDIS_PREFIX: prefix,
        REDIS_BLOCK_MS: '500',
        WORKER_ID: `redis-${mode}`,
        WORKER_BUILD_ID: `${mode}-build.9`,
      });
      running.push(await startCustomWorker(coordinator.url, workerModuleOptions(config, [echo])));
      const client = new WorkflowClient({ url: coordinator.url });
      await eventually('the worker registered', async () => (await client.listWorkers()).items.some((w) => w.id === `redis-${mode}` && w.online));

      // Due later: no start hands it over (a hand-off is for runs due now), so its wake-up brings it (a take).
      const later = await client.start(echo, 'later', { runAt: new Date(Date.now() + 500) });
      expect(await finish(client, later.id)).toMatchObject({ status: 'completed', buildId: `${mode}-build.9` });
      expect(await claimedVia(later.id)).not.toBeNull();

      // Due now, while the worker idles: handed to its offer, or taken if the offer was not waiting at that moment.
      const now = await client.start(echo, 'now');
      expect(await finish(client, now.id)).toMatchObject({ status: 'completed', buildId: `${mode}-build.9` });
    });
  });
});
