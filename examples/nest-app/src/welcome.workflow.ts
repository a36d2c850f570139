import { defineWorkflow, WorkflowError } from '@nest-durable/workflow';
import { createHash } from 'node:crypto';

/** No attempt can fix an address like this one: the run fails at once, without retries. */
export class InvalidEmailError extends WorkflowError {
  constructor(email: string) {
    super(`not an email address: ${email}`, { nonRetryable: true });
  }
}

/** Signs a user up: creates the account, then sends the welcome mail (each step recorded once). */
export const welcomeWorkflow = defineWorkflow<{ email: string }, { accountId: string; mailed: string }>({
  name: 'welcome',
  version: '1',
  handler: async (ctx, input) => {
    const accountId = await ctx.task(
      'create-account',
      () => {
        if (!/^[^@\s]+@[^@\s]+$/.test(input.email)) throw new InvalidEmailError(input.email);
        return `acct-${createHash('sha256').update(input.email).digest('hex').slice(0, 12)}`;
      },
      { retry: { maxAttempts: 5 } },
    );
    const mailed = await ctx.task('send-welcome-mail', () => `welcome mail to ${input.email} for ${accountId}`);
    return { accountId, mailed };
  },
});
