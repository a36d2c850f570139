import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { RedisConnection } from './redis.connection';

/** Up when Redis answers a PING within the timeout. */
@Injectable()
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
