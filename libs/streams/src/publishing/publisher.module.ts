import { ClassProvider, DynamicModule, Module, Provider } from '@nestjs/common';
import type { DispatchMode } from './dispatch-message';
import { PUBLISHER, STREAM_PARTITIONS, type StreamPartitionCount } from './publisher.interface';
import { RedisSortedSetPublisher } from './redis-sorted-set.publisher';
import { RedisStreamsPublisher } from './redis-streams.publisher';
import { type RedisConnectionOptions } from '../connection/redis.connection';
import { RedisModule } from '../connection/redis.module';

export interface PublisherOptions {
  mode: DispatchMode;
  redis: RedisConnectionOptions;
  /** redis-streams: the class providing the partition count (e.g. what the deployment agreed on). */
  partitions?: Omit<ClassProvider<StreamPartitionCount>, 'provide'>;
}

/**
 * The coordinator's publisher, chosen by configuration (DISPATCH). With `none` there is no publisher
 * and no Redis connection: workers find work through the claim API.
 */
@Module({})
export class PublisherModule {
  static forRoot(options: PublisherOptions): DynamicModule {
    if (options.mode === 'none') return { module: PublisherModule };
    const providers: Provider[] =
      options.mode === 'redis-zset'
        ? [{ provide: PUBLISHER, useClass: RedisSortedSetPublisher }]
        : [
            { provide: STREAM_PARTITIONS, ...(options.partitions ?? { useValue: { count: 1 } }) } as Provider,
            { provide: PUBLISHER, useClass: RedisStreamsPublisher },
          ];
    return {
      module: PublisherModule,
      global: true,
      imports: [RedisModule.forRoot(options.redis)],
      providers,
      exports: [PUBLISHER],
    };
  }
}
