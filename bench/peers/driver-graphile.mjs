// graphile-worker driver (PostgreSQL): WorkerUtils here, the runner in worker-graphile.mjs.
import { makeWorkerUtils } from 'graphile-worker';
import { BATCH, CHAIN_STEPS, freshDatabase, now, RESULT_POLL_MS, sleep, until, WorkerProc } from './harness.mjs';

export async function graphileDriver() {
  const database = await freshDatabase('graphile');
  const utils = await makeWorkerUtils({ connectionString: database.url });
  let worker;
  try {
    await utils.migrate();
    worker = new WorkerProc('worker-graphile.mjs', { DATABASE_URL: database.url });
    await worker.ready();
  } catch (error) {
    await worker?.stop();
    await utils.release();
    await database.drop();
    throw error;
  }
  const probeStarts = new Map();
  worker.listeners.add((m) => m.type === 'probe' && probeStarts.set(m.key, m.startedAt));
  // No completion notification or result API: poll the jobs table (completed jobs are deleted).
  const poll = database.db;
  const gone = async (sql, params) => {
    for (;;) {
      if ((await poll.query(sql, params)).rowCount === 0) return;
      await sleep(RESULT_POLL_MS);
    }
  };
  return {
    worker,
    store: 'postgres',
    async enqueueSingles(tag, n) {
      for (let i = 0; i < n; i += BATCH) {
        await utils.addJobs(Array.from({ length: Math.min(BATCH, n - i) }, () => ({ identifier: 'single', payload: { tag } })));
      }
    },
    async probe(key) {
      const job = await utils.addJob('probe', { key });
      const enqueuedAt = now();
      await gone(`SELECT 1 FROM graphile_worker._private_jobs WHERE id = $1`, [job.id]);
      await until('probe start report', async () => probeStarts.has(key), 10_000, 1);
      return { enqueuedAt, startedAt: probeStarts.get(key) };
    },
    async chain(key) {
      const chain = `w3a-${key}`;
      await utils.addJob('chain', { tag: 'w3a', chain, step: 0, steps: CHAIN_STEPS });
      // Each step adds its successor before it completes, so the chain is done when no job of it is left.
      await gone(`SELECT 1 FROM graphile_worker._private_jobs WHERE payload->>'chain' = $1 LIMIT 1`, [chain]);
    },
    async enqueueChains(tag, n) {
      await utils.addJobs(Array.from({ length: n }, (_, i) => ({ identifier: 'chain', payload: { tag, chain: `${tag}-${i}`, step: 0, steps: CHAIN_STEPS } })));
    },
    commits: () => database.commits(),
    async teardown() {
      await worker.stop();
      await utils.release();
      await database.drop();
    },
  };
}
