import type { JsonValue } from './contract/json-document';

/**
 * Where `@Workflow` (@nest-durable/worker) records a class's declaration (its name, version and options): a
 * property of the class itself, so that the client reads a class's name and version without Nest or
 * reflect-metadata, under a registered symbol, so that every copy of these packages in an app reads the same key.
 */
export const WORKFLOW_DECLARATION = Symbol.for('@nest-durable/workflow-declaration');

/** A workflow version's name and version, as every start and control of it names it. */
export interface WorkflowName {
  readonly name: string;
  readonly version: string;
}

/** A `@Workflow` class as its callers see it: its input and output types are those of its `run(ctx, input)`. */
// biome-ignore lint/suspicious/noExplicitAny: any constructor parameters (Nest injects them) and, by default, any input
export type WorkflowClass<I = any, O = unknown> = abstract new (...args: any[]) => { run(ctx: never, input: I): Promise<O> };

/** A workflow definition (`defineWorkflow` in @nest-durable/workflow) as its callers see it: typed by its handler. */
export interface TypedWorkflow<I, O> extends WorkflowName {
  readonly handler: (ctx: never, input: I) => Promise<O>;
}

/** What a start or a control names: a `@Workflow` class, a definition, or a bare name and version. */
export type WorkflowTarget = WorkflowClass<never> | WorkflowName;

/** The input type of a class's `run` or a definition's handler; `unknown` for a bare name and version. */
export type InputOf<W> = W extends WorkflowClass<infer I> ? I : W extends TypedWorkflow<infer I, unknown> ? I : unknown;

/** The output type of a class's `run` or a definition's handler; any JSON for a bare name and version. */
export type OutputOf<W> = W extends WorkflowClass<never, infer O> ? O : W extends TypedWorkflow<never, infer O> ? O : JsonValue;

/** What `@Workflow` recorded on `target` itself (a subclass does not inherit it), if it is such a class. */
export function recordedDeclaration(target: unknown): WorkflowName | undefined {
  if (typeof target !== 'function' || !Object.hasOwn(target, WORKFLOW_DECLARATION)) return undefined;
  return (target as unknown as Record<typeof WORKFLOW_DECLARATION, WorkflowName>)[WORKFLOW_DECLARATION];
}

/** The name and version `workflow` stands for; a class that `@Workflow` did not decorate is refused. */
export function workflowNameOf(workflow: WorkflowTarget): WorkflowName {
  if (typeof workflow !== 'function') return { name: workflow.name, version: workflow.version };
  const declaration = recordedDeclaration(workflow);
  if (!declaration) throw new TypeError(`${workflow.name || 'this class'} is not a @Workflow class: decorate it with @Workflow({ name, version })`);
  return { name: declaration.name, version: declaration.version };
}
