export * from './claims/claim.repository';
export * from './control/run-control.repository';
export * from './heartbeats/heartbeat.repository';
export * from './leader/leader-election.module';
export * from './leader/leader-election.service';
export * from './locking.module';
export * from './reports/report.repository';
export * from './steps/step.repository';
export { DISPATCHING, type NewRun, RUN_COLUMNS } from './runs/run-sql';
