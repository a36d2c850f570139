import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { WorkflowClient } from '@nest-durable/client';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { context, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { randomBytes } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from './support/database';
import { OtlpReceiver, type ReceivedSpan, SPAN_KIND } from './support/otlp-receiver';
import { eventually } from './support/poll';
import { AppProcess, freePort, stopAllProcesses } from './support/processes';
import { TEST_REDIS_URL, testPrefix } from './support/redis';

const COORDINATOR = 'nest-durable-coordinator';
const WORKER = 'nest-durable-worker';

/**
 * OpenTelemetry traces across real processes: a coordinator dispatching through Redis Streams and two worker
 * processes, one reading the streams and one claiming over HTTP (it serves the `claims` shard), all exporting
 * OTLP/HTTP to a receiver in this process. One trace holds a run end to end: the caller's span, the start, the
 * claim or take, each execution of the run and its steps, the reports, and a child run's spans.
 */
describe('traces (real processes, OTLP/HTTP)', () => {
  let db: TestDatabase;
  let receiver: OtlpReceiver;
  let client: WorkflowClient;
  let coordinatorUrl: string;

  beforeAll(async () => {
    [db, receiver] = await Promise.all([createTestDatabase('traces'), OtlpReceiver.start()]);
    const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '100' };
    const redis = { REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: testPrefix('traces') };
    const port = await freePort();
    const coordinator = new AppProcess('coordinator', 'apps/coordinator/src/main.ts', {
      DATABASE_URL: db.url,
      PORT: String(port),
      HOST: '127.0.0.1',
      AUTH_DISABLED: 'true',
      DISPATCH: 'redis-streams',
      ...redis,
      ...otel,
    });
    const url = `http://127.0.0.1:${port}`;
    const worker = (id: string, env: Record<string, string>) =>
      new AppProcess(id, 'apps/worker/src/main.ts', {
        COORDINATOR_URL: url,
        WORKER_ID: id,
        WORKER_PORT: '0',
        WORKER_HOST: '127.0.0.1',
        ...redis,
        ...otel,
        ...env,
      });
    // Concurrency 1: the Streams worker makes no hand-off offers, so its runs cross Redis.
    const streams = worker('streams-worker', { SUBSCRIBER: 'redis-streams', WORKER_CONCURRENCY: '1' });
    const claims = worker('claims-worker', { SUBSCRIBER: 'http', WORKER_SHARDS: 'claims' });
    // Started together: the workers wait for the coordinator.
    await Promise.all([coordinator.waitForOutput('listening on'), streams.waitForOutput('taking work from'), claims.waitForOutput('taking work from')]);
    client = new WorkflowClient({ url });
    coordinatorUrl = url;
  }, 60_000);

  afterAll(async () => {
    await stopAllProcesses();
    await receiver?.close();
    await db?.drop();
  });

  /** The spans of a trace, once `runs` runs' last executions (their spans end last) and their reports arrived. */
  function spansOf(traceId: string, runs: number): Promise<ReceivedSpan[]> {
    return eventually(`${runs} runs' spans`, async () => {
      const received = receiver.trace(traceId);
      const completed = received.filter((span) => span.service === WORKER && span.attributes['workflow.outcome'] === 'completed');
      const reported = received.filter((span) => span.name === 'report complete');
      return completed.length === runs && reported.length === runs ? received : undefined;
    });
  }

  it('follows a start through Redis Streams to the worker, its tasks, its reports and a child run, in one trace', async () => {
    const caller = { traceId: randomBytes(16).toString('hex'), spanId: randomBytes(8).toString('hex') };
    const run = await client.start({ name: 'parent', version: '1' }, { steps: 2 }, { trace: { traceparent: `00-${caller.traceId}-${caller.spanId}-01` } });
    await expect(run.result({ timeoutMs: 20_000 })).resolves.toMatchObject({ status: 'completed', output: { steps: 2 } });
    // The run shows its trace, and so does its child.
    expect(run.traceId).toBe(caller.traceId);

    const spans = await spansOf(caller.traceId, 2);
    const tree = new SpanTree(spans);
    const start = tree.one(COORDINATOR, 'start parent', caller.spanId);
    expect(start).toMatchObject({ kind: SPAN_KIND.server, attributes: { 'workflow.run_id': run.id, 'workflow.created': true } });
    // Two executions (the child step suspends the first; the child's end wakes the second), each taken from a stream.
    expect(tree.all(COORDINATOR, 'take parent', start.spanId)).toHaveLength(2);
    const parentRuns = tree.all(WORKER, 'run parent', start.spanId);
    expect(parentRuns.map((span) => span.attributes['workflow.outcome']).sort()).toEqual(['completed', 'suspended']);
    expect(parentRuns.every((span) => span.kind === SPAN_KIND.consumer && span.attributes['workflow.run_id'] === run.id)).toBe(true);
    const suspended = parentRuns.find((span) => span.attributes['workflow.outcome'] === 'suspended')!;
    const completed = parentRuns.find((span) => span.attributes['workflow.outcome'] === 'completed')!;
    tree.one(COORDINATOR, 'report complete', completed.spanId);

    // The child run: started under the parent's child step, and run under the coordinator's span of that start.
    const childStep = tree.one(WORKER, 'child chain', suspended.spanId);
    expect(childStep.attributes).toMatchObject({ 'workflow.step.kind': 'child', 'workflow.suspended': true });
    const childStart = tree.one(COORDINATOR, 'start chain', childStep.spanId);
    const childId = childStart.attributes['workflow.child_id'] as string;
    expect((await client.get(childId)).traceId).toBe(caller.traceId);
    tree.one(COORDINATOR, 'take chain', childStart.spanId);
    const childRun = tree.one(WORKER, 'run chain', childStart.spanId);
    expect(childRun.attributes).toMatchObject({ 'workflow.run_id': childId, 'workflow.outcome': 'completed' });
    const tasks = tree.all(WORKER, 'task step', childRun.spanId);
    expect(tasks).toHaveLength(2);
    for (const task of tasks) tree.one(COORDINATOR, 'report task', task.spanId);
    tree.one(COORDINATOR, 'report complete', childRun.spanId);
    expect(receiver.refused).toEqual([]);
  }, 30_000);

  it("joins the caller's active span, claimed over HTTP, across a durable sleep", async () => {
    const contextManager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(contextManager);
    const caller = { traceId: randomBytes(16).toString('hex'), spanId: randomBytes(8).toString('hex'), traceFlags: 1 };
    try {
      const run = await context.with(trace.setSpanContext(ROOT_CONTEXT, caller), () =>
        client.start({ name: 'sleepy', version: '1' }, { ms: 200 }, { shard: 'claims' }),
      );
      await expect(run.result({ timeoutMs: 20_000 })).resolves.toMatchObject({ status: 'completed' });

      const spans = await spansOf(caller.traceId, 1);
      const tree = new SpanTree(spans);
      const start = tree.one(COORDINATOR, 'start sleepy', caller.spanId);
      expect(tree.all(COORDINATOR, 'claim sleepy', start.spanId)).toHaveLength(2);
      const runs = tree.all(WORKER, 'run sleepy', start.spanId);
      expect(runs.map((span) => span.attributes['workflow.outcome']).sort()).toEqual(['completed', 'suspended']);
      const sleep = tree.one(WORKER, 'sleep nap', runs.find((span) => span.attributes['workflow.outcome'] === 'suspended')!.spanId);
      expect(sleep.attributes).toMatchObject({ 'workflow.sleep.delay_ms': 200, 'workflow.suspended': true });
      tree.one(COORDINATOR, 'suspend sleep', sleep.spanId);
      tree.one(COORDINATOR, 'report complete', runs.find((span) => span.attributes['workflow.outcome'] === 'completed')!.spanId);
    } finally {
      context.disable();
    }
  }, 30_000);

  it("starts a trace of its own for a malformed traceparent header, and puts a batch in the header's trace", async () => {
    const start = (path: string, traceparent: string, body: unknown) =>
      fetch(`${coordinatorUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', traceparent }, body: JSON.stringify(body) });
    const echo = { workflow: 'echo', version: '1', input: {} };
    const malformed = await start('/v1/runs', '00-not-a-trace', echo);
    expect(malformed.status).toBe(201);
    expect((await malformed.json()) as { traceId: string }).toMatchObject({ traceId: expect.stringMatching(/^[0-9a-f]{32}$/) });

    const caller = { traceId: randomBytes(16).toString('hex'), spanId: randomBytes(8).toString('hex') };
    const batch = await start('/v1/runs/batch', `00-${caller.traceId}-${caller.spanId}-01`, { runs: [echo, echo] });
    const { runs } = (await batch.json()) as { runs: { id: string; traceId: string }[] };
    expect(runs.map((run) => run.traceId)).toEqual([caller.traceId, caller.traceId]);
    const spans = await spansOf(caller.traceId, 2);
    const batchSpan = new SpanTree(spans).one(COORDINATOR, 'start batch', caller.spanId);
    expect(new SpanTree(spans).all(WORKER, 'run echo', batchSpan.spanId)).toHaveLength(2);
  });
});

/** The spans of one trace, looked up by the process that made them, their name and their parent. */
class SpanTree {
  constructor(private readonly spans: ReceivedSpan[]) {}

  all(service: string, name: string, parentSpanId: string): ReceivedSpan[] {
    return this.spans.filter((span) => span.service === service && span.name === name && span.parentSpanId === parentSpanId);
  }

  one(service: string, name: string, parentSpanId: string): ReceivedSpan {
    const found = this.all(service, name, parentSpanId);
    if (found.length !== 1) {
      const listing = this.spans.map((span) => `${span.service} ${span.name} ${span.spanId} <- ${span.parentSpanId}`).join('\n');
      throw new Error(`expected one "${name}" span of ${service} under ${parentSpanId}, found ${found.length} in:\n${listing}`);
    }
    return found[0];
  }
}
