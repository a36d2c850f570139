import { RevisionConflictError, RunNotFoundError } from '@nest-durable/common';
import { findExistingRunIds, type SqlExecutor } from '@app/persistence';

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
  const existing = new Set(
    await findExistingRunIds(
      on,
      refused.map((item) => item.runId),
    ),
  );
  return refused.map(({ runId, expectedRevision }) => (existing.has(runId) ? new RevisionConflictError(runId, expectedRevision) : new RunNotFoundError(runId)));
}

/** The value, or throws the error a per-item write returned for it. */
export function unwrap<T>(result: T | Error): T {
  if (result instanceof Error) throw result;
  return result;
}
