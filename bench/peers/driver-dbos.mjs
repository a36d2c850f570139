// DBOS drivers (PostgreSQL, @dbos-inc/dbos-sdk), both on one worker-dbos.mjs process and its system database:
// - queue: the orchestrator is a DBOSClient enqueueing to the worker's `bench` queue (polled every 10 ms);
// - in-process: the worker starts the workflows itself (DBOS.startWorkflow), behind a small HTTP API that the
//   orchestrator calls with fetch, as a client calls a deployed DBOS app.
import { DBOSClient } from '@dbos-inc/dbos-sdk';
import pg from 'pg';
import { BATCH, CHAIN_STEPS, freshDatabase, now, RESULT_POLL_MS, WorkerProc } from './harness.mjs';

/** The queue's client side: DBOSClient.enqueue, and enqueueInTransaction for bulk (DBOS has no bulk enqueue). */
async function queueClient(databaseUrl) {
  const client = await DBOSClient.create({ systemDatabaseUrl: databaseUrl });
  const tx = new pg.Client({ connectionString: databaseUrl });
  await tx.connect();
  // BATCH enqueues per transaction.
  const enqueueMany = async (count, spec) => {
    for (let i = 0; i < count; i += BATCH) {
      await tx.query('BEGIN');
      for (let j = i; j < Math.min(count, i + BATCH); j++) {
        const [options, ...args] = spec(j);
        await client.enqueueInTransaction(tx, { queueName: 'bench', ...options }, ...args);
      }
      await tx.query('COMMIT');
    }
  };
  let seq = 0;
  return {
    enqueueSingles: (tag, n) => enqueueMany(n, () => [{ workflowName: 'single', workflowID: `${tag}-${seq++}` }, tag]),
    async probe(key) {
      const handle = await client.enqueue({ queueName: 'bench', workflowName: 'probe', workflowID: `probe-${key}` });
      const enqueuedAt = now();
      const result = await handle.getResult({ pollingIntervalMs: RESULT_POLL_MS });
      return { enqueuedAt, startedAt: result.startedAt };
    },
    async chain(key) {
      const handle = await client.enqueue({ queueName: 'bench', workflowName: 'chain', workflowID: `w3a-${key}` }, 'w3a', CHAIN_STEPS);
      await handle.getResult({ pollingIntervalMs: RESULT_POLL_MS });
    },
    enqueueChains: (tag, n) => enqueueMany(n, (i) => [{ workflowName: 'chain', workflowID: `${tag}-${i}` }, tag, CHAIN_STEPS]),
    async close() {
      await tx.end().catch(() => undefined);
      await client.destroy();
    },
  };
}

/** The in-process worker's HTTP API (worker-dbos.mjs, serveStarts), called with Node's fetch (keep-alive). */
function inProcessClient(port) {
  const call = async (method, path, body) => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: body ? { 'content-type': 'application/json' } : undefined,
      body: body ? JSON.stringify(body) : undefined,
    });
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    return await response.json();
  };
  const startMany = async (workflow, count, run) => {
    for (let i = 0; i < count; i += BATCH) {
      await call('POST', '/start-batch', { workflow, runs: Array.from({ length: Math.min(BATCH, count - i) }, (_, j) => run(i + j)) });
    }
  };
  return {
    enqueueSingles: (tag, n) => startMany('single', n, (i) => ({ id: `${tag}-${i}`, args: [tag] })),
    async probe(key) {
      const { id } = await call('POST', '/start', { workflow: 'probe', id: `probe-${key}`, args: [] });
      const enqueuedAt = now();
      const result = await call('GET', `/result/${encodeURIComponent(id)}`);
      return { enqueuedAt, startedAt: result.startedAt };
    },
    async chain(key) {
      const { id } = await call('POST', '/start', { workflow: 'chain', id: `w3a-${key}`, args: ['w3a', CHAIN_STEPS] });
      await call('GET', `/result/${encodeURIComponent(id)}`);
    },
    enqueueChains: (tag, n) => startMany('chain', n, (i) => ({ id: `${tag}-${i}`, args: [tag, CHAIN_STEPS] })),
    close: async () => undefined,
  };
}

/** `mode` is worker-dbos.mjs's DBOS_MODE: 'queue' or 'in-process'. */
async function dbosDriver(mode) {
  const database = await freshDatabase('dbos');
  let worker;
  let client;
  try {
    worker = new WorkerProc('worker-dbos.mjs', { DATABASE_URL: database.url, DBOS_MODE: mode });
    const { port } = await worker.ready();
    client = mode === 'queue' ? await queueClient(database.url) : inProcessClient(port);
  } catch (error) {
    await worker?.stop();
    await client?.close();
    await database.drop();
    throw error;
  }
  return {
    worker,
    store: 'postgres',
    enqueueSingles: client.enqueueSingles,
    probe: client.probe,
    chain: client.chain,
    enqueueChains: client.enqueueChains,
    commits: () => database.commits(),
    // A workflow is finished when its SUCCESS status is written (updated_at, epoch ms, set by the executor),
    // brought to the machine's monotonic clock the handlers' starts are on (the wall clock now, against it).
    async lastEnd(tag) {
      const { rows } = await database.db.query(
        `SELECT max(updated_at)::float8 AS t FROM dbos.workflow_status WHERE workflow_uuid LIKE $1 AND status = 'SUCCESS'`,
        [`${tag}-%`],
      );
      return Number(rows[0].t) - (Date.now() - now());
    },
    async teardown() {
      await worker.stop();
      await client.close();
      await database.drop();
    },
  };
}

export const dbosQueueDriver = () => dbosDriver('queue');
export const dbosInProcessDriver = () => dbosDriver('in-process');
