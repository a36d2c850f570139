// BullMQ worker: one Worker, concurrency 50. Job names: single (W1/warm-up), probe (W2), chain (W3:
// each step job adds the next step's job to the queue before returning).
import { Queue, Worker } from 'bullmq';
import { finished, now, onStop, ready, started } from './worker-common.mjs';

const url = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const connection = { host: url.hostname, port: Number(url.port || 6379), maxRetriesPerRequest: null };
const prefix = process.env.BULL_PREFIX;
const name = process.env.BULL_QUEUE;
const concurrency = Number(process.env.CONCURRENCY ?? 50);

const queue = new Queue(name, { connection, prefix });
const worker = new Worker(
  name,
  async (job) => {
    const startedAt = now();
    const data = job.data;
    if (job.name === 'single') started(data.tag, startedAt);
    else if (job.name === 'chain') {
      if (data.step === 0) started(data.tag, startedAt);
      if (data.step + 1 < data.steps) {
        const next = data.step + 2 === data.steps ? { jobId: `${data.chain}-last` } : undefined;
        await queue.add('chain', { ...data, step: data.step + 1 }, next);
      }
    }
    return { startedAt };
  },
  { connection, prefix, concurrency },
);
// 'completed' fires after BullMQ has moved the job to the completed set in Redis.
worker.on('completed', (job) => {
  if (job.name === 'single') finished(job.data.tag);
  else if (job.name === 'chain' && job.data.step + 1 === job.data.steps) finished(job.data.tag);
});
worker.on('error', (error) => console.error(error));

await worker.waitUntilReady();
await queue.waitUntilReady();
onStop(async () => {
  await worker.close();
  await queue.close();
});
ready();
