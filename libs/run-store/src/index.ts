// The run store (server side): claims, task and outcome reports, heartbeats, steps and the operators' controls
// of runs, each a revision-fenced statement against PostgreSQL (the statements are in @app/persistence's SQL
// home). Used by the coordinator only.
export * from './claims/claim.repository';
export * from './completions/completion.repository';
export * from './control/run-control.repository';
export * from './heartbeats/heartbeat.repository';
export { type FinishedRun, ReportAnswerError, type RunFinished } from './reports/report-answers';
export * from './reports/report.repository';
export * from './run-store.module';
export * from './steps/group.repository';
export * from './steps/step.repository';
export * from './updates/update.repository';
