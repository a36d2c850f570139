import { type ClassProvider, ConfigurableModuleBuilder, Module, type Provider } from '@nestjs/common';
import type { DispatchMode } from './dispatch-message';
import { PUBLISHER, STREAM_PARTITIONS, type StreamPartitionCount } from './publisher.interface';
import { RedisSortedSetPublisher } from './redis-sorted-set.publisher';
import { RedisStreamsPublisher } from './redis-streams.publisher';
import { type RedisConnectionOptions } from '../connection/redis.connection';
import { RedisModule } from '../connection/redis.module';

/** The transports a coordinator publishes to (DISPATCH other than `none`). */
export type PublishingMode = Exclude<DispatchMode, 'none'>;

export interface PublisherOptions {
  /** The Redis the publisher writes to (the module provides the app's RedisConnection to it). */
  redis: RedisConnectionOptions;
}

/**
 * What shapes the module rather than the connection, given the same way to `forRoot` and `forRootAsync`:
 * providers are declared before any options factory has run.
 */
export interface PublisherModuleExtras {
  /** Which publisher. Default: redis-zset. */
  mode?: PublishingMode;
  /** redis-streams: the class providing the partition count (e.g. what the deployment agreed on). Default: 1. */
  partitions?: Omit<ClassProvider<StreamPartitionCount>, 'provide'>;
}

/** Injection token of the PublisherOptions given to `forRoot` or made by `forRootAsync`'s factory. */
export const PUBLISHER_OPTIONS = Symbol('PUBLISHER_OPTIONS');

function publisherProviders({ mode, partitions }: PublisherModuleExtras): Provider[] {
  if (mode === 'redis-zset') return [{ provide: PUBLISHER, useClass: RedisSortedSetPublisher }];
  return [{ provide: STREAM_PARTITIONS, ...(partitions ?? { useValue: { count: 1 } }) } as Provider, { provide: PUBLISHER, useClass: RedisStreamsPublisher }];
}

const { ConfigurableModuleClass } = new ConfigurableModuleBuilder<PublisherOptions>({
  moduleName: 'Publisher',
  optionsInjectionToken: PUBLISHER_OPTIONS,
})
  .setClassMethodName('forRoot')
  // The keys given here are kept out of forRoot's options value and handed to the transform instead.
  .setExtras<PublisherModuleExtras>({ mode: 'redis-zset', partitions: undefined }, (definition, extras) => ({
    ...definition,
    global: true,
    imports: [...(definition.imports ?? []), RedisModule.forRootAsync({ inject: [PUBLISHER_OPTIONS], useFactory: ({ redis }: PublisherOptions) => redis })],
    providers: [...(definition.providers ?? []), ...publisherProviders(extras)],
    // The options too: the Redis module imported above (global) reads its connection options from them.
    exports: [PUBLISHER, PUBLISHER_OPTIONS],
  }))
  .build();

/**
 * The coordinator's publisher and the Redis connection it writes through: `forRoot({ mode, redis, partitions })`, or
 * `forRootAsync({ mode, partitions, imports, inject, useFactory })` with the factory making `{ redis }`. An app
 * with no publisher (DISPATCH=none) does not import it, and opens no Redis connection.
 */
@Module({})
export class PublisherModule extends ConfigurableModuleClass {}
