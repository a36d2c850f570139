import type { ClaimedRun } from '@app/contracts';
import { type DispatchMessage, queueName, RedisConnection, sortedSetKey, sortedSetScore } from '@app/streams';
import { Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import type { CoordinatorApi } from '../worker/coordinator.api';
import type { WorkflowRegistry } from '../worker/workflow.registry';
import { type RedisSubscriberOptions, shuffled } from './redis-subscriber.options';
import type { NextDelayParams, Subscriber } from './subscriber.interface';

/**
 * After the first pop, fills the remaining capacity round-robin across the queues in one round
 * trip, so a busy queue cannot starve a quiet one.
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
      out[#out + 1] = popped[1]
      wanted = wanted - 1
      still[#still + 1] = key
    end
  end
  active = still
end
return out`;

/**
 * Redis sorted-set subscriber (one set per workflow version and shard). Blocks on its queues with
 * BZPOPMIN over a shuffled key order on a connection of its own, so work arrives the moment it is
 * published; popping removes a message, so each goes to one worker. The runs are then taken at the
 * coordinator at their messages' revisions; stale messages are dropped and counted.
 */
export class RedisSortedSetSubscriber implements Subscriber {
  readonly name = 'redis-zset';
  private readonly logger = new Logger(RedisSortedSetSubscriber.name);
  private readonly reader: Redis;
  private readonly keys: string[];
  /** Messages dropped because the run had moved on. */
  stale = 0;

  constructor(
    private readonly redis: RedisConnection,
    private readonly api: CoordinatorApi,
    registry: WorkflowRegistry,
    private readonly options: RedisSubscriberOptions,
  ) {
    // A client-side guard longer than the BLOCK: a read that never returns (across a reconnect) ends.
    this.reader = redis.open('sorted-set reader', { blockingTimeout: options.blockMs, blockingTimeoutGrace: 2_000 });
    this.keys = registry.refs().map((ref) => sortedSetKey(redis.prefix, queueName(ref.name, ref.version, ref.shard)));
  }

  async getReadyRuns(limit: number): Promise<ClaimedRun[]> {
    await Promise.all([this.redis.whenReady(this.reader), this.redis.whenReady(this.redis.client)]);
    const order = shuffled(this.keys);
    const first = await this.reader.bzpopmin(...order, Math.max(1, Math.ceil(this.options.blockMs / 1000)));
    if (!first) return [];
    const members = [first[1]];
    if (limit > 1) {
      try {
        members.push(...((await this.redis.client.eval(FILL_ROUND_ROBIN, order.length, ...order, limit - 1)) as string[]));
      } catch (error) {
        await this.putBack(members.flatMap((member) => this.parse(member)));
        throw error;
      }
    }
    const messages = members.flatMap((member) => this.parse(member));
    try {
      const taken = await this.api.take(messages.map((m) => ({ id: m.runId, revision: m.revision })));
      this.stale += taken.stale.length;
      return taken.runs;
    } catch (error) {
      await this.putBack(messages);
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

  /** The coordinator could not take them: back into their sets (else the republish daemon restores them). */
  private async putBack(messages: DispatchMessage[]): Promise<void> {
    if (messages.length === 0) return;
    const pipeline = this.redis.client.pipeline();
    for (const message of messages) {
      pipeline.zadd(sortedSetKey(this.redis.prefix, message.queue), sortedSetScore(message), JSON.stringify(message));
    }
    await pipeline.exec().catch(() => undefined);
  }

  private parse(member: string): DispatchMessage[] {
    try {
      return [JSON.parse(member) as DispatchMessage];
    } catch {
      this.logger.warn(`dropped a malformed message: ${member.slice(0, 200)}`);
      return [];
    }
  }
}
