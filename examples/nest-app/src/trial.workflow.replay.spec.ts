import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createTestEnvironment, ReplayDivergenceError, replayHistories, type TestEnvironment } from '@nest-durable/testing';
import { Workflow } from '@nest-durable/worker';
import type { WorkflowContext } from '@nest-durable/workflow';
import { AccountsService } from './accounts.service';
import { type TrialInput, TrialWorkflow } from './trial.workflow';

const mails = { sendMail: (email: string, text: string) => `sent to ${email}: ${text}` } as unknown as AccountsService;

/** The next version of TrialWorkflow, deployed over runs in flight: a reminder mail before the trial's sleep, behind a patch. */
@Workflow({ name: 'trial', version: '1' })
class TrialWithReminder {
  constructor(private readonly accounts: AccountsService) {}

  async run(ctx: WorkflowContext, input: TrialInput): Promise<{ ended: string }> {
    await ctx.task('trial-started-mail', () => this.accounts.sendMail(input.email, `your trial of ${input.accountId} has started`));
    if (ctx.patched('reminder-mail')) {
      await ctx.task('reminder-mail', () => this.accounts.sendMail(input.email, 'your trial ends in a week'));
    }
    await ctx.sleep('trial', TrialWorkflow.LENGTH_MS);
    const ended = await ctx.task('trial-ended-mail', () => this.accounts.sendMail(input.email, `your trial of ${input.accountId} has ended`));
    return { ended };
  }
}

/** The same change without the patch: runs recorded by TrialWorkflow cannot take it. */
@Workflow({ name: 'trial', version: '1' })
class TrialWithUnguardedReminder {
  constructor(private readonly accounts: AccountsService) {}

  async run(ctx: WorkflowContext, input: TrialInput): Promise<{ ended: string }> {
    await ctx.task('trial-started-mail', () => this.accounts.sendMail(input.email, `your trial of ${input.accountId} has started`));
    await ctx.task('reminder-mail', () => this.accounts.sendMail(input.email, 'your trial ends in a week'));
    await ctx.sleep('trial', TrialWorkflow.LENGTH_MS);
    const ended = await ctx.task('trial-ended-mail', () => this.accounts.sendMail(input.email, `your trial of ${input.accountId} has ended`));
    return { ended };
  }
}

/**
 * Changing TrialWorkflow while trials are in flight, checked as a CI step would before the deploy: histories
 * recorded by today's code (one trial asleep, one finished) replay against the next version without running a task.
 */
describe('TrialWorkflow, changed safely', () => {
  let env: TestEnvironment;

  beforeAll(async () => {
    env = await createTestEnvironment({
      providers: [AccountsService, TrialWorkflow],
      override: (builder) => builder.overrideProvider(AccountsService).useValue(mails),
      logger: [],
    });
    const finished = await env.client.start(TrialWorkflow, { email: 'bob@example.com', accountId: 'acct-2' });
    await env.skipTime(TrialWorkflow.LENGTH_MS);
    await env.client.waitForResult(finished, { timeoutMs: 5_000 });
    const asleep = await env.client.start(TrialWorkflow, { email: 'carol@example.com', accountId: 'acct-3' });
    await env.skipTime(1);
    expect((await env.client.get(asleep.id)).status).toBe('waiting');
  }, 60_000);

  afterAll(async () => {
    await env?.close();
  });

  it('replays the recorded trials cleanly against the version guarded by ctx.patched', async () => {
    const replayed = await replayHistories(new TrialWithReminder(mails), { coordinator: env.client });
    expect(replayed.map((run) => run.status).sort()).toEqual(['completed', 'waiting']);
  });

  it('fails the unguarded change, naming the run and the step where it diverges', async () => {
    const failure = await replayHistories(new TrialWithUnguardedReminder(mails), { coordinator: env.client }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ReplayDivergenceError);
    expect((failure as ReplayDivergenceError).step).toMatchObject({ seq: 1, called: { kind: 'task', key: 'reminder-mail#1' } });
    expect((failure as Error).message).toContain('reminder-mail#1');
  });
});
