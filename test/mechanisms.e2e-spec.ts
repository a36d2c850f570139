import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { ClaimedRun, RunView } from '@nest-durable/client';
import { WorkflowClient } from '@nest-durable/client';
import { FailoverSubscriber, SUBSCRIBER } from '@nest-durable/worker';
import type { TransportSubscriber } from '@nest-durable/worker/redis';
import { LISTEN_PROBE, uuidv7, RUN_TABLES } from '@app/persistence';
import { sortedSetKey, streamKey } from '@app/streams';
import { Redis } from 'ioredis';
import request from 'supertest';
import { WaitingClaims } from '../apps/coordinator/src/hand-off/waiting-claims.service';
import { loadWorkerConfig } from '../apps/worker/src/config/worker.config';
import { workerModuleOptions } from '../apps/worker/src/worker-app.module';
import { EXAMPLE_WORKFLOWS, ExampleWorkflowsModule } from '../apps/worker/src/workflows';
import { type RunningCoordinator, startCoordinator, startCustomWorker } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { TEST_REDIS_URL, testPrefix } from './support/redis';

/**
 * Mechanisms that only make things prompt, so that nothing else notices their absence: each test sets the
 * fallback they stand in front of (a poll, a timeout) far beyond the latency it expects.
 */
describe('mechanisms', () => {
  let db: TestDatabase;
  let redis: Redis;
  const running: { close(): Promise<void> }[] = [];

  beforeAll(async () => {
    db = await createTestDatabase('mechanisms');
    redis = new Redis(TEST_REDIS_URL);
  });

  afterEach(async () => {
    for (const app of running.splice(0).reverse()) await app.close();
    await db.sql(`TRUNCATE ${RUN_TABLES.join(', ')}, outbox CASCADE`);
  });

  afterAll(async () => {
    redis?.disconnect();
    await db?.drop();
  });

  const coordinator = async (overrides: Parameters<typeof startCoordinator>[1]): Promise<RunningCoordinator> => {
    const started = await startCoordinator(db.url, overrides);
    running.push(started);
    return started;
  };

  /** The coordinator's LISTEN session (LISTENing, or answering its probe). */
  const listenSessions = () =>
    db.sql<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = $1 AND (query LIKE 'LISTEN%' OR query = $2)`, [db.name, LISTEN_PROBE]);

  it('wakes a claim long-poll when the LISTEN session reconnects: a run made ready while it was down is claimed at once, not at the 20 s timeout', async () => {
    const c = await coordinator({ dispatch: 'none', claimPollIntervalMs: 60_000 });
    const [listener] = await eventually('the LISTEN session', async () => ((await listenSessions()).length === 1 ? listenSessions() : undefined));
    const claim = request(c.url)
      .post('/v1/worker/claims')
      .send({ workerId: 'w', workflows: [{ name: 'echo', version: '1' }], limit: 1, waitMs: 20_000 })
      .then((response) => ({ status: response.status, runs: response.body.runs as ClaimedRun[], at: Date.now() }));
    await eventually('the claim waiting', async () => c.app.get(WaitingClaims).waiting('echo:1') === 1);

    // One statement: the LISTEN session is gone (waited for) before the run's NOTIFY goes out at commit, and a
    // new session needs 100 ms or more to come back, so the notification is lost.
    const id = uuidv7();
    const killedAt = Date.now();
    await db.sql(
      `WITH ready AS (INSERT INTO runs (id, workflow, version, queue, status) VALUES ($1, 'echo', '1', 'echo:1', 'queued') RETURNING queue)
       SELECT pg_terminate_backend($2, 5000), pg_notify('wf_runs_ready', queue) FROM ready`,
      [id, listener.pid],
    );
    const answer = await claim;
    expect(answer.status).toBe(200);
    expect(answer.runs.map((run) => run.id)).toEqual([id]);
    expect(answer.at - killedAt).toBeLessThan(5_000);
    expect((await listenSessions()).map((session) => session.pid)).not.toContain(listener.pid);
  }, 40_000);

  it('drains a backlog of 20 batches at once: a full batch is followed by the next without waiting for NOTIFY or the 60 s poll', async () => {
    const prefix = testPrefix('backlog');
    await coordinator({ dispatch: 'redis-zset', redisPrefix: prefix, outboxBatchSize: 10, outboxPollIntervalMs: 60_000, republishIntervalMs: 3_600_000 });
    // One statement: its commit sends one NOTIFY, which wakes each enqueuer loop once.
    const ids = Array.from({ length: 200 }, () => uuidv7());
    await db.sql(`SET wf.dispatch = 'redis-zset'`);
    await db.sql(`INSERT INTO runs (id, workflow, version, queue, status) SELECT unnest($1::uuid[]), 'echo', '1', 'echo:1', 'queued'`, [ids]);
    await db.sql('RESET wf.dispatch');
    const published = () => redis.zcard(sortedSetKey(prefix, 'echo:1'));
    await eventually('all 200 wake-ups published', async () => (await published()) === 200, 10_000).catch(async (error: Error) => {
      throw new Error(`${error.message}: ${await published()} of 200 published`);
    });
  });

  it("touches a long run's stream entry on every heartbeat, so a second worker's XAUTOCLAIM (2 s idle) never takes it during a 6 s run", async () => {
    const prefix = testPrefix('streams-heartbeat');
    const c = await coordinator({ dispatch: 'redis-streams', redisPrefix: prefix, streamPartitions: 1, republishIntervalMs: 3_600_000 });
    // Concurrency 1: no hand-off offer, so the run comes through the stream.
    const worker = async (workerId: string) => {
      const config = loadWorkerConfig({
        COORDINATOR_URL: c.url,
        WORKER_ID: workerId,
        WORKER_CONCURRENCY: '1',
        SUBSCRIBER: 'redis-streams',
        REDIS_URL: TEST_REDIS_URL,
        REDIS_PREFIX: prefix,
        REDIS_BLOCK_MS: '500',
        STREAM_RECLAIM_IDLE_MS: '2000',
        HEARTBEAT_INTERVAL_MS: '200',
        CLAIM_WAIT_MS: '1000',
      });
      const app = await startCustomWorker(c.url, workerModuleOptions(config, EXAMPLE_WORKFLOWS), [ExampleWorkflowsModule]);
      running.push(app);
      const subscriber = app.app.get<FailoverSubscriber>(SUBSCRIBER);
      return { subscriber, transport: subscriber.primary as TransportSubscriber };
    };
    const first = await worker('first');
    const run = (
      await request(c.url)
        .post('/v1/runs')
        .send({ workflow: 'chain', version: '1', input: { steps: 1, stepMs: 6_000 } })
        .expect(201)
    ).body as RunView;
    const stream = streamKey(prefix, 'chain:1', 0, 1);
    await eventually('the run running on the first worker, its entry pending there', async () => {
      const [view] = await db.sql<{ status: string; claimed_by: string }>('SELECT status, claimed_by FROM runs WHERE id = $1', [run.id]);
      const pending = (await redis.xpending(stream, 'workers', '-', '+', 10)) as [string, string, number, number][];
      return view.status === 'running' && view.claimed_by === 'first' && pending.length === 1 && pending[0][1] === 'first';
    });

    const second = await worker('second');
    const done = await new WorkflowClient({ url: c.url }).waitForResult(run.id, { timeoutMs: 20_000 });
    expect(done.status).toBe('completed');
    expect(first.subscriber.usingBackup).toBe(false);
    // A reclaimed entry reaches the second worker, whose take the coordinator refuses (the run is the first's): a stale wake-up.
    expect({ stale: second.transport.stale, deadLettered: second.transport.deadLettered }).toEqual({ stale: 0, deadLettered: 0 });
    const takes = await db.sql<{ worker_id: string }>(`SELECT worker_id FROM run_transitions WHERE run_id = $1 AND to_status = 'running'`, [run.id]);
    expect(takes).toEqual([{ worker_id: 'first' }]);
  }, 40_000);
});
