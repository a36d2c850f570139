import { Workflow } from '@nest-durable/worker';
import { type WorkflowContext, WorkflowError } from '@nest-durable/workflow';
import { AccountsService } from './accounts.service';

/** No attempt can fix an address like this one: the run fails at once, without retries. */
export class InvalidEmailError extends WorkflowError {
  constructor(email: string) {
    super(`not an email address: ${email}`, { nonRetryable: true });
  }
}

export interface WelcomeInput {
  email: string;
}

export interface WelcomeOutput {
  accountId: string;
  mailed: string;
}

/** Signs a user up: creates the account, then sends the welcome mail (each step recorded once), through the app's AccountsService. */
@Workflow({ name: 'welcome', version: '1' })
export class WelcomeWorkflow {
  constructor(private readonly accounts: AccountsService) {}

  async run(ctx: WorkflowContext, input: WelcomeInput): Promise<WelcomeOutput> {
    const accountId = await ctx.task(
      'create-account',
      () => {
        if (!/^[^@\s]+@[^@\s]+$/.test(input.email)) throw new InvalidEmailError(input.email);
        return this.accounts.createAccount(input.email);
      },
      { retry: { maxAttempts: 5 } },
    );
    const mailed = await ctx.task('send-welcome-mail', () => this.accounts.sendWelcomeMail(input.email, accountId));
    return { accountId, mailed };
  }
}
