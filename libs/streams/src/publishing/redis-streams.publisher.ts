import { Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import type { DispatchMessage } from './dispatch-message';
import { type Publisher, STREAM_PARTITIONS, type StreamPartitionCount } from './publisher.interface';
import { CONSUMER_GROUP, partitionCountKey, partitionFor, queueStreams, streamKey } from '../naming/stream-keys';
import { RedisConnection } from '../connection/redis.connection';
import { throwIfFailed } from './redis-sorted-set.publisher';

/**
 * Sharded Redis Streams: a queue is split into `partitions` streams and a wake-up goes to the one
 * its run id hashes to. Partition n of every queue shares a hash slot, and the partitions spread over
 * the slots (see streamKey), so in a Redis Cluster they spread over the masters. Every batch also (re)writes the partition count at a known key, so workers
 * read exactly the streams the deployment writes, even after Redis lost its contents. The count is
 * the deployment's, agreed in PostgreSQL (see StreamPartitions in the coordinator).
 */
@Injectable()
export class RedisStreamsPublisher implements Publisher, OnApplicationBootstrap {
  readonly name = 'redis-streams';

  constructor(
    private readonly redis: RedisConnection,
    @Inject(STREAM_PARTITIONS) private readonly partitionCount: StreamPartitionCount,
  ) {}

  get partitions(): number {
    return this.partitionCount.count;
  }

  /** Workers started before the first wake-up learn the count at once (best effort: Redis may be down). */
  async onApplicationBootstrap(): Promise<void> {
    await this.redis
      .whenReady(this.redis.client)
      .then(() => this.redis.client.set(partitionCountKey(this.redis.prefix), String(this.partitions)))
      .catch(() => undefined);
  }

  async publish(messages: DispatchMessage[]): Promise<(Error | undefined)[]> {
    const streamOf = (message: DispatchMessage) => streamKey(this.redis.prefix, message.queue, partitionFor(message.runId, this.partitions), this.partitions);
    const [results] = await Promise.all([
      this.redis.sendEach(messages, (client, message) => client.xadd(streamOf(message), '*', 'run', message.runId)),
      this.redis.client.set(partitionCountKey(this.redis.prefix), String(this.partitions)).catch(() => undefined),
    ]);
    return results.map(([error]) => error ?? undefined);
  }

  onRecovered(listener: () => void): () => void {
    return this.redis.onRecovered(this.redis.client, listener);
  }

  /**
   * Entries in a queue's partition streams that no consumer was handed yet. Delivered entries are
   * deleted when acknowledged, so what a stream holds is undelivered or pending (in a consumer's
   * pending list): its length minus the group's pending count.
   */
  async undelivered(queues: string[]): Promise<Map<string, number>> {
    const streams = queueStreams(this.redis.prefix, queues, this.partitions);
    const [lengths, pending] = await Promise.all([
      this.redis.sendEach(streams, (client, stream) => client.xlen(stream)),
      this.redis.sendEach(streams, (client, stream) => client.xpending(stream, CONSUMER_GROUP)),
    ]);
    const counts = new Map(queues.map((queue) => [queue, 0]));
    streams.forEach((_, i) => {
      const queue = queues[Math.floor(i / this.partitions)];
      const [error, summary] = pending[i];
      // NOGROUP: no worker read this stream yet, so nothing in it was delivered.
      if (error && !error.message.includes('NOGROUP')) throw error;
      const delivered = error ? 0 : Number((summary as [number])[0]);
      counts.set(queue, counts.get(queue)! + Math.max(0, Number(throwIfFailed(lengths[i])) - delivered));
    });
    return counts;
  }
}
