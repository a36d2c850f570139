import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { MIGRATION_LOCK_KEY, MIGRATIONS } from '@app/persistence';
import { Client } from 'pg';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { IdempotencyKeys1767100000000, IdempotencyKeysCopied1767100000001 } from '../libs/persistence/src/migrations/1767100000000-idempotency-keys';
import { TransitionsKeyedByRun1767200000000 } from '../libs/persistence/src/migrations/1767200000000-transitions-keyed-by-run';
import { EventsAndUpdatesKeyedByRun1767300000000 } from '../libs/persistence/src/migrations/1767300000000-events-and-updates-keyed-by-run';
import { HistoryWithoutForeignKeys1767400000000 } from '../libs/persistence/src/migrations/1767400000000-history-without-foreign-keys';
import { cutoverAfter, RunTablesPartitionedByWeek1767600000000 } from '../libs/persistence/src/migrations/1767600000000-run-tables-partitioned-by-week';
import { partitionByRun } from '../libs/persistence/src/migrations/partitioned-by-run';
import { RUN_TABLES } from '@app/persistence';
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
  let partitionedDb: TestDatabase;
  let resumedDb: TestDatabase;
  let coordinator: RunningCoordinator | undefined;

  beforeAll(async () => {
    [db, keysDb, gapDb, transitionsDb, eventsDb, lockedDb, keysGoneDb, killedDb, partitionedDb, resumedDb] = await Promise.all([
      createTestDatabase('migrations'),
      createTestDatabase('migrations_keys'),
      createTestDatabase('migrations_keys_gap'),
      createTestDatabase('migrations_transitions_key'),
      createTestDatabase('migrations_events_key'),
      createTestDatabase('migrations_key_swap_waits'),
      createTestDatabase('migrations_history_keys_gone'),
      createTestDatabase('migrations_killed_build'),
      createTestDatabase('migrations_partitioned'),
      createTestDatabase('migrations_partitioned_resumed'),
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
      partitionedDb?.drop(),
      resumedDb?.drop(),
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

  /**
   * Runs every migration on `url` while a long transaction that has read `table` stays open, so that a statement
   * of theirs waits for its lock; once a statement `waiting` (a LIKE pattern) waits, `meanwhile` writes on a session
   * of its own (3 s at most a statement), then the long transaction ends and the migrations finish.
   */
  async function upgradeBesideLongTransaction(url: string, table: string, waiting: string, meanwhile: (writer: Client) => Promise<void>): Promise<void> {
    const holder = new Client({ connectionString: url });
    const writer = new Client({ connectionString: url });
    await Promise.all([holder.connect(), writer.connect()]);
    const upgrade = new DataSource({ type: 'postgres', url, migrations: MIGRATIONS });
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT count(*) FROM ${table}`);
      await upgrade.initialize();
      const migrating = upgrade.runMigrations({ transaction: 'each' });
      await eventually(`a statement like '${waiting}' to wait for the long transaction`, async () => {
        const { rows } = await writer.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE $1`,
          [waiting],
        );
        return rows[0].n > 0;
      });
      await writer.query(`SET statement_timeout = 3000`);
      await meanwhile(writer);
      await holder.query('COMMIT');
      await migrating;
    } finally {
      await holder.end();
      await writer.end();
      if (upgrade.isInitialized) await upgrade.destroy();
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
      // The table keyed then is the partition of the weeks before the cutover since (1767600000000), and its indexes
      // are named after it.
      expect(
        await transitionsDb.sql(
          `SELECT pg_get_indexdef(indexrelid) AS definition, indisvalid AS valid FROM pg_index WHERE indrelid = 'run_transitions_initial'::regclass`,
        ),
      ).toEqual([{ definition: 'CREATE UNIQUE INDEX run_transitions_initial_pkey ON public.run_transitions_initial USING btree (run_id, id)', valid: true }]);
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
      // The tables keyed then are the partitions of the weeks before the cutover since (1767600000000).
      expect(
        await eventsDb.sql(
          `SELECT indexrelid::regclass::text AS name, pg_get_indexdef(indexrelid) AS definition, indisvalid AS valid
             FROM pg_index WHERE indrelid IN ('run_events_initial'::regclass, 'run_updates_initial'::regclass) AND indisprimary ORDER BY 1`,
        ),
      ).toEqual([
        {
          name: 'run_events_initial_pkey',
          definition: 'CREATE UNIQUE INDEX run_events_initial_pkey ON public.run_events_initial USING btree (run_id, id)',
          valid: true,
        },
        {
          name: 'run_updates_initial_pkey',
          definition: 'CREATE UNIQUE INDEX run_updates_initial_pkey ON public.run_updates_initial USING btree (run_id, id)',
          valid: true,
        },
      ]);
      expect(
        await eventsDb.sql(
          `SELECT indexrelid::regclass::text AS name FROM pg_index WHERE indrelid IN ('run_events_initial'::regclass, 'run_updates_initial'::regclass) ORDER BY 1`,
        ),
      ).toEqual([
        { name: 'run_events_initial_pending_idx' },
        { name: 'run_events_initial_pkey' },
        { name: 'run_updates_initial_pending_idx' },
        { name: 'run_updates_initial_pkey' },
      ]);
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
    // A long transaction that has read run_events: the swap's ACCESS EXCLUSIVE lock waits for it. A write meanwhile
    // goes through between the swap's attempts, not after the long transaction.
    await upgradeBesideLongTransaction(lockedDb.url, 'run_events', 'ALTER TABLE run_events%', async (writer) => {
      await writer.query(`INSERT INTO run_events (run_id, name) VALUES ($1, 'ping')`, [run]);
    });
    expect(await lockedDb.sql(`SELECT pg_get_constraintdef(oid) AS key FROM pg_constraint WHERE conrelid = 'run_events'::regclass AND contype = 'p'`)).toEqual([
      { key: 'PRIMARY KEY (run_id, id)' },
    ]);
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

  /** Each run table's kind ('p': partitioned) and the bound of its `_initial` partition. */
  const partitioning = (on: TestDatabase) =>
    on.sql<{ table: string; kind: string; initial: string | null }>(
      `SELECT c.relname AS table, c.relkind AS kind,
              (SELECT pg_get_expr(p.relpartbound, p.oid) FROM pg_class p WHERE p.relname = c.relname || '_initial') AS initial
         FROM pg_class c WHERE c.relname = ANY($1::text[]) ORDER BY c.relname`,
      [RUN_TABLES],
    );

  it('partitions the run tables by week on a database in use: rows and keys kept, writes go on between its short lock waits', async () => {
    const run = '01a22c37-316c-762f-a717-00000000000e';
    const earlier = cutoverAfter(Date.now() - 7 * 86_400_000);
    await migrateUpTo(partitionedDb.url, RunTablesPartitionedByWeek1767600000000, async (previous) => {
      await previous.query(
        `INSERT INTO runs (id, workflow, version, queue, status, idempotency_key) VALUES ('${run}', 'echo', '1', 'echo:1', 'queued', 'order-9')`,
      );
      await previous.query(`INSERT INTO tasks (run_id, key, seq, name, status, attempts) VALUES ('${run}', 'step#1', 0, 'step', 'completed', 1)`);
      await previous.query(`INSERT INTO run_transitions (run_id, from_status, to_status, revision) VALUES ('${run}', NULL, 'queued', 0)`);
      await previous.query(`INSERT INTO run_events (run_id, name) VALUES ('${run}', 'ping'), ('${run}', 'pong')`);
      await previous.query(`INSERT INTO run_updates (id, run_id, name) VALUES ('01a22c37-316c-762f-a717-0000000000f1', '${run}', 'bump')`);
      await previous.query(`INSERT INTO run_values (run_id, name, value) VALUES ('${run}', 'progress', '1')`);
      // As an earlier start left it, a week ago, stopped after its first step on tasks (which takes a lock of its own).
      await previous.query(`ALTER TABLE tasks ADD CONSTRAINT tasks_before_weeks CHECK (run_id < '${earlier}'::uuid) NOT VALID`);
    });
    // A long transaction that has read tasks: the transaction that converts tasks waits for it, an attempt at a time.
    // Writes meanwhile go through between the attempts: to tasks, and to runs, converted already.
    await upgradeBesideLongTransaction(partitionedDb.url, 'tasks', 'LOCK TABLE tasks IN ACCESS EXCLUSIVE MODE', async (writer) => {
      await writer.query(`INSERT INTO tasks (run_id, key, seq, name, status, attempts) VALUES ($1, 'step#2', 1, 'step', 'completed', 1)`, [run]);
      expect((await writer.query(`SELECT relkind FROM pg_class WHERE relname = 'runs'`)).rows).toEqual([{ relkind: 'p' }]);
    });

    // The cutover of the CHECK found: the first start's.
    expect(await partitioning(partitionedDb)).toEqual(
      [...RUN_TABLES].sort().map((table) => ({ table, kind: 'p', initial: `FOR VALUES FROM (MINVALUE) TO ('${earlier}')` })),
    );
    // Every row where it was, in the partition of the weeks before the cutover.
    expect(
      await partitionedDb.sql(
        `SELECT (SELECT count(*)::int FROM runs_initial) AS runs, (SELECT count(*)::int FROM tasks_initial) AS tasks,
                (SELECT count(*)::int FROM run_transitions_initial) AS transitions, (SELECT count(*)::int FROM run_events_initial) AS events,
                (SELECT count(*)::int FROM run_updates_initial) AS updates, (SELECT count(*)::int FROM run_values_initial) AS values`,
      ),
    ).toEqual([{ runs: 1, tasks: 2, transitions: 1, events: 2, updates: 1, values: 1 }]);
    // The identities go on from where they stood, and the CHECKs that made the attach cheap are gone.
    const [{ id }] = await partitionedDb.sql<{ id: string }>(`INSERT INTO run_events (run_id, name) VALUES ($1, 'later') RETURNING id`, [run]);
    expect(Number(id)).toBe(3);
    expect(await partitionedDb.sql(`SELECT conname FROM pg_constraint WHERE conname LIKE '%_before_weeks'`)).toEqual([]);
    expect(
      await partitionedDb.sql(
        `SELECT conname, convalidated, confrelid::regclass::text AS target FROM pg_constraint WHERE contype = 'f' AND conname IN ('idempotency_keys_run_id_fkey', 'completion_tokens_run_id_fkey') ORDER BY conname`,
      ),
    ).toEqual([
      { conname: 'completion_tokens_run_id_fkey', convalidated: true, target: 'runs' },
      { conname: 'idempotency_keys_run_id_fkey', convalidated: true, target: 'runs' },
    ]);

    const upgraded = await startCoordinator(partitionedDb.url);
    try {
      const again = await request(upgraded.url).post('/v1/runs').send({ workflow: 'echo', version: '1', idempotencyKey: 'order-9' }).expect(200);
      expect(again.body.id).toBe(run);
      const started = await request(upgraded.url).post('/v1/runs').send({ workflow: 'echo', version: '1' }).expect(201);
      // A run started now is before the cutover (the Monday after next).
      expect(await partitionedDb.sql(`SELECT tableoid::regclass::text AS partition FROM runs WHERE id = $1`, [started.body.id])).toEqual([
        { partition: 'runs_initial' },
      ]);
    } finally {
      await upgraded.close();
    }
  });

  it('finishes a conversion interrupted after a table, at the cutover it began with; a start that failed first leaves no CHECK', async () => {
    const earlier = cutoverAfter(Date.now() - 7 * 86_400_000);
    await migrateUpTo(resumedDb.url, RunTablesPartitionedByWeek1767600000000, async (previous) => {
      const runner = previous.createQueryRunner();
      try {
        // A start whose conversion of runs fails after the CHECK was added: it takes the CHECK away again (else it
        // would refuse the run ids past the cutover, a week or two later, whatever release then runs).
        const failingAt = (statement: string) =>
          new Proxy(runner, {
            get: (target, key) =>
              key === 'query'
                ? (text: string, values?: unknown[]) => {
                    if (text === statement) throw new Error('failed');
                    return target.query(text, values);
                  }
                : Reflect.get(target, key),
          });
        await expect(new RunTablesPartitionedByWeek1767600000000().up(failingAt('ALTER TABLE runs RENAME TO runs_initial'))).rejects.toThrow('failed');
        expect(await runner.query(`SELECT conname FROM pg_constraint WHERE conname LIKE '%_before_weeks'`)).toEqual([]);
        // A start a week ago (its cutover the next Monday) that converted runs, and stopped before validating the keys
        // into runs, which it had re-pointed NOT VALID.
        await partitionByRun(runner, 'runs', 'id', earlier, new Date(Date.now() + 14 * 86_400_000));
        await runner.query(`ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_run_id_fkey,
          ADD CONSTRAINT idempotency_keys_run_id_fkey FOREIGN KEY (run_id) REFERENCES runs(id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED NOT VALID`);
        // A start failing once runs is converted keeps its CHECKs: the cutover is fixed, and a table without one
        // would take run ids past it that the next start could not validate.
        await expect(new RunTablesPartitionedByWeek1767600000000().up(failingAt('ALTER TABLE tasks RENAME TO tasks_initial'))).rejects.toThrow('failed');
        expect(await runner.query(`SELECT conname FROM pg_constraint WHERE conname LIKE '%_before_weeks' ORDER BY 1`)).toEqual([
          { conname: 'tasks_before_weeks' },
        ]);
      } finally {
        await runner.release();
      }
    });
    const upgrade = new DataSource({ type: 'postgres', url: resumedDb.url, migrations: MIGRATIONS });
    await upgrade.initialize();
    try {
      await upgrade.runMigrations({ transaction: 'each' });
    } finally {
      await upgrade.destroy();
    }
    expect(earlier).not.toBe(cutoverAfter(Date.now()));
    expect(await partitioning(resumedDb)).toEqual(
      [...RUN_TABLES].sort().map((table) => ({ table, kind: 'p', initial: `FOR VALUES FROM (MINVALUE) TO ('${earlier}')` })),
    );
    // The keys as declared (a key into a partitioned table also has a constraint per partition, conparentid set,
    // which PostgreSQL 15 leaves marked NOT VALID after the key's VALIDATE; they are enforced all the same).
    expect(await resumedDb.sql(`SELECT conname FROM pg_constraint WHERE contype = 'f' AND conparentid = 0 AND NOT convalidated`)).toEqual([]);
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
      // The table it was built on is the partition of the weeks before the cutover since (1767600000000).
      expect(await killedDb.sql(`SELECT indexrelid::oid AS oid FROM pg_index WHERE indrelid = 'run_events_initial'::regclass AND indisprimary`)).toEqual([
        { oid: built },
      ]);
    } finally {
      await Promise.allSettled([writer.end(), first?.stop(), next?.stop()]);
    }
  }, 120_000);
});
