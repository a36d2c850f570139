import { defineWorkflow } from '@nest-durable/workflow';

/**
 * Returns the moment its handler began on the machine's monotonic clock (CLOCK_MONOTONIC, in milliseconds
 * with sub-millisecond precision), which every process of the machine shares, so a client on the same
 * machine can measure start latency without touching internals (bench/support.ts, machineNow).
 */
export const probeWorkflow = defineWorkflow<unknown, { startedAt: number }>({
  name: 'probe',
  version: '1',
  handler: async () => ({ startedAt: Number(process.hrtime.bigint()) / 1e6 }),
});
