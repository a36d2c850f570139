import { RevisionConflictError, RunNotFoundError, type StoredTask } from '@nest-durable/common';
import type { SqlExecutor } from '@app/persistence';
import { STEP_COLUMNS } from './run-sql';

/**
 * Tells a missing run (404) from a stale revision (409) after a guarded write matched nothing. Runs
 * on the caller's executor: inside a transaction, taking a second pool connection while holding one
 * deadlocks a small pool under load (every holder waits for a connection only a holder can free).
 */
export async function conflictFor(on: SqlExecutor, runId: string, expectedRevision: number): Promise<Error> {
  return (await conflictsFor(on, [{ runId, expectedRevision }]))[0];
}

/** conflictFor for many refused writes, in one statement. */
export async function conflictsFor(on: SqlExecutor, refused: { runId: string; expectedRevision: number }[]): Promise<Error[]> {
  if (refused.length === 0) return [];
  const rows = await on.query<{ id: string }>(`SELECT id FROM runs WHERE id = ANY($1::uuid[])`, [refused.map((item) => item.runId)]);
  const existing = new Set(rows.map((row) => row.id));
  return refused.map(({ runId, expectedRevision }) => (existing.has(runId) ? new RevisionConflictError(runId, expectedRevision) : new RunNotFoundError(runId)));
}

/** One recorded step of a run, by key. */
export async function findStep(on: SqlExecutor, runId: string, key: string): Promise<StoredTask | undefined> {
  return (await findSteps(on, [{ runId, key }]))[0];
}

/** Recorded steps by run and key, in one statement; undefined where there is none. */
export async function findSteps(on: SqlExecutor, wanted: { runId: string; key: string }[]): Promise<(StoredTask | undefined)[]> {
  if (wanted.length === 0) return [];
  const rows = await on.query<StoredTask & { n: string }>(
    `SELECT w.n, ${STEP_COLUMNS.split(', ')
      .map((column) => `t.${column}`)
      .join(', ')}
       FROM unnest($1::uuid[], $2::text[]) WITH ORDINALITY AS w(run_id, key, n)
       JOIN tasks t ON t.run_id = w.run_id AND t.key = w.key`,
    [wanted.map((item) => item.runId), wanted.map((item) => item.key)],
  );
  const byPosition = new Map(rows.map(({ n, ...step }) => [Number(n), step as StoredTask]));
  return wanted.map((_, index) => byPosition.get(index + 1));
}

/** The value, or throws the error a per-item write returned for it. */
export function unwrap<T>(result: T | Error): T {
  if (result instanceof Error) throw result;
  return result;
}
