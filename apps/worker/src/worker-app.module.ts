import { WorkflowWorkerModule } from '@app/sdk';
import { DynamicModule, Module } from '@nestjs/common';
import type { WorkerConfig } from './config/worker.config';
import { EXAMPLE_WORKFLOWS } from './workflows';

@Module({})
export class WorkerAppModule {
  /** The worker app hosting the example workflows, configured by an already validated config. */
  static register(config: WorkerConfig): DynamicModule {
    return {
      module: WorkerAppModule,
      imports: [WorkflowWorkerModule.forRoot({ workflows: EXAMPLE_WORKFLOWS, ...config })],
    };
  }
}
