import { afterEach, describe, expect, it } from '@jest/globals';
import { Test, type TestingModule } from '@nestjs/testing';
import { createServer } from 'node:net';
import { RedisConnection } from '../connection/redis.connection';
import { RedisHealth } from './redis.health';
import { RedisModule } from '../connection/redis.module';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A port nothing listens on: taken from the system, then let go. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('RedisHealth', () => {
  let app: TestingModule | undefined;

  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  const indicatorFor = async (url: string) => {
    app = await Test.createTestingModule({ imports: [RedisModule.forRoot({ url, prefix: 'health:' })] }).compile();
    return app.get(RedisHealth);
  };

  it('is up when Redis answers a PING', async () => {
    const redis = await indicatorFor(REDIS_URL);
    // Commands fail fast while the connection is still being made (no offline queue).
    const connection = app!.get(RedisConnection);
    await connection.whenReady(connection.client);
    expect(await redis.isHealthy()).toMatchObject({ redis: { status: 'up' } });
  });

  it('is down, with the error, when Redis does not answer', async () => {
    const redis = await indicatorFor(`redis://127.0.0.1:${await closedPort()}`);
    expect(await redis.isHealthy('cache')).toMatchObject({ cache: { status: 'down', message: expect.any(String) } });
  });
});
