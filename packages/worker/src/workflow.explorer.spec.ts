import { describe, expect, it } from '@jest/globals';
import { workflowNameOf } from '@nest-durable/common';
import { defineWorkflow, type WorkflowContext } from '@nest-durable/workflow';
import { Inject, Injectable, Module, Scope } from '@nestjs/common';
import { REQUEST } from '@nestjs/core';
import { Test, type TestingModule } from '@nestjs/testing';
import { Workflow } from './workflow.decorator';
import type { WorkflowWorkerOptions } from './worker.options';
import { WorkflowRegistry } from './workflow.registry';
import { WorkflowWorkerModule } from './workflow-worker.module';

/** One of the app's own services, which a workflow class injects. */
@Injectable()
class Payments {
  readonly charged: string[] = [];

  async charge(orderId: string): Promise<string> {
    this.charged.push(orderId);
    return `pay-${orderId}`;
  }
}

@Workflow({ name: 'order', version: '1', limits: { concurrency: 3 }, retentionMs: 60_000 })
class OrderWorkflow {
  constructor(private readonly payments: Payments) {}

  async run(ctx: WorkflowContext, input: { orderId: string }): Promise<{ paymentId: string; runId: string }> {
    return { paymentId: await this.payments.charge(input.orderId), runId: ctx.runId };
  }
}

/** A feature module of the app: the class is one of its providers, nowhere near the worker module. */
@Module({ providers: [Payments, OrderWorkflow] })
class OrdersModule {}

const echo = defineWorkflow<string, string>({ name: 'echo', version: '1', handler: async (_ctx, input) => input });
// Nothing listens there: an app that starts (init) reaches no coordinator. Most tests only compile (no lifecycle hooks).
const worker = (workflows: WorkflowWorkerOptions['workflows'] = [echo]) => WorkflowWorkerModule.forRoot({ workflows, coordinatorUrl: 'http://127.0.0.1:9' });
const ctx = { runId: 'run-1' } as WorkflowContext;

/** The refusal the app's start (init) fails with; closed either way, so that a start that succeeds stops again. */
async function startRefusal(app: TestingModule): Promise<string> {
  try {
    return await app.init().then(
      () => 'started',
      (error: Error) => error.message,
    );
  } finally {
    await app.close();
  }
}

describe('@Workflow classes', () => {
  it('are found in any module, made by Nest with their dependencies, and hosted beside the definitions', async () => {
    const app = await Test.createTestingModule({ imports: [worker(), OrdersModule] }).compile();
    const registry = app.get(WorkflowRegistry);
    expect(registry.refs()).toEqual([
      { name: 'echo', version: '1' },
      { name: 'order', version: '1' },
    ]);
    const order = registry.get('order', '1')!;
    expect(order).toMatchObject({ name: 'order', version: '1', limits: { concurrency: 3 }, retentionMs: 60_000 });
    await expect(order.handler(ctx, { orderId: 'o-1' })).resolves.toEqual({ paymentId: 'pay-o-1', runId: 'run-1' });
    expect(app.get(Payments).charged).toEqual(['o-1']);
  });

  it('run on what the testing module put in place of their dependencies', async () => {
    const payments = { charge: async (orderId: string) => `fake-${orderId}` };
    const app = await Test.createTestingModule({ imports: [worker(), OrdersModule] })
      .overrideProvider(Payments)
      .useValue(payments)
      .compile();
    await expect(app.get(WorkflowRegistry).get('order', '1')!.handler(ctx, { orderId: 'o-2' })).resolves.toMatchObject({ paymentId: 'fake-o-2' });
  });

  it('make a worker on their own, without any definition', async () => {
    const app = await Test.createTestingModule({ imports: [worker([]), OrdersModule] }).compile();
    expect(app.get(WorkflowRegistry).refs()).toEqual([{ name: 'order', version: '1' }]);
  });

  it('are hosted only when provided: a worker with none and no definition is refused', async () => {
    await expect(Test.createTestingModule({ imports: [worker([])] }).compile()).rejects.toThrow(
      'a worker needs at least one workflow: a definition in `workflows` or a @Workflow class among its providers',
    );
  });

  it('refuses a name and version registered twice, by a class and a definition or by two classes, naming both', async () => {
    const sameAsOrder = defineWorkflow({ name: 'order', version: '1', handler: async () => null });
    await expect(Test.createTestingModule({ imports: [worker([sameAsOrder]), OrdersModule] }).compile()).rejects.toThrow(
      'workflow order 1 is registered twice: by a definition and by class OrderWorkflow',
    );

    @Workflow({ name: 'order', version: '1' })
    class OtherOrderWorkflow {
      async run(): Promise<null> {
        return null;
      }
    }
    await expect(Test.createTestingModule({ imports: [worker(), OrdersModule], providers: [OtherOrderWorkflow] }).compile()).rejects.toThrow(
      /^workflow order 1 is registered twice: by class (OrderWorkflow|OtherOrderWorkflow) and by class (OrderWorkflow|OtherOrderWorkflow)$/,
    );
  });

  it('refuses a request-scoped class, or one depending on a request-scoped provider, when the app starts', async () => {
    @Workflow({ name: 'scoped', version: '1' })
    class ScopedWorkflow {
      async run(): Promise<null> {
        return null;
      }
    }
    Injectable({ scope: Scope.REQUEST })(ScopedWorkflow);
    const scoped = await Test.createTestingModule({ imports: [worker()], providers: [ScopedWorkflow] }).compile();
    expect(await startRefusal(scoped)).toMatch(/^@Workflow class ScopedWorkflow is request-scoped or transient, or depends on a request-scoped provider/);

    @Workflow({ name: 'by-request', version: '1' })
    class RequestReadingWorkflow {
      constructor(@Inject(REQUEST) readonly request: unknown) {}

      async run(): Promise<null> {
        return null;
      }
    }
    const dependent = await Test.createTestingModule({ imports: [worker()], providers: [RequestReadingWorkflow] }).compile();
    expect(await startRefusal(dependent)).toMatch(/^@Workflow class RequestReadingWorkflow is request-scoped or transient/);
  });

  it('refuses a class provided by a factory, which it could not find before Nest made it', async () => {
    const app = await Test.createTestingModule({
      imports: [worker()],
      providers: [Payments, { provide: 'ORDERS', useFactory: (payments: Payments) => new OrderWorkflow(payments), inject: [Payments] }],
    }).compile();
    expect(await startRefusal(app)).toBe(
      "@Workflow class OrderWorkflow is provided by a factory or as a value: list the class itself among a module's providers",
    );
  });
});

describe('@Workflow', () => {
  it('records the name and version on the class, where the client reads them; a subclass must say its own', () => {
    expect(workflowNameOf(OrderWorkflow)).toEqual({ name: 'order', version: '1' });
    class Undecorated extends OrderWorkflow {}
    expect(() => workflowNameOf(Undecorated)).toThrow('Undecorated is not a @Workflow class: decorate it with @Workflow({ name, version })');
  });

  it('refuses what defineWorkflow refuses, at once', () => {
    expect(() => Workflow({ name: 'w', version: '1', limits: { concurrency: 0 } })).toThrow(
      'workflow w: limits.concurrency must be an integer from 1 to 100000',
    );
    expect(() => Workflow({ name: 'w', version: '1', schedules: [{ name: 's', cron: 'never' }] })).toThrow('cron');
  });
});
