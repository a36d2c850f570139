import { parseIdentifier } from './validation';

/**
 * Where ready runs of one workflow version wait: `<workflow>:<version>` or, routed to a shard,
 * `<workflow>:<version>:<shard>`. Names are built only from validated identifiers, which cannot
 * contain ':', so a queue name is unambiguous and safe inside database values and Redis keys.
 */
export function queueName(workflow: string, version: string, shard?: string): string {
  const base = `${parseIdentifier(workflow, 'workflow')}:${parseIdentifier(version, 'version')}`;
  return shard === undefined ? base : `${base}:${parseIdentifier(shard, 'shard')}`;
}

/** All workers of a deployment compete in one consumer group per stream. */
export const CONSUMER_GROUP = 'workers';

/** Redis sorted set of one queue (Queue Per Workflow): `<prefix>workflow:<queue>`. */
export function sortedSetKey(prefix: string, queue: string): string {
  return `${prefix}workflow:${queue}`;
}

/** Where the coordinator publishes its stream partition count, so workers read exactly its streams. */
export function partitionCountKey(prefix: string): string {
  return `${prefix}stream_partitions`;
}

/** Redis stream of one partition of a queue: `<prefix>workflow.tasks.<queue>.<n>`. */
export function streamKey(prefix: string, queue: string, partition: number): string {
  return `${prefix}workflow.tasks.${queue}.${partition}`;
}

/**
 * The partition of a run: FNV-1a of its id. Any stable spread works; partitions only spread load
 * (each stream is one key, so in Redis Cluster partitions land on different nodes).
 */
export function partitionFor(runId: string, partitions: number): number {
  if (partitions <= 1) return 0;
  let hash = 0x811c9dc5;
  for (let i = 0; i < runId.length; i++) {
    hash ^= runId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % partitions;
}

/** Every partition stream of the given queues. */
export function queueStreams(prefix: string, queues: string[], partitions: number): string[] {
  return queues.flatMap((queue) => Array.from({ length: Math.max(1, partitions) }, (_, n) => streamKey(prefix, queue, n)));
}
