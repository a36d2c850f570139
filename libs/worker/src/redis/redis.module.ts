import { DynamicModule, Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { RedisHealth } from './redis.health';
import { REDIS_OPTIONS, RedisConnection, type RedisConnectionOptions } from './redis.connection';

/** Provides the app's RedisConnection (global: publishers and subscribers inject it). */
@Module({})
export class RedisModule {
  static forRoot(options: RedisConnectionOptions): DynamicModule {
    return {
      module: RedisModule,
      global: true,
      imports: [TerminusModule],
      providers: [{ provide: REDIS_OPTIONS, useValue: options }, RedisConnection, RedisHealth],
      exports: [RedisConnection, RedisHealth],
    };
  }
}
