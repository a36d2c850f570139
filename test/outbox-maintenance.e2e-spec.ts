import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { sortedSetKey } from '@app/streams';
import { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { type RunningCoordinator, startCoordinator } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { TEST_REDIS_URL, testPrefix } from './support/redis';
import { RUN_TABLES } from '@app/persistence';

interface OutboxRow {
  id: string;
  run_id: string;
  status: string;
  attempt_count: number;
  sent_at: Date | null;
}

/**
 * The outbox's crash and failure paths: rows a dead enqueuer left in flight, and sent rows the
 * enqueuer could not delete. Real PostgreSQL, real Redis.
 */
describe('outbox maintenance', () => {
  let db: TestDatabase;
  let redis: Redis;
  let coordinator: RunningCoordinator | undefined;
  let prefix: string;

  beforeAll(async () => {
    db = await createTestDatabase('outbox_maintenance');
    redis = new Redis(TEST_REDIS_URL);
  });

  afterEach(async () => {
    await coordinator?.close();
    coordinator = undefined;
    await db.sql('DROP TRIGGER IF EXISTS outbox_refuse_delete ON outbox');
    await db.sql(`TRUNCATE ${RUN_TABLES.join(', ')}, outbox, dead_letters CASCADE`);
  });

  afterAll(async () => {
    redis?.disconnect();
    await db?.drop();
  });

  const boot = async (overrides: Parameters<typeof startCoordinator>[1] = {}) => {
    prefix = testPrefix('outbox');
    coordinator = await startCoordinator(db.url, { dispatch: 'redis-zset', redisPrefix: prefix, republishIntervalMs: 3_600_000, ...overrides });
    return coordinator;
  };
  /** The runs named by the wake-ups in the queue's sorted set (members are `<runId>:<outbox id>`). */
  const published = async () => (await redis.zrange(sortedSetKey(prefix, 'echo:1'), '0', '-1')).map((m) => m.split(':')[0]);
  const outboxRow = async (runId: string) =>
    (await db.sql<OutboxRow>('SELECT id, run_id, status, attempt_count, sent_at FROM outbox WHERE run_id = $1', [runId]))[0];

  /** What an enqueuer leaves behind when it dies mid-batch: a run's row claimed (in_flight) and never finished. */
  const leaveInFlight = async () => {
    const runId = randomUUID();
    await db.sql('BEGIN');
    await db.sql(`SET LOCAL wf.dispatch = 'redis-zset'`);
    await db.sql(`INSERT INTO runs (id, workflow, version, queue, status) VALUES ($1, 'echo', '1', 'echo:1', 'queued')`, [runId]);
    await db.sql(`UPDATE outbox SET status = 'in_flight', attempt_count = attempt_count + 1, updated_at = now() WHERE run_id = $1`, [runId]);
    await db.sql('COMMIT');
    return runId;
  };

  it('publishes a row a dead enqueuer left in flight once it is older than OUTBOX_STALE_IN_FLIGHT_MS, not before', async () => {
    await boot({ outboxStaleInFlightMs: 1_000, outboxPollIntervalMs: 50 });
    const claimedAt = Date.now();
    const runId = await leaveInFlight();

    await eventually('the stale row published and deleted', async () => (await outboxRow(runId)) === undefined, 15_000);
    expect(Date.now() - claimedAt).toBeGreaterThanOrEqual(1_000);
    expect(await published()).toEqual([runId]);
  });

  it('marks sent rows it cannot delete as sent, publishes them no more, and deletes them once it can', async () => {
    await boot({ outboxStaleInFlightMs: 1_000, outboxPollIntervalMs: 50 });
    await db.sql(`CREATE OR REPLACE FUNCTION refuse_delete() RETURNS trigger LANGUAGE plpgsql AS $$
                  BEGIN RAISE EXCEPTION 'deletes refused by the test'; END; $$`);
    await db.sql('CREATE TRIGGER outbox_refuse_delete BEFORE DELETE ON outbox FOR EACH STATEMENT EXECUTE FUNCTION refuse_delete()');

    const start = async () => (await request(coordinator!.url).post('/v1/runs').send({ workflow: 'echo', version: '1' }).expect(201)).body.id as string;
    const first = await start();
    const sent = await eventually('the first row marked sent', async () => {
      const row = await outboxRow(first);
      return row?.status === 'sent' ? row : undefined;
    });
    expect(sent).toMatchObject({ attempt_count: 1, sent_at: expect.any(Date) });
    expect(await published()).toEqual([first]);

    // A row left in flight after the first one was marked sent: once maintenance has recovered it
    // and a batch has published it, the sent row was older than the stale age through both, and
    // neither took it again.
    await redis.del(sortedSetKey(prefix, 'echo:1'));
    const second = await leaveInFlight();
    await eventually('the stale row recovered, published and marked sent', async () => (await outboxRow(second))?.status === 'sent', 15_000);
    expect(await outboxRow(second)).toMatchObject({ attempt_count: 2 });
    expect(await outboxRow(first)).toMatchObject({ status: 'sent', attempt_count: 1 });
    expect(await published()).toEqual([second]);

    await db.sql('DROP TRIGGER outbox_refuse_delete ON outbox');
    await eventually('maintenance to delete the sent rows', async () => (await db.sql('SELECT 1 FROM outbox')).length === 0, 15_000);
    expect(await published()).toEqual([second]);
  });
});
