// The SQL home: whole statements, each in a constant above the one function that runs it, grouped by table or
// concern, with why it is safe under concurrency. Callers keep the orchestration (transactions, fallbacks,
// errors).
export { claimRunsFull } from './claims-full.sql';
export { type ClaimParams, type ClaimRow, claimRunsCommon } from './claims.sql';
export { findExistingRunIds, findLandedOutcomes, findLandedSuspension, findSteps } from './fencing.sql';
export { refreshClaims } from './heartbeats.sql';
export { recordTaskResultsAndFinishRuns } from './report-batch.sql';
export {
  type FinishedRow,
  finishRuns,
  lockRunsInOrder,
  type OutcomeReport,
  type RecordedRow,
  recordTaskResults,
  releaseRun,
  retryRunLater,
  type RunOutcome,
  type TaskReport,
} from './reports.sql';
export {
  cancelRunTree,
  countPendingEvents,
  deliverEvent,
  failStalledTakenWith,
  lockRunStatus,
  retryFailedRun,
  storeEvent,
  wakeSleepingRun,
} from './run-commands.sql';
export { type HandOffTarget, startHandedPublishedRuns, startHandedRuns } from './runs-hand-off.sql';
export { insertChildRun, type NewRun, type StartedRun, startPublishedRuns, startRuns } from './runs-start.sql';
export { consumeEvent, insertChildStep, insertResolvedStep, type LockedRun, lockRunningRun, suspendRun, upsertWaitingStep } from './steps.sql';
export { type BranchRow, findGroupBranches, findLandedGroupSuspension, insertBranch, releaseLosersEvents, setBranch } from './groups.sql';
export * from './clock.sql';
export * from './completions.sql';
export * from './due-times.sql';
export * from './feed.sql';
export * from './stats.sql';
export * from './schedules.sql';
export * from './workers.sql';
export * from './workflow-controls.sql';
export * from './retention.sql';
export * from './input-schemas.sql';
export * from './dead-letters.sql';
export * from './runs-list.sql';
export * from './run-values.sql';
export * from './run-selection.sql';
export * from './leader.sql';
export * from './migration-lock.sql';
export * from './notifications.sql';
export * from './outbox.sql';
export * from './republish.sql';
export * from './stream-partitions.sql';
export * from './channels';
export * from './test-clock.sql';
export * from './updates.sql';
