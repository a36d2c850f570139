import { defineWorkflow } from '@nest-durable/workflow';
import { performance } from 'node:perf_hooks';

/**
 * Sleeps durably for `ms` (the run suspends and may wake on another worker), then returns
 * `{sleptMs, wokeAt}`: `wokeAt` is when its handler resumed after the sleep, in epoch milliseconds
 * with sub-millisecond precision, so a benchmark on the same machine can measure timer lateness.
 */
export const sleepyWorkflow = defineWorkflow<{ ms: number }, { sleptMs: number; wokeAt: number }>({
  name: 'sleepy',
  version: '1',
  handler: async (ctx, input) => {
    await ctx.sleep('nap', input.ms);
    return { sleptMs: input.ms, wokeAt: performance.timeOrigin + performance.now() };
  },
});
