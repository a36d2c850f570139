import { defineWorkflow } from '@nest-durable/workflow';
import { chainWorkflow } from './chain.workflow';

/** Starts `chain` as a child run with `{steps, stepMs}` and returns the child's output. */
export const parentWorkflow = defineWorkflow<{ steps: number; stepMs?: number }, { steps: number }>({
  name: 'parent',
  version: '1',
  handler: async (ctx, input) => ctx.child('chain', chainWorkflow, { steps: input.steps, stepMs: input.stepMs }),
});
