import { defineWorkflow } from '@nest-durable/workflow';
import { setTimeout as delay } from 'node:timers/promises';

/** `steps` sequential tasks, each waiting `stepMs` in process before it returns. */
export const chainWorkflow = defineWorkflow<{ steps: number; stepMs?: number }, { steps: number }>({
  name: 'chain',
  version: '1',
  handler: async (ctx, input) => {
    for (let step = 1; step <= input.steps; step++) {
      await ctx.task('step', async ({ signal }) => {
        if (input.stepMs) await delay(input.stepMs, undefined, { signal });
        return step;
      });
    }
    return { steps: input.steps };
  },
});
