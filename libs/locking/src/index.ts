export * from './leader/leader-election.module';
export * from './leader/leader-election.service';
export * from './leases/run-control.repository';
export * from './leases/run-lease.repository';
export * from './locking.module';
