import type { JsonValue } from '@nest-durable/common';
import { defineWorkflow } from '@nest-durable/workflow';

/** Waits for an `approved` event; returns its data, or `{timedOut: true}` after `timeoutMs`. */
export const approvalWorkflow = defineWorkflow<{ timeoutMs: number }, JsonValue>({
  name: 'approval',
  version: '1',
  handler: async (ctx, input) => {
    const approval = await ctx.waitForEvent('approved', { timeoutMs: input.timeoutMs });
    return approval.timedOut ? { timedOut: true } : approval.data;
  },
});
