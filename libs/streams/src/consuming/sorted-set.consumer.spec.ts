import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { Redis } from 'ioredis';
import { eventually } from '../../../../test/support/poll';
import { TEST_REDIS_URL, testPrefix } from '../../../../test/support/redis';
import { RedisConnection, type RedisClient } from '../connection/redis.connection';
import { sortedSetKey } from '../naming/stream-keys';
import { BLOCKING_GRACE_MS, DEFAULT_REDIS_SUBSCRIBER_OPTIONS, MAX_GIVE_BACKS } from './consumer.options';
import { nextHop, SortedSetConsumer, type SortedSetWakeup } from './sorted-set.consumer';

describe('sorted-set wake-ups given back', () => {
  it('count their hops in the member and are dropped past the limit', () => {
    let member: string | undefined = 'run-1:42';
    const seen: string[] = [];
    while (member) {
      seen.push(member);
      member = nextHop(member);
    }
    expect(seen).toEqual(['run-1:42', ...Array.from({ length: MAX_GIVE_BACKS }, (_, i) => `run-1:42#${i + 1}`)]);
  });
});

const QUEUE = 'echo:1';
const KEY = sortedSetKey('p:', QUEUE);
/** The signal of a worker that is not stopping. */
const running = new AbortController().signal;
const wakeup = (member: string): SortedSetWakeup => ({ queue: QUEUE, name: member, key: KEY });

/** The consumer over a reader whose pop and fill answer as given, and a Redis that records what goes back (zadd). */
function consumer(pop: () => Promise<[string, string, string] | null>, fill: () => Promise<string[]>) {
  const putBack: string[] = [];
  const reader = { status: 'ready', bzpopmin: pop, eval: fill, disconnect: jest.fn() };
  const client = { status: 'ready', zadd: async (_key: string, _score: number, member: string) => putBack.push(member) };
  const redis = {
    prefix: 'p:',
    client,
    open: () => reader,
    whenReady: async () => undefined,
    sendEach: async <T>(items: T[], send: (c: unknown, item: T) => Promise<unknown>) => Promise.all(items.map((item) => send(client, item))),
  };
  const zset = new SortedSetConsumer(redis as unknown as RedisConnection, [QUEUE], DEFAULT_REDIS_SUBSCRIBER_OPTIONS);
  return { zset, reader, putBack };
}

describe('sorted-set consumer: the pop and the fill behind it', () => {
  it('reads what the pop and the fill brought, named by their members', async () => {
    const { zset } = consumer(
      async () => [KEY, 'r1:1', '1'],
      async () => [KEY, 'r2:2', KEY, 'r3:3'],
    );
    expect(await zset.read(3, running)).toEqual([wakeup('r1:1'), wakeup('r2:2'), wakeup('r3:3')]);
  });

  it('reads what the fill brought after a pop that timed out', async () => {
    const { zset } = consumer(
      async () => null,
      async () => [KEY, 'r2:2'],
    );
    expect(await zset.read(3, running)).toEqual([wakeup('r2:2')]);
  });

  it('puts back what the fill popped when the pop failed, and throws', async () => {
    const { zset, putBack } = consumer(
      async () => {
        throw new Error('UNBLOCKED the master was demoted');
      },
      async () => [KEY, 'r2:2'],
    );
    await expect(zset.read(3, running)).rejects.toThrow('UNBLOCKED');
    expect(putBack).toEqual(['r2:2']);
  });

  it('puts back what the pop brought when the fill failed, and throws', async () => {
    const { zset, putBack } = consumer(
      async () => [KEY, 'r1:1', '1'],
      async () => {
        throw new Error('MOVED 1234 10.0.0.2:6379');
      },
    );
    await expect(zset.read(3, running)).rejects.toThrow('MOVED');
    expect(putBack).toEqual(['r1:1']);
  });

  it('returns nothing when its signal aborts, leaving the pop to the next call, which puts back what exceeds its max', async () => {
    let answer!: (popped: [string, string, string]) => void;
    let pops = 0;
    const { zset, putBack } = consumer(
      () => {
        pops++;
        return new Promise((resolve) => (answer = resolve));
      },
      async () => [KEY, 'r2:2', KEY, 'r3:3'],
    );
    const stop = new AbortController();
    const first = zset.read(3, stop.signal);
    while (pops === 0) await new Promise((resolve) => setImmediate(resolve));
    stop.abort();
    expect(await first).toEqual([]);
    const second = zset.read(2, running);
    answer([KEY, 'r1:1', '1']);
    expect(await second).toEqual([wakeup('r1:1'), wakeup('r2:2')]);
    expect(pops).toBe(1);
    expect(putBack).toEqual(['r3:3']);
  });

  it('starts no pop for a call whose signal aborted already', async () => {
    let pops = 0;
    const { zset } = consumer(
      async () => {
        pops++;
        return null;
      },
      async () => [],
    );
    const stop = new AbortController();
    stop.abort();
    expect(await zset.read(3, stop.signal)).toEqual([]);
    expect(pops).toBe(0);
  });

  it('gives a fill that never answers BLOCKING_GRACE_MS after its pop, then makes the reader reconnect and throws', async () => {
    jest.useFakeTimers();
    try {
      const { zset, reader } = consumer(
        async () => null, // the client's guard ended the pop on a connection gone dead
        () => new Promise<string[]>(() => undefined),
      );
      const outcome = zset.read(3, running).then(
        () => 'returned',
        (error: Error) => error.message,
      );
      await jest.advanceTimersByTimeAsync(BLOCKING_GRACE_MS - 1);
      expect(reader.disconnect).not.toHaveBeenCalled();
      await jest.advanceTimersByTimeAsync(1);
      expect(await outcome).toMatch(/no answer within/);
      expect(reader.disconnect).toHaveBeenCalledWith(true);
    } finally {
      jest.useRealTimers();
    }
  });

  it('puts back what a pop left in flight brings when it closes', async () => {
    let answer: ((popped: [string, string, string]) => void) | undefined;
    const { zset, putBack } = consumer(
      () => new Promise((resolve) => (answer = resolve)),
      async () => [],
    );
    const stop = new AbortController();
    const read = zset.read(1, stop.signal);
    while (!answer) await new Promise((resolve) => setImmediate(resolve));
    stop.abort();
    expect(await read).toEqual([]);
    const closed = zset.close();
    answer([KEY, 'r1:1', '1']);
    await closed;
    expect(putBack).toEqual(['r1:1']);
  });
});

describe('sorted-set consumer: settling wake-ups', () => {
  const idle = () =>
    consumer(
      async () => null,
      async () => [],
    );

  it('gives back with one more hop, dropping a wake-up past MAX_GIVE_BACKS', async () => {
    const { zset, putBack } = idle();
    await zset.giveBack([wakeup('r1:1'), wakeup('r2:2#2'), wakeup(`r3:3#${MAX_GIVE_BACKS}`)]);
    expect(putBack).toEqual(['r1:1#1', 'r2:2#3']);
  });

  it('restores a wake-up unchanged (no hop), and has nothing to acknowledge, touch or reclaim', async () => {
    const { zset, putBack } = idle();
    await zset.restore([wakeup('r1:1#2')]);
    await zset.ack([wakeup('r2:2')]);
    await zset.touch([wakeup('r3:3')]);
    expect(putBack).toEqual(['r1:1#2']);
    expect(await zset.reclaim(4, [])).toEqual([]);
  });
});

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
