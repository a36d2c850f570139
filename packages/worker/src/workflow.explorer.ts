import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { defineWorkflow, type WorkflowContext } from '@nest-durable/workflow';
import { workflowDeclarationOf } from './workflow.decorator';
import type { HostedWorkflow } from './workflow.registry';
import { WorkerSetupError } from './worker-setup.error';

/** A provider of the app, as Nest's DiscoveryService lists it. */
type ProviderWrapper = ReturnType<DiscoveryService['getProviders']>[number];

/** An instance of a `@Workflow` class. */
interface WorkflowInstance {
  run(ctx: WorkflowContext, input: unknown): Promise<unknown>;
}

/**
 * Finds the `@Workflow` classes among the providers of every module of the app, as @nestjs/bullmq finds its
 * processors (DiscoveryService), and makes each a definition for the WorkflowRegistry. They are found when Nest
 * makes this explorer, before it has made them: the registry needs them then (the subscribers' queues, the
 * registration gate are made from it), and a class provider's class is known before its instance. A definition's
 * handler calls `run` on the instance Nest made of the class, with its dependencies, which exists before any run.
 */
@Injectable()
export class WorkflowExplorer implements OnModuleInit {
  /** The providers of the `@Workflow` classes found. */
  private readonly providers: ProviderWrapper[];

  constructor(private readonly discovery: DiscoveryService) {
    this.providers = discovery.getProviders().filter((provider) => isClassProvider(provider) && workflowDeclarationOf(provider.metatype));
  }

  /** Each class found as a definition, made by `defineWorkflow` as any other: its handler is the instance's `run`. */
  workflows(): HostedWorkflow[] {
    return this.providers.map((provider) => ({
      workflow: defineWorkflow({
        ...workflowDeclarationOf(provider.metatype)!,
        handler: (ctx, input) => (provider.instance as WorkflowInstance).run(ctx, input),
      }),
      source: `class ${provider.metatype!.name}`,
    }));
  }

  /** Refuses, now that Nest has made every provider, the `@Workflow` classes that no single instance of can serve. */
  onModuleInit(): void {
    for (const provider of this.providers) {
      if (!provider.isDependencyTreeStatic() || provider.isTransient) {
        throw new WorkerSetupError(
          `@Workflow class ${provider.metatype!.name} is request-scoped or transient, or depends on a request-scoped provider: ` +
            'a workflow runs outside any request, on one instance; make it and its dependencies singletons',
        );
      }
    }
    for (const provider of this.discovery.getProviders()) {
      const made = (provider.instance as object | undefined)?.constructor;
      if (!isClassProvider(provider) && workflowDeclarationOf(made)) {
        throw new WorkerSetupError(`@Workflow class ${made!.name} is provided by a factory or as a value: list the class itself among a module's providers`);
      }
    }
  }
}

/** A provider Nest makes from its class (`providers: [Class]`, or `useClass`), not by a factory or from a value. */
function isClassProvider(provider: ProviderWrapper): boolean {
  return !!provider.metatype && !provider.inject;
}
