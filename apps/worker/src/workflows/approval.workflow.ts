import type { JsonValue } from '@nest-durable/common';
import { defineWorkflow } from '@nest-durable/workflow';

/**
 * Waits for an `approved` event; returns its data, or `{timedOut: true}` after `timeoutMs`. Meanwhile a `comment`
 * update (a string) adds to its comments and answers how many it has; the `comments` query answers them.
 */
export const approvalWorkflow = defineWorkflow<{ timeoutMs: number }, JsonValue>({
  name: 'approval',
  version: '1',
  updates: { comment: { inputSchema: { type: 'string', minLength: 1 } } },
  handler: async (ctx, input) => {
    const comments: string[] = [];
    ctx.handleUpdate('comment', (text: string) => ({ comments: comments.push(text) }));
    ctx.onQuery('comments', () => comments);
    const approval = await ctx.waitForEvent('approved', { timeoutMs: input.timeoutMs });
    return approval.timedOut ? { timedOut: true } : approval.data;
  },
});
