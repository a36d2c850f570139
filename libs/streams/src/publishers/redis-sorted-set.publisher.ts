import { Injectable } from '@nestjs/common';
import type { DispatchMessage } from '../dispatch-message';
import type { Publisher } from '../publisher.interface';
import { sortedSetKey } from '../queue-naming';
import { RedisConnection } from '../redis/redis.connection';

/**
 * Queue Per Workflow: one sorted set per workflow version (and shard), scored by due time, with
 * priority breaking ties (a higher priority scores a fraction of a millisecond lower). The outbox
 * publishes a run only once it is due, so everything in a set may be taken.
 */
@Injectable()
export class RedisSortedSetPublisher implements Publisher {
  readonly name = 'redis-zset';

  constructor(private readonly redis: RedisConnection) {}

  async publish(messages: DispatchMessage[]): Promise<(Error | undefined)[]> {
    const pipeline = this.redis.client.pipeline();
    for (const message of messages) {
      pipeline.zadd(sortedSetKey(this.redis.prefix, message.queue), sortedSetScore(message), JSON.stringify(message));
    }
    return settle(await pipeline.exec().catch((error: Error) => messages.map(() => [error, null] as [Error, null])), messages.length);
  }
}

export function sortedSetScore(message: Pick<DispatchMessage, 'dueAt' | 'priority'>): number {
  return message.dueAt - message.priority / 10_000;
}

/** One error (or undefined) per command of an executed pipeline. */
export function settle(results: [Error | null, unknown][] | null, count: number): (Error | undefined)[] {
  if (!results) return Array.from({ length: count }, () => new Error('Redis pipeline was not executed'));
  return results.map(([error]) => error ?? undefined);
}
