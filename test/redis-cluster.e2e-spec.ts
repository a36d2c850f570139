import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { hashSlot, queueStreams, sortedSetKey, streamKey } from '@app/streams';
import { type RunView, WorkflowClient } from '@nest-durable/client';
import { Cluster } from 'ioredis';
import { type FailoverSubscriber, SUBSCRIBER } from '@nest-durable/worker';
import { loadWorkerConfig } from '../apps/worker/src/config/worker.config';
import { workerModuleOptions } from '../apps/worker/src/worker-app.module';
import { EXAMPLE_WORKFLOWS } from '../apps/worker/src/workflows';
import { SIDE_EFFECTS_TABLE } from './fixtures/side-effects.workflow';
import { startCoordinator, startCustomWorker } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { AppProcess, freePort, stopAllProcesses } from './support/processes';
import { type RedisServer, testPrefix } from './support/redis';
import { RedisCluster } from './support/redis-cluster';

const MODES = ['redis-zset', 'redis-streams'] as const;
type Mode = (typeof MODES)[number];
const PARTITIONS = 4;
const JSON_HEADERS = { 'content-type': 'application/json' };
// No worker dies here, so no claim may go idle: heartbeats get ample room on a loaded machine.
const HEARTBEAT_INTERVAL_MS = '1000';
const IDLE_MS = '15000';

/** Where a mode's wake-ups for `queue` live: the sorted sets' slot, or the slot of partition 0. */
function slotOf(mode: Mode, prefix: string, queue: string): number {
  return hashSlot(mode === 'redis-zset' ? sortedSetKey(prefix, queue) : streamKey(prefix, queue, 0, PARTITIONS));
}

/**
 * Both Redis dispatch modes on a real Redis Cluster (six redis-server processes: 3 masters, 3
 * replicas), with a master killed with `kill -9` under load: publishers and blocking readers ride the
 * failover, what the dead master had not replicated is restored from PostgreSQL by republish, and
 * every run completes with each step executed and recorded once.
 */
describe('Redis Cluster', () => {
  let db: TestDatabase;
  const cluster = new RedisCluster();

  beforeAll(async () => {
    db = await createTestDatabase('redis_cluster');
    await db.sql(SIDE_EFFECTS_TABLE);
    await cluster.start();
  }, 60_000);

  afterAll(async () => {
    await stopAllProcesses();
    await cluster.stop();
    await db?.drop();
  });

  const countWhere = async (where: string, values: unknown[]) =>
    Number((await db.sql<{ n: string }>(`SELECT count(*) AS n FROM runs WHERE ${where}`, values))[0].n);

  describe.each(MODES)('%s', (mode) => {
    it('a blocked worker keeps taking runs through Redis after the master serving its keys is killed and replaced', async () => {
      const prefix = testPrefix(`cluster-readers-${mode}`);
      const coordinator = await startCoordinator(db.url, {
        dispatch: mode,
        redisClusterNodes: cluster.seedNodes,
        redisPrefix: prefix,
        streamPartitions: PARTITIONS,
        republishIntervalMs: 500,
        republishAfterMs: 1_000,
      });
      const config = loadWorkerConfig({
        COORDINATOR_URL: coordinator.url,
        SUBSCRIBER: mode,
        REDIS_CLUSTER_NODES: cluster.seeds,
        REDIS_PREFIX: prefix,
        REDIS_BLOCK_MS: '1000',
        CLAIM_WAIT_MS: '1000',
        WORKER_ID: `readers-${mode}`,
      });
      const worker = await startCustomWorker(coordinator.url, workerModuleOptions(config, EXAMPLE_WORKFLOWS));
      const subscriber = worker.app.get<FailoverSubscriber>(SUBSCRIBER);
      const client = new WorkflowClient({ url: coordinator.url });
      // Started in one batch: a single start could be handed to the worker's hand-off offer, past Redis.
      const runBatch = async (count: number) => {
        const runs = await client.startMany(Array.from({ length: count }, (_, i) => ({ workflow: { name: 'echo', version: '1' }, input: i })));
        for (const run of runs) expect(await client.waitForResult(run.id, { timeoutMs: 30_000 })).toMatchObject({ status: 'completed' });
        return runs.map((run) => run.id);
      };
      // Rejoined whatever happens: a cluster left without a replica fails the tests after this one.
      let killed: Awaited<ReturnType<typeof cluster.killMasterOf>>['killed'] | undefined;
      try {
        await runBatch(20);
        // The worker is blocked on the master now killed (its reads are in flight there).
        ({ killed } = await cluster.killMasterOf(slotOf(mode, prefix, 'echo:1')));
        await eventually('the worker on Redis (not its HTTP backup)', async () => !subscriber.usingBackup, 20_000);
        const after = await runBatch(60);
        // All taken with a Redis wake-up; in Streams, some from partition 0 (on the promoted replica).
        const via = await db.sql<{ claimed_via: string | null }>(`SELECT claimed_via FROM runs WHERE id = ANY($1)`, [after]);
        expect(via.filter((run) => run.claimed_via === null)).toEqual([]);
        if (mode === 'redis-streams') expect(via.some((run) => run.claimed_via!.startsWith('0/'))).toBe(true);
      } finally {
        await worker.close();
        await coordinator.close();
        if (killed) await cluster.rejoin(killed);
      }
    }, 90_000);
  });

  describe.each(MODES)('%s after an upgrade from the earlier key names', (mode) => {
    it('runs whose wake-ups sit under the old names complete: nobody reads those, republish gives them new ones', async () => {
      const prefix = testPrefix(`cluster-upgrade-${mode}`);
      const redis = new Cluster(cluster.seedNodes);
      const coordinator = await startCoordinator(db.url, {
        dispatch: mode,
        redisClusterNodes: cluster.seedNodes,
        redisPrefix: prefix,
        streamPartitions: PARTITIONS,
        republishIntervalMs: 300,
        republishAfterMs: 1_000,
      });
      const streams = queueStreams(prefix, ['echo:1'], PARTITIONS);
      const client = new WorkflowClient({ url: coordinator.url });
      try {
        const runs = await Promise.all(Array.from({ length: 30 }, (_, i) => client.start({ name: 'echo', version: '1' }, i)));
        const held = async () =>
          mode === 'redis-zset'
            ? redis.zcard(sortedSetKey(prefix, 'echo:1'))
            : (await Promise.all(streams.map((s) => redis.xlen(s)))).reduce((a, b) => a + b, 0);
        await eventually('the wake-ups published', async () => (await held()) === runs.length);
        // What the previous version left: the same wake-ups under its key names, none under the new ones.
        if (mode === 'redis-zset') {
          await redis.del(sortedSetKey(prefix, 'echo:1'));
          for (const run of runs) await redis.zadd(`${prefix}workflow:echo:1`, Date.now(), `${run.id}:1`);
        } else {
          for (const stream of streams) await redis.del(stream);
          for (const [i, run] of runs.entries()) await redis.xadd(`${prefix}workflow.tasks.echo:1.${i % PARTITIONS}`, '*', 'run', run.id);
        }
        const config = loadWorkerConfig({
          COORDINATOR_URL: coordinator.url,
          SUBSCRIBER: mode,
          REDIS_CLUSTER_NODES: cluster.seeds,
          REDIS_PREFIX: prefix,
          REDIS_BLOCK_MS: '500',
        });
        const worker = await startCustomWorker(coordinator.url, workerModuleOptions(config, EXAMPLE_WORKFLOWS));
        try {
          for (const run of runs) expect(await client.waitForResult(run.id, { timeoutMs: 30_000 })).toMatchObject({ status: 'completed' });
          expect(await countWhere(`claimed_via IS NULL AND id = ANY($1)`, [runs.map((run) => run.id)])).toBe(0);
        } finally {
          await worker.close();
        }
        const old =
          mode === 'redis-zset'
            ? await redis.zcard(`${prefix}workflow:echo:1`)
            : (await Promise.all(Array.from({ length: PARTITIONS }, (_, n) => redis.xlen(`${prefix}workflow.tasks.echo:1.${n}`)))).reduce((a, b) => a + b, 0);
        expect(old).toBe(runs.length);
      } finally {
        await coordinator.close();
        redis.disconnect();
      }
    }, 60_000);
  });

  const FAULTS = ['a master', 'a coordinator'] as const;
  describe.each(MODES.flatMap((mode) => FAULTS.map((fault) => [mode, fault] as const)))('%s under load', (mode, fault) => {
    it(`two coordinators and four worker processes finish 600 runs while ${fault} is killed mid-load, each step run and recorded once`, async () => {
      const prefix = testPrefix(`cluster-load-${mode}-${fault === 'a master' ? 'master' : 'coordinator'}`);
      const redis = { REDIS_CLUSTER_NODES: cluster.seeds, REDIS_PREFIX: prefix };
      const coordinators: { process: AppProcess; url: string }[] = [];
      for (const name of ['a', 'b']) {
        const port = await freePort();
        const process = new AppProcess(`coordinator-${name}`, 'apps/coordinator/src/main.ts', {
          ...redis,
          DATABASE_URL: db.url,
          PORT: String(port),
          HOST: '127.0.0.1',
          AUTH_DISABLED: 'true',
          DISPATCH: mode,
          STREAM_PARTITIONS: String(PARTITIONS),
          HEARTBEAT_INTERVAL_MS,
          CLAIM_MIN_IDLE_TIME_MS: IDLE_MS,
          REPUBLISH_INTERVAL_MS: '500',
          REPUBLISH_AFTER_MS: '1000',
          OUTBOX_RETRY_BASE_MS: '200',
          OUTBOX_RETRY_MAX_MS: '1000',
        });
        await process.waitForOutput('listening on');
        coordinators.push({ process, url: `http://127.0.0.1:${port}` });
      }
      const urls = coordinators.map((c) => c.url);
      const workers = await Promise.all(
        [1, 2, 3, 4].map(async (n) => {
          const id = `${mode}-w${n}`;
          const process = new AppProcess(id, 'test/fixtures/fault-worker.main.ts', {
            ...redis,
            COORDINATOR_URL: (n % 2 ? urls : [...urls].reverse()).join(','),
            WORKER_ID: id,
            SUBSCRIBER: mode,
            REDIS_BLOCK_MS: '500',
            HEARTBEAT_INTERVAL_MS,
            STREAM_RECLAIM_IDLE_MS: IDLE_MS,
            CLAIM_WAIT_MS: '2000',
            SHUTDOWN_GRACE_MS: '500',
            SIDE_EFFECTS_URL: db.url,
          });
          await process.waitForOutput(`ready ${id}`);
          return process;
        }),
      );
      const failure = () => [...coordinators.map((c) => c.process), ...workers].map((p) => `--- ${p.name}\n${p.output.slice(-3_000)}`).join('\n');

      const startRuns = async (count: number, steps: number, via: string[]) => {
        const runs: RunView[] = [];
        for (let batch = 0; batch * 500 < count; batch++) {
          const body = {
            runs: Array.from({ length: Math.min(500, count - batch * 500) }, () => ({ workflow: 'side-effects', version: '1', input: { steps, stepMs: 1 } })),
          };
          const response = await fetch(`${via[batch % via.length]}/v1/runs/batch`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify(body) });
          expect(response.status).toBe(201);
          runs.push(...((await response.json()) as { runs: RunView[] }).runs);
        }
        return runs.map((run) => run.id);
      };
      const completed = (ids: string[]) => countWhere(`status = 'completed' AND id = ANY($1)`, [ids]);

      const ids = await startRuns(600, 3, urls);
      await eventually('a few hundred runs done before the kill', async () => (await completed(ids)) >= 200, 60_000);
      let killedNode: RedisServer | undefined;
      let alive = urls;
      if (fault === 'a master') killedNode = (await cluster.killMasterOf(slotOf(mode, prefix, 'side-effects:1'))).killed;
      else {
        coordinators[0].process.signal('SIGKILL');
        await coordinators[0].process.exited;
        alive = [urls[1]];
      }
      await eventually(`every run completed (${mode})\n${failure()}`, async () => (await completed(ids)) === 600, 120_000);

      const outputs = await db.sql<{ output: unknown; n: string }>(`SELECT output, count(*) AS n FROM runs WHERE id = ANY($1) GROUP BY output`, [ids]);
      expect(outputs).toEqual([{ output: { steps: 3 }, n: '600' }]);
      // Each step recorded once (tasks) and executed once (side effects): 3 of each per run, no (run, step) twice.
      const recorded = await db.sql<{ runs: string; steps: string }>(
        `SELECT count(DISTINCT run_id) AS runs, count(*) AS steps FROM tasks WHERE kind = 'task' AND run_id = ANY($1)`,
        [ids],
      );
      expect(recorded).toEqual([{ runs: '600', steps: '1800' }]);
      const effects = await db.sql<{ total: string; distinct: string }>(
        `SELECT count(*) AS total, count(DISTINCT (run_id, step)) AS distinct FROM side_effects WHERE run_id = ANY($1)`,
        [ids],
      );
      expect(effects).toEqual([{ total: '1800', distinct: '1800' }]);
      expect((await db.sql(`SELECT 1 FROM dead_letters`)).length).toBe(0);

      // Every worker is back on Redis (any that fell back to HTTP during the failover has returned),
      // and runs started now are all taken with Redis wake-ups.
      const count = (text: string, what: string) => text.split(what).length - 1;
      await eventually(
        `every worker back on ${mode}\n${failure()}`,
        async () => workers.every((w) => count(w.output, 'taking work over HTTP until it recovers') === count(w.output, 'is back; taking work from it again')),
        30_000,
      );
      const more = await startRuns(200, 1, alive);
      await eventually(`the runs started after the failover completed\n${failure()}`, async () => (await completed(more)) === 200, 60_000);
      expect(await countWhere(`claimed_via IS NULL AND id = ANY($1)`, [more])).toBe(0);

      await Promise.all([...workers, ...coordinators.map((c) => c.process)].map((p) => p.stop()));
      if (killedNode) await cluster.rejoin(killedNode);
    }, 240_000);
  });
});
