import { RevisionConflictError, RunNotFoundError, type StoredTask } from '@app/contracts';
import type { SqlExecutor } from '@app/persistence';
import { STEP_COLUMNS } from './run-sql';

/**
 * Tells a missing run (404) from a stale revision (409) after a guarded write matched nothing. Runs
 * on the caller's executor: inside a transaction, taking a second pool connection while holding one
 * can deadlock the pool under load.
 */
export async function conflictFor(on: SqlExecutor, runId: string, expectedRevision: number): Promise<Error> {
  const [exists] = await on.query(`SELECT 1 FROM runs WHERE id = $1`, [runId]);
  return exists ? new RevisionConflictError(runId, expectedRevision) : new RunNotFoundError(runId);
}

/** One recorded step of a run, by key. */
export async function findStep(on: SqlExecutor, runId: string, key: string): Promise<StoredTask | undefined> {
  const [step] = await on.query<StoredTask>(`SELECT ${STEP_COLUMNS} FROM tasks WHERE run_id = $1 AND key = $2`, [runId, key]);
  return step;
}

/** The value, or throws the error a per-item write returned for it. */
export function unwrap<T>(result: T | Error): T {
  if (result instanceof Error) throw result;
  return result;
}
