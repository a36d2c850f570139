import { Injectable } from '@nestjs/common';
import type { DispatchMessage } from '../dispatch-message';
import type { Publisher } from '../publisher.interface';
import { sortedSetKey } from '@nest-durable/client';
import { RedisConnection } from '@nest-durable/worker/redis';

/**
 * Queue Per Workflow: one sorted set of wake-ups per workflow version (and shard), oldest first. The
 * outbox publishes a wake-up only once its run is due, so every member may be acted on at once;
 * which run a worker then gets is decided by the take in PostgreSQL.
 */
@Injectable()
export class RedisSortedSetPublisher implements Publisher {
  readonly name = 'redis-zset';

  constructor(private readonly redis: RedisConnection) {}

  async publish(messages: DispatchMessage[]): Promise<(Error | undefined)[]> {
    const pipeline = this.redis.client.pipeline();
    const now = Date.now();
    for (const message of messages) pipeline.zadd(sortedSetKey(this.redis.prefix, message.queue), now, sortedSetMember(message));
    return settle(await pipeline.exec().catch((error: Error) => messages.map(() => [error, null] as [Error, null])), messages.length);
  }

  async undelivered(queues: string[]): Promise<Map<string, number>> {
    const pipeline = this.redis.client.pipeline();
    for (const queue of queues) pipeline.zcard(sortedSetKey(this.redis.prefix, queue));
    const results = (await pipeline.exec()) ?? [];
    return new Map(queues.map((queue, i) => [queue, Number(results[i]?.[1] ?? 0)]));
  }
}

/** A wake-up in its set: unique per outbox row, and it names its run (`<runId>:<outbox id>`). */
export function sortedSetMember(message: Pick<DispatchMessage, 'id' | 'runId'>): string {
  return `${message.runId}:${message.id}`;
}

/** One error (or undefined) per command of an executed pipeline. */
export function settle(results: [Error | null, unknown][] | null, count: number): (Error | undefined)[] {
  if (!results) return Array.from({ length: count }, () => new Error('Redis pipeline was not executed'));
  return results.map(([error]) => error ?? undefined);
}
