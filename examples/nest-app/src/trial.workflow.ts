import { Workflow } from '@nest-durable/worker';
import type { WorkflowContext } from '@nest-durable/workflow';
import { AccountsService } from './accounts.service';

export interface TrialInput {
  email: string;
  accountId: string;
}

/** A week-long free trial: mails when it starts, sleeps 7 days (durably: no worker waits), then mails that it ended. */
@Workflow({ name: 'trial', version: '1' })
export class TrialWorkflow {
  static readonly LENGTH_MS = 7 * 24 * 3_600_000;

  constructor(private readonly accounts: AccountsService) {}

  async run(ctx: WorkflowContext, input: TrialInput): Promise<{ ended: string }> {
    await ctx.task('trial-started-mail', () => this.accounts.sendMail(input.email, `your trial of ${input.accountId} has started`));
    await ctx.sleep('trial', TrialWorkflow.LENGTH_MS);
    const ended = await ctx.task('trial-ended-mail', () => this.accounts.sendMail(input.email, `your trial of ${input.accountId} has ended`));
    return { ended };
  }
}
