import { ConfigurableModuleBuilder, Module } from '@nestjs/common';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from './coordinator.config';

const { ConfigurableModuleClass } = new ConfigurableModuleBuilder<CoordinatorConfig>({
  moduleName: 'CoordinatorConfig',
  optionsInjectionToken: COORDINATOR_CONFIG,
})
  .setClassMethodName('forRoot')
  .setExtras({}, (definition) => ({ ...definition, global: true, exports: [COORDINATOR_CONFIG] }))
  .build();

/** The coordinator's validated config (loadCoordinatorConfig), injectable as COORDINATOR_CONFIG in every module. */
@Module({})
export class CoordinatorConfigModule extends ConfigurableModuleClass {}
