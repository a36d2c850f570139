import { afterEach, describe, expect, it } from '@jest/globals';
import { Injectable, Module } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { RedisConnection } from './redis.connection';
import { RedisModule } from './redis.module';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Stands in for @nestjs/config's ConfigService. */
@Injectable()
class AppConfig {
  get(key: 'REDIS_URL' | 'REDIS_PREFIX'): string {
    return { REDIS_URL, REDIS_PREFIX: 'app:' }[key];
  }
}

@Module({ providers: [AppConfig], exports: [AppConfig] })
class AppConfigModule {}

describe('RedisModule', () => {
  let app: TestingModule | undefined;

  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('connects with static options', async () => {
    app = await Test.createTestingModule({ imports: [RedisModule.forRoot({ url: REDIS_URL, prefix: 'static:' })] }).compile();
    const redis = app.get(RedisConnection);
    expect(redis.prefix).toBe('static:');
    await redis.whenReady(redis.client);
    expect(await redis.client.ping()).toBe('PONG');
  });

  it('connects with options a factory builds from injected configuration', async () => {
    app = await Test.createTestingModule({
      imports: [
        RedisModule.forRootAsync({
          imports: [AppConfigModule],
          inject: [AppConfig],
          useFactory: (config: AppConfig) => ({ url: config.get('REDIS_URL'), prefix: config.get('REDIS_PREFIX') }),
        }),
      ],
    }).compile();
    const redis = app.get(RedisConnection);
    expect(redis.options).toEqual({ url: REDIS_URL, prefix: 'app:' });
    await redis.whenReady(redis.client);
    expect(await redis.client.ping()).toBe('PONG');
  });
});
