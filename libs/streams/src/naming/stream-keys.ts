import { HASH_SLOTS, hashSlot } from './hash-slot';

/** All workers of a deployment compete in one consumer group per stream. */
export const CONSUMER_GROUP = 'workers';

/*
 * Redis keys, laid out for Redis Cluster (the same names serve a single node). A command or script
 * naming several keys must find them all in one hash slot, and a slot lives on one master; only the
 * `{…}` part of a key (its hash tag) picks the slot, so keys are grouped by tag:
 * - every sorted set shares the tag `{zset}`: one BZPOPMIN and one fill script cover all of a
 *   worker's queues, and the sorted-set mode lives on one master (Streams is the mode that spreads);
 * - partition n of every queue shares the tag of partition n (partitionTag): one blocking XREADGROUP
 *   per partition covers all of a worker's queues, and the partitions spread over the slots, so over
 *   the masters.
 * The tag follows the prefix, which cannot hold braces, so it is the first `{` of every key.
 */

/** Redis sorted set of one queue (Queue Per Workflow): `<prefix>{zset}workflow:<queue>`. */
export function sortedSetKey(prefix: string, queue: string): string {
  return `${prefix}{zset}workflow:${queue}`;
}

/** Where the coordinator publishes its stream partition count, so workers read exactly its streams. */
export function partitionCountKey(prefix: string): string {
  return `${prefix}stream_partitions`;
}

/** Redis stream of one partition of a queue: `<prefix>{<partition tag>}workflow.tasks.<queue>`. */
export function streamKey(prefix: string, queue: string, partition: number, partitions: number): string {
  return `${prefix}{${partitionTag(partition, partitions)}}workflow.tasks.${queue}`;
}

const partitionTags = new Map<string, string>();

/**
 * The hash tag of partition n of `partitions`: `p<n>/<partitions>.<k>`, with the smallest k that
 * puts its slot within 8 of the middle of the n-th of `partitions` equal ranges of slots. Masters
 * usually hold equal contiguous ranges (as `redis-cli --cluster create` deals them), so a count that
 * is a multiple of the masters puts as many partitions on each; a plain `{p<n>}` lands where its hash
 * falls (4 partitions on 3 masters would leave a master without any more often than not). Changing
 * the count renames every partition stream. Found by search (about a thousand hashes a partition) and
 * remembered.
 */
export function partitionTag(partition: number, partitions: number): string {
  const id = `${partition}/${partitions}`;
  let tag = partitionTags.get(id);
  if (tag === undefined) {
    const middle = Math.floor(((2 * partition + 1) * HASH_SLOTS) / (2 * partitions));
    const reach = Math.max(1, Math.min(8, Math.floor(HASH_SLOTS / (2 * partitions))));
    for (let k = 0; tag === undefined; k++) {
      const candidate = `p${id}.${k}`;
      if (Math.abs(hashSlot(candidate) - middle) < reach) tag = candidate;
    }
    partitionTags.set(id, tag);
  }
  return tag;
}

/** The partition of a run: FNV-1a of its id. Any stable spread works; partitions only spread load. */
export function partitionFor(runId: string, partitions: number): number {
  if (partitions <= 1) return 0;
  let hash = 0x811c9dc5;
  for (let i = 0; i < runId.length; i++) {
    hash ^= runId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % partitions;
}

/** Every partition stream of the given queues, queue by queue. */
export function queueStreams(prefix: string, queues: string[], partitions: number): string[] {
  return queues.flatMap((queue) => Array.from({ length: partitions }, (_, n) => streamKey(prefix, queue, n, partitions)));
}

/** The streams of one partition of the given queues: one hash slot, so one command may read them all. */
export function partitionStreams(prefix: string, queues: string[], partition: number, partitions: number): string[] {
  return queues.map((queue) => streamKey(prefix, queue, partition, partitions));
}
