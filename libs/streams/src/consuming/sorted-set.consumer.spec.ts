import { describe, expect, it, jest } from '@jest/globals';
import type { RedisConnection } from '../connection/redis.connection';
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
