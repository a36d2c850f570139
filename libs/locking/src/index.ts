export * from './leases/run-lease.repository';
export * from './locking.module';
