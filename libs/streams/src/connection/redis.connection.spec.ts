import { afterEach, describe, expect, it } from '@jest/globals';
import { createServer } from 'node:net';
import { RedisConnection } from './redis.connection';

/** A port nothing listens on: connections to it are refused. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function elapsedUntilRejected(promise: Promise<unknown>): Promise<number> {
  const startedAt = Date.now();
  await expect(promise).rejects.toThrow('Redis not reachable');
  return Date.now() - startedAt;
}

describe('RedisConnection.whenReady', () => {
  let redis: RedisConnection | undefined;

  afterEach(async () => {
    await redis?.onApplicationShutdown();
    redis = undefined;
  });

  it('fails at once on a refused connection, not at its timeout: while connecting, and while waiting to retry (not at the next attempt)', async () => {
    redis = new RedisConnection({ url: `redis://127.0.0.1:${await closedPort()}`, prefix: 'spec:' });
    // The first attempt is under way: its refusal ends the wait.
    expect(await elapsedUntilRejected(redis.whenReady(redis.client, 10_000))).toBeLessThan(1_000);
    // Between attempts no `ready` can come: the wait fails without waiting for one, nor for the next attempt to
    // be refused (the retries back off to 2 s apart: waited for here).
    const client = redis.client;
    await new Promise<void>((resolve) => {
      const onReconnecting = (delayMs: number) => {
        if (delayMs < 2_000) return;
        client.off('reconnecting', onReconnecting);
        resolve();
      };
      client.on('reconnecting', onReconnecting);
    });
    expect(await elapsedUntilRejected(redis.whenReady(client, 10_000))).toBeLessThan(1_000);
  });
});
