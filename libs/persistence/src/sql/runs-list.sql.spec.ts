import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createSqlTestDatabase, type SqlTestDatabase } from '../../../../test/support/sql-database';
import { insertRun } from '../../../../test/support/seed-rows';
import { uuidv7 } from '../ids';
import { listRuns, pausedQueues, runById, runExists, runsByIdempotencyKeys, tasksOfRun, transitionsAfter } from './runs-list.sql';

const MINUTE = 60_000;

describe('runs-list.sql', () => {
  let db: SqlTestDatabase;
  const now = Date.now();
  const ids: string[] = [];
  const listed = async (filter: Parameters<typeof listRuns>[1]) => (await listRuns(db.db, filter)).map((run) => ids.indexOf(run.id));

  beforeAll(async () => {
    db = await createSqlTestDatabase('runs_list_sql');
    const at = (minutesAgo: number) => new Date(now - minutesAgo * MINUTE);
    ids.push(await insertRun(db, { createdAt: at(50), status: 'completed', tags: { team: 'a' }, idempotencyKey: 'order-1' }));
    ids.push(await insertRun(db, { createdAt: at(40), workflow: 'mail', status: 'failed', tags: { team: 'a', env: 'prod' } }));
    ids.push(await insertRun(db, { createdAt: at(30), version: '2', status: 'queued', shard: 'eu' }));
    ids.push(await insertRun(db, { createdAt: at(20), status: 'running', tags: { team: 'b' }, idempotencyKey: 'order-2', concurrencyKey: 'k' }));
    ids.push(await insertRun(db, { createdAt: at(10), workflow: 'mail', status: 'waiting', dueAt: 'infinity', idempotencyKey: 'order-1' }));
  });

  afterAll(async () => {
    await db?.close();
  });

  it('reads a run whole, under its entity names', async () => {
    await db.sql(`UPDATE runs SET claimed_by = 'worker-a', build_id = 'build-a' WHERE id = $1`, [ids[3]]);
    const run = await runById(db.db, ids[3]);
    expect(run).toMatchObject({
      id: ids[3],
      workflow: 'echo',
      version: '1',
      queue: 'echo:1',
      shard: null,
      status: 'running',
      revision: 0,
      attempt: 1,
      idempotencyKey: 'order-2',
      concurrencyKey: 'k',
      tags: { team: 'b' },
      parentId: null,
      claimedBy: 'worker-a',
      buildId: 'build-a',
      finishedAt: null,
    });
    expect(run?.createdAt).toEqual(new Date(now - 20 * MINUTE));
    expect((await runById(db.db, ids[4]))?.dueAt).toBe(Number.POSITIVE_INFINITY);
    expect(await runById(db.db, uuidv7())).toBeUndefined();
    expect(await runExists(db.db, ids[0])).toBe(true);
    expect(await runExists(db.db, uuidv7())).toBe(false);
  });

  it("reads a run's steps in the order they were made", async () => {
    await db.sql(
      `INSERT INTO tasks (run_id, key, kind, seq, name, status, attempts, output) VALUES
         ($1, 'b#1', 'task', 2, 'b', 'completed', 1, '"second"'), ($1, 'a#1', 'task', 1, 'a', 'failed', 3, NULL), ($1, 'nap#1', 'sleep', 3, 'nap', 'waiting', 0, NULL)`,
      [ids[3]],
    );
    const tasks = await tasksOfRun(db.db, ids[3]);
    expect(tasks.map((task) => [task.key, task.kind, task.status, task.attempts, task.output])).toEqual([
      ['a#1', 'task', 'failed', 3, null],
      ['b#1', 'task', 'completed', 1, 'second'],
      ['nap#1', 'sleep', 'waiting', 0, null],
    ]);
    expect(await tasksOfRun(db.db, ids[0])).toEqual([]);
  });

  it('lists newest first, by every filter given', async () => {
    expect(await listed({ limit: 50 })).toEqual([4, 3, 2, 1, 0]);
    expect(await listed({ limit: 2 })).toEqual([4, 3]);
    expect(await listed({ limit: 50, workflow: 'mail' })).toEqual([4, 1]);
    expect(await listed({ limit: 50, version: '2' })).toEqual([2]);
    expect(await listed({ limit: 50, status: 'failed' })).toEqual([1]);
    expect(await listed({ limit: 50, workflow: 'echo', idempotencyKey: 'order-1' })).toEqual([0]);
    expect(await listed({ limit: 50, cursor: ids[3] })).toEqual([2, 1, 0]);
    expect(await listed({ limit: 50, createdAfter: new Date(now - 35 * MINUTE) })).toEqual([4, 3, 2]);
    expect(await listed({ limit: 50, createdBefore: new Date(now - 35 * MINUTE) })).toEqual([1, 0]);
    // A cursor and a creation bound: the lower of the two.
    expect(await listed({ limit: 50, cursor: ids[1], createdBefore: new Date(now - 15 * MINUTE) })).toEqual([0]);
    expect(await listed({ limit: 50, tag: { team: 'a' } })).toEqual([1, 0]);
    expect(await listed({ limit: 50, tag: { team: 'a', env: 'prod' } })).toEqual([1]);
    expect(await listed({ limit: 50, tag: null })).toEqual([4, 3, 2, 1, 0]);
    expect(await listed({ limit: 50, workflow: 'mail', status: 'waiting', tag: { team: 'a' } })).toEqual([]);
  });

  it('finds the runs of idempotency keys, each with its workflow', async () => {
    const found = await runsByIdempotencyKeys(db.db, [
      { workflow: 'echo', idempotencyKey: 'order-1' },
      { workflow: 'mail', idempotencyKey: 'order-1' },
      { workflow: 'mail', idempotencyKey: 'order-2' },
    ]);
    expect(found.map((run) => ids.indexOf(run.id)).sort()).toEqual([0, 4]);
  });

  it('tells which of some queues are paused, by version or by shard', async () => {
    await db.sql(`INSERT INTO workflow_controls (workflow, version, paused, paused_shards) VALUES ('echo', '2', false, '{eu}'), ('mail', '1', true, '{}')`);
    const paused = await pausedQueues(db.db, ['echo:1', 'echo:2', 'echo:2:eu', 'echo:2:us', 'mail:1', 'mail:1:eu']);
    expect(paused.sort()).toEqual(['echo:2:eu', 'mail:1', 'mail:1:eu']);
  });

  it("pages through a run's history, oldest first, by position as a number", async () => {
    const runId = ids[2];
    for (let revision = 1; revision <= 11; revision++) {
      await db.sql(`INSERT INTO run_transitions (run_id, from_status, to_status, revision, worker_id) VALUES ($1, 'queued', 'running', $2, 'w')`, [
        runId,
        revision,
      ]);
    }
    const all = await transitionsAfter(db.db, runId, '0', 100);
    expect(all.map((row) => row.revision)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(all[0]).toMatchObject({ from: 'queued', to: 'running', workerId: 'w' });
    expect(all[0].at).toBeInstanceOf(Date);
    const page = await transitionsAfter(db.db, runId, all[8].id, 2);
    expect(page.map((row) => row.revision)).toEqual([10, 11]);
    expect(await transitionsAfter(db.db, ids[0], '0', 10)).toEqual([]);
  });
});
