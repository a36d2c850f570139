import type { WorkflowView } from '@nest-durable/common';
import type { WorkflowControlRow } from '@app/persistence';

/** A version's controls as the API shows them (a version without a control row has none: defaults). */
export function toWorkflowView(row: WorkflowControlRow | undefined, name: string, version: string): WorkflowView {
  return {
    name,
    version,
    paused: row?.paused ?? false,
    pausedShards: row?.pausedShards ?? [],
    limits: {
      concurrency: row?.concurrency ?? null,
      concurrencyPerKey: row?.concurrencyPerKey ?? null,
      ratePerSecond: row?.ratePerSecond ?? null,
      ratePerKeyPerSecond: row?.ratePerKeyPerSecond ?? null,
    },
    apiLimits: {
      concurrency: row?.apiConcurrency ?? null,
      concurrencyPerKey: row?.apiConcurrencyPerKey ?? null,
      ratePerSecond: row?.apiRatePerSecond ?? null,
      ratePerKeyPerSecond: row?.apiRatePerKeyPerSecond ?? null,
    },
    codeLimits: {
      concurrency: row?.codeConcurrency ?? null,
      concurrencyPerKey: row?.codeConcurrencyPerKey ?? null,
      ratePerSecond: row?.codeRatePerSecond ?? null,
      ratePerKeyPerSecond: row?.codeRatePerKeyPerSecond ?? null,
    },
    running: row?.running ?? 0,
    updatedAt: row?.updatedAt?.toISOString() ?? null,
  };
}
