import { traceCarrierOf } from '@nest-durable/common';
import type { Branch } from '@nest-durable/workflow';
import type { RunLease } from '@app/locking';
import type { Context } from '@opentelemetry/api';
import { AttemptClock } from './attempt-clock';
import type { CoordinatorApi } from './coordinator.api';
import { inStepSpan } from './run-tracing';
import type { RunSteps } from './run-steps';
import type { StepHistory } from './step-history';
import type { TaskAttempts } from './task-attempts';
import { checkBranches, groupResultOf, wireBranch } from './wait-groups';

/** The wait groups (`ctx.any`, `ctx.all`) of one execution of a run (a replay reads them with wait-groups.ts alone). */
export class WaitGroupSteps {
  constructor(
    private readonly runId: string,
    private readonly lease: RunLease,
    private readonly api: CoordinatorApi,
    private readonly history: StepHistory,
    private readonly steps: RunSteps,
    private readonly attempts: TaskAttempts,
    /** The context of this execution's run span: the parent of its steps' spans. */
    private readonly traced: Context,
  ) {}

  /**
   * A wait group: its task branches run here first (each recorded with the group's request, once), then the
   * coordinator arms the others and resolves the group, or suspends the run until a branch finishes; the run asks
   * again when it wakes. The resolved group comes back with its branches' steps, read as a replay reads them. A wait
   * like the others: updates are applied at the group's position (see RunSteps.suspendAt), in its span (`any <name>`).
   */
  async take(mode: 'any' | 'all', name: string, branches: readonly Branch[]): Promise<unknown> {
    checkBranches(branches);
    await this.steps.settled();
    const step = this.steps.begin('group', name);
    let group = step.recorded && (await this.steps.waited(step));
    if (!group) {
      const tasks = await Promise.all(
        branches.map(async (branch, index) => {
          if (branch.kind !== 'task') return undefined;
          const key = `${step.key}/${index}`;
          const recorded = this.history.branch(step.key, index);
          if (recorded) return recorded;
          const retry = this.history.retryOf(key);
          const done = await this.attempts.run(key, step.seq, name, branch.fn, branch.options ?? {}, retry ? Number(retry.attempts) : 0, new AttemptClock());
          return done.ok
            ? { status: 'completed' as const, attempts: done.attempts, output: done.output, error: null }
            : { status: 'failed' as const, attempts: done.attempts, output: null, error: done.error };
        }),
      );
      this.lease.throwIfEnded();
      const request = { key: step.key, seq: step.seq, name, mode, branches: branches.map((branch, index) => wireBranch(branch, tasks[index])) };
      const resolved = await inStepSpan(this.traced, `${mode} ${name}`, this.steps.stepAttributes('group', name, step.key), (span) =>
        this.steps.suspendAt(
          step.key,
          // Built at each send: recording updates moves the revision on.
          () => this.api.waitGroup(this.runId, { expectedRevision: this.lease.revision, ...request, ...traceCarrierOf(span) }),
          step.seq,
        ),
      );
      this.history.remember(resolved.branches);
      group = resolved.task;
    }
    return groupResultOf(mode, group, branches, (index) => this.history.branch(step.key, index));
  }
}
