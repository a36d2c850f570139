import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createTestEnvironment, type TestEnvironment, TestEnvironmentError } from '@nest-durable/testing';
import { Workflow } from '@nest-durable/worker';
import { ChildRunTimeoutError, CompletionTimeoutError, type WorkflowContext, WorkflowError } from '@nest-durable/workflow';
import { Injectable } from '@nestjs/common';
import { Client } from 'pg';
import { TEST_SERVER_URL } from './support/database';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** Where the workflows below say what they did, and when by the engine's clock (the test clock: `clock`). */
@Injectable()
class Journal {
  readonly entries: string[] = [];
  readonly times = new Map<string, number>();
  clock: () => Promise<Date> = async () => new Date();

  async write(entry: string): Promise<string> {
    this.entries.push(entry);
    this.times.set(entry, (await this.clock()).getTime());
    return entry;
  }
}

@Workflow({ name: 'trial', version: '1' })
class TrialWorkflow {
  constructor(private readonly journal: Journal) {}

  async run(ctx: WorkflowContext, input: { user: string; days: number }): Promise<string> {
    await ctx.task('start', () => this.journal.write(`start ${input.user}`));
    await ctx.sleep('trial', input.days * DAY);
    return ctx.task('end', () => this.journal.write(`end ${input.user}`));
  }
}

/** Fails its first attempt; the retry waits an hour (fixed back-off), which only the coordinator's clock can pass. */
@Workflow({ name: 'flaky', version: '1' })
class FlakyWorkflow {
  async run(ctx: WorkflowContext): Promise<number> {
    return ctx.task(
      'call',
      ({ attempt }) => {
        if (attempt === 1) throw new WorkflowError('the first call fails');
        return attempt;
      },
      { retry: { maxAttempts: 2, backoff: 'fixed', delayMs: HOUR } },
    );
  }
}

@Workflow({ name: 'approval', version: '1' })
class ApprovalWorkflow {
  async run(ctx: WorkflowContext): Promise<string> {
    const answer = await ctx.waitForEvent('approved', { timeoutMs: 2 * DAY });
    return answer.timedOut ? 'timed out' : 'approved';
  }
}

@Workflow({ name: 'slow-child', version: '1' })
class SlowChildWorkflow {
  async run(ctx: WorkflowContext): Promise<string> {
    await ctx.sleep('long', 30 * DAY);
    return 'finished';
  }
}

@Workflow({ name: 'impatient-parent', version: '1' })
class ImpatientParentWorkflow {
  async run(ctx: WorkflowContext): Promise<string> {
    try {
      return await ctx.child('child', SlowChildWorkflow, {}, { timeoutMs: DAY });
    } catch (error) {
      if (error instanceof ChildRunTimeoutError) return 'child timed out';
      throw error;
    }
  }
}

/** Waits a day for an outside system to complete its token. */
@Workflow({ name: 'awaits-payment', version: '1' })
class AwaitsPaymentWorkflow {
  async run(ctx: WorkflowContext): Promise<string> {
    const { result } = await ctx.awaitExternal<string>({ name: 'payment', timeoutMs: DAY });
    try {
      return await result;
    } catch (error) {
      if (error instanceof CompletionTimeoutError) return 'payment timed out';
      throw error;
    }
  }
}

/** What an hourly schedule starts. */
@Workflow({ name: 'hourly', version: '1' })
class HourlyWorkflow {
  async run(): Promise<string> {
    return 'tick';
  }
}

/**
 * @nest-durable/testing against this server (DATABASE_URL): one environment for the suite, each test skipping
 * the engine's clock over one kind of due time; each workflow would take hours to weeks of real time.
 */
describe('createTestEnvironment and skipTime', () => {
  let env: TestEnvironment;
  let journal: Journal;
  let sql: Client;

  beforeAll(async () => {
    env = await createTestEnvironment({
      databaseUrl: TEST_SERVER_URL,
      providers: [Journal, TrialWorkflow, FlakyWorkflow, ApprovalWorkflow, SlowChildWorkflow, ImpatientParentWorkflow, AwaitsPaymentWorkflow, HourlyWorkflow],
      // The claims' re-check of the database, the safety net that would find due runs late, is as rare as it can be:
      // only skipTime's hand-over to the due timers makes anything come due in time.
      coordinator: { claimPollIntervalMs: 60_000 },
      settleTimeoutMs: 5_000,
      logger: [],
    });
    journal = env.worker.get(Journal);
    journal.clock = () => env.now();
    sql = new Client({ connectionString: env.databaseUrl });
    await sql.connect();
  }, 60_000);

  afterAll(async () => {
    await sql?.end();
    await env?.close();
  });

  it('passes a 7-day sleep in well under a second, and a 3-day one meanwhile, each ending at its own time', async () => {
    const long = await env.client.start(TrialWorkflow, { user: 'long', days: 7 });
    const short = await env.client.start(TrialWorkflow, { user: 'short', days: 3 });
    const from = (await env.now()).getTime();
    const started = performance.now();
    await env.skipTime(7 * DAY);
    // Issue 34's bound for a week's sleep in a test (a real week is 600,000,000 ms; a skip that waited for any real
    // timer would be seconds at least): well above what it takes here (~0.3 s), so a busy machine does not flake it.
    expect(performance.now() - started).toBeLessThan(2_000);
    // As if the time had passed: the short sleep ended 3 days in, not when the window did.
    expect(Math.round((journal.times.get('end short')! - from) / DAY)).toBe(3);
    expect(Math.round((journal.times.get('end long')! - from) / DAY)).toBe(7);
    expect((await env.client.get(long.id)).status).toBe('completed');
    expect((await env.client.waitForResult(short)).output).toBe('end short');
    expect(journal.entries.filter((entry) => entry.startsWith('end '))).toEqual(['end short', 'end long']);
  });

  it('stops at the end of the window: a sleep that ends after it still waits', async () => {
    const run = await env.client.start(TrialWorkflow, { user: 'later', days: 2 });
    await env.skipTime(DAY);
    expect((await env.client.get(run.id)).status).toBe('waiting');
    await env.skipTime(DAY);
    expect((await env.client.get(run.id)).status).toBe('completed');
  });

  it('starts a run at its runAt', async () => {
    const runAt = new Date((await env.now()).getTime() + 3 * DAY);
    const run = await env.client.start(TrialWorkflow, { user: 'scheduled', days: 0 }, { runAt });
    await env.skipTime(3 * DAY - HOUR);
    expect((await env.client.get(run.id)).status).toBe('queued');
    await env.skipTime(HOUR);
    expect((await env.client.get(run.id)).status).toBe('completed');
  });

  it("passes a task's retry back-off through the coordinator's clock", async () => {
    const run = await env.client.start(FlakyWorkflow, {});
    await env.skipTime(HOUR);
    const done = await env.client.waitForResult(run, { timeoutMs: 1_000 });
    expect(done).toMatchObject({ status: 'completed', output: 2 });
  });

  it("fires an event's timeout", async () => {
    const run = await env.client.start(ApprovalWorkflow, {});
    await env.skipTime(2 * DAY);
    expect(await env.client.waitForResult(run, { timeoutMs: 1_000 })).toMatchObject({ status: 'completed', output: 'timed out' });
  });

  it("fires a child's timeout", async () => {
    const run = await env.client.start(ImpatientParentWorkflow, {});
    await env.skipTime(DAY);
    expect(await env.client.waitForResult(run, { timeoutMs: 1_000 })).toMatchObject({ status: 'completed', output: 'child timed out' });
  });

  it("fires a completion token's timeout; its token then refuses a completion (410)", async () => {
    const run = await env.client.start(AwaitsPaymentWorkflow, {});
    await env.skipTime(DAY);
    expect(await env.client.waitForResult(run, { timeoutMs: 1_000 })).toMatchObject({ status: 'completed', output: 'payment timed out' });
    const tokenStep = (await env.client.get(run.id)).tasks?.find((step) => step.kind === 'token');
    const { token } = tokenStep!.output as { token: string };
    await expect(env.client.complete(token, 'paid')).rejects.toMatchObject({ statusCode: 410, reason: 'completion_token_expired' });
  });

  it('fires an interval schedule once per interval of the window, in order, each an hour after the last', async () => {
    const created = (await env.now()).getTime();
    const schedule = await env.client.createSchedule(HourlyWorkflow, { intervalMs: HOUR });
    await env.skipTime(5 * HOUR + 1_000);
    await env.client.deleteSchedule(schedule.id);
    const { rows } = await sql.query<{ created: Date; status: string }>(
      `SELECT created_at AS created, status FROM runs WHERE workflow = 'hourly' ORDER BY created_at`,
    );
    expect(rows.map(({ status }) => status)).toEqual(Array(5).fill('completed'));
    // Each fired at its time by the engine's clock (the ticks of a catch-up would all carry the last one).
    const hoursAfter = rows.map(({ created: at }) => Math.floor((at.getTime() - created) / HOUR));
    expect(hoursAfter).toEqual([1, 2, 3, 4, 5]);
  });

  it('refuses a negative or infinite skip', async () => {
    await expect(env.skipTime(-1)).rejects.toMatchObject({ name: 'TestEnvironmentError', reason: 'skip_time_invalid' });
    await expect(env.skipTime(Number.POSITIVE_INFINITY)).rejects.toThrow(TestEnvironmentError);
  });
});
