import { Module } from '@nestjs/common';
import { ClaimRepository } from './claims/claim.repository';
import { CompletionRepository } from './completions/completion.repository';
import { RunControlRepository } from './control/run-control.repository';
import { HeartbeatRepository } from './heartbeats/heartbeat.repository';
import { ReportRepository } from './reports/report.repository';
import { GroupRepository } from './steps/group.repository';
import { StepRepository } from './steps/step.repository';
import { UpdateRepository } from './updates/update.repository';

const REPOSITORIES = [
  ClaimRepository,
  HeartbeatRepository,
  ReportRepository,
  StepRepository,
  GroupRepository,
  RunControlRepository,
  CompletionRepository,
  UpdateRepository,
];

/** The run store: claims and every state change of a run. Needs PersistenceModule (global) in the importing app. */
@Module({ providers: REPOSITORIES, exports: REPOSITORIES })
export class RunStoreModule {}
