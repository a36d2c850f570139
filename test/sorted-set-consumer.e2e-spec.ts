import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { type RedisClient, RedisConnection, SortedSetConsumer, sortedSetKey } from '@app/streams';
import { Redis } from 'ioredis';
import { eventually } from './support/poll';
import { TEST_REDIS_URL, testPrefix } from './support/redis';

/** The signal of a worker that is not stopping. */
const running = new AbortController().signal;

/** A SortedSetConsumer against the real Redis (BZPOPMIN and the fill script run there), on a prefix of its own. */
describe('sorted-set consumer on a real Redis', () => {
  const BUSY = 'busy:1';
  const QUIET = 'quiet:1';
  let redis: Redis;
  let connection: RedisConnection;
  let prefix: string;
  /** The consumer's blocking reader, as RedisConnection.open made it. */
  let reader: RedisClient;

  function consumer(blockMs: number): SortedSetConsumer {
    const open = jest.spyOn(connection, 'open');
    const created = new SortedSetConsumer(connection, [BUSY, QUIET], { blockMs });
    reader = open.mock.results[0].value as RedisClient;
    open.mockRestore();
    return created;
  }

  const fill = (queue: string, members: string[]) => redis.zadd(sortedSetKey(prefix, queue), ...members.flatMap((member, i) => [i, member]));

  beforeAll(() => {
    redis = new Redis(TEST_REDIS_URL);
  });

  beforeEach(() => {
    prefix = testPrefix('sorted-set-consumer');
    connection = new RedisConnection({ url: TEST_REDIS_URL, prefix });
  });

  afterEach(async () => {
    jest.restoreAllMocks();
    await connection.onApplicationShutdown();
  });

  afterAll(() => redis?.disconnect());

  it('fills a read round-robin across its queues: one wake-up waiting in a quiet queue comes with the first read, however many wait in a busy one', async () => {
    jest.spyOn(Math, 'random').mockReturnValue(0.999_999); // the shuffle keeps the key order: the busy queue is popped first
    const zset = consumer(1_000);
    await fill(
      BUSY,
      Array.from({ length: 20 }, (_, i) => `busy-${i}:${i}`),
    );
    await fill(QUIET, ['quiet-0:0']);
    const read = await zset.read(5, running);
    expect(read.map((wakeup) => wakeup.queue).sort()).toEqual([BUSY, BUSY, BUSY, BUSY, QUIET]);
    expect(read.find((wakeup) => wakeup.queue === QUIET)?.name).toBe('quiet-0:0');
  });

  it('blocks in BZPOPMIN while idle: a wake-up published then is read at once, not after the 10 s block', async () => {
    const zset = consumer(10_000);
    await connection.whenReady(reader);
    const id = await reader.client('ID');
    const read = zset.read(1, running);
    await eventually('the reader blocked in BZPOPMIN', async () => {
      const line = String(await redis.client('LIST', 'ID', String(id)));
      return /cmd=bzpopmin/.test(line) && /flags=\w*b/.test(line);
    });
    const publishedAt = Date.now();
    await fill(QUIET, ['quiet-0:0']);
    expect((await read).map((wakeup) => wakeup.name)).toEqual(['quiet-0:0']);
    expect(Date.now() - publishedAt).toBeLessThan(2_000);
  });
});
