import { ConfigurableModuleBuilder, Module } from '@nestjs/common';
import { HealthIndicatorService, TerminusModule } from '@nestjs/terminus';
import { RedisHealth } from '../health/redis.health';
import { REDIS_OPTIONS, RedisConnection, type RedisConnectionOptions } from './redis.connection';

const { ConfigurableModuleClass } = new ConfigurableModuleBuilder<RedisConnectionOptions>({
  moduleName: 'Redis',
  optionsInjectionToken: REDIS_OPTIONS,
})
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createRedisConnectionOptions')
  .setExtras({}, (definition) => ({
    ...definition,
    // Global: publishers and subscribers in other modules inject the one RedisConnection.
    global: true,
    imports: [...(definition.imports ?? []), TerminusModule],
    providers: [
      ...(definition.providers ?? []),
      RedisConnection,
      {
        provide: RedisHealth,
        useFactory: (redis: RedisConnection, health: HealthIndicatorService) => new RedisHealth(redis, health),
        inject: [RedisConnection, HealthIndicatorService],
      },
    ],
    exports: [RedisConnection, RedisHealth],
  }))
  .build();

/**
 * Provides the app's RedisConnection: `forRoot({ url, prefix })`, or `forRootAsync({ imports, inject,
 * useFactory })` to build the options from configuration (e.g. ConfigService).
 */
@Module({})
export class RedisModule extends ConfigurableModuleClass {}
