import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { WorkflowClient } from '@nest-durable/client';
import { Workflow } from '@nest-durable/worker';
import type { WorkflowContext } from '@nest-durable/workflow';
import { Test, type TestingModule } from '@nestjs/testing';
import { loadWorkerConfig } from '../apps/worker/src/config/worker.config';
import { WorkerAppModule } from '../apps/worker/src/worker-app.module';
import { echoWorkflow, OrderFulfilment, OrderProcessingWorkflow } from '../apps/worker/src/workflows';
import type { OrderOutput } from '../apps/worker/src/workflows/order-processing.workflow';
import { type RunningCoordinator, startCoordinator } from './support/apps';
import { capturedLogger } from './support/captured-logs';
import { createTestDatabase, type TestDatabase } from './support/database';

/** Stands in for the fulfilment systems: records each call and answers ids of its own. */
class FakeFulfilment {
  readonly calls: string[] = [];

  async reserve(orderId: string) {
    this.calls.push(`reserve ${orderId}`);
    return { reservationId: `fake-res-${orderId}` };
  }

  async charge(orderId: string) {
    this.calls.push(`charge ${orderId}`);
    return { paymentId: `fake-pay-${orderId}` };
  }

  async ship(orderId: string) {
    this.calls.push(`ship ${orderId}`);
    return { trackingNumber: `fake-trk-${orderId}` };
  }
}

/** A test-only class beside the app's: runs order-processing, a class too, as its child, and reads its typed output. */
@Workflow({ name: 'order-batch', version: '1' })
class OrderBatchWorkflow {
  async run(ctx: WorkflowContext, input: { orderIds: string[] }): Promise<{ tracking: string[] }> {
    const tracking: string[] = [];
    for (const orderId of input.orderIds) {
      const shipped: OrderOutput = await ctx.child(`order-${orderId}`, OrderProcessingWorkflow, { orderId });
      tracking.push(shipped.trackingNumber);
    }
    return { tracking };
  }
}

/**
 * `@Workflow` classes end to end: the real worker app (its order-processing class injects OrderFulfilment), built as
 * a testing module whose `overrideProvider` puts a fake in the service's place, against a real coordinator and
 * PostgreSQL; runs started by class with the typed client.
 */
describe('@Workflow classes on a real worker and coordinator', () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator;
  let worker: TestingModule;
  let client: WorkflowClient;
  const fulfilment = new FakeFulfilment();

  beforeAll(async () => {
    db = await createTestDatabase('workflow_classes');
    coordinator = await startCoordinator(db.url);
    const config = { ...loadWorkerConfig({ COORDINATOR_URL: coordinator.url }), claimWaitMs: 5_000 };
    worker = await Test.createTestingModule({ imports: [WorkerAppModule.forRoot(config)], providers: [OrderBatchWorkflow] })
      .overrideProvider(OrderFulfilment)
      .useValue(fulfilment)
      .setLogger(capturedLogger)
      .compile();
    await worker.init();
    client = new WorkflowClient({ url: coordinator.url });
  });

  afterAll(async () => {
    await worker?.close();
    await coordinator?.close();
    await db?.drop();
  });

  it("runs a class's tasks through the service injected into it, here the testing module's fake", async () => {
    const run = await client.start(OrderProcessingWorkflow, { orderId: 'o-1' });
    const done = await run.result({ timeoutMs: 10_000 });
    if (done.status !== 'completed') throw new Error(`run ${done.status}: ${JSON.stringify(done.error)}`);
    expect(done.output).toEqual({
      orderId: 'o-1',
      status: 'shipped',
      reservationId: 'fake-res-o-1',
      paymentId: 'fake-pay-o-1',
      trackingNumber: 'fake-trk-o-1',
    });
    expect(fulfilment.calls).toEqual(['reserve o-1', 'charge o-1', 'ship o-1']);
    expect(done.tasks?.map((task) => [task.name, task.output])).toEqual([
      ['reserve-inventory', { reservationId: 'fake-res-o-1' }],
      ['charge-payment', { paymentId: 'fake-pay-o-1' }],
      ['ship-order', { trackingNumber: 'fake-trk-o-1' }],
    ]);
  });

  it("hosts the app's definitions and a module's classes side by side, and registers them all", async () => {
    const echoed = await client.start(echoWorkflow, { text: 'beside the classes' });
    expect(await client.waitForResult(echoed, { timeoutMs: 10_000 })).toMatchObject({ status: 'completed', output: { text: 'beside the classes' } });
    const [registered] = (await client.listWorkers()).items;
    expect(registered.workflows.map(({ name }) => name)).toEqual(expect.arrayContaining(['echo', 'order-processing', 'order-batch']));
  });

  it('starts a class as a child run by the class', async () => {
    const run = await client.start(OrderBatchWorkflow, { orderIds: ['b-1', 'b-2'] });
    const done = await client.waitForResult(run, { timeoutMs: 20_000 });
    expect(done).toMatchObject({ status: 'completed', output: { tracking: ['fake-trk-b-1', 'fake-trk-b-2'] } });
    const children = await client.list({ workflow: 'order-processing', status: 'completed' });
    expect(children.runs.filter((child) => child.parentId === run.id)).toHaveLength(2);
  });
});
