// What the orchestrator (run-peers.mjs) and its drivers (driver-*.mjs) share: the workloads' sizes that the
// drivers need, the clock and small helpers, the worker child process, fresh databases, and the stores' CPU time.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

const HERE = dirname(fileURLToPath(import.meta.url));
export const SERVER_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

export const CHAIN_STEPS = 10;
/** Jobs per bulk-enqueue call (W1, W3b, the bulk warm-up). */
export const BATCH = 1_000;
export const CONCURRENCY = 50;
/** Poll interval for peers without a push notification of completion (graphile-worker, DBOS getResult). */
export const RESULT_POLL_MS = 1;
/** Clock ticks per second of /proc/<pid>/stat's times (`getconf CLK_TCK`; 100 on Linux x86-64). */
const CLOCK_TICKS_PER_SECOND = 100;

export const log = (message) => process.stdout.write(`[peers] ${message}\n`);
// The machine's monotonic clock in ms, as the workers' (worker-common.mjs).
export const now = () => Number(process.hrtime.bigint()) / 1e6;
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
export const round = (value, digits = 1) =>
  value === null || value === undefined || !Number.isFinite(value) ? null : Math.round(value * 10 ** digits) / 10 ** digits;
export const rand = () => randomBytes(3).toString('hex');

export function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export async function until(what, check, timeoutMs = 300_000, everyMs = 20) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

/**
 * CPU seconds (user + system, with reaped children's) used so far by every live process whose name is `comm`: `postgres` is the
 * PostgreSQL server with all its backends, `redis-server` Redis. Whatever else runs on those servers counts too.
 */
export function storeCpuSeconds(comm) {
  let ticks = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== comm) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // The name in field 2 may hold spaces: count from the ')' closing it, where field 3 begins.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // Its own time (utime, stime) and its reaped children's (cutime, cstime): a backend that exits between the
      // two readings moves its time into the postmaster's, so none is lost or subtracted.
      ticks += Number(fields[14 - 3]) + Number(fields[15 - 3]) + Number(fields[16 - 3]) + Number(fields[17 - 3]);
    } catch {
      // The process exited between the listing and the reading: its parent's children's time has it next time.
    }
  }
  return ticks / CLOCK_TICKS_PER_SECOND;
}

/** A worker child process with an IPC channel (ready, stats requests, side-channel reports). */
export class WorkerProc {
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

  /** Resolves with the worker's ready message (which may say where it listens). */
  async ready(timeoutMs = 60_000) {
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`worker not ready:\n${this.output}`)), timeoutMs);
      const listener = (m) => {
        if (m.type !== 'ready') return;
        clearTimeout(timer);
        this.listeners.delete(listener);
        resolve(m);
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
export async function freshDatabase(label) {
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
