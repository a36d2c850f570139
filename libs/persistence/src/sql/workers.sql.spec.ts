import type { WorkerRegistration } from '@nest-durable/common';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createSqlTestDatabase, type SqlTestDatabase } from '../../../../test/support/sql-database';
import { hostedOnline, listWorkers, upsertWorker, upsertWorkflowVersions } from './workers.sql';

describe('workers.sql', () => {
  let db: SqlTestDatabase;
  const registration = (fields: Partial<WorkerRegistration> = {}): WorkerRegistration => ({
    subscriber: 'http',
    failedOver: false,
    concurrency: 4,
    runsHeld: 1,
    intervalMs: 10_000,
    workflows: [{ name: 'echo', version: '1', shards: [] }],
    ...fields,
  });
  const row = async (id: string) =>
    (
      await db.sql<{ startedAt: Date; expiresInMs: number; declared: unknown }>(
        `SELECT started_at AS "startedAt", (extract(epoch FROM expires_at - now()) * 1000)::float8 AS "expiresInMs", declared_schedules AS declared
           FROM workers WHERE id = $1`,
        [id],
      )
    )[0];

  beforeAll(async () => {
    db = await createSqlTestDatabase('workers_sql');
  });

  afterAll(async () => {
    await db?.close();
  });

  it('registers a worker online for three of its intervals, and keeps its start while it stays online', async () => {
    const declared = [{ workflow: 'echo', version: '1', name: 'nightly' }];
    await upsertWorker(db.db, 'w1', registration(), declared);
    const first = await row('w1');
    expect(first.expiresInMs).toBeGreaterThan(29_000);
    expect(first.expiresInMs).toBeLessThanOrEqual(30_000);
    expect(first.declared).toEqual(declared);
    await upsertWorker(db.db, 'w1', registration({ runsHeld: 3 }), []);
    expect(await row('w1')).toMatchObject({ startedAt: first.startedAt, declared: [] });
    // Offline (expired), it starts again when it registers.
    await db.sql(`UPDATE workers SET expires_at = now() - interval '1 second', started_at = now() - interval '1 day' WHERE id = 'w1'`);
    await upsertWorker(db.db, 'w1', registration(), []);
    expect((await row('w1')).startedAt.getTime()).toBeGreaterThan(Date.now() - 60_000);
  });

  it('records the build id a worker registers with, and none for a worker that sends none', async () => {
    await upsertWorker(db.db, 'built', registration({ buildId: '1.4.0+sha.5e3c1f2' }), []);
    await upsertWorker(db.db, 'unbuilt', registration(), []);
    expect(await db.sql(`SELECT id, build_id FROM workers WHERE id IN ('built', 'unbuilt') ORDER BY id`)).toEqual([
      { id: 'built', build_id: '1.4.0+sha.5e3c1f2' },
      { id: 'unbuilt', build_id: null },
    ]);
    // A new build under the same id (a redeploy) replaces it.
    await upsertWorker(db.db, 'built', registration({ buildId: '1.5.0' }), []);
    expect(await db.sql(`SELECT build_id FROM workers WHERE id = 'built'`)).toEqual([{ build_id: '1.5.0' }]);
    await db.sql(`DELETE FROM workers WHERE id IN ('built', 'unbuilt')`);
  });

  it('lists the workers seen within the hour, online first, and drops those offline longer at the next registration', async () => {
    await upsertWorker(db.db, 'a-offline', registration({ buildId: 'b-7' }), []);
    await upsertWorker(db.db, 'gone', registration(), []);
    await db.sql(`UPDATE workers SET expires_at = now() - interval '1 minute' WHERE id = 'a-offline'`);
    await db.sql(`UPDATE workers SET expires_at = now() - interval '61 minutes' WHERE id = 'gone'`);
    const listed = await listWorkers(db.db);
    expect(listed.map((worker) => [worker.id, worker.online])).toEqual([
      ['w1', true],
      ['a-offline', false],
    ]);
    expect(listed.map((worker) => worker.buildId)).toEqual([null, 'b-7']);
    expect(listed[0]).toMatchObject({
      subscriber: 'http',
      failedOver: false,
      concurrency: 4,
      runsHeld: 1,
      workflows: [{ name: 'echo', version: '1', shards: [] }],
    });
    expect(await db.sql(`SELECT id FROM workers WHERE id = 'gone'`)).toHaveLength(1);
    await upsertWorker(db.db, 'w1', registration(), []);
    expect(await db.sql(`SELECT id FROM workers WHERE id = 'gone'`)).toHaveLength(0);
  });

  it('records workflow versions once, touching a known one at most once a minute', async () => {
    const versions = [
      { name: 'echo', version: '1' },
      { name: 'echo', version: '1' },
      { name: 'mail', version: '2' },
    ];
    await upsertWorkflowVersions(db.db, versions);
    const seen = () => db.sql<{ workflow: string; xmin: string }>(`SELECT workflow, xmin::text FROM workflows ORDER BY workflow, version`);
    const before = await seen();
    expect(before.map((row) => row.workflow)).toEqual(['echo', 'mail']);
    await upsertWorkflowVersions(db.db, versions);
    expect(await seen()).toEqual(before);
    await db.sql(`UPDATE workflows SET last_seen_at = now() - interval '2 minutes' WHERE workflow = 'mail'`);
    const touched = await seen();
    await upsertWorkflowVersions(db.db, versions);
    const after = await seen();
    expect(after[0]).toEqual(touched[0]);
    expect(after[1].xmin).not.toBe(touched[1].xmin);
  });

  it('knows whether an online worker hosts a version', async () => {
    expect(await hostedOnline(db.db, 'echo', '1')).toBe(true);
    expect(await hostedOnline(db.db, 'echo', '2')).toBe(false);
    await db.sql(`UPDATE workers SET expires_at = now() - interval '1 second'`);
    expect(await hostedOnline(db.db, 'echo', '1')).toBe(false);
  });
});
