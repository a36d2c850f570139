import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { ClaimedRun, DeadLetterPage, RunView } from '@nest-durable/client';
import { sortedSetKey } from '@app/streams';
import { Redis } from 'ioredis';
import request from 'supertest';
import { type RunningCoordinator, startCoordinator } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { freePort } from './support/processes';
import { RedisServer, testPrefix } from './support/redis';
import { RUN_TABLES } from '@app/persistence';

/** Dead letters can be seen, redriven and deleted; readiness follows them. */
describe('dead letters', () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator | undefined;
  let server: RedisServer;

  beforeAll(async () => {
    db = await createTestDatabase('dead_letters');
    server = new RedisServer(await freePort());
  });

  afterEach(async () => {
    await coordinator?.close();
    coordinator = undefined;
    await server.stop();
    await db.sql(`TRUNCATE ${RUN_TABLES.join(', ')}, outbox, dead_letters CASCADE`);
  });

  afterAll(async () => {
    await db?.drop();
  });

  const http = () => request(coordinator!.url);
  const list = async () => (await http().get('/v1/dead-letters').expect(200)).body as DeadLetterPage;
  const readiness = async () => (await http().get('/health/ready').expect(200)).body as { status: string };
  const start = async () => (await http().post('/v1/runs').send({ workflow: 'echo', version: '1', input: 1 }).expect(201)).body as RunView;

  it('lists an outbox row out of publish attempts, republishes it on redrive, and readiness recovers', async () => {
    const prefix = testPrefix('dead-outbox');
    coordinator = await startCoordinator(db.url, {
      dispatch: 'redis-zset',
      redisUrl: server.url, // not started yet: every publish fails
      redisPrefix: prefix,
      outboxMaxRetries: 2,
      outboxRetryBaseMs: 10,
      outboxRetryMaxMs: 20,
      outboxPollIntervalMs: 50,
      republishIntervalMs: 3_600_000,
    });
    const [doomed, deleted] = [await start(), await start()];
    const page = await eventually('both rows dead-lettered', async () => {
      const found = await list();
      return found.deadLetters.length === 2 ? found : undefined;
    });
    expect(page.deadLetters.map((letter) => letter.runId).sort()).toEqual([doomed.id, deleted.id].sort());
    expect(page.deadLetters[0]).toMatchObject({ origin: 'outbox', queue: 'echo:1', reason: 'publish_failed', detail: { attempts: 2 } });
    expect(page.deadLetters[0].message.length).toBeGreaterThan(0);

    await server.start();
    const redis = new Redis(server.url);
    try {
      // Redis answers again, but the dead letters are still there.
      await eventually('readiness degraded, not down', async () => (await http().get('/health/ready')).body.status === 'degraded');
      const byRun = new Map(page.deadLetters.map((letter) => [letter.runId, letter.id]));
      expect(
        (
          await http()
            .post(`/v1/dead-letters/${byRun.get(doomed.id)}/redrive`)
            .expect(200)
        ).body,
      ).toEqual({
        action: 'republished',
        runStatus: 'queued',
      });
      await eventually('the redriven run published again', async () =>
        (await redis.zrange(sortedSetKey(prefix, 'echo:1'), '0', '-1')).some((member) => member.startsWith(doomed.id)),
      );
      await http()
        .delete(`/v1/dead-letters/${byRun.get(deleted.id)}`)
        .expect(204);
      expect((await list()).deadLetters).toEqual([]);
      await eventually('readiness up again', async () => (await readiness()).status === 'ok');
      await http()
        .delete(`/v1/dead-letters/${byRun.get(deleted.id)}`)
        .expect(404);
    } finally {
      redis.disconnect();
    }
  });

  it('records a Streams wake-up delivered too often, fails its stalled run, and redrives it as a new attempt', async () => {
    await server.start();
    coordinator = await startCoordinator(db.url, {
      dispatch: 'redis-streams',
      redisUrl: server.url,
      redisPrefix: testPrefix('dead-stream'),
      claimMinIdleTimeMs: 300,
      heartbeatIntervalMs: 100,
      republishIntervalMs: 3_600_000,
    });
    const run = await start();
    const [claimed] = (
      await http()
        .post('/v1/worker/takes')
        .send({ workerId: 'ghost', workflows: [{ name: 'echo', version: '1', wakeups: ['0/1-0'] }] })
        .expect(200)
    ).body.runs as ClaimedRun[];
    expect(claimed).toMatchObject({ id: run.id, wakeup: '0/1-0' });
    const report = { workerId: 'w', workflow: { name: 'echo', version: '1' }, wakeup: '0/1-0', deliveries: 6 };

    // While the ghost's claim is fresh, the run is left alone; the letter is recorded once however often it is reported.
    expect((await http().post('/v1/worker/dead-letters').send(report).expect(200)).body).toMatchObject({ runFailed: false });
    await eventually(
      'the ghost claim to go idle',
      async () => (await db.sql(`SELECT 1 FROM runs WHERE id = $1 AND heartbeat_at < now() - interval '300 milliseconds'`, [run.id])).length > 0,
    );
    const second = (await http().post('/v1/worker/dead-letters').send(report).expect(200)).body as { deadLetterId: string; runFailed: boolean };
    expect(second.runFailed).toBe(true);
    expect(await http().get(`/v1/runs/${run.id}`).expect(200)).toMatchObject({
      body: { status: 'failed', error: { name: 'RunStalledError', reason: 'stalled' } },
    });
    const [letter] = (await list()).deadLetters;
    expect(letter).toMatchObject({
      id: second.deadLetterId,
      origin: 'stream',
      runId: run.id,
      reason: 'delivered_too_often',
      detail: { wakeup: '0/1-0', deliveries: 6 },
    });

    expect((await http().post(`/v1/dead-letters/${letter.id}/redrive`).expect(200)).body).toEqual({ action: 'retried', runStatus: 'queued' });
    expect((await http().get(`/v1/runs/${run.id}`).expect(200)).body).toMatchObject({ status: 'queued', attempt: 2, stalls: 0 });
    expect((await list()).deadLetters).toEqual([]);
  });

  it('fails only the run last taken with a wake-up, when an earlier one taken with the same wake-up is idle too', async () => {
    await server.start();
    coordinator = await startCoordinator(db.url, {
      dispatch: 'redis-streams',
      redisUrl: server.url,
      redisPrefix: testPrefix('dead-stream-twice'),
      claimMinIdleTimeMs: 300,
      heartbeatIntervalMs: 100,
      republishIntervalMs: 3_600_000,
    });
    const take = async (workerId: string) =>
      (
        (
          await http()
            .post('/v1/worker/takes')
            .send({ workerId, workflows: [{ name: 'echo', version: '1', wakeups: ['0/7-0'] }] })
            .expect(200)
        ).body.runs as ClaimedRun[]
      )[0];
    const first = await start();
    expect((await take('ghost-1')).id).toBe(first.id);
    // The entry is reclaimed by another worker, which takes another run with it; both workers die.
    const second = await start();
    expect((await take('ghost-2')).id).toBe(second.id);
    await eventually(
      'both claims idle',
      async () => (await db.sql(`SELECT 1 FROM runs WHERE status = 'running' AND heartbeat_at < now() - interval '300 milliseconds'`)).length === 2,
    );
    const report = { workerId: 'w', workflow: { name: 'echo', version: '1' }, wakeup: '0/7-0', deliveries: 6 };
    expect((await http().post('/v1/worker/dead-letters').send(report).expect(200)).body).toMatchObject({ runFailed: true });
    const statuses = await db.sql<{ id: string; status: string }>(`SELECT id, status FROM runs ORDER BY id`);
    expect(statuses).toEqual([
      { id: first.id, status: 'running' },
      { id: second.id, status: 'failed' },
    ]);
    expect((await list()).deadLetters).toMatchObject([{ runId: second.id }]);
  });

  it('lists newest first, and pages through every one, where the ids gain a digit', async () => {
    coordinator = await startCoordinator(db.url);
    for (const id of [9, 10, 11]) {
      await db.sql(
        `INSERT INTO dead_letters (id, origin, ref, queue, reason, message) OVERRIDING SYSTEM VALUE
         VALUES ($1::bigint, 'stream', $1::bigint::text, 'echo:1', 'delivered_too_often', 'test')`,
        [id],
      );
    }
    expect((await list()).deadLetters.map((letter) => letter.id)).toEqual(['11', '10', '9']);
    const first = (await http().get('/v1/dead-letters?limit=2').expect(200)).body as DeadLetterPage;
    const second = (await http().get(`/v1/dead-letters?limit=2&cursor=${first.nextCursor}`).expect(200)).body as DeadLetterPage;
    expect([...first.deadLetters, ...second.deadLetters].map((letter) => letter.id)).toEqual(['11', '10', '9']);
  });

  it('refuses bad ids and unknown dead letters with a reason', async () => {
    coordinator = await startCoordinator(db.url);
    expect((await http().post('/v1/dead-letters/abc/redrive').expect(400)).body).toMatchObject({ reason: 'invalid_dead_letter_id' });
    expect((await http().post('/v1/dead-letters/42/redrive').expect(404)).body).toMatchObject({ reason: 'dead_letter_not_found' });
    expect((await http().get('/v1/dead-letters?limit=0').expect(400)).body).toMatchObject({ reason: 'invalid_limit' });
    expect((await http().get('/v1/dead-letters?cursor=x').expect(400)).body).toMatchObject({ reason: 'invalid_cursor' });
  });
});
