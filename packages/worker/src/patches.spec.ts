import { beforeEach, describe, expect, it } from '@jest/globals';
import type { ClaimedRun, StoredTask, TaskResultRequest } from '@nest-durable/common';
import { defineWorkflow } from '@nest-durable/workflow';
import { RunLease } from '@app/locking';
import type { CoordinatorApi } from './coordinator.api';
import { RunExecutor } from './run-executor';
import { resolveWorkerOptions } from './worker.options';
import { WorkflowRegistry } from './workflow.registry';

/** A coordinator that records reports; a task result's answer can be held back (`hold`) to see what waits for it. */
class RecordingCoordinator {
  readonly recorded: TaskResultRequest[] = [];
  readonly completed: unknown[] = [];
  readonly failed: unknown[] = [];
  private held: (() => void)[] | undefined;

  hold(): void {
    this.held = [];
  }

  release(): void {
    for (const answer of this.held ?? []) answer();
    this.held = undefined;
  }

  async recordTask(_runId: string, task: TaskResultRequest): Promise<StoredTask> {
    this.recorded.push(task);
    if (this.held) await new Promise<void>((answered) => this.held!.push(answered));
    return {
      key: task.key,
      kind: 'kind' in task && task.kind ? task.kind : 'task',
      seq: task.seq,
      status: task.status,
      attempts: task.attempts,
      output: task.output,
      error: task.error,
    };
  }

  async complete(_runId: string, request: { output: unknown }): Promise<void> {
    this.completed.push(request.output);
  }

  async fail(_runId: string, request: { error: unknown }): Promise<void> {
    this.failed.push(request.error);
  }
}

const events: string[] = [];
/** v2 of a checkout: a fee task added after `charge`, guarded by a patch. */
const checkout = defineWorkflow<Record<string, never>, string>({
  name: 'checkout',
  version: '1',
  handler: async (ctx) => {
    await ctx.task('charge', () => 'charged');
    const patched = ctx.patched('add-fee');
    events.push(`patched ${patched}`);
    if (patched) await ctx.task('fee', () => 'fee');
    await ctx.task('ship', () => 'shipped');
    return patched ? 'new branch' : 'old branch';
  },
});

const step = (key: string, seq: number, kind: StoredTask['kind'] = 'task'): StoredTask => ({
  key,
  kind,
  seq,
  status: 'completed',
  attempts: 1,
  output: null,
  error: null,
});

const claimed = (tasks: StoredTask[]): ClaimedRun => ({
  id: 'run-1',
  workflow: 'checkout',
  version: '1',
  queue: 'checkout:1',
  revision: 2,
  attempt: 1,
  input: {},
  tasks,
});

describe('ctx.patched in a run', () => {
  let coordinator: RecordingCoordinator;
  let executor: RunExecutor;

  beforeEach(() => {
    events.length = 0;
    coordinator = new RecordingCoordinator();
    const options = resolveWorkerOptions({ workflows: [checkout], coordinatorUrl: 'http://unused' });
    executor = new RunExecutor(coordinator as unknown as CoordinatorApi, new WorkflowRegistry(options), options);
  });

  const recordedSteps = () => coordinator.recorded.map((task) => [task.key, task.seq, 'kind' in task ? (task.kind ?? 'task') : 'task']);

  it('on new ground takes the new branch and records its marker, as a task result is, at its position', async () => {
    await executor.execute(claimed([]), new RunLease('run-1', 2));
    expect(recordedSteps()).toEqual([
      ['charge#1', 0, 'task'],
      ['patch:add-fee#1', 1, 'patch'],
      ['fee#1', 2, 'task'],
      ['ship#1', 3, 'task'],
    ]);
    expect(coordinator.recorded[1]).toMatchObject({ name: 'add-fee', status: 'completed', output: null, expectedRevision: 2 });
    expect(coordinator.completed).toEqual(['new branch']);
  });

  it('resumed from a history older code recorded past the patch, takes the old branch and records no marker', async () => {
    await executor.execute(claimed([step('charge#1', 0), step('ship#1', 1)]), new RunLease('run-1', 2));
    expect(events).toEqual(['patched false']);
    expect(coordinator.recorded).toEqual([]);
    expect(coordinator.completed).toEqual(['old branch']);
    expect(coordinator.failed).toEqual([]);
  });

  it('resumed from a history with its marker, takes the new branch again and records nothing more', async () => {
    await executor.execute(claimed([step('charge#1', 0), step('patch:add-fee#1', 1, 'patch'), step('fee#1', 2)]), new RunLease('run-1', 2));
    expect(events).toEqual(['patched true']);
    expect(recordedSteps()).toEqual([['ship#1', 3, 'task']]);
    expect(coordinator.completed).toEqual(['new branch']);
  });

  it('resumed from a history that ends before the patch (the run slept there under the old code), takes the new branch', async () => {
    await executor.execute(claimed([step('charge#1', 0)]), new RunLease('run-1', 2));
    expect(events).toEqual(['patched true']);
    expect(recordedSteps().map(([key]) => key)).toEqual(['patch:add-fee#1', 'fee#1', 'ship#1']);
  });

  it('does not wait for its marker to be recorded (no round trip of its own); the next step waits for it to land', async () => {
    coordinator.hold();
    const execution = executor.execute(claimed([step('charge#1', 0)]), new RunLease('run-1', 2));
    await new Promise((resolve) => setImmediate(resolve));
    // The handler went past the patch at once, while its marker is on its way; the fee task waits for it.
    expect(events).toEqual(['patched true']);
    expect(recordedSteps().map(([key]) => key)).toEqual(['patch:add-fee#1']);
    coordinator.release();
    await execution;
    expect(recordedSteps().map(([key]) => key)).toEqual(['patch:add-fee#1', 'fee#1', 'ship#1']);
    expect(coordinator.completed).toEqual(['new branch']);
  });
});
