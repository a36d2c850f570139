// Locking, where the coordinator and the workers meet: the lease a worker holds on a run (the revision its
// writes are fenced with), and leader election for the coordinator's singleton daemons.
export * from './leader/leader-election.module';
export * from './leader/leader-election.service';
export * from './lease/run-lease';
export * from './leader/lock-sessions';
export * from './lease/lease-timing';
