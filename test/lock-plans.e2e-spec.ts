import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type Database, type PreparedStatement, type SqlExecutor } from '@app/persistence';
import { ClaimRepository, ReportRepository } from '@app/run-store';
import { Client } from 'pg';
import { type RunningCoordinator, startCoordinator } from './support/apps';
import { GENERIC_PLAN_SESSION_OPTIONS } from '../libs/persistence/src/generic-plan.pool';
import { createTestDatabase, type TestDatabase } from './support/database';

/** A plan node of EXPLAIN (FORMAT JSON). */
interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Subplan Name'?: string;
  'Parent Relationship'?: string;
  'Index Cond'?: string;
  Plans?: PlanNode[];
}

/** A parameter's text form, as node-postgres sends it (arrays as array literals). */
const textOf = (value: unknown): string =>
  Array.isArray(value)
    ? `{${value.map((element) => (element === null ? 'NULL' : `"${textOf(element).replace(/[\\"]/g, '\\$&')}"`)).join(',')}}`
    : typeof value === 'object'
      ? JSON.stringify(value)
      : String(value);

/** Every node under `node`, itself included. */
const nodes = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodes)];

/** The state of `runs` a long-lived session's generic plans are made on. */
interface TableState {
  name: string;
  /** Fills the new (migrated, never analyzed) table before the plans are made. */
  fill(db: TestDatabase): Promise<unknown>;
}

const TABLE_STATES: TableState[] = [
  {
    // A table like the bench's, never analyzed: tens of thousands of runs, some of them running. With 3,000 the
    // seq scan and the index probes cost within 2% of each other and the plan flipped between runs of the suite.
    name: 'a table of 30,000 runs never analyzed',
    fill: (db) =>
      db.sql(`INSERT INTO runs (id, workflow, version, queue, status, revision, heartbeat_at, finished_at)
              SELECT gen_random_uuid(), 'chain', '1', 'default', CASE WHEN i % 3 = 0 THEN 'running' ELSE 'completed' END, 1,
                     CASE WHEN i % 3 = 0 THEN now() END, CASE WHEN i % 3 <> 0 THEN now() END
                FROM generate_series(1, 30000) i`),
  },
  {
    // A new database: the plans of a session's first executions are kept until autovacuum first analyzes the
    // table, which it grows meanwhile. PostgreSQL takes a never-analyzed table for ten pages, and at the default
    // random_page_cost a join scanning those cost less than primary-key probes (docs/benchmarks.md, "Fixed in the
    // next session").
    name: "a new database's empty table",
    fill: async () => undefined,
  },
];

/**
 * The statements a worker's reports run under its claim (the task result's record, the finish, both in one) lock
 * and update their runs one primary-key probe each, in the generic plan too, whatever the table held when the
 * plan was made: joined to their input, the generic plan made while the table was small scanned every entry of
 * the running runs' index instead (docs/benchmarks.md, "The report statements' locks"), or the whole table. The
 * claim's probe for idle claims, likewise, reads each queue's own entries of that index. The plans are made as
 * the GenericPlanPool's sessions make them: with its settings.
 */
describe.each(TABLE_STATES)('the worker path finds its runs by index in the generic plan: $name', ({ fill }) => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator | undefined;
  let session: Client;

  beforeAll(async () => {
    db = await createTestDatabase('lock_plans');
    coordinator = await startCoordinator(db.url); // migrates
    // No autovacuum, so the plans cannot change under the test.
    await db.sql(`ALTER TABLE runs SET (autovacuum_enabled = off)`);
    await fill(db);
    session = new Client({ connectionString: db.url, options: GENERIC_PLAN_SESSION_OPTIONS });
    session.on('error', () => undefined); // its statements fail if the connection dies
    await session.connect();
  });

  afterAll(async () => {
    await session?.end();
    await coordinator?.close();
    await db?.drop();
  });

  /** The first statement `write` sends, as PostgreSQL would run it from a long-lived session's cache. */
  async function genericPlanOf(write: (on: SqlExecutor) => Promise<unknown>): Promise<PlanNode> {
    let sent: { statement: PreparedStatement; values: unknown[] } | undefined;
    const capture: SqlExecutor = {
      async query<T>(statement: string | PreparedStatement, values: unknown[] = []): Promise<T[]> {
        if (!sent && typeof statement !== 'string') sent = { statement, values };
        return [];
      },
    };
    await write(capture).catch(() => undefined); // the capture answers no rows: what follows the first statement is not of interest
    if (!sent) throw new Error('no prepared statement was sent');
    const name = `plan_${sent.statement.name}`;
    await session.query(`PREPARE ${name} AS ${sent.statement.text}`);
    const literals = sent.values.map((value) => (value === null ? 'NULL' : session.escapeLiteral(textOf(value))));
    const [row] = (await session.query(`EXPLAIN (FORMAT JSON) EXECUTE ${name}(${literals.join(', ')})`)).rows;
    return row['QUERY PLAN'][0].Plan as PlanNode;
  }

  /**
   * The scans of `runs` in each named CTE, and whether its row locks sit inside the nested loop over the
   * input sorted by run id (the lock order).
   */
  function runScans(plan: PlanNode, cte: string): string[] {
    const subplan = nodes(plan).find((node) => node['Subplan Name'] === `CTE ${cte}`);
    if (!subplan) throw new Error(`no CTE ${cte} in the plan`);
    return nodes(subplan)
      .filter((node) => node['Relation Name'] === 'runs' && node['Node Type'].endsWith('Scan'))
      .map((scan) => `${scan['Node Type']} ${scan['Index Name'] ?? ''}`.trim());
  }

  /** The lock of `cte` is a nested loop whose outer side is sorted and whose inner side holds the LockRows. */
  function locksInInputOrder(plan: PlanNode, cte: string): boolean {
    const subplan = nodes(plan).find((node) => node['Subplan Name'] === `CTE ${cte}`)!;
    const loop = subplan['Node Type'] === 'Nested Loop' ? subplan : undefined;
    const [outer, inner] = loop?.Plans ?? [];
    return !!outer && !!inner && nodes(outer).some((node) => node['Node Type'] === 'Sort') && nodes(inner).some((node) => node['Node Type'] === 'LockRows');
  }

  const id = '01900000-0000-7000-8000-000000000001';
  const repository = new ReportRepository(undefined as never);

  it('the task result record', async () => {
    const plan = await genericPlanOf((on) =>
      repository.recordTasks(
        [{ runId: id, task: { expectedRevision: 1, key: 'k', seq: 0, name: 'k', status: 'completed', attempts: 1, output: 1, error: null } }],
        1_000,
        on,
      ),
    );
    expect(runScans(plan, 'owner')).toEqual(['Index Scan runs_pkey']);
    expect(locksInInputOrder(plan, 'owner')).toBe(true);
    expect(runScans(plan, 'refreshed')).toEqual(['Index Scan runs_pkey']);
  });

  it("the claim's probe for claims gone idle: one queue's index entries at a time", async () => {
    const claims = (on: SqlExecutor) => new ClaimRepository(on as unknown as Database);
    const plan = await genericPlanOf((on) =>
      claims(on).claim({
        queues: [{ queue: 'default', limit: 1, wakeups: ['w#1'] }],
        limit: 1,
        workerId: 'w',
        buildId: null,
        claimMinIdleTimeMs: 30_000,
        maxStalls: 3,
      }),
    );
    const probe = nodes(nodes(plan).find((node) => node['Subplan Name'] === 'CTE idle_claims')!);
    const scans = probe.filter((node) => node['Relation Name'] === 'runs');
    expect(scans.map((scan) => [scan['Index Name'], scan['Index Cond']?.includes('(queue = q.queue)')])).toEqual([['runs_idle_claims_idx', true]]);
  });

  it('the finish', async () => {
    const plan = await genericPlanOf((on) => repository.finishMany([{ runId: id, expectedRevision: 1, outcome: { status: 'completed', output: 1 } }], on));
    expect(runScans(plan, 'held')).toEqual(['Index Scan runs_pkey']);
    expect(locksInInputOrder(plan, 'held')).toBe(true);
    expect(runScans(plan, 'finished')).toEqual(['Index Scan runs_pkey']);
    expect(runScans(plan, 'woken_parents')).toEqual(['Index Scan runs_pkey']);
  });

  it("a batch of runs' last task results with their outcomes, in one statement: locked once, by owner", async () => {
    const plan = await genericPlanOf((on) =>
      repository.recordTasksAndFinish(
        [{ runId: id, task: { expectedRevision: 1, key: 'k', seq: 0, name: 'k', status: 'completed', attempts: 1, output: 1, error: null } }],
        [{ runId: id, expectedRevision: 1, outcome: { status: 'completed', output: 1 } }],
        1_000,
        on,
      ),
    );
    expect(runScans(plan, 'owner')).toEqual(['Index Scan runs_pkey']);
    expect(locksInInputOrder(plan, 'owner')).toBe(true);
    // held reads what owner locked: no second lock, so no lock taken out of id order.
    expect(runScans(plan, 'held')).toEqual([]);
    expect(nodes(nodes(plan).find((node) => node['Subplan Name'] === 'CTE held')!).some((node) => node['Node Type'] === 'LockRows')).toBe(false);
    expect(runScans(plan, 'refreshed')).toEqual(['Index Scan runs_pkey']);
    expect(runScans(plan, 'finished')).toEqual(['Index Scan runs_pkey']);
    expect(runScans(plan, 'woken_parents')).toEqual(['Index Scan runs_pkey']);
  });
});
