import { describe, expect, it, jest } from '@jest/globals';
import type { TakeRunsRequest, TakeRunsResponse } from '@nest-durable/common';
import { sortedSetKey, BLOCKING_GRACE_MS, DEFAULT_REDIS_SUBSCRIBER_OPTIONS, MAX_GIVE_BACKS } from '@app/streams';
import type { CoordinatorApi } from '../coordinator.api';
import type { WorkflowRegistry } from '../workflow.registry';
import type { RedisConnection } from '@app/streams';
import { nextHop, RedisSortedSetSubscriber } from './redis-sorted-set.subscriber';

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

const KEY = sortedSetKey('p:', 'echo:1');
/** The signal of a worker that is not stopping. */
const running = new AbortController().signal;

/**
 * The subscriber over a reader whose pop and fill answer as given, a Redis that records what goes back
 * (zadd) and a coordinator that takes nothing.
 */
function subscriber(pop: () => Promise<[string, string, string] | null>, fill: () => Promise<string[]>) {
  const putBack: string[] = [];
  const takes: TakeRunsRequest['workflows'][] = [];
  const reader = { status: 'ready', bzpopmin: pop, eval: fill, disconnect: jest.fn() };
  const client = { status: 'ready', zadd: async (_key: string, _score: number, member: string) => putBack.push(member) };
  const redis = {
    prefix: 'p:',
    client,
    open: () => reader,
    whenReady: async () => undefined,
    sendEach: async <T>(items: T[], send: (c: unknown, item: T) => Promise<unknown>) => Promise.all(items.map((item) => send(client, item))),
  };
  const api = {
    take: async (workflows: TakeRunsRequest['workflows']): Promise<TakeRunsResponse> => {
      takes.push(workflows);
      return { runs: [], requeue: [] };
    },
  };
  const registry = { refs: () => [{ name: 'echo', version: '1' }] };
  const zset = new RedisSortedSetSubscriber(
    redis as unknown as RedisConnection,
    api as unknown as CoordinatorApi,
    registry as unknown as WorkflowRegistry,
    DEFAULT_REDIS_SUBSCRIBER_OPTIONS,
  );
  return { zset, reader, putBack, takes };
}

describe('sorted-set subscriber: the pop and the fill behind it', () => {
  it('takes what the pop and the fill brought, in one take', async () => {
    const { zset, takes } = subscriber(
      async () => [KEY, 'r1:1', '1'],
      async () => [KEY, 'r2:2', KEY, 'r3:3'],
    );
    await zset.getReadyRuns(3, running);
    expect(takes).toEqual([[{ name: 'echo', version: '1', wakeups: ['r1:1', 'r2:2', 'r3:3'] }]]);
  });

  it('takes what the fill brought after a pop that timed out', async () => {
    const { zset, takes } = subscriber(
      async () => null,
      async () => [KEY, 'r2:2'],
    );
    await zset.getReadyRuns(3, running);
    expect(takes).toEqual([[{ name: 'echo', version: '1', wakeups: ['r2:2'] }]]);
  });

  it('puts back what the fill popped when the pop failed, and throws', async () => {
    const { zset, takes, putBack } = subscriber(
      async () => {
        throw new Error('UNBLOCKED the master was demoted');
      },
      async () => [KEY, 'r2:2'],
    );
    await expect(zset.getReadyRuns(3, running)).rejects.toThrow('UNBLOCKED');
    expect(putBack).toEqual(['r2:2']);
    expect(takes).toEqual([]);
  });

  it('puts back what the pop brought when the fill failed, and throws', async () => {
    const { zset, putBack } = subscriber(
      async () => [KEY, 'r1:1', '1'],
      async () => {
        throw new Error('MOVED 1234 10.0.0.2:6379');
      },
    );
    await expect(zset.getReadyRuns(3, running)).rejects.toThrow('MOVED');
    expect(putBack).toEqual(['r1:1']);
  });

  it('returns nothing when its signal aborts, leaving the pop to the next call, which gives back what exceeds its slots', async () => {
    let answer!: (popped: [string, string, string]) => void;
    let pops = 0;
    const { zset, takes, putBack } = subscriber(
      () => {
        pops++;
        return new Promise((resolve) => (answer = resolve));
      },
      async () => [KEY, 'r2:2', KEY, 'r3:3'],
    );
    const stop = new AbortController();
    const first = zset.getReadyRuns(3, stop.signal);
    while (pops === 0) await new Promise((resolve) => setImmediate(resolve));
    stop.abort();
    expect(await first).toEqual([]);
    const second = zset.getReadyRuns(2, running);
    answer([KEY, 'r1:1', '1']);
    await second;
    expect(pops).toBe(1);
    expect(takes).toEqual([[{ name: 'echo', version: '1', wakeups: ['r1:1', 'r2:2'] }]]);
    expect(putBack).toEqual(['r3:3']);
  });

  it('starts no pop for a call whose signal aborted already', async () => {
    let pops = 0;
    const { zset } = subscriber(
      async () => {
        pops++;
        return null;
      },
      async () => [],
    );
    const stop = new AbortController();
    stop.abort();
    expect(await zset.getReadyRuns(3, stop.signal)).toEqual([]);
    expect(pops).toBe(0);
  });

  it('gives a fill that never answers BLOCKING_GRACE_MS after its pop, then makes the reader reconnect and throws', async () => {
    jest.useFakeTimers();
    try {
      const { zset, reader, takes } = subscriber(
        async () => null, // the client's guard ended the pop on a connection gone dead
        () => new Promise<string[]>(() => undefined),
      );
      const read = zset.getReadyRuns(3, running);
      const outcome = read.then(
        () => 'returned',
        (error: Error) => error.message,
      );
      await jest.advanceTimersByTimeAsync(BLOCKING_GRACE_MS - 1);
      expect(reader.disconnect).not.toHaveBeenCalled();
      await jest.advanceTimersByTimeAsync(1);
      expect(await outcome).toMatch(/no answer within/);
      expect(reader.disconnect).toHaveBeenCalledWith(true);
      expect(takes).toEqual([]);
    } finally {
      jest.useRealTimers();
    }
  });
});
