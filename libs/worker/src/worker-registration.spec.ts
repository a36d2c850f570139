import type { WorkerRegistration } from '@nest-durable/client';
import { defineWorkflow } from '@nest-durable/workflow';
import { describe, expect, it } from '@jest/globals';
import type { CoordinatorApi } from './coordinator.api';
import { FailoverSubscriber } from './subscribers/failover.subscriber';
import type { HttpSubscriber } from './subscribers/http.subscriber';
import type { Subscriber } from './subscribers/subscriber.interface';
import { resolveWorkerOptions } from './worker.options';
import { WorkerRegistrar } from './worker-registration';
import type { WorkerRuntime } from './worker-runtime.service';
import { WorkflowRegistry } from './workflow.registry';

const workflow = defineWorkflow({ name: 'w', version: '1', handler: async () => null });

/** A primary subscriber that fails every read until told to recover. */
function flakyPrimary(): Subscriber & { up: boolean } {
  const primary = {
    name: 'redis-streams',
    up: false,
    getReadyRuns: async () => {
      if (!primary.up) throw new Error('connection refused');
      return [];
    },
    getNextDelay: () => 0,
    probe: async () => {
      if (!primary.up) throw new Error('connection refused');
    },
  };
  return primary;
}

describe('WorkerRegistrar', () => {
  it('says which subscriber it reads and whether that one has failed over to HTTP', async () => {
    const options = resolveWorkerOptions({ workflows: [workflow], coordinatorUrl: 'http://unused', concurrency: 3, shards: ['eu'] });
    const primary = flakyPrimary();
    const backup = { name: 'http', claim: async () => [] } as unknown as HttpSubscriber;
    const subscriber = new FailoverSubscriber(primary, backup, 0);
    const runtime = { activeRuns: 2 } as WorkerRuntime;
    const registrar = new WorkerRegistrar({} as CoordinatorApi, new WorkflowRegistry(options), runtime, subscriber, options);
    const expected: WorkerRegistration = {
      subscriber: 'redis-streams',
      failedOver: false,
      concurrency: 3,
      runsHeld: 2,
      intervalMs: 5_000,
      workflows: [{ name: 'w', version: '1', shards: ['eu'] }],
    };
    expect(registrar.registration()).toEqual(expected);

    await subscriber.getReadyRuns(1, new AbortController().signal);
    expect(registrar.registration()).toEqual({ ...expected, failedOver: true });
  });
});
