// Claim latency while retention deletes, on a database with a million finished runs, and the query plans
// of the tag filter and of a retention batch. Heavy (about 7 million rows): run it alone, once.
//
//   node -r ./scripts/register-ts.js bench/retention.ts [--runs 1000000] [--seconds 20]
//
// Fills a fresh database with SQL (fill.ts): N runs of the bench's workflows finished 8 to 38 days ago (past the
// default 7-day window), each with 0 to 3 steps and 3 transitions, one in ten tagged; and 50,000 queued runs of
// the workflow the claimers take. Then, twice for the same time (with RUN_RETENTION_MS=0, then with 7 days and
// the daemon deleting), 4 claimers loop: claim up to 10 runs (no long-poll), complete them one by one.
// Reports the claim requests' latency (p50/p99/max) and how fast retention deleted meanwhile.
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { DELETE_FINISHED_RUNS } from '../libs/persistence/src/sql/retention.sql';
import { fillHistory, v7 } from './fill';
import { BenchDatabase, freePort, log, percentile, Proc, ROOT, round, until } from './support';

const args = process.argv.slice(2);
const option = (name: string, fallback: number) => {
  const index = args.indexOf(`--${name}`);
  return index >= 0 ? Number(args[index + 1]) : fallback;
};
const FINISHED_RUNS = option('runs', 1_000_000);
const SECONDS = option('seconds', 20);
const QUEUED_RUNS = 50_000;
const CLAIMERS = 4;
const DAY_MS = 86_400_000;

/** N runs of the bench's shapes that finished 8 to 38 days ago (fill.ts), then the queued runs the claimers take. */
async function fill(db: BenchDatabase): Promise<void> {
  const started = performance.now();
  await fillHistory(db.client, { runs: FINISHED_RUNS, oldestDays: 38, newestDays: 8 });
  await db.client.query(`INSERT INTO runs (id, workflow, version, queue, status, input)
       SELECT ${v7(`extract(epoch FROM now()) * 1000`, `${FINISHED_RUNS} + i`)}, 'claimed', '1', 'claimed:1', 'queued', '{}'::jsonb
         FROM generate_series(1, ${QUEUED_RUNS}) i`);
  await db.client.query(`ANALYZE runs`);
  const size = (await db.client.query(`SELECT pg_size_pretty(pg_database_size(current_database())) AS size`)).rows[0].size;
  log(`filled in ${round((performance.now() - started) / 1000)} s (${size})`);
}

async function explain(db: BenchDatabase, title: string, text: string): Promise<void> {
  const { rows } = await db.client.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${text}`);
  log(`${title}:\n${rows.map((row) => `    ${row['QUERY PLAN']}`).join('\n')}`);
}

async function plans(db: BenchDatabase): Promise<void> {
  const columns = `id, workflow, version, status, tags, created_at`;
  await explain(
    db,
    'list ?tag=tenant:t7 (1,000 of 100,000 tagged runs)',
    `SELECT ${columns} FROM runs WHERE tags <> '{}' AND tags @> '{"tenant":"t7"}' ORDER BY id DESC LIMIT 51`,
  );
  await explain(
    db,
    'list ?tag=env:prod (all 100,000 tagged runs)',
    `SELECT ${columns} FROM runs WHERE tags <> '{}' AND tags @> '{"env":"prod"}' ORDER BY id DESC LIMIT 51`,
  );
  await explain(
    db,
    'list ?tag=tenant:t7&tag=env:prod&workflow=chain',
    `SELECT ${columns} FROM runs WHERE workflow = 'chain' AND tags <> '{}' AND tags @> '{"tenant":"t7","env":"prod"}' ORDER BY id DESC LIMIT 51`,
  );
  await explain(db, 'list ?tag=tenant:nobody', `SELECT ${columns} FROM runs WHERE tags <> '{}' AND tags @> '{"tenant":"nobody"}' ORDER BY id DESC LIMIT 51`);
}

/** The coordinator from its TypeScript sources (no build needed) as a process of its own, once it is ready. */
async function startCoordinator(db: BenchDatabase, env: Record<string, string>): Promise<{ proc: Proc; url: string }> {
  const port = await freePort();
  const proc = new Proc('apps/coordinator/src/main.ts', {
    NODE_OPTIONS: `-r ${join(ROOT, 'scripts/register-ts.js')}`,
    LOG_LEVEL: 'warn',
    LOG_FORMAT: 'json',
    DATABASE_URL: db.url,
    PORT: String(port),
    HOST: '127.0.0.1',
    AUTH_DISABLED: 'true',
    ...env,
  });
  const url = `http://127.0.0.1:${port}`;
  await until(
    `the coordinator\n${proc.output}`,
    () =>
      fetch(`${url}/health/ready`).then(
        (r) => r.ok,
        () => false,
      ),
    120_000,
    200,
  );
  return { proc, url };
}

interface Phase {
  claims: number[];
  runsClaimed: number;
  deleted: number;
}

/** CLAIMERS loops of claim (up to 10, no wait) then complete each, for SECONDS; the claims' latencies in ms. */
async function claimLoad(db: BenchDatabase, url: string): Promise<Phase> {
  const before = await historyRuns(db);
  const claims: number[] = [];
  let runsClaimed = 0;
  const deadline = Date.now() + SECONDS * 1000;
  const post = async (path: string, body: unknown) => {
    const response = await fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    return response.json() as Promise<{ runs: { id: string; revision: number }[] }>;
  };
  await Promise.all(
    Array.from({ length: CLAIMERS }, async (_, n) => {
      while (Date.now() < deadline) {
        const started = performance.now();
        const { runs } = await post('/v1/worker/claims', { workerId: `bench-${n}`, workflows: [{ name: 'claimed', version: '1' }], limit: 10, waitMs: 0 });
        claims.push(performance.now() - started);
        runsClaimed += runs.length;
        for (const run of runs) await post(`/v1/worker/runs/${run.id}/complete`, { expectedRevision: run.revision, output: null });
      }
    }),
  );
  return { claims, runsClaimed, deleted: before - (await historyRuns(db)) };
}

async function historyRuns(db: BenchDatabase): Promise<number> {
  return Number((await db.client.query(`SELECT count(*) FROM runs WHERE workflow <> 'claimed'`)).rows[0].count);
}

function summary(name: string, phase: Phase): string {
  const { claims } = phase;
  return `| ${name} | ${claims.length} | ${round(percentile(claims, 50), 2)} | ${round(percentile(claims, 99), 2)} | ${round(Math.max(...claims), 1)} | ${round(phase.runsClaimed / SECONDS, 0)} | ${round(phase.deleted / SECONDS, 0)} |`;
}

async function main(): Promise<void> {
  const db = await BenchDatabase.create('retention');
  let coordinator: { proc: Proc; url: string } | undefined;
  try {
    // Migrate the schema by starting a coordinator once (keeping everything).
    coordinator = await startCoordinator(db, { RUN_RETENTION_MS: '0' });
    await fill(db);
    await plans(db);

    log(`claiming for ${SECONDS} s without retention…`);
    const without = await claimLoad(db, coordinator.url);
    await coordinator.proc.stop();

    coordinator = await startCoordinator(db, { RUN_RETENTION_MS: String(7 * DAY_MS), RETENTION_INTERVAL_MS: '1000' });
    await until('retention to start deleting', async () => (await historyRuns(db)) < FINISHED_RUNS, 60_000, 100);
    log(`claiming for ${SECONDS} s while retention deletes…`);
    const withRetention = await claimLoad(db, coordinator.url);
    const left = await historyRuns(db);
    // The daemon's own statement, with the default window and no overrides (it deletes the batch it plans).
    await db.client.query(`SET jit = off`); // as the daemon runs it (tuneRetentionBatch)
    await db.client.query(`PREPARE retention_batch(bigint, text[], bigint[], integer) AS ${DELETE_FINISHED_RUNS}`);
    await explain(
      db,
      'one retention batch of 500 (RUN_RETENTION_MS=7d), while the daemon deletes too',
      `EXECUTE retention_batch(${7 * DAY_MS}, '{}', '{}', 500)`,
    );
    await coordinator.proc.stop();
    coordinator = undefined;

    const table = [
      '| phase | claims | p50 ms | p99 ms | max ms | runs claimed/s | runs deleted/s |',
      '|---|---|---|---|---|---|---|',
      summary('no retention (RUN_RETENTION_MS=0)', without),
      summary('retention deleting (7 d, batches of 500)', withRetention),
    ].join('\n');
    log(
      `results (${FINISHED_RUNS.toLocaleString()} finished runs, ${CLAIMERS} claimers, ${SECONDS} s each; ${left.toLocaleString()} left to delete):\n${table}`,
    );
  } finally {
    await coordinator?.proc.stop();
    await sleep(100);
    await db.drop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
