import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { createSqlTestDatabase, type SqlTestDatabase } from '../../../../test/support/sql-database';
import type { PreparedStatement, SqlExecutor } from '../database';
import { refreshClaims } from './heartbeats.sql';
import { recordTaskResultsAndFinishRuns } from './report-batch.sql';
import { findLandedSuspension } from './fencing.sql';
import { finishRuns, recordTaskResults, releaseRun, retryRunLater } from './reports.sql';
import { deliverEvent, wakeSleepingRun } from './run-commands.sql';
import { lockRunningRun } from './steps.sql';
import { insertUpdate, refusePendingUpdates } from './updates.sql';

/** An executor that runs nothing and keeps what it was asked: each statement's text and values. */
function recorder(): SqlExecutor & { asked: { text: string; values: unknown[] }[] } {
  const asked: { text: string; values: unknown[] }[] = [];
  return {
    asked,
    async query<T>(statement: string | PreparedStatement, values: unknown[] = []): Promise<T[]> {
      asked.push({ text: typeof statement === 'string' ? statement : statement.text, values });
      return [];
    },
  };
}

/**
 * The statements that look a run up by its id, planned on a database whose statistics saw only finished runs (as
 * an ANALYZE of a long history, or of a quiet hour, does) and which now has a ready backlog and running runs:
 * each must probe the primary key, never read a partial index on status instead (reports.sql.ts: COLLATE "C").
 */
describe('statements that look a run up by its id, on statistics of a finished history', () => {
  let database: SqlTestDatabase;
  const running = randomUUID();

  beforeAll(async () => {
    database = await createSqlTestDatabase('lookups_by_id_sql');
    // No ANALYZE but ours: an automatic one after the inserts below would let the plans see them.
    await database.sql('ALTER TABLE runs SET (autovacuum_enabled = off)');
    await database.sql(`INSERT INTO runs (id, workflow, version, queue, status, revision, input, due_at, created_at, updated_at, finished_at)
                        SELECT gen_random_uuid(), 'w', '1', 'w:1', 'completed', 2, '{}', now(), now(), now(), now() FROM generate_series(1, 20000)`);
    await database.sql('ANALYZE runs');
    await database.sql(`INSERT INTO runs (id, workflow, version, queue, status, revision, input, due_at, created_at, updated_at)
                        SELECT gen_random_uuid(), 'w', '1', 'w:1', 'queued', 1, '{}', now(), now(), now() FROM generate_series(1, 2000)`);
    await database.sql(
      `INSERT INTO runs (id, workflow, version, queue, status, revision, input, due_at, claimed_by, heartbeat_at, created_at, updated_at)
                        SELECT CASE WHEN i = 1 THEN $1::uuid ELSE gen_random_uuid() END, 'w', '1', 'w:1', 'running', 2, '{}', now(), 'worker',
                               now(), now(), now() FROM generate_series(1, 200) i`,
      [running],
    );
  });

  afterAll(async () => {
    await database?.close();
  });

  const task = { expectedRevision: 2, key: 'k', seq: 0, name: 'k', status: 'completed' as const, attempts: 1, output: 1, error: null };
  const outcome = { runId: running, expectedRevision: 2, outcome: { status: 'completed' as const, output: 1 } };
  const asks: [string, (db: SqlExecutor) => Promise<unknown>][] = [
    ['record task results and finish (a batch)', (db) => recordTaskResultsAndFinishRuns(db, [{ runId: running, task }], [outcome], 1_000)],
    ['record task results', (db) => recordTaskResults(db, [{ runId: running, task }], { finishing: [], refreshAfterMs: 1_000 })],
    ['finish runs', (db) => finishRuns(db, [outcome])],
    ['release a run', (db) => releaseRun(db, running, 2)],
    ['retry a run later', (db) => retryRunLater(db, { runId: running, expectedRevision: 2, error: { name: 'E', message: 'e' }, delayMs: 1 })],
    ['find a landed suspension', (db) => findLandedSuspension(db, { runId: running, expectedRevision: 2, key: 'k', kind: 'sleep' })],
    ['refresh claims (heartbeat)', (db) => refreshClaims(db, [{ id: running, expectedRevision: 2 }])],
    ['lock a running run', (db) => lockRunningRun(db, running, 2)],
    ['deliver an event to a waiting run', (db) => deliverEvent(db, running, 'e', 1)],
    ['wake a sleeping run', (db) => wakeSleepingRun(db, running)],
    ['send an update (wakes a waiting run)', (db) => insertUpdate(db, { id: randomUUID(), runId: running, name: 'u', input: 1 })],
    ['refuse the updates of an ended run', (db) => refusePendingUpdates(db, running)],
  ];

  it.each(asks)('%s: reads no partial index on status', async (_name, ask) => {
    const asked = recorder();
    await ask(asked).catch(() => undefined);
    expect(asked.asked.length).toBeGreaterThan(0);
    for (const { text, values } of asked.asked) {
      const plan = (await database.sql<{ 'QUERY PLAN': string }>(`EXPLAIN ${text}`, values)).map((row) => row['QUERY PLAN']).join('\n');
      expect(plan).not.toMatch(/runs_(ready|idle_claims|running_heartbeat|due|slots)_idx/);
      expect(plan).toMatch(/runs_pkey/);
    }
  });
});
