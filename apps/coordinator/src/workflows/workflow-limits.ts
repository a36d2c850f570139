import type { RegisteredWorkflow, WorkflowLimits } from '@nest-durable/common';
import { changedCodeLimits, countRunningSlots, lockFlowVersion, recordCodeLimits, setApiLimits, type SqlExecutor } from '@app/persistence';

/*
 * The changes of workflow versions' limits that take several statements, in the caller's transaction. Each
 * takes the version's advisory lock (lockFlowVersion) before it writes the control row, so the claims in flight
 * finish first and a limit counts their runs (see libs/persistence/src/sql/workflow-controls.sql.ts).
 */

/**
 * Records the limits workers declare in code where they differ from what is recorded, and returns the versions
 * changed. Cheap when nothing changed (it runs at every registration): one read, no write and no lock.
 */
export async function reconcileCodeLimits(tx: SqlExecutor, workflows: RegisteredWorkflow[]): Promise<{ workflow: string; version: string }[]> {
  const changing = await changedCodeLimits(tx, workflows);
  if (changing.length === 0) return [];
  // The claims in flight first (see lockFlowVersion), then the rows.
  for (const { workflow, version } of changing) await lockFlowVersion(tx, workflow, version);
  return recordCodeLimits(tx, workflows);
}

/**
 * Replaces the limits set through the API (null: none set there). Running runs of the version start
 * holding a slot if it now has a concurrency limit (they count against it).
 */
export async function replaceApiLimits(tx: SqlExecutor, name: string, version: string, limits: WorkflowLimits): Promise<void> {
  await lockFlowVersion(tx, name, version);
  await setApiLimits(tx, name, version, limits);
  await countRunningSlots(tx, name, version);
}
