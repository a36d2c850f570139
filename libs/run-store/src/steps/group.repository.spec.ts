import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { GroupRequest } from '@nest-durable/common';
import { deliverEvent, storeEvent } from '@app/persistence';
import { createSqlTestDatabase, newRun, type SqlTestDatabase, startClaimed } from '../../../../test/support/sql-database';
import { decide, GroupRepository } from './group.repository';

describe('how a wait group is decided (GroupRepository)', () => {
  const branches = (...settled: (number | null)[]) => settled.map((settledAt, index) => ({ settledAt, index }));

  it('any: the branch that finished first, the first in the list among equals; none yet: wait', () => {
    expect(decide('any', branches(null, 30, 20))).toEqual({ mode: 'any', index: 2 });
    expect(decide('any', branches(null, 20, 20))).toEqual({ mode: 'any', index: 1 });
    expect(decide('any', branches(null, null))).toBeUndefined();
  });

  it('all: once every branch finished', () => {
    expect(decide('all', branches(1, null))).toBeUndefined();
    expect(decide('all', branches(1, 2))).toEqual({ mode: 'all' });
  });

  describe('against the database', () => {
    let database: SqlTestDatabase;
    let groups: GroupRepository;

    beforeAll(async () => {
      database = await createSqlTestDatabase('group_repository');
      groups = new GroupRepository(database.db);
    });

    afterAll(async () => {
      await database?.close();
    });

    /** What a claim does to a waiting run: running at revision + 1, its steps still waiting resolved but a group's branches (claims.sql.ts). */
    const claim = async (runId: string) => {
      await database.sql(`UPDATE runs SET status = 'running', revision = revision + 1, due_at = now() WHERE id = $1`, [runId]);
      await database.sql(
        `UPDATE tasks SET status = 'completed', output = CASE kind WHEN 'sleep' THEN NULL ELSE '{"timedOut": true}'::jsonb END WHERE run_id = $1 AND status = 'waiting' AND NOT starts_with(key, 'group:')`,
        [runId],
      );
    };
    const group = (mode: 'any' | 'all', expectedRevision: number, branchList: GroupRequest['branches']): GroupRequest => ({
      expectedRevision,
      key: 'group:g#1',
      seq: 0,
      name: 'g',
      mode,
      branches: branchList,
    });

    it('any: the branch whose event was sent first wins though both were delivered; the loser’s event is kept again', async () => {
      const run = newRun('groups-any');
      await startClaimed(database.db, run);
      const request = group('any', 1, [
        { kind: 'event', name: 'x' },
        { kind: 'event', name: 'y', match: { ok: true } },
      ]);
      expect(await groups.wait(run.id, request)).toMatchObject({ suspended: true });
      await storeEvent(database.db, run.id, 'y', { ok: false }, null);
      for (const [name, data] of [
        ['y', { ok: true }],
        ['x', 'late'],
      ] as const) {
        const key = await deliverEvent(database.db, run.id, name, data);
        await storeEvent(database.db, run.id, name, data, key ?? null);
      }
      await claim(run.id);

      const resolved = await groups.wait(run.id, { ...request, expectedRevision: 3 });
      expect(resolved).toMatchObject({ suspended: false, task: { kind: 'group', output: { mode: 'any', index: 1 } } });
      expect(resolved.branches.map((b) => [b.key, b.output])).toEqual([
        ['group:g#1/0', { lost: true }],
        ['group:g#1/1', { timedOut: false, data: { ok: true } }],
      ]);
      expect(await database.sql(`SELECT name, data, consumed_by FROM run_events WHERE run_id = $1 ORDER BY id`, [run.id])).toEqual([
        { name: 'y', data: { ok: false }, consumed_by: null },
        { name: 'y', data: { ok: true }, consumed_by: 'group:g#1/1' },
        { name: 'x', data: 'late', consumed_by: null },
      ]);
      // Asked again (a re-execution), it answers the recorded outcome.
      expect(await groups.wait(run.id, { ...request, expectedRevision: 3 })).toMatchObject({ suspended: false, task: { output: { index: 1 } } });
    });

    it('all: after an early wake the run waits again until the last branch finishes (a sleep keeps its wake time), then no step waits', async () => {
      const run = newRun('groups-all');
      await startClaimed(database.db, run);
      const request = group('all', 1, [
        { kind: 'event', name: 'a' },
        { kind: 'sleep', delayMs: 60_000 },
      ]);
      expect(await groups.wait(run.id, request)).toMatchObject({ suspended: true });
      await storeEvent(database.db, run.id, 'a', 1, (await deliverEvent(database.db, run.id, 'a', 1)) ?? null);
      await claim(run.id);

      expect(await groups.wait(run.id, { ...request, expectedRevision: 3 })).toMatchObject({
        suspended: true,
        task: { key: 'group:g#1/1', status: 'waiting' },
      });
      expect(await database.sql(`SELECT status, due_at > now() + interval '50 seconds' AS later FROM runs WHERE id = $1`, [run.id])).toEqual([
        { status: 'waiting', later: true },
      ]);

      // The sleep's time comes: the group resolves, and no step waits any more.
      await database.sql(`UPDATE tasks SET wake_at = now() WHERE run_id = $1 AND key = 'group:g#1/1'`, [run.id]);
      await claim(run.id);
      expect(await groups.wait(run.id, { ...request, expectedRevision: 5 })).toMatchObject({ suspended: false, task: { output: { mode: 'all' } } });
      expect(await database.sql(`SELECT key, status, output FROM tasks WHERE run_id = $1 ORDER BY key`, [run.id])).toEqual([
        { key: 'group:g#1', status: 'completed', output: { mode: 'all' } },
        { key: 'group:g#1/0', status: 'completed', output: { timedOut: false, data: 1 } },
        { key: 'group:g#1/1', status: 'completed', output: null },
      ]);
    });
  });
});
