import { type Attributes, type Context, context, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { RunSuspendedError } from '@nest-durable/workflow';

/*
 * The worker's spans (see docs/architecture.md, "Traces"): one per execution of a run, a child of the span that
 * started it (its trace context came with the claimed run), and one per task, sleep, event wait and child run the
 * execution runs (steps replayed from the run's history are not run again, and get none). Made through the
 * OpenTelemetry API alone: the app that hosts the worker registers an SDK or not (with none, nothing is recorded).
 */
const tracer = trace.getTracer('@nest-durable/worker');

/** Starts the span of one execution of a run, under `parent` (the run's trace context). */
export function startRunSpan(parent: Context, name: string, attributes: Attributes): Span {
  return tracer.startSpan(`run ${name}`, { kind: SpanKind.CONSUMER, attributes }, parent);
}

/**
 * Runs a step in its own span under `run` (the run span's context), active while it runs so the app's own
 * instrumentation nests under it. A suspension is how a sleep or a wait ends this execution, not a failure.
 */
export async function inStepSpan<T>(run: Context, name: string, attributes: Attributes, work: (span: Span) => Promise<T>): Promise<T> {
  const span = tracer.startSpan(name, { attributes }, run);
  try {
    return await context.with(trace.setSpan(run, span), () => work(span));
  } catch (error) {
    if (error instanceof RunSuspendedError) span.setAttribute('workflow.suspended', true);
    else failed(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/** Marks a span failed with `error`. */
export function failed(span: Span, error: unknown): void {
  if (error instanceof Error) span.recordException(error);
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
}
