import { parseIdentifier, RETENTION_MAX_MS, type WorkflowRef } from '@nest-durable/common';
import { Inject, Injectable } from '@nestjs/common';
import type { WorkflowDefinition } from '@nest-durable/workflow';
import { WORKER_OPTIONS, type ResolvedWorkerOptions } from './worker.options';

/** The workflows this worker hosts, by name and version. */
@Injectable()
export class WorkflowRegistry {
  // biome-ignore lint/suspicious/noExplicitAny: workflows of any input and output types are registered side by side
  private readonly byKey = new Map<string, WorkflowDefinition<any, any>>();
  private readonly shards: (string | undefined)[];

  constructor(@Inject(WORKER_OPTIONS) options: ResolvedWorkerOptions) {
    this.shards = options.shards.length > 0 ? options.shards.map((shard) => parseIdentifier(shard, 'shard')) : [undefined];
    for (const workflow of options.workflows) {
      const key = `${parseIdentifier(workflow.name, 'workflow')}:${parseIdentifier(workflow.version, 'version')}`;
      if (this.byKey.has(key)) throw new Error(`workflow ${workflow.name} ${workflow.version} is registered twice`);
      const { retentionMs } = workflow;
      if (retentionMs !== undefined && !(Number.isInteger(retentionMs) && retentionMs >= 0 && retentionMs <= RETENTION_MAX_MS)) {
        throw new Error(`workflow ${workflow.name} ${workflow.version}: retentionMs must be an integer from 0 to ${RETENTION_MAX_MS}`);
      }
      this.byKey.set(key, workflow);
    }
    if (this.byKey.size === 0) throw new Error('a worker needs at least one workflow');
  }

  // biome-ignore lint/suspicious/noExplicitAny: workflows of any input and output types are registered side by side
  get(name: string, version: string): WorkflowDefinition<any, any> | undefined {
    return this.byKey.get(`${name}:${version}`);
  }

  /** What this worker serves: each hosted workflow version, in each of its shards. */
  refs(): WorkflowRef[] {
    return [...this.byKey.values()].flatMap(({ name, version }) =>
      this.shards.map((shard) => (shard === undefined ? { name, version } : { name, version, shard })),
    );
  }
}
