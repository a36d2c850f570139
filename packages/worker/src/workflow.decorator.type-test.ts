// Type tests of @Workflow, compiled by `npm run typecheck` (never run): a `@ts-expect-error` that no longer finds
// its error fails the typecheck.
import { defineWorkflow, type WorkflowContext } from '@nest-durable/workflow';
import { type Static, Type } from '@sinclair/typebox';
import { expectTypeOf } from 'expect-type';
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

const Signup = Type.Object({ email: Type.String() });

@Workflow({ name: 'schema-typed', version: '1', inputSchema: Signup })
export class SchemaTypedWorkflow {
  async run(_ctx: WorkflowContext, input: Static<typeof Signup>): Promise<string> {
    return input.email;
  }
}

// @ts-expect-error `run` takes the input a TypeBox inputSchema describes
@Workflow({ name: 'schema-mismatched', version: '1', inputSchema: Signup })
export class SchemaMismatchedWorkflow {
  async run(_ctx: WorkflowContext, input: { email: number }): Promise<number> {
    return input.email;
  }
}

// A plain JSON Schema types nothing: `run` says what it takes.
@Workflow({ name: 'schema-plain', version: '1', inputSchema: { type: 'object', required: ['email'] } })
export class SchemaPlainWorkflow {
  async run(_ctx: WorkflowContext, input: { email: string }): Promise<string> {
    return input.email;
  }
}

// A definition's handler gets the input type of its TypeBox inputSchema.
export const schemaTyped = defineWorkflow({
  name: 'schema-defined',
  version: '1',
  inputSchema: Signup,
  handler: async (_ctx, input) => {
    expectTypeOf(input).toEqualTypeOf<{ email: string }>();
    return input.email.length;
  },
});
expectTypeOf(schemaTyped.handler).returns.resolves.toBeNumber();

// Explicit types with a plain JSON Schema, as before.
export const schemaPlain = defineWorkflow<{ amount: number }, number>({
  name: 'schema-plain-defined',
  version: '1',
  inputSchema: { type: 'object', required: ['amount'] },
  handler: async (_ctx, input) => input.amount,
});
