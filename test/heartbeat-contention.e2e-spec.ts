import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Pool } from 'pg';
import { eventually } from './support/poll';
import { PostgresServer } from './support/postgres-server';
import { AppProcess, freePort, stopAllProcesses } from './support/processes';

/**
 * The fault soak's shape without the faults: several worker processes, many short runs, heartbeats
 * every 300 ms, for 20 seconds, against a private PostgreSQL that logs lock waits and detects
 * deadlocks quickly. Heartbeats, task results and outcomes all update `runs` rows of the same
 * workers; they must never deadlock, and a live worker must never lose a run or be told it did.
 */
describe('heartbeats and reports under load (real processes, a private PostgreSQL)', () => {
  // 20 s, not the minute it once was (for a third of the CPU in a suite kept under 10 minutes): still thousands of
  // heartbeats and reports crossing on the same rows; `npm run soak` runs the same shape for minutes, with faults.
  const LOAD_MS = 20_000;
  const WORKERS = 3;
  const IN_FLIGHT = 90;
  let postgres: PostgresServer;
  let sql: Pool;
  let coordinatorUrl: string;
  const workers: AppProcess[] = [];

  beforeAll(async () => {
    postgres = new PostgresServer(await freePort(), { log_lock_waits: 'on', deadlock_timeout: '50ms', max_connections: '100' });
    await postgres.start();
    sql = new Pool({ connectionString: postgres.url, max: 2 });
    sql.on('error', () => undefined);
    const port = await freePort();
    coordinatorUrl = `http://127.0.0.1:${port}`;
    const coordinator = new AppProcess('coordinator', 'apps/coordinator/src/main.ts', {
      DATABASE_URL: postgres.url,
      PORT: String(port),
      HOST: '127.0.0.1',
      AUTH_DISABLED: 'true',
      HEARTBEAT_INTERVAL_MS: '300',
      CLAIM_MIN_IDLE_TIME_MS: '3000',
      CLAIM_POLL_INTERVAL_MS: '200',
    });
    await coordinator.waitForOutput('listening on');
    for (let i = 1; i <= WORKERS; i++) {
      const worker = new AppProcess(`worker-${i}`, 'apps/worker/src/main.ts', {
        COORDINATOR_URL: coordinatorUrl,
        WORKER_ID: `w-${i}`,
        WORKER_PORT: '0',
        WORKER_CONCURRENCY: '30',
        HEARTBEAT_INTERVAL_MS: '300',
        CLAIM_WAIT_MS: '1000',
      });
      workers.push(worker);
    }
    await Promise.all(workers.map((worker) => worker.waitForOutput('taking work from')));
  }, 60_000);

  afterAll(async () => {
    await stopAllProcesses();
    await sql?.end();
    await postgres?.destroy();
  }, 60_000);

  it(
    'never deadlocks, never takes a run from a live worker, and never reports a live claim as lost',
    async () => {
      let started = 0;
      const until = Date.now() + LOAD_MS;
      while (Date.now() < until) {
        const unfinished = await count(`status <> 'completed'`);
        if (unfinished < IN_FLIGHT) {
          // Runs of different lengths finish out of the order they were claimed in, as in production.
          const runs = Array.from({ length: IN_FLIGHT - unfinished }, (_, i) => ({
            workflow: 'chain',
            version: '1',
            input: { steps: 1 + ((started + i) % 3), stepMs: (started + i) % 40 },
          }));
          const response = await fetch(`${coordinatorUrl}/v1/runs/batch`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ runs }),
          });
          expect(response.status).toBe(201);
          started += runs.length;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await eventually('every run to complete', async () => (await count(`status <> 'completed'`)) === 0, 60_000);

      expect(started).toBeGreaterThan(500);
      expect(workers.every((worker) => worker.alive)).toBe(true);
      expect(deadlocks(postgres.output)).toEqual([]);
      const takeovers = await sql.query(`SELECT run_id, worker_id FROM run_transitions WHERE from_status = 'running' AND to_status = 'running'`);
      expect(takeovers.rows).toEqual([]);
      for (const worker of workers) expect(worker.output).not.toContain('claim lost');
    },
    LOAD_MS + 120_000,
  );

  /** Each deadlock the server logged, with the statements involved (the lines after it). */
  function deadlocks(log: string): string[] {
    const lines = log.split('\n');
    return lines.flatMap((line, i) => (line.includes('deadlock detected') ? [lines.slice(i, i + 8).join('\n')] : []));
  }

  async function count(where: string): Promise<number> {
    const { rows } = await sql.query<{ count: string }>(`SELECT count(*) FROM runs WHERE ${where}`);
    return Number(rows[0].count);
  }
});
