import type { ClaimedRun, StoredTask, TaskResultRequest } from '@nest-durable/common';
import { beforeEach, describe, expect, it } from '@jest/globals';
import { answeredError, CoordinatorUnavailableError } from '@nest-durable/client';
import { InvalidRequestError } from '@nest-durable/common';
import { defineWorkflow, WorkflowError } from '@nest-durable/workflow';
import type { CoordinatorApi } from './coordinator.api';
import { RunExecutor } from './run-executor';
import { RunLease } from '@app/locking';
import { WorkflowRegistry } from './workflow.registry';
import { resolveWorkerOptions } from './worker.options';

/** A stand-in for the coordinator that records what the executor reports. */
class FakeCoordinator {
  recorded: TaskResultRequest[] = [];
  completed: unknown[] = [];
  failed: unknown[] = [];
  /** The retry wait of each failure reported (undefined: the run failed for good). */
  retryDelays: (number | undefined)[] = [];
  conflictOnTask: string | undefined;
  unreachable = false;
  /** How many completions, then failures, to refuse as invalid (400) before taking one. */
  refuseCompletions = 0;
  refuseFailures = 0;
  /** Called as a completion arrives, before it is recorded. */
  onComplete: (() => void) | undefined;

  async recordTask(_runId: string, task: TaskResultRequest): Promise<StoredTask> {
    if (task.key === this.conflictOnTask) throw answeredError(409, 'revision_conflict', 'stale');
    this.recorded.push(task);
    return { key: task.key, kind: 'task', seq: task.seq, status: task.status, attempts: task.attempts, output: task.output, error: task.error };
  }
  async complete(_runId: string, request: { output: unknown }): Promise<void> {
    this.onComplete?.();
    if (this.unreachable) throw new CoordinatorUnavailableError('POST /complete: ECONNREFUSED');
    if (this.refuseCompletions-- > 0) throw answeredError(400, 'json_too_deep', 'output nests arrays and objects too deep');
    this.completed.push(request.output);
  }
  async fail(_runId: string, request: { error: unknown; retryDelayMs?: number }): Promise<void> {
    // Refused by the worker's own check, before anything is sent (CoordinatorApi.enqueue).
    if (this.refuseFailures-- > 0) throw new InvalidRequestError('error_too_large', 'error is 2000000 bytes; the limit is 1048576');
    this.failed.push(request.error);
    this.retryDelays.push(request.retryDelayMs);
  }
}

const executions: string[] = [];
/** Compensates in a catch block: after a 409 the compensation must not run. */
const compensating = defineWorkflow<Record<string, never>, string>({
  name: 'compensating',
  version: '1',
  handler: async (ctx) => {
    try {
      await ctx.task('charge', () => {
        executions.push('charge');
        return 1;
      });
    } catch {
      await ctx.task('refund', () => {
        executions.push('refund');
        return 1;
      });
    }
    return 'done';
  },
});
const threeSteps = defineWorkflow<{ n: number }, { total: number }>({
  name: 'three-steps',
  version: '1',
  handler: async (ctx, input) => {
    let total = 0;
    for (const name of ['a', 'b', 'a']) {
      total += await ctx.task(name, () => {
        executions.push(name);
        return input.n;
      });
    }
    return { total };
  },
});

/** Its task throws on every attempt: a nonRetryable error when `input.final`, a plain one otherwise. */
const declining = defineWorkflow<{ final: boolean }, string>({
  name: 'declining',
  version: '1',
  retry: { maxAttempts: 3, delayMs: 1_000 },
  handler: async (ctx, input) =>
    ctx.task(
      'charge',
      () => {
        executions.push('charge');
        throw input.final ? new WorkflowError('card declined', { nonRetryable: true }) : new Error('bank timed out');
      },
      { retry: { maxAttempts: 4, delayMs: 0 } },
    ),
});
/** Returns at once; retried by its policy if it failed. */
const returning = defineWorkflow<Record<string, never>, string>({
  name: 'returning',
  version: '1',
  retry: { maxAttempts: 3, delayMs: 1_000 },
  handler: async () => 'done',
});
/** Fails in the handler itself, outside any task. */
const refusing = defineWorkflow<Record<string, never>, string>({
  name: 'refusing',
  version: '1',
  retry: { maxAttempts: 3, delayMs: 1_000 },
  handler: async () => {
    throw new WorkflowError('input can never be processed', { nonRetryable: true });
  },
});

/** Calls a step by a name no step may have: a bug in the code, the same on every attempt. */
const misnaming = defineWorkflow<Record<string, never>, string>({
  name: 'misnaming',
  version: '1',
  retry: { maxAttempts: 3, delayMs: 1_000 },
  handler: async (ctx) => ctx.task('charge:card', () => 'charged'),
});

function claimed(tasks: StoredTask[] = []): ClaimedRun {
  return { id: 'run-1', workflow: 'three-steps', version: '1', queue: 'three-steps:1', revision: 3, attempt: 1, input: { n: 2 }, tasks };
}

describe('RunExecutor', () => {
  let coordinator: FakeCoordinator;
  let executor: RunExecutor;

  beforeEach(() => {
    executions.length = 0;
    coordinator = new FakeCoordinator();
    const options = resolveWorkerOptions({ workflows: [threeSteps, compensating, declining, refusing, returning, misnaming], coordinatorUrl: 'http://unused' });
    executor = new RunExecutor(coordinator as unknown as CoordinatorApi, new WorkflowRegistry(options), options);
  });

  it('runs tasks, records each under name#n with the claim revision, and completes', async () => {
    await executor.execute(claimed(), new RunLease('run-1', 3));
    expect(coordinator.recorded.map((task) => [task.key, task.seq, task.expectedRevision])).toEqual([
      ['a#1', 0, 3],
      ['b#1', 1, 3],
      ['a#2', 2, 3],
    ]);
    expect(coordinator.completed).toEqual([{ total: 6 }]);
  });

  it('stops heartbeating a run while its outcome is reported, and ends the claim once it is recorded', async () => {
    const lease = new RunLease('run-1', 3);
    const heartbeatedDuringReport: boolean[] = [];
    coordinator.onComplete = () => heartbeatedDuringReport.push(lease.needsHeartbeat);
    expect(lease.needsHeartbeat).toBe(true);
    await executor.execute(claimed(), lease);
    expect(heartbeatedDuringReport).toEqual([false]);
    expect([lease.isHeld, lease.needsHeartbeat, lease.isLost]).toEqual([false, false, false]);
  });

  it('replays recorded tasks without running them again', async () => {
    const recorded: StoredTask[] = [
      { key: 'a#1', kind: 'task', seq: 0, status: 'completed', attempts: 1, output: 10, error: null },
      { key: 'b#1', kind: 'task', seq: 1, status: 'completed', attempts: 1, output: 20, error: null },
    ];
    await executor.execute(claimed(recorded), new RunLease('run-1', 3));
    expect(executions).toEqual(['a']);
    expect(coordinator.recorded.map((task) => task.key)).toEqual(['a#2']);
    expect(coordinator.completed).toEqual([{ total: 32 }]);
  });

  it('replays a recorded task failure as a failure of the run', async () => {
    const recorded: StoredTask[] = [
      { key: 'a#1', kind: 'task', seq: 0, status: 'failed', attempts: 3, output: null, error: { name: 'Error', message: 'boom' } },
    ];
    await executor.execute(claimed(recorded), new RunLease('run-1', 3));
    expect(executions).toEqual([]);
    expect(coordinator.failed).toEqual([{ name: 'Error', message: 'boom' }]);
  });

  it('fails the run with a non-determinism error when the code no longer matches the history', async () => {
    const recorded: StoredTask[] = [
      { key: 'a#1', kind: 'task', seq: 0, status: 'completed', attempts: 1, output: 1, error: null },
      { key: 'c#1', kind: 'task', seq: 1, status: 'completed', attempts: 1, output: 1, error: null },
    ];
    await executor.execute(claimed(recorded), new RunLease('run-1', 3));
    expect(executions).toEqual([]);
    expect(coordinator.recorded).toEqual([]);
    expect(coordinator.failed).toEqual([expect.objectContaining({ name: 'NonDeterminismError' })]);
    expect((coordinator.failed[0] as { message: string }).message).toContain('step 1 of this run\'s history is task "c#1"');
  });

  it('stops at a revision conflict and writes nothing more', async () => {
    coordinator.conflictOnTask = 'b#1';
    const lease = new RunLease('run-1', 3);
    await executor.execute(claimed(), lease);
    expect(lease.isLost).toBe(true);
    expect(lease.signal.aborted).toBe(true);
    expect(executions).toEqual(['a', 'b']);
    expect(coordinator.recorded.map((task) => task.key)).toEqual(['a#1']);
    expect(coordinator.completed).toEqual([]);
    expect(coordinator.failed).toEqual([]);
  });

  it('never records a finished run as failed because its completion could not be reported', async () => {
    coordinator.unreachable = true;
    const lease = new RunLease('run-1', 3);
    await executor.execute(claimed(), lease);
    expect(coordinator.failed).toEqual([]);
    expect(lease.isLost).toBe(true);
  });

  it('fails a run whose output the coordinator refuses, with the refusal as its error, for good, instead of leaving it claimed', async () => {
    coordinator.refuseCompletions = 1;
    const lease = new RunLease('run-1', 3);
    // Of a workflow with a retry policy: a replay would come to the same output, refused again.
    await executor.execute({ ...claimed(), workflow: 'returning' }, lease);
    expect(coordinator.completed).toEqual([]);
    expect(coordinator.failed).toEqual([
      expect.objectContaining({ name: 'InvalidRequestError', message: 'output nests arrays and objects too deep', nonRetryable: true }),
    ]);
    expect(coordinator.retryDelays).toEqual([undefined]);
    expect(lease.isLost).toBe(false);
  });

  it('fails a run whose failure is refused (its error too large) with the refusal, and leaves it claimed if that is refused too', async () => {
    coordinator.refuseFailures = 1;
    await executor.execute({ ...claimed(), workflow: 'refusing' }, new RunLease('run-1', 3));
    expect(coordinator.failed).toEqual([
      expect.objectContaining({ name: 'InvalidRequestError', message: 'error is 2000000 bytes; the limit is 1048576', nonRetryable: true }),
    ]);
    expect(coordinator.retryDelays).toEqual([undefined]);

    coordinator.failed.length = 0;
    coordinator.refuseFailures = 2;
    const lease = new RunLease('run-1', 3);
    await executor.execute({ ...claimed(), workflow: 'refusing' }, lease);
    expect(coordinator.failed).toEqual([]);
    expect(lease.isLost).toBe(true);
  });

  it('after a 409 inside a task, the handler cannot run further steps (no compensation on a lost run)', async () => {
    coordinator.conflictOnTask = 'charge#1';
    const lease = new RunLease('run-2', 3);
    await executor.execute({ ...claimed(), id: 'run-2', workflow: 'compensating' }, lease);
    expect(executions).toEqual(['charge']);
    expect(coordinator.recorded).toEqual([]);
    expect(coordinator.completed).toEqual([]);
    expect(coordinator.failed).toEqual([]);
  });

  it('writes nothing for a run lost while its handler was running', async () => {
    const lease = new RunLease('run-1', 3);
    lease.lose('heartbeat refused');
    await executor.execute(claimed(), lease);
    expect(executions).toEqual([]);
    expect(coordinator.recorded).toEqual([]);
    expect(coordinator.completed).toEqual([]);
    expect(coordinator.failed).toEqual([]);
  });

  describe('nonRetryable errors', () => {
    const run = (workflow: string, input: ClaimedRun['input']): ClaimedRun => ({ ...claimed(), workflow, input });

    it('a task retries a plain error up to its attempts, and its run is retried by the workflow policy', async () => {
      await executor.execute(run('declining', { final: false }), new RunLease('run-1', 3));
      expect(executions).toEqual(['charge', 'charge', 'charge', 'charge']);
      expect(coordinator.recorded.map((task) => [task.status, task.attempts])).toEqual([['failed', 4]]);
      expect(coordinator.retryDelays).toEqual([expect.any(Number)]);
    });

    it('a task that throws a nonRetryable error fails at once, and its run is not retried either', async () => {
      await executor.execute(run('declining', { final: true }), new RunLease('run-1', 3));
      expect(executions).toEqual(['charge']);
      expect(coordinator.recorded.map((task) => [task.status, task.attempts, task.error?.message])).toEqual([['failed', 1, 'card declined']]);
      expect(coordinator.failed).toEqual([expect.objectContaining({ name: 'WorkflowError', message: 'card declined' })]);
      expect(coordinator.retryDelays).toEqual([undefined]);
    });

    it('records the flag with the failure, so a replay of it (after a re-execution) is not retried either', async () => {
      await executor.execute(run('declining', { final: true }), new RunLease('run-1', 3));
      const [recorded] = coordinator.recorded;
      expect(recorded.error).toMatchObject({ message: 'card declined', nonRetryable: true });

      const replayed = new FakeCoordinator();
      const options = resolveWorkerOptions({ workflows: [declining], coordinatorUrl: 'http://unused' });
      const stored: StoredTask = { key: recorded.key, kind: 'task', seq: 0, status: 'failed', attempts: 1, output: null, error: recorded.error ?? null };
      await new RunExecutor(replayed as unknown as CoordinatorApi, new WorkflowRegistry(options), options).execute(
        { ...run('declining', { final: true }), tasks: [stored] },
        new RunLease('run-1', 4),
      );
      expect(executions).toEqual(['charge']);
      expect(replayed.retryDelays).toEqual([undefined]);
    });

    it('a step called by a name no step may have fails its run for good (InvalidStepError), running nothing', async () => {
      await executor.execute(run('misnaming', {}), new RunLease('run-1', 3));
      expect(coordinator.recorded).toEqual([]);
      expect(coordinator.failed).toEqual([expect.objectContaining({ name: 'InvalidStepError', nonRetryable: true })]);
      expect(coordinator.retryDelays).toEqual([undefined]);
    });

    it('a run of a workflow this worker does not host fails as WorkflowNotHostedError, retried by no policy of its own', async () => {
      await executor.execute(run('elsewhere', {}), new RunLease('run-1', 3));
      expect(coordinator.failed).toEqual([
        expect.objectContaining({ name: 'WorkflowNotHostedError', message: 'workflow elsewhere 1 is not registered on this worker' }),
      ]);
      expect(coordinator.retryDelays).toEqual([undefined]);
    });

    it('a handler that throws a nonRetryable error fails its run for good', async () => {
      await executor.execute(run('refusing', {}), new RunLease('run-1', 3));
      expect(coordinator.failed).toEqual([expect.objectContaining({ message: 'input can never be processed' })]);
      expect(coordinator.retryDelays).toEqual([undefined]);
    });
  });
});
