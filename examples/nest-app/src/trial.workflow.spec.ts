import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { createTestEnvironment, type TestEnvironment } from '@nest-durable/testing';
import { AccountsService } from './accounts.service';
import { TrialWorkflow } from './trial.workflow';
import { WelcomeWorkflow } from './welcome.workflow';

/**
 * The workflows in Jest, on a real coordinator and worker in this process (a throwaway database on DATABASE_URL's
 * server, or an embedded one): AccountsService is replaced by a mock, and a week passes in a skipTime.
 */
describe('TrialWorkflow', () => {
  let env: TestEnvironment;
  const sendMail = jest.fn((email: string, text: string) => `sent to ${email}: ${text}`);

  beforeAll(async () => {
    env = await createTestEnvironment({
      providers: [AccountsService, WelcomeWorkflow, TrialWorkflow],
      override: (builder) => builder.overrideProvider(AccountsService).useValue({ sendMail, createAccount: () => 'acct-test', sendWelcomeMail: sendMail }),
      logger: [],
    });
  }, 60_000);

  afterAll(async () => {
    await env?.close();
  });

  it('mails when the trial starts, and again when it ends 7 days later', async () => {
    const run = await env.client.start(TrialWorkflow, { email: 'alice@example.com', accountId: 'acct-1' });
    const started = performance.now();
    await env.skipTime(TrialWorkflow.LENGTH_MS);
    const done = await env.client.waitForResult(run, { timeoutMs: 5_000 });
    const wallMs = performance.now() - started;

    expect(done.status).toBe('completed');
    // Typed by the class: `ended` is a string here, no cast.
    const ended: string | undefined = done.status === 'completed' ? done.output.ended : undefined;
    expect(ended).toBe('sent to alice@example.com: your trial of acct-1 has ended');
    expect(sendMail.mock.calls.map(([, text]) => text)).toEqual(['your trial of acct-1 has started', 'your trial of acct-1 has ended']);
    expect(wallMs).toBeLessThan(2_000);
  });
});
