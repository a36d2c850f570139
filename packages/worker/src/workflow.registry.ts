import { parseIdentifier, RETENTION_MAX_MS, type WorkflowRef } from '@nest-durable/common';
import type { WorkflowDefinition } from '@nest-durable/workflow';
import type { ResolvedWorkerOptions } from './worker.options';
import { WorkerSetupError } from './worker-setup.error';

/** A workflow to host, and where it comes from (named when it is registered twice): `a definition`, `class OrderWorkflow`. */
export interface HostedWorkflow {
  // biome-ignore lint/suspicious/noExplicitAny: workflows of any input and output types are registered side by side
  readonly workflow: WorkflowDefinition<any, any>;
  readonly source: string;
}

/**
 * The workflows this worker hosts, by name and version: the definitions of its options and the `@Workflow` classes
 * the app provides (made definitions by WorkflowExplorer), both taken the same way.
 */
export class WorkflowRegistry {
  private readonly byKey = new Map<string, HostedWorkflow>();
  private readonly shards: (string | undefined)[];

  constructor(options: ResolvedWorkerOptions, classes: readonly HostedWorkflow[] = []) {
    this.shards = options.shards.length > 0 ? options.shards.map((shard) => parseIdentifier(shard, 'shard')) : [undefined];
    for (const workflow of options.workflows) this.register({ workflow, source: 'a definition' });
    for (const hosted of classes) this.register(hosted);
    if (this.byKey.size === 0)
      throw new WorkerSetupError('a worker needs at least one workflow: a definition in `workflows` or a @Workflow class among its providers');
  }

  // biome-ignore lint/suspicious/noExplicitAny: workflows of any input and output types are registered side by side
  get(name: string, version: string): WorkflowDefinition<any, any> | undefined {
    return this.byKey.get(`${name}:${version}`)?.workflow;
  }

  /** What this worker serves: each hosted workflow version, in each of its shards. */
  refs(): WorkflowRef[] {
    return [...this.byKey.values()].flatMap(({ workflow: { name, version } }) =>
      this.shards.map((shard) => (shard === undefined ? { name, version } : { name, version, shard })),
    );
  }

  private register(hosted: HostedWorkflow): void {
    const { name, version, retentionMs } = hosted.workflow;
    const key = `${parseIdentifier(name, 'workflow')}:${parseIdentifier(version, 'version')}`;
    const registered = this.byKey.get(key);
    if (registered) throw new WorkerSetupError(`workflow ${name} ${version} is registered twice: by ${registered.source} and by ${hosted.source}`);
    if (retentionMs !== undefined && !(Number.isInteger(retentionMs) && retentionMs >= 0 && retentionMs <= RETENTION_MAX_MS)) {
      throw new WorkerSetupError(`workflow ${name} ${version}: retentionMs must be an integer from 0 to ${RETENTION_MAX_MS}`);
    }
    this.byKey.set(key, hosted);
  }
}
