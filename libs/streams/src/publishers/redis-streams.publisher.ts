import { Injectable } from '@nestjs/common';
import type { DispatchMessage } from '../dispatch-message';
import type { Publisher } from '../publisher.interface';
import { partitionCountKey, partitionFor, streamKey } from '../queue-naming';
import { RedisConnection } from '../redis/redis.connection';
import { settle } from './redis-sorted-set.publisher';

/**
 * Sharded Redis Streams: a queue is split into `partitions` streams and a run goes to the one its id
 * hashes to. Every batch also (re)writes the partition count at a known key, so workers read
 * exactly the streams this coordinator writes, even after Redis lost its contents.
 */
@Injectable()
export class RedisStreamsPublisher implements Publisher {
  readonly name = 'redis-streams';

  constructor(
    private readonly redis: RedisConnection,
    readonly partitions: number,
  ) {}

  async publish(messages: DispatchMessage[]): Promise<(Error | undefined)[]> {
    const pipeline = this.redis.client.pipeline();
    for (const message of messages) {
      const key = streamKey(this.redis.prefix, message.queue, partitionFor(message.runId, this.partitions));
      pipeline.xadd(key, '*', 'message', JSON.stringify(message));
    }
    pipeline.set(partitionCountKey(this.redis.prefix), String(this.partitions));
    const results = await pipeline.exec().catch((error: Error) => [...messages, null].map(() => [error, null] as [Error, null]));
    return settle(results, messages.length + 1).slice(0, messages.length);
  }
}
