// What the benchmarks share: the built apps as processes, a fresh database per measurement, polling,
// and the API with the bench's tokens.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { type HttpMethod, JsonHttpClient } from '@nest-durable/client';
import { Client } from 'pg';
import { uuidv7Floor } from '../libs/persistence/src/ids';

export const ROOT = join(__dirname, '..');
export const SERVER_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
export const TOKEN = { client: `bench-client-${randomBytes(8).toString('hex')}`, worker: `bench-worker-${randomBytes(8).toString('hex')}` };
export const MODES = ['http', 'redis-zset', 'redis-streams'] as const;
export type Mode = (typeof MODES)[number];

/**
 * The warm-up, for the engine, the floor and every peer (bench/peers/run-peers.mjs, a package of its own, repeats
 * these counts): WARMUP bulk runs before W1, then, before W2, WARMUP_PROBES W2 runs and WARMUP_CHAINS W3a chains,
 * all unmeasured. The columns are of processes in their steady state, as a deployment's are after its first
 * minutes: measured on the engine (2026-12-02), after 10 probes and 10 chains W2's result p50 was 3.85 ms and
 * W3a's 16.5, after 900 and 150 more 2.66 and 11.9 (JIT; docs/benchmarks.md, "Warm-up").
 */
export const WARMUP = 2_000;
export const WARMUP_PROBES = 1_000;
export const WARMUP_CHAINS = 200;
/**
 * The short warm-up (issue 36): what a fresh deployment meets in its first minute. Right after the processes are
 * ready, SHORT_WARMUP_PROBES W2 runs and SHORT_WARMUP_CHAINS W3a chains unmeasured, then W2 and W3a measured once
 * (the `short…` fields), before anything else runs. The long warm-up and the warm columns follow as before.
 */
export const SHORT_WARMUP_PROBES = 500;
export const SHORT_WARMUP_CHAINS = 50;
export const W2_RUNS = 300;
export const W3A_CHAINS = 50;
export const CHAIN_STEPS = 10;

/** One W2 run, in ms from just before its start request: the handler began, the start call returned, the result was in hand. */
export interface ProbeTimes {
  start: number;
  roundTrip: number;
  result: number;
}

/** W2's and W3a's fields of a column (the engine's, the floor's, a peer's), from one measured phase. */
export interface LatencyColumns {
  w2StartP50: number;
  w2StartP95: number;
  w2StartP99: number;
  w2ResultP50: number;
  w2ResultP99: number;
  startRoundTripP50: number;
  startRoundTripP99: number;
  w3aP50: number;
  w3aP95: number;
}

/** The same after the short warm-up only (p50s). */
export interface ShortLatencyColumns {
  shortW2StartP50: number;
  shortW2ResultP50: number;
  shortW3aP50: number;
}

/** `probes` W2 runs and `chains` W3a chains, unmeasured; `key` makes each chain's idempotency key unique. */
export async function warmUp(
  probe: () => Promise<ProbeTimes>,
  chain: (key: string) => Promise<number>,
  probes: number,
  chains: number,
  label: string,
): Promise<void> {
  for (let i = 0; i < probes; i++) await probe();
  for (let i = 0; i < chains; i++) await chain(`${label}-warm-${i}`);
}

/** `runs` probes one after another (W2_RUNS unless given). */
export async function measureW2(probe: () => Promise<ProbeTimes>, runs = W2_RUNS): Promise<ProbeTimes[]> {
  const times: ProbeTimes[] = [];
  for (let i = 0; i < runs; i++) times.push(await probe());
  return times;
}

/** W3A_CHAINS chains one after another: each one's latency in ms. */
export async function measureW3a(chain: (key: string) => Promise<number>, label: string): Promise<number[]> {
  const latencies: number[] = [];
  for (let i = 0; i < W3A_CHAINS; i++) latencies.push(await chain(`${label}-${i}`));
  return latencies;
}

export function latencyColumns(probes: ProbeTimes[], chains: number[]): LatencyColumns {
  const of = (pick: (times: ProbeTimes) => number, p: number) => round(percentile(probes.map(pick), p), 2);
  return {
    w2StartP50: of((t) => t.start, 50),
    w2StartP95: of((t) => t.start, 95),
    w2StartP99: of((t) => t.start, 99),
    w2ResultP50: of((t) => t.result, 50),
    w2ResultP99: of((t) => t.result, 99),
    startRoundTripP50: of((t) => t.roundTrip, 50),
    startRoundTripP99: of((t) => t.roundTrip, 99),
    w3aP50: round(percentile(chains, 50), 1),
    w3aP95: round(percentile(chains, 95), 1),
  };
}

/** The short warm-up, then W2 and W3a measured: run first thing on fresh processes. */
export async function shortLatency(probe: () => Promise<ProbeTimes>, chain: (key: string) => Promise<number>): Promise<ShortLatencyColumns> {
  await warmUp(probe, chain, SHORT_WARMUP_PROBES, SHORT_WARMUP_CHAINS, 'short');
  const columns = latencyColumns(await measureW2(probe), await measureW3a(chain, 'short'));
  return { shortW2StartP50: columns.w2StartP50, shortW2ResultP50: columns.w2ResultP50, shortW3aP50: columns.w3aP50 };
}

/**
 * CPU seconds used so far by the PostgreSQL server (the postmaster and every backend: each process whose name is
 * `postgres`), from /proc; `except` leaves out backends by pid (the bench's own polling connection). Other users of
 * the same server add to it: the bench runs one system at a time.
 */
export function postgresCpuSeconds(except: number[] = []): number {
  let ticks = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid) || except.includes(Number(pid))) continue;
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'postgres') continue;
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      // Its own time (utime, stime) and its reaped children's (cutime, cstime): a backend that exits between the
      // two readings moves its time into the postmaster's, so none is lost or subtracted.
      ticks += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    } catch {
      // The process ended between the listing and the read: the postmaster's children's time has it next time.
    }
  }
  return ticks / 100;
}

export function log(message: string): void {
  process.stdout.write(`[bench] ${message}\n`);
}

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export const round = (value: number, digits = 1) => Math.round(value * 10 ** digits) / 10 ** digits;

/** The middle value; for an even count the mean of the middle two (of two runs, their mean, not the larger). */
export const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  return Number.isInteger(middle) ? (sorted[middle - 1] + sorted[middle]) / 2 : sorted[Math.floor(middle)];
};

/**
 * Now on the machine's monotonic clock (CLOCK_MONOTONIC, in ms), which every process of the machine shares: a
 * time taken in one process (a handler's start in the worker) compares with one taken in another (the client's
 * request). `performance.timeOrigin + performance.now()` does not: each process samples the wall clock once,
 * when it starts, so two processes differ by however far the wall clock was stepped in between (a W2 start
 * p50 of -0.99 ms was measured so, 2026-12-03).
 */
export const machineNow = () => Number(process.hrtime.bigint()) / 1e6;

/** A built app (dist/) as a process of its own. */
export class Proc {
  readonly child: ChildProcess;
  output = '';

  /** `entry` relative to the checkout; `nodeArgs` before it (`-r` a loader, say). */
  constructor(entry: string, env: Record<string, string>, nodeArgs: string[] = []) {
    // BENCH_CPU_PROF=<dir>: each app writes a V8 CPU profile there when it exits (open it in Chrome's DevTools).
    const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
    // BENCH_NODE_ARGS: flags for Node and V8 in every app the bench starts (space-separated), to try one.
    const flags = process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
    this.child = spawn(process.execPath, [...profile, ...flags, ...nodeArgs, join(ROOT, entry)], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout!.on('data', (chunk) => (this.output += chunk));
    this.child.stderr!.on('data', (chunk) => (this.output += chunk));
  }

  /** Peak resident set size (VmHWM) in MB. */
  peakRssMb(): number {
    const status = readFileSync(`/proc/${this.child.pid}/status`, 'utf8');
    return round(Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024, 0);
  }

  /** CPU seconds used so far (user + system, from /proc/<pid>/stat). */
  cpuSeconds(): number {
    const fields = readFileSync(`/proc/${this.child.pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  }
}

export async function until(what: string, check: () => Promise<boolean>, timeoutMs = 120_000, everyMs = 20): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** The engine's own HTTP client (the one WorkflowClient and workers use), one per coordinator. */
const clients = new Map<string, JsonHttpClient>();

/** A request with the bench's client token, through the engine's own HTTP client: what a user's code pays. */
export async function api<T>(base: string, method: HttpMethod, path: string, body?: unknown): Promise<T> {
  let client = clients.get(base);
  if (!client) {
    client = new JsonHttpClient(base, { authorization: `Bearer ${TOKEN.client}` });
    clients.set(base, client);
  }
  return client.request<T>(method, path, body);
}

/** Starts `count` runs made by `run`, in batch requests of up to 1,000. */
export async function startInBatches(base: string, count: number, run: () => Record<string, unknown>): Promise<void> {
  for (let i = 0; i < count; i += 1_000) {
    await api(base, 'POST', '/v1/runs/batch', { runs: Array.from({ length: Math.min(1_000, count - i) }, run) });
  }
}

/** A fresh database for one measurement, with a connection for the bench's own queries. */
export class BenchDatabase {
  readonly url: string;
  readonly client: Client;
  private readonly admin = new Client({ connectionString: SERVER_URL });

  /** When the database was made (ms): runs with ids from uuidv7Floor(createdAt) are the bench's, older ones its template's. */
  readonly createdAt = Date.now();

  private constructor(readonly name: string) {
    const url = new URL(SERVER_URL);
    url.pathname = `/${name}`;
    this.url = url.toString();
    this.client = new Client({ connectionString: this.url });
  }

  /** An empty database, or a copy of `template` (file by file: a WAL-logged copy of gigabytes takes far longer). */
  static async create(label: string, template?: string): Promise<BenchDatabase> {
    const db = new BenchDatabase(`wf_bench_${label.replace(/[^a-z0-9]/gi, '_')}_${randomBytes(3).toString('hex')}`);
    await db.admin.connect();
    await db.admin.query(`CREATE DATABASE ${db.name}${template ? ` TEMPLATE ${template} STRATEGY FILE_COPY` : ''}`);
    await db.client.connect();
    return db;
  }

  /**
   * Transactions that wrote, so far: the server's next transaction id (read without taking one). Only a
   * transaction that writes takes an id, and only such a commit is flushed to disk. Counted across the server:
   * the bench runs one system at a time. (`pg_stat_database.xact_commit`, used before, lags: a backend that
   * goes idle less than a second after it last reported keeps its counts until its next statement a second
   * later, so a window counted the tail of the workload before it and lost its own.)
   */
  async commits(): Promise<number> {
    const [row] = (await this.client.query(`SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS n`)).rows;
    return Number(row.n);
  }

  /** Completed runs of `workflow` created from `since` (ms) on: on a template's copy, not its history's millions. */
  async completed(workflow: string, since = this.createdAt): Promise<number> {
    const { rows } = await this.client.query(`SELECT count(*) FROM runs WHERE workflow = $1 AND status = 'completed' AND id >= $2`, [
      workflow,
      uuidv7Floor(since),
    ]);
    return Number(rows[0].count);
  }

  async drop(): Promise<void> {
    await this.client.end().catch(() => undefined);
    await this.admin.query(`DROP DATABASE IF EXISTS ${this.name} WITH (FORCE)`);
    await this.admin.end();
  }
}

/** How the apps reach Redis: one node, or a cluster's seed list. */
export type RedisTarget = { REDIS_URL: string } | { REDIS_CLUSTER_NODES: string };

/** A built coordinator on a free port, once it is ready. */
export async function startCoordinator(db: BenchDatabase, dispatch: string, env: Record<string, string>): Promise<{ proc: Proc; url: string }> {
  const port = await freePort();
  const proc = new Proc('dist/apps/coordinator/apps/coordinator/src/main.js', {
    LOG_LEVEL: 'warn',
    LOG_FORMAT: 'json',
    DATABASE_URL: db.url,
    PORT: String(port),
    HOST: '127.0.0.1',
    DISPATCH: dispatch,
    CLIENT_TOKEN: TOKEN.client,
    WORKER_TOKEN: TOKEN.worker,
    DATABASE_POOL_SIZE: '20',
    ...env,
  });
  const url = `http://127.0.0.1:${port}`;
  await until(
    `the coordinator\n${proc.output}`,
    () =>
      fetch(`${url}/health/ready`).then(
        (r) => r.ok,
        () => false,
      ),
    60_000,
    100,
  );
  return { proc, url };
}

/** A built worker following `coordinatorUrls`, once it is ready. */
export async function startWorker(coordinatorUrls: string[], subscriber: Mode, env: Record<string, string>): Promise<Proc> {
  const port = await freePort();
  const proc = new Proc('dist/apps/worker/apps/worker/src/main.js', {
    LOG_LEVEL: 'warn',
    LOG_FORMAT: 'json',
    COORDINATOR_URL: coordinatorUrls.join(','),
    WORKER_TOKEN: TOKEN.worker,
    WORKER_CONCURRENCY: '50',
    WORKER_PORT: String(port),
    SUBSCRIBER: subscriber,
    ...env,
  });
  await until(
    `the worker\n${proc.output}`,
    () =>
      fetch(`http://127.0.0.1:${port}/health/ready`).then(
        (r) => r.ok,
        () => false,
      ),
    60_000,
    100,
  );
  return proc;
}
