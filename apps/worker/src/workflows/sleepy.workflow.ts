import { defineWorkflow } from '@app/sdk';

/** Sleeps durably for `ms` (the run suspends and may wake on another worker), then returns `{sleptMs}`. */
export const sleepyWorkflow = defineWorkflow<{ ms: number }, { sleptMs: number }>({
  name: 'sleepy',
  version: '1',
  handler: async (ctx, input) => {
    await ctx.sleep('nap', input.ms);
    return { sleptMs: input.ms };
  },
});
