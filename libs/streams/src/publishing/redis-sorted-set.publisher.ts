import { Injectable } from '@nestjs/common';
import type { DispatchMessage } from './dispatch-message';
import type { Publisher } from './publisher.interface';
import { sortedSetKey } from '../naming/stream-keys';
import { RedisConnection } from '../connection/redis.connection';

/**
 * Queue Per Workflow: one sorted set of wake-ups per workflow version (and shard), oldest first. The
 * outbox publishes a wake-up only once its run is due, so every member may be acted on at once;
 * which run a worker then gets is decided by the take in PostgreSQL. All the sets share one hash
 * slot (see sortedSetKey), so in a Redis Cluster they live on one master.
 */
@Injectable()
export class RedisSortedSetPublisher implements Publisher {
  readonly name = 'redis-zset';

  constructor(private readonly redis: RedisConnection) {}

  async publish(messages: DispatchMessage[]): Promise<(Error | undefined)[]> {
    const now = Date.now();
    const results = await this.redis.sendEach(messages, (client, message) =>
      client.zadd(sortedSetKey(this.redis.prefix, message.queue), now, sortedSetMember(message)),
    );
    return results.map(([error]) => error ?? undefined);
  }

  onRecovered(listener: () => void): () => void {
    return this.redis.onRecovered(this.redis.client, listener);
  }

  async undelivered(queues: string[]): Promise<Map<string, number>> {
    const results = await this.redis.sendEach(queues, (client, queue) => client.zcard(sortedSetKey(this.redis.prefix, queue)));
    return new Map(queues.map((queue, i) => [queue, Number(throwIfFailed(results[i]))]));
  }
}

/** A wake-up in its set: unique per outbox row, and it names its run (`<runId>:<outbox id>`). */
export function sortedSetMember(message: Pick<DispatchMessage, 'id' | 'runId'>): string {
  return `${message.runId}:${message.id}`;
}

/** The reply of one of several commands, or its error thrown (a count that could not be read must not be taken for 0). */
export function throwIfFailed([error, reply]: [Error | null, unknown]): unknown {
  if (error) throw error;
  return reply;
}
