import { WorkflowClient } from '@nest-durable/client';
import { Injectable, Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { WelcomeWorkflow } from './welcome.workflow';

/** One of the app's own services: starts a run for each sign-up and waits for its result. */
@Injectable()
export class SignupService {
  constructor(private readonly workflows: WorkflowClient) {}

  /** The finished run, and the new account's id when it completed. */
  async signUp(email: string) {
    // Started by its class: the input is checked against WelcomeWorkflow's `run`, and the result has its output type.
    // The idempotency key makes a repeated sign-up return the run already started.
    const run = await this.workflows.start(WelcomeWorkflow, { email }, { idempotencyKey: `sign-up:${email}` });
    const done = await this.workflows.waitForResult(run, { timeoutMs: 30_000 });
    return { run: done, accountId: done.status === 'completed' ? done.output.accountId : null };
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
