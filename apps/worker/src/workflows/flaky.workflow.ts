import { defineWorkflow } from '@nest-durable/workflow';

export const FLAKY_MAX_ATTEMPTS = 5;

/** Its task throws on the first `failTimes` attempts, then succeeds (if attempts remain). */
export const flakyWorkflow = defineWorkflow<{ failTimes: number }, { attempts: number }>({
  name: 'flaky',
  version: '1',
  handler: async (ctx, input) => {
    const attempts = await ctx.task(
      'unreliable-call',
      ({ attempt }) => {
        if (attempt <= input.failTimes) throw new Error(`attempt ${attempt} failed on purpose`);
        return attempt;
      },
      { retry: { maxAttempts: FLAKY_MAX_ATTEMPTS, delayMs: 10 } },
    );
    return { attempts };
  },
});
