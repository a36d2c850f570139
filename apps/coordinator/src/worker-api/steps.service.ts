import { CreateCompletionTokenRequest, GroupRequest, GroupResponse, StartChildRequest, StepResponse, StoredTask, SuspendRequest } from '@nest-durable/common';
import { GroupRepository, StepRepository } from '@app/run-store';
import { uuidv7 } from '@app/persistence';
import { Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { SpanKind } from '@opentelemetry/api';
import { remoteContext } from '@nest-durable/common';
import { inSpan, traceColumnsOf } from '../tracing/coordinator-tracing';

/** A worker's steps that change its run's course: suspensions (sleep, event, retry wait, completion wait), child runs, completion tokens and wait groups. */
@Injectable()
export class StepsService {
  constructor(
    private readonly steps: StepRepository,
    private readonly groups: GroupRepository,
  ) {}

  /**
   * Suspends the run at a sleep, event or retry-wait step (or resolves the step at once). Traced as a child of the
   * worker's span of the step, when the request carries it.
   */
  suspend(runId: string, request: SuspendRequest): Promise<StepResponse> {
    const parent = remoteContext(request.traceparent, request.tracestate);
    const attributes = { 'workflow.run_id': runId, 'workflow.step.kind': request.kind, 'workflow.step.name': request.name };
    return inSpan(`suspend ${request.kind}`, SpanKind.SERVER, parent, attributes, () => this.steps.suspend(runId, request));
  }

  /**
   * Starts a child run (in the parent's shard unless it names one); with `wait` the parent suspends until the child
   * is terminal. Traced as a child of the worker's span of the step; the child run keeps this span's context, so
   * its worker's spans are in the parent's trace.
   */
  startChild(runId: string, request: StartChildRequest): Promise<StepResponse> {
    const parent = remoteContext(request.traceparent, request.tracestate);
    const childId = uuidv7();
    const attributes = { 'workflow.run_id': runId, 'workflow.name': request.workflow, 'workflow.version': request.version, 'workflow.child_id': childId };
    return inSpan(`start ${request.workflow}`, SpanKind.SERVER, parent, attributes, (span) =>
      this.steps.startChild(runId, request, childId, traceColumnsOf(span)),
    );
  }

  /**
   * Records a completion token at its step: 256 random bits made here, so no worker can make a guessable one. Traced
   * as a child of the worker's `token` span.
   */
  createCompletionToken(runId: string, request: CreateCompletionTokenRequest): Promise<StoredTask> {
    const parent = remoteContext(request.traceparent, request.tracestate);
    const attributes = { 'workflow.run_id': runId, 'workflow.step.kind': 'token', 'workflow.step.name': request.name };
    return inSpan('create token', SpanKind.SERVER, parent, attributes, () =>
      this.steps.createToken(runId, request, `wfct_${randomBytes(32).toString('base64url')}`),
    );
  }

  /**
   * Waits for a group of branches (`ctx.any`, `ctx.all`): resolves it, or suspends the run until a branch finishes.
   * Traced as a child of the worker's `any`/`all` span.
   */
  waitGroup(runId: string, request: GroupRequest): Promise<GroupResponse> {
    const parent = remoteContext(request.traceparent, request.tracestate);
    const attributes = { 'workflow.run_id': runId, 'workflow.step.kind': 'group', 'workflow.step.name': request.name, 'workflow.group.mode': request.mode };
    return inSpan(`wait ${request.mode}`, SpanKind.SERVER, parent, attributes, () => this.groups.wait(runId, request));
  }
}
