// Peer benchmarks: runs the workloads of bench/run.ts (W1 throughput, W2 idle latency, W3 chains)
// against BullMQ, graphile-worker and DBOS, each with a fresh PostgreSQL database / Redis key prefix
// and one worker child process at concurrency 50.
//
//   node bench/peers/run-peers.mjs [--only bullmq|graphile-worker|dbos]
//
// Progress lines start with "[peers] "; the last line of stdout is a JSON array of results.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Redis } from 'ioredis';

const HERE = dirname(fileURLToPath(import.meta.url));
const SERVER_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const PEERS = ['bullmq', 'graphile-worker', 'dbos'];

// The warm-up's counts are bench/support.ts's (see there): bulk jobs before W1, then the one-at-a-time paths before W2.
const WARMUP = 2_000;
const WARMUP_PROBES = 1_000;
const WARMUP_CHAINS = 200;
const W1_RUNS = 5_000;
const W2_RUNS = 300;
const W3A_CHAINS = 50;
const W3B_CHAINS = 200;
const CHAIN_STEPS = 10;
const BATCH = 1_000;
const CONCURRENCY = 50;
/** Poll interval for peers without a push notification of completion (graphile-worker, DBOS getResult). */
const RESULT_POLL_MS = 1;

const log = (message) => process.stdout.write(`[peers] ${message}\n`);
// The machine's monotonic clock in ms, as the workers' (worker-common.mjs).
const now = () => Number(process.hrtime.bigint()) / 1e6;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const round = (value, digits = 1) =>
  value === null || value === undefined || !Number.isFinite(value) ? null : Math.round(value * 10 ** digits) / 10 ** digits;
const rand = () => randomBytes(3).toString('hex');

function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function until(what, check, timeoutMs = 300_000, everyMs = 20) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** A worker child process with an IPC channel (ready, stats requests, side-channel reports). */
class WorkerProc {
  constructor(script, env) {
    this.output = '';
    this.listeners = new Set();
    this.pending = new Map();
    this.nextId = 0;
    this.child = spawn(process.execPath, [join(HERE, script)], {
      cwd: HERE,
      env: { ...process.env, ...env, CONCURRENCY: String(CONCURRENCY) },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    this.child.stdout.on('data', (chunk) => (this.output += chunk));
    this.child.stderr.on('data', (chunk) => (this.output += chunk));
    this.exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.on('message', (m) => {
      if (m.type === 'stats') {
        this.pending.get(m.id)?.(m.stats);
        this.pending.delete(m.id);
      }
      for (const listener of this.listeners) listener(m);
    });
  }

  async ready(timeoutMs = 60_000) {
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`worker not ready:\n${this.output}`)), timeoutMs);
      const listener = (m) => {
        if (m.type !== 'ready') return;
        clearTimeout(timer);
        this.listeners.delete(listener);
        resolve();
      };
      this.listeners.add(listener);
      this.exited.then((code) => reject(new Error(`worker exited (${code}):\n${this.output}`)));
    });
  }

  /** { count, firstStart, lastEnd } for a tag, as recorded by the worker's handlers. */
  stats(tag) {
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      this.child.send({ type: 'stats', id, tag });
    });
  }

  /** Peak resident set size (VmHWM) in MB. */
  peakRssMb() {
    const status = readFileSync(`/proc/${this.child.pid}/status`, 'utf8');
    return round(Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024, 0);
  }

  async stop() {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 15_000);
    await this.exited;
    clearTimeout(timer);
  }
}

/** Fresh PostgreSQL database: created here, dropped in drop(). */
async function freshDatabase(label) {
  const database = `peers_${label}_${rand()}`;
  const admin = new pg.Client({ connectionString: SERVER_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${database}`);
  const url = new URL(SERVER_URL);
  url.pathname = `/${database}`;
  const db = new pg.Client({ connectionString: url.toString() });
  await db.connect();
  return {
    name: database,
    url: url.toString(),
    db,
    // Transactions that wrote, as the engine's bench counts them (bench/support.ts, BenchDatabase.commits):
    // the server's next transaction id, read without taking one.
    async commits() {
      const { rows } = await db.query(`SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS n`);
      return Number(rows[0].n);
    },
    async drop() {
      await db.end().catch(() => undefined);
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await admin.end();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Drivers. Each returns { worker, enqueueSingles(tag, n), probe(i) -> startedAt, chain(i),
// enqueueChains(tag, n), commits() -> number|null, lastEnd?(tag), teardown() }.
// ---------------------------------------------------------------------------------------------

async function bullmqDriver() {
  const { Queue, QueueEvents } = await import('bullmq');
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
    async enqueueSingles(tag, n) {
      for (let i = 0; i < n; i += BATCH) {
        await queue.addBulk(Array.from({ length: Math.min(BATCH, n - i) }, () => ({ name: 'single', data: { tag } })));
      }
    },
    async probe(i) {
      const job = await queue.add('probe', {}, { jobId: `probe-${i}` });
      const result = await job.waitUntilFinished(events, 10_000);
      return result.startedAt;
    },
    async chain(i) {
      const chain = `w3a-${i}`;
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

async function graphileDriver() {
  const { makeWorkerUtils } = await import('graphile-worker');
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
    async enqueueSingles(tag, n) {
      for (let i = 0; i < n; i += BATCH) {
        await utils.addJobs(Array.from({ length: Math.min(BATCH, n - i) }, () => ({ identifier: 'single', payload: { tag } })));
      }
    },
    async probe(i) {
      const key = `probe-${i}`;
      const job = await utils.addJob('probe', { key });
      await gone(`SELECT 1 FROM graphile_worker._private_jobs WHERE id = $1`, [job.id]);
      await until('probe start report', async () => probeStarts.has(key), 10_000, 1);
      return probeStarts.get(key);
    },
    async chain(i) {
      const chain = `w3a-${i}`;
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

async function dbosDriver() {
  const { DBOSClient } = await import('@dbos-inc/dbos-sdk');
  const database = await freshDatabase('dbos');
  let worker;
  let client;
  try {
    worker = new WorkerProc('worker-dbos.mjs', { DATABASE_URL: database.url });
    await worker.ready();
    client = await DBOSClient.create({ systemDatabaseUrl: database.url });
  } catch (error) {
    await worker?.stop();
    await client?.destroy();
    await database.drop();
    throw error;
  }
  const tx = new pg.Client({ connectionString: database.url });
  await tx.connect();
  // Bulk idiom: DBOSClient.enqueueInTransaction, BATCH enqueues per transaction.
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
    worker,
    enqueueSingles: (tag, n) => enqueueMany(n, () => [{ workflowName: 'single', workflowID: `${tag}-${seq++}` }, tag]),
    async probe(i) {
      const handle = await client.enqueue({ queueName: 'bench', workflowName: 'probe', workflowID: `probe-${i}` });
      const result = await handle.getResult({ pollingIntervalMs: RESULT_POLL_MS });
      return result.startedAt;
    },
    async chain(i) {
      const handle = await client.enqueue({ queueName: 'bench', workflowName: 'chain', workflowID: `w3a-${i}` }, 'w3a', CHAIN_STEPS);
      await handle.getResult({ pollingIntervalMs: RESULT_POLL_MS });
    },
    enqueueChains: (tag, n) => enqueueMany(n, (i) => [{ workflowName: 'chain', workflowID: `${tag}-${i}` }, tag, CHAIN_STEPS]),
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
      await tx.end().catch(() => undefined);
      await client.destroy();
      await database.drop();
    },
  };
}

const DRIVERS = { bullmq: bullmqDriver, 'graphile-worker': graphileDriver, dbos: dbosDriver };

async function benchPeer(mode) {
  log(`${mode}: starting worker`);
  const d = await DRIVERS[mode]();
  try {
    const drained = (tag, n) => until(`${tag} drained`, async () => (await d.worker.stats(tag)).count >= n);
    const lastEnd = async (tag) => (d.lastEnd ? await d.lastEnd(tag) : (await d.worker.stats(tag)).lastEnd);

    log(`${mode}: warm-up (${WARMUP} jobs)`);
    await d.enqueueSingles('warm', WARMUP);
    await drained('warm', WARMUP);

    log(`${mode}: W1 throughput (${W1_RUNS} single-step jobs, concurrency ${CONCURRENCY})`);
    const commitsBeforeW1 = await d.commits();
    const w1Start = now();
    await d.enqueueSingles('w1', W1_RUNS);
    await drained('w1', W1_RUNS);
    const commitsAfterW1 = await d.commits();
    const w1Stats = await d.worker.stats('w1');
    const w1End = await lastEnd('w1');
    const w1Drain = (w1End - w1Stats.firstStart) / 1000;
    const w1Elapsed = (w1End - w1Start) / 1000;

    log(`${mode}: warm-up of W2 and W3a (${WARMUP_PROBES} jobs, ${WARMUP_CHAINS} chains)`);
    for (let i = 0; i < WARMUP_PROBES; i++) await d.probe(`warm-${i}`);
    for (let i = 0; i < WARMUP_CHAINS; i++) await d.chain(`warm-${i}`);

    log(`${mode}: W2 idle latency (${W2_RUNS} jobs one after another)`);
    const startLatency = [];
    const resultLatency = [];
    for (let i = 0; i < W2_RUNS; i++) {
      const t0 = now();
      const startedAt = await d.probe(i);
      const t1 = now();
      startLatency.push(startedAt - t0);
      resultLatency.push(t1 - t0);
    }

    log(`${mode}: W3 chains (${W3A_CHAINS} sequential, ${W3B_CHAINS} concurrent, ${CHAIN_STEPS} steps)`);
    const chainLatency = [];
    for (let i = 0; i < W3A_CHAINS; i++) {
      const t0 = now();
      await d.chain(i);
      chainLatency.push(now() - t0);
    }
    const commitsBeforeW3b = await d.commits();
    await d.enqueueChains('w3b', W3B_CHAINS);
    await drained('w3b', W3B_CHAINS);
    const commitsAfterW3b = await d.commits();
    const w3bStats = await d.worker.stats('w3b');
    const w3bSpan = ((await lastEnd('w3b')) - w3bStats.firstStart) / 1000;
    const w3bSteps = W3B_CHAINS * CHAIN_STEPS;

    const commitsPerRun = commitsBeforeW1 === null ? null : (commitsAfterW1 - commitsBeforeW1) / W1_RUNS;
    const commitsPerStep = commitsBeforeW3b === null ? null : (commitsAfterW3b - commitsBeforeW3b) / w3bSteps;
    return {
      mode,
      w1DrainPerSecond: round(W1_RUNS / w1Drain, 0),
      w1CreateDrainPerSecond: round(W1_RUNS / w1Elapsed, 0),
      w2StartP50: round(percentile(startLatency, 50), 2),
      w2StartP95: round(percentile(startLatency, 95), 2),
      w2StartP99: round(percentile(startLatency, 99), 2),
      w2ResultP50: round(percentile(resultLatency, 50), 2),
      w2ResultP99: round(percentile(resultLatency, 99), 2),
      w3aP50: round(percentile(chainLatency, 50), 1),
      w3aP95: round(percentile(chainLatency, 95), 1),
      w3bStepsPerSecond: round(w3bSteps / w3bSpan, 0),
      commitsPerRun: round(commitsPerRun, 2),
      commitsPerStep: round(commitsPerStep, 2),
      requestsPerRun: null,
      coordinatorPeakRssMb: null,
      workerPeakRssMb: d.worker.peakRssMb(),
    };
  } catch (error) {
    log(`${mode}: worker output:\n${d.worker.output}`);
    throw error;
  } finally {
    await d.teardown();
  }
}

async function main() {
  const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined;
  if (only && !PEERS.includes(only)) throw new Error(`--only must be one of ${PEERS.join(', ')}`);
  const results = [];
  for (const mode of only ? [only] : PEERS) {
    const result = await benchPeer(mode);
    log(`${mode}: ${JSON.stringify(result)}`);
    results.push(result);
  }
  process.stdout.write(`${JSON.stringify(results)}\n`);
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
