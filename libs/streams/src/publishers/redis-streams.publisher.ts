import { Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import type { DispatchMessage } from '../dispatch-message';
import { type Publisher, STREAM_PARTITIONS, type StreamPartitionCount } from '../publisher.interface';
import { CONSUMER_GROUP, partitionCountKey, partitionFor, queueStreams, streamKey } from '@nest-durable/client';
import { RedisConnection } from '@nest-durable/worker/redis';
import { settle } from './redis-sorted-set.publisher';

/**
 * Sharded Redis Streams: a queue is split into `partitions` streams and a wake-up goes to the one
 * its run id hashes to. Every batch also (re)writes the partition count at a known key, so workers
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
    const pipeline = this.redis.client.pipeline();
    for (const message of messages) {
      pipeline.xadd(streamKey(this.redis.prefix, message.queue, partitionFor(message.runId, this.partitions)), '*', 'run', message.runId);
    }
    pipeline.set(partitionCountKey(this.redis.prefix), String(this.partitions));
    const results = await pipeline.exec().catch((error: Error) => [...messages, null].map(() => [error, null] as [Error, null]));
    return settle(results, messages.length + 1).slice(0, messages.length);
  }

  /**
   * Entries in a queue's partition streams that no consumer was handed yet. Delivered entries are
   * deleted when acknowledged, so what a stream holds is undelivered or pending (in a consumer's
   * pending list): its length minus the group's pending count.
   */
  async undelivered(queues: string[]): Promise<Map<string, number>> {
    const pipeline = this.redis.client.pipeline();
    const streams = queues.map((queue) => queueStreams(this.redis.prefix, [queue], this.partitions));
    for (const stream of streams.flat()) {
      pipeline.xlen(stream);
      pipeline.xpending(stream, CONSUMER_GROUP);
    }
    const results = (await pipeline.exec()) ?? [];
    let at = 0;
    return new Map(
      queues.map((queue, i) => {
        let count = 0;
        for (const _ of streams[i]) {
          const length = Number(results[at++]?.[1] ?? 0);
          const [error, summary] = results[at++] ?? [];
          const pending = error ? 0 : Number((summary as [number] | undefined)?.[0] ?? 0); // NOGROUP: nothing delivered yet
          count += Math.max(0, length - pending);
        }
        return [queue, count];
      }),
    );
  }
}
