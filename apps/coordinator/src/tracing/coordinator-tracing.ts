import { type ClaimedRun, remoteContext, type ReportOutcome, traceCarrierOf, type WorkerReport } from '@nest-durable/common';
import { type Attributes, type Context, context, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';

/*
 * The coordinator's spans (see docs/architecture.md, "Traces"). Made through the OpenTelemetry API alone: with no
 * SDK registered (tracing off, the default) its tracer makes non-recording spans, and the spans recorded per run
 * (claims, takes, reports) are not even made for runs without a trace context.
 */
const tracer = trace.getTracer('@nest-durable/coordinator');

/**
 * The caller's trace context from its request's `traceparent` and `tracestate` headers. A malformed one is ignored
 * (the request is served, its spans start a new trace), as W3C Trace Context asks of a receiver.
 */
export function callerContext(headers: Record<string, string | string[] | undefined>): Context {
  const traceparent = headers.traceparent;
  if (typeof traceparent !== 'string') return ROOT_CONTEXT;
  const tracestate = headers.tracestate;
  return remoteContext(traceparent, Array.isArray(tracestate) ? tracestate.join(',') : tracestate);
}

/** A span's trace context as a run's row keeps it (runs.traceparent, runs.tracestate): null when there is none. */
export function traceColumnsOf(span: Span): { traceparent: string | null; tracestate: string | null } {
  const carrier = traceCarrierOf(span);
  return { traceparent: carrier?.traceparent ?? null, tracestate: carrier?.tracestate ?? null };
}

/** Runs `work` in a span (its active span, for instrumentation of what it calls), ended with its outcome. */
export async function inSpan<T>(name: string, kind: SpanKind, parent: Context, attributes: Attributes, work: (span: Span) => Promise<T>): Promise<T> {
  const span = tracer.startSpan(name, { kind, attributes }, parent);
  try {
    return await context.with(trace.setSpan(parent, span), () => work(span));
  } catch (error) {
    span.recordException(error as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
    throw error;
  } finally {
    span.end();
  }
}

/**
 * Records a claim's, take's or offer's span for each traced run it hands a worker, in the run's trace (a child of
 * its start's span): from when the request came (`startTime`, epoch ms) to now.
 */
export function recordTaken(operation: 'claim' | 'take' | 'offer', workerId: string, runs: readonly ClaimedRun[], startTime: number): void {
  for (const run of runs) {
    if (run.traceparent === undefined) continue;
    const span = tracer.startSpan(
      `${operation} ${run.workflow}`,
      {
        kind: SpanKind.SERVER,
        startTime,
        attributes: {
          'workflow.name': run.workflow,
          'workflow.version': run.version,
          'workflow.run_id': run.id,
          'workflow.revision': run.revision,
          'workflow.attempt': run.attempt,
          'workflow.worker_id': workerId,
          ...(run.wakeup === undefined ? {} : { 'workflow.wakeup': run.wakeup }),
        },
      },
      remoteContext(run.traceparent, run.tracestate),
    );
    span.end();
  }
}

/**
 * Records the span of each traced report of a batch (a task result, a completion, a failure): a child of the
 * worker's span it carries (its task's, or its run's for an outcome), from when the batch came to now, failed
 * when the report was refused.
 */
export function recordReports(reports: readonly WorkerReport[], outcomes: readonly ReportOutcome[], startTime: number): void {
  reports.forEach((report, index) => {
    if (report.traceparent === undefined) return;
    const span = tracer.startSpan(
      `report ${report.type}`,
      {
        kind: SpanKind.SERVER,
        startTime,
        attributes: { 'workflow.run_id': report.runId, 'workflow.report': report.type, 'workflow.batch_size': reports.length },
      },
      remoteContext(report.traceparent, report.tracestate),
    );
    const outcome = outcomes[index];
    if (outcome && !outcome.ok) span.setStatus({ code: SpanStatusCode.ERROR, message: `${outcome.reason}: ${outcome.message}` });
    span.end();
  });
}
