import { Database, type NewRun, type SqlExecutor, startHandedRuns, startRuns, uuidv7 } from '@app/persistence';
import { queueName } from '@nest-durable/common';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { GenericPlanPool } from '../../libs/persistence/src/generic-plan.pool';
import { PooledClient } from '../../libs/persistence/src/pooled-client';
import { createMigratedDatabase } from './migrated-database';
import type { TestDatabase } from './database';
import { eventually } from './poll';

/**
 * A migrated throwaway database (`sql` for assertions and tampering) and the coordinator's Database on it (`db`):
 * its pool, and its GenericPlanPool for the statements prepared with `genericPlan`, each session set up as
 * PersistenceModule sets it up (`wf.dispatch`), so the SQL home's functions run as they do in the coordinator.
 * A statement that waits for a lock more than a few seconds fails (`lock_timeout`): a test whose statements
 * deadlock with each other (a lock that should have been skipped) fails instead of hanging.
 */
export interface SqlTestDatabase {
  db: Database;
  sql: TestDatabase['sql'];
  url: string;
  /** Resolves once a session of this database waits for a lock (a statement blocked behind a held transaction). */
  someoneWaitsForALock(): Promise<void>;
  close(): Promise<void>;
}

export async function createSqlTestDatabase(suite: string, options: { dispatch?: string } = {}): Promise<SqlTestDatabase> {
  const database = await createMigratedDatabase(suite);
  const sessionOptions = `-c wf.dispatch=${options.dispatch ?? 'none'} -c lock_timeout=5s`;
  const dataSource = new DataSource({ type: 'postgres', url: database.url, extra: { max: 4, options: sessionOptions } });
  await dataSource.initialize();
  const genericPlans = new GenericPlanPool({ connectionString: database.url, max: 2, options: sessionOptions, Client: PooledClient }, () => undefined);
  return {
    db: new Database(dataSource, genericPlans, true),
    sql: database.sql,
    url: database.url,
    async someoneWaitsForALock() {
      await eventually('a session waiting for a lock', async () => {
        const [{ n }] = await database.sql<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        );
        return n > 0;
      });
    },
    async close() {
      // A test that failed before committing what it held: its transaction would keep its connection, and the
      // pool's end would wait for it for good.
      await Promise.allSettled([...uncommitted].map((end) => end()));
      await genericPlans.onApplicationShutdown();
      await dataSource.destroy();
      await database.drop();
    },
  };
}

/** The ends of the transactions holdTransaction keeps open, until their commit. */
const uncommitted = new Set<() => Promise<void>>();

/**
 * Runs `work` in a transaction and keeps that transaction open, its locks held, until `commit` is called: for
 * a statement run concurrently with another one whose transaction has not committed yet.
 */
export async function holdTransaction<T>(db: Database, work: (tx: SqlExecutor) => Promise<T>): Promise<{ result: T; commit(): Promise<void> }> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let answer!: (value: T) => void;
  const answered = new Promise<T>((resolve) => (answer = resolve));
  const transaction = db.transaction(async (tx) => {
    answer(await work(tx));
    await released;
  });
  const result = await Promise.race([answered, transaction.then(() => Promise.reject(new Error('the transaction ended before its work answered')))]);
  const commit = async () => {
    uncommitted.delete(commit);
    release();
    await transaction;
  };
  uncommitted.add(commit);
  return { result, commit };
}

/** The payloads of the notifications on `channel`, received as a coordinator's LISTEN session receives them (at commit). */
export interface Listener {
  payloads: string[];
  close(): Promise<void>;
}

export async function listenTo(url: string, channel: string): Promise<Listener> {
  const client = new Client({ connectionString: url });
  await client.connect();
  const payloads: string[] = [];
  client.on('notification', (message) => {
    if (message.channel === channel) payloads.push(message.payload ?? '');
  });
  await client.query(`LISTEN ${channel}`);
  return { payloads, close: () => client.end() };
}

/** A run to start (see startRuns) of `workflow` version 1, with `overrides`. */
export function newRun(workflow: string, overrides: Partial<NewRun> = {}): NewRun {
  return {
    id: uuidv7(),
    workflow,
    version: '1',
    shard: null,
    input: { workflow },
    priority: 0,
    idempotencyKey: null,
    runAt: null,
    parentId: null,
    tags: {},
    traceparent: null,
    tracestate: null,
    ...overrides,
  };
}

/**
 * Starts `run` running for `workerId` (of build `buildId`) at revision 1 (claimed in the start's commit, as a
 * hand-off leaves it). Its queue must hold no ready run nor a claim gone idle, and its version no active control.
 */
export async function startClaimed(db: SqlExecutor, run: NewRun, workerId = 'worker-a', buildId: string | null = null): Promise<void> {
  const queue = queueName(run.workflow, run.version, run.shard ?? undefined);
  const [started] = await startHandedRuns(db, [run], { workerId, buildId, queues: [queue], claimMinIdleTimeMs: 60_000 });
  if (started?.status !== 'running') throw new Error(`run ${run.id} was not handed to ${workerId}: ${JSON.stringify(started)}`);
}

/**
 * The queues woken so far (`ready` listens on wf_runs_ready), once a run of `sentinel` started after what is
 * being checked was announced: notifications arrive in commit order, so none of the earlier ones is still coming.
 */
export async function queuesWokenBefore(db: SqlExecutor, ready: Listener, sentinel: string): Promise<string[]> {
  await startRuns(db, [newRun(sentinel)]);
  await eventually(`the wake-up of ${sentinel}:1`, async () => ready.payloads.includes(`${sentinel}:1`));
  return ready.payloads.slice(0, ready.payloads.indexOf(`${sentinel}:1`));
}
