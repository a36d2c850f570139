// Type tests of @Workflow, compiled by `npm run typecheck` (never run): a `@ts-expect-error` that no longer finds
// its error fails the typecheck.
import type { WorkflowContext } from '@nest-durable/workflow';
import { Workflow } from './workflow.decorator';

@Workflow({ name: 'typed', version: '1', schedules: [{ name: 'hourly', cron: '0 * * * *', input: { orderId: 'o-1' } }] })
export class TypedWorkflow {
  async run(_ctx: WorkflowContext, input: { orderId: string }): Promise<string> {
    return input.orderId;
  }
}

// @ts-expect-error a workflow class has a `run(ctx, input)` method
@Workflow({ name: 'runless', version: '1' })
export class RunlessWorkflow {}

// @ts-expect-error a declared schedule's input has the type `run` takes
@Workflow({ name: 'mismatched', version: '1', schedules: [{ name: 'hourly', cron: '0 * * * *', input: { orderId: 1 } }] })
export class MismatchedWorkflow {
  async run(_ctx: WorkflowContext, input: { orderId: string }): Promise<string> {
    return input.orderId;
  }
}
