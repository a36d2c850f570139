/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/): how a trace travels between the engine's processes.
 * The caller's start carries it as the `traceparent` and `tracestate` headers; from there on it travels in the
 * engine's own records (a run's row, a claimed run, a worker's report and step), always in this one format, so
 * the hops between the coordinator and its workers do not depend on the propagator an app configured. The
 * OpenTelemetry API (no SDK) turns it into a span context and back: with no SDK registered, nothing is recorded.
 */
import { type Context, createTraceState, isSpanContextValid, ROOT_CONTEXT, type Span, trace } from '@opentelemetry/api';

/** `traceparent` (version 00): version, trace id, parent span id, flags. All-zero ids are invalid. */
export const TRACEPARENT_PATTERN = '^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$';
/**
 * The longest `tracestate` carried on: W3C Trace Context lets a system propagate fewer entries past 512 characters,
 * and here a longer one is dropped whole (the trace goes on, without the vendors' state), so it never makes a
 * worker's write too large to be taken.
 */
export const TRACESTATE_MAX_LENGTH = 512;

const TRACEPARENT = new RegExp(TRACEPARENT_PATTERN);

/** A trace context as the engine carries it: the span that is the parent of the next hop's spans. */
export interface TraceCarrier {
  traceparent: string;
  tracestate?: string;
}

/** The ids a `traceparent` holds (a span context, remote), or undefined when it is not a valid version-00 one. */
export function parseTraceparent(value: string | undefined): { traceId: string; spanId: string; traceFlags: number } | undefined {
  if (value === undefined || !TRACEPARENT.test(value)) return undefined;
  return { traceId: value.slice(3, 35), spanId: value.slice(36, 52), traceFlags: Number.parseInt(value.slice(53, 55), 16) };
}

/** The `traceparent` of a span. */
export function formatTraceparent(span: { traceId: string; spanId: string; traceFlags: number }): string {
  return `00-${span.traceId}-${span.spanId}-${(span.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/** The context of the remote span a trace context names; the root context when it names none (or a malformed one). */
export function remoteContext(traceparent: string | null | undefined, tracestate?: string | null): Context {
  const parsed = parseTraceparent(traceparent ?? undefined);
  if (!parsed) return ROOT_CONTEXT;
  const traceState = tracestate && tracestate.length <= TRACESTATE_MAX_LENGTH ? createTraceState(tracestate) : undefined;
  return trace.setSpanContext(ROOT_CONTEXT, { ...parsed, isRemote: true, traceState });
}

/**
 * The trace context of `span` as the engine carries it to the next hop; undefined when it has none (a
 * non-recording span outside any trace: nothing is traced).
 */
export function traceCarrierOf(span: Span | undefined): TraceCarrier | undefined {
  const spanContext = span?.spanContext();
  if (!spanContext || !isSpanContextValid(spanContext)) return undefined;
  const tracestate = spanContext.traceState?.serialize();
  return tracestate && tracestate.length <= TRACESTATE_MAX_LENGTH
    ? { traceparent: formatTraceparent(spanContext), tracestate }
    : { traceparent: formatTraceparent(spanContext) };
}
