import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { type RunView, WorkflowClient } from '@nest-durable/client';
import { SIDE_EFFECTS_TABLE } from './fixtures/side-effects.workflow';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { AppProcess, freePort, stopAllProcesses } from './support/processes';
import { TEST_REDIS_URL, testPrefix } from './support/redis';

const HEARTBEAT_INTERVAL_MS = '300';
const JSON_HEADERS = { 'content-type': 'application/json' };
const IDLE_MS = '1500';

/**
 * Several coordinators on one database, with real processes: long-polls are woken on whichever
 * coordinator holds them, and workers that list every coordinator in COORDINATOR_URL spread their
 * requests over them and carry on when one is killed mid-load, in every dispatch mode.
 */
describe('several coordinators (real processes)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase('coordinators');
    await db.sql(SIDE_EFFECTS_TABLE);
  });

  afterEach(async () => {
    await stopAllProcesses();
  });

  afterAll(async () => {
    await db?.drop();
  });

  async function coordinator(name: string, env: Record<string, string> = {}): Promise<{ process: AppProcess; url: string }> {
    const port = await freePort();
    const process = new AppProcess(name, 'apps/coordinator/src/main.ts', {
      DATABASE_URL: db.url,
      PORT: String(port),
      HOST: '127.0.0.1',
      AUTH_DISABLED: 'true',
      HEARTBEAT_INTERVAL_MS,
      CLAIM_MIN_IDLE_TIME_MS: IDLE_MS,
      REDIS_URL: TEST_REDIS_URL,
      ...env,
    });
    await process.waitForOutput('listening on');
    return { process, url: `http://127.0.0.1:${port}` };
  }

  async function worker(id: string, coordinatorUrls: string[], env: Record<string, string> = {}): Promise<AppProcess> {
    const process = new AppProcess(id, 'test/fixtures/fault-worker.main.ts', {
      COORDINATOR_URL: coordinatorUrls.join(','),
      WORKER_ID: id,
      HEARTBEAT_INTERVAL_MS,
      STREAM_RECLAIM_IDLE_MS: IDLE_MS,
      CLAIM_WAIT_MS: '2000',
      SHUTDOWN_GRACE_MS: '500',
      REDIS_URL: TEST_REDIS_URL,
      SIDE_EFFECTS_URL: db.url,
      ...env,
    });
    await process.waitForOutput(`ready ${id}`);
    return process;
  }

  async function getRun(url: string, id: string): Promise<RunView> {
    return (await (await fetch(`${url}/v1/runs/${id}`)).json()) as RunView;
  }

  it('wakes a result long-poll and a claim long-poll held by another coordinator than the one that changed the run', async () => {
    // No polling to fall back on: only the NOTIFY the other coordinator's write sends can wake them in time.
    const slow = { CLAIM_POLL_INTERVAL_MS: '60000' };
    const a = await coordinator('coordinator-a', slow);
    const b = await coordinator('coordinator-b', slow);
    await worker('follows-b', [b.url], { CLAIM_WAIT_MS: '60000' });
    const viaA = new WorkflowClient({ url: a.url });
    const viaB = new WorkflowClient({ url: b.url });

    const run = await viaA.start({ name: 'approval', version: '1' }, { timeoutMs: 600_000 });
    await eventually('the run to wait for its event (claimed through b)', async () => (await getRun(a.url, run.id)).status === 'waiting');
    const result = viaB.waitForResult(run.id, { timeoutMs: 60_000 });
    const sent = await fetch(`${a.url}/v1/runs/${run.id}/events/approved`, {
      method: 'POST',
      headers: JSON_HEADERS,
      body: JSON.stringify({ data: { by: 'alice' } }),
    });
    expect(sent.status).toBe(202);
    await expect(result).resolves.toMatchObject({ status: 'completed' });
  }, 30_000);

  it.each(['redis-zset', 'redis-streams'] as const)(
    '%s: a worker offering itself to two coordinators goes on being handed starts by one when the other is killed with -9',
    async (mode) => {
      const dispatch = { DISPATCH: mode, REDIS_PREFIX: testPrefix(`offers-${mode}`) };
      const a = await coordinator('offers-a', dispatch);
      const b = await coordinator('offers-b', dispatch);
      const w = await worker(`${mode}-offering`, [a.url, b.url], { SUBSCRIBER: mode, REDIS_PREFIX: dispatch.REDIS_PREFIX, REDIS_BLOCK_MS: '500' });
      const started: string[] = [];
      /** Starts a run on `url`; true when its start handed it to the worker's offer (running at its 201). */
      const handedOn = async (url: string) => {
        const response = await fetch(`${url}/v1/runs`, {
          method: 'POST',
          headers: JSON_HEADERS,
          body: JSON.stringify({ workflow: 'side-effects', version: '1', input: { steps: 1, stepMs: 1 } }),
        });
        expect(response.status).toBe(201);
        const run = (await response.json()) as RunView;
        started.push(run.id);
        return run.status === 'running';
      };
      await eventually('a start on a handed to the offer', () => handedOn(a.url));
      a.process.signal('SIGKILL');
      await a.process.exited;
      await eventually('a start on b handed to the offer', () => handedOn(b.url));
      const completed = async () =>
        Number((await db.sql<{ count: string }>(`SELECT count(*) FROM runs WHERE status = 'completed' AND id = ANY($1)`, [started]))[0].count);
      await eventually(`every run completed\n${w.output.slice(-2_000)}`, async () => (await completed()) === started.length, 30_000);
      expect(w.alive).toBe(true);
    },
    60_000,
  );

  describe.each(['http', 'redis-zset', 'redis-streams'] as const)('%s', (mode) => {
    it('four workers following both coordinators finish 500 runs while one coordinator is killed mid-load', async () => {
      const dispatch = { DISPATCH: mode === 'http' ? 'none' : mode, REDIS_PREFIX: testPrefix(`coordinators-${mode}`), CLAIM_POLL_INTERVAL_MS: '200' };
      const a = await coordinator('coordinator-a', dispatch);
      const b = await coordinator('coordinator-b', dispatch);
      const subscriber = { SUBSCRIBER: mode, REDIS_PREFIX: dispatch.REDIS_PREFIX, REDIS_BLOCK_MS: '500' };
      const workers = await Promise.all([1, 2, 3, 4].map((n) => worker(`${mode}-w${n}`, n % 2 ? [a.url, b.url] : [b.url, a.url], subscriber)));

      const runs: RunView[] = [];
      for (let batch = 0; batch < 2; batch++) {
        const via = batch % 2 ? b.url : a.url;
        const body = { runs: Array.from({ length: 250 }, () => ({ workflow: 'side-effects', version: '1', input: { steps: 3, stepMs: 1 } })) };
        const response = await fetch(`${via}/v1/runs/batch`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify(body) });
        expect(response.status).toBe(201);
        runs.push(...((await response.json()) as { runs: RunView[] }).runs);
      }
      const started = new Set(runs.map((run) => run.id));
      expect(started.size).toBe(500);

      const completed = async () =>
        Number((await db.sql<{ count: string }>(`SELECT count(*) FROM runs WHERE status = 'completed' AND id = ANY($1)`, [[...started]]))[0].count);
      await eventually('a hundred and fifty runs done before the kill', async () => (await completed()) >= 150, 60_000);
      a.process.signal('SIGKILL');
      await a.process.exited;
      const [{ killedAt }] = await db.sql<{ killedAt: Date }>(`SELECT clock_timestamp() AS "killedAt"`);

      await eventually(
        `every run completed (${mode})\n${workers.map((w) => w.output.slice(-2_000)).join('\n')}`,
        async () => (await completed()) === 500,
        90_000,
      );
      const sample = await Promise.all(runs.slice(0, 50).map((run) => getRun(b.url, run.id)));
      expect(sample.map((run) => run.output)).toEqual(sample.map(() => ({ steps: 3 })));

      // Each step recorded once; each run's steps 1..3.
      const steps = await db.sql<{ bad: string }>(
        `SELECT count(*) AS bad FROM (SELECT run_id FROM tasks WHERE kind = 'task' AND run_id = ANY($1) GROUP BY run_id HAVING count(*) <> 3) t`,
        [[...started]],
      );
      expect(steps[0].bad).toBe('0');
      // Every worker moved its requests to b and kept working.
      const afterKill = await db.sql<{ worker_id: string }>(`SELECT DISTINCT worker_id FROM side_effects WHERE run_id = ANY($1) AND at > $2`, [
        [...started],
        killedAt,
      ]);
      expect(afterKill.map((row) => row.worker_id).sort()).toEqual(workers.map((w) => w.name).sort());
      for (const w of workers) expect(w.alive).toBe(true);
    }, 180_000);
  });
});
