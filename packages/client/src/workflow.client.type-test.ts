// Type tests of the typed client, compiled by `npm run typecheck` (never run): a typing that breaks fails the
// typecheck, through `expectTypeOf` or through a `@ts-expect-error` that no longer finds its error.
import type { JsonValue, RunView } from '@nest-durable/common';
import { expectTypeOf } from 'expect-type';
import type { WorkflowClient } from './workflow.client';
import type { RunHandle, StartedRun, TypedRunView } from './workflow.client.types';

interface OrderInput {
  orderId: string;
}
interface OrderOutput {
  orderId: string;
  status: 'shipped';
}

/** A `@Workflow` class as the client sees it (the decorator, in the worker package, changes no type). */
class OrderWorkflow {
  constructor(readonly payments: { charge(orderId: string): Promise<void> }) {}

  async run(_ctx: { runId: string }, input: OrderInput): Promise<OrderOutput> {
    await this.payments.charge(input.orderId);
    return { orderId: input.orderId, status: 'shipped' };
  }
}

/** A definition as `defineWorkflow` returns it (its handler typed). */
declare const echo: { name: 'echo'; version: '1'; handler: (ctx: { runId: string }, input: { text: string }) => Promise<{ echoed: string }> };
declare const client: WorkflowClient;

export async function startedFromAClass(): Promise<void> {
  const run = await client.start(OrderWorkflow, { orderId: 'o-1' });
  expectTypeOf(run).toEqualTypeOf<StartedRun<OrderOutput>>();
  expectTypeOf(run.id).toBeString();

  const done = await client.waitForResult(run, { timeoutMs: 1_000 });
  expectTypeOf(done).toEqualTypeOf<TypedRunView<OrderOutput>>();
  expectTypeOf(done.output).toEqualTypeOf<OrderOutput | null>();
  if (done.status === 'completed') expectTypeOf(done.output.status).toEqualTypeOf<'shipped'>();
  else expectTypeOf(done.output).toBeNull();

  expectTypeOf(await run.result()).toEqualTypeOf<TypedRunView<OrderOutput>>();
  expectTypeOf(await run.get()).toEqualTypeOf<TypedRunView<OrderOutput>>();
  expectTypeOf(run).toExtend<RunHandle<OrderOutput>>();

  // @ts-expect-error the input has the class's input type
  await client.start(OrderWorkflow, { orderId: 1 });
  // @ts-expect-error the input is required
  await client.start(OrderWorkflow);
  // @ts-expect-error the output is the class's, not anything
  const wrong: TypedRunView<{ other: number }> = await client.waitForResult(run);
  void wrong;
}

export async function startedFromADefinition(): Promise<void> {
  const run = await client.start(echo, { text: 'hi' }, { idempotencyKey: 'k' });
  expectTypeOf(run).toEqualTypeOf<StartedRun<{ echoed: string }>>();
  const done = await run.result({ timeoutMs: 1_000 });
  if (done.status === 'completed') expectTypeOf(done.output.echoed).toBeString();
  // @ts-expect-error the input has the handler's input type
  await client.start(echo, { text: 3 });
}

export async function startedByName(): Promise<void> {
  const run = await client.start({ name: 'echo', version: '1' }, { anything: true });
  expectTypeOf(run).toEqualTypeOf<StartedRun<JsonValue>>();
  await client.start({ name: 'echo', version: '1' });
  // Waiting by id is as it was: the run as the coordinator answers it, its output untyped.
  expectTypeOf(await client.waitForResult(run.id)).toEqualTypeOf<RunView>();
}

export async function startedInABatch(): Promise<void> {
  const [order, echoed, named] = await client.startMany([
    { workflow: OrderWorkflow, input: { orderId: 'o-1' } },
    { workflow: echo, input: { text: 'hi' }, priority: 3 },
    { workflow: { name: 'echo', version: '1' }, input: 'x' },
  ]);
  expectTypeOf(order).toEqualTypeOf<StartedRun<OrderOutput>>();
  expectTypeOf(echoed).toEqualTypeOf<StartedRun<{ echoed: string }>>();
  expectTypeOf(named).toEqualTypeOf<StartedRun<JsonValue>>();

  const many = await client.startMany(Array.from({ length: 3 }, (_, i) => ({ workflow: OrderWorkflow, input: { orderId: `o-${i}` } })));
  expectTypeOf(many).toEqualTypeOf<StartedRun<OrderOutput>[]>();

  await client.startMany([
    { workflow: OrderWorkflow, input: { orderId: 'o-1' } },
    // @ts-expect-error each entry's input has its own workflow's type
    { workflow: echo, input: { orderId: 'o-2' } },
  ]);
}

export async function controlledByClass(): Promise<void> {
  await client.pauseWorkflow(OrderWorkflow);
  await client.setWorkflowLimits(OrderWorkflow, { concurrency: 2 });
  await client.createSchedule(OrderWorkflow, { intervalMs: 60_000 });
  // @ts-expect-error a class without `run` is no workflow
  await client.pauseWorkflow(class NotAWorkflow {});
}
