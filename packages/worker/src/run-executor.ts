import { type ClaimedRun, InvalidRequestError, type JsonValue } from '@nest-durable/common';
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

  async execute(run: ClaimedRun, lease: RunLease): Promise<void> {
    const workflow = this.registry.get(run.workflow, run.version);
    let outcome: HandlerOutcome;
    let context: RunContext | undefined;
    try {
      if (!workflow) throw new WorkflowNotHostedError(run.workflow, run.version);
      context = new RunContext(run, lease, this.api, this.options, declaredUpdates(workflow));
      const output = await workflow.handler(context, run.input);
      lease.throwIfEnded();
      // A task result refused after the handler went past it (see RunContext.unsettle) fails the run as it would have at the task.
      if (context.refusal !== undefined) throw context.refusal;
      outcome = { ok: true, output: toJson(output) };
    } catch (error) {
      const suspended = lease.isSuspended || error instanceof RunSuspendedError;
      if (suspended || lease.isLost || error instanceof RunLostError) {
        // This execution writes nothing more: no progress timer is left behind.
        context?.flushValues(false, true);
        return suspended ? undefined : this.stopped(run, lease);
      }
      outcome = { ok: false, error };
    }
    // The values the handler left (its query handlers' last answers, its last progress) go in the outcome's batch.
    context?.flushValues(true, true);

    // Reporting is apart from the handler: a report that cannot get through (the worker is shutting down
    // while no coordinator answers) must never turn into a failure of the run. The run stays claimed and is
    // taken over once its claim goes idle. One the coordinator refuses is another matter (below).
    for (let refusedBefore = false; ; refusedBefore = true) {
      try {
        await lease.reportOutcome(() => this.reportOutcome(run, lease, workflow?.retry, outcome));
        lease.finish();
        return;
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
          continue;
        }
        lease.lose(`its outcome could not be reported: ${(reportError as Error).message}`);
        this.logger.error('could not report the outcome of a run; it will be taken over once its claim goes idle', {
          runId: run.id,
          workflow: run.workflow,
          error: (reportError as Error).message,
        });
        return;
      }
    }
  }

  /** Completes the run, or fails it (to be retried when its workflow's policy allows). */
  private reportOutcome(run: ClaimedRun, lease: RunLease, policy: RetryPolicy | undefined, outcome: HandlerOutcome): Promise<unknown> {
    if (outcome.ok) return this.api.complete(run.id, { expectedRevision: lease.revision, output: outcome.output });
    const retry = policy && !outcome.refused && !isNonRetryable(outcome.error) && run.attempt < policy.maxAttempts;
    const details = outcome.error instanceof TaskFailedError ? outcome.error.details : toErrorDetails(outcome.error);
    const error = outcome.refused ? { ...details, nonRetryable: true } : details;
    const retryDelay = retry ? retryDelayMs(policy, run.attempt) : undefined;
    return this.api.fail(run.id, { expectedRevision: lease.revision, error, retryDelayMs: retryDelay });
  }

  private stopped(run: ClaimedRun, lease: RunLease): void {
    this.logger.warn('run is no longer ours; stopped without further writes', {
      runId: run.id,
      workflow: run.workflow,
      version: run.version,
      workerId: this.options.workerId,
      reason: lease.lostReason,
    });
  }
}

/**
 * The coordinator refused the request itself (400, 413), or this worker's own check by the contract did before
 * sending it (an InvalidRequestError, see CoordinatorApi.enqueue): sent again, it would be refused again.
 */
function isRefusedAsInvalid(error: unknown): boolean {
  return isAnsweredError(error) ? error.statusCode === 400 || error.statusCode === 413 : error instanceof InvalidRequestError;
}
