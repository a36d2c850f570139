import { queuesOf } from '@nest-durable/common';
import { WORKER_OPTIONS, type ResolvedWorkerOptions } from '../worker.options';
import { CoordinatorApi } from '../coordinator.api';
import type { SubscriberProvider } from '../workflow-worker.module';
import { HandOffOffers } from '../subscribers/hand-off-offers';
import { TransportSubscriber } from '../subscribers/transport.subscriber';
import { WorkflowRegistry } from '../workflow.registry';
import {
  type Consumer,
  DEFAULT_REDIS_SUBSCRIBER_OPTIONS,
  RedisConnection,
  type RedisSubscriberOptions,
  SortedSetConsumer,
  StreamsConsumer,
  type Wakeup,
} from '@app/streams';

/**
 * A built-in Redis subscriber, to pass as `subscriber` (with `RedisModule.forRoot(...)` in `imports`):
 * `redis-zset` pops the sorted sets the coordinator publishes with DISPATCH=redis-zset, `redis-streams`
 * reads the streams it publishes with DISPATCH=redis-streams (the worker id names its consumer in the
 * group). Either is a TransportSubscriber over that transport's consumer; while idle, it also offers itself
 * to a coordinator's starts (see HandOffOffers).
 */
export function redisSubscriber(kind: 'redis-zset' | 'redis-streams', options: Partial<RedisSubscriberOptions> = {}): SubscriberProvider {
  const settings = { ...DEFAULT_REDIS_SUBSCRIBER_OPTIONS, ...options };
  return {
    useFactory: (redis: RedisConnection, api: CoordinatorApi, registry: WorkflowRegistry, worker: ResolvedWorkerOptions) => {
      const queues = queuesOf(registry.refs());
      const over = <W extends Wakeup>(consumer: Consumer<W>) =>
        new TransportSubscriber(kind, consumer, api, registry, settings.maxDeliveries, new HandOffOffers(api, registry, worker));
      return kind === 'redis-zset' ? over(new SortedSetConsumer(redis, queues, settings)) : over(new StreamsConsumer(redis, queues, worker.workerId, settings));
    },
    inject: [RedisConnection, CoordinatorApi, WorkflowRegistry, WORKER_OPTIONS],
  };
}
