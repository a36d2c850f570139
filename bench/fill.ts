// A long history, generated in SQL: finished runs of the bench's own workflows as the engine leaves them behind,
// for bench/history.ts (its template database) and bench/retention.ts.
import type { Client } from 'pg';
import { log, round } from './support';

/** Which finished runs to generate: how many, and how long ago they finished (evenly spread between the two ages). */
export interface HistoryShape {
  runs: number;
  oldestDays: number;
  newestDays: number;
}

/** Runs generated per statement: bounds the statement's memory, and the progress log ticks this often. */
const CHUNK = 250_000;

/** Time-ordered ids like the coordinator's UUIDv7: 48 bits of epoch ms, then the row number (unique where random bits might not be). */
export const v7 = (ms: string, n: string) => `(lpad(to_hex((${ms})::bigint), 12, '0') || '7000' || '8' || lpad(to_hex(${n}), 15, '0'))::uuid`;

/**
 * One statement per chunk ($1 the time the history ends at, $2..$3 the chunk's row numbers). Run i is, by i % 5,
 * a `probe` or an `echo` (no task rows) or a `chain` of 1, 2 or 3 steps (a task row each), with the three
 * transitions every run leaves (queued, running, its end) and the columns a worker's claim and finish set.
 * One run in twenty failed (its last step too), one in ten is tagged (`{"tenant": "t<0..99>", "env": "prod"}`),
 * one in four has an idempotency key (with its row in idempotency_keys). Rows go in in id order, as the coordinator
 * writes them.
 */
function chunkStatement(shape: HistoryShape): string {
  const spanMs = (shape.oldestDays - shape.newestDays) * 86_400_000;
  return `WITH base AS MATERIALIZED (
       SELECT i, shape, greatest(shape - 1, 0) AS steps, (i / 5) % 20 = 3 AS failed,
              CASE shape WHEN 0 THEN 'probe' WHEN 1 THEN 'echo' ELSE 'chain' END AS workflow,
              ${v7(`extract(epoch FROM created_at) * 1000`, 'i')} AS id, created_at, finished_at
         FROM generate_series($2::bigint, $3::bigint) i,
              LATERAL (SELECT (i % 5)::int AS shape,
                              $1::timestamptz - ${shape.newestDays} * interval '1 day'
                                - (1 - i::float8 / ${shape.runs}) * ${spanMs} * interval '1 ms' AS finished_at) f,
              LATERAL (SELECT finished_at - (60 + 40 * greatest(shape - 1, 0)) * interval '1 ms' AS created_at) c
     ), added_runs AS (
       INSERT INTO runs (id, workflow, version, queue, status, revision, input, output, error, idempotency_key, tags, due_at,
                         claimed_by, created_at, updated_at, started_at, finished_at, build_id)
       SELECT id, workflow, '1', workflow || ':1', CASE WHEN failed THEN 'failed' ELSE 'completed' END, 2,
              CASE shape WHEN 0 THEN NULL WHEN 1 THEN jsonb_build_object('n', i) ELSE jsonb_build_object('steps', steps) END,
              CASE WHEN failed THEN NULL WHEN shape = 0 THEN jsonb_build_object('startedAt', i / 1000.0::float8)
                   WHEN shape = 1 THEN jsonb_build_object('n', i) ELSE jsonb_build_object('steps', steps) END,
              CASE WHEN failed THEN jsonb_build_object('name', 'Error', 'message', 'step failed') END,
              CASE WHEN (i / 3) % 4 = 0 THEN 'order-' || i END,
              CASE WHEN (i / 7) % 10 = 0 THEN jsonb_build_object('tenant', 't' || (i / 70) % 100, 'env', 'prod') ELSE '{}' END,
              created_at, 'history-worker', created_at, finished_at, created_at + interval '20 ms', finished_at, '0.1.0'
         FROM base ORDER BY i
     ), added_keys AS (
       -- What the trigger runs_claim_idempotency_key writes, which does not fire here (session_replication_role).
       INSERT INTO idempotency_keys (workflow, idempotency_key, run_id)
       SELECT workflow, 'order-' || i, id FROM base WHERE (i / 3) % 4 = 0 ORDER BY i
     ), added_tasks AS (
       INSERT INTO tasks (run_id, key, kind, seq, name, status, attempts, output, error, created_at, started_at)
       SELECT id, 'step#' || k, 'task', k - 1, 'step', CASE WHEN failed AND k = steps THEN 'failed' ELSE 'completed' END,
              CASE WHEN failed AND k = steps THEN 3 ELSE 1 END,
              CASE WHEN failed AND k = steps THEN NULL ELSE to_jsonb(k) END,
              CASE WHEN failed AND k = steps THEN jsonb_build_object('name', 'Error', 'message', 'step failed') END,
              created_at + (k * 40) * interval '1 ms', created_at + (k * 40 - 10) * interval '1 ms'
         FROM base CROSS JOIN LATERAL generate_series(1, steps) k ORDER BY i, k
     )
     INSERT INTO run_transitions (run_id, from_status, to_status, revision, worker_id, created_at)
     SELECT id, t.from_status, coalesce(t.to_status, CASE WHEN failed THEN 'failed' ELSE 'completed' END), t.revision,
            CASE WHEN t.revision > 0 THEN 'history-worker' END,
            CASE t.revision WHEN 0 THEN created_at WHEN 1 THEN created_at + interval '20 ms' ELSE finished_at END
       FROM base CROSS JOIN (VALUES (NULL, 'queued', 0), ('queued', 'running', 1), ('running', NULL, 2)) AS t(from_status, to_status, revision)
      ORDER BY i, t.revision`;
}

/** The statements fillHistory runs, as text: what a template built from them is named after (bench/history.ts). */
export function fillText(shape: HistoryShape): string {
  return `${JSON.stringify(shape)}\n${chunkStatement(shape)}`;
}

/**
 * Generates `shape` into the (migrated, otherwise empty) database of `client`, then VACUUM (ANALYZE): statistics,
 * visibility map and hint bits set, as a long-lived production database has them. Returns the seconds it took.
 */
export async function fillHistory(client: Client, shape: HistoryShape): Promise<number> {
  const started = performance.now();
  const endsAt = new Date();
  // The history guard's and the notifications' triggers, and the foreign-key checks, are not wanted for rows
  // generated consistent; a crash mid-fill loses nothing that matters (the template is renamed into place after).
  await client.query(`SET session_replication_role = replica`);
  await client.query(`SET synchronous_commit = off`);
  const statement = chunkStatement(shape);
  for (let first = 1; first <= shape.runs; first += CHUNK) {
    const last = Math.min(shape.runs, first + CHUNK - 1);
    await client.query(statement, [endsAt, first, last]);
    log(`history: ${last.toLocaleString()} of ${shape.runs.toLocaleString()} runs (${round((performance.now() - started) / 1000, 0)} s)`);
  }
  await client.query(`RESET session_replication_role`);
  await client.query(`SET maintenance_work_mem = '512MB'`);
  await client.query(`VACUUM (ANALYZE)`);
  const seconds = round((performance.now() - started) / 1000, 0);
  log(`history: filled and vacuumed in ${seconds} s`);
  return seconds;
}
