import { sortedSetKey } from '@app/streams';
import { Redis } from 'ioredis';
import { type RunningCoordinator, startCoordinator } from './apps';
import { TEST_REDIS_URL, testPrefix } from './redis';

/**
 * A coordinator that dead-letters every `echo` `1` run it starts, after one publish attempt: its wake-ups
 * go to a Redis sorted set whose key holds a string, so each ZADD fails with WRONGTYPE (Redis itself
 * is up, so its connections close cleanly). A redrive republishes, which fails and dead-letters again.
 */
export async function startDeadLetteringCoordinator(databaseUrl: string): Promise<RunningCoordinator> {
  const prefix = testPrefix('dead-lettering');
  const key = sortedSetKey(prefix, 'echo:1');
  const redis = new Redis(TEST_REDIS_URL);
  try {
    await redis.set(key, 'not a sorted set');
  } finally {
    redis.disconnect();
  }
  const coordinator = await startCoordinator(databaseUrl, {
    dispatch: 'redis-zset',
    redisUrl: TEST_REDIS_URL,
    redisPrefix: prefix,
    outboxMaxRetries: 1,
    outboxRetryBaseMs: 10,
    outboxRetryMaxMs: 20,
    outboxPollIntervalMs: 50,
    republishIntervalMs: 3_600_000,
  });
  return {
    ...coordinator,
    async close() {
      await coordinator.close();
      const cleanup = new Redis(TEST_REDIS_URL);
      await cleanup.del(key).finally(() => cleanup.disconnect());
    },
  };
}
