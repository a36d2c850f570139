import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { createSqlTestDatabase, type SqlTestDatabase } from '../../../../test/support/sql-database';
import { insertRun } from '../../../../test/support/seed-rows';
import { queuesNeedingWakeups, republishWakeups } from './republish.sql';
import { RUN_TABLES } from '../run-tables';

const AFTER_MS = 5_000;
const IDLE_MS = 30_000;

describe('republish.sql', () => {
  let db: SqlTestDatabase;
  const ago = (ms: number) => new Date(Date.now() - ms);

  beforeAll(async () => {
    db = await createSqlTestDatabase('republish_sql');
  });

  beforeEach(async () => {
    await db.sql(`TRUNCATE ${RUN_TABLES.join(', ')}, outbox, workflow_controls CASCADE`);
  });

  afterAll(async () => {
    await db?.close();
  });

  it('finds the queues with runs due too long or held by an idle claim, counting the wake-ups still coming', async () => {
    await insertRun(db, { dueAt: ago(10_000) });
    const due = await insertRun(db, { dueAt: ago(1_000) });
    await insertRun(db, { workflow: 'fresh', dueAt: ago(1_000) }); // not waiting long enough yet
    await insertRun(db, { workflow: 'stalled', status: 'running', heartbeatAt: ago(60_000) });
    await insertRun(db, { workflow: 'alive', status: 'running', heartbeatAt: ago(1_000) });
    await insertRun(db, { workflow: 'later', dueAt: new Date(Date.now() + 60_000) });
    await db.sql(
      `INSERT INTO outbox (run_id, queue, status, next_attempt_at, attempt_count) VALUES
         ($1, 'echo:1', 'pending', now(), 0), ($1, 'echo:1', 'pending', now() + interval '1 hour', 0), ($1, 'echo:1', 'retry', now() + interval '1 hour', 2)`,
      [due],
    );
    expect(await queuesNeedingWakeups(db.db, AFTER_MS, IDLE_MS)).toEqual([
      { queue: 'echo:1', needed: 2, coming: 2 },
      { queue: 'stalled:1', needed: 1, coming: 0 },
    ]);
  });

  it('caps what a queue needs by its flow control: none while paused, its free slots under a concurrency limit, one under a rate', async () => {
    for (const workflow of ['paused', 'limited', 'rated']) {
      for (let i = 0; i < 3; i++) await insertRun(db, { workflow, dueAt: ago(10_000) });
    }
    await insertRun(db, { workflow: 'limited', status: 'running', holdsSlot: true });
    await db.sql(
      `INSERT INTO workflow_controls (workflow, version, paused, api_concurrency, api_rate_per_second) VALUES
         ('paused', '1', true, NULL, NULL), ('limited', '1', false, 3, NULL), ('rated', '1', false, NULL, 10)`,
    );
    expect(await queuesNeedingWakeups(db.db, AFTER_MS, IDLE_MS)).toEqual([
      { queue: 'limited:1', needed: 2, coming: 0 },
      { queue: 'paused:1', needed: 0, coming: 0 },
      { queue: 'rated:1', needed: 1, coming: 0 },
    ]);
  });

  it('writes the wake-ups missing for each queue: for idle claims first, then the runs due longest', async () => {
    const idle = await insertRun(db, { status: 'running', heartbeatAt: ago(60_000) });
    const oldest = await insertRun(db, { dueAt: ago(20_000) });
    await insertRun(db, { dueAt: ago(10_000) });
    const mail = await insertRun(db, { workflow: 'mail', dueAt: ago(10_000) });
    const written = await republishWakeups(
      db.db,
      [
        { queue: 'echo:1', count: 2 },
        { queue: 'mail:1', count: 5 },
      ],
      IDLE_MS,
    );
    expect(written.map((row) => row.queue).sort()).toEqual(['echo:1', 'echo:1', 'mail:1']);
    const rows = await db.sql<{ run_id: string }>(`SELECT run_id FROM outbox ORDER BY run_id`);
    expect(rows.map((row) => row.run_id)).toEqual([idle, oldest, mail].sort());
  });
});
