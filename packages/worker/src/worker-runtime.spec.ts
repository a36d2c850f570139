import { CLAIM_LIMIT_MAX, type ClaimedRun } from '@nest-durable/common';
import { afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import type { Subscriber } from './subscribers/subscriber.interface';
import type { CoordinatorApi } from './coordinator.api';
import type { RunExecutor } from './run-executor';
import type { RegistrationGate } from './registration-gate';
import type { RunLease } from '@app/locking';
import { resolveWorkerOptions } from './worker.options';
import { WorkerRuntime } from './worker-runtime.service';

const HEARTBEAT_INTERVAL_MS = 100;
/** These runtimes host no workflow declaring limits: nothing holds their first read back. */
const OPEN_GATE = { waits: false, opened: Promise.resolve() } as RegistrationGate;

const claimed = (id: string): ClaimedRun => ({ id, workflow: 'w', version: '1', queue: 'w:1', revision: 1, attempt: 1, input: null, tasks: [] });

/** A subscriber that hands out `runs` at its first read, then nothing (its reads wait until the worker stops). */
function deliveringOnce(runs: ClaimedRun[]): Subscriber {
  let delivered = false;
  return {
    name: 'fake',
    getReadyRuns: (_limit, signal) => {
      if (!delivered) {
        delivered = true;
        return Promise.resolve(runs);
      }
      return new Promise((resolve) => signal.addEventListener('abort', () => resolve([]), { once: true }));
    },
    getNextDelay: () => 0,
  };
}

/** A runtime executing one run that never ends, with a coordinator whose heartbeats answer only when told. */
function runtimeWithOneRun() {
  const subscriber = deliveringOnce([claimed('run-1')]);
  const leases: RunLease[] = [];
  const executor = {
    execute: (_run: ClaimedRun, lease: RunLease) => {
      leases.push(lease);
      return new Promise<void>(() => undefined);
    },
  };
  const answers: ((lost: string[]) => void)[] = [];
  const api = { heartbeat: () => new Promise<string[]>((resolve) => answers.push(resolve)) };
  const options = resolveWorkerOptions({ workflows: [], coordinatorUrl: 'http://unused', heartbeatIntervalMs: HEARTBEAT_INTERVAL_MS });
  const runtime = new WorkerRuntime(subscriber, executor as unknown as RunExecutor, api as unknown as CoordinatorApi, options, OPEN_GATE);
  return { runtime, leases, answers };
}

describe('WorkerRuntime heartbeats', () => {
  beforeAll(() => {
    Logger.overrideLogger(false);
  });

  afterEach(() => {
    jest.useRealTimers();
  });

  it('keeps one heartbeat in flight: a slow one is not joined by the next', async () => {
    jest.useFakeTimers();
    const { runtime, answers } = runtimeWithOneRun();
    runtime.onApplicationBootstrap();
    await jest.advanceTimersByTimeAsync(HEARTBEAT_INTERVAL_MS * 5);
    expect(answers).toHaveLength(1);
    answers[0]([]);
    await jest.advanceTimersByTimeAsync(HEARTBEAT_INTERVAL_MS);
    expect(answers).toHaveLength(2);
  });

  it('does not lose a run that this worker began to finish while the heartbeat was in flight', async () => {
    jest.useFakeTimers();
    const { runtime, leases, answers } = runtimeWithOneRun();
    runtime.onApplicationBootstrap();
    await jest.advanceTimersByTimeAsync(HEARTBEAT_INTERVAL_MS);
    const [lease] = leases;
    let finishReported!: () => void;
    const reporting = lease.whileEnding(() => new Promise<void>((resolve) => (finishReported = resolve)));
    // The completion committed before the heartbeat's statement ran: the coordinator answers "lost".
    answers[0](['run-1']);
    await jest.advanceTimersByTimeAsync(0);
    expect(lease.isLost).toBe(false);
    finishReported();
    await reporting;
  });
});

describe('WorkerRuntime capacity', () => {
  it('never asks its subscriber for more runs than a claim can hand out, however high its concurrency', async () => {
    Logger.overrideLogger(false);
    const asked: number[] = [];
    const subscriber: Subscriber = {
      name: 'fake',
      getReadyRuns: (limit, signal) => {
        asked.push(limit);
        return new Promise((resolve) => signal.addEventListener('abort', () => resolve([]), { once: true }));
      },
      getNextDelay: () => 0,
    };
    const options = resolveWorkerOptions({ workflows: [], coordinatorUrl: 'http://unused', concurrency: 2_000 });
    const runtime = new WorkerRuntime(subscriber, {} as RunExecutor, {} as CoordinatorApi, options, OPEN_GATE);
    runtime.onApplicationBootstrap();
    await runtime.beforeApplicationShutdown();
    expect(asked).toEqual([CLAIM_LIMIT_MAX]);
  });

  it("claims for a handler's slot once it is done and its outcome is being reported, up to concurrency such runs", async () => {
    Logger.overrideLogger(false);
    const asked: number[] = [];
    let made = 0;
    const subscriber: Subscriber = {
      name: 'fake',
      getReadyRuns: (limit, signal) => {
        asked.push(limit);
        if (signal.aborted) return Promise.resolve([]);
        return Promise.resolve(Array.from({ length: limit }, () => claimed(`run-${++made}`)));
      },
      getNextDelay: () => 0,
    };
    /** Per run: end its handler (its outcome goes out and waits), then answer that outcome. */
    const runs = new Map<string, { handlerDone: () => void; outcomeAnswered: () => void }>();
    const executor = {
      execute: async (run: ClaimedRun, lease: RunLease) => {
        await new Promise<void>((handlerDone) => runs.set(run.id, { handlerDone, outcomeAnswered: () => undefined }));
        await lease.reportOutcome(() => new Promise<void>((answered) => (runs.get(run.id)!.outcomeAnswered = answered)));
        lease.finish();
      },
    };
    const options = resolveWorkerOptions({ workflows: [], coordinatorUrl: 'http://unused', concurrency: 2 });
    const runtime = new WorkerRuntime(subscriber, executor as unknown as RunExecutor, {} as CoordinatorApi, options, OPEN_GATE);
    const settle = () => new Promise((resolve) => setImmediate(resolve));
    runtime.onApplicationBootstrap();
    await settle();
    expect(asked).toEqual([2]);
    // Both handlers busy: nothing asked. The first is done (its outcome on its way): one more is asked for.
    runs.get('run-1')!.handlerDone();
    await settle();
    expect(asked).toEqual([2, 1]);
    runs.get('run-2')!.handlerDone();
    await settle();
    expect(asked).toEqual([2, 1, 1]);
    expect(runtime.activeRuns).toBe(4);
    // Two outcomes in flight already: a third handler done frees no slot until one of them is answered.
    runs.get('run-3')!.handlerDone();
    await settle();
    expect(asked).toEqual([2, 1, 1]);
    runs.get('run-1')!.outcomeAnswered();
    await settle();
    expect(asked).toEqual([2, 1, 1, 1]);
    const stopped = runtime.beforeApplicationShutdown();
    for (const run of [...runs.values()]) {
      run.handlerDone();
      await settle();
      run.outcomeAnswered();
    }
    await stopped;
    expect(runtime.activeRuns).toBe(0);
  });
});

describe('WorkerRuntime shutdown', () => {
  it('releases the runs still executing after the grace period, not one whose outcome is on its way', async () => {
    Logger.overrideLogger(false);
    const subscriber = deliveringOnce([claimed('run-1'), claimed('run-2')]);
    let outcomeAnswered!: () => void;
    const executor = {
      // run-1 executes past the grace period; run-2's handler is done and its outcome waits for its answer.
      execute: (run: ClaimedRun, lease: RunLease) =>
        run.id === 'run-1' ? new Promise<void>(() => undefined) : lease.reportOutcome(() => new Promise<void>((resolve) => (outcomeAnswered = resolve))),
    };
    const released: string[] = [];
    const api = { release: async (runId: string) => void released.push(runId) };
    const options = resolveWorkerOptions({ workflows: [], coordinatorUrl: 'http://unused', shutdownGraceMs: 20 });
    const runtime = new WorkerRuntime(subscriber, executor as unknown as RunExecutor, api as unknown as CoordinatorApi, options, OPEN_GATE);
    runtime.onApplicationBootstrap();
    await new Promise((resolve) => setImmediate(resolve));
    expect(runtime.executingRuns).toBe(1);
    await runtime.beforeApplicationShutdown();
    expect(released).toEqual(['run-1']);
    outcomeAnswered();
  });
});
