/**
 * What the live feed's NOTIFY (the run_transitions_notify trigger) costs on the hot path: the claim + report
 * of runs through the worker protocol against an in-process coordinator, and a bare history-appending
 * statement, with the trigger disabled (as before the feed), enabled while no feed is open, and enabled while
 * one is (a feed_watchers row), alternating (docs/benchmarks.md, "Operators' views"). Not the bench suite.
 *
 *   node -r ./scripts/register-ts.js scripts/feed-notify-cost.ts [postgres://postgres@127.0.0.1:5432/postgres]
 */
import { API, type ClaimResponse, type ReportsResponse } from '@nest-durable/client';
import { Client } from 'pg';
import { createCoordinatorApp } from '../apps/coordinator/src/bootstrap';
import { loadCoordinatorConfig } from '../apps/coordinator/src/config/coordinator.config';
import { RUN_TABLES } from '@app/persistence';

const server = process.argv[2] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const NAME = 'wf_feed_notify_cost';
const RUNS = 5_000;
const CLAIMERS = 4;
const BATCH = 10;
const ROUNDS = 3;
const STATEMENTS = 1_000;

async function main(): Promise<void> {
  const admin = new Client({ connectionString: server });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${NAME} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${NAME}`);
  await admin.end();
  const url = new URL(server);
  url.pathname = `/${NAME}`;

  const config = { ...loadCoordinatorConfig({ DATABASE_URL: url.toString(), AUTH_DISABLED: 'true' }), port: 0, host: '127.0.0.1' };
  const app = await createCoordinatorApp(config, ['error']);
  await app.listen(0, '127.0.0.1');
  const base = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
  const post = async <T>(path: string, body: unknown): Promise<T> => {
    const response = await fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  };
  const sql = new Client({ connectionString: url.toString() });
  await sql.connect();

  /** Runs/s of claiming and completing RUNS runs, BATCH at a time, by CLAIMERS concurrent workers. */
  const measure = async (): Promise<number> => {
    await sql.query(`TRUNCATE ${RUN_TABLES.join(', ')} CASCADE`);
    for (let i = 0; i < RUNS; i += 1_000) {
      await post(API.startRuns.path, { runs: Array.from({ length: 1_000 }, () => ({ workflow: 'echo', version: '1', input: null })) });
    }
    const started = performance.now();
    await Promise.all(
      Array.from({ length: CLAIMERS }, async (_, n) => {
        for (;;) {
          const { runs } = await post<ClaimResponse>(API.claimRuns.path, { workerId: `w${n}`, workflows: [{ name: 'echo', version: '1' }], limit: BATCH });
          if (runs.length === 0) return;
          const reports = runs.map((run) => ({ type: 'complete', runId: run.id, complete: { expectedRevision: run.revision, output: null } }));
          const { outcomes } = await post<ReportsResponse>(API.report.path, { reports });
          if (!outcomes.every((outcome) => outcome.ok)) throw new Error('a report was refused');
        }
      }),
    );
    return RUNS / ((performance.now() - started) / 1000);
  };

  /**
   * Mean ms of one transaction appending 10 history rows (what a claim of 10 adds), committed: the trigger's
   * own cost and its NOTIFY at commit, heard by the coordinator's LISTEN session, without HTTP around it.
   */
  const appendHistory = async (): Promise<number> => {
    const started = performance.now();
    for (let i = 0; i < STATEMENTS; i++) {
      await sql.query(
        `INSERT INTO run_transitions (run_id, from_status, to_status, revision)
         SELECT id, 'running', 'completed', 2 FROM runs ORDER BY id LIMIT 10`,
      );
    }
    return (performance.now() - started) / STATEMENTS;
  };

  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const compare = async (what: string, unit: string, run: () => Promise<number>) => {
    const modes = ['disabled', 'unwatched', 'watched'] as const;
    const results: Record<(typeof modes)[number], number[]> = { disabled: [], unwatched: [], watched: [] };
    await run(); // warm-up
    for (let round = 0; round < ROUNDS; round++) {
      for (const mode of modes) {
        await sql.query(`ALTER TABLE run_transitions ${mode === 'disabled' ? 'DISABLE' : 'ENABLE'} TRIGGER run_transitions_notify`);
        await sql.query('DELETE FROM feed_watchers');
        if (mode === 'watched') await sql.query(`INSERT INTO feed_watchers VALUES ('feed-notify-cost', now() + interval '1 hour')`);
        results[mode].push(await run());
      }
    }
    for (const mode of modes) {
      console.log(
        `${what}, trigger ${mode}: ${results[mode].map((value) => value.toFixed(2)).join(', ')} ${unit} (median ${median(results[mode]).toFixed(2)})`,
      );
    }
  };
  await compare('claim + report of 5,000 runs, 4 claimers of 10', 'runs/s', measure);
  await compare('a committed statement appending 10 history rows', 'ms', appendHistory);
  await sql.end();
  await app.close();
  const dropper = new Client({ connectionString: server });
  await dropper.connect();
  await dropper.query(`DROP DATABASE IF EXISTS ${NAME} WITH (FORCE)`);
  await dropper.end();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
