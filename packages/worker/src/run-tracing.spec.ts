import type { ClaimedRun, CreateCompletionTokenRequest, GroupRequest, GroupResponse, StepResponse, StoredTask, SuspendRequest } from '@nest-durable/common';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { RunLease } from '@app/locking';
import { branch, defineWorkflow } from '@nest-durable/workflow';
import type { CoordinatorApi } from './coordinator.api';
import { RunExecutor } from './run-executor';
import { WorkflowRegistry } from './workflow.registry';
import { resolveWorkerOptions } from './worker.options';

/** Records the trace context each step's request carries, and suspends the run at the group. */
class TracedCoordinator {
  carriers = new Map<string, string | undefined>();

  async createCompletionToken(_runId: string, request: CreateCompletionTokenRequest): Promise<StoredTask> {
    this.carriers.set(request.key, request.traceparent);
    return { key: request.key, kind: 'token', seq: request.seq, status: 'completed', attempts: 1, output: { token: 'wfct_x' }, error: null };
  }
  async suspend(_runId: string, request: SuspendRequest): Promise<StepResponse> {
    this.carriers.set(request.key, request.traceparent);
    return {
      suspended: false,
      task: {
        key: request.key,
        kind: request.kind,
        seq: request.seq,
        status: 'completed',
        attempts: 0,
        output: { timedOut: false, status: 'completed', data: 1 },
        error: null,
      },
    };
  }
  async waitGroup(_runId: string, request: GroupRequest): Promise<GroupResponse> {
    this.carriers.set(request.key, request.traceparent);
    return {
      suspended: true,
      task: { key: `${request.key}/0`, kind: 'external', seq: request.seq, status: 'waiting', attempts: 1, output: null, error: null },
      branches: [],
    };
  }
}

const paying = defineWorkflow<null, unknown>({
  name: 'paying',
  version: '1',
  handler: async (ctx) => {
    const first = await ctx.awaitExternal({ name: 'pay' });
    await first.result;
    const second = await ctx.awaitExternal({ name: 'refund' });
    return ctx.any('refund-or-late', [second.result, branch.sleep(1_000)]);
  },
});

describe('spans of completion tokens and wait groups', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  beforeAll(() => {
    trace.setGlobalTracerProvider(provider);
  });
  afterAll(async () => {
    trace.disable();
    await provider.shutdown();
  });

  it("makes a span for a token's record, its wait and a group, each carried on its request", async () => {
    const coordinator = new TracedCoordinator();
    const options = resolveWorkerOptions({ workflows: [paying], coordinatorUrl: 'http://unused' });
    const executor = new RunExecutor(coordinator as unknown as CoordinatorApi, new WorkflowRegistry(options), options);
    const run: ClaimedRun = { id: 'run-1', workflow: 'paying', version: '1', queue: 'paying:1', revision: 3, attempt: 1, input: null, tasks: [] };
    await executor.execute(run, new RunLease('run-1', 3));

    const spans = exporter.getFinishedSpans();
    const [runSpan] = spans.filter((span) => span.name === 'run paying');
    const carried = (name: string) => {
      const [span] = spans.filter((s) => s.name === name);
      expect(span?.parentSpanContext?.spanId).toBe(runSpan.spanContext().spanId);
      return `00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`;
    };
    expect(coordinator.carriers).toEqual(
      new Map([
        ['token:pay#1', carried('token pay')],
        ['external:pay#1', carried('external pay')],
        ['token:refund#1', carried('token refund')],
        ['group:refund-or-late#1', carried('any refund-or-late')],
      ]),
    );
    expect(spans.find((span) => span.name === 'any refund-or-late')?.attributes).toMatchObject({ 'workflow.step.kind': 'group', 'workflow.suspended': true });
  });
});
