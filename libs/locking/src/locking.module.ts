import { Module } from '@nestjs/common';
import { RunLeaseRepository } from './leases/run-lease.repository';

/** Claims and revision-checked writes. Needs PersistenceModule (global) in the importing app. */
@Module({
  providers: [RunLeaseRepository],
  exports: [RunLeaseRepository],
})
export class LockingModule {}
