import { type InputOfSchema, recordedDeclaration, type TypedInputSchema, WORKFLOW_DECLARATION } from '@nest-durable/common';
import { Injectable } from '@nestjs/common';
import { checkWorkflowDeclaration, type WorkflowContext, type WorkflowDeclaration } from '@nest-durable/workflow';

/** What `@Workflow` decorates: a class whose `run(ctx, input)` is the workflow's handler. */
// biome-ignore lint/suspicious/noExplicitAny: any constructor parameters (Nest injects them)
export type WorkflowClassType<I> = abstract new (...args: any[]) => { run(ctx: WorkflowContext, input: I): Promise<unknown> };

/**
 * Makes a class a workflow, as `defineWorkflow` makes a handler one: it takes the same declaration (name, version,
 * retry, limits, retention, schedules, inputSchema) and checks it as `defineWorkflow` does, at once. A TypeBox
 * `inputSchema` types the input `run` takes. The class is an injectable
 * provider: list it in the `providers` of any module of the worker app, and WorkflowWorkerModule finds it (as
 * @nestjs/bullmq finds its processors) and hosts it, its dependencies injected by Nest; its `run(ctx, input)` runs
 * each run. The client starts it by the class (`client.start(OrderWorkflow, input)`), typed by `run`.
 *
 * ```ts
 * @Workflow({ name: 'order-processing', version: '1.0.0' })
 * export class OrderWorkflow {
 *   constructor(private readonly payments: PaymentsService) {}
 *
 *   async run(ctx: WorkflowContext, input: { orderId: string }): Promise<{ paymentId: string }> {
 *     return { paymentId: await ctx.task('charge', () => this.payments.charge(input.orderId)) };
 *   }
 * }
 * ```
 */
export function Workflow<S extends TypedInputSchema>(
  declaration: WorkflowDeclaration<InputOfSchema<S>> & { readonly inputSchema: S },
): (target: WorkflowClassType<InputOfSchema<S>>) => void;
export function Workflow<I>(declaration: WorkflowDeclaration<I>): (target: WorkflowClassType<I>) => void;
export function Workflow<I>(declaration: WorkflowDeclaration<I>): (target: WorkflowClassType<I>) => void {
  checkWorkflowDeclaration(declaration);
  const recorded = Object.freeze({ ...declaration });
  return (target) => {
    Injectable()(target);
    Object.defineProperty(target, WORKFLOW_DECLARATION, { value: recorded });
  };
}

/** The declaration `@Workflow` recorded on `target`, if it is such a class. */
export function workflowDeclarationOf(target: unknown): WorkflowDeclaration<unknown> | undefined {
  // The decorator above records a whole WorkflowDeclaration; common knows only its name and version.
  return recordedDeclaration(target) as WorkflowDeclaration<unknown> | undefined;
}
