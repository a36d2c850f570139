import { DynamicModule, Module } from '@nestjs/common';
import { REDIS_OPTIONS, RedisConnection, type RedisConnectionOptions } from './redis.connection';

/** Provides the app's RedisConnection (global: publishers and subscribers inject it). */
@Module({})
export class RedisModule {
  static forRoot(options: RedisConnectionOptions): DynamicModule {
    return {
      module: RedisModule,
      global: true,
      providers: [{ provide: REDIS_OPTIONS, useValue: options }, RedisConnection],
      exports: [RedisConnection],
    };
  }
}
