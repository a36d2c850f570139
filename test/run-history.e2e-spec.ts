import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { ClaimedRun } from '@nest-durable/client';
import request from 'supertest';
import { type RunningCoordinator, startCoordinator } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { RUN_TABLES } from '@app/persistence';

/**
 * The transition history is append-only: no statement changes or removes a row of it, except the
 * removal of whole finished runs through the schema's delete_runs().
 */
describe('run history', () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator;

  beforeAll(async () => {
    db = await createTestDatabase('history');
    coordinator = await startCoordinator(db.url);
  });

  afterEach(async () => {
    await db.sql('ROLLBACK').catch(() => undefined);
    // TRUNCATE fires no DELETE trigger: tests may still empty their tables.
    await db.sql(`TRUNCATE ${RUN_TABLES.join(', ')} CASCADE`);
  });

  afterAll(async () => {
    await coordinator?.close();
    await db?.drop();
  });

  const http = () => request(coordinator.url);
  const start = async () => (await http().post('/v1/runs').send({ workflow: 'echo', version: '1', input: null }).expect(201)).body.id as string;
  /** A run taken by a worker (the test) and left running. */
  const running = async () => {
    const id = await start();
    const claimed = await http()
      .post('/v1/worker/claims')
      .send({ workerId: 'history-test', workflows: [{ name: 'echo', version: '1' }], limit: 1, waitMs: 0 })
      .expect(200);
    const [run] = claimed.body.runs as ClaimedRun[];
    expect(run.id).toBe(id);
    return run;
  };
  const recordTask = (run: ClaimedRun) =>
    http()
      .post(`/v1/worker/runs/${run.id}/tasks`)
      .send({ expectedRevision: run.revision, key: 'a#1', seq: 0, name: 'a', status: 'completed', attempts: 1, output: 1, error: null })
      .expect(200);
  /** A run that completed after recording a task, with an event nobody consumed. */
  const completed = async () => {
    const run = await running();
    await recordTask(run);
    await http().post(`/v1/runs/${run.id}/events/ignored`).send({ data: 1 }).expect(202);
    await http().post(`/v1/worker/runs/${run.id}/complete`).send({ expectedRevision: run.revision, output: 'done' }).expect(200);
    return run.id;
  };
  const historyOf = async (runId: string) =>
    (await db.sql<{ to_status: string }>('SELECT to_status FROM run_transitions WHERE run_id = $1 ORDER BY id', [runId])).map((row) => row.to_status);
  const exists = async (runId: string) => (await db.sql('SELECT 1 FROM runs WHERE id = $1', [runId])).length === 1;

  it('refuses to update or delete history rows, even with the deletion setting on', async () => {
    const id = await completed();
    await expect(db.sql('UPDATE run_transitions SET revision = 99 WHERE run_id = $1', [id])).rejects.toThrow('append-only');
    await expect(db.sql('DELETE FROM run_transitions WHERE run_id = $1', [id])).rejects.toThrow('append-only');
    await db.sql('BEGIN');
    // The setting delete_runs() turns on for its own statements; the run still exists, so its history stays.
    await db.sql(`SELECT set_config('wf.deleting_runs', 'on', true)`);
    await expect(db.sql('DELETE FROM run_transitions WHERE run_id = $1', [id])).rejects.toThrow('append-only');
    await db.sql('ROLLBACK');
    expect(await historyOf(id)).toEqual(['queued', 'running', 'completed']);
  });

  it('refuses to delete a run (and so its history) other than through delete_runs()', async () => {
    const id = await completed();
    await expect(db.sql('DELETE FROM runs WHERE id = $1', [id])).rejects.toThrow('delete_runs');
    expect(await exists(id)).toBe(true);
    expect(await historyOf(id)).toEqual(['queued', 'running', 'completed']);
  });

  it('delete_runs() removes finished runs with their history, steps and events, and leaves unfinished runs alone', async () => {
    const finished = await completed();
    const busy = await running();
    await recordTask(busy);
    const queued = await start();

    const deleted = await db.sql<{ delete_runs: string }>('SELECT delete_runs($1::uuid[])', [[finished, queued, busy.id]]);
    expect(deleted.map((row) => row.delete_runs)).toEqual([finished]);
    expect(await exists(finished)).toBe(false);
    expect(await historyOf(finished)).toEqual([]);
    expect(await db.sql('SELECT 1 FROM tasks WHERE run_id = $1 UNION ALL SELECT 1 FROM run_events WHERE run_id = $1', [finished])).toEqual([]);
    expect(await exists(queued)).toBe(true);
    expect(await historyOf(busy.id)).toEqual(['queued', 'running']);
    expect(await db.sql('SELECT 1 FROM tasks WHERE run_id = $1', [busy.id])).toHaveLength(1);
  });

  it("delete_runs() deletes a run's rows in every table of RUN_TABLES, and clears its children's parent", async () => {
    const [finished, other] = [await completed(), await completed()];
    const child = await start();
    await db.sql('UPDATE runs SET parent_id = $1 WHERE id = $2', [finished, child]);
    for (const run of [finished, other]) {
      await db.sql(`INSERT INTO tasks (run_id, key, seq, name, status, attempts) VALUES ($1, 'step#1', 0, 'step', 'completed', 1)`, [run]);
      await db.sql(`INSERT INTO run_events (run_id, name) VALUES ($1, 'ping')`, [run]);
      await db.sql(`INSERT INTO run_updates (id, run_id, name) VALUES (gen_random_uuid(), $1, 'bump')`, [run]);
      await db.sql(`INSERT INTO run_values (run_id, name, value) VALUES ($1, 'progress', '1')`, [run]);
    }
    const rowsOf = async (run: string) =>
      Object.fromEntries(
        await Promise.all(
          RUN_TABLES.map(async (table) => [table, (await db.sql(`SELECT 1 FROM ${table} WHERE ${table === 'runs' ? 'id' : 'run_id'} = $1`, [run])).length]),
        ),
      );

    const kept = await rowsOf(other);
    expect(Object.values(kept).every((rows) => Number(rows) > 0)).toBe(true);

    await db.sql('SELECT delete_runs($1::uuid[])', [[finished]]);
    expect(await rowsOf(finished)).toEqual({ runs: 0, tasks: 0, run_transitions: 0, run_events: 0, run_updates: 0, run_values: 0 });
    expect(await rowsOf(other)).toEqual(kept);
    expect(await db.sql('SELECT parent_id FROM runs WHERE id = $1', [child])).toEqual([{ parent_id: null }]);
  });

  it('leaves the deletion allowed only inside delete_runs(), not for the rest of its transaction', async () => {
    const [first, second] = [await completed(), await completed()];
    await db.sql('BEGIN');
    await db.sql('SELECT delete_runs($1::uuid[])', [[first]]);
    await expect(db.sql('DELETE FROM runs WHERE id = $1', [second])).rejects.toThrow('delete_runs');
    await db.sql('ROLLBACK');
    expect(await exists(first)).toBe(true);
    expect(await exists(second)).toBe(true);
  });
});
