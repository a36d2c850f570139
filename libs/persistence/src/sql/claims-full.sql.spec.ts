import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { queueName } from '@nest-durable/common';
import { eventually } from '../../../../test/support/poll';
import { createSqlTestDatabase, holdTransaction, newRun, type SqlTestDatabase } from '../../../../test/support/sql-database';
import { claimRunsFull } from './claims-full.sql';
import { type ClaimParams, type ClaimRow, claimRunsCommon } from './claims.sql';
import { refreshClaims } from './heartbeats.sql';
import { insertChildRun, startRuns } from './runs-start.sql';
import { insertChildStep, suspendRun, upsertWaitingStep } from './steps.sql';

/** A claim of `workflow`'s queue (version 1) by worker-a, with `overrides`. */
const claimOf = (workflow: string, overrides: Partial<ClaimParams> = {}): ClaimParams => ({
  queues: [{ queue: queueName(workflow, '1'), limit: 10 }],
  limit: 10,
  workerId: 'worker-a',
  buildId: 'build-a',
  claimMinIdleTimeMs: 60_000,
  maxStalls: 3,
  ...overrides,
});

describe('the claim statement, full form (claimRunsFull)', () => {
  let database: SqlTestDatabase;

  beforeAll(async () => {
    database = await createSqlTestDatabase('claims_full_sql');
  });

  afterAll(async () => {
    await database?.close();
  });

  /** Makes the claim of `runId` look gone idle: no heartbeat for an hour. */
  const goIdle = (runId: string) => database.sql(`UPDATE runs SET heartbeat_at = now() - interval '1 hour' WHERE id = $1`, [runId]);

  it('takes the same runs, in the same order, as the common form where both apply (no control, no claim gone idle)', async () => {
    const runs = [
      newRun('both'),
      newRun('both', { priority: 5 }),
      newRun('both', { priority: -1 }),
      newRun('both'),
      newRun('both', { runAt: new Date(Date.now() + 3_600_000) }),
    ];
    await startRuns(database.db, runs.slice(0, 2));
    await startRuns(database.db, runs.slice(2));
    /** What a claim takes, in a transaction rolled back after it (so both forms meet the same rows). */
    const taken = async (claim: typeof claimRunsFull) => {
      let rows: ClaimRow[] = [];
      await database.db
        .transaction(async (tx) => {
          rows = await claim(tx, claimOf('both', { queues: [{ queue: 'both:1', limit: 3 }] }));
          throw new Error('roll back');
        })
        .catch(() => undefined);
      return rows.map((row) => [row.kind, row.id, row.revision, row.attempt]);
    };

    const common = await taken(claimRunsCommon);
    expect(common).toEqual([
      ['run', runs[1].id, 1, 1],
      ['run', runs[0].id, 1, 1],
      ['run', runs[3].id, 1, 1],
    ]);
    expect(await taken(claimRunsFull)).toEqual(common);
  });

  it("takes over a claim gone idle before a ready run, counting the stall, fencing the old holder off and recording the new holder's build id", async () => {
    const [held, ready] = [newRun('takeover'), newRun('takeover')];
    await startRuns(database.db, [held]);
    await claimRunsFull(database.db, claimOf('takeover'));
    expect(await database.sql(`SELECT build_id FROM runs WHERE id = $1`, [held.id])).toEqual([{ build_id: 'build-a' }]);
    await startRuns(database.db, [ready]);
    await goIdle(held.id);

    const rows = await claimRunsFull(
      database.db,
      claimOf('takeover', { workerId: 'worker-b', buildId: 'build-b', queues: [{ queue: 'takeover:1', limit: 1 }] }),
    );

    expect(rows.map((row) => [row.kind, row.id, row.revision, row.readyForSeconds])).toEqual([['run', held.id, 2, null]]);
    expect(await database.sql(`SELECT status, revision, claimed_by, build_id, stalls FROM runs WHERE id = $1`, [held.id])).toEqual([
      { status: 'running', revision: 2, claimed_by: 'worker-b', build_id: 'build-b', stalls: 1 },
    ]);
    expect(await database.sql(`SELECT status FROM runs WHERE id = $1`, [ready.id])).toEqual([{ status: 'queued' }]);
    expect(await refreshClaims(database.db, [{ id: held.id, expectedRevision: 1 }])).toEqual([held.id]);
  });

  it('fails a run idle past the stall limit as stalled instead, and wakes the parent waiting on it', async () => {
    const parent = newRun('stall-parent');
    const child = newRun('stall-child', { parentId: parent.id });
    await startRuns(database.db, [parent]);
    await claimRunsFull(database.db, claimOf('stall-parent'));
    await database.db.transaction(async (tx) => {
      await insertChildRun(tx, child);
      await insertChildStep(tx, { runId: parent.id, key: 'child#1', seq: 0, name: 'child', wait: true, childId: child.id, timeoutMs: null });
      await suspendRun(tx, parent.id, null);
    });
    await claimRunsFull(database.db, claimOf('stall-child'));
    await goIdle(child.id);
    await database.sql(`UPDATE runs SET stalls = 3 WHERE id = $1`, [child.id]);

    const rows = await claimRunsFull(database.db, claimOf('stall-child', { workerId: 'worker-b' }));

    expect(rows.map((row) => [row.kind, row.id, row.revision])).toEqual([['stalled', child.id, 2]]);
    const [failed] = await database.sql<{ status: string; error: { name: string; reason: string } }>(`SELECT status, error FROM runs WHERE id = $1`, [
      child.id,
    ]);
    expect(failed).toMatchObject({ status: 'failed', error: { name: 'RunStalledError', reason: 'stalled' } });
    expect(await database.sql(`SELECT status, output->>'status' AS child FROM tasks WHERE run_id = $1`, [parent.id])).toEqual([
      { status: 'completed', child: 'failed' },
    ]);
    expect(await database.sql(`SELECT status, due_at <= now() AS due FROM runs WHERE id = $1`, [parent.id])).toEqual([{ status: 'waiting', due: true }]);
  });

  it('takes nothing of a paused version and drops its wake-ups instead of handing them back', async () => {
    await startRuns(database.db, [newRun('paused')]);
    await database.sql(`INSERT INTO workflow_controls (workflow, version, paused) VALUES ('paused', '1', true)`);

    const rows = await claimRunsFull(database.db, claimOf('paused', { queues: [{ queue: 'paused:1', limit: 1, wakeups: ['w#1'] }] }));

    expect(rows).toEqual([]);
    expect(await database.sql(`SELECT status FROM runs WHERE workflow = 'paused'`)).toEqual([{ status: 'queued' }]);
  });

  it('schedules a wake-up due now when a rate-limited claim leaves whole tokens and runs waiting (it had fewer wake-ups than tokens)', async () => {
    // A Redis take brings one wake-up per run it may take. One that arrives late (its bucket refilled past a
    // token meanwhile) takes one run and leaves a whole token: no claim would ever come for it but this wake-up.
    await database.sql(`INSERT INTO workflow_controls (workflow, version, api_rate_per_second) VALUES ('late', '1', 5)`);
    await startRuns(
      database.db,
      [0, 1, 2, 3].map(() => newRun('late')),
    );

    await database.db.transaction(async (tx) => {
      await tx.query(`SET LOCAL wf.dispatch = 'redis-zset'`);
      const rows = await claimRunsFull(tx, claimOf('late', { queues: [{ queue: 'late:1', limit: 1, wakeups: ['w'] }], limit: 1 }));
      expect(rows.filter((row) => row.kind === 'run')).toHaveLength(1);
    });

    expect(await database.sql(`SELECT rate_wakeup_at <= now() AS due FROM workflow_controls WHERE workflow = 'late'`)).toEqual([{ due: true }]);
    expect(await database.sql(`SELECT queue, next_attempt_at <= now() AS due FROM outbox WHERE queue = 'late:1'`)).toEqual([{ queue: 'late:1', due: true }]);
  });

  it('schedules a wake-up due now after a takeover that left whole tokens, and when the one scheduled is later than now (the rate was raised since)', async () => {
    await database.sql(`INSERT INTO workflow_controls (workflow, version, api_rate_per_second) VALUES ('again', '1', 5)`);
    const [gone, waiting] = [newRun('again'), newRun('again'), newRun('again')];
    await startRuns(database.db, [gone]);
    await claimRunsFull(database.db, claimOf('again', { limit: 1, queues: [{ queue: 'again:1', limit: 1 }] }));
    await goIdle(gone.id);
    await startRuns(database.db, [waiting, newRun('again')]);
    // A wake-up scheduled for an hour from now, as at a rate of one an hour before it was raised.
    await database.sql(`UPDATE workflow_controls SET tokens = NULL, rate_wakeup_at = now() + interval '1 hour' WHERE workflow = 'again'`);

    // Its one wake-up takes the idle run over (takeovers take no token): the waiting runs need a wake-up of their own.
    const rows = await claimRunsFull(database.db, claimOf('again', { queues: [{ queue: 'again:1', limit: 1, wakeups: ['w'] }], limit: 1 }));

    expect(rows.filter((row) => row.kind === 'run').map((row) => row.id)).toEqual([gone.id]);
    expect(await database.sql(`SELECT rate_wakeup_at <= now() AS due FROM workflow_controls WHERE workflow = 'again'`)).toEqual([{ due: true }]);
  });

  it('schedules no wake-up when a rate-limited claim took nothing for rows locked elsewhere (its wake-ups are handed back instead: no spin)', async () => {
    await database.sql(`INSERT INTO workflow_controls (workflow, version, api_rate_per_second) VALUES ('locked', '1', 5)`);
    const [run] = [newRun('locked')];
    await startRuns(database.db, [run]);
    const lock = await holdTransaction(database.db, (tx) => tx.query(`SELECT 1 FROM runs WHERE id = $1 FOR UPDATE`, [run.id]));

    const rows = await claimRunsFull(database.db, claimOf('locked', { queues: [{ queue: 'locked:1', limit: 1, wakeups: ['w'] }], limit: 1 }));
    await lock.commit();

    expect(rows).toMatchObject([{ kind: 'requeue', queue: 'locked:1', wakeup: 'w' }]);
    expect(await database.sql(`SELECT rate_wakeup_at FROM workflow_controls WHERE workflow = 'locked'`)).toEqual([{ rate_wakeup_at: null }]);
  });

  it("holds a version to its concurrency limit across two claims at once: the second waits for the first's admission, then finds no slot", async () => {
    await startRuns(database.db, [newRun('capped'), newRun('capped')]);
    await database.sql(`INSERT INTO workflow_controls (workflow, version, api_concurrency) VALUES ('capped', '1', 1)`);

    const first = await holdTransaction(database.db, (tx) => claimRunsFull(tx, claimOf('capped')));
    const second = claimRunsFull(database.db, claimOf('capped', { workerId: 'worker-b' }));
    await database.someoneWaitsForALock();
    await first.commit();

    expect(first.result.filter((row) => row.kind === 'run')).toHaveLength(1);
    expect(await second).toEqual([]);
    expect(await database.sql(`SELECT status, count(*)::int AS n FROM runs WHERE workflow = 'capped' GROUP BY status ORDER BY status`)).toEqual([
      { status: 'queued', n: 1 },
      { status: 'running', n: 1 },
    ]);
  });

  it("gives a key's token that came while a claim waited for the version's lock to the delayed run due at it, not to a run started after", async () => {
    await database.sql(`INSERT INTO workflow_controls (workflow, version, api_rate_per_key_per_second) VALUES ('keyline', '1', 1)`);
    const [first, delayed, later] = [0, 1, 2].map(() => newRun('keyline', { concurrencyKey: 'k' }));
    for (const run of [first, delayed]) await startRuns(database.db, [run]);
    // The bucket holds one token (1/s): the first run now, the other delayed to the next token, a second on.
    expect((await claimRunsFull(database.db, claimOf('keyline'))).map((row) => row.id)).toEqual([first.id]);
    await startRuns(database.db, [later]);
    // Another claimer holds the version's admission: this claim begins before the delayed run is due, and
    // counts its key's tokens once it has the lock, after that due time.
    const admission = await holdTransaction(database.db, (tx) => tx.query(`SELECT 1 FROM workflow_controls WHERE workflow = 'keyline' FOR UPDATE`));
    const claim = claimRunsFull(database.db, claimOf('keyline'));
    await database.someoneWaitsForALock();
    await eventually('the delayed run to be due', async () => {
      const [{ due }] = await database.sql<{ due: boolean }>(`SELECT due_at < clock_timestamp() AS due FROM runs WHERE id = $1`, [delayed.id]);
      return due;
    });
    await admission.commit();

    expect((await claim).map((row) => row.id)).toEqual([delayed.id]);
    expect(await database.sql(`SELECT status, rate_delayed, due_at > now() AS late FROM runs WHERE id = $1`, [later.id])).toEqual([
      { status: 'queued', rate_delayed: true, late: true },
    ]);
  });

  it("leaves a wait group's branch steps waiting, as the common form does", async () => {
    const run = newRun('full-group-branches');
    await startRuns(database.db, [run]);
    await claimRunsFull(database.db, claimOf('full-group-branches'));
    await database.db.transaction(async (tx) => {
      await upsertWaitingStep(tx, { runId: run.id, key: 'group:race#1/0', kind: 'sleep', seq: 0, name: 'race', attempts: 0, delayMs: 0 });
      await upsertWaitingStep(tx, { runId: run.id, key: 'nap#1', kind: 'sleep', seq: 1, name: 'nap', attempts: 0, delayMs: 0 });
      await suspendRun(tx, run.id, 0);
    });

    const [taken] = await claimRunsFull(database.db, claimOf('full-group-branches'));

    expect(taken).toMatchObject({ kind: 'run', id: run.id, tasks: [{ key: 'nap#1', status: 'completed' }] });
    expect(await database.sql(`SELECT key, status FROM tasks WHERE run_id = $1 ORDER BY key`, [run.id])).toEqual([
      { key: 'group:race#1/0', status: 'waiting' },
      { key: 'nap#1', status: 'completed' },
    ]);
  });
});
