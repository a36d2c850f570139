import { ConfigurableModuleBuilder, Module } from '@nestjs/common';
import { LEADER_ELECTION_OPTIONS, LeaderElection, type LeaderElectionOptions } from './leader-election.service';

const { ConfigurableModuleClass } = new ConfigurableModuleBuilder<LeaderElectionOptions>({
  moduleName: 'LeaderElection',
  optionsInjectionToken: LEADER_ELECTION_OPTIONS,
})
  .setClassMethodName('forRoot')
  .setExtras({}, (definition) => ({
    ...definition,
    // Global: the singleton daemons of every module register with the one election.
    global: true,
    providers: [...(definition.providers ?? []), LeaderElection],
    exports: [LeaderElection],
  }))
  .build();

/**
 * Leader election for singleton daemons: `forRoot({ checkIntervalMs })` or `forRootAsync(...)`. The locks are
 * taken through the LOCK_SESSIONS the app provides (the coordinator's PersistenceModule: PostgreSQL advisory locks).
 */
@Module({})
export class LeaderElectionModule extends ConfigurableModuleClass {}
