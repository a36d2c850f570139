import { type ClaimedRun, InvalidRequestError, type JsonValue, remoteContext, type TraceCarrier, traceCarrierOf } from '@nest-durable/common';
import { isAnsweredError, isRevisionConflict } from '@nest-durable/client';
import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  isNonRetryable,
  RunLostError,
  RunSuspendedError,
  TaskFailedError,
  toErrorDetails,
  retryDelayMs,
  type RetryPolicy,
  WorkflowNotHostedError,
} from '@nest-durable/workflow';
import { CoordinatorApi } from './coordinator.api';
import { RunLease } from '@app/locking';
import { WORKER_OPTIONS, type ResolvedWorkerOptions } from './worker.options';
import { WorkflowRegistry } from './workflow.registry';
import { RunContext } from './run-context';
import { toJson } from './json-values';
import { declaredUpdates } from './update-handlers';
import { type Context, context, type Span, trace } from '@opentelemetry/api';
import { failed, startRunSpan } from './run-tracing';

/** What a run's handler came to: its output, or what it threw (or the coordinator's refusal of what it came to). */
type HandlerOutcome = { ok: true; output: JsonValue } | { ok: false; error: unknown; refused?: true };

/** Executes one claimed run: replays recorded steps, runs the rest, and reports the outcome. */
@Injectable()
export class RunExecutor {
  private readonly logger = new Logger(RunExecutor.name);

  constructor(
    private readonly api: CoordinatorApi,
    private readonly registry: WorkflowRegistry,
    @Inject(WORKER_OPTIONS) private readonly options: ResolvedWorkerOptions,
  ) {}

  /**
   * Executes the run in its span (see run-tracing.ts), a child of the span that started it, whose `workflow.outcome`
   * says how this execution ended: completed, failed (retried or not), suspended, or lost (no longer its worker's).
   */
  async execute(run: ClaimedRun, lease: RunLease): Promise<void> {
    const parent = remoteContext(run.traceparent, run.tracestate);
    const span = startRunSpan(parent, run.workflow, {
      'workflow.name': run.workflow,
      'workflow.version': run.version,
      'workflow.run_id': run.id,
      'workflow.attempt': run.attempt,
      'workflow.revision': run.revision,
      'workflow.worker_id': this.options.workerId,
    });
    try {
      span.setAttribute('workflow.outcome', await this.executeIn(trace.setSpan(parent, span), span, run, lease));
    } finally {
      span.end();
    }
  }

  private async executeIn(traced: Context, span: Span, run: ClaimedRun, lease: RunLease): Promise<string> {
    const workflow = this.registry.get(run.workflow, run.version);
    let outcome: HandlerOutcome;
    let runContext: RunContext | undefined;
    try {
      if (!workflow) throw new WorkflowNotHostedError(run.workflow, run.version);
      const handled = new RunContext(run, lease, this.api, this.options, declaredUpdates(workflow), traced);
      runContext = handled;
      const output = await context.with(traced, () => workflow.handler(handled, run.input));
      lease.throwIfEnded();
      // A task result refused after the handler went past it (see RunSteps.unsettle) fails the run as it would have at the task.
      if (handled.refusal !== undefined) throw handled.refusal;
      outcome = { ok: true, output: toJson(output) };
    } catch (error) {
      const suspended = lease.isSuspended || error instanceof RunSuspendedError;
      if (suspended || lease.isLost || error instanceof RunLostError) {
        // This execution writes nothing more: no progress timer is left behind.
        runContext?.flushValues(false, true);
        return suspended ? 'suspended' : this.stopped(run, lease);
      }
      outcome = { ok: false, error };
      failed(span, error);
    }
    // The values the handler left (its query handlers' last answers, its last progress) go in the outcome's batch.
    runContext?.flushValues(true, true);
    const reportTrace = traceCarrierOf(span);

    // Reporting is apart from the handler: a report that cannot get through (the worker is shutting down
    // while no coordinator answers) must never turn into a failure of the run. The run stays claimed and is
    // taken over once its claim goes idle. One the coordinator refuses is another matter (below).
    for (let refusedBefore = false; ; refusedBefore = true) {
      try {
        await lease.reportOutcome(() => this.reportOutcome(run, lease, workflow?.retry, outcome, reportTrace));
        lease.finish();
        return outcome.ok ? 'completed' : 'failed';
      } catch (reportError) {
        if (isRevisionConflict(reportError)) {
          lease.lose('the coordinator refused a write (revision conflict)');
          return this.stopped(run, lease);
        }
        if (isRefusedAsInvalid(reportError) && !refusedBefore) {
          // The outcome itself was refused (an output over the size limit or nested too deep, an error too
          // large): no resend can land it, and a run left claimed would be taken over and re-run until the
          // stall limit failed it for stalls it never had. The refusal is its error instead, not retried (a
          // replay comes to the same outcome); that error is small: refused again, the run is left.
          outcome = { ok: false, error: reportError, refused: true };
          failed(span, reportError);
          continue;
        }
        lease.lose(`its outcome could not be reported: ${(reportError as Error).message}`);
        this.logger.error('could not report the outcome of a run; it will be taken over once its claim goes idle', {
          runId: run.id,
          workflow: run.workflow,
          error: (reportError as Error).message,
        });
        return 'lost';
      }
    }
  }

  /** Completes the run, or fails it (to be retried when its workflow's policy allows). */
  private reportOutcome(
    run: ClaimedRun,
    lease: RunLease,
    policy: RetryPolicy | undefined,
    outcome: HandlerOutcome,
    trace: TraceCarrier | undefined,
  ): Promise<unknown> {
    if (outcome.ok) return this.api.complete(run.id, { expectedRevision: lease.revision, output: outcome.output }, trace);
    const retry = policy && !outcome.refused && !isNonRetryable(outcome.error) && run.attempt < policy.maxAttempts;
    const details = outcome.error instanceof TaskFailedError ? outcome.error.details : toErrorDetails(outcome.error);
    const error = outcome.refused ? { ...details, nonRetryable: true } : details;
    const retryDelay = retry ? retryDelayMs(policy, run.attempt) : undefined;
    return this.api.fail(run.id, { expectedRevision: lease.revision, error, retryDelayMs: retryDelay }, trace);
  }

  private stopped(run: ClaimedRun, lease: RunLease): 'lost' {
    this.logger.warn('run is no longer ours; stopped without further writes', {
      runId: run.id,
      workflow: run.workflow,
      version: run.version,
      workerId: this.options.workerId,
      reason: lease.lostReason,
    });
    return 'lost';
  }
}

/**
 * The coordinator refused the request itself (400, 413), or this worker's own check by the contract did before
 * sending it (an InvalidRequestError, see CoordinatorApi.enqueue): sent again, it would be refused again.
 */
function isRefusedAsInvalid(error: unknown): boolean {
  return isAnsweredError(error) ? error.statusCode === 400 || error.statusCode === 413 : error instanceof InvalidRequestError;
}
