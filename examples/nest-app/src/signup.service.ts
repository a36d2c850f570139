import { WorkflowClient } from '@nest-durable/client';
import { Injectable, Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { welcomeWorkflow } from './welcome.workflow';

/** One of the app's own services: starts a run for each sign-up and waits for its result. */
@Injectable()
export class SignupService {
  constructor(private readonly workflows: WorkflowClient) {}

  async signUp(email: string) {
    // The idempotency key makes a repeated sign-up return the run already started.
    const run = await this.workflows.start(welcomeWorkflow, { email }, { idempotencyKey: `sign-up:${email}` });
    return this.workflows.waitForResult(run.id, { timeoutMs: 30_000 });
  }
}

/** The client is a plain class (no Nest inside): provide it like any other value. */
@Module({
  imports: [ConfigModule.forRoot()],
  providers: [
    {
      provide: WorkflowClient,
      inject: [ConfigService],
      useFactory: (config: ConfigService) => new WorkflowClient({ url: config.getOrThrow<string>('COORDINATOR_URL') }),
    },
    SignupService,
  ],
  exports: [SignupService],
})
export class SignupModule {}
