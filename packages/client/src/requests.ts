import type { StaticEncode } from '@sinclair/typebox';
import {
  InvalidRequestError,
  type JsonValue,
  parseTraceparent,
  type StartRunRequest,
  tagFilters,
  type TraceCarrier,
  traceCarrierOf,
  workflowNameOf,
} from '@nest-durable/common';
import { trace } from '@opentelemetry/api';
import type { BulkRunsOptions, RunFilterOptions, StartManyEntry } from './workflow.client.types';

/* What WorkflowClient sends for its arguments: a start's body and trace headers, a bulk request's body. */

/**
 * The trace context headers of a start: `joined`'s (checked here: a malformed one is the caller's mistake), else
 * the caller's active span's (none without an active span, or without an OpenTelemetry SDK in the caller's app).
 */
export function traceHeaders(joined?: TraceCarrier): Record<string, string> | undefined {
  if (joined !== undefined && parseTraceparent(joined.traceparent) === undefined) {
    throw new InvalidRequestError('invalid_traceparent', `trace.traceparent must be a W3C traceparent of version 00, got "${joined.traceparent}"`);
  }
  const carrier = joined ?? traceCarrierOf(trace.getActiveSpan());
  if (carrier === undefined) return undefined;
  return carrier.tracestate ? { traceparent: carrier.traceparent, tracestate: carrier.tracestate } : { traceparent: carrier.traceparent };
}

export function startBody({
  workflow,
  input,
  idempotencyKey,
  shard,
  priority,
  runAt,
  concurrencyKey,
  tags,
}: StartManyEntry): StaticEncode<typeof StartRunRequest> {
  const { name, version } = workflowNameOf(workflow);
  return {
    workflow: name,
    version,
    input: input as JsonValue,
    idempotencyKey,
    shard,
    priority,
    runAt: runAt?.toISOString(),
    concurrencyKey,
    tags,
  };
}

/** A bulk request's body: the filter with its tags as `key:value` filters, as the runs list takes them. */
export function bulkBody({ tags, ...filter }: RunFilterOptions, options: BulkRunsOptions) {
  return { filter: { ...filter, ...(tags && { tag: tagFilters(tags) }) }, ...options };
}
