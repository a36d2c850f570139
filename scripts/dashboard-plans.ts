/**
 * Plans of the operators' views (GET /v1/stats, GET /v1/runs, GET /v1/runs/{id}/transitions) on a large history:
 * a database of its own with a million finished runs over 30 days (3 transitions each) and a few thousand
 * unfinished ones, filled with generate_series; prints EXPLAIN (ANALYZE, BUFFERS) of each statement the
 * coordinator sends, taken from libs/persistence/src/sql (docs/benchmarks.md, "Operators' views"); drops the database after.
 *
 *   node -r ./scripts/register-ts.js scripts/dashboard-plans.ts [postgres://postgres@127.0.0.1:5432/postgres]
 */
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import {
  type Database,
  dispatchBacklog,
  ENTITIES,
  listRuns,
  MIGRATIONS,
  queueDepths,
  runsSince,
  throughputSince,
  transitionsAfter,
} from '../libs/persistence/src';

const server = process.argv[2] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const NAME = 'wf_dashboard_plans';
const FINISHED = 1_000_000;
const DAYS = 30;

/** A UUIDv7 of the time `t` (SQL), as the coordinator makes them: ids sort by creation time. */
const uuidv7Of = (t: string, seed: string) =>
  `(lpad(to_hex(floor(extract(epoch FROM ${t}) * 1000)::bigint), 12, '0') || '7' || substr(md5(${seed}::text), 1, 3) || '8' || substr(md5(${seed}::text), 4, 15))::uuid`;

const FILL = [
  // Finished runs, evenly over the last 30 days; 97% completed, 2% failed, 1% cancelled; five workflow versions.
  `INSERT INTO runs (id, workflow, version, queue, status, revision, due_at, created_at, updated_at, started_at, finished_at)
   SELECT ${uuidv7Of('t', 'i')}, w, '1', w || ':1',
          CASE WHEN i % 100 < 97 THEN 'completed' WHEN i % 100 < 99 THEN 'failed' ELSE 'cancelled' END,
          2, t, t, t + interval '2 seconds', t + interval '1 second', t + interval '2 seconds'
     FROM generate_series(1, ${FINISHED}) AS i,
          LATERAL (SELECT now() - interval '${DAYS} days' * (1 - i::float8 / ${FINISHED}) AS t,
                          (ARRAY['order-processing', 'echo', 'chain', 'sleepy', 'approval'])[1 + i % 5] AS w) x`,
  `INSERT INTO run_transitions (run_id, from_status, to_status, revision, worker_id, created_at)
   SELECT id, s.from_status, CASE WHEN s.revision = 2 THEN r.status ELSE s.to_status END, s.revision,
          CASE WHEN s.revision > 0 THEN 'worker-1' END, r.created_at + s.revision * interval '1 second'
     FROM runs r CROSS JOIN (VALUES (NULL, 'queued', 0), ('queued', 'running', 1), ('running', 'completed', 2)) AS s(from_status, to_status, revision)`,
  // Unfinished: ready, delayed, running and waiting runs of each workflow, created in the last hour.
  `INSERT INTO runs (id, workflow, version, queue, status, revision, due_at, created_at, updated_at, claimed_by, heartbeat_at)
   SELECT ${uuidv7Of('t', `'u' || i`)}, w, '1', w || ':1', k.status, 1,
          CASE k.kind WHEN 'ready' THEN t WHEN 'delayed' THEN now() + interval '1 hour' WHEN 'waiting' THEN 'infinity' ELSE t END,
          t, t, CASE WHEN k.status = 'running' THEN 'worker-1' END, CASE WHEN k.status = 'running' THEN now() END
     FROM generate_series(1, 4000) AS i,
          LATERAL (SELECT now() - interval '1 hour' * random() AS t, (ARRAY['order-processing', 'echo', 'chain', 'sleepy', 'approval'])[1 + i % 5] AS w) x,
          LATERAL (SELECT (ARRAY['ready', 'delayed', 'running', 'waiting'])[1 + i % 4] AS kind) c,
          LATERAL (SELECT CASE c.kind WHEN 'ready' THEN 'queued' WHEN 'delayed' THEN 'queued' WHEN 'running' THEN 'running' ELSE 'waiting' END AS status, c.kind) k`,
  'VACUUM ANALYZE runs',
  'VACUUM ANALYZE run_transitions',
];

async function main(): Promise<void> {
  const admin = new Client({ connectionString: server });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${NAME} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${NAME}`);
  await admin.end();
  const url = new URL(server);
  url.pathname = `/${NAME}`;

  const dataSource = new DataSource({ type: 'postgres', url: url.toString(), entities: ENTITIES, migrations: MIGRATIONS });
  await dataSource.initialize();
  await dataSource.runMigrations({ transaction: 'each' });
  await dataSource.destroy();

  const client = new Client({ connectionString: url.toString() });
  await client.connect();
  // The history guard and the notifications are triggers: not wanted for a bulk fill.
  await client.query(`SET session_replication_role = replica`);
  for (const statement of FILL) {
    const started = Date.now();
    await client.query(statement);
    console.log(`-- ${statement.split('\n')[0].slice(0, 60)}… ${Date.now() - started} ms`);
  }
  await client.query(`SET session_replication_role = origin`);

  /** Stands in for Database: explains each statement instead of running it. */
  const explaining = {
    async query<T>(text: string, values: unknown[] = []): Promise<T[]> {
      const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, values);
      console.log(`\n${text.replace(/\s+/g, ' ').slice(0, 160)}…\n${rows.map((row) => row['QUERY PLAN']).join('\n')}`);
      return [];
    },
  } as unknown as Database;
  const since = new Date(Math.floor((Date.now() - 86_400_000) / 60_000) * 60_000);
  const hour = new Date(Math.floor((Date.now() - 3_600_000) / 60_000) * 60_000);
  console.log('\n==== GET /v1/stats?window=1h');
  await runsSince(explaining, hour);
  await throughputSince(explaining, hour);
  console.log('\n==== GET /v1/stats?window=24h');
  await runsSince(explaining, since);
  await throughputSince(explaining, since);
  console.log('\n==== GET /v1/stats (either window)');
  await queueDepths(explaining);
  await dispatchBacklog(explaining);

  console.log('\n==== GET /v1/runs/{id}/transitions');
  const [{ id }] = (await client.query<{ id: string }>(`SELECT id FROM runs WHERE status = 'completed' ORDER BY id LIMIT 1 OFFSET 500000`)).rows;
  await transitionsAfter(explaining, id, '0', 1_001);

  // GET /v1/runs, by filter (planned for its values, as the coordinator sends it: the filters not given fold away).
  console.log('\n==== GET /v1/runs (newest first, limit 50, as RunsService.list asks for it)');
  await listRuns(explaining, { limit: 51 });
  await listRuns(explaining, { limit: 51, workflow: 'echo' });
  await listRuns(explaining, { limit: 51, status: 'failed' });
  await listRuns(explaining, { limit: 51, workflow: 'echo', status: 'failed' });
  await listRuns(explaining, { limit: 51, status: 'running' });
  await client.end();

  const dropper = new Client({ connectionString: server });
  await dropper.connect();
  await dropper.query(`DROP DATABASE IF EXISTS ${NAME} WITH (FORCE)`);
  await dropper.end();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
