import { defineWorkflow } from '@nest-durable/workflow';
import { describe, expect, it } from '@jest/globals';
import type { CoordinatorApi } from './coordinator.api';
import { RegistrationGate } from './registration-gate';
import type { RunExecutor } from './run-executor';
import type { Subscriber } from './subscribers/subscriber.interface';
import { resolveWorkerOptions } from './worker.options';
import { WorkerRuntime } from './worker-runtime.service';
import { WorkflowRegistry } from './workflow.registry';

const limited = defineWorkflow({ name: 'limited', version: '1', limits: { concurrency: 2 }, handler: async () => null });
const free = defineWorkflow({ name: 'free', version: '1', handler: async () => null });

/** Lets every pending callback run (timers of 0 ms, I/O, microtasks) a few times over. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** A runtime over a subscriber that counts its reads and never has work. */
function runtimeFor(workflows: (typeof limited)[]) {
  const options = resolveWorkerOptions({ workflows, coordinatorUrl: 'http://unused' });
  const gate = new RegistrationGate(new WorkflowRegistry(options));
  let reads = 0;
  const subscriber: Subscriber = {
    name: 'fake',
    getReadyRuns: (_limit, signal) => {
      reads++;
      return new Promise((resolve) => signal.addEventListener('abort', () => resolve([]), { once: true }));
    },
    getNextDelay: () => 0,
  };
  const runtime = new WorkerRuntime(subscriber, {} as RunExecutor, {} as CoordinatorApi, options, gate);
  return { runtime, gate, reads: () => reads };
}

describe('RegistrationGate', () => {
  it('holds the first read back until a registration committed when a workflow declares limits', async () => {
    const { runtime, gate, reads } = runtimeFor([limited, free]);
    runtime.onApplicationBootstrap();
    try {
      await settle();
      expect(reads()).toBe(0);
      expect(runtime.progress().healthy).toBe(true);
      gate.registered();
      await settle();
      expect(reads()).toBe(1);
    } finally {
      await runtime.beforeApplicationShutdown();
    }
  });

  it('lets a worker whose workflows declare no limits read at once', async () => {
    const { runtime, reads } = runtimeFor([free]);
    runtime.onApplicationBootstrap();
    try {
      await settle();
      expect(reads()).toBe(1);
    } finally {
      await runtime.beforeApplicationShutdown();
    }
  });
});
