import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { eventually } from '../../../../test/support/poll';
import { TEST_REDIS_URL, testPrefix } from '../../../../test/support/redis';
import { RedisConnection } from '../connection/redis.connection';
import { CONSUMER_GROUP, partitionCountKey, streamKey } from '../naming/stream-keys';
import { StreamsConsumer, type StreamWakeup } from './streams.consumer';

const QUEUE = 'echo:1';
const RUN_ID = '0190b1c2-0000-7000-8000-00000000000a';
/** The signal of a worker that is not stopping. */
const running = new AbortController().signal;
const now = () => AbortSignal.abort();

/** A StreamsConsumer against the real Redis, on a prefix of its own with one partition per queue. */
describe('StreamsConsumer', () => {
  let redis: Redis;
  let connection: RedisConnection;
  let prefix: string;
  let stream: string;
  const consumers: StreamsConsumer[] = [];

  function consumer(name: string, reclaimIdleMs = 90_000): StreamsConsumer {
    const created = new StreamsConsumer(connection, [QUEUE], name, { blockMs: 1_000, reclaimIdleMs, streamPartitions: 1 });
    consumers.push(created);
    return created;
  }

  const pending = async () => ((await redis.xpending(stream, CONSUMER_GROUP)) as [number])[0];

  beforeAll(() => {
    redis = new Redis(TEST_REDIS_URL);
  });

  beforeEach(async () => {
    prefix = testPrefix('streams-consumer');
    stream = streamKey(prefix, QUEUE, 0, 1);
    connection = new RedisConnection({ url: TEST_REDIS_URL, prefix });
    await redis.set(partitionCountKey(prefix), '1');
  });

  afterEach(async () => {
    for (const created of consumers.splice(0)) await created.close();
    await connection.onApplicationShutdown();
  });

  afterAll(() => redis?.disconnect());

  it('reads at most max of the entries at hand, named by partition and entry id, and acknowledges by deleting', async () => {
    const worker = consumer('w1');
    await worker.read(1, now()); // creates the group
    const ids = [(await redis.xadd(stream, '*', 'run', RUN_ID))!, (await redis.xadd(stream, '*', 'run', RUN_ID))!];
    const read = await worker.read(1, now());
    expect(read).toEqual([{ queue: QUEUE, name: `0/${ids[0]}`, entry: { stream, id: ids[0], fields: ['run', RUN_ID] } }]);
    expect(worker.readStreams).toEqual([stream]);
    await worker.ack(read);
    expect(await redis.xlen(stream)).toBe(1);
    expect(await pending()).toBe(0);
  });

  it('waits for an entry when none is at hand', async () => {
    const worker = consumer('w1');
    const published = new Promise((resolve) => setTimeout(resolve, 200)).then(() => redis.xadd(stream, '*', 'run', RUN_ID));
    const read = await worker.read(1, running);
    expect(read.map((wakeup) => wakeup.entry.id)).toEqual([await published]);
  });

  it('with its signal aborted already, returns what is at hand and leaves no blocking read in flight', async () => {
    const worker = consumer('w1');
    const started = Date.now();
    expect(await worker.read(1, now())).toEqual([]);
    await worker.close(); // waits for the reads in flight: a blocking one would take its block time (1 s)
    expect(Date.now() - started).toBeLessThan(500);
  });

  it('gives back an entry as a copy with one more hop, and restores one by leaving it pending', async () => {
    const worker = consumer('w1');
    await worker.read(1, now());
    await redis.xadd(stream, '*', 'run', RUN_ID);
    await redis.xadd(stream, '*', 'run', RUN_ID);
    const [first, second] = await worker.read(2, now());
    await worker.giveBack([first]);
    await worker.restore([second]);
    const left = (await redis.xrange(stream, '-', '+')) as [string, string[]][];
    expect(left.map(([id]) => id)).toEqual([second.entry.id, expect.any(String)]);
    expect(left[1][1]).toEqual(['run', RUN_ID, 'hops', '1']);
    expect(await pending()).toBe(1);
  });

  it("reclaims a dead consumer's entry, with its delivery count and the run it names", async () => {
    const dead = consumer('dead');
    await dead.read(1, now());
    const id = (await redis.xadd(stream, '*', 'run', RUN_ID))!;
    await dead.read(1, now());
    const worker = consumer('w2', 200);
    const reclaimed = await eventually('the dead consumer idle past reclaimIdleMs', async () => {
      const found = await worker.reclaim(4, []);
      return found.length > 0 ? found : undefined;
    });
    expect(reclaimed).toEqual([{ wakeup: { queue: QUEUE, name: `0/${id}`, entry: { stream, id, fields: ['run', RUN_ID] } }, deliveries: 2, runId: RUN_ID }]);
    expect(await worker.reclaim(4, [])).toEqual([]); // not due again yet (half reclaimIdleMs)
  });

  it('takes back its own entries that a read it never saw answered left, but not those it holds', async () => {
    await consumer('me').read(1, now());
    const id = (await redis.xadd(stream, '*', 'run', RUN_ID))!;
    // What a blocking read given up by the client leaves behind: an entry delivered to this very consumer.
    await redis.xreadgroup('GROUP', CONSUMER_GROUP, 'me', 'COUNT', 1, 'STREAMS', stream, '>');
    await eventually('the entry idle for 2 s', async () => {
      const [[, , idle]] = (await redis.xpending(stream, CONSUMER_GROUP, id, id, 1)) as [string, string, number][];
      return idle >= 2_000;
    });
    const held: StreamWakeup = { queue: QUEUE, name: `0/${id}`, entry: { stream, id, fields: ['run', RUN_ID] } };
    expect(await consumer('me').reclaim(4, [held])).toEqual([]);
    // Claimed back by id alone, without counting a delivery.
    expect(await consumer('me').reclaim(4, [])).toEqual([{ wakeup: { ...held, entry: { stream, id, fields: [] } }, deliveries: 1 }]);
  });

  it('recreates streams and groups that vanished', async () => {
    const worker = consumer('w1');
    await worker.read(1, now());
    await redis.del(stream);
    expect(await worker.read(1, now())).toEqual([]);
    const id = (await redis.xadd(stream, '*', 'run', RUN_ID))!;
    expect((await worker.read(1, now())).map((wakeup) => wakeup.entry.id)).toEqual([id]);
  });
});
