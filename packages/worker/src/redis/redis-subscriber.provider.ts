import { WORKER_OPTIONS, type ResolvedWorkerOptions } from '../worker.options';
import { CoordinatorApi } from '../coordinator.api';
import type { SubscriberProvider } from '../workflow-worker.module';
import { HandOffOffers } from '../subscribers/hand-off-offers';
import { WorkflowRegistry } from '../workflow.registry';
import { RedisConnection, DEFAULT_REDIS_SUBSCRIBER_OPTIONS, type RedisSubscriberOptions } from '@app/streams';
import { RedisSortedSetSubscriber } from './redis-sorted-set.subscriber';
import { RedisStreamsSubscriber } from './redis-streams.subscriber';

/**
 * A built-in Redis subscriber, to pass as `subscriber` (with `RedisModule.forRoot(...)` in `imports`):
 * `redis-zset` pops the sorted sets the coordinator publishes with DISPATCH=redis-zset, `redis-streams`
 * reads the streams it publishes with DISPATCH=redis-streams. While idle, either also offers itself to a
 * coordinator's starts (see HandOffOffers).
 */
export function redisSubscriber(kind: 'redis-zset' | 'redis-streams', options: Partial<RedisSubscriberOptions> = {}): SubscriberProvider {
  const settings = { ...DEFAULT_REDIS_SUBSCRIBER_OPTIONS, ...options };
  return {
    useFactory: (redis: RedisConnection, api: CoordinatorApi, registry: WorkflowRegistry, worker: ResolvedWorkerOptions) => {
      const offers = new HandOffOffers(api, registry, worker);
      return kind === 'redis-zset'
        ? new RedisSortedSetSubscriber(redis, api, registry, settings, offers)
        : new RedisStreamsSubscriber(redis, api, registry, settings, worker.workerId, offers);
    },
    inject: [RedisConnection, CoordinatorApi, WorkflowRegistry, WORKER_OPTIONS],
  };
}
