import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import type { ClaimedRun } from '@nest-durable/client';
import { partitionCountKey, sortedSetKey, streamKey } from '@app/streams';
import { OutboxEnqueuer, OutboxRepository, type OutboxRow } from '@app/outbox';
import { LISTEN_PROBE, uuidv7, RUN_TABLES } from '@app/persistence';
import { Redis } from 'ioredis';
import request from 'supertest';
import { type RunningCoordinator, startCoordinator } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { freePort } from './support/processes';
import { RedisServer, TEST_REDIS_URL, testPrefix } from './support/redis';

/** Reliable dispatch through the outbox, against real PostgreSQL and real Redis. */
describe('reliable dispatch', () => {
  let db: TestDatabase;
  let redis: Redis;
  const coordinators: RunningCoordinator[] = [];

  // A 60 s outbox poll: anything published sooner came through NOTIFY.
  const NO_POLL = { outboxPollIntervalMs: 60_000, republishIntervalMs: 3_600_000 };

  const coordinator = async (overrides: Parameters<typeof startCoordinator>[1]) => {
    const started = await startCoordinator(db.url, overrides);
    coordinators.push(started);
    return started;
  };
  const start = (c: RunningCoordinator, workflow = 'echo', input: unknown = { n: 1 }) =>
    request(c.url)
      .post('/v1/runs')
      .send({ workflow, version: '1', input })
      .expect(201)
      .then((r) => r.body as { id: string });
  /** The runs whose wake-ups a sorted set holds (members are `<runId>:<outbox id>`). */
  const members = async (key: string) => (await redis.zrange(key, '0', '-1')).map((m) => ({ runId: m.split(':')[0] }));
  /** The first wake-up to reach `key`, waited for up to `timeoutMs`. */
  const firstMember = async (key: string, timeoutMs: number) => {
    const [member] = await eventually(
      `a wake-up in ${key}`,
      async () => {
        const found = await members(key);
        return found.length > 0 ? found : undefined;
      },
      timeoutMs,
    );
    return member;
  };
  /** The run a stream entry's wake-up names. */
  const runOf = (fields: string[]) => fields[fields.indexOf('run') + 1];
  /**
   * Makes a run ready outside a start (which publishes its own wake-ups): the enqueue trigger writes its outbox row,
   * as for an event, a child run or a retry, and only its commit's NOTIFY brings the enqueuer before its poll.
   */
  const makeReady = async (id: string) => {
    await db.sql(`SET wf.dispatch = 'redis-zset'`);
    await db.sql(`INSERT INTO runs (id, workflow, version, queue, status) VALUES ($1, 'echo', '1', 'echo:1', 'queued')`, [id]);
    await db.sql('RESET wf.dispatch');
  };
  const outboxCount = async () => Number((await db.sql<{ count: string }>('SELECT count(*) FROM outbox'))[0].count);

  beforeAll(async () => {
    db = await createTestDatabase('dispatch');
    redis = new Redis(TEST_REDIS_URL);
  });

  afterEach(async () => {
    await Promise.all(coordinators.splice(0).map((c) => c.close()));
    await db.sql(`TRUNCATE ${RUN_TABLES.join(', ')}, outbox, dead_letters CASCADE`);
  });

  afterAll(async () => {
    redis?.disconnect();
    await db?.drop();
  });

  it('publishes a run made ready by a trigger (not a start) within 10 s: the enqueuer wakes on the outbox NOTIFY, not at its 60 s poll', async () => {
    const prefix = testPrefix('zset');
    await coordinator({ ...NO_POLL, dispatch: 'redis-zset', redisPrefix: prefix });
    const id = uuidv7();
    await makeReady(id);
    // The bound: 10 s, far from the poll's 60 s.
    expect(await firstMember(sortedSetKey(prefix, 'echo:1'), 10_000)).toEqual({ runId: id });
    await eventually('the sent row to be deleted', async () => (await outboxCount()) === 0);
  });

  it("publishes a start's wake-ups from the start itself: the enqueuer's batch statement takes none of them", async () => {
    const prefix = testPrefix('own');
    const c = await coordinator({ ...NO_POLL, dispatch: 'redis-zset', redisPrefix: prefix });
    const repository = c.app.get(OutboxRepository);
    const claimBatch = repository.claimBatch.bind(repository);
    const batches: OutboxRow[][] = [];
    jest.spyOn(repository, 'claimBatch').mockImplementation(async (limit) => {
      const rows = await claimBatch(limit);
      batches.push(rows);
      return rows;
    });
    const runs = await Promise.all(Array.from({ length: 5 }, () => start(c)));
    await eventually('the runs in Redis', async () => (await members(sortedSetKey(prefix, 'echo:1'))).length === 5);
    expect(new Set((await members(sortedSetKey(prefix, 'echo:1'))).map((m) => m.runId))).toEqual(new Set(runs.map((r) => r.id)));
    await eventually('the sent rows to be deleted', async () => (await outboxCount()) === 0);
    expect(batches.flat()).toEqual([]);
  });

  it('publishes the wake-up of a start whose coordinator never published it (died after the commit) once it is stale', async () => {
    const prefix = testPrefix('orphan');
    const c = await coordinator({
      dispatch: 'redis-zset',
      redisPrefix: prefix,
      outboxPollIntervalMs: 100,
      outboxStaleInFlightMs: 1_000,
      republishIntervalMs: 3_600_000,
    });
    // The start's own publish never happens, as when its process dies between the commit and the publish.
    jest.spyOn(c.app.get(OutboxEnqueuer), 'publishTaken').mockImplementationOnce(async () => undefined);
    const run = await start(c);
    expect(await db.sql<{ status: string }>('SELECT status FROM outbox')).toEqual([{ status: 'in_flight' }]);
    expect(await firstMember(sortedSetKey(prefix, 'echo:1'), 15_000)).toEqual({ runId: run.id });
    await eventually('the sent row to be deleted', async () => (await outboxCount()) === 0);
  });

  it('publishes nothing for a transaction that rolled back', async () => {
    const prefix = testPrefix('rollback');
    const c = await coordinator({ ...NO_POLL, dispatch: 'redis-zset', redisPrefix: prefix });
    await db.sql(`SET wf.dispatch = 'redis-zset'`);
    await db.sql('BEGIN');
    await db.sql(`INSERT INTO runs (id, workflow, version, queue, status) VALUES ('01a22c37-316c-762f-a717-000000000001', 'echo', '1', 'echo:1', 'queued')`);
    await db.sql('ROLLBACK');
    await db.sql('RESET wf.dispatch');
    const committed = await start(c);
    await eventually('the committed run in Redis', async () => (await members(sortedSetKey(prefix, 'echo:1'))).length > 0);
    expect((await members(sortedSetKey(prefix, 'echo:1'))).map((m) => m.runId)).toEqual([committed.id]);
    await eventually('the sent row to be deleted', async () => (await outboxCount()) === 0);
  });

  it('publishes to Redis Streams partitions by run id, and publishes the partition count', async () => {
    const prefix = testPrefix('streams');
    const c = await coordinator({ ...NO_POLL, dispatch: 'redis-streams', redisPrefix: prefix, streamPartitions: 3 });
    const runs = await Promise.all(Array.from({ length: 30 }, () => start(c)));
    const read = async () => {
      const entries = await Promise.all([0, 1, 2].map((n) => redis.xrange(streamKey(prefix, 'echo:1', n, 3), '-', '+')));
      return entries.map((list) => list.map(([, fields]) => ({ runId: runOf(fields) })));
    };
    const partitions = await eventually('all 30 runs in the streams', async () => {
      const found = await read();
      return found.flat().length === 30 ? found : undefined;
    });
    expect(new Set(partitions.flat().map((m) => m.runId))).toEqual(new Set(runs.map((r) => r.id)));
    expect(partitions.every((list) => list.length > 0)).toBe(true);
    expect(await redis.get(partitionCountKey(prefix))).toBe('3');
  });

  it('two enqueuers on one outbox publish every row once', async () => {
    const prefix = testPrefix('two');
    const options = { dispatch: 'redis-streams' as const, redisPrefix: prefix, streamPartitions: 2, outboxBatchSize: 20, republishIntervalMs: 3_600_000 };
    for (let i = 0; i < 2; i++) await coordinator(options);
    // Made ready outside a start (which publishes its own): the enqueue trigger writes the rows, both enqueuers claim them.
    const runs = Array.from({ length: 300 }, () => ({ id: uuidv7() }));
    await db.sql(`SET wf.dispatch = 'redis-streams'`);
    await db.sql(`INSERT INTO runs (id, workflow, version, queue, status) SELECT unnest($1::uuid[]), 'echo', '1', 'echo:1', 'queued'`, [runs.map((r) => r.id)]);
    await db.sql('RESET wf.dispatch');
    const ids = await eventually(
      'all 300 runs in the streams',
      async () => {
        const entries = (await Promise.all([0, 1].map((n) => redis.xrange(streamKey(prefix, 'echo:1', n, 2), '-', '+')))).flat();
        return entries.length >= 300 ? entries.map(([, fields]) => runOf(fields)) : undefined;
      },
      20_000,
    );
    expect(ids).toHaveLength(300);
    expect(new Set(ids)).toEqual(new Set(runs.map((r) => r.id)));
    await eventually('the outbox to drain', async () => (await outboxCount()) === 0);
  });

  it('retries while Redis is down (growing, jittered waits: see outbox-enqueuer.service.spec), delivers everything when it is back, dead-letters past max retries', async () => {
    const server = new RedisServer(await freePort());
    await server.start();
    const prefix = testPrefix('down');
    const c = await coordinator({
      dispatch: 'redis-zset',
      redisUrl: server.url,
      redisPrefix: prefix,
      outboxPollIntervalMs: 50,
      outboxRetryBaseMs: 100,
      outboxRetryMaxMs: 400,
      outboxMaxRetries: 1_000,
      republishIntervalMs: 3_600_000,
    });
    try {
      await server.stop();
      const runs = await Promise.all(Array.from({ length: 5 }, () => start(c)));
      const retried = await eventually('rows retried several times', async () => {
        const rows = await db.sql<{ attempt_count: number; last_error: string }>('SELECT attempt_count, last_error FROM outbox');
        return rows.length === 5 && rows.every((row) => row.attempt_count >= 3) ? rows : undefined;
      });
      expect(retried.every((row) => row.last_error.length > 0)).toBe(true);

      await server.start();
      const delivered = new Redis(server.url);
      try {
        await eventually('every run delivered after Redis came back', async () => (await delivered.zcard(sortedSetKey(prefix, 'echo:1'))) === 5, 15_000);
        const ids = (await delivered.zrange(sortedSetKey(prefix, 'echo:1'), '0', '-1')).map((m) => m.split(':')[0]);
        expect(new Set(ids)).toEqual(new Set(runs.map((r) => r.id)));
      } finally {
        delivered.disconnect();
      }
      await eventually('the outbox to drain', async () => (await outboxCount()) === 0);
    } finally {
      await server.stop();
    }

    // Out of retries: into the dead-letter table, out of the outbox (with this coordinator's enqueuer alone).
    await Promise.all(coordinators.splice(0).map((running) => running.close()));
    const strict = await coordinator({
      dispatch: 'redis-zset',
      redisUrl: server.url,
      redisPrefix: prefix,
      outboxPollIntervalMs: 50,
      outboxRetryBaseMs: 10,
      outboxRetryMaxMs: 20,
      outboxMaxRetries: 3,
      republishIntervalMs: 3_600_000,
    });
    const doomed = await start(strict);
    const [dead] = await eventually('the row in the dead-letter table', async () => {
      const rows = await db.sql<{ run_id: string; origin: string; reason: string; detail: unknown }>('SELECT run_id, origin, reason, detail FROM dead_letters');
      return rows.length > 0 ? rows : undefined;
    });
    expect(dead).toMatchObject({ run_id: doomed.id, origin: 'outbox', reason: 'publish_failed', detail: { attempts: 3 } });
    expect(await outboxCount()).toBe(0);
  }, 60_000);

  it('reconnects its LISTEN session after pg_terminate_backend and keeps publishing by the outbox NOTIFY (a 60 s poll)', async () => {
    const prefix = testPrefix('listen');
    await coordinator({ ...NO_POLL, dispatch: 'redis-zset', redisPrefix: prefix, listenerProbeIntervalMs: 200 });
    const listeners = () =>
      db.sql<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = $1 AND (query LIKE 'LISTEN%' OR query = $2)`, [db.name, LISTEN_PROBE]);
    const [before] = await eventually('the LISTEN session', async () => ((await listeners()).length > 0 ? listeners() : undefined));
    await db.sql('SELECT pg_terminate_backend($1)', [before.pid]);
    await eventually('a new LISTEN session', async () => (await listeners()).some((l) => l.pid !== before.pid));

    const id = uuidv7();
    await makeReady(id);
    await eventually('the run in Redis', async () => (await members(sortedSetKey(prefix, 'echo:1'))).some((m) => m.runId === id), 5_000);
  });

  it('republishes a wake-up for a run whose claim went idle, so a Redis worker takes it over', async () => {
    const prefix = testPrefix('stale-claim');
    const c = await coordinator({
      dispatch: 'redis-zset',
      redisPrefix: prefix,
      claimMinIdleTimeMs: 300,
      heartbeatIntervalMs: 100,
      republishIntervalMs: 100,
      republishAfterMs: 3_600_000, // only the idle claim can bring it back
      leaderCheckIntervalMs: 100,
    });
    const key = sortedSetKey(prefix, 'echo:1');
    const run = await start(c);
    await eventually('its wake-up', async () => (await redis.zpopmin(key)).length > 0);
    // (the wake-up names below are the consumer's own: each worker names the wake-ups it holds)
    const take = (workerId: string) =>
      request(c.url)
        .post('/v1/worker/takes')
        .send({ workerId, workflows: [{ name: 'echo', version: '1', wakeups: [workerId] }] })
        .expect(200);
    expect((await take('ghost')).body.runs).toMatchObject([{ id: run.id }]);

    // The ghost never heartbeats: once its claim is idle, a wake-up reappears for the queue.
    await eventually('a wake-up for the idle claim', async () => (await members(key)).some((m) => m.runId === run.id), 10_000);
    expect((await take('rescuer')).body.runs).toMatchObject([{ id: run.id }]);
    const [row] = await db.sql<{ claimed_by: string; stalls: number }>('SELECT claimed_by, stalls FROM runs WHERE id = $1', [run.id]);
    expect(row).toEqual({ claimed_by: 'rescuer', stalls: 1 });
  });

  it('loses no run when Redis loses its contents under load: the republish daemon puts the missing wake-ups back', async () => {
    const prefix = testPrefix('flush');
    const c = await coordinator({
      dispatch: 'redis-zset',
      redisPrefix: prefix,
      republishIntervalMs: 200,
      republishAfterMs: 500,
      leaderCheckIntervalMs: 100,
    });
    const key = sortedSetKey(prefix, 'echo:1');
    const runs = await Promise.all(Array.from({ length: 60 }, (_, i) => start(c, 'echo', i)));

    // A minimal Redis consumer: pop wake-ups, take that many runs, complete them.
    let lost = false;
    const completed = new Set<string>();
    const deadline = Date.now() + 30_000;
    while (completed.size < runs.length && Date.now() < deadline) {
      const popped = await redis.zpopmin(key, '5');
      if (popped.length === 0) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        continue;
      }
      const members = popped.filter((_, i) => i % 2 === 0);
      const taken = await request(c.url)
        .post('/v1/worker/takes')
        .send({ workerId: 'redis-consumer', workflows: [{ name: 'echo', version: '1', wakeups: members }] })
        .expect(200);
      for (const run of taken.body.runs as ClaimedRun[]) {
        await request(c.url).post(`/v1/worker/runs/${run.id}/complete`).send({ expectedRevision: run.revision, output: run.input }).expect(200);
        completed.add(run.id);
      }
      if (!lost && completed.size >= 10) {
        await redis.del(key); // what a FLUSHALL or a failover to an empty replica does to this queue
        lost = true;
      }
    }
    expect(lost).toBe(true);
    expect(completed).toEqual(new Set(runs.map((r) => r.id)));
  }, 60_000);
});
