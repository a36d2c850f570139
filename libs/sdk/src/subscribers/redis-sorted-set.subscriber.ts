import type { ClaimedRun, WorkflowRef } from '@app/contracts';
import { queueName, RedisConnection, sortedSetKey } from '@app/streams';
import type { Redis } from 'ioredis';
import type { CoordinatorApi } from '../worker/coordinator.api';
import type { WorkflowRegistry } from '../worker/workflow.registry';
import { BLOCKING_GRACE_MS, type RedisSubscriberOptions, shuffled } from './redis-subscriber.options';
import type { NextDelayParams, Subscriber } from './subscriber.interface';

/**
 * After the first pop, fills the remaining capacity round-robin across the queues in one round
 * trip, so a busy queue cannot starve a quiet one. Returns key, member pairs.
 */
const FILL_ROUND_ROBIN = `
local wanted = tonumber(ARGV[1])
local out = {}
local active = KEYS
while wanted > 0 and #active > 0 do
  local still = {}
  for _, key in ipairs(active) do
    if wanted == 0 then break end
    local popped = redis.call('ZPOPMIN', key)
    if #popped > 0 then
      out[#out + 1] = key
      out[#out + 1] = popped[1]
      wanted = wanted - 1
      still[#still + 1] = key
    end
  end
  active = still
end
return out`;

interface Popped {
  key: string;
  member: string;
}

/**
 * Redis sorted-set subscriber (one set of wake-ups per workflow version and shard). Blocks on its
 * queues with BZPOPMIN over a shuffled key order on a connection of its own, so work arrives the
 * moment it is published; popping removes a wake-up, so each reaches one worker. It pops at most
 * as many as it has free slots, and takes that many runs of those queues at the coordinator, which
 * picks them as a claim would (priority, work stealing). Wake-ups that took nothing are counted.
 */
export class RedisSortedSetSubscriber implements Subscriber {
  readonly name = 'redis-zset';
  private readonly reader: Redis;
  private readonly refs = new Map<string, WorkflowRef>();
  /** Wake-ups that took nothing (the work they announced was taken another way). */
  stale = 0;

  constructor(
    private readonly redis: RedisConnection,
    private readonly api: CoordinatorApi,
    registry: WorkflowRegistry,
    private readonly options: RedisSubscriberOptions,
  ) {
    // A client-side guard longer than the BLOCK: a read that never returns (across a reconnect) ends. A
    // wake-up popped by a read the client gave up on is lost to it; the republish daemon restores it.
    this.reader = redis.open('sorted-set reader', { blockingTimeout: options.blockMs, blockingTimeoutGrace: BLOCKING_GRACE_MS });
    for (const ref of registry.refs()) this.refs.set(sortedSetKey(redis.prefix, queueName(ref.name, ref.version, ref.shard)), ref);
  }

  async getReadyRuns(limit: number): Promise<ClaimedRun[]> {
    await Promise.all([this.redis.whenReady(this.reader), this.redis.whenReady(this.redis.client)]);
    const order = shuffled([...this.refs.keys()]);
    const first = await this.reader.bzpopmin(...order, this.options.blockMs / 1000);
    if (!first) return [];
    const popped: Popped[] = [{ key: first[0], member: first[1] }];
    try {
      if (limit > 1) {
        const more = (await this.redis.client.eval(FILL_ROUND_ROBIN, order.length, ...order, limit - 1)) as string[];
        for (let i = 0; i < more.length; i += 2) popped.push({ key: more[i], member: more[i + 1] });
      }
      const runs = await this.api.take(this.counts(popped));
      this.stale += popped.length - runs.length;
      return runs;
    } catch (error) {
      await this.putBack(popped);
      throw error;
    }
  }

  getNextDelay(params: NextDelayParams): number {
    return params.type === 'no_work' ? 0 : Math.min(5_000, 100 * 2 ** params.attempt);
  }

  async probe(): Promise<void> {
    await Promise.all([this.redis.whenReady(this.reader), this.redis.whenReady(this.redis.client)]);
    await this.redis.client.ping();
  }

  private counts(popped: Popped[]): (WorkflowRef & { count: number })[] {
    const counts = new Map<string, number>();
    for (const { key } of popped) counts.set(key, (counts.get(key) ?? 0) + 1);
    return [...counts].map(([key, count]) => ({ ...this.refs.get(key)!, count }));
  }

  /** The coordinator could not take runs for them: back into their sets (else the republish daemon restores them). */
  private async putBack(popped: Popped[]): Promise<void> {
    const pipeline = this.redis.client.pipeline();
    const now = Date.now();
    for (const { key, member } of popped) pipeline.zadd(key, now, member);
    await pipeline.exec().catch(() => undefined);
  }
}
