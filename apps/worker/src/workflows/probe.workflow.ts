import { defineWorkflow } from '@nest-durable/workflow';
import { performance } from 'node:perf_hooks';

/**
 * Returns the moment its handler began, in epoch milliseconds with sub-millisecond precision, so a
 * client on the same machine can measure start latency without touching internals.
 */
export const probeWorkflow = defineWorkflow<unknown, { startedAt: number }>({
  name: 'probe',
  version: '1',
  handler: async () => ({ startedAt: performance.timeOrigin + performance.now() }),
});
