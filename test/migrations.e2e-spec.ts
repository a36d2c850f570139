import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { MIGRATION_LOCK_KEY, MIGRATIONS } from '@app/persistence';
import { Client } from 'pg';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { IdempotencyKeys1767100000000, IdempotencyKeysCopied1767100000001 } from '../libs/persistence/src/migrations/1767100000000-idempotency-keys';
import { TransitionsKeyedByRun1767200000000 } from '../libs/persistence/src/migrations/1767200000000-transitions-keyed-by-run';
import { EventsAndUpdatesKeyedByRun1767300000000 } from '../libs/persistence/src/migrations/1767300000000-events-and-updates-keyed-by-run';
import { HistoryWithoutForeignKeys1767400000000 } from '../libs/persistence/src/migrations/1767400000000-history-without-foreign-keys';
import { RunShardAndHistoryGuard1764700000000 } from '../libs/persistence/src/migrations/1764700000000-run-shard-and-history-guard';
import { type RunningCoordinator, startCoordinator } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { AppProcess, freePort } from './support/processes';

/** Migrations applied to a database that already holds runs (an upgrade, not a fresh install). */
describe('schema migrations on existing data', () => {
  let db: TestDatabase;
  let keysDb: TestDatabase;
  let gapDb: TestDatabase;
  let transitionsDb: TestDatabase;
  let eventsDb: TestDatabase;
  let lockedDb: TestDatabase;
  let keysGoneDb: TestDatabase;
  let killedDb: TestDatabase;
  let coordinator: RunningCoordinator | undefined;

  beforeAll(async () => {
    [db, keysDb, gapDb, transitionsDb, eventsDb, lockedDb, keysGoneDb, killedDb] = await Promise.all([
      createTestDatabase('migrations'),
      createTestDatabase('migrations_keys'),
      createTestDatabase('migrations_keys_gap'),
      createTestDatabase('migrations_transitions_key'),
      createTestDatabase('migrations_events_key'),
      createTestDatabase('migrations_key_swap_waits'),
      createTestDatabase('migrations_history_keys_gone'),
      createTestDatabase('migrations_killed_build'),
    ]);
  });

  afterAll(async () => {
    await coordinator?.close();
    await Promise.all([
      db?.drop(),
      keysDb?.drop(),
      gapDb?.drop(),
      transitionsDb?.drop(),
      eventsDb?.drop(),
      lockedDb?.drop(),
      keysGoneDb?.drop(),
      killedDb?.drop(),
    ]);
  });

  /** Migrates `url` up to (not including) `migration`, and runs `then` on it. */
  async function migrateUpTo(url: string, migration: (typeof MIGRATIONS)[number], then: (previous: DataSource) => Promise<unknown>): Promise<void> {
    const previous = new DataSource({ type: 'postgres', url, migrations: MIGRATIONS.slice(0, MIGRATIONS.indexOf(migration)) });
    await previous.initialize();
    try {
      await previous.runMigrations({ transaction: 'each' });
      await then(previous);
    } finally {
      await previous.destroy();
    }
  }

  it('gives runs started before the shard column the shard of their queue name', async () => {
    await migrateUpTo(db.url, RunShardAndHistoryGuard1764700000000, (previous) =>
      previous.query(`INSERT INTO runs (id, workflow, version, queue, status) VALUES
        ('01a22c37-316c-762f-a717-000000000001', 'echo', '1', 'echo:1:eu-west', 'queued'),
        ('01a22c37-316c-762f-a717-000000000002', 'echo', '1', 'echo:1', 'queued')`),
    );

    coordinator = await startCoordinator(db.url);
    expect(await db.sql('SELECT queue, shard FROM runs ORDER BY id')).toEqual([
      { queue: 'echo:1:eu-west', shard: 'eu-west' },
      { queue: 'echo:1', shard: null },
    ]);
  });

  it('copies the keys of runs started before the keys table, finished or not, so a start with one of them gets that run', async () => {
    const old = '01a22c37-316c-762f-a717-000000000003';
    await migrateUpTo(keysDb.url, IdempotencyKeys1767100000000, (previous) =>
      previous.query(`INSERT INTO runs (id, workflow, version, queue, status, idempotency_key) VALUES
        ('${old}', 'echo', '1', 'echo:1', 'completed', 'order-1'),
        ('01a22c37-316c-762f-a717-000000000004', 'echo', '1', 'echo:1', 'queued', 'order-2'),
        ('01a22c37-316c-762f-a717-000000000006', 'echo', '1', 'echo:1', 'queued', NULL)`),
    );

    const upgraded = await startCoordinator(keysDb.url);
    try {
      expect(await keysDb.sql('SELECT workflow, idempotency_key, run_id FROM idempotency_keys ORDER BY idempotency_key')).toEqual([
        { workflow: 'echo', idempotency_key: 'order-1', run_id: old },
        { workflow: 'echo', idempotency_key: 'order-2', run_id: '01a22c37-316c-762f-a717-000000000004' },
      ]);
      // Validated by the third migration.
      expect(await keysDb.sql(`SELECT convalidated FROM pg_constraint WHERE conname = 'idempotency_keys_run_id_fkey'`)).toEqual([{ convalidated: true }]);
      const again = await request(upgraded.url).post('/v1/runs').send({ workflow: 'echo', version: '1', idempotencyKey: 'order-1' }).expect(200);
      expect(again.body.id).toBe(old);
    } finally {
      await upgraded.close();
    }
  });

  it('copies no key of a run that retention deletes while the keys are copied: the copy waits for it and leaves it out', async () => {
    const doomed = '01a22c37-316c-762f-a717-000000000005';
    await migrateUpTo(gapDb.url, IdempotencyKeysCopied1767100000001, (previous) =>
      previous.query(`INSERT INTO runs (id, workflow, version, queue, status, idempotency_key, finished_at)
        VALUES ('${doomed}', 'echo', '1', 'echo:1', 'completed', 'old', now())`),
    );
    // A retention batch under way: the run locked and deleted, not yet committed.
    const retention = new Client({ connectionString: gapDb.url });
    await retention.connect();
    try {
      await retention.query('BEGIN');
      await retention.query(`SELECT id FROM runs WHERE id = $1 FOR UPDATE`, [doomed]);
      await retention.query(`SELECT delete_runs(ARRAY[$1]::uuid[])`, [doomed]);

      const copying = gapDb.sql(new IdempotencyKeysCopied1767100000001().copyFinished);
      await eventually('the copy to wait for the deleted run', async () => {
        // On the retention batch's own session: the test database's is busy with the copy.
        const { rows } = await retention.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        );
        return rows[0].n > 0;
      });
      await retention.query('COMMIT');
      await copying;
    } finally {
      await retention.end();
    }

    expect(await gapDb.sql('SELECT run_id FROM idempotency_keys')).toEqual([]);
    await gapDb.sql('ALTER TABLE idempotency_keys VALIDATE CONSTRAINT idempotency_keys_run_id_fkey');
  });

  it('keys transitions by run, building again the index an interrupted upgrade left invalid', async () => {
    const run = '01a22c37-316c-762f-a717-000000000007';
    await migrateUpTo(transitionsDb.url, TransitionsKeyedByRun1767200000000, async (previous) => {
      await previous.query(`INSERT INTO runs (id, workflow, version, queue, status) VALUES ('${run}', 'echo', '1', 'echo:1', 'queued')`);
      await previous.query(`INSERT INTO run_transitions (run_id, from_status, to_status, revision) VALUES ('${run}', NULL, 'queued', 0)`);
      // What a crash during the concurrent build leaves: the index there, but invalid.
      await previous.query(`CREATE UNIQUE INDEX run_transitions_run_id_id_key ON run_transitions (run_id, id)`);
      await previous.query(`UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'run_transitions_run_id_id_key'::regclass`);
    });

    const upgraded = await startCoordinator(transitionsDb.url);
    try {
      expect(
        await transitionsDb.sql(
          `SELECT pg_get_indexdef(indexrelid) AS definition, indisvalid AS valid FROM pg_index WHERE indrelid = 'run_transitions'::regclass`,
        ),
      ).toEqual([{ definition: 'CREATE UNIQUE INDEX run_transitions_pkey ON public.run_transitions USING btree (run_id, id)', valid: true }]);
      const history = await request(upgraded.url).get(`/v1/runs/${run}/transitions`).expect(200);
      expect(history.body.items.map((transition: { to: string }) => transition.to)).toEqual(['queued']);
    } finally {
      await upgraded.close();
    }
  });

  it('keys events and updates by run, building again the index an interrupted upgrade left invalid', async () => {
    const run = '01a22c37-316c-762f-a717-000000000008';
    const update = '01a22c37-316c-762f-a717-000000000009';
    await migrateUpTo(eventsDb.url, EventsAndUpdatesKeyedByRun1767300000000, async (previous) => {
      await previous.query(`INSERT INTO runs (id, workflow, version, queue, status) VALUES ('${run}', 'echo', '1', 'echo:1', 'queued')`);
      await previous.query(`INSERT INTO run_events (run_id, name) VALUES ('${run}', 'ping')`);
      await previous.query(`INSERT INTO run_updates (id, run_id, name) VALUES ('${update}', '${run}', 'bump')`);
      // What a crash during the concurrent build leaves: the index there, but invalid.
      await previous.query(`CREATE UNIQUE INDEX run_updates_run_id_id_key ON run_updates (run_id, id)`);
      await previous.query(`UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'run_updates_run_id_id_key'::regclass`);
    });

    const upgraded = await startCoordinator(eventsDb.url);
    try {
      expect(
        await eventsDb.sql(
          `SELECT indexrelid::regclass::text AS name, pg_get_indexdef(indexrelid) AS definition, indisvalid AS valid
             FROM pg_index WHERE indrelid IN ('run_events'::regclass, 'run_updates'::regclass) AND indisprimary`,
        ),
      ).toEqual([
        { name: 'run_events_pkey', definition: 'CREATE UNIQUE INDEX run_events_pkey ON public.run_events USING btree (run_id, id)', valid: true },
        { name: 'run_updates_pkey', definition: 'CREATE UNIQUE INDEX run_updates_pkey ON public.run_updates USING btree (run_id, id)', valid: true },
      ]);
      expect(
        await eventsDb.sql(
          `SELECT indexrelid::regclass::text AS name FROM pg_index WHERE indrelid IN ('run_events'::regclass, 'run_updates'::regclass) ORDER BY 1`,
        ),
      ).toEqual([{ name: 'run_events_pending_idx' }, { name: 'run_events_pkey' }, { name: 'run_updates_pending_idx' }, { name: 'run_updates_pkey' }]);
      expect(await eventsDb.sql(`SELECT name FROM run_events WHERE run_id = $1 UNION ALL SELECT name FROM run_updates WHERE run_id = $1`, [run])).toEqual([
        { name: 'ping' },
        { name: 'bump' },
      ]);
    } finally {
      await upgraded.close();
    }
  });

  it('swaps a key without queueing writes behind a long transaction: its lock waits are short, and retried', async () => {
    const run = '01a22c37-316c-762f-a717-00000000000a';
    await migrateUpTo(lockedDb.url, EventsAndUpdatesKeyedByRun1767300000000, (previous) =>
      previous.query(`INSERT INTO runs (id, workflow, version, queue, status) VALUES ('${run}', 'echo', '1', 'echo:1', 'queued')`),
    );
    const holder = new Client({ connectionString: lockedDb.url });
    const writer = new Client({ connectionString: lockedDb.url });
    await Promise.all([holder.connect(), writer.connect()]);
    const upgrade = new DataSource({ type: 'postgres', url: lockedDb.url, migrations: MIGRATIONS });
    try {
      // A long transaction that has read run_events: the swap's ACCESS EXCLUSIVE lock waits for it.
      await holder.query('BEGIN');
      await holder.query('SELECT count(*) FROM run_events');
      await upgrade.initialize();
      const migrating = upgrade.runMigrations({ transaction: 'each' });
      await eventually('the key swap to wait for the long transaction', async () => {
        const { rows } = await writer.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'ALTER TABLE run_events%'`,
        );
        return rows[0].n > 0;
      });
      // A write meanwhile goes through between the swap's attempts, not after the long transaction.
      await writer.query(`SET statement_timeout = 3000`);
      await writer.query(`INSERT INTO run_events (run_id, name) VALUES ($1, 'ping')`, [run]);
      await holder.query('COMMIT');
      await migrating;
      expect(
        await lockedDb.sql(`SELECT pg_get_constraintdef(oid) AS key FROM pg_constraint WHERE conrelid = 'run_events'::regclass AND contype = 'p'`),
      ).toEqual([{ key: 'PRIMARY KEY (run_id, id)' }]);
    } finally {
      await holder.end();
      await writer.end();
      if (upgrade.isInitialized) await upgrade.destroy();
    }
  });

  it("drops the run tables' foreign keys, after which delete_runs() deletes an older run's rows itself", async () => {
    const [parent, child] = ['01a22c37-316c-762f-a717-00000000000b', '01a22c37-316c-762f-a717-00000000000c'];
    await migrateUpTo(keysGoneDb.url, HistoryWithoutForeignKeys1767400000000, async (previous) => {
      await previous.query(
        `INSERT INTO runs (id, workflow, version, queue, status, finished_at) VALUES ('${parent}', 'echo', '1', 'echo:1', 'completed', now())`,
      );
      await previous.query(
        `INSERT INTO runs (id, workflow, version, queue, status, parent_id) VALUES ('${child}', 'echo', '1', 'echo:1', 'queued', '${parent}')`,
      );
      await previous.query(`INSERT INTO run_transitions (run_id, from_status, to_status, revision) VALUES ('${parent}', NULL, 'completed', 1)`);
      await previous.query(`INSERT INTO tasks (run_id, key, seq, name, status, attempts) VALUES ('${parent}', 'step#1', 0, 'step', 'completed', 1)`);
      await previous.query(`INSERT INTO run_events (run_id, name) VALUES ('${parent}', 'ping')`);
    });

    const upgraded = await startCoordinator(keysGoneDb.url);
    try {
      expect(await keysGoneDb.sql(`SELECT conname FROM pg_constraint WHERE contype = 'f' AND confrelid = 'runs'::regclass ORDER BY conname`)).toEqual([
        { conname: 'completion_tokens_run_id_fkey' },
        { conname: 'idempotency_keys_run_id_fkey' },
      ]);
      await keysGoneDb.sql('SELECT delete_runs($1::uuid[])', [[parent]]);
      expect(
        await keysGoneDb.sql(
          `SELECT 'transition' AS row FROM run_transitions WHERE run_id = $1 UNION ALL SELECT 'task' FROM tasks WHERE run_id = $1
           UNION ALL SELECT 'event' FROM run_events WHERE run_id = $1`,
          [parent],
        ),
      ).toEqual([]);
      expect(await keysGoneDb.sql('SELECT parent_id FROM runs WHERE id = $1', [child])).toEqual([{ parent_id: null }]);
    } finally {
      await upgraded.close();
    }
  });

  it("keeps the migrations' lock while a killed coordinator's index build goes on: the next one finds the index built", async () => {
    const run = '01a22c37-316c-762f-a717-00000000000d';
    await migrateUpTo(killedDb.url, EventsAndUpdatesKeyedByRun1767300000000, (previous) =>
      previous.query(`INSERT INTO runs (id, workflow, version, queue, status) VALUES ('${run}', 'echo', '1', 'echo:1', 'queued')`),
    );
    const writer = new Client({ connectionString: killedDb.url });
    writer.on('error', () => undefined);
    await writer.connect();
    const coordinator = async (name: string) =>
      new AppProcess(name, 'apps/coordinator/src/main.ts', {
        DATABASE_URL: killedDb.url,
        PORT: String(await freePort()),
        HOST: '127.0.0.1',
        AUTH_DISABLED: 'true',
      });
    let first: AppProcess | undefined;
    let next: AppProcess | undefined;
    try {
      // A write left open on run_events: the first coordinator's concurrent build of the new key waits for it.
      await writer.query('BEGIN');
      await writer.query(`INSERT INTO run_events (run_id, name) VALUES ($1, 'ping')`, [run]);
      first = await coordinator('migrating');
      // Observed from another session: pg_stat_activity holds still within the writer's open transaction.
      const building = async () =>
        killedDb.sql<{ pid: number }>(
          `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' AND wait_event_type = 'Lock'
              AND query LIKE 'CREATE UNIQUE INDEX CONCURRENTLY run_events_run_id_id_key%'`,
        );
      await eventually(`the key build to wait for the open write\n${first.output}`, async () => (await building()).length === 1, 60_000);
      const [{ pid: builder }] = await building();
      const [{ oid: built }] = await killedDb.sql<{ oid: number }>(`SELECT 'run_events_run_id_id_key'::regclass::oid AS oid`);
      // The session holding this database's migrations' advisory lock (a bigint key: its high and low 32 bits are
      // the lock's classid and objid, objsubid 1; other suites' databases have theirs).
      const lockHolders = async () =>
        (
          await killedDb.sql<{ pid: number }>(
            `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND classid = $1 AND objid = $2 AND objsubid = 1 AND granted
              AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
            [Math.floor(MIGRATION_LOCK_KEY / 2 ** 32), MIGRATION_LOCK_KEY % 2 ** 32],
          )
        ).map((row) => row.pid);
      expect(await lockHolders()).toEqual([builder]);

      first.signal('SIGKILL');
      await first.exited;
      // The build outlives its client, and so does the lock, on the same session.
      expect(await lockHolders()).toEqual([builder]);
      next = await coordinator('next');
      const started = next;
      await eventually(
        `the next coordinator to try for the lock\n${started.output}`,
        async () => {
          if (!started.alive) return true;
          const rows = await killedDb.sql(
            `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND pid <> $1 AND query = 'SELECT pg_try_advisory_lock($1) AS locked'`,
            [builder],
          );
          return rows.length > 0;
        },
        60_000,
      );
      expect(started.alive).toBe(true);
      await writer.query('COMMIT');
      await next.waitForOutput('listening on', 60_000);
      expect(await killedDb.sql(`SELECT indexrelid::oid AS oid FROM pg_index WHERE indrelid = 'run_events'::regclass AND indisprimary`)).toEqual([
        { oid: built },
      ]);
    } finally {
      await Promise.allSettled([writer.end(), first?.stop(), next?.stop()]);
    }
  }, 120_000);
});
