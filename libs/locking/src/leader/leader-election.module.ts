import { DynamicModule, Module } from '@nestjs/common';
import { LEADER_ELECTION_OPTIONS, LeaderElection, type LeaderElectionOptions } from './leader-election.service';

@Module({})
export class LeaderElectionModule {
  static forRoot(options: LeaderElectionOptions): DynamicModule {
    return {
      module: LeaderElectionModule,
      global: true,
      providers: [{ provide: LEADER_ELECTION_OPTIONS, useValue: options }, LeaderElection],
      exports: [LeaderElection],
    };
  }
}
