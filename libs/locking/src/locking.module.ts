import { Module } from '@nestjs/common';
import { RunControlRepository } from './leases/run-control.repository';
import { RunLeaseRepository } from './leases/run-lease.repository';

/** Claims and every state change of a run. Needs PersistenceModule (global) in the importing app. */
@Module({
  providers: [RunLeaseRepository, RunControlRepository],
  exports: [RunLeaseRepository, RunControlRepository],
})
export class LockingModule {}
