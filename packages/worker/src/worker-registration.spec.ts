import { answeredError } from '@nest-durable/client';
import { type WorkerRegistration } from '@nest-durable/common';
import { defineWorkflow } from '@nest-durable/workflow';
import { describe, expect, it, jest } from '@jest/globals';
import type { CoordinatorApi } from './coordinator.api';
import { FailoverSubscriber } from './subscribers/failover.subscriber';
import type { HttpSubscriber } from './subscribers/http.subscriber';
import type { Subscriber } from './subscribers/subscriber.interface';
import { resolveWorkerOptions } from './worker.options';
import { Type } from '@sinclair/typebox';
import { registeredWorkflows, WorkerRegistrar } from './worker-registration';
import { RegistrationGate } from './registration-gate';
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
  it('logs a refused registration (a configuration error) at error level with its reason every time, a failing coordinator once', async () => {
    const options = resolveWorkerOptions({ workflows: [workflow], coordinatorUrl: 'http://unused' });
    let refusal: Error = answeredError(400, 'invalid_cron', 'w 1 schedule bad: cron "x" is not a cron expression');
    const api = { register: async () => Promise.reject(refusal) } as unknown as CoordinatorApi;
    const registry = new WorkflowRegistry(options);
    const registrar = new WorkerRegistrar(api, registry, { activeRuns: 0 } as WorkerRuntime, new RegistrationGate(registry), flakyPrimary(), options);
    const logger = (registrar as unknown as { logger: { error: () => void; warn: () => void } }).logger;
    const errors = jest.spyOn(logger, 'error').mockImplementation(() => undefined);
    const warnings = jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
    const register = () => (registrar as unknown as { register(): Promise<void> }).register();
    await register();
    await register();
    expect(errors.mock.calls).toEqual([
      [expect.stringContaining('the coordinator refused this worker\'s registration (400 invalid_cron: w 1 schedule bad: cron "x" is not a cron expression)')],
      [expect.stringContaining('(400 invalid_cron:')],
    ]);
    expect(warnings).not.toHaveBeenCalled();
    refusal = new Error('connection refused');
    await register();
    await register();
    expect(errors).toHaveBeenCalledTimes(2);
    expect(warnings.mock.calls).toEqual([[expect.stringContaining('connection refused')]]);
  });

  it('says which build it runs, which subscriber it reads and whether that one has failed over to HTTP', async () => {
    const options = resolveWorkerOptions({
      workflows: [workflow],
      coordinatorUrl: 'http://unused',
      concurrency: 3,
      shards: ['eu'],
      buildId: '2.0.1+sha.1c0ffee',
    });
    const primary = flakyPrimary();
    const backup = { name: 'http', claim: async () => [] } as unknown as HttpSubscriber;
    const subscriber = new FailoverSubscriber(primary, backup, 0);
    const runtime = { activeRuns: 2 } as WorkerRuntime;
    const registry = new WorkflowRegistry(options);
    const registrar = new WorkerRegistrar({} as CoordinatorApi, registry, runtime, new RegistrationGate(registry), subscriber, options);
    const expected: WorkerRegistration = {
      buildId: '2.0.1+sha.1c0ffee',
      subscriber: 'redis-streams',
      failedOver: false,
      concurrency: 3,
      runsHeld: 2,
      intervalMs: 5_000,
      workflows: [{ name: 'w', version: '1', shards: ['eu'], schedules: [] }],
    };
    expect(registrar.registration()).toEqual(expected);

    await subscriber.getReadyRuns(1, new AbortController().signal);
    expect(registrar.registration()).toEqual({ ...expected, failedOver: true });
  });

  it('registers the retention window a workflow declares, and refuses to start with one that is not a whole number of ms', () => {
    const declared = defineWorkflow({ name: 'kept', version: '2', retentionMs: 60_000, handler: async () => null });
    const options = resolveWorkerOptions({ workflows: [workflow, declared], coordinatorUrl: 'http://unused' });
    expect(registeredWorkflows(new WorkflowRegistry(options))).toEqual([
      { name: 'w', version: '1', shards: [], schedules: [] },
      { name: 'kept', version: '2', shards: [], schedules: [], retentionMs: 60_000 },
    ]);
    for (const retentionMs of [-1, 1.5, Number.NaN]) {
      const bad = defineWorkflow({ name: 'bad', version: '1', retentionMs, handler: async () => null });
      expect(() => new WorkflowRegistry(resolveWorkerOptions({ workflows: [bad], coordinatorUrl: 'http://unused' }))).toThrow(
        'workflow bad 1: retentionMs must be an integer from 0 to',
      );
    }
  });

  it('sends the updates each version declares, their TypeBox schemas as JSON', () => {
    const cart = defineWorkflow({
      name: 'cart',
      version: '1',
      updates: { add: { inputSchema: Type.Object({ sku: Type.String() }) }, note: {} },
      handler: async () => null,
    });
    const options = resolveWorkerOptions({ workflows: [cart, workflow], coordinatorUrl: 'http://unused' });
    const [declared, plain] = registeredWorkflows(new WorkflowRegistry(options));
    expect(declared.updates).toEqual([
      { name: 'add', inputSchema: { type: 'object', required: ['sku'], properties: { sku: { type: 'string' } } } },
      { name: 'note' },
    ]);
    expect(plain.updates).toBeUndefined();
  });

  it('sends the schedules each workflow version declares, once per version whatever its shards', () => {
    const scheduled = defineWorkflow<{ kind: string }, null>({
      name: 'report',
      version: '2',
      schedules: [{ name: 'nightly', cron: '0 30 2 * * *', timezone: 'Europe/Berlin', input: { kind: 'daily' } }],
      handler: async () => null,
    });
    const options = resolveWorkerOptions({ workflows: [workflow, scheduled], coordinatorUrl: 'http://unused', shards: ['eu', 'us'] });
    expect(registeredWorkflows(new WorkflowRegistry(options))).toEqual([
      { name: 'w', version: '1', shards: ['eu', 'us'], schedules: [] },
      {
        name: 'report',
        version: '2',
        shards: ['eu', 'us'],
        schedules: [{ name: 'nightly', cron: '0 30 2 * * *', timezone: 'Europe/Berlin', input: { kind: 'daily' } }],
      },
    ]);
  });

  it('sends the input schema a workflow version declares, as JSON (a TypeBox schema without its marks)', () => {
    const Input = Type.Object({ email: Type.String() });
    const checked = defineWorkflow({ name: 'checked', version: '1', inputSchema: Input, handler: async () => null });
    const options = resolveWorkerOptions({ workflows: [workflow, checked], coordinatorUrl: 'http://unused' });
    const [plain, declared] = registeredWorkflows(new WorkflowRegistry(options));
    expect(plain).not.toHaveProperty('inputSchema');
    expect(declared.inputSchema).toEqual({ type: 'object', properties: { email: { type: 'string' } }, required: ['email'] });
    expect(Object.getOwnPropertySymbols(declared.inputSchema)).toEqual([]);
  });
});
