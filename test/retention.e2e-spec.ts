import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { LeaderElection } from '@app/locking';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { RetentionDaemon } from '../apps/coordinator/src/retention/retention.daemon';
import { RetentionRepository } from '../apps/coordinator/src/retention/retention.repository';
import { defineWorkflow } from '@nest-durable/workflow';
import { type RunningCoordinator, startCoordinator, startCustomWorker } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { RUN_TABLES } from '@app/persistence';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const YEAR = 365 * 24 * HOUR;

interface RunSpec {
  workflow?: string;
  version?: string;
  status: 'queued' | 'running' | 'waiting' | 'completed' | 'failed' | 'cancelled';
  /** How long ago it finished (finished runs only). */
  finishedAgoMs?: number;
  parentId?: string;
}

/**
 * Retention against real PostgreSQL: what is past its window goes (finished runs with their steps,
 * transitions and events, sent outbox rows, dead letters), and nothing else. The state is written
 * directly (runs finished long ago cannot be made any other way in a test); each test runs a sweep
 * itself, except the one that checks the daemon's own schedule.
 */
describe('retention', () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator;
  let daemon: RetentionDaemon;

  beforeAll(async () => {
    db = await createTestDatabase('retention');
    coordinator = await startCoordinator(db.url, {
      runRetentionMs: HOUR,
      runRetentionOverrides: { 'short-lived': MINUTE, 'kept-forever': 0 },
      retentionIntervalMs: 3_600_000, // the sweep it runs on taking the lead finds nothing; tests sweep themselves
      retentionBatchSize: 3,
      leaderCheckIntervalMs: 100,
    });
    daemon = coordinator.app.get(RetentionDaemon);
    await eventually('the coordinator to lead retention', async () => coordinator.app.get(LeaderElection).leading.includes('retention'));
    // The sweep it runs on taking the lead must be over before a test writes runs it would delete.
    await daemon.idle();
  });

  afterEach(async () => {
    await db.sql(`TRUNCATE ${RUN_TABLES.join(', ')}, outbox, dead_letters CASCADE`);
  });

  afterAll(async () => {
    await coordinator?.close();
    await db?.drop();
  });

  /** A run with one step, one transition and one event, as retention finds them. */
  const insertRun = async ({ workflow = 'echo', version = '1', status, finishedAgoMs, parentId }: RunSpec): Promise<string> => {
    const id = randomUUID();
    await db.sql(
      `INSERT INTO runs (id, workflow, version, queue, status, parent_id, heartbeat_at, finished_at)
       VALUES ($1, $2, $6, $2 || ':' || $6, $3, $4, CASE WHEN $3 = 'running' THEN now() END,
               CASE WHEN $5::float8 IS NOT NULL THEN now() - $5::float8 * interval '1 millisecond' END)`,
      [id, workflow, status, parentId ?? null, finishedAgoMs ?? null, version],
    );
    await db.sql(`INSERT INTO tasks (run_id, key, kind, seq, name, status, attempts) VALUES ($1, 'step#1', 'task', 0, 'step', 'completed', 1)`, [id]);
    await db.sql(`INSERT INTO run_transitions (run_id, from_status, to_status, revision) VALUES ($1, NULL, 'queued', 0)`, [id]);
    await db.sql(`INSERT INTO run_events (run_id, name) VALUES ($1, 'ping')`, [id]);
    return id;
  };
  const remainingRuns = async () => (await db.sql<{ id: string }>('SELECT id FROM runs ORDER BY id')).map((row) => row.id).sort();
  /** Rows of the runs' steps, transitions and events left (by run id, any run). */
  const leftovers = async (ids: string[]) =>
    (
      await db.sql<{ n: number }>(
        `SELECT ((SELECT count(*) FROM tasks WHERE run_id = ANY($1::uuid[])) + (SELECT count(*) FROM run_transitions WHERE run_id = ANY($1::uuid[]))
              + (SELECT count(*) FROM run_events WHERE run_id = ANY($1::uuid[])))::int AS n`,
        [ids],
      )
    )[0].n;
  const deletedMetric = async (kind: string) => {
    const text = (await request(coordinator.url).get('/metrics').expect(200)).text;
    return Number(new RegExp(`^wf_retention_deleted_total\\{kind="${kind}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
  };

  it('deletes finished runs past the window with their steps, transitions and events, batch after batch, and nothing else', async () => {
    const doomed = [
      ...(await Promise.all(Array.from({ length: 5 }, () => insertRun({ status: 'completed', finishedAgoMs: 2 * HOUR })))),
      await insertRun({ status: 'failed', finishedAgoMs: YEAR }),
      await insertRun({ status: 'cancelled', finishedAgoMs: HOUR + MINUTE }),
    ];
    const kept = [
      await insertRun({ status: 'completed', finishedAgoMs: HOUR - MINUTE }),
      await insertRun({ status: 'failed', finishedAgoMs: 0 }),
      await insertRun({ status: 'queued' }),
      await insertRun({ status: 'running' }),
      await insertRun({ status: 'waiting' }),
    ];
    // Unfinished runs created long ago are not finished for retention's purpose, however old.
    await db.sql(`UPDATE runs SET created_at = now() - interval '2 years', updated_at = now() - interval '2 years' WHERE id = ANY($1::uuid[])`, [
      kept.slice(2),
    ]);
    const metricBefore = await deletedMetric('runs');

    expect(await daemon.sweep()).toEqual({ runs: doomed.length, outbox: 0, deadLetters: 0 });
    expect(await remainingRuns()).toEqual([...kept].sort());
    expect(await leftovers(doomed)).toBe(0);
    expect(await leftovers(kept)).toBe(3 * kept.length);
    expect(await deletedMetric('runs')).toBe(metricBefore + doomed.length);
    // Its last batch came back short: caught up (how far behind a batch is, is retention.sql.spec's and the daemon's spec's).
    expect((await request(coordinator.url).get('/metrics').expect(200)).text).toMatch(/^wf_retention_overdue_seconds 0$/m);
    expect(await daemon.sweep()).toEqual({ runs: 0, outbox: 0, deadLetters: 0 });
  });

  it("applies a workflow's own window instead of the default: shorter, or 0 to keep its runs", async () => {
    const shortLivedOld = await insertRun({ workflow: 'short-lived', status: 'completed', finishedAgoMs: 2 * MINUTE });
    const shortLivedNew = await insertRun({ workflow: 'short-lived', status: 'completed', finishedAgoMs: 0 });
    const keptForever = await insertRun({ workflow: 'kept-forever', status: 'completed', finishedAgoMs: 10 * YEAR });
    const defaultOld = await insertRun({ status: 'completed', finishedAgoMs: 2 * HOUR });
    const defaultRecent = await insertRun({ status: 'completed', finishedAgoMs: 2 * MINUTE });

    expect((await daemon.sweep()).runs).toBe(2);
    expect(await remainingRuns()).toEqual([shortLivedNew, keptForever, defaultRecent].sort());
    expect(await leftovers([shortLivedOld, defaultOld])).toBe(0);
  });

  it('applies the window a workflow version declares in code, registered by its workers; a configured window wins', async () => {
    const handler = async () => null;
    const worker = await startCustomWorker(coordinator.url, {
      workflows: [
        defineWorkflow({ name: 'declared', version: '1', retentionMs: MINUTE, handler }),
        defineWorkflow({ name: 'declared', version: '2', handler }),
        defineWorkflow({ name: 'short-lived', version: '1', retentionMs: 0, handler }),
        defineWorkflow({ name: 'kept-forever', version: '1', retentionMs: MINUTE, handler }),
      ],
    });
    try {
      await eventually('the worker to register its workflows', async () => {
        const rows = await db.sql<{ workflow: string; version: string; retention_ms: string | null }>(
          'SELECT workflow, version, retention_ms FROM workflows ORDER BY workflow, version',
        );
        return rows.length === 4 && rows;
      });
      expect(await db.sql('SELECT workflow, version, retention_ms::int AS ms FROM workflows ORDER BY workflow, version')).toEqual([
        { workflow: 'declared', version: '1', ms: MINUTE },
        { workflow: 'declared', version: '2', ms: null },
        { workflow: 'kept-forever', version: '1', ms: MINUTE },
        { workflow: 'short-lived', version: '1', ms: 0 },
      ]);
      const run = (workflow: string, version: string) => ({ workflow, status: 'completed' as const, finishedAgoMs: 2 * MINUTE, version });
      const doomed = [await insertRun(run('declared', '1')), await insertRun(run('short-lived', '1'))];
      const kept = [await insertRun(run('declared', '2')), await insertRun(run('kept-forever', '1'))];
      await db.sql(`INSERT INTO dead_letters (origin, ref, queue, reason, message, created_at) VALUES
                    ('outbox', 'a', 'declared:1', 'publish_failed', 'x', now() - interval '2 minutes'),
                    ('outbox', 'b', 'declared:2:eu', 'publish_failed', 'x', now() - interval '2 minutes')`);

      expect(await daemon.sweep()).toEqual({ runs: doomed.length, outbox: 0, deadLetters: 1 });
      expect(await remainingRuns()).toEqual([...kept].sort());
      expect(await db.sql('SELECT queue FROM dead_letters')).toEqual([{ queue: 'declared:2:eu' }]);
    } finally {
      await worker.close();
      await db.sql('TRUNCATE workflows, workers');
    }
  });

  it('keeps every run with RUN_RETENTION_MS=0, except those of a workflow with a window of its own', async () => {
    const repository = coordinator.app.get(RetentionRepository);
    const old = await insertRun({ status: 'completed', finishedAgoMs: 10 * YEAR });
    await insertRun({ workflow: 'short-lived', status: 'completed', finishedAgoMs: 2 * MINUTE });
    expect((await repository.deleteFinishedRuns({ defaultMs: 0, byWorkflow: {} }, 100)).deleted).toBe(0);
    expect((await repository.deleteFinishedRuns({ defaultMs: 0, byWorkflow: { 'short-lived': MINUTE } }, 100)).deleted).toBe(1);
    expect(await remainingRuns()).toEqual([old]);
  });

  it('keeps a tree together while part of it is unfinished, and deletes it once all of it is done and old', async () => {
    // A running parent: its finished child stays (the parent's child step already holds the outcome).
    const runningParent = await insertRun({ status: 'running' });
    const childOfRunning = await insertRun({ status: 'completed', finishedAgoMs: 2 * HOUR, parentId: runningParent });
    await db.sql(
      `INSERT INTO tasks (run_id, key, kind, seq, name, status, attempts, child_id, output)
       VALUES ($1, 'child:c#1', 'child', 1, 'c', 'completed', 1, $2::uuid, jsonb_build_object('childId', $2::text, 'status', 'completed', 'output', 42))`,
      [runningParent, childOfRunning],
    );
    // A finished parent whose child still runs: kept, so the child keeps its parent.
    const parentOfRunning = await insertRun({ status: 'completed', finishedAgoMs: 2 * HOUR });
    const runningChild = await insertRun({ status: 'running', parentId: parentOfRunning });
    // A finished tree, all old: goes whole.
    const doneParent = await insertRun({ status: 'completed', finishedAgoMs: 2 * HOUR });
    const doneChildren = [
      await insertRun({ status: 'completed', finishedAgoMs: 2 * HOUR, parentId: doneParent }),
      await insertRun({ status: 'failed', finishedAgoMs: 3 * HOUR, parentId: doneParent }),
    ];

    expect((await daemon.sweep()).runs).toBe(3);
    expect(await remainingRuns()).toEqual([runningParent, childOfRunning, parentOfRunning, runningChild].sort());
    const [step] = await db.sql<{ output: { output: number } }>(`SELECT output FROM tasks WHERE run_id = $1 AND kind = 'child'`, [runningParent]);
    expect(step.output.output).toBe(42);
    const [link] = await db.sql<{ parent_id: string }>('SELECT parent_id FROM runs WHERE id = $1', [runningChild]);
    expect(link.parent_id).toBe(parentOfRunning);
    expect(await leftovers([doneParent, ...doneChildren])).toBe(0);
  });

  it('deletes sent outbox rows past the window and keeps every row still to be published', async () => {
    const outboxRow = async (status: string, agoMs: number) => {
      const [row] = await db.sql<{ id: string }>(
        `INSERT INTO outbox (run_id, queue, status, next_attempt_at, created_at, updated_at, sent_at)
         VALUES ($1, 'echo:1', $2, now() - $3 * interval '1 millisecond', now() - $3 * interval '1 millisecond', now() - $3 * interval '1 millisecond',
                 CASE WHEN $2 = 'sent' THEN now() - $3 * interval '1 millisecond' END)
         RETURNING id`,
        [randomUUID(), status, agoMs],
      );
      return row.id;
    };
    const oldSent = [await outboxRow('sent', 2 * HOUR), await outboxRow('sent', YEAR), await outboxRow('sent', 3 * HOUR), await outboxRow('sent', 4 * HOUR)];
    const kept = [await outboxRow('sent', MINUTE), await outboxRow('pending', YEAR), await outboxRow('retry', YEAR), await outboxRow('in_flight', YEAR)];

    expect(await daemon.sweep()).toEqual({ runs: 0, outbox: oldSent.length, deadLetters: 0 });
    expect((await db.sql<{ id: string }>('SELECT id FROM outbox ORDER BY id')).map((row) => row.id)).toEqual(kept);
  });

  it("deletes dead letters past their queue's workflow window and keeps recent ones", async () => {
    const deadLetter = async (queue: string, agoMs: number) => {
      const [row] = await db.sql<{ id: string }>(
        `INSERT INTO dead_letters (origin, ref, queue, reason, message, created_at)
         VALUES ('outbox', $1, $2, 'publish_failed', 'redis down', now() - $3 * interval '1 millisecond') RETURNING id`,
        [randomUUID(), queue, agoMs],
      );
      return row.id;
    };
    await deadLetter('echo:1', 2 * HOUR);
    await deadLetter('echo:1:eu', YEAR);
    await deadLetter('short-lived:2', 2 * MINUTE);
    const kept = [await deadLetter('echo:1', MINUTE), await deadLetter('kept-forever:1', YEAR), await deadLetter('short-lived:2', 0)];

    expect(await daemon.sweep()).toEqual({ runs: 0, outbox: 0, deadLetters: 3 });
    expect((await db.sql<{ id: string }>('SELECT id FROM dead_letters ORDER BY id')).map((row) => row.id)).toEqual(kept);
  });

  it('is the only path that deletes history: a direct delete of runs or transitions is still refused', async () => {
    const old = await insertRun({ status: 'completed', finishedAgoMs: 2 * HOUR });
    await expect(db.sql('DELETE FROM run_transitions WHERE run_id = $1', [old])).rejects.toThrow('append-only');
    await expect(db.sql('DELETE FROM runs WHERE id = $1', [old])).rejects.toThrow('delete_runs');
    expect((await daemon.sweep()).runs).toBe(1);
    expect(await leftovers([old])).toBe(0);
    // Retention switched the deletion off again: the guard is back for everything after it.
    const next = await insertRun({ status: 'completed', finishedAgoMs: 0 });
    await expect(db.sql('DELETE FROM run_transitions WHERE run_id = $1', [next])).rejects.toThrow('append-only');
    await expect(db.sql('DELETE FROM runs WHERE id = $1', [next])).rejects.toThrow('delete_runs');
  });

  it('sweeps on its own every RETENTION_INTERVAL_MS, on one coordinator at a time, and moves when that one stops', async () => {
    // A database of its own, so these coordinators contend for the lead only with each other.
    const own = await createTestDatabase('retention_daemon');
    const boot = () => startCoordinator(own.url, { runRetentionMs: HOUR, retentionIntervalMs: 200, leaderCheckIntervalMs: 100 });
    const coordinators = [await boot(), await boot()];
    try {
      const leads = (c: RunningCoordinator) => c.app.get(LeaderElection).leading.includes('retention');
      const leader = await eventually('a coordinator to lead retention', async () => coordinators.find(leads));
      expect(coordinators.filter(leads)).toHaveLength(1);
      const finishedLongAgo = async () => {
        const [row] = await own.sql<{ id: string }>(
          `INSERT INTO runs (id, workflow, version, queue, status, finished_at)
           VALUES (gen_random_uuid(), 'echo', '1', 'echo:1', 'completed', now() - interval '2 hours') RETURNING id`,
        );
        return row.id;
      };
      const gone = (id: string) => async () => (await own.sql('SELECT 1 FROM runs WHERE id = $1', [id])).length === 0;

      await eventually('the leader to delete a run past the window', gone(await finishedLongAgo()), 5_000);
      await leader.close();
      const follower = coordinators.find((c) => c !== leader)!;
      await eventually('the other coordinator to take the lead', async () => leads(follower), 5_000);
      await eventually('the new leader to delete a run past the window', gone(await finishedLongAgo()), 5_000);
    } finally {
      await Promise.all(coordinators.map((c) => c.close().catch(() => undefined)));
      await own.drop();
    }
  });
});
