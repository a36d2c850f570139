// `npm run bench -- --scale`: W1 (5,000 single-task runs) and W3b (200 ten-step chains at once) with 1, 2
// and 4 worker processes and 1 and 2 coordinators: Redis Streams on one Redis node and on a 6-node Redis
// Cluster the bench starts itself, and the HTTP claim API as the baseline. For each step it records
// PostgreSQL commits/s and where the CPU went, and says where throughput stops growing and why.
// `--targets http,single,cluster` picks the series (all three by default).
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { RedisCluster } from '../test/support/redis-cluster';
import { CORES, CpuSampler, type CpuShares } from './cpu';
import { api, BenchDatabase, log, type Mode, type Proc, REDIS_URL, ROOT, round, startCoordinator, startWorker, until } from './support';

const W1_RUNS = 5_000;
const W3B_CHAINS = 200;
const CHAIN_STEPS = 10;
const WORKERS = [1, 2, 4];
const COORDINATORS = [1, 2];
/** Partitions per queue: two per master of the 3-master cluster (and the same on one node, to compare). */
const STREAM_PARTITIONS = '6';
/** Throughput that grows less than this from one worker to the best step counts as flat. */
const GROWTH = 1.1;

type Target = 'http' | 'single' | 'cluster';

interface Step {
  target: Target;
  coordinators: number;
  workers: number;
  w1RunsPerSecond: number;
  w3bStepsPerSecond: number;
  commitsPerSecond: number;
  cpu: CpuShares;
}

async function measure(target: Target, coordinatorCount: number, workerCount: number, redis: Record<string, string>): Promise<Step> {
  const db = await BenchDatabase.create(`scale_${target}_${coordinatorCount}c${workerCount}w`);
  const mode: Mode = target === 'http' ? 'http' : 'redis-streams';
  const env = { ...redis, REDIS_PREFIX: `bench:${randomBytes(4).toString('hex')}:`, STREAM_PARTITIONS };
  const coordinators: { proc: Proc; url: string }[] = [];
  const workers: Proc[] = [];
  try {
    for (let i = 0; i < coordinatorCount; i++) coordinators.push(await startCoordinator(db, mode === 'http' ? 'none' : mode, env));
    const urls = coordinators.map((c) => c.url);
    for (let i = 0; i < workerCount; i++) workers.push(await startWorker([...urls.slice(i % urls.length), ...urls.slice(0, i % urls.length)], mode, env));
    const sampler = new CpuSampler({
      coordinators: () => coordinators.map((c) => c.proc.child.pid!),
      workers: () => workers.map((w) => w.child.pid!),
    });
    const via = (i: number) => urls[i % urls.length];

    await api(via(0), 'POST', '/v1/runs/batch', { runs: Array.from({ length: 200 }, () => ({ workflow: 'echo', version: '1', input: 1 })) });
    await until('warm-up', async () => (await db.completed('echo')) === 200);

    const commitsBefore = await db.commits();
    sampler.start();
    const started = performance.now();
    for (let i = 0; i < W1_RUNS / 1_000; i++) {
      await api(via(i), 'POST', '/v1/runs/batch', { runs: Array.from({ length: 1_000 }, () => ({ workflow: 'chain', version: '1', input: { steps: 1 } })) });
    }
    await until('W1 drained', async () => (await db.completed('chain')) === W1_RUNS, 300_000);
    const cpu = sampler.stop();
    const elapsed = (performance.now() - started) / 1000;
    const commitsPerSecond = ((await db.commits()) - commitsBefore) / elapsed;
    const w1Span = Number(
      (await db.client.query(`SELECT extract(epoch FROM max(finished_at) - min(started_at)) AS s FROM runs WHERE workflow = 'chain'`)).rows[0].s,
    );

    for (let i = 0; i < 2; i++) {
      await api(via(i), 'POST', '/v1/runs/batch', {
        runs: Array.from({ length: W3B_CHAINS / 2 }, (_, n) => ({
          workflow: 'chain',
          version: '1',
          input: { steps: CHAIN_STEPS },
          idempotencyKey: `w3b-${i}-${n}`,
        })),
      });
    }
    await until('W3b drained', async () => (await db.completed('chain')) === W1_RUNS + W3B_CHAINS, 300_000);
    const w3bSpan = Number(
      (await db.client.query(`SELECT extract(epoch FROM max(finished_at) - min(started_at)) AS s FROM runs WHERE idempotency_key LIKE 'w3b-%'`)).rows[0].s,
    );
    return {
      target,
      coordinators: coordinatorCount,
      workers: workerCount,
      w1RunsPerSecond: round(W1_RUNS / w1Span, 0),
      w3bStepsPerSecond: round((W3B_CHAINS * CHAIN_STEPS) / w3bSpan, 0),
      commitsPerSecond: round(commitsPerSecond, 0),
      cpu,
    };
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await Promise.all(coordinators.map((c) => c.proc.stop()));
    await db.drop();
  }
}

const cores = (value: number) => round(value, 2).toFixed(2);

/** How a series (one target, one coordinator count) grows with more workers, and what was busiest at its best step. */
function verdict(series: Step[]): string {
  const first = series[0];
  const best = series.reduce((a, b) => (b.w1RunsPerSecond > a.w1RunsPerSecond ? b : a));
  const growth = best.w1RunsPerSecond / first.w1RunsPerSecond;
  const grows =
    growth < GROWTH
      ? `flat from ${first.workers} worker (${first.w1RunsPerSecond} → at most ${best.w1RunsPerSecond} runs/s)`
      : `grows to ${best.workers} workers (${first.w1RunsPerSecond} → ${best.w1RunsPerSecond} runs/s)`;
  const busiest = Object.entries(best.cpu.groups)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([label, used]) => `${label} ${cores(used)}`)
    .join(', ');
  const machine =
    best.cpu.machine >= 0.9
      ? `the ${CORES} cores are saturated (${round(best.cpu.machine * 100, 0)}% busy)`
      : `the machine is ${round(best.cpu.machine * 100, 0)}% busy`;
  return `${grows}; at ${best.workers} worker${best.workers > 1 ? 's' : ''}, ${best.commitsPerSecond} commits/s and ${machine}; cores used: ${busiest}`;
}

function markdown(steps: Step[], when: string): string {
  const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, ${round(totalmem() / 2 ** 30, 0)} GiB, Node ${process.version}`;
  const label = (target: Target) => ({ http: 'HTTP claims', single: 'Streams, one Redis node', cluster: 'Streams, 6-node Redis Cluster' })[target];
  const header =
    '| dispatch | coordinators | workers | W1 runs/s | W3b steps/s | commits/s (W1) | machine busy | cores used: coordinators / workers / postgres / redis / other |\n|---|---|---|---|---|---|---|---|\n';
  const rows = steps
    .map(
      (s) =>
        `| ${label(s.target)} | ${s.coordinators} | ${s.workers} | ${s.w1RunsPerSecond} | ${s.w3bStepsPerSecond} | ${s.commitsPerSecond} | ${round(s.cpu.machine * 100, 0)}% | ${['coordinators', 'workers', 'postgres', 'redis', 'other'].map((g) => cores(s.cpu.groups[g] ?? 0)).join(' / ')} |`,
    )
    .join('\n');
  const verdicts = [...new Set(steps.map((s) => `${s.target}:${s.coordinators}`))]
    .map((key) => {
      const series = steps.filter((s) => `${s.target}:${s.coordinators}` === key);
      return `- ${label(series[0].target)}, ${series[0].coordinators} coordinator${series[0].coordinators > 1 ? 's' : ''}: ${verdict(series)}`;
    })
    .join('\n');
  return `Scale run ${when} on ${machine}; worker concurrency 50, STREAM_PARTITIONS ${STREAM_PARTITIONS}.\n\n${header}${rows}\n\n${verdicts}\n`;
}

export async function scale(argv: string[]): Promise<void> {
  const targets = (argv.includes('--targets') ? argv[argv.indexOf('--targets') + 1].split(',') : ['http', 'single', 'cluster']) as Target[];
  const steps: Step[] = [];
  let cluster: RedisCluster | undefined;
  try {
    for (const target of targets) {
      if (target === 'cluster') {
        log('scale: starting a 6-node Redis Cluster');
        cluster = new RedisCluster();
        await cluster.start();
      }
      const redis: Record<string, string> = target === 'cluster' ? { REDIS_URL: '', REDIS_CLUSTER_NODES: cluster!.seeds } : { REDIS_URL };
      for (const coordinators of COORDINATORS) {
        for (const workers of WORKERS) {
          log(`scale: ${target}, ${coordinators} coordinator(s), ${workers} worker(s)`);
          const step = await measure(target, coordinators, workers, redis);
          log(`scale: ${JSON.stringify(step)}`);
          steps.push(step);
        }
      }
    }
  } finally {
    await cluster?.stop();
  }
  const when = new Date().toISOString();
  const table = markdown(steps, when);
  process.stdout.write(`\n${table}\n`);
  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const stamp = when.replace(/[:.]/g, '-');
  writeFileSync(join(dir, `scale-${stamp}.json`), JSON.stringify({ when, steps }, null, 2));
  writeFileSync(join(dir, 'scale-latest.md'), table);
}
