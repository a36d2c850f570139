import { RUNS_READY_CHANNEL } from './channels';
import type { RegisteredWorkflow } from '@nest-durable/common';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from 'pg';
import { createSqlTestDatabase, holdTransaction, type SqlTestDatabase } from '../../../../test/support/sql-database';
import { eventually } from '../../../../test/support/poll';
import { insertRun } from '../../../../test/support/seed-rows';
import {
  changedCodeLimits,
  countRunningSlots,
  findWorkflowControl,
  listWorkflowControls,
  lockFlowVersion,
  pauseWorkflow,
  recordCodeLimits,
  resumeWorkflow,
  setApiLimits,
  wakeWorkflowQueues,
} from './workflow-controls.sql';

describe('workflow-controls.sql', () => {
  let db: SqlTestDatabase;
  const declaring = (name: string, limits: RegisteredWorkflow['limits']): RegisteredWorkflow => ({ name, version: '1', shards: [], limits });
  const control = (name: string) => findWorkflowControl(db.db, name, '1');

  beforeAll(async () => {
    db = await createSqlTestDatabase('workflow_controls_sql');
  });

  afterAll(async () => {
    await db?.close();
  });

  it('pauses a version or its shards, and resumes one shard or all of it', async () => {
    expect(await control('paused')).toBeUndefined();
    await pauseWorkflow(db.db, 'paused', '1', 'eu');
    await pauseWorkflow(db.db, 'paused', '1', 'us');
    await pauseWorkflow(db.db, 'paused', '1', 'eu');
    expect(await control('paused')).toMatchObject({ name: 'paused', version: '1', paused: false, pausedShards: ['eu', 'us'] });
    await resumeWorkflow(db.db, 'paused', '1', 'eu');
    expect(await control('paused')).toMatchObject({ paused: false, pausedShards: ['us'] });
    await pauseWorkflow(db.db, 'paused', '1', undefined);
    expect(await control('paused')).toMatchObject({ paused: true, pausedShards: ['us'] });
    await resumeWorkflow(db.db, 'paused', '1', undefined);
    expect(await control('paused')).toMatchObject({ paused: false, pausedShards: [] });
  });

  it('finds the limits declared in code that changed, records them, and then finds none', async () => {
    const workflows = [
      declaring('coded', { concurrency: 2, ratePerSecond: 5 }),
      declaring('coded', { concurrency: 2, ratePerSecond: 5 }),
      declaring('plain', {}),
    ];
    expect(await changedCodeLimits(db.db, workflows)).toEqual([{ workflow: 'coded', version: '1' }]);
    expect(await recordCodeLimits(db.db, workflows)).toEqual([{ workflow: 'coded', version: '1' }]);
    expect(await control('coded')).toMatchObject({ codeConcurrency: 2, codeRatePerSecond: 5, concurrency: 2, ratePerSecond: 5, apiConcurrency: null });
    expect(await control('plain')).toBeUndefined();
    expect(await changedCodeLimits(db.db, workflows)).toEqual([]);
    expect(await changedCodeLimits(db.db, [declaring('coded', { concurrency: 3, ratePerSecond: 5 })])).toEqual([{ workflow: 'coded', version: '1' }]);
  });

  it('lets limits set through the API win over the code, and refills the bucket when the effective rate changes', async () => {
    await db.sql(`UPDATE workflow_controls SET tokens = 0.5 WHERE workflow = 'coded'`);
    await setApiLimits(db.db, 'coded', '1', { concurrency: 7 });
    expect(await control('coded')).toMatchObject({ apiConcurrency: 7, concurrency: 7, ratePerSecond: 5 });
    const tokens = async () => (await db.sql<{ tokens: number | null }>(`SELECT tokens FROM workflow_controls WHERE workflow = 'coded'`))[0].tokens;
    expect(await tokens()).toBe(0.5);
    await setApiLimits(db.db, 'coded', '1', { ratePerSecond: 1 });
    expect(await control('coded')).toMatchObject({ apiConcurrency: null, concurrency: 2, ratePerSecond: 1 });
    expect(await tokens()).toBeNull();
    // The code changing a rate the API overrides leaves the bucket alone; the API's rate still applies.
    await db.sql(`UPDATE workflow_controls SET tokens = 0.5 WHERE workflow = 'coded'`);
    await recordCodeLimits(db.db, [declaring('coded', { concurrency: 2, ratePerSecond: 9 })]);
    expect(await tokens()).toBe(0.5);
  });

  it('makes the running runs of a version with a concurrency limit hold a slot, and lists them', async () => {
    const running = await insertRun(db, { workflow: 'coded', status: 'running' });
    const other = await insertRun(db, { workflow: 'plain', status: 'running' });
    await countRunningSlots(db.db, 'coded', '1');
    await countRunningSlots(db.db, 'plain', '1');
    expect(await db.sql(`SELECT id, holds_slot FROM runs WHERE id IN ($1, $2) ORDER BY workflow`, [running, other])).toEqual([
      { id: running, holds_slot: true },
      { id: other, holds_slot: false },
    ]);
    await db.sql(`INSERT INTO workflows (workflow, version) VALUES ('plain', '1'), ('registered', '1')`);
    const listed = await listWorkflowControls(db.db);
    expect(listed.map((row) => [row.name, row.running, row.concurrency])).toEqual([
      ['coded', 1, 2],
      ['paused', 0, null],
      ['plain', 0, null],
      ['registered', 0, null],
    ]);
  });

  it("waits for the claims in flight (the version's shared lock) before a change goes on", async () => {
    const claim = await holdTransaction(db.db, (tx) => tx.query(`SELECT pg_advisory_xact_lock_shared(flow_version_lock('coded', '1'))`));
    const change = db.db.transaction((tx) => lockFlowVersion(tx, 'coded', '1'));
    try {
      await db.someoneWaitsForALock();
    } finally {
      await claim.commit();
    }
    await change;
  });

  it('wakes each queue of the version with runs due once, and writes their wake-ups when the session publishes', async () => {
    const listener = new Client({ connectionString: db.url });
    const heard: string[] = [];
    await listener.connect();
    try {
      listener.on('notification', (message) => heard.push(message.payload ?? ''));
      await listener.query(`LISTEN ${RUNS_READY_CHANNEL}`);
      const due = [await insertRun(db, { workflow: 'woken' }), await insertRun(db, { workflow: 'woken', status: 'waiting', dueAt: new Date(Date.now() - 1) })];
      await insertRun(db, { workflow: 'woken', shard: 'eu' });
      await insertRun(db, { workflow: 'woken', dueAt: new Date(Date.now() + 60_000) });
      await insertRun(db, { workflow: 'woken', status: 'waiting', dueAt: 'infinity', shard: 'us' });
      await insertRun(db, { workflow: 'woken', status: 'running', shard: 'ap' });

      await wakeWorkflowQueues(db.db, 'woken', '1');
      await eventually('a notification per queue with runs due', async () => heard.length >= 2);
      expect(heard.sort()).toEqual(['woken:1', 'woken:1:eu']);
      expect(await db.sql(`SELECT count(*)::int AS n FROM outbox`)).toEqual([{ n: 0 }]);

      await db.db.transaction(async (tx) => {
        await tx.query(`SET LOCAL wf.dispatch = 'redis-streams'`);
        await wakeWorkflowQueues(tx, 'woken', '1');
      });
      const written = await db.sql<{ run_id: string }>(`SELECT run_id FROM outbox WHERE queue = 'woken:1' ORDER BY run_id`);
      expect(written.map((row) => row.run_id)).toEqual(due.sort());
      expect(await db.sql(`SELECT count(*)::int AS n FROM outbox`)).toEqual([{ n: 3 }]);
    } finally {
      await listener.end();
    }
  });
});
