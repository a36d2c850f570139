import type { HealthIndicatorService } from '@nestjs/terminus';
import type { RedisConnection } from '../connection/redis.connection';

/**
 * Up when Redis answers a PING within the timeout. RedisModule provides it (by a factory), so this file loads
 * neither ioredis nor the connection: the worker package's operations entry looks it up by this class, to check
 * Redis when the app has it, without loading a Redis client into an app that has none.
 */
export class RedisHealth {
  constructor(
    private readonly redis: RedisConnection,
    private readonly health: HealthIndicatorService,
  ) {}

  isHealthy(key = 'redis') {
    return this.health
      .check(key)
      .attempt(async () => {
        await this.redis.client.ping();
      })
      .withTimeout(1_000);
  }
}
