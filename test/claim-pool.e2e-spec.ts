import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { Database, PrimaryLocator, prepared } from '@app/persistence';
import request from 'supertest';
import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import { GenericPlanPool } from '../libs/persistence/src/generic-plan.pool';
import { PooledClient } from '../libs/persistence/src/pooled-client';
import { type RunningCoordinator, startCoordinator } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';

/** The generic-plan sessions (GenericPlanPool: claims, takes, starts, task results, report batches): their setting, their size, their recovery and their end. */
describe('the claim pool', () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator | undefined;
  const CLAIM_POOL_SIZE = 3;

  beforeAll(async () => {
    db = await createTestDatabase('claim_pool');
    coordinator = await startCoordinator(db.url, { databasePoolSize: 4, databaseClaimPoolSize: CLAIM_POOL_SIZE, claimPollIntervalMs: 60_000 });
  });

  afterAll(async () => {
    await coordinator?.close();
    await db?.drop();
  });

  const claim = () =>
    request(coordinator!.url)
      .post('/v1/worker/claims')
      .send({ workerId: 'w-claim-pool', workflows: [{ name: 'echo', version: '1' }], limit: 10, waitMs: 0 });
  /** The sessions whose last statement was a claim, in either form (pg_stat_activity shows its text, not its name; libs/persistence/src/sql/claims.sql.ts). */
  const CLAIM_SESSIONS = `FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
                            AND (query LIKE 'WITH wanted AS MATERIALIZED%' OR query LIKE 'WITH admission AS MATERIALIZED%')`;
  const claimSessions = async () => (await db.sql<{ n: number }>(`SELECT count(*)::int AS n ${CLAIM_SESSIONS}`))[0].n;

  it('plans the statements sent through it generically, pricing pages as in memory, and only those', async () => {
    const database = coordinator!.app.get(Database);
    const settings = `SELECT current_setting('plan_cache_mode') AS mode, current_setting('random_page_cost') AS "randomPageCost"`;
    const setting = prepared('wf_test_plan_settings', settings, { genericPlan: true });
    expect(await database.query(setting)).toEqual([{ mode: 'force_generic_plan', randomPageCost: '1.1' }]);
    const [server] = await db.sql<{ value: string }>(`SELECT reset_val AS value FROM pg_settings WHERE name = 'random_page_cost'`);
    expect(await database.query(settings)).toEqual([{ mode: 'auto', randomPageCost: server.value }]);
  });

  it('runs a transaction asked for with genericPlan on one of its sessions, and only that one', async () => {
    const database = coordinator!.app.get(Database);
    const mode = (tx: { query<T>(statement: string): Promise<T[]> }) => tx.query<{ mode: string }>(`SELECT current_setting('plan_cache_mode') AS mode`);
    expect(await database.transaction(mode, { genericPlan: true })).toEqual([{ mode: 'force_generic_plan' }]);
    expect(await database.transaction(mode)).toEqual([{ mode: 'auto' }]);
  });

  it("plans a worker's task results and its report batches generically (their custom plans cost more than running them)", async () => {
    const [started] = (
      await request(coordinator!.url)
        .post('/v1/runs/batch')
        .send({ runs: [{ workflow: 'echo', version: '1', input: null }] })
        .expect(201)
    ).body.runs;
    const claimed = (await claim().expect(200)).body.runs.find((run: { id: string }) => run.id === started.id);
    const pool = coordinator!.app.get(GenericPlanPool);
    const queries = jest.spyOn(pool, 'query');
    const connects = jest.spyOn(pool, 'connect');
    const task = (key: string, seq: number) => ({ expectedRevision: claimed.revision, key, seq, name: 'a', status: 'completed', attempts: 1, output: seq });
    try {
      await request(coordinator!.url).post(`/v1/worker/runs/${started.id}/tasks`).send(task('a#0', 0)).expect(200);
      expect(queries.mock.calls.map(([config]) => config.name)).toEqual(['wf_record_tasks']);
      await request(coordinator!.url)
        .post('/v1/worker/reports')
        .send({
          reports: [
            { type: 'task', runId: started.id, task: task('a#1', 1) },
            { type: 'complete', runId: started.id, complete: { expectedRevision: claimed.revision, output: 'done' } },
          ],
        })
        .expect(200);
      // One statement for the batch, committing on its own: no transaction, so no session taken for one.
      expect(queries.mock.calls.map(([config]) => config.name)).toEqual(['wf_record_tasks', 'wf_record_tasks_and_finish']);
      expect(connects).not.toHaveBeenCalled();
    } finally {
      queries.mockRestore();
      connects.mockRestore();
    }
    const run = (await request(coordinator!.url).get(`/v1/runs/${started.id}`).expect(200)).body;
    expect(run.status).toBe('completed');
    expect(run.tasks.map((step: { key: string }) => step.key)).toEqual(['a#0', 'a#1']);
  });

  it('claims through it, with at most DATABASE_CLAIM_POOL_SIZE sessions', async () => {
    await request(coordinator!.url)
      .post('/v1/runs/batch')
      .send({ runs: Array.from({ length: 30 }, (_, i) => ({ workflow: 'echo', version: '1', input: i })) })
      .expect(201);
    const responses = await Promise.all(Array.from({ length: 12 }, () => claim().expect(200)));
    expect(responses.flatMap((response) => response.body.runs).length).toBe(30);
    const sessions = await claimSessions();
    expect(sessions).toBeGreaterThan(0);
    expect(sessions).toBeLessThanOrEqual(CLAIM_POOL_SIZE);
  });

  it('claims again once its sessions were killed (the pool opens new ones)', async () => {
    await claim().expect(200);
    await db.sql(`SELECT pg_terminate_backend(pid) ${CLAIM_SESSIONS}`);
    await eventually('the claim sessions to end', async () => (await claimSessions()) === 0, 5_000);
    // An idle session that died is dropped by the pool: the next claims get new ones.
    await eventually('a claim to succeed again', async () => (await claim()).status === 200, 5_000);
    await claim().expect(200);
    expect(await claimSessions()).toBeGreaterThan(0);
  });

  it('opens its sessions, as the main pool does, with the client that is never without an error listener (and follows the primary)', () => {
    const generic = (coordinator!.app.get(GenericPlanPool) as unknown as { pool: { Client: typeof PooledClient } }).pool;
    const main = (coordinator!.app.get(DataSource).driver as PostgresDriver).master as { Client: typeof PooledClient };
    expect(generic.Client).toBe(coordinator!.app.get(PrimaryLocator).Client);
    expect(main.Client).toBe(generic.Client);
    expect(main.Client.prototype).toBeInstanceOf(PooledClient);
  });

  it('closes its sessions when the coordinator shuts down', async () => {
    await coordinator!.close();
    coordinator = undefined;
    const sessions = async () =>
      (await db.sql<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`))[0].n;
    await eventually('every session of the coordinator to end', async () => (await sessions()) === 0, 5_000);
  });
});
