// BullMQ driver (Redis): one Queue + QueueEvents here, one Worker in worker-bullmq.mjs.
import { Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import { BATCH, CHAIN_STEPS, now, rand, REDIS_URL, WorkerProc } from './harness.mjs';

export async function bullmqDriver() {
  const url = new URL(REDIS_URL);
  const connection = { host: url.hostname, port: Number(url.port || 6379), maxRetriesPerRequest: null };
  const prefix = `peers-bench-${rand()}`;
  const name = 'bench';
  const worker = new WorkerProc('worker-bullmq.mjs', { REDIS_URL, BULL_PREFIX: prefix, BULL_QUEUE: name });
  const queue = new Queue(name, { connection, prefix });
  const events = new QueueEvents(name, { connection, prefix });
  const waiters = new Map();
  events.on('completed', ({ jobId, returnvalue }) => {
    const resolve = waiters.get(jobId);
    if (resolve) {
      waiters.delete(jobId);
      resolve(returnvalue);
    }
  });
  try {
    await worker.ready();
    await queue.waitUntilReady();
    await events.waitUntilReady();
  } catch (error) {
    await worker.stop();
    await Promise.all([events.close(), queue.close()]);
    throw error;
  }
  return {
    worker,
    store: 'redis-server',
    async enqueueSingles(tag, n) {
      for (let i = 0; i < n; i += BATCH) {
        await queue.addBulk(Array.from({ length: Math.min(BATCH, n - i) }, () => ({ name: 'single', data: { tag } })));
      }
    },
    async probe(key) {
      const job = await queue.add('probe', {}, { jobId: `probe-${key}` });
      const enqueuedAt = now();
      const result = await job.waitUntilFinished(events, 10_000);
      return { enqueuedAt, startedAt: result.startedAt };
    },
    async chain(key) {
      const chain = `w3a-${key}`;
      const done = new Promise((resolve) => waiters.set(`${chain}-last`, resolve));
      await queue.add('chain', { tag: 'w3a', chain, step: 0, steps: CHAIN_STEPS });
      await done;
    },
    async enqueueChains(tag, n) {
      await queue.addBulk(Array.from({ length: n }, (_, i) => ({ name: 'chain', data: { tag, chain: `${tag}-${i}`, step: 0, steps: CHAIN_STEPS } })));
    },
    commits: async () => null,
    async teardown() {
      await worker.stop();
      await queue.obliterate({ force: true }).catch(() => undefined);
      await Promise.all([events.close(), queue.close()]);
      // Remove anything left under the prefix (events stream, meta keys).
      const redis = new Redis(REDIS_URL);
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
        cursor = next;
        if (keys.length) await redis.del(...keys);
      } while (cursor !== '0');
      await redis.quit();
    },
  };
}
