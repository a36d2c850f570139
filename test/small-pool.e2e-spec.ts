import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { ClaimedRun } from '@nest-durable/client';
import request from 'supertest';
import { type RunningCoordinator, startCoordinator } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { RUN_TABLES } from '@app/persistence';

/**
 * A coordinator with DATABASE_POOL_SIZE=2 under many concurrent suspensions and retries, current
 * and stale. Every statement of a transaction runs on that transaction's connection, so a request
 * never holds one connection while it waits for another: with a pool this small, one that did would
 * stall every request until the pool's connection timeout (10 s) and then fail.
 */
describe('a pool of two connections', () => {
  // Far below the pool's 10 s connection timeout, which is what a self-deadlocked pool waits for.
  const QUICK_MS = 5_000;
  let db: TestDatabase;
  let coordinator: RunningCoordinator;

  beforeAll(async () => {
    db = await createTestDatabase('small_pool');
    coordinator = await startCoordinator(db.url, { databasePoolSize: 2, claimPollIntervalMs: 60_000 });
  });

  afterEach(async () => {
    await db.sql(`TRUNCATE ${RUN_TABLES.join(', ')} CASCADE`);
  });

  afterAll(async () => {
    await coordinator?.close();
    await db?.drop();
  });

  const http = () => request(coordinator.url);

  async function claimedRuns(count: number): Promise<ClaimedRun[]> {
    const runs = Array.from({ length: count }, (_, i) => ({ workflow: 'echo', version: '1', input: { i } }));
    await http().post('/v1/runs/batch').send({ runs }).expect(201);
    const response = await http()
      .post('/v1/worker/claims')
      .send({ workerId: 'w-pool', workflows: [{ name: 'echo', version: '1' }], limit: count, waitMs: 0 })
      .expect(200);
    expect(response.body.runs).toHaveLength(count);
    return response.body.runs;
  }

  const sleep = (run: ClaimedRun, expectedRevision: number) =>
    http()
      .post(`/v1/worker/runs/${run.id}/suspend`)
      .send({ expectedRevision, key: 'sleep:nap#1', seq: 0, kind: 'sleep', name: 'nap', delayMs: 60_000, attempts: 0 });

  const retryReport = (run: ClaimedRun, expectedRevision: number) => ({
    type: 'fail',
    runId: run.id,
    fail: { expectedRevision, error: { name: 'Error', message: 'try again' }, retryDelayMs: 60_000 },
  });

  it('answers a burst of 20 stale suspends with quick 409s while other requests are served', async () => {
    const runs = await claimedRuns(20);
    const startedAt = Date.now();
    const [suspends, reads] = await Promise.all([
      Promise.all(runs.map((run) => sleep(run, run.revision - 1))),
      Promise.all(runs.slice(0, 5).map((run) => http().get(`/v1/runs/${run.id}`))),
    ]);
    expect(Date.now() - startedAt).toBeLessThan(QUICK_MS);
    expect(suspends.map((response) => [response.status, response.body.reason])).toEqual(runs.map(() => [409, 'revision_conflict']));
    expect(reads.map((response) => [response.status, response.body.status])).toEqual(reads.map(() => [200, 'running']));
  });

  it('applies concurrent suspensions and workflow retries, current and stale, each with its own answer', async () => {
    const runs = await claimedRuns(40);
    const [sleepers, staleSleepers, retried, staleRetried] = [runs.slice(0, 10), runs.slice(10, 20), runs.slice(20, 30), runs.slice(30, 40)];
    const startedAt = Date.now();
    const [sleeps, staleSleeps, batches] = await Promise.all([
      Promise.all(sleepers.map((run) => sleep(run, run.revision))),
      Promise.all(staleSleepers.map((run) => sleep(run, run.revision - 1))),
      // Each batch is one transaction holding a current retry and a stale one (its conflict check).
      Promise.all(
        retried.map((run, i) =>
          http()
            .post('/v1/worker/reports')
            .send({ reports: [retryReport(run, run.revision), retryReport(staleRetried[i], staleRetried[i].revision - 1)] }),
        ),
      ),
    ]);
    expect(Date.now() - startedAt).toBeLessThan(QUICK_MS);

    expect(sleeps.map((response) => [response.status, response.body.suspended])).toEqual(sleepers.map(() => [200, true]));
    expect(staleSleeps.map((response) => [response.status, response.body.reason])).toEqual(staleSleepers.map(() => [409, 'revision_conflict']));
    expect(
      batches.map((response) => [response.status, response.body.outcomes.map((outcome: { ok: boolean; statusCode?: number }) => outcome.statusCode ?? 200)]),
    ).toEqual(batches.map(() => [200, [200, 409]]));

    const states = new Map((await db.sql<{ id: string; status: string; attempt: number }>('SELECT id, status, attempt FROM runs')).map((row) => [row.id, row]));
    for (const run of [...sleepers, ...retried]) expect(states.get(run.id)?.status).toBe('waiting');
    for (const run of retried) expect(states.get(run.id)?.attempt).toBe(2);
    for (const run of [...staleSleepers, ...staleRetried]) expect(states.get(run.id)).toMatchObject({ status: 'running', attempt: 1 });
  });
});
