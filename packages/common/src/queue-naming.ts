import { parseIdentifier } from './contract/validation';

/**
 * Where ready runs of one workflow version wait: `<workflow>:<version>` or, routed to a shard,
 * `<workflow>:<version>:<shard>`. Names are built only from validated identifiers, which cannot
 * contain ':', so a queue name is unambiguous and safe inside database values and Redis keys.
 */
export function queueName(workflow: string, version: string, shard?: string): string {
  const base = `${parseIdentifier(workflow, 'workflow')}:${parseIdentifier(version, 'version')}`;
  return shard === undefined ? base : `${base}:${parseIdentifier(shard, 'shard')}`;
}

/** The queues of the workflow versions (and shards) a worker asks for, each once. */
export function queuesOf(workflows: readonly { name: string; version: string; shard?: string }[]): string[] {
  return [...new Set(workflows.map((workflow) => queueName(workflow.name, workflow.version, workflow.shard)))];
}
